// modules/examples/probe.cpp — the probe module's host side (see probe.hpp).
#include "modules/examples/probe.hpp"

#include <cstdlib>
#include <stdexcept>

#include "core/eve_event.hpp"

namespace gaspp {
namespace {
int64_t number(const std::string& k, const std::string& v, int64_t max) {
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 0);
  if (v.empty() || *end || x < 0 || x > max) throw std::invalid_argument("probe: " + k + ": expected 0.." + std::to_string(max) + ", got '" + v + "'");
  return x;
}
}  // namespace

ProbeModule::Host::Host(const ModuleOptions& opt) {
  for (auto& [k, v] : opt) {
    if (k == "dport") view_.dport = int32_t(number(k, v, 65535));
    else if (k == "ctx") view_.ctx = number(k, v, 0xffffffffll);
    else if (k == "set_ctx") view_.set_ctx = number(k, v, 0xffffffffll);
    else if (k == "work") view_.work = uint32_t(number(k, v, 1 << 20));
    else if (k == "route") view_.route = uint32_t(number(k, v, 1 << 16));
    else if (k == "action") {
      const char* names[] = {"none", "drop", "drop_flow", "pass_flow", "ignore", "to_host", "to_dump", "alert"};
      int a = -1;
      for (int j = 0; j < 8; ++j)
        if (v == names[j]) a = j;
      if (a < 0) throw std::invalid_argument("probe: action: none, drop, drop_flow, pass_flow, ignore, to_host, to_dump or alert, not '" + v + "'");
      view_.action = uint8_t(a);
    } else {
      throw std::invalid_argument("probe: unknown option '" + k + "' (dport, ctx, action, set_ctx, route, work)");
    }
  }
}

void ProbeModule::Host::on_event(const ModuleEvent& e, const HostPacket& p, ModuleOutput& out) {
  if (e.kind == kEventToHost) ++host_packets_;
  else ++host_events_;
  // One EVE line per event: which packet, which module, the value (the flow's selected count).
  out.eve(eve_packet_head(p, "probe") + ",\"probe\":{\"module\":" + std::to_string(e.module) + ",\"kind\":\"" +
          (e.kind == kEventToHost ? "to_host" : "event") + "\",\"value\":" + std::to_string(e.value) + "}}");
}

void ProbeModule::Host::report(std::map<std::string, uint64_t>& r) const {
  r["host_packets"] = host_packets_;
  r["host_events"] = host_events_;
}

}  // namespace gaspp
