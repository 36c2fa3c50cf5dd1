// modules/examples/pass.hpp — the smallest module: it sees every IP packet and passes it on.
// docs/writing-a-module.md starts from it. No options, no tables, no per-flow state.
#pragma once
#include "gaspp/module.hpp"

namespace gaspp {

struct PassModule {
  static constexpr const char* kName = "pass";
  static constexpr uint32_t kLayers = kLayerIp;
  static constexpr bool kChangesContext = false;  // returns the key it gets
  struct FlowState {};
  struct View {};
  GASPP_HD static uint32_t on_ip(Packet&, FlowState*, const View&, uint32_t ctx) { return ctx; }
  struct Host : ModuleHost<PassModule> {
    using ModuleHost::ModuleHost;
  };
};

}  // namespace gaspp
