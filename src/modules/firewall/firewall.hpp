// modules/firewall/firewall.hpp — the L3/L4 firewall module (GASPP §6): Suricata/Snort rule
// headers over IP, TCP, UDP, ICMP packets; verdicts per packet that stick to the flow; alerts as
// EVE `alert` events.
//
// Configuration (module options; `gaspp --rules FILE` sets `rules`):
//   rules          rule files, comma-separated (docs/rules.md: what is read, what is skipped)
//   address.NAME   an address variable ($HOME_NET, ...), e.g. address.HOME_NET=[10.0.0.0/8]
//   port.NAME      a port variable ($HTTP_PORTS, ...)
// Per packet (on_ip, one thread per packet, both backends), every rule whose header matches is
// found (firewall_tables.hpp). Then, with Suricata's default action order (pass, drop, reject, alert):
//   * a pass rule matched: the packet passes and so does the rest of its flow (pass_flow), no alert;
//   * else a drop or reject rule matched: the packet and the rest of its flow are dropped
//     (drop_flow); reject sends nothing (offline), it drops like drop;
//   * every matched drop/reject/alert rule raises an alert (at most 15 per packet, as Suricata's
//     packet_alert_max; the rest are counted), action "blocked" when the packet is dropped, unless
//     the rule's threshold or detection_filter suppresses it (threshold.hpp; counted).
// Later packets of a decided flow are not inspected (the pipeline applies the decision).
// State: none per flow (decisions live in the flow record); the tables, read-only on the device.
//
// Example: gaspp -r in.pcap --rules ../shared/data/rules/et-open/compromised.rules -l out/ -w pass.pcap
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "gaspp/module.hpp"
#include "modules/firewall/firewall_compile.hpp"
#include "modules/firewall/firewall_tables.hpp"
#include "modules/firewall/threshold.hpp"

namespace gaspp {

struct FirewallModule {
  static constexpr const char* kName = "firewall";
  static constexpr uint32_t kLayers = kLayerIp;
  static constexpr bool kChangesContext = false;  // returns the key it gets  // headers only
  struct FlowState {};
  using View = FirewallView;
  enum Event : uint16_t { kAlert = 1, kAlertOverflow = 2 };

  GASPP_HD static FwPacket packet_of(const Packet& p) {
    FwPacket f;
    f.family = p.family();
    f.addr[0] = addr_number(p.src_ip(), f.family);
    f.addr[1] = addr_number(p.dst_ip(), f.family);
    f.proto = p.ip_proto();
    const uint8_t l4 = p.dec().l4[p.index()];
    f.has_ports = (l4 == uint8_t(L4::tcp) || l4 == uint8_t(L4::udp)) && !(p.dec().ip_frag[p.index()] & kFragIsFragment &&
                                                                         !(p.dec().ip_frag[p.index()] & kFragFirst));
    f.port[0] = p.sport();
    f.port[1] = p.dport();
    return f;
  }

  GASPP_HD static uint32_t on_ip(Packet& p, FlowState*, const View& v, uint32_t ctx) {
    FwMatch m;
    firewall_match(v, packet_of(p), m);
    if (m.pass) {
      p.pass_flow();
      return ctx;
    }
    if (m.action == kFwDrop || m.action == kFwReject) p.drop_flow();
    if (m.n) p.alerted();
    for (uint32_t k = 0; k < m.n; ++k) p.emit(kAlert, m.rule[k]);
    if (m.overflow) p.emit(kAlertOverflow, m.overflow);
    return ctx;
  }

  class Host : public ModuleHost<FirewallModule> {
   public:
    explicit Host(const ModuleOptions& opt);
    View upload(TableMemory& mem);
    void on_event(const ModuleEvent& e, const HostPacket& p, ModuleOutput& out);
    void report(std::map<std::string, uint64_t>& r) const;
    const RuleSet& rules() const { return set_; }
    const FirewallTables& tables() const { return tables_; }

   private:
    RuleSet set_;
    FirewallTables tables_;
    std::vector<ThresholdSpec> thresholds_;  // per rule (kind none: every match alerts)
    ThresholdTable threshold_table_;
    uint64_t alerts_ = 0, alerts_blocked_ = 0, alert_overflow_ = 0, threshold_errors_ = 0;
  };
};

}  // namespace gaspp
