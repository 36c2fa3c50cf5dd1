// gaspp/stream_hook.hpp — the `on_stream` hook: in-order pieces of a TCP direction for modules.
//
// A module with
//   GASPP_HD static uint32_t on_stream(StreamPiece& s, FlowState* st, const View& v, uint32_t ctx);
// receives each direction of each TCP connection in order, each byte once, across batches, as
// reassembly (stream/reassembly.hpp) delivers it: a piece has its stream offset, the bytes skipped
// just before it (a gap: a hole that never filled), its data, and a last, empty piece marks the end
// of the direction. The hook is called from the flow walk, by the one thread that owns the flow, so
// consecutive pieces of a direction come one after another and the module's per-flow state needs no
// atomics for them. Stream modules run in pipeline order for each piece, threading a context key
// that starts at 0; they run before the packet stages of the batch.
//
// Actions: drop_flow() / pass_flow() decide the flow from the packet whose arrival delivered the
// piece (the verdict walk then applies the decision to the later packets); when no packet of this
// batch delivered it (data released at expiry or at the end of the run) the decision goes to the flow
// record directly. emit(kind, value) raises an event for the module's host handler, attributed to
// that packet; an event with no packet (kNoPacket) reaches the host handler flow-only, with the
// flow's record, after the batch in which the flow expired or at the end of the run.
//
// The bulk hook, for modules that keep no state of their own between pieces but need the bytes
// just before each piece (to find what crosses from one piece into the next):
//   static constexpr uint32_t kStreamBefore = N;     // 1..kMaxStreamBefore
//   using FlowState = StreamTail<N>;                 // the engine keeps it
//   GASPP_HD static void on_stream_bulk(StreamPiece& s, const uint8_t* before, uint32_t before_len,
//                                       const View& v);
// is called for every piece with data of the batch, all at once (a thread each, in no order),
// after the walk: `before` holds the last min(N, ...) bytes of the direction before the piece, as
// far as they are known — none after a gap, at the direction's start, or where the flow's slot
// went to another flow. The engine finds them in the batch's earlier pieces of the direction (the
// chunks' prev links) and, for the first piece of a batch, in the StreamTail the flow keeps from
// the batch before; after the bulk hooks the tail is brought up to date. drop_flow, pass_flow,
// alerted and emit act as from on_stream. A module has one of on_stream and on_stream_bulk.
//
// A second pass, for work too rare to carry in the first: a bulk module may also have
//   GASPP_HD static void on_stream_bulk_retry(StreamPiece& s, const uint8_t* before, uint32_t before_len,
//                                             const View& v);
// and call s.retry() from on_stream_bulk (once per piece). After the bulk pass and before the tails
// change, the engine calls on_stream_bulk_retry for each piece that asked, with the same piece and
// bytes before it, a thread each, in no order. On the GPU this is a kernel of its own, so the code
// only the retry needs (a regular-expression search, say) costs the first pass nothing in
// registers or instruction cache; the first pass should then raise no events and take no
// decisions for a piece it retries. retry() returns false when the piece cannot be retried
// (outside the bulk pass, or no room: see StreamHooks::retry_cap).
#pragma once
#include <cstdint>
#include <type_traits>

#include "gaspp/hd.hpp"
#include "gaspp/module.hpp"
#include "gaspp/stream_chunk.hpp"

namespace gaspp {

static_assert(kNoPacket == kNoFlow, "a piece with no packet carries kNoFlow as its packet index");

class StreamPiece {
 public:
  // chunk: the piece's chunk index in the batch for a bulk piece (kNoFlow otherwise: no retry).
  GASPP_HD StreamPiece(const StreamHooks& h, const StreamChunk& c, const uint8_t* bytes, uint32_t slot, uint32_t packet,
                       uint32_t k, uint32_t chunk = kNoFlow)
      : h_(h), c_(c), bytes_(bytes), slot_(slot), packet_(packet), k_(k), chunk_(chunk) {}
  GASPP_HD const uint8_t* data() const { return bytes_; }
  GASPP_HD uint32_t len() const { return c_.len; }
  GASPP_HD uint64_t offset() const { return c_.off; }   // stream offset of data()[0]
  GASPP_HD uint64_t gap() const { return c_.gap; }      // bytes missing right before it
  GASPP_HD bool to_client() const { return c_.dir == 1; }
  GASPP_HD bool end() const { return (c_.flags & kChunkEnd) != 0; }
  GASPP_HD uint64_t flow_id() const { return c_.flow_id; }
  GASPP_HD bool has_packet() const { return packet_ != kNoFlow; }
  // The flow as the piece's packet left it (StageArgs::flow_pos) into `out`; for a piece with no
  // packet (at expiry or the end of the run), the flow's record as it stands while the slot still
  // holds the flow. False when neither is known, or no module asked for positions.
  GASPP_HD bool flow_pos(FlowPosAt& out) const {
    if (!h_.want_pos) return false;
    if (has_packet()) {
      if (!h_.flow_pos) return false;
      out = h_.flow_pos[packet_];
      return true;
    }
    if (slot_ == kNoFlow || h_.table.tags[slot_] < 2 || h_.table.recs[slot_].flow_id != c_.flow_id) return false;
    out = flow_pos_of(h_.table.recs[slot_]);
    return true;
  }
  GASPP_HD const FlowKey& key() const { return c_.key; }                      // the flow's key
  GASPP_HD int client_endpoint() const { return (c_.flags & kChunkClientLo) ? 0 : 1; }  // in key()

  GASPP_HD void drop_flow() {
    decide(kVerdictDrop | kVerdictDropFlow, kFlowDecidedDrop, mc_drop_flow);
    if (slot_ != kNoFlow) h_.table.recs[slot_].misc |= kFlowStreamDropped;  // the walk stops tracking it
  }
  GASPP_HD void pass_flow() { decide(kVerdictPassFlow, kFlowDecidedPass, mc_pass_flow); }
  GASPP_HD void alerted() {
    if (has_packet() && h_.verdict) h_.verdict[packet_] |= kVerdictAlerted;
    else if (slot_ != kNoFlow) h_.table.recs[slot_].misc |= kFlowAlerted;
  }
  // Asks for on_stream_bulk_retry on this piece after the bulk pass (see above).
  GASPP_HD bool retry() {
    return chunk_ != kNoFlow && h_.retry && retry_queue_push(h_.retry, h_.retry_n, h_.retry_cap, chunk_ * kMaxStreamModules + k_);
  }
  GASPP_HD void emit(uint16_t kind, uint32_t value) {
    count(push_event(h_.events, ModuleEvent{c_.flow_id, packet_, value, h_.module[k_], kind, c_.dir}) ? mc_events
                                                                                                      : mc_events_lost);
  }

 private:
  GASPP_HD void count(int c) { atomic_add_u64(&h_.counts[size_t(h_.module[k_]) * kModuleCounters + size_t(c)], 1); }
  GASPP_HD void decide(uint8_t bits, uint8_t flow_bit, int counter) {
    count(counter);
    if (has_packet() && h_.verdict) h_.verdict[packet_] |= bits;
    else if (slot_ != kNoFlow) h_.table.recs[slot_].misc |= flow_bit;
  }
  const StreamHooks& h_;
  const StreamChunk& c_;
  const uint8_t* bytes_;
  uint32_t slot_, packet_, k_, chunk_;
};

constexpr uint32_t kMaxStreamBefore = 128;

// The last bytes of each direction of a flow, kept for a bulk module (see above).
template <uint32_t N>
struct StreamTail {
  static_assert(N >= 1 && N <= kMaxStreamBefore, "kStreamBefore is 1..kMaxStreamBefore");
  uint64_t flow_id[2];  // per direction: whose bytes these are (0: none yet)
  uint16_t len[2];
  uint8_t pad_[12];
  uint8_t bytes[2][N];  // the last len[d] bytes of direction d
};

template <class M>
concept HasOnStreamBulk = requires(StreamPiece& s, const uint8_t* b, uint32_t n, const typename M::View& v) {
  { M::on_stream_bulk(s, b, n, v) };
  requires std::is_same_v<typename M::FlowState, StreamTail<M::kStreamBefore>>;
};

template <class M>
concept HasOnStreamBulkRetry = HasOnStreamBulk<M> &&
    requires(StreamPiece& s, const uint8_t* b, uint32_t n, const typename M::View& v) { { M::on_stream_bulk_retry(s, b, n, v) }; };

template <class M>
concept HasOnStream = requires(StreamPiece& s, typename M::FlowState* st, const typename M::View& v, uint32_t c) {
  { M::on_stream(s, st, v, c) } -> std::convertible_to<uint32_t>;
};

}  // namespace gaspp
