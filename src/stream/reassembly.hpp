// stream/reassembly.hpp — the walk of one flow's share of a batch: flow tracking of its packets in
// capture order (flow/flow_track.hpp) and reassembly of its TCP directions. Both backends call
// flow_walk_run() for each run of the batch's sorted (slot, item) pairs; different flows run in
// parallel, one flow's items one after another.
//
// Per direction, in capture order (GASPP §4.2–4.3 chain packets by hashing (4-tuple, seq) and
// (4-tuple, seq+len); walking a flow's packets sorted by capture order reaches the same chains,
// and covers what the paper leaves open):
//   * a segment starting at or before next_off with nothing waiting is delivered at once (its new
//     tail only, if it straddles next_off); one that ends at or before next_off is a retransmission
//     (counted, not delivered again);
//   * a segment beyond a hole, or any segment while others wait, joins the flow's pending list. Its
//     bytes are compared with every waiting copy they overlap: same data (overlaps_same_data) or
//     not (overlaps_different_data, and a kChunkConflict event). Then the list is drained: while a
//     pending segment covers next_off, bytes are delivered from the copy the policy picks (first:
//     the earliest to arrive that covers the byte; last: the latest), cut where a copy of higher
//     priority begins;
//   * when more than the per-direction limit waits, the hole is skipped: the gap (offset, length)
//     goes with the next chunk and delivery goes on;
//   * when the other direction acknowledges a hole and everything waiting behind it (the receiver
//     has the bytes; the capture missed them), the hole is skipped the same way (Suricata's
//     CheckGap; ack_past_holes);
//   * when the flow closes (RST, or FINs both ways with one acknowledged), when a packet restarts the
//     flow (port reuse, inline expiry), every hole is skipped, the missing bytes up to the FIN are a
//     gap, and a kChunkEnd chunk ends each direction that carried data;
//   * what still waits at the end of the run goes to the out-of-order buffer (StreamHeld; its bytes
//     are copied there once and stay, see StreamCounts) and comes back first in the flow's next
//     run. If the flow is gone by then (expired, evicted), its held segments are flushed as at a
//     close. At the end of the run the
//     backends walk the buffer once more with `final` set, flushing everything.
// Conflicts are detected between copies the reassembler still holds (the pending list and the
// out-of-order buffer); a retransmission of bytes already delivered is counted but not compared,
// since delivered bytes are not kept.
//
// The walk's Sink does two things: add(counter, n) counts (decode/counters.hpp), and
// stream_piece(hooks, chunk, bytes, slot, packet) hands each piece a direction delivers to the
// stream modules' on_stream hooks, in stream order, as the piece is emitted. The engine knows no
// module: the backends pass core/stream_dispatch.hpp's StreamHookSink, which dispatches over the
// modules built in, or NoStreamModules below. The hooks run inside the walk, not as a stage after
// it, because a hook that drops the flow (kFlowStreamDropped) must stop the walk at that packet:
// later packets of the batch then neither change the TCP state nor reach reassembly, whatever the
// batch size (a stage after the walk would let them, until the batch ended).
#pragma once
#include <cstdint>

#include "flow/flow_track.hpp"
#include "stream/stream.hpp"

namespace gaspp {

// A walk sink for runs without stream modules: counts, and delivers pieces to nobody.
template <class Counters>
struct NoStreamModules {
  Counters& c;
  GASPP_HD GASPP_FORCEINLINE void add(int i, uint64_t n) { c.add(i, n); }
  GASPP_HD GASPP_FORCEINLINE void stream_piece(const StreamHooks&, const StreamChunk&, const uint8_t*, uint32_t,
                                                uint32_t) {}
};

namespace stream_detail {

// Whose stream is being worked on: a live flow (sides point into its record) or the remains of a
// flow that left the table (sides are a copy rebuilt from its held segments).
struct Owner {
  const FlowKey* key;
  uint64_t flow_id;
  uint8_t client_lo;
  StreamSide* side;  // [2]
  uint32_t slot;     // the flow's table slot; kNoFlow for a flow no longer in the table
};

struct alignas(16) Bytes16 {
  uint64_t lo, hi;
};

struct Run {
  const StreamRef* s;
  const DecodedView* d;
  StreamPending* pend;
  uint32_t n;                  // entries used in pend
  uint32_t segs[2], bytes[2];  // live pending per direction
  uint64_t gap[2];             // skipped bytes not yet reported
  uint32_t cur = kNoFlow;      // the packet being walked (its arrival delivers what is emitted)
  uint64_t last_flow = 0;      // whose chunks last[] are (a run can hold several connections)
  uint32_t last[2] = {kChunkNoPrev, kChunkNoPrev};  // the latest chunk with data per direction
};

template <class Sink>
GASPP_HD inline void emit(Run& run, const Owner& o, int dir, uint64_t off, uint32_t len, uint32_t src,
                          uint32_t src_off, uint8_t flags, Sink& c) {
  const StreamRef& s = *run.s;
  uint32_t k;
  if (s.block) {  // the CPU (StreamRef::block)
    if (s.block->next == s.block->end) {
      s.block->next = atomic_add(s.chunk_n, kChunkBlock);
      s.block->end = s.block->next + kChunkBlock;
    }
    k = s.block->next++;
  } else {
    k = atomic_add(s.chunk_n, 1);
  }
  if (run.last_flow != o.flow_id) {
    run.last_flow = o.flow_id;
    run.last[0] = run.last[1] = kChunkNoPrev;
  }
  const bool data = len && !(flags & kChunkConflict);
  if (k >= s.chunk_cap) {
    c.add(c_stream_chunk_overflow, 1);
    if (data) run.last[dir] = kChunkPrevLost;
    return;
  }
  StreamChunk& ch = s.chunks[k];
  ch.slot = o.slot;
  ch.packet = run.cur;
  ch.prev = kChunkNoPrev;
  if (data) {
    ch.prev = run.last[dir];
    if (ch.prev < kChunkPrevLost) s.chunks[ch.prev].flags |= kChunkHasNext;
    run.last[dir] = k;
  }
  ch.key = *o.key;
  ch.flow_id = o.flow_id;
  ch.off = off;
  ch.len = len;
  ch.src = src;
  ch.src_off = src_off;
  ch.dir = uint8_t(dir);
  ch.flags = uint8_t(flags | (o.client_lo ? kChunkClientLo : 0));  // (kChunkHasNext comes later)
  if (flags & kChunkConflict) {
    ch.gap = 0;
    ch.data = 0;
    return;
  }
  ch.gap = run.gap[dir];
  run.gap[dir] = 0;
  ch.data = (s.gather && len) ? atomic_add(s.bytes_used, len) : 0;
  if (len) {
    c.add(c_stream_chunks, 1);
    c.add(c_stream_bytes, len);
  }
  if (s.hooks.n) c.stream_piece(s.hooks, ch, len ? stream_item_bytes(s, *run.d, src) + src_off : nullptr, o.slot, run.cur);
}

GASPP_HD GASPP_FORCEINLINE bool has_pending(const Run& run, int dir) { return run.segs[dir] != 0; }

GASPP_HD GASPP_FORCEINLINE void retire(Run& run, StreamPending& e) {
  e.live = 0;
  --run.segs[e.dir];
  run.bytes[e.dir] -= e.len;
}

// Delivers what the pending list of `dir` holds at next_off, as far as it goes.
template <class Sink>
GASPP_HD inline void drain(Run& run, const Owner& o, int dir, Sink& c) {
  StreamSide& S = o.side[dir];
  const bool last_wins = run.s->cfg.overlap == OverlapPolicy::last;
  while (has_pending(run, dir)) {
    int best = -1;
    for (uint32_t k = 0; k < run.n; ++k) {
      StreamPending& e = run.pend[k];
      if (!e.live || e.dir != dir) continue;
      if (e.off + e.len <= S.next_off) {  // everything it holds was delivered from another copy
        if (e.buffered) c.add(c_stream_ooo_released, 1);
        retire(run, e);
        continue;
      }
      if (e.off <= S.next_off && (best < 0 || last_wins)) best = int(k);
    }
    if (best < 0) return;
    const StreamPending& b = run.pend[best];
    uint64_t end = b.off + b.len;
    for (uint32_t k = 0; k < run.n; ++k) {
      const StreamPending& e = run.pend[k];
      if (!e.live || e.dir != dir || int(k) == best) continue;
      const bool higher = last_wins ? int(k) > best : int(k) < best;
      if (higher && e.off > S.next_off && e.off < end) end = e.off;
    }
    emit(run, o, dir, S.next_off, uint32_t(end - S.next_off), b.src, b.skip + uint32_t(S.next_off - b.off), 0, c);
    S.next_off = end;
  }
}

// The lowest offset a waiting segment of `dir` starts at (~0: nothing waits).
GASPP_HD GASPP_FORCEINLINE uint64_t lowest_pending(const Run& run, int dir) {
  uint64_t lowest = ~uint64_t(0);
  for (uint32_t k = 0; k < run.n; ++k) {
    const StreamPending& e = run.pend[k];
    if (e.live && e.dir == dir && e.off < lowest) lowest = e.off;
  }
  return lowest;
}

// Skips the hole of `dir` up to `to` (beyond next_off): a gap, reported with the next chunk.
template <class Sink>
GASPP_HD GASPP_FORCEINLINE void gap_to(Run& run, StreamSide& S, int dir, uint64_t to, Sink& c) {
  run.gap[dir] += to - S.next_off;
  S.flags |= kStreamGap;
  c.add(c_stream_gaps, 1);
  c.add(c_stream_gap_bytes, to - S.next_off);
  S.next_off = to;
}

// Skips the hole before the lowest waiting segment of `dir`; returns false if nothing waits.
template <class Sink>
GASPP_HD inline bool skip_hole(Run& run, const Owner& o, int dir, Sink& c) {
  StreamSide& S = o.side[dir];
  const uint64_t lowest = lowest_pending(run, dir);
  if (lowest == ~uint64_t(0)) return false;
  if (lowest > S.next_off) gap_to(run, S, dir, lowest, c);
  drain(run, o, dir, c);
  return true;
}

// Direction `dir`'s receiver acknowledged sequence number `ack`. Acknowledged bytes in a hole were
// received, so the capture missed them and no copy will fill the hole: as Suricata's stream engine
// (CheckGap) does, the hole is skipped at that acknowledgement (a gap) instead of waiting for the
// flow's end or the per-direction limit. Suricata keeps unacknowledged data and compares later
// copies with it; delivered bytes are not kept here, so a hole is skipped only once the receiver
// acknowledged everything that waits behind it: waiting data it has not acknowledged stays
// waiting, and a different copy of it arriving later is still compared and reported. A hole the
// receiver has not acknowledged keeps waiting for a retransmission.
template <class Sink>
GASPP_HD inline void ack_past_holes(Run& run, const Owner& o, int dir, uint32_t ack, Sink& c) {
  StreamSide& S = o.side[dir];
  if (!has_pending(run, dir) || !(S.flags & kStreamBase) || (S.flags & kStreamEnded)) return;
  const int64_t acked = seq_to_off(S, ack - S.urgent_oob);
  if (acked <= int64_t(S.next_off)) return;
  for (uint32_t k = 0; k < run.n; ++k) {
    const StreamPending& e = run.pend[k];
    if (e.live && e.dir == dir && int64_t(e.off + e.len) > acked) return;  // waiting, not acknowledged
  }
  for (uint64_t lowest; (lowest = lowest_pending(run, dir)) != ~uint64_t(0);) {
    if (lowest > S.next_off) {
      gap_to(run, S, dir, lowest, c);
      c.add(c_stream_ack_skips, 1);
    }
    drain(run, o, dir, c);
  }
}

// Ends direction `dir`: every hole skipped, the bytes missing before the FIN reported as a gap,
// and a kChunkEnd chunk (for a direction that carried anything).
template <class Sink>
GASPP_HD inline void end_direction(Run& run, const Owner& o, int dir, Sink& c) {
  StreamSide& S = o.side[dir];
  if (S.flags & kStreamEnded) return;
  drain(run, o, dir, c);
  while (skip_hole(run, o, dir, c)) {
  }
  if (!(S.flags & kStreamBase)) return;
  const int64_t fin = (S.flags & kStreamFin) ? seq_to_off(S, S.fin_seq) : 0;
  if (fin > int64_t(S.next_off)) gap_to(run, S, dir, uint64_t(fin), c);
  emit(run, o, dir, S.next_off, 0, 0, 0, kChunkEnd, c);
  S.flags |= kStreamEnded;
}

// A new copy of stream bytes [off, off+len) of `dir` (from item `src`, payload offset `skip`).
template <class Sink>
GASPP_HD inline void segment(Run& run, const Owner& o, int dir, uint64_t off, uint32_t len, uint32_t src,
                             uint32_t skip, Sink& c) {
  StreamSide& S = o.side[dir];
  const uint64_t end = off + len;
  if (end <= S.next_off) {
    c.add(c_stream_retransmit, 1);
    return;
  }
  if (off < S.next_off) c.add(c_stream_straddle, 1);
  if (!has_pending(run, dir) && off <= S.next_off) {
    c.add(c_stream_in_order, 1);
    emit(run, o, dir, S.next_off, uint32_t(end - S.next_off), src, skip + uint32_t(S.next_off - off), 0, c);
    S.next_off = end;
    return;
  }
  // Compare with the copies waiting: the same bytes or not.
  const uint8_t* mine = stream_item_bytes(*run.s, *run.d, src) + skip;
  for (uint32_t k = 0; k < run.n; ++k) {
    const StreamPending& e = run.pend[k];
    if (!e.live || e.dir != dir) continue;
    const uint64_t a = off > e.off ? off : e.off;
    const uint64_t b = end < e.off + e.len ? end : e.off + e.len;
    if (a >= b) continue;
    const uint8_t* theirs = stream_item_bytes(*run.s, *run.d, e.src) + e.skip;
    uint64_t first_diff = b, last_diff = a;
    for (uint64_t x = a; x < b; ++x)
      if (mine[x - off] != theirs[x - e.off]) {
        if (first_diff == b) first_diff = x;
        last_diff = x;
      }
    if (first_diff == b) {
      c.add(c_stream_overlap_same, 1);
    } else {
      c.add(c_stream_overlap_conflict, 1);
      emit(run, o, dir, first_diff, uint32_t(last_diff + 1 - first_diff), src, 0, kChunkConflict, c);
    }
  }
  StreamPending& e = run.pend[run.n++];
  e.off = off;
  e.len = len;
  e.src = src;
  e.skip = skip;
  e.dir = uint8_t(dir);
  e.live = 1;
  e.buffered = off > S.next_off;
  c.add(e.buffered ? c_stream_ooo_buffered : c_stream_in_order, 1);
  ++run.segs[dir];
  run.bytes[dir] += len;
  drain(run, o, dir, c);
  const StreamConfig& cfg = run.s->cfg;
  while ((run.segs[dir] > cfg.flow_held_segments || run.bytes[dir] > cfg.flow_held_bytes) &&
         skip_hole(run, o, dir, c))
    c.add(c_stream_flow_limit, 1);
}

// The urgent pointer of packet i's TCP header, read from its frame.
GASPP_HD GASPP_FORCEINLINE uint16_t urgent_pointer(const StreamRef& s, const DecodedView& d, uint32_t i) {
  const uint8_t* h = s.data + s.rec_off[i] + kRecordHeaderBytes + d.l4_off[i];
  return uint16_t(h[18] << 8 | h[19]);
}

// Packet i of a live TCP flow, sent by direction `dir`, after tracking. Returns true when the
// segment must be dropped in IPS mode (urgent data past the out-of-band limit, policy drop).
template <class Sink>
GASPP_HD inline bool packet(Run& run, const Owner& o, const FlowRecord& r, int dir, uint32_t i, uint32_t item, Sink& c) {
  const DecodedView& d = *run.d;
  const StreamConfig& cfg = run.s->cfg;
  StreamSide& S = o.side[dir];
  const uint16_t f = d.tcp_flags[i];
  const bool syn = f & kTcpSyn, fin = f & kTcpFin;
  uint32_t plen = d.payload_len[i];
  uint32_t cap = captured_payload(d, i);
  // Its acknowledgement first, as Suricata updates the other direction on an ACK before this one.
  if (f & kTcpAck) ack_past_holes(run, o, dir ^ 1, d.tcp_ack[i], c);
  if (!(S.flags & kStreamBase)) {
    if (plen == 0 && !fin) return false;
    const FlowSide& F = r.side[dir];
    S.base_seq = F.have_seq ? F.isn + 1 : d.tcp_seq[i] + (syn ? 1 : 0);
    S.flags |= kStreamBase;
  }
  if (S.flags & kStreamEnded) {
    if (plen) c.add(c_stream_after_end, 1);
    return false;
  }
  // Bytes taken out of band earlier lower this segment's offset (as Suricata, with the count
  // before this segment's own urgent byte).
  const uint32_t seq = d.tcp_seq[i] + (syn ? 1 : 0) - S.urgent_oob;
  const int64_t off = seq_to_off(S, seq);
  uint32_t span = plen;  // the sequence space it takes in the stream
  if ((f & kTcpUrg) && plen && (cfg.urgent == UrgentPolicy::oob || cfg.urgent == UrgentPolicy::gap)) {
    const uint16_t ptr = urgent_pointer(*run.s, d, i);
    if (ptr > 0 && ptr <= plen) {
      // The segment's last byte is the urgent one (RFC 6093 3.1: one byte). Like Suricata, every
      // URG segment counts, a retransmitted one too.
      bool cut = true, out_of_band = false;
      if (cfg.urgent == UrgentPolicy::oob && S.urgent_oob == kUrgentOobLimit) {
        c.add(c_stream_urgent_limit, 1);
        if (cfg.urgent_oob_limit == UrgentPolicy::drop) return true;  // not reassembled
        cut = cfg.urgent_oob_limit == UrgentPolicy::gap;
        if (cut) c.add(c_stream_urgent_gap, 1);
      } else if (cfg.urgent == UrgentPolicy::oob) {
        ++S.urgent_oob;
        out_of_band = true;
        c.add(c_stream_urgent_oob, 1);
      } else {
        c.add(c_stream_urgent_gap, 1);
      }
      if (cut) {
        // Out of band, the byte takes no stream space (later offsets close up over it); as a gap
        // it keeps its place.
        if (out_of_band) --span;
        --plen;
        if (cap > plen) cap = plen;
      }
    }
  }
  if (off + int64_t(span) > int64_t(S.high_off)) S.high_off = uint64_t(off + int64_t(span));
  if (fin && !(S.flags & kStreamFin)) {
    S.fin_seq = seq + span;
    S.flags |= kStreamFin;
  }
  if (plen == 0) return false;
  c.add(c_stream_segments, 1);
  if (cap < plen) c.add(c_stream_truncated, 1);
  if (cap == 0) return false;
  if (off + int64_t(cap) <= 0) {
    c.add(c_stream_retransmit, 1);
    return false;
  }
  const uint32_t skip = off < 0 ? uint32_t(-off) : 0;
  segment(run, o, dir, uint64_t(off + skip), cap - skip, item, skip, c);
  return false;
}

// The flow's pending segments go to the out-of-order buffer for its next run.
template <class Sink>
GASPP_HD inline void hold(Run& run, const Owner& o, uint32_t slot, Sink& c) {
  const StreamRef& s = *run.s;
  for (uint32_t k = 0; k < run.n; ++k) {
    const StreamPending& e = run.pend[k];
    if (!e.live) continue;
    const uint32_t room = (e.len + 15) & ~15u;  // places are 16-byte aligned and padded
    const bool was_held = s.item_is_held(e.src) && e.skip == 0;
    const bool move = !was_held || s.counts->compact;
    uint32_t pool, at;
    if (move) {
      pool = s.counts->active;
      at = atomic_add(&s.counts->pool_used[pool], room);
      if (uint64_t(at) + room > s.cfg.held_bytes) {
        c.add(c_stream_ooo_dropped, 1);
        c.add(c_stream_ooo_dropped_bytes, e.len);
        continue;
      }
    } else {  // stays where it is
      pool = s.held_in[e.src].pool;
      at = s.held_in[e.src].data;
    }
    const uint32_t idx = atomic_add(s.held_out_n, 1);
    if (idx >= s.held_cap) {
      c.add(c_stream_ooo_dropped, 1);
      c.add(c_stream_ooo_dropped_bytes, e.len);
      continue;
    }
    if (move) {
      const uint8_t* from = stream_item_bytes(s, *run.d, e.src) + e.skip;
      uint8_t* to = s.pool[pool] + at;
      if (was_held) {
        // From a place of the other pool: aligned and padded as well, so whole words stay in bounds.
        for (uint32_t w = 0; w < room / 16; ++w)
          reinterpret_cast<Bytes16*>(to)[w] = reinterpret_cast<const Bytes16*>(from)[w];
      } else {
        for (uint32_t x = 0; x < e.len; ++x) to[x] = from[x];
      }
    }
    atomic_add(s.held_out_bytes, room);
    StreamHeld& h = s.held_out[idx];
    h.key = *o.key;
    h.flow_id = o.flow_id;
    h.off = e.off;
    h.next_off = o.side[e.dir].next_off;
    h.len = e.len;
    h.data = at;
    h.slot = slot;
    h.dir = e.dir;
    h.client_lo = o.client_lo;
    h.buffered = e.buffered;
    h.pool = uint8_t(pool);
  }
}

GASPP_HD GASPP_FORCEINLINE void reset_run(Run& run) {
  run.n = 0;
  run.segs[0] = run.segs[1] = run.bytes[0] = run.bytes[1] = 0;
  run.gap[0] = run.gap[1] = 0;
}

// Flushes the pending list as the end of `o`'s streams.
template <class Sink>
GASPP_HD inline void end_all(Run& run, const Owner& o, Sink& c) {
  end_direction(run, o, 0, c);
  end_direction(run, o, 1, c);
  reset_run(run);
}

// A restart at item q ends the connection whose packets are items [since, q) (held segments
// aside): they keep its flow id (FlowIdAt; the record now holds the new connection's).
template <class IsPacket>
GASPP_HD inline void keep_ended_flow_id(const FlowTrackParams& prm, const uint32_t* vals, uint32_t since, uint32_t q,
                                        uint64_t flow_id, IsPacket item_packet) {
  if (!prm.pkt_flow_id) return;
  for (uint32_t k = since; k < q; ++k) {
    const uint32_t i = item_packet(vals[k]);
    if (i != kNoFlow) prm.pkt_flow_id[i] = FlowIdAt{prm.epoch, 0, flow_id};
  }
}

}  // namespace stream_detail

// Walks sorted items [j, m) of slot `slot` (see StreamRef for what an item is; without
// reassembly `s` is null and every item is a packet): tracks each packet, reassembles TCP.
// `final`: the end of the run; the items are held segments only and are all flushed.
// Each packet's flags are read from pkt_flags[packet] (the lookup's) and its new flags written
// there, or, when flags_at is given, at flags_at[q] for item q: the CPU's workers walk different
// flows whose packets share cache lines of pkt_flags, and writes there would bounce the lines
// between cores; it writes them back by packet afterwards.
template <class Sink>
GASPP_HD inline void flow_walk_run(const FlowTableRef& t, const DecodedView& d, const uint32_t* vals, uint32_t j,
                                   uint32_t m, uint32_t slot, uint8_t* pkt_flags, const FlowTrackParams& prm,
                                   bool emergency, const FlowRecordSink& out, const StreamRef* s, bool final, Sink& c,
                                   uint8_t* flags_at = nullptr) {
  using namespace stream_detail;
  FlowRecord& r = t.recs[slot];
  if (!s) {
    // A run is a serial chain of memory waits, so the flow's record is worked on in a copy (written
    // back once, not reloaded after each store), and the next packet's fields are loaded while this
    // one is applied. Items are distinct packets, so nothing read ahead is written before its turn.
    FlowRecord rec = r;
    uint32_t i = vals[j];
    TrackedPacket p = tracked_packet(d, i);
    uint8_t lookup_flags = pkt_flags[i];
    uint32_t since = j;  // the first item of the connection the record holds (keep_ended_flow_id)
    for (uint32_t q = j; q < m; ++q) {
      const uint32_t cur = i;
      const TrackedPacket pc = p;
      const uint8_t fc = lookup_flags;
      if (q + 1 < m) {
        i = vals[q + 1];
        p = tracked_packet(d, i);
        lookup_flags = pkt_flags[i];
      }
      // A restart leaves the ended connection's counters at the packet's entry (rare; see
      // FlowTrackParams::restart_counts).
      (flags_at ? flags_at[q] : pkt_flags[cur]) = flow_track_packet(t, slot, rec, pc, fc, prm, emergency, out, c, [&](FlowRecord& old) {
        if (prm.restart_counts) prm.restart_counts[cur] = flow_counts_at(old);
        keep_ended_flow_id(prm, vals, since, q, old.flow_id, [](uint32_t v) { return v; });
        since = q;
      });
      if (prm.pkt_pos) prm.pkt_pos[cur] = flow_pos_of(rec);
    }
    r = rec;
    return;
  }
  Run run{s, &d, s->pend + j, 0, {0, 0}, {0, 0}, {0, 0}};
  uint32_t q = j;
  // Held segments come first in the run (lower items); they all belong to one flow.
  const uint32_t held_n = *s->held_in_n;
  if (q < m && s->item_is_held(vals[q])) {
    const StreamHeld& h0 = s->held_in[vals[q]];
    const bool alive = !final && t.tags[slot] >= 2 && r.state != uint8_t(FlowState::fresh) && r.flow_id == h0.flow_id;
    StreamSide gone[2] = {};
    Owner o{alive ? &r.key : &h0.key, h0.flow_id, alive ? r.client_lo : h0.client_lo, alive ? r.stream : gone,
            alive ? slot : kNoFlow};
    for (; q < m && s->item_is_held(vals[q]); ++q) {
      const uint32_t v = vals[q];
      if (v >= held_n) continue;  // unused entry (never sorted into a real slot, but be safe)
      const StreamHeld& h = s->held_in[v];
      if (!alive) {
        gone[h.dir].next_off = h.next_off;
        gone[h.dir].flags = kStreamBase;
      }
      StreamPending& e = run.pend[run.n++];
      e.off = h.off;
      e.len = h.len;
      e.src = v;
      e.skip = 0;
      e.dir = h.dir;
      e.live = 1;
      e.buffered = h.buffered;
      ++run.segs[h.dir];
      run.bytes[h.dir] += h.len;
    }
    if (!alive) end_all(run, o, c);
  }
  uint32_t since = q;  // the first item of the connection the record holds (keep_ended_flow_id)
  for (; q < m; ++q) {
    const uint32_t v = vals[q];
    const uint32_t i = s->item_packet(v);
    auto on_end = [&](FlowRecord& old) {
      if (prm.restart_counts) prm.restart_counts[i] = flow_counts_at(old);  // see FlowTrackParams
      keep_ended_flow_id(prm, vals, since, q, old.flow_id, [&](uint32_t w) { return s->item_is_held(w) ? kNoFlow : s->item_packet(w); });
      since = q;
      if (old.proto_class != uint8_t(FlowProto::tcp)) return;
      Owner o{&old.key, old.flow_id, old.client_lo, old.stream, kNoFlow};
      const uint32_t cur = run.cur;
      run.cur = kNoFlow;  // the old connection's last pieces: not this packet's
      end_all(run, o, c);
      run.cur = cur;
    };
    run.cur = i;
    uint8_t& f = flags_at ? flags_at[q] : pkt_flags[i];
    f = flow_track_packet(t, slot, r, tracked_packet(d, i), pkt_flags[i], prm, emergency, out, c, on_end);
    if (prm.pkt_pos) prm.pkt_pos[i] = flow_pos_of(r);  // before the hooks: on_stream reads it
    if (r.proto_class != uint8_t(FlowProto::tcp) || (r.misc & kFlowNoSession) || (f & kPktTcpIgnored)) continue;
    Owner o{&r.key, r.flow_id, r.client_lo, r.stream, slot};
    if (packet(run, o, r, (f & kPktToClient) ? 1 : 0, i, v, c)) f |= kPktTcpInvalid;
    if (r.state == uint8_t(FlowState::closed)) end_all(run, o, c);
  }
  run.cur = kNoFlow;
  if (run.n && r.proto_class == uint8_t(FlowProto::tcp) && t.tags[slot] >= 2) {
    Owner o{&r.key, r.flow_id, r.client_lo, r.stream, slot};
    hold(run, o, slot, c);
  }
}

}  // namespace gaspp
