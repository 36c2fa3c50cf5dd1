// flow/flow_record.hpp — what the flow table keeps per connection, and its configuration.
//
// A flow is keyed by the canonical 5-tuple: the two endpoints (address, port) in sorted order, so
// both directions of a connection reach one record, plus the IP protocol, the VLAN ids (as
// Suricata's `vlan.use-for-tracking`) and, for ICMP, the query type with replies folded onto
// their request type (echo reply → echo request) and the echo id in both port fields. Other IP
// protocols are keyed by the address pair. The record remembers which endpoint is the client
// (the side that sent the first packet, or the SYN; the receiver of a lone SYN-ACK).
//
// FlowRecord (240 bytes, one per table slot) holds, per side (client, server): packets, bytes
// (captured bytes, as Suricata counts them), TCP flags seen, the TCP state of that side, its
// initial and next expected sequence number, its FIN sequence, last advertised window and the
// TCP timestamp of its SYN and the newest valid timestamp it sent. And per
// flow: first and last packet time, a 51-bit flow id, the flow state (new/established/closed) and
// the batch that last touched it (eviction never picks a flow the current batch uses). TCP flows
// also keep the reassembler's state of each direction (gaspp/stream_state.hpp).
//
// Per-module state: each module declares how many bytes of per-flow state it needs; the table
// keeps `module_state_bytes` (their sum, each slice 16-byte aligned) per slot in a separate array,
// zeroed when a flow is created, and hands the module its slice with the flow's slot number
// (FlowTableRef::module_state). The record itself stays fixed-size.
//
// Timeouts (seconds, packet time offline, wall time live) follow Suricata's `flow-timeouts`
// defaults per protocol class (tcp, udp, icmp, other) and state (new, established, closed), with
// the shorter emergency set used while the table is nearly full.
#pragma once
#include <cstdint>
#include <type_traits>
#include <vector>

#include "gaspp/flow.hpp"
#include "gaspp/hd.hpp"

namespace gaspp {

// A record leaving the table, with why.
struct FlowRecordOut {
  FlowRecord rec;
  uint8_t reason;  // FlowReason
  uint8_t pad_[15] = {};
};

// The order records are written in: by last packet time, then first packet time, then flow id
// (atomic appends on the GPU come in any order; this makes output identical on both backends).
void sort_flow_records(std::vector<FlowRecordOut>& v);

// Suricata's defaults (suricata.yaml's flow-timeouts); only TCP flows reach the closed state, the
// others' closed values are the `default` section's 0.
struct FlowTimeouts {
  // [FlowProto][state: 0 new, 1 established, 2 closed], seconds
  uint32_t normal[4][3] = {{60, 600, 60}, {30, 300, 0}, {30, 300, 0}, {30, 300, 0}};
  uint32_t emergency[4][3] = {{5, 100, 10}, {10, 100, 0}, {10, 100, 0}, {10, 100, 0}};
};

struct FlowConfig {
  bool enabled = true;
  uint32_t capacity = 1u << 20;       // flows held at once (the table has 5/4 as many slots)
  bool midstream = true;              // pick up TCP sessions whose handshake was not seen
  bool vlan_in_key = true;            // VLAN ids are part of the flow key
  bool defrag = true;                 // fragments are reassembled first: none keys a flow itself
  FlowTimeouts timeouts;
  uint64_t sweep_interval_ns = 1'000'000'000ull;  // expiry sweep period (packet time offline)
  uint32_t emergency_enter_pct = 100; // occupancy (% of capacity) that enters emergency mode
  uint32_t emergency_recover_pct = 70;// emergency ends when occupancy falls below this after a sweep
  uint32_t module_state_bytes = 0;    // per-flow bytes reserved for modules (sum of declarations)
};

GASPP_HD GASPP_FORCEINLINE uint32_t flow_timeout_s(const FlowTimeouts& t, const FlowRecord& r, bool emergency) {
  const int st = r.state == uint8_t(FlowState::established) ? 1 : r.state == uint8_t(FlowState::closed) ? 2 : 0;
  return emergency ? t.emergency[r.proto_class][st] : t.normal[r.proto_class][st];
}

// Whether a flow idle since r.last_ts has timed out at `now` (both ns).
GASPP_HD GASPP_FORCEINLINE bool flow_timed_out(const FlowTimeouts& t, const FlowRecord& r, uint64_t now, bool emergency) {
  return now > r.last_ts && now - r.last_ts > uint64_t(flow_timeout_s(t, r, emergency)) * 1'000'000'000ull;
}

const char* flow_state_name(FlowState s);
const char* flow_reason_name(FlowReason r);
const char* flow_proto_name(uint8_t ip_proto);  // "TCP", "UDP", "ICMP", "IPv6-ICMP", or the number
// The session state of a TCP flow in Suricata's words ("established", "fin_wait1", "closed", ...).
const char* tcp_session_name(const FlowRecord& r);

}  // namespace gaspp
