// gaspp/flow.hpp — the flows as modules see them: the per-connection record the flow table keeps
// (FlowRecord: key, per-side counters and TCP state, the reassembler's per-direction state), the
// per-packet tracking flags, and FlowTableRef, the table's view handed to kernels and CPU workers
// (module state slices, flow decisions). Written by the engine's flow tracking (src/flow/: how the
// table is laid out and searched, flow_table.hpp; the record's lifecycle, flow_record.hpp); part
// of the public API because module hooks read it.
#pragma once
#include <cstdint>
#include <type_traits>

#include "gaspp/hd.hpp"
#include "gaspp/stream_state.hpp"

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

// A flow as one of its packets left it, kept per packet while a module asks for it
// (ModuleInstance::wants_flow_positions): what Suricata's flow.pkts, flow.bytes and stream_size
// (and flow.age) read at that packet. [0]: to the server (the client's side), [1]: to the client. stream: a TCP
// side's next_seq - isn (Suricata's ssn->client / ssn->server), 0 for a side not seen; 0 for other
// protocols (the record's isn holds ICMP's first message there). tcp_session: a TCP flow with a
// session (not kFlowNoSession), which Suricata's stream_size needs.
struct FlowPosAt {
  uint32_t pkts[2];
  uint32_t stream[2];
  uint64_t bytes[2];
  uint8_t tcp_session;
  uint8_t pad_[3];
  // Whole seconds from the flow's first packet to this one, as Suricata's flow.age reads them
  // (the seconds of the last time minus those of the start; at most 2^32 - 1).
  uint32_t age_s;
};
static_assert(std::is_trivially_copyable_v<FlowPosAt>, "written by the walk, read by modules");

// The flow id of a packet whose connection ended later in the same batch, when a new connection
// on the same key restarted the flow's slot (port reuse, inline expiry): the slot's record then
// holds the new connection's id, and the walk writes the old one here for the packets before the
// restart. An entry counts only in the batch whose flow epoch it carries (FlowTrackParams::epoch),
// so the array is never cleared and the walk writes it only on a restart.
struct FlowIdAt {
  uint32_t epoch;
  uint32_t pad_;
  uint64_t flow_id;
};
static_assert(std::is_trivially_copyable_v<FlowIdAt>, "written by the walk, read by modules");

GASPP_HD GASPP_FORCEINLINE uint32_t flow_age_s(uint64_t first_ns, uint64_t last_ns) {
  const uint64_t a = last_ns / 1000000000ull - first_ns / 1000000000ull;
  return last_ns < first_ns ? 0u : a > 0xffffffffull ? 0xffffffffu : uint32_t(a);
}

GASPP_HD GASPP_FORCEINLINE FlowPosAt flow_pos_of(const FlowRecord& r) {
  const bool tcp = r.proto_class == uint8_t(FlowProto::tcp);
  return FlowPosAt{{uint32_t(r.side[0].pkts), uint32_t(r.side[1].pkts)},
                   {tcp ? r.side[0].next_seq - r.side[0].isn : 0u, tcp ? r.side[1].next_seq - r.side[1].isn : 0u},
                   {r.side[0].bytes, r.side[1].bytes},
                   uint8_t(tcp && !(r.misc & kFlowNoSession) ? 1 : 0),
                   {},
                   flow_age_s(r.first_ts, r.last_ts)};
}

constexpr uint32_t kFlowBucketSlots = 32;
constexpr uint32_t kNoFlow = 0xffffffffu;

// Per-packet result of tracking, for later stages (modules read it through Packet).
enum FlowPacketFlags : uint8_t {
  kPktToClient = 1,   // sent by the server side
  kPktFlowStart = 2,  // first packet of its flow
  kPktFromLo = 4,     // sent by key endpoint 0 (set by the lookup, which builds the key; the walk reads it)
  kPktTcpIgnored = 8, // TCP segment ignored (invalid, or its flow was dropped by a stream hook): no
                      // state, no stream data
  kPktTcpInvalid = 16,// TCP segment invalid for its session (timestamp, window, ACK, handshake
                      // sequence, -k all checksum, urgent policy drop or the out-of-band limit's
                      // drop); in IPS mode the verdict walk drops it (reason stream_error, or
                      // stream_urgent for URG segments under an urgent drop policy)
  kPktEstablished = 32,  // Suricata's FLOW_PKT_ESTABLISHED (flow:established): TCP, the session
                         // had completed its handshake before this segment (a session closed by
                         // a FIN or RST counts); other protocols, both directions seen, this
                         // packet included
  kPktClosing = 64,   // TCP session closing after this segment: a FIN sent and the session not
                      // yet closed (Suricata's fin_wait1 to closing states; tcp.session:closing)
  kPktDirFirst = 128, // first packet of its direction in its flow (firewall hook flow_start)
};

// Table-wide gauges kept on the device (or in host memory for the CPU backend).
struct FlowTableState {
  uint32_t live;       // flows in the table
  uint32_t emergency;  // 1 while emergency timeouts apply
  uint32_t peak_live;
  uint32_t failed;     // packets that found no room in the current batch's lookup
};

struct FlowTableRef {
  uint32_t* tags;           // slots
  FlowRecord* recs;         // slots
  uint32_t* bucket_locks;   // buckets
  uint8_t* module_state;    // slots * module_state_bytes
  FlowTableState* state;
  uint32_t buckets;
  uint32_t capacity;        // most flows held at once
  uint32_t module_state_bytes;

  GASPP_HD uint32_t slots() const { return buckets * kFlowBucketSlots; }
  GASPP_HD uint8_t* module_slice(uint32_t slot, uint32_t offset) const {
    return module_state + uint64_t(slot) * module_state_bytes + offset;
  }
};
static_assert(std::is_trivially_copyable_v<FlowTableRef>, "FlowTableRef is passed to kernels by value");

}  // namespace gaspp
