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
// also keep the reassembler's state of each direction (stream/stream_state.hpp).
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

#include "gaspp/hd.hpp"
#include "stream/stream_state.hpp"

namespace gaspp {

enum class FlowProto : uint8_t { tcp = 0, udp = 1, icmp = 2, other = 3 };
enum class FlowState : uint8_t { fresh = 0, new_ = 1, established = 2, closed = 3 };
// Why a flow record was written: timed out (idle longer than its timeout), forced out of a full
// table, still open when the run ended, or a closed TCP session replaced by a new one on the same
// 5-tuple (port reuse; Suricata's EVE reason "tcp_reuse").
enum class FlowReason : uint8_t { timeout = 0, forced = 1, shutdown = 2, tcp_reuse = 3 };

// One side of a TCP connection, as seen from the packets that side sends.
enum class TcpSide : uint8_t {
  none = 0,     // nothing sent yet (or midstream tracking off)
  syn_sent,     // sent a SYN
  syn_recv,     // sent a SYN-ACK
  established,  // handshake complete (or picked up midstream)
  fin_sent,     // sent a FIN, not yet acknowledged
  fin_acked,    // its FIN was acknowledged
  reset,        // sent a valid RST
};

constexpr uint8_t kNoWscale = 0xff;
constexpr uint32_t kIcmpSeen = 1u << 16;  // FlowSide::isn of an ICMP flow holds a type and code

struct FlowKey {
  uint32_t addr[2][4];  // endpoint 0 is the lower (address, port) pair
  uint16_t port[2];     // TCP/UDP ports; ICMP: echo id in both (0 for other ICMP types)
  uint16_t vlan[3];
  uint8_t vlan_n;
  uint8_t proto;        // IP protocol number
  uint8_t family;       // 4 or 6
  uint8_t icmp_type;    // ICMP: query type with replies folded onto requests; else 0
  uint8_t icmp_code;
  uint8_t pad_ = 0;
};
static_assert(sizeof(FlowKey) == 48, "FlowKey is compared word by word; keep it 48 bytes");

struct FlowSide {
  uint64_t pkts;
  uint64_t bytes;
  uint32_t isn;         // TCP: initial sequence number (SYN's seq; midstream: first seq - 1).
                        // ICMP: kIcmpSeen | type << 8 | code of this side's first message (EVE's
                        // icmp_type / response_icmp_type); the field is free there
  uint32_t next_seq;    // highest seq + length (+SYN/FIN) this side has sent
  uint32_t fin_seq;     // seq of this side's FIN
  uint32_t win;         // last advertised window, scaled when both SYNs carried window scale
  uint16_t flags;       // TCP flags seen from this side
  uint8_t tcp;          // TcpSide
  uint8_t wscale;       // window scale from its SYN, kNoWscale if none
  uint8_t have_seq;     // next_seq is known
  uint8_t have_ts;      // syn_tsval is known
  uint8_t tcp_before_rst;    // this side's TcpSide before it sent the RST that closed the flow
  uint8_t state_before_rst;  // the flow's FlowState before that RST
  uint32_t syn_tsval;   // TCP timestamp of this side's SYN (or SYN-ACK): no genuine echo is older
  uint32_t last_tsval;  // newest valid TCP timestamp this side sent (PAWS); set from the SYN on
};
static_assert(sizeof(FlowSide) == 48, "FlowSide layout");

// Hot fields (key, times) first: a lookup touches only the key, the walk the first lines.
struct alignas(16) FlowRecord {
  FlowKey key;
  uint64_t first_ts;    // ns
  uint64_t last_ts;     // ns
  uint64_t flow_id;     // 51 bits, stable for the flow, equal on both backends
  FlowSide side[2];     // [0] client, [1] server
  StreamSide stream[2]; // TCP reassembly per direction: [0] client → server, [1] server → client
  uint32_t epoch;       // last batch that looked this flow up
  uint8_t client_lo;    // 1: the client is key endpoint 0
  uint8_t state;        // FlowState
  uint8_t proto_class;  // FlowProto
  uint8_t misc;         // FlowMisc bits
};
static_assert(sizeof(FlowRecord) == 240, "FlowRecord is 240 bytes; update the docs if it grows");
static_assert(std::is_trivially_copyable_v<FlowRecord>, "records are copied between host and device");

enum FlowMisc : uint8_t {
  kFlowMidstream = 1,     // TCP session picked up without its handshake
  kFlowNoSession = 2,     // TCP without a handshake while midstream pickup is off: counted only
  kFlowPortReused = 4,    // this flow replaced a closed one on the same 5-tuple
  kFlowDecidedDrop = 8,   // a module dropped the flow (drop_flow): later packets are dropped
  kFlowDecidedPass = 16,  // a module passed the flow (pass_flow): later packets skip the modules
  kFlowAlerted = 32,      // a module raised an alert on one of its packets
  // A stream hook dropped the flow during the flow walk: its later packets are counted in the
  // record but neither change the TCP state nor reach reassembly (as an IPS's stream engine skips a
  // dropped flow). Only walk-time decisions do this: a packet stage decides after its batch's walk,
  // so freezing there would make the state depend on where batches end.
  kFlowStreamDropped = 64,
};

// A flow's counters right after one of its packets was applied: what Suricata's alert `flow`
// object shows for that packet. The verdict walk works them out for the packets a module alerted
// on (verdict_walk_run, core/module_stage.hpp), so an alert shows the flow as it was at that
// packet, not at the end of its batch. [0]: to the server (the client's side), [1]: to the client.
struct FlowCountsAt {
  uint64_t pkts[2];
  uint64_t bytes[2];
  uint64_t first_ts;  // ns, the flow's start
};
static_assert(std::is_trivially_copyable_v<FlowCountsAt>, "written by kernels, read by the host");

GASPP_HD GASPP_FORCEINLINE FlowCountsAt flow_counts_at(const FlowRecord& r) {
  return FlowCountsAt{{r.side[0].pkts, r.side[1].pkts}, {r.side[0].bytes, r.side[1].bytes}, r.first_ts};
}

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
