// decode/counters.hpp — the per-batch counters of the whole engine (decode, flow tracking,
// reassembly) and how one packet adds to them. It sits at the bottom of the engine because every
// stage adds to it.
//
// Counters is a flat array of 64-bit counts indexed by Counter. count_packet() is the per-packet
// rule, written once: the CPU backend calls it with a plain array per thread (merged afterwards),
// the CUDA backend with shared-memory atomics per block (flushed to global memory once per block).
// The summary (core/stats.hpp) turns the totals into text and JSON.
#pragma once
#include <cstdint>

#include "decode/checksum.hpp"
#include "decode/decoder.hpp"

namespace gaspp {

#define GASPP_COUNTERS(X)                                       \
  X(packets, "packets")                                         \
  X(wire_bytes, "bytes")                                        \
  X(captured_bytes, "captured_bytes")                           \
  X(truncated_by_snaplen, "truncated_by_snaplen")               \
  X(vlan_tagged, "vlan_tagged")                                 \
  X(l3_ipv4, "ipv4") X(l3_ipv6, "ipv6") X(l3_arp, "arp")        \
  X(l3_other, "other") X(l3_none, "none")                       \
  X(l4_tcp, "tcp") X(l4_udp, "udp") X(l4_icmp, "icmp")          \
  X(l4_icmpv6, "icmpv6") X(l4_other, "other") X(l4_none, "none") \
  X(ip_fragments, "ip_fragments")                               \
  X(tunneled, "tunneled")     /* decoded inside a tunnel (GTP-U, IP in IP) */ \
  X(undecoded, "undecoded")   /* well-formed, next layer not decoded */ \
  X(csum_bad_ipv4, "ipv4_bad_checksum") /* -k all: IPv4 header checksum wrong */ \
  X(csum_bad_tcp, "tcp_bad_checksum")   /* -k all: TCP checksum wrong */ \
  X(csum_bad_udp, "udp_bad_checksum")   /* -k all: UDP checksum wrong */ \
  X(csum_bad_icmp, "icmp_bad_checksum") /* -k all: ICMP or ICMPv6 checksum wrong */ \
  X(malformed, "malformed")                                     \
  X(decode_events_dropped, "decoder_events_dropped") /* events past kDecodeEventSlots a packet */

// Flow tracking (flow/): what happened to packets and flows. Listed once with the summary's name.
#define GASPP_FLOW_COUNTERS(X)                                                        \
  X(flow_packets, "packets")              /* packets attributed to a flow */          \
  X(flow_skip_not_ip, "not_ip")           /* no flow: not IPv4/IPv6 */                \
  X(flow_skip_malformed, "malformed")     /* no flow: malformed headers */            \
  X(flow_skip_fragment, "fragment")       /* no flow: IP fragment without L4 header */ \
  X(flow_untracked, "table_full")         /* no flow: no slot even after eviction */  \
  X(flow_untracked_dropped, "table_full_dropped") /* ... and dropped: exception policy (flow memcap) */ \
  X(flow_created, "created")                                                          \
  X(flow_timed_out, "timed_out")                                                      \
  X(flow_evicted, "evicted")                                                          \
  X(flow_shutdown, "ended_at_shutdown")                                               \
  X(flow_port_reuse, "port_reuse")                                                    \
  X(flow_emergency, "emergency_entered")                                              \
  X(tcp_midstream, "tcp_midstream")                                                   \
  X(tcp_no_session, "tcp_no_session")                                                 \
  X(tcp_established, "tcp_established")                                               \
  X(tcp_syn_retransmit, "tcp_syn_retransmitted")                                      \
  X(tcp_synack_bad_ack, "tcp_synack_bad_ack")                                         \
  X(tcp_handshake_bad_seq, "tcp_handshake_bad_seq") /* 3rd segment's seq not the ISN+1: ignored */ \
  X(tcp_syn_unexpected, "tcp_syn_unexpected")                                         \
  X(tcp_handshake_no_synack, "tcp_handshake_no_synack") /* no SYN where a SYN-ACK is due: ignored */ \
  X(tcp_syn_data_ignored, "tcp_syn_data_ignored") /* data on a SYN without TCP Fast Open: not stream data */ \
  X(tcp_rst_invalid, "tcp_rst_invalid")                                               \
  X(tcp_bad_timestamp, "tcp_bad_timestamp")       /* invalid timestamp option (PAWS, bad echo): ignored */ \
  X(tcp_out_of_window, "tcp_out_of_window")       /* data beyond the receiver's window: ignored */ \
  X(tcp_invalid_ack, "tcp_invalid_ack")           /* ACK past the window the receiver advertised: ignored */ \
  X(tcp_bad_checksum, "tcp_bad_checksum")         /* -k all: wrong checksum, ignored by the session */ \
  X(tcp_urgent_dropped, "tcp_urgent_dropped")     /* IPS, urgent policy drop: URG segment dropped, ignored */

// TCP reassembly (stream/): what happened to segments with payload, and to the stream bytes.
#define GASPP_STREAM_COUNTERS(X)                                                                    \
  X(stream_segments, "segments")                  /* TCP segments with payload in a tracked session */ \
  X(stream_in_order, "in_order")                  /* at or before the next expected byte */        \
  X(stream_ooo_buffered, "out_of_order_buffered") /* arrived beyond a hole, waited */              \
  X(stream_ooo_released, "out_of_order_released") /* waited, then delivered (or made redundant) */ \
  X(stream_retransmit, "retransmissions")         /* nothing new: every byte already delivered */  \
  X(stream_straddle, "straddling")                /* began before the next expected byte: tail only */ \
  X(stream_overlap_same, "overlaps_same_data")    /* overlapped a waiting copy, same bytes */       \
  X(stream_overlap_conflict, "overlaps_different_data") /* ... different bytes (event) */         \
  X(stream_gaps, "gaps")                          /* holes skipped */                              \
  X(stream_gap_bytes, "gap_bytes")                                                                 \
  X(stream_flow_limit, "flow_limit_skips")        /* holes skipped because too much waited */      \
  X(stream_ack_skips, "acked_gap_skips")          /* holes skipped because the receiver acked them */ \
  X(stream_ooo_dropped, "out_of_order_dropped")   /* out-of-order buffer full: segment dropped */   \
  X(stream_ooo_dropped_bytes, "out_of_order_dropped_bytes")                                        \
  X(stream_truncated, "truncated_segments")       /* payload cut by the capture's snaplen */       \
  X(stream_urgent_oob, "urgent_oob_bytes")        /* urgent bytes taken out of band (policy oob) */ \
  X(stream_urgent_gap, "urgent_gap_bytes")        /* urgent bytes left as a hole (policy gap) */    \
  X(stream_urgent_limit, "urgent_oob_limit")      /* URG segments past the out-of-band limit */     \
  X(stream_after_end, "after_end")                /* data after the direction was closed */        \
  X(stream_chunks, "chunks")                      /* in-order pieces handed to consumers */        \
  X(stream_bytes, "bytes")                        /* bytes handed to consumers */                  \
  X(stream_chunk_overflow, "chunk_overflow")      /* pieces lost: per-batch chunk array full */

// Modules (include/gaspp/module.hpp): packets whose verdict came from their flow's earlier decision.
#define GASPP_VERDICT_COUNTERS(X)                                                                   \
  X(verdict_flow_dropped, "flow_dropped")   /* dropped: the flow was dropped by an earlier packet */ \
  X(verdict_flow_passed, "flow_passed")     /* passed: the flow was passed by an earlier packet */ \
  X(verdict_stream_error, "stream_error")   /* dropped (IPS): a TCP segment invalid for its session */

enum Counter : int {
#define GASPP_X(id, name) c_##id,
  GASPP_COUNTERS(GASPP_X)
#undef GASPP_X
  c_malformed_reason0,  // kMalformedReasons slots follow, one per MalformedReason
  c_malformed_last_ = c_malformed_reason0 + kMalformedReasons - 1,
  c_undecoded_reason0,  // kUndecodedReasons slots follow, one per UndecodedReason
  c_undecoded_last_ = c_undecoded_reason0 + kUndecodedReasons - 1,
  c_decode_event0,  // kDecodeEvents slots follow, one per DecodeEvent (Suricata's decoder.event.*)
  c_decode_event_last_ = c_decode_event0 + kDecodeEvents - 1,
#define GASPP_X(id, name) c_##id,
  GASPP_FLOW_COUNTERS(GASPP_X)
  GASPP_STREAM_COUNTERS(GASPP_X)
  GASPP_VERDICT_COUNTERS(GASPP_X)
#undef GASPP_X
  c_count_
};

struct Counters {
  uint64_t v[c_count_];
};

// Adds one decoded packet to a sink: sink.add(index, amount).
template <class Sink>
GASPP_HD GASPP_FORCEINLINE void count_packet(Sink& s, const DecodedPacket& p) {
  s.add(c_packets, 1);
  s.add(c_wire_bytes, p.wire_len[0]);
  s.add(c_captured_bytes, p.cap_len[0]);
  if (p.cap_len[0] < p.wire_len[0]) s.add(c_truncated_by_snaplen, 1);
  if (p.csum_bad[0]) {
    if (p.csum_bad[0] & kCsumBadIp) s.add(c_csum_bad_ipv4, 1);
    if (p.csum_bad[0] & kCsumBadL4)
      s.add(p.l4[0] == uint8_t(L4::tcp) ? c_csum_bad_tcp : p.l4[0] == uint8_t(L4::udp) ? c_csum_bad_udp : c_csum_bad_icmp, 1);
  }
  if (p.vlan_count[0]) s.add(c_vlan_tagged, 1);
  static_assert(int(L3::none) == 0 && int(L3::ipv4) == 1 && int(L3::ipv6) == 2 && int(L3::arp) == 3 &&
                    int(L3::other) == 4,
                "count_packet maps L3 values to counters by table; keep the enum order");
  const int l3 = p.l3[0];
  s.add(l3 == 0 ? c_l3_none : l3 == 1 ? c_l3_ipv4 : l3 == 2 ? c_l3_ipv6 : l3 == 3 ? c_l3_arp : c_l3_other, 1);
  const int l4 = p.l4[0];
  if (l3 == 1 || l3 == 2)
    s.add(l4 == 1 ? c_l4_tcp : l4 == 2 ? c_l4_udp : l4 == 3 ? c_l4_icmp : l4 == 4 ? c_l4_icmpv6 : l4 == 5 ? c_l4_other : c_l4_none, 1);
  if (p.ip_frag[0] & kFragIsFragment) s.add(c_ip_fragments, 1);
  if (p.tunnel_depth[0]) s.add(c_tunneled, 1);
  if (p.undecoded[0]) {
    s.add(c_undecoded, 1);
    s.add(c_undecoded_reason0 + p.undecoded[0], 1);
  }
  if (p.malformed[0]) {
    s.add(c_malformed, 1);
    s.add(c_malformed_reason0 + p.malformed[0], 1);
  }
  if (p.events[0]) {
    for (int k = 0; k < kDecodeEventSlots && p.events[k]; ++k) s.add(c_decode_event0 + (p.events[k] & 0x7f), 1);
    if (p.events[kDecodeEventSlots - 1] & 0x80) s.add(c_decode_events_dropped, 1);
  }
}

struct HostCounterSink {
  Counters& c;
  void add(int i, uint64_t n) { c.v[i] += n; }
};

}  // namespace gaspp
