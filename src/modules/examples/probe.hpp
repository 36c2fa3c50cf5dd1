// modules/examples/probe.hpp — a module that takes one action on the packets it selects: the
// tests use it to check actions, context-key routing and per-flow state, and the benchmarks to
// give each of many modules a different subset of packets.
//
// Options:
//   dport=N        select packets to or from port N (TCP/UDP; either port matches); default: all
//   ctx=K          select only packets whose incoming context key is K; default: any
//   action=A       what to do with a selected packet: none, drop, drop_flow, pass_flow, ignore,
//                  to_host, to_dump, alert (emit an event); default none
//   set_ctx=K      the context key passed on for a selected packet (others pass theirs on)
//   route=N        pass on 1 + (flow hash % N) as the context key instead (spreads flows over N
//                  modules that select on ctx; the scheduling benchmark's router)
//   work=N         rounds of hashing per selected packet (a synthetic load; default 0)
// Per-flow state: how many packets of the flow it selected (FlowState::selected), read back by
// the host handler's to_host/alert events as the event value.
#pragma once
#include <string>

#include "gaspp/module.hpp"

namespace gaspp {

struct ProbeModule {
  static constexpr const char* kName = "probe";
  static constexpr uint32_t kLayers = kLayerIp;
  enum ProbeAction : uint8_t { kNone, kDrop, kDropFlow, kPassFlow, kIgnore, kToHost, kToDump, kAlert };
  struct FlowState {
    uint32_t selected;
  };
  struct View {
    int32_t dport = -1;
    int64_t ctx = -1;
    int64_t set_ctx = -1;
    uint32_t route = 0;
    uint32_t work = 0;
    uint8_t action = kNone;
  };

  GASPP_HD static uint32_t on_ip(Packet& p, FlowState* st, const View& v, uint32_t ctx) {
    if (v.ctx >= 0 && uint32_t(v.ctx) != ctx) return ctx;
    if (v.dport >= 0 && p.sport() != uint32_t(v.dport) && p.dport() != uint32_t(v.dport)) return ctx;
    uint32_t n = st ? atomic_add(&st->selected, 1) + 1 : 0;
    uint32_t h = p.sport() ^ (uint32_t(p.dport()) << 16);
    for (uint32_t k = 0; k < v.work; ++k) h = mix32(h + k);
    if (v.work && h == 0x9e3779b9u) n = 0;  // keeps the work from being optimised away
    switch (v.action) {
      case kDrop: p.drop(); break;
      case kDropFlow: p.drop_flow(); break;
      case kPassFlow: p.pass_flow(); break;
      case kIgnore: p.ignore(); break;
      case kToHost: p.to_host(n); break;
      case kToDump: p.to_dump(); break;
      case kAlert: p.alerted(); p.emit(1, n); break;
      default: break;
    }
    if (v.route) return 1 + p.dec().flow_hash[p.index()] % v.route;
    return v.set_ctx >= 0 ? uint32_t(v.set_ctx) : ctx;
  }

  class Host {
   public:
    explicit Host(const ModuleOptions& opt);
    View upload(TableMemory&) { return view_; }
    bool changes_context() const { return view_.set_ctx >= 0 || view_.route > 0; }
    void on_event(const ModuleEvent& e, const HostPacket& p, ModuleOutput& out);
    void report(std::map<std::string, uint64_t>& r) const;

   private:
    View view_;
    uint64_t host_packets_ = 0, host_events_ = 0;
  };
};

}  // namespace gaspp
