// core/module_stage.hpp — running a module over a batch, and resolving flow decisions.
//
// module_stage_packet<M>() is the per-packet step of a module stage, written once for both
// backends (the CPU backend calls it from its thread pool, the CUDA backend from
// module_stage_kernel<M>): it skips packets an earlier module stopped (drop, ignore) and packets of
// flows decided in an earlier batch, finds the module's per-flow slice, and calls the hooks the
// module has (on_eth, on_ip, on_tcp / on_udp), threading the context key through them.
//
// verdict_walk_run() runs after the last stage, once per flow, over the flow's packets of the batch
// in capture order (the same sorted runs as the flow walk): the first packet that decided the flow
// (drop_flow / pass_flow) fixes the decision; every later packet gets it (kVerdictFlowDecided: what
// modules produced for it is discarded) and the decision is kept in the flow record for later
// batches. A packet that restarts the flow (kPktFlowStart) starts with no decision.
#pragma once
#include <concepts>
#include <cstdint>

#include "flow/flow_track.hpp"
#include "gaspp/module.hpp"

namespace gaspp {

template <class M>
concept HasOnEth = requires(Packet& p, typename M::FlowState* s, const typename M::View& v, uint32_t c) {
  { M::on_eth(p, s, v, c) } -> std::convertible_to<uint32_t>;
};
template <class M>
concept HasOnIp = requires(Packet& p, typename M::FlowState* s, const typename M::View& v, uint32_t c) {
  { M::on_ip(p, s, v, c) } -> std::convertible_to<uint32_t>;
};
template <class M>
concept HasOnTcp = requires(Packet& p, typename M::FlowState* s, const typename M::View& v, uint32_t c) {
  { M::on_tcp(p, s, v, c) } -> std::convertible_to<uint32_t>;
};
template <class M>
concept HasOnUdp = requires(Packet& p, typename M::FlowState* s, const typename M::View& v, uint32_t c) {
  { M::on_udp(p, s, v, c) } -> std::convertible_to<uint32_t>;
};

// A second pass for packets whose on_ip asked for it (Packet::retry); only for modules whose one
// packet hook is on_ip.
template <class M>
concept HasOnIpRetry = HasOnIp<M> && !HasOnEth<M> && !HasOnTcp<M> && !HasOnUdp<M> &&
    requires(Packet& p, typename M::FlowState* s, const typename M::View& v, uint32_t c) {
      { M::on_ip_retry(p, s, v, c) } -> std::convertible_to<uint32_t>;
    };

// Bytes of per-flow state a module declares (an empty FlowState takes none).
template <class M>
constexpr uint32_t module_flow_state_bytes() {
  return std::is_empty_v<typename M::FlowState> ? 0u : uint32_t(sizeof(typename M::FlowState));
}

// The module packet i runs at `stage` (its class's order; pipeline order with one class).
GASPP_HD GASPP_FORCEINLINE uint16_t stage_module(const StageArgs& a, uint32_t i, uint16_t stage) {
  if (a.classes <= 1) return stage;
  return a.class_order[uint32_t(a.dec.flow_hash[i] % a.classes) * a.modules + stage];
}

// Scheduling (GASPP §5.3): the key packets are regrouped by before the next stage: the module they
// run there (with flow classes), then IP protocol, context key and length, so that a warp runs one
// module on similar packets. 32 bits keep the sort short: the context key's low 8 bits and the
// length in 8-byte steps (capped); the order only groups work, results do not depend on it.
// Packets no module will see again go last.
GASPP_HD GASPP_FORCEINLINE uint32_t schedule_key(const StageArgs& a, uint32_t i, uint16_t next_stage) {
  if (a.verdict[i] & kVerdictStop) return ~0u;
  const uint32_t len = a.dec.cap_len[i] >> 3 > 0xff ? 0xff : a.dec.cap_len[i] >> 3;
  const uint32_t mod = a.classes > 1 ? stage_module(a, i, next_stage) & 0xff : 0;
  return (mod << 24) | (uint32_t(a.dec.ip_proto[i]) << 16) | ((a.ctx[i] & 0xff) << 8) | len;
}

// Runs module M on the packet at position k of the stage's order, if the packet's class runs M at
// this stage. counts: the thread's (or block's) module counters.
template <class M>
GASPP_HD GASPP_FORCEINLINE void module_stage_packet(const StageArgs& a, const typename M::View& v, uint32_t k,
                                                    unsigned long long* counts) {
  const uint32_t i = a.order ? a.order[k] : k;
  if (stage_module(a, i, a.stage) != a.module) return;
  if constexpr (!HasOnEth<M> && !HasOnIp<M> && !HasOnTcp<M> && !HasOnUdp<M>) {
    if (a.first) a.ctx[i] = 0;  // a stream-only module: nothing per packet
    return;
  }
  uint32_t ctx = a.first ? 0u : a.ctx[i];
  if (a.verdict[i] & kVerdictStop) {
    if (a.first) a.ctx[i] = 0;
    return;
  }
  typename M::FlowState* st = nullptr;
  const uint32_t slot = a.flow_slot ? a.flow_slot[i] : kNoFlow;
  if (slot != kNoFlow) {
    // Decided in an earlier batch (a flow restarted in this batch has a fresh record): the verdict
    // walk applies the decision; no module runs.
    if (a.table.recs[slot].misc & (kFlowDecidedDrop | kFlowDecidedPass)) {
      if (a.first) a.ctx[i] = 0;
      return;
    }
    if constexpr (module_flow_state_bytes<M>() > 0)
      st = reinterpret_cast<typename M::FlowState*>(a.table.module_slice(slot, a.state_off));
  }
  Packet p(a, i, counts);
  p.count(mc_packets);
  const uint8_t l3 = a.dec.l3[i], l4 = a.dec.l4[i];
  if constexpr (HasOnEth<M>) ctx = M::on_eth(p, st, v, ctx);
  if (l3 == uint8_t(L3::ipv4) || l3 == uint8_t(L3::ipv6)) {
    if constexpr (HasOnIp<M>)
      if (!(a.verdict[i] & kVerdictStop)) ctx = M::on_ip(p, st, v, ctx);
    if constexpr (HasOnTcp<M>)
      if (l4 == uint8_t(L4::tcp) && !(a.verdict[i] & kVerdictStop)) ctx = M::on_tcp(p, st, v, ctx);
    if constexpr (HasOnUdp<M>)
      if (l4 == uint8_t(L4::udp) && !(a.verdict[i] & kVerdictStop)) ctx = M::on_udp(p, st, v, ctx);
  }
  a.ctx[i] = ctx;
}

// The retry pass of module M's stage over entry e of StageArgs::retry (any order, any thread):
// on_ip_retry in place of the on_ip that asked for it, with the context that on_ip was given.
template <class M>
GASPP_HD GASPP_FORCEINLINE void module_stage_retry(const StageArgs& a, const typename M::View& v, uint32_t e,
                                                   unsigned long long* counts) {
  if constexpr (HasOnIpRetry<M>) {
    const uint32_t i = a.retry[e];
    typename M::FlowState* st = nullptr;
    const uint32_t slot = a.flow_slot ? a.flow_slot[i] : kNoFlow;
    if constexpr (module_flow_state_bytes<M>() > 0)
      if (slot != kNoFlow) st = reinterpret_cast<typename M::FlowState*>(a.table.module_slice(slot, a.state_off));
    Packet p(a, i, counts);
    a.ctx[i] = M::on_ip_retry(p, st, v, a.ctx[i]);
  }
}

// How many retry entries the stage queued.
GASPP_HD GASPP_FORCEINLINE uint32_t module_retry_count(const StageArgs& a) {
  if (!a.retry_n) return 0;
  return *a.retry_n < a.retry_cap ? *a.retry_n : a.retry_cap;
}

// The exception policy for packet i, which the flow table had no room for (slot kNoFlow after the
// retry): with `verdict` (BackendConfig::untracked_drop) it is dropped, counted.
template <class Sink>
GASPP_HD GASPP_FORCEINLINE void untracked_policy(uint32_t slot, uint32_t i, uint8_t* verdict, Sink& c) {
  if (slot != kNoFlow || !verdict) return;
  verdict[i] = kVerdictUntrackedDrop;
  c.add(c_flow_untracked_dropped, 1);
}

// Resolves flow decisions for one flow's items vals[j..m) (sorted, capture order; items below
// item_base are out-of-order segments, not packets). Counts packets that took the flow's decision.
// With drop_invalid (IPS/firewall mode), a TCP segment that flow tracking found invalid for its
// session (kPktTcpInvalid) is dropped with kVerdictStreamError, whatever the modules said, as
// Suricata's stream.drop-invalid; it does not decide the flow, and an alert on it is kept.
// With pkt_counts, each packet a module alerted on (kVerdictAlerted, flow not decided) gets its
// flow's counters right after it (FlowCountsAt): the record's at the end of the batch less what the
// run's later packets added, walked back (cap_len: the packets' captured lengths, which the
// counters sum). Past a packet that restarted the flow in this batch, the walk goes on from the
// ended connection's counters, which the flow walk left at that packet's entry
// (FlowTrackParams::restart_counts). Runs without an alert cost nothing.
// With payload_len (modules read the application layer, whose alerts come after the batch on the
// packet that delivered the data), every packet with payload gets its counters too.
template <class Sink>
GASPP_HD GASPP_FORCEINLINE void verdict_walk_run(const FlowTableRef& t, const uint32_t* vals, uint32_t j, uint32_t m,
                                                 uint32_t slot, uint32_t item_base, const uint8_t* flow_flags,
                                                 uint8_t* verdict, bool drop_invalid, const uint32_t* cap_len,
                                                 FlowCountsAt* pkt_counts, const uint32_t* payload_len, Sink& c) {
  FlowRecord& r = t.recs[slot];
  uint8_t decided = r.misc & (kFlowDecidedDrop | kFlowDecidedPass);
  uint8_t alerted = r.misc & kFlowAlerted;
  bool touched = false, any_alert = false;
  uint32_t first_packet = m;  // position of the run's first packet (held segments come first)
  // A run is a serial chain of memory waits: the next item's flags and verdict are loaded while
  // this one is resolved (items are distinct, so nothing read ahead is written before its turn).
  uint32_t item = vals[j];
  uint8_t ff = 0, vv = 0;
  if (item >= item_base) ff = flow_flags[item - item_base], vv = verdict[item - item_base];
  for (uint32_t q = j; q < m; ++q) {
    const uint32_t cur = item;
    const uint8_t flags_cur = ff, v = vv;
    if (q + 1 < m) {
      item = vals[q + 1];
      if (item >= item_base) ff = flow_flags[item - item_base], vv = verdict[item - item_base];
    }
    if (cur < item_base) continue;
    const uint32_t i = cur - item_base;
    if (first_packet == m) first_packet = q;
    if (payload_len && payload_len[i]) any_alert = true;
    if (flags_cur & kPktFlowStart) decided = alerted = 0;
    touched = true;
    if (drop_invalid && (flags_cur & kPktTcpInvalid)) {
      // Dropped, but an alert a module raised on it stands (Suricata inspects the packets its
      // stream engine drops): it keeps its flow counters and marks the flow alerted.
      verdict[i] = uint8_t(kVerdictDrop | kVerdictStreamError | (v & kVerdictAlerted));
      if (v & kVerdictAlerted) alerted = kFlowAlerted, any_alert = true;
      c.add(c_verdict_stream_error, 1);
      continue;
    }
    if (decided) {
      const bool drop = decided & kFlowDecidedDrop;
      verdict[i] = uint8_t(kVerdictFlowDecided | (drop ? kVerdictDrop : 0));
      c.add(drop ? c_verdict_flow_dropped : c_verdict_flow_passed, 1);
      continue;
    }
    if (v & kVerdictAlerted) alerted = kFlowAlerted, any_alert = true;
    if (v & kVerdictDropFlow) decided = kFlowDecidedDrop;
    else if (v & kVerdictPassFlow) decided = kFlowDecidedPass;
  }
  if (touched) r.misc = uint8_t((r.misc & ~(kFlowDecidedDrop | kFlowDecidedPass | kFlowAlerted)) | decided | alerted);
  if (!any_alert || !pkt_counts) return;
  FlowCountsAt at = flow_counts_at(r);
  for (uint32_t q = m; q-- > first_packet;) {
    const uint32_t i = vals[q] - item_base;
    const uint8_t f = flow_flags[i];
    // A flow start after the run's first packet restarted the connection those earlier packets had.
    const bool restart = (f & kPktFlowStart) && q > first_packet;
    const FlowCountsAt ended = restart ? pkt_counts[i] : at;
    if ((verdict[i] & kVerdictAlerted) || (payload_len && payload_len[i])) pkt_counts[i] = at;
    const int d = (f & kPktToClient) ? 1 : 0;
    --at.pkts[d];
    at.bytes[d] -= cap_len[i];
    if (restart) at = ended;
  }
}

}  // namespace gaspp
