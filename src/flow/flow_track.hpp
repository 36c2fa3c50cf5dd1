// flow/flow_track.hpp — updating a flow with one packet (TCP state machine, counters, inline
// expiry and port reuse), the expiry sweep of one slot, and the per-batch emergency decision.
//
// Order matters for TCP state, so a flow's packets of a batch are applied one after another in
// capture order (backends group a batch's packets by flow: the CUDA backend by a radix sort of
// (slot, packet), the CPU backend by giving each worker the flows whose slot falls in its share),
// and different flows run in parallel. The result does not depend on how packets were batched.
//
// TCP, per side (the side that sends the packet is S, the other O):
//   SYN          S none → syn_sent (isn = seq). Data on it is the session's only with the TCP Fast
//                Open option (else counted as tcp_syn_data_ignored, kept out of the stream and
//                inspected as the packet's, as Suricata). Same seq again: a retransmission (counted); another
//                seq: a new attempt (isn replaced). S none while O syn_sent: simultaneous open.
//                SYN on a closed flow: port reuse — the old flow is written out (reason
//                tcp_reuse, as Suricata's EVE says; counted as timed out and port_reuse) and a new
//                one starts with this SYN; except, as Suricata, a SYN from the client repeating its
//                ISN: a retransmission. When the flow was closed by
//                the server's RST to that SYN (connection refused, then retried), the session
//                goes on from where it was before the RST.
//   SYN-ACK      O syn_sent and ack == O's isn+1 (or, TCP Fast Open, isn+1 + the SYN's data) → S
//                syn_recv; a wrong ack is counted and ignored.
//                Both sides syn_sent (simultaneous open): S syn_recv, and the second SYN-ACK makes
//                both established. First packet of a flow (midstream on): the receiver is the
//                client, S syn_recv, O syn_sent with its seq taken from the ack.
//   ACK          S syn_sent, O syn_recv, ack == O's isn+1 → both established (flow established).
//                Both sides syn_sent (two SYNs): a segment without SYN (or FIN) is counted
//                (tcp_handshake_no_synack) and ignored, as Suricata's SYN_SENT state does; so is
//                a bare ACK (no data, no FIN) from S none to O's SYN (a split handshake's first
//                answer: the session then goes on with S's SYN).
//                Its seq must be S's isn+1: another seq is counted (tcp_handshake_bad_seq) and the
//                segment ignored, for state and streams, as Suricata does.
//   no SYN seen  first packet without SYN (midstream on, like Suricata's stream.midstream): the
//                sender is the client, both sides established, sequence numbers taken from the
//                packet. Midstream off: the flow is counted but has no TCP session.
//   FIN          S → fin_sent (fin_seq = seq + len); O's ACK covering it → S fin_acked.
//   RST          accepted when S's sequence is unknown or seq lies in [S.next_seq, S.next_seq +
//                O's window]; then S reset and the flow closed. Other RSTs are counted and ignored,
//                and so is a RST from a side still in syn_sent: a host in SYN-SENT answers an
//                unacceptable segment with a RST but does not abort (RFC 793), so it ends nothing.
//   timestamps   as Suricata's stream engine (default OS policy, BSD), a segment carrying the TCP
//                timestamp option is invalid when:
//                  * it answers a SYN (the client in syn_sent, the segment from the server) and
//                    echoes a value no SYN sent: tsecr ≠ 0 and outside [first SYN's tsval, newest
//                    SYN's tsval], or tsecr ≠ 0 when the SYN carried no timestamp (an echo of nothing);
//                  * both SYNs carried timestamps (the session uses them) and its tsval is 0, or
//                    older than the newest valid tsval of its sender (PAWS, RFC 7323 §5);
//                  * its echo is older than the other side's SYN timestamp: it echoes nothing that
//                    side sent (the RST/FIN evasion of suricata-verify bug 3286).
//                An invalid segment is counted (tcp_bad_timestamp, Suricata's
//                stream.pkt_invalid_timestamp) and ignored, for state and streams; so an injected
//                RST of that kind does not close the session. PAWS's exception for a sender idle
//                over 24 days is not kept: every flow timeout is shorter unless configured longer.
//   window       once the handshake was seen (not midstream, as Suricata exempts those), each ACK
//                from O moves the right edge of O's window for S's data to the furthest
//                ack + window (scaled) O advertised. A data segment of S ending past that edge is
//                out of window once both sides are past the handshake (Suricata checks from
//                ESTABLISHED on: stream.est_packet_out_of_window): counted
//                (tcp_out_of_window) and ignored, for state and streams; it is never stream data.
//                Before O's first ACK (the client's first data rides on the SYN-ACK's window) the
//                edge is the SYN-ACK's ack + window.
//   IPS          segments ignored as invalid (timestamps, window, handshake sequence) are marked
//                kPktTcpInvalid; with drop_invalid (firewall/IPS mode) the verdict walk drops
//                them with reason stream_error, as Suricata's stream.drop-invalid.
//   The flow is established when the handshake completes (or midstream), closed after a valid RST
//   or once both sides sent FIN and one FIN was acknowledged. UDP, ICMP and other protocols are
//   established once both directions have been seen.
//
// Inline expiry: a packet arriving more than the flow's timeout after its last packet ends the old
// flow (written out with reason timeout) and starts a new one, whether or not a sweep ran between
// them; so records do not depend on batch boundaries.
#pragma once
#include <cstdint>

#include "decode/counters.hpp"
#include "flow/flow_table.hpp"

namespace gaspp {

// Where records leaving the table go: a bounded array and a count, advanced atomically. Writers
// that may not lose records (walk, eviction) are sized never to overflow; the sweep checks the
// room first and leaves a flow in the table if there is none (picked up by the next sweep).
struct FlowRecordSink {
  FlowRecordOut* out;
  uint32_t* count;
  uint32_t capacity;

  GASPP_HD bool emit(const FlowRecord& r, FlowReason why) const {
    const uint32_t idx = atomic_add(count, 1);
    if (idx >= capacity) return false;
    out[idx].rec = r;
    out[idx].reason = uint8_t(why);
    return true;
  }
};

struct FlowPacketView {
  uint32_t* slot;     // kNoFlow when untracked
  uint8_t* flags;     // FlowPacketFlags
};

struct FlowTrackParams {
  FlowTimeouts timeouts;
  uint32_t epoch;
  bool midstream;
  bool vlan_in_key;
  // IPS mode with stream urgent policy drop: a segment with URG set is ignored by the session and
  // marked invalid, so the verdict walk drops it (Suricata drops it before the stream engine).
  bool urgent_drop = false;
  bool defrag = true;  // FlowConfig::defrag
  // With modules: where a packet that restarts its flow in the slot (port reuse, inline expiry)
  // leaves the ended connection's counters, at its position in the batch, so that the verdict walk
  // can work out counters at alerted packets before it (core/module_stage.hpp). Rare writes.
  FlowCountsAt* restart_counts = nullptr;
  // When a module asks (ModuleInstance::wants_flow_positions): the flow as each packet left it, at
  // the packet's position in the batch (FlowPosAt). Packets without a flow keep what was there.
  FlowPosAt* pkt_pos = nullptr;
  // With modules: the ended connection's flow id at the packets before a restart (FlowIdAt).
  FlowIdAt* pkt_flow_id = nullptr;
};

GASPP_HD GASPP_FORCEINLINE bool seq_lt(uint32_t a, uint32_t b) { return int32_t(a - b) < 0; }
GASPP_HD GASPP_FORCEINLINE bool seq_leq(uint32_t a, uint32_t b) { return int32_t(a - b) <= 0; }

enum : uint16_t { kTcpFin = 1, kTcpSyn = 2, kTcpRst = 4, kTcpPsh = 8, kTcpAck = 16, kTcpUrg = 32 };

// The fields of a packet that tracking reads, loaded together: a flow walk is a serial chain of
// memory waits, so it loads the next packet's while it applies this one (flow_walk_run).
struct TrackedPacket {
  uint64_t ts_ns;
  uint32_t cap_len, payload_len, seq, ack, tsval, tsecr;
  uint16_t flags, win;
  uint8_t l4, opts, wscale, icmp_type, icmp_code, csum_bad;
};
GASPP_HD GASPP_FORCEINLINE TrackedPacket tracked_packet(const DecodedView& d, uint32_t i) {
  return TrackedPacket{d.ts_ns[i],     d.cap_len[i],   d.payload_len[i], d.tcp_seq[i], d.tcp_ack[i],
                       d.tcp_tsval[i], d.tcp_tsecr[i], d.tcp_flags[i],   d.tcp_win[i], d.l4[i],
                       d.tcp_opts[i],  d.tcp_wscale[i], d.icmp_type[i],  d.icmp_code[i], d.csum_bad[i]};  // in TrackedPacket's order
}

namespace flow_detail {

GASPP_HD GASPP_FORCEINLINE void start_side(FlowSide& s, TcpSide st, uint32_t isn, uint32_t next, uint8_t wscale) {
  s.tcp = uint8_t(st);
  s.isn = isn;
  s.next_seq = next;
  s.have_seq = 1;
  s.wscale = wscale;
}

GASPP_HD GASPP_FORCEINLINE bool in_fin_states(uint8_t t) {
  return t == uint8_t(TcpSide::fin_sent) || t == uint8_t(TcpSide::fin_acked);
}

GASPP_HD GASPP_FORCEINLINE bool past_handshake(uint8_t t) {
  return t == uint8_t(TcpSide::established) || t == uint8_t(TcpSide::fin_sent) || t == uint8_t(TcpSide::fin_acked);
}

// An ACK from `sender` advertising `edge` (ack + window): the furthest edge of the other direction.
GASPP_HD GASPP_FORCEINLINE void move_window_edge(FlowRecord& r, int sender, uint32_t edge) {
  if (r.misc & kFlowMidstream) return;
  StreamSide& od = r.stream[sender ^ 1];
  if (!(od.flags & kStreamWinKnown) || seq_lt(od.win_edge, edge)) {
    od.win_edge = edge;
    od.flags |= kStreamWinKnown;
  }
}

// The timestamp rules of the header, for a segment that carries the option.
GASPP_HD GASPP_FORCEINLINE bool timestamp_invalid(const FlowRecord& r, int sender, const TrackedPacket& p, bool syn,
                                                   bool has_ack) {
  const FlowSide& S = r.side[sender];
  const FlowSide& O = r.side[sender ^ 1];
  // An answer to the client's SYN (Suricata's StateSynSentValidateTimestamp).
  // A client that resent its SYN may be answered with the echo of any of them: the first SYN's
  // tsval up to the newest (last_tsval while it has sent nothing else).
  if (sender == 1 && O.tcp == uint8_t(TcpSide::syn_sent) && !(r.misc & kFlowMidstream) && p.tsecr != 0 &&
      (!O.have_ts || seq_lt(p.tsecr, O.syn_tsval) || seq_lt(O.last_tsval, p.tsecr)))
    return true;
  // The session uses timestamps: both SYNs carried them (PAWS).
  if (!syn && S.have_ts && O.have_ts && (p.tsval == 0 || seq_lt(p.tsval, S.last_tsval))) return true;
  // An echo of something the other side never sent.
  return has_ack && O.have_ts && p.tsecr != 0 && seq_lt(p.tsecr, O.syn_tsval);
}

// Returns false when the packet was ignored as invalid (see the header: timestamps).
template <class Sink>
GASPP_HD inline bool tcp_update(FlowRecord& r, int sender, const TrackedPacket& p, bool midstream, Sink& c) {
  FlowSide& S = r.side[sender];
  FlowSide& O = r.side[sender ^ 1];
  const uint16_t f = p.flags;
  const uint32_t seq = p.seq, ack = p.ack;
  const bool syn = f & kTcpSyn, has_ack = f & kTcpAck, fin = f & kTcpFin, rst = f & kTcpRst;
  const uint32_t seg_end = seq + p.payload_len + (syn ? 1 : 0) + (fin ? 1 : 0);
  const uint8_t ws = (p.opts & kOptWscale) ? p.wscale : kNoWscale;
  S.flags |= f;
  if (r.misc & kFlowNoSession) {
    c.add(c_tcp_no_session, 1);
    return true;
  }
  const bool has_ts = p.opts & kOptTimestamp;
  if (has_ts && timestamp_invalid(r, sender, p, syn, has_ack)) {
    c.add(c_tcp_bad_timestamp, 1);
    return false;
  }
  if (!syn && !rst && p.payload_len && !(r.misc & kFlowMidstream) && past_handshake(S.tcp) && past_handshake(O.tcp) &&
      (r.stream[sender].flags & kStreamWinKnown) && seq_lt(r.stream[sender].win_edge, seq + p.payload_len)) {
    c.add(c_tcp_out_of_window, 1);
    return false;
  }
  // An acknowledgement of data past the window the receiver had advertised (Suricata's invalid
  // "ACK after next_win"): the other side cannot have sent it. Invalid, so that a forged ACK
  // cannot move the window edge or the other direction's stream offsets.
  if (has_ack && !syn && !rst && !(r.misc & kFlowMidstream) && past_handshake(S.tcp) && past_handshake(O.tcp) &&
      (r.stream[sender ^ 1].flags & kStreamWinKnown) && seq_lt(r.stream[sender ^ 1].win_edge, ack)) {
    c.add(c_tcp_invalid_ack, 1);
    return false;
  }
  if (syn && has_ts && !S.have_ts) {
    S.syn_tsval = S.last_tsval = p.tsval;
    S.have_ts = 1;
  } else if (has_ts && S.have_ts && seq_lt(S.last_tsval, p.tsval)) {
    S.last_tsval = p.tsval;
  }
  const uint8_t none = uint8_t(TcpSide::none), syn_sent = uint8_t(TcpSide::syn_sent),
                syn_recv = uint8_t(TcpSide::syn_recv), est = uint8_t(TcpSide::established);

  if (rst) {
    const uint32_t win = O.win ? O.win : 1;
    const bool valid = S.tcp != syn_sent &&
                       (!S.have_seq || (seq_leq(S.next_seq, seq) && seq_leq(seq, S.next_seq + win)));
    if (!valid) {
      c.add(c_tcp_rst_invalid, 1);
      return true;
    }
    if (r.state != uint8_t(FlowState::closed)) {
      S.tcp_before_rst = S.tcp;
      S.state_before_rst = r.state;
    }
    S.tcp = uint8_t(TcpSide::reset);
    r.state = uint8_t(FlowState::closed);
    return true;
  }
  if (syn && !has_ack) {
    // A SYN with TCP Fast Open may carry data: next_seq counts it, and the SYN-ACK may acknowledge
    // it or not (below). Data on a SYN without the option is not the session's (as Suricata).
    const uint32_t syn_end = seq + 1 + ((p.opts & kOptTfo) ? p.payload_len : 0u);
    if (S.tcp == none && O.tcp == none) {
      start_side(S, TcpSide::syn_sent, seq, syn_end, ws);
    } else if (S.tcp == syn_sent) {
      if (seq == S.isn) c.add(c_tcp_syn_retransmit, 1);
      else start_side(S, TcpSide::syn_sent, seq, syn_end, ws);
    } else if (S.tcp == none && O.tcp == syn_sent) {
      start_side(S, TcpSide::syn_sent, seq, syn_end, ws);  // simultaneous open
    } else {
      c.add(c_tcp_syn_unexpected, 1);
    }
    return true;
  }
  if (syn && has_ack) {
    if (O.tcp == syn_sent && (S.tcp == none || S.tcp == syn_sent)) {
      // TCP Fast Open: the SYN-ACK acknowledges the SYN's data (ack == next_seq) or only the SYN
      // (ack == isn + 1: the server ignored the data, which the client then sends again), as
      // Suricata's TFO handling.
      if (ack != O.next_seq && ack != O.isn + 1) {
        c.add(c_tcp_synack_bad_ack, 1);
        return true;
      }
      O.next_seq = ack;
      start_side(S, TcpSide::syn_recv, seq, seq + 1, ws);
      move_window_edge(r, sender, ack + p.win);  // a SYN-ACK's window is never scaled
    } else if (O.tcp == syn_recv && S.tcp == syn_sent && ack == O.next_seq) {
      // Simultaneous open: the second SYN-ACK completes it.
      start_side(S, TcpSide::established, seq, seq + 1, ws);
      O.tcp = est;
      r.state = uint8_t(FlowState::established);
      c.add(c_tcp_established, 1);
    } else if (S.tcp == syn_recv && seq == S.isn) {
      c.add(c_tcp_syn_retransmit, 1);
    } else if (S.tcp == none && O.tcp == none) {
      if (!midstream) {
        r.misc |= kFlowNoSession;
        c.add(c_tcp_no_session, 1);
        return true;
      }
      start_side(S, TcpSide::syn_recv, seq, seq + 1, ws);
      start_side(O, TcpSide::syn_sent, ack - 1, ack, kNoWscale);
      r.misc |= kFlowMidstream;
      c.add(c_tcp_midstream, 1);
    } else {
      c.add(c_tcp_syn_unexpected, 1);
    }
    return true;
  }
  // No SYN from here on.
  if (S.tcp == none && O.tcp == syn_sent && p.payload_len == 0 && !(p.flags & kTcpFin)) {
    // A bare ACK to a SYN, without SYN: Suricata's SYN_SENT state takes it as invalid and the
    // session goes on waiting for a SYN-ACK (a split handshake sends the SYN next). Counted and
    // ignored; it carries no data, so a capture that lost the SYN-ACK loses nothing here (the
    // first data picks the session up, midstream on).
    c.add(c_tcp_handshake_no_synack, 1);
    return false;
  }
  if (S.tcp == none && (O.tcp == none || O.tcp == syn_sent || O.tcp == syn_recv)) {
    // No handshake seen for this side (first packet, or the SYN / SYN-ACK was not captured).
    if (!midstream) {
      r.misc |= kFlowNoSession;
      c.add(c_tcp_no_session, 1);
      return true;
    }
    start_side(S, TcpSide::established, seq - 1, seq, kNoWscale);
    if (O.tcp == none) {
      O.tcp = est;
      if (has_ack) start_side(O, TcpSide::established, ack - 1, ack, kNoWscale);
    } else {
      O.tcp = est;
    }
    r.misc |= kFlowMidstream;
    r.state = uint8_t(FlowState::established);
    c.add(c_tcp_midstream, 1);
  } else if (S.tcp == syn_sent && O.tcp == syn_sent) {
    // Both sides sent a SYN (simultaneous open, Suricata's 4-way handshake): a SYN-ACK comes
    // next. A segment without SYN is invalid there (Suricata's SYN_SENT state without
    // async-oneside): counted and ignored, for state and streams.
    if (!(p.flags & kTcpFin)) {
      c.add(c_tcp_handshake_no_synack, 1);
      return false;
    }
  } else if (S.tcp == syn_sent && O.tcp == syn_recv && S.have_seq && seq != S.next_seq) {
    // The handshake's third segment must carry the client's ISN + 1 (Suricata's
    // 3whs_wrong_seq_wrong_ack): another is injected or broken, counted and ignored.
    c.add(c_tcp_handshake_bad_seq, 1);
    return false;
  } else if (has_ack && S.tcp == syn_sent && O.tcp == syn_recv && ack == O.next_seq) {
    S.tcp = O.tcp = est;
    r.state = uint8_t(FlowState::established);
    c.add(c_tcp_established, 1);
  } else if (S.tcp == syn_sent && O.tcp == syn_recv) {
    // Data or an ACK that does not complete the handshake (e.g. its ACK was lost): count it as
    // established once the client sends anything acknowledged beyond the SYN-ACK.
    if (has_ack && seq_lt(O.next_seq, ack)) {
      S.tcp = O.tcp = est;
      r.state = uint8_t(FlowState::established);
      c.add(c_tcp_established, 1);
    }
  } else if (S.tcp == syn_recv && O.tcp == est) {
    S.tcp = est;  // server data after the client completed the handshake (normal)
  }
  // Sequence space: the furthest byte this side has sent.
  if (S.have_seq) {
    if (seq_lt(S.next_seq, seg_end)) S.next_seq = seg_end;
  } else {
    start_side(S, TcpSide(S.tcp), seq - 1, seg_end, S.wscale);
  }
  const bool scaled = S.wscale != kNoWscale && O.wscale != kNoWscale;
  S.win = uint32_t(p.win) << (scaled ? (S.wscale > 14 ? 14 : S.wscale) : 0);
  if (has_ack) {
    // The acknowledgement moves the other direction's furthest point (gaspp/stream_state.hpp:
    // what its receiver has, the capture may have missed), but only within the window the
    // receiver had advertised before this segment: an ACK past it is Suricata's invalid "ACK
    // after next_win" and could be forged to misplace the other direction's data.
    StreamSide& od = r.stream[sender ^ 1];
    if ((od.flags & kStreamWinKnown) && (od.flags & kStreamBase) && seq_leq(ack, od.win_edge)) {
      const int64_t a = seq_to_off(od, ack - od.urgent_oob);
      if (a > int64_t(od.high_off)) od.high_off = uint64_t(a);
    }
    move_window_edge(r, sender, ack + S.win);
  }
  if (fin && !in_fin_states(S.tcp)) {
    S.tcp = uint8_t(TcpSide::fin_sent);
    S.fin_seq = seq + p.payload_len;
  }
  if (has_ack && O.tcp == uint8_t(TcpSide::fin_sent) && seq_lt(O.fin_seq, ack)) O.tcp = uint8_t(TcpSide::fin_acked);
  if (in_fin_states(S.tcp) && in_fin_states(O.tcp) &&
      (S.tcp == uint8_t(TcpSide::fin_acked) || O.tcp == uint8_t(TcpSide::fin_acked)))
    r.state = uint8_t(FlowState::closed);
  return true;
}

}  // namespace flow_detail

// Suricata's view of a TCP session from its two sides: established once the handshake completed
// (its states from established on, closed included), closing while a FIN is outstanding (fin_wait1
// to closing, not closed: both FINs acknowledged, or a RST).
GASPP_HD GASPP_FORCEINLINE bool tcp_established(const FlowRecord& r) {
  const uint8_t c = r.side[0].tcp, s = r.side[1].tcp;
  return c >= uint8_t(TcpSide::established) || s >= uint8_t(TcpSide::established);
}
GASPP_HD GASPP_FORCEINLINE bool tcp_closing(const FlowRecord& r) {
  const uint8_t c = r.side[0].tcp, s = r.side[1].tcp;
  if (c == uint8_t(TcpSide::reset) || s == uint8_t(TcpSide::reset)) return false;
  const auto fin = [](uint8_t t) { return t == uint8_t(TcpSide::fin_sent) || t == uint8_t(TcpSide::fin_acked); };
  return (fin(c) || fin(s)) && !(c == uint8_t(TcpSide::fin_acked) && s == uint8_t(TcpSide::fin_acked));
}

// Starts a new flow in a record that holds only its key (fresh), from its first packet.
GASPP_HD inline void flow_begin(FlowRecord& r, const TrackedPacket& p, bool from_lo) {
  r.first_ts = r.last_ts = p.ts_ns;
  const uint8_t l4 = p.l4;
  r.proto_class = uint8_t(l4 == uint8_t(L4::tcp) ? FlowProto::tcp : l4 == uint8_t(L4::udp) ? FlowProto::udp
                          : (l4 == uint8_t(L4::icmp) || l4 == uint8_t(L4::icmpv6)) ? FlowProto::icmp : FlowProto::other);
  // The client sends the first packet, except that a lone SYN-ACK is sent by the server.
  bool client_is_sender = true;
  if (l4 == uint8_t(L4::tcp)) {
    const uint16_t f = p.flags;
    if ((f & kTcpSyn) && (f & kTcpAck)) client_is_sender = false;
  }
  r.client_lo = uint8_t(client_is_sender == from_lo);
  r.state = uint8_t(FlowState::new_);
  r.side[0].wscale = r.side[1].wscale = kNoWscale;
  r.flow_id = mix64((uint64_t(flow_key_hash(r.key)) << 32) ^ r.first_ts) & ((1ull << 51) - 1);
}

// Clears everything of slot's flow but the key and epoch (the slot is reused by a new flow on the
// same key): its record r (the slot's, or the walk's copy of it) and its module state.
GASPP_HD GASPP_FORCEINLINE void flow_restart(const FlowTableRef& t, uint32_t slot, FlowRecord& r) {
  flow_init_record(r, r.key, r.epoch);
  flow_clear_module_state(t, slot);
}

struct FlowNoEndHook {
  GASPP_HD void operator()(FlowRecord&) const {}
};

// Applies packet p (already placed in `slot`, whose record is r: the table's, or the walk's copy of
// it; `lookup_flags` is what its lookup set, the direction in kPktFromLo) to its flow. Returns the
// packet's FlowPacketFlags. When the packet ends the flow in the slot and starts a new one (inline
// expiry, port reuse), on_end(old record) runs after the old record was written out and before the
// slot is reset.
template <class Sink, class OnEnd = FlowNoEndHook>
GASPP_HD inline uint8_t flow_track_packet(const FlowTableRef& t, uint32_t slot, FlowRecord& r, const TrackedPacket& p,
                                          uint8_t lookup_flags, const FlowTrackParams& prm, bool emergency,
                                          const FlowRecordSink& out, Sink& c, OnEnd&& on_end = OnEnd{}) {
  const bool from_lo = lookup_flags & kPktFromLo;
  const uint64_t ts = p.ts_ns;
  uint8_t flags = lookup_flags & kPktFromLo;
  if (r.state != uint8_t(FlowState::fresh)) {
    bool restart = false;
    FlowReason why = FlowReason::timeout;
    if (flow_timed_out(prm.timeouts, r, ts, emergency)) {
      restart = true;
    } else if (r.proto_class == uint8_t(FlowProto::tcp) && r.state == uint8_t(FlowState::closed) &&
               (p.flags & (kTcpSyn | kTcpAck | kTcpRst)) == kTcpSyn) {
      const int sender = (uint8_t(from_lo) == r.client_lo) ? 0 : 1;
      FlowSide& S = r.side[sender];
      FlowSide& O = r.side[sender ^ 1];
      if (sender == 0 && S.have_seq && S.isn == p.seq) {
        if (S.tcp == uint8_t(TcpSide::syn_sent) && O.tcp == uint8_t(TcpSide::reset)) {
          O.tcp = O.tcp_before_rst;
          r.state = O.state_before_rst;
        }
      } else {
        restart = true;
        why = FlowReason::tcp_reuse;
        c.add(c_flow_port_reuse, 1);
      }
    }
    if (restart) {
      out.emit(r, why);
      c.add(c_flow_timed_out, 1);  // port reuse included: the old session ends as if timed out
      on_end(r);
      flow_restart(t, slot, r);
    }
  }
  if (r.state == uint8_t(FlowState::fresh)) {
    flow_begin(r, p, from_lo);
    c.add(c_flow_created, 1);
    flags |= kPktFlowStart;
  }
  const int sender = (uint8_t(from_lo) == r.client_lo) ? 0 : 1;
  if (sender) flags |= kPktToClient;
  FlowSide& S = r.side[sender];
  ++S.pkts;
  S.bytes += p.cap_len;
  if (ts > r.last_ts) r.last_ts = ts;
  c.add(c_flow_packets, 1);
  if (r.proto_class == uint8_t(FlowProto::tcp)) {
    // Suricata sets flow:established when the flow is updated, before the stream engine sees the
    // segment: the handshake's last ACK is not established yet, the first segment after it is.
    if (tcp_established(r)) flags |= kPktEstablished;
    if (r.misc & kFlowStreamDropped) {
      flags |= kPktTcpIgnored;  // dropped by a stream hook: counted only
    } else if (p.csum_bad & kCsumBadL4) {
      // -k all: a segment with a wrong TCP checksum is not the receiver's; as Suricata's
      // stream.checksum-validation, it is ignored (an IPS drops it). Like Suricata, a wrong IPv4
      // header checksum alone is counted but does not keep the segment out.
      c.add(c_tcp_bad_checksum, 1);
      flags |= kPktTcpIgnored | kPktTcpInvalid;
    } else if (prm.urgent_drop && (p.flags & kTcpUrg)) {
      c.add(c_tcp_urgent_dropped, 1);
      flags |= kPktTcpIgnored | kPktTcpInvalid;
    } else if (!flow_detail::tcp_update(r, sender, p, prm.midstream, c)) {
      flags |= kPktTcpIgnored | kPktTcpInvalid;
    } else if ((p.flags & (kTcpSyn | kTcpAck)) == kTcpSyn && p.payload_len && !(p.opts & kOptTfo)) {
      // Data on a SYN without TCP Fast Open: Suricata's stream (and a receiver without TFO) does
      // not take it; the segment stays valid, and its payload is inspected as a packet's.
      c.add(c_tcp_syn_data_ignored, 1);
      flags |= kPktTcpIgnored;
    }
  } else {
    if (r.proto_class == uint8_t(FlowProto::icmp) && S.pkts == 1)
      S.isn = kIcmpSeen | uint32_t(p.icmp_type) << 8 | p.icmp_code;  // its first message
    if (r.side[0].pkts && r.side[1].pkts && r.state == uint8_t(FlowState::new_)) r.state = uint8_t(FlowState::established);
    if (r.state == uint8_t(FlowState::established)) flags |= kPktEstablished;
  }
  if (r.proto_class == uint8_t(FlowProto::tcp) && tcp_closing(r)) flags |= kPktClosing;
  if (S.pkts == 1) flags |= kPktDirFirst;
  return flags;
}

// Places packet i: finds or claims its flow slot. Returns the slot, kNoFlow with `skip` set when
// the packet has no flow, or kNoFlow with skip none when there was no room (retry later).
// `flags` gets the packet's direction (kPktFromLo) for the walk.
GASPP_HD inline uint32_t flow_lookup_packet(const FlowTableRef& t, const DecodedView& d, uint32_t i,
                                            const FlowTrackParams& prm, FlowSkip& skip, uint8_t& flags) {
  FlowKey k;
  bool from_lo = false;
  skip = flow_key_of(d, i, prm.vlan_in_key, prm.defrag, k, from_lo);
  flags = from_lo ? kPktFromLo : 0;
  if (skip != FlowSkip::none) return kNoFlow;
  bool created;
  return flow_find_or_claim(t, k, flow_key_hash(k), prm.epoch, created);
}

template <class Sink>
GASPP_HD GASPP_FORCEINLINE void count_skip(Sink& c, FlowSkip s) {
  c.add(s == FlowSkip::not_ip ? c_flow_skip_not_ip : s == FlowSkip::malformed ? c_flow_skip_malformed
                                                                               : c_flow_skip_fragment, 1);
}

// The second chance for a packet that found no room (see flow_claim_or_evict). kNoFlow: still no
// room (the caller applies the exception policy, core/module_stage.hpp).
template <class Sink>
GASPP_HD inline uint32_t flow_retry_packet(const FlowTableRef& t, const DecodedView& d, uint32_t i,
                                           const FlowTrackParams& prm, const FlowRecordSink& out, Sink& c) {
  FlowKey k;
  bool from_lo, created, evicted;
  flow_key_of(d, i, prm.vlan_in_key, prm.defrag, k, from_lo);
  const uint32_t s = flow_claim_or_evict(t, k, flow_key_hash(k), prm.epoch, created, evicted,
                                         [&](const FlowRecord& v, FlowReason why) { out.emit(v, why); });
  if (evicted) c.add(c_flow_evicted, 1);
  if (s == kNoFlow) c.add(c_flow_untracked, 1);
  return s;
}

// Once per batch, after lookups: decides emergency mode (see FlowConfig) from the occupancy and
// whether any packet found no room. Single-threaded.
template <class Sink>
GASPP_HD inline void flow_tick(FlowTableState& st, uint32_t capacity, uint32_t enter_pct, uint32_t recover_pct, Sink& c) {
  const uint64_t live100 = uint64_t(st.live) * 100;
  if (st.emergency && live100 < uint64_t(capacity) * recover_pct) st.emergency = 0;
  if (st.failed || live100 >= uint64_t(capacity) * enter_pct) {
    if (!st.emergency) c.add(c_flow_emergency, 1);
    st.emergency = 1;
  }
  st.failed = 0;
}

// Expiry of one slot at time `now`: a timed-out flow (or any flow, at shutdown) is written to
// `out` and its slot freed. If `out` is full the flow stays for the next sweep.
template <class Sink>
GASPP_HD inline void flow_sweep_slot(const FlowTableRef& t, uint32_t s, uint64_t now, const FlowTimeouts& to,
                                     bool emergency, bool shutdown, const FlowRecordSink& out, Sink& c) {
  if (t.tags[s] < 2) return;
  const FlowRecord& r = t.recs[s];
  if (!shutdown && !flow_timed_out(to, r, now, emergency)) return;
  if (!out.emit(r, shutdown ? FlowReason::shutdown : FlowReason::timeout)) return;
  t.tags[s] = kTagEmpty;
  atomic_sub(&t.state->live, 1);
  c.add(shutdown ? c_flow_shutdown : c_flow_timed_out, 1);
}

}  // namespace gaspp
