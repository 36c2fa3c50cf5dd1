// modules/firewall/firewall.hpp — the L3/L4 firewall module (GASPP §6): Suricata/Snort rule
// headers over IP, TCP, UDP, ICMP packets; verdicts per packet that stick to the flow; alerts as
// EVE `alert` events.
//
// Configuration (module options; `gaspp --rules FILE` sets `rules`):
//   rules          rule files, comma-separated (docs/rules.md: what is read, what is skipped)
//   classification-file  Suricata's classification.config: a rule with a classtype and no
//                  `priority` takes its class's priority (default: classification.config beside
//                  the first rules file, when there is one)
//   address.NAME   an address variable ($HOME_NET, ...), e.g. address.HOME_NET=[10.0.0.0/8]
//   port.NAME      a port variable ($HTTP_PORTS, ...)
//   action-order   pass,drop,reject,alert in the order to apply them (suricata.yaml's action-order)
//   metadata.flow, metadata.app-layer, metadata.rule.metadata, metadata.rule.raw   on|off: what
//                  an alert carries (suricata.yaml's eve-log alert metadata; alert_eve.hpp)
//   threshold-file Suricata's threshold.config (suricata.yaml's threshold-file): thresholds,
//                  rate filters and suppressions for the rules' alerts (threshold.hpp)
//   payload        on: alerts carry payload, payload_printable and stream (--eve-payload)
//   packet         on: alerts carry the packet, base64, and packet_info.linktype (--eve-packet)
//   verdict        on: alerts carry verdict.action: drop, pass or alert (--eve-verdict)
//   ethernet       on: alerts carry ether.src_mac and ether.dest_mac (--eve-ethernet)
//   detect         on: the signature engine (modules/detect) loads the same rule files (gaspp
//                  --rules does this): rules whose flowbits another rule reads, or with
//                  noalert, are left to it (firewall_keeps in rules.hpp)
// Per packet (on_ip, one thread per packet, both backends), every rule whose header matches is
// found (firewall_tables.hpp). Then, in the action order (`action-order`; Suricata's default:
// pass, drop, reject, alert), the first deciding rule wins:
//   * a pass rule: the packet passes and so does the rest of its flow (pass_flow), and the rules
//     ranked after it raise no alert (with the default order: no alert at all);
//   * a drop or reject rule: the packet and the rest of its flow are dropped (drop_flow); reject
//     sends nothing (offline), it drops like drop;
//   * every matched drop/reject/alert rule ranked before any pass raises an alert (at most 15 per
//     packet, as Suricata's packet_alert_max: the first in action order, then priority, then file
//     order; the rest are counted), action "blocked" when the packet is dropped, unless the rule's
//     threshold or detection_filter suppresses it (threshold.hpp; counted).
// Later packets of a decided flow are not inspected (the pipeline applies the decision).
//
// Firewall mode (`firewall-rules`, `gaspp --firewall-rules FILE`; policy.hpp): Suricata 8's
// firewall rules run first, with a default policy of drop. At the packet hook (on_ip) the first
// matching rule of the pre_flow, pre_stream and filter tables decides (`<proto>:all`, `flow_start`,
// with flow conditions: policy.hpp); a packet the filter does not accept is dropped
// (default_packet_policy).
// Accepted packets then meet the detection rules above. With http1 hooks in the rules, on_stream
// follows each HTTP/1 message on the reassembled stream and evaluates its hooks in order; a hook
// no rule accepts drops the flow (default_app_policy), at the packet whose data reached it. Every
// firewall drop raises kEventDropReason, so the stats count it under `firewall` with its reason.
//
// State: per flow, only with http1 hooks: the HTTP/1 progress of both directions (FwHttpState,
// 120 bytes); decisions live in the flow record. The tables, read-only on the device.
//
// Example: gaspp -r in.pcap --rules ../shared/data/rules/et-open/compromised.rules -l out/ -w pass.pcap
//          gaspp -r in.pcap --firewall-rules firewall.rules -l out/ --eve-drops
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "gaspp/module.hpp"
#include "modules/firewall/firewall_compile.hpp"
#include "gaspp/stream_hook.hpp"
#include "modules/firewall/firewall_tables.hpp"
#include "modules/firewall/policy.hpp"
#include "modules/firewall/alert_eve.hpp"
#include "modules/firewall/threshold.hpp"

namespace gaspp {

struct FirewallModule {
  static constexpr const char* kName = "firewall";
  // Headers only; on_stream runs only with http1 hooks (Host::layers() narrows this).
  static constexpr uint32_t kLayers = kLayerIp | kLayerStream;
  static constexpr bool kChangesContext = false;  // returns the key it gets
  using FlowState = FwHttpState;
  struct View {
    FirewallView td;       // detection rules
    FwPolicyView policy;   // firewall rules (policy.on: firewall mode)
  };
  // kAlert: a detection rule (value: its index); kPolicyAlert: a firewall rule with `alert`.
  enum Event : uint16_t { kAlert = 1, kAlertOverflow = 2, kPolicyAlert = 3 };

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

  // What a firewall rule decided for a packet: go on to the next table, to the detection rules,
  // or stop (the packet or its flow was decided).
  enum PacketStep : uint8_t { kNextTable, kToDetection, kDecided };

  GASPP_HD static PacketStep apply_packet_rule(Packet& p, const FwPolicyView& v, int32_t r) {
    const FwPolicyRule& rule = v.rule[r];
    if (rule.alert) {
      p.alerted();
      p.emit(kPolicyAlert, uint32_t(r));
    }
    if (rule.action == kFwPolicyDrop) {
      if (rule.scope == kFwScopePacket) p.drop();
      else p.drop_flow();
      p.emit(kEventDropReason, kDropReasonRules);
      return kDecided;
    }
    if (rule.scope == kFwScopeFlow) {
      p.pass_flow();
      return kDecided;
    }
    return rule.scope == kFwScopePacket ? kToDetection : kNextTable;
  }

  GASPP_HD static uint32_t on_ip(Packet& p, FlowState*, const View& v, uint32_t ctx) {
    const FwPacket pk = packet_of(p);
    if (v.policy.on) {
      const FwFlowCtx fc{uint8_t(p.has_flow()), uint8_t(p.to_client()), uint8_t(p.flow_established()),
                         uint8_t(p.tcp_closing()), uint8_t(p.first_in_direction())};
      PacketStep step = kNextTable;
      // pre_flow, then pre_stream: no matching rule is accept:hook.
      for (uint8_t h = kFwHookPreFlow; h <= kFwHookPreStream && step == kNextTable; ++h) {
        const int32_t r = fw_policy_eval(v.policy, h, pk, fc, nullptr, 0);
        if (r >= 0) step = apply_packet_rule(p, v.policy, r);
      }
      if (step == kDecided) return ctx;
      if (step == kNextTable) {
        const int32_t r = fw_policy_eval(v.policy, kFwHookPacket, pk, fc, nullptr, 0);
        if (r < 0) {
          p.drop();
          p.emit(kEventDropReason, kDropReasonDefaultPacketPolicy);
          return ctx;
        }
        if (apply_packet_rule(p, v.policy, r) == kDecided) return ctx;
      }
    }
    FwMatch m;
    firewall_match(v.td, pk, m);
    // The first deciding rule in rank order wins; a pass ends the packet's list, so only alerts
    // ranked before it stay (none in the default action order, where pass comes first).
    if (m.pass) {
      uint32_t n = 0;
      while (n < m.n && v.td.rules[m.rule[n]].rank < m.pass_rank) ++n;
      if (n < m.n) m.overflow = 0;
      m.n = uint8_t(n);
    }
    if (m.drop_rank < m.pass_rank) p.drop_flow();
    else if (m.pass) p.pass_flow();
    // Suricata's IP-only engine sees a flow's first packet of each direction only: later packets
    // raise no alert for such a rule. (Their drop or pass needs no filter: the header they match
    // is the first packet's, whose match decided the flow already.)
    if (m.n && p.has_flow() && !p.first_in_direction()) {
      uint32_t kept = 0;
      for (uint32_t k = 0; k < m.n; ++k)
        if (!(v.td.rules[m.rule[k]].flags & kFwFirstOnly)) m.rule[kept++] = m.rule[k];
      m.n = uint8_t(kept);
    }
    if (m.pass && !m.n) return ctx;
    if (m.n) p.alerted();
    for (uint32_t k = 0; k < m.n; ++k) p.emit(kAlert, m.rule[k]);
    if (m.overflow) p.emit(kAlertOverflow, m.overflow);
    return ctx;
  }

  // The rule's header is matched against the flow as this direction sends: source = sender.
  GASPP_HD static FwPacket stream_packet(const StreamPiece& s) {
    const FlowKey& k = s.key();
    const int src = s.to_client() ? 1 - s.client_endpoint() : s.client_endpoint();
    FwPacket f;
    f.family = k.family;
    f.addr[0] = addr_number(k.addr[src], k.family);
    f.addr[1] = addr_number(k.addr[1 - src], k.family);
    f.proto = k.proto;
    f.has_ports = true;
    f.port[0] = k.port[src];
    f.port[1] = k.port[1 - src];
    return f;
  }

  GASPP_HD static uint32_t on_stream(StreamPiece& s, FlowState* st, const View& v, uint32_t ctx) {
    if (!v.policy.app || !st || st->done) return ctx;  // no state: the flow already left the table
    const int d = s.to_client() ? 1 : 0;
    FwHttpDir& h = st->dir[d];
    if (s.gap()) h.phase = kHttpLost;  // what follows a hole cannot be parsed
    const FwPacket pk = stream_packet(s);
    auto hook = [&](uint8_t level) -> bool {
      if (h.accept_tx) return true;
      const uint8_t hk = uint8_t((d ? kFwHookResponseStarted : kFwHookRequestStarted) + level - 1);
      const int32_t r = fw_policy_eval(v.policy, hk, pk, FwFlowCtx{}, reinterpret_cast<const uint8_t*>(h.tok), h.tok_len);
      if (r < 0) {
        st->done = 1;
        s.drop_flow();
        s.emit(kEventDropReason, kDropReasonDefaultAppPolicy);
        return false;
      }
      const FwPolicyRule& rule = v.policy.rule[r];
      if (rule.alert) {
        s.alerted();
        s.emit(kPolicyAlert, uint32_t(r));
      }
      if (rule.action == kFwPolicyDrop) {
        st->done = 1;
        s.drop_flow();
        s.emit(kEventDropReason, kDropReasonRules);
        return false;
      }
      if (rule.scope == kFwScopeTx) h.accept_tx = 1;
      if (rule.scope == kFwScopeFlow) {
        st->done = 1;
        s.pass_flow();
        return false;
      }
      return true;
    };
    if (s.len()) fw_http_feed(*st, d, s.data(), s.len(), hook);
    if (s.end() && !st->done) fw_http_end(*st, d, hook);
    return ctx;
  }

  class Host : public ModuleHost<FirewallModule> {
   public:
    explicit Host(const ModuleOptions& opt);
    View upload(TableMemory& mem);
    void on_event(const ModuleEvent& e, const HostPacket& p, ModuleOutput& out);
    void report(std::map<std::string, uint64_t>& r) const;
    // Without http1 hooks the stream hook is left out and no per-flow state is kept.
    uint32_t layers() const { return policy_app_ ? kLayers : kLayerIp; }
    uint32_t flow_state_bytes() const { return policy_app_ ? uint32_t(sizeof(FlowState)) : 0u; }
    bool default_drop() const { return firewall_mode_; }  // firewall rule files given
    const RuleSet& rules() const { return set_; }
    const RuleSet& policy_rules() const { return policy_set_; }
    const FirewallTables& tables() const { return tables_; }

   private:
    void compile_policy();
    void write_alert(const Rule& r, const HostPacket& p, ModuleOutput& out, bool blocked, uint8_t reject_dirs = 0);
    RuleSet set_;
    FirewallTables tables_;
    RuleSet policy_set_;                    // firewall rules, sorted by hook (file order within)
    Classifications classes_;               // classification.config: class → priority
    uint64_t class_priorities_ = 0;         // rules whose priority came from their classtype
    FirewallTables policy_tables_;
    std::vector<FwPolicyRule> policy_;
    std::vector<uint8_t> policy_content_;
    uint32_t hook_off_[kFwHooks] = {}, hook_n_[kFwHooks] = {};
    bool policy_app_ = false;
    bool firewall_mode_ = false;            // --firewall-rules given: default drop, even with no rule
    uint64_t policy_alerts_ = 0;
    std::vector<RuleThresholds> thresholds_;  // per rule (empty: every match alerts)
    ThresholdTable threshold_table_;
    uint64_t alerts_ = 0, alerts_blocked_ = 0, alert_overflow_ = 0, threshold_errors_ = 0;
    uint64_t threshold_config_ = 0, rate_filter_unapplied_ = 0, rate_filter_pass_ = 0;
    bool payload_ = false;                   // payload=on: alerts carry the packet's payload
    bool eve_packet_ = false, eve_verdict_ = false, eve_ether_ = false;  // packet=on, verdict=on, ethernet=on
    AlertMetadata alert_meta_;                       // metadata.* options
    uint64_t to_detect_ = 0;                 // detect=on: rules left to the signature engine
  };
};

}  // namespace gaspp
