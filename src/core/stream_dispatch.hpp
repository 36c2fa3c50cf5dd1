// core/stream_dispatch.hpp — calls the stream modules' on_stream hooks for one piece of a TCP
// direction (gaspp/stream_hook.hpp), from the flow walk, on both backends. Each listed module's type
// picks its hook (GASPP_MODULE_TYPES); the context key goes from module to module, starting at 0.
// The backends hand the walk (stream/reassembly.hpp) a StreamHookSink, through which the engine
// reaches the modules without knowing them.
// Bulk modules (on_stream_bulk) are skipped by the walk; after it, the backends run
// stream_bulk_chunk over every chunk of the batch, stream_bulk_retry over the pieces that asked for
// a retry, then stream_bulk_tail over every chunk (three passes, each with a thread an item in any
// order: the first two only read the flows' StreamTails, the last writes each direction's from the
// one chunk that ends the direction in the batch).
#pragma once
#include "core/module_stage.hpp"
#include "gaspp/stream_hook.hpp"
#include "modules/registry.hpp"
#include "stream/stream.hpp"

namespace gaspp {

template <class M>
GASPP_HD GASPP_FORCEINLINE uint32_t stream_hook_one(const StreamHooks& h, uint32_t k, StreamPiece& p, uint32_t slot,
                                                    uint32_t ctx) {
  if constexpr (HasOnStream<M>) {
    typename M::FlowState* st = nullptr;
    if constexpr (module_flow_state_bytes<M>() > 0)
      if (slot != kNoFlow) st = reinterpret_cast<typename M::FlowState*>(h.table.module_slice(slot, h.state_off[k]));
    return M::on_stream(p, st, *static_cast<const typename M::View*>(h.view[k]), ctx);
  } else {
    return ctx;
  }
}

// One piece: `bytes` are its data (null for an end piece), `slot` the flow's table slot (kNoFlow
// for a flow no longer in the table), `packet` the batch packet whose arrival delivered it (kNoFlow
// for none).
GASPP_HD inline void stream_hooks_call(const StreamHooks& h, const StreamChunk& c, const uint8_t* bytes, uint32_t slot,
                                       uint32_t packet) {
  uint32_t ctx = 0;
  for (uint32_t k = 0; k < h.n && k < kMaxStreamModules; ++k) {
    if (h.bulk[k]) continue;  // after the walk (stream_bulk_chunk)
    if (packet != kNoFlow && h.verdict && (h.verdict[packet] & kVerdictDrop)) return;  // an earlier module dropped it
    StreamPiece p(h, c, bytes, slot, packet, k);
    atomic_add_u64(&h.counts[size_t(h.module[k]) * kModuleCounters + size_t(mc_stream_pieces)], 1);
    int type = 0;
#define GASPP_X(M)                                              \
    if (h.type[k] == type) ctx = stream_hook_one<M>(h, k, p, slot, ctx); \
    ++type;
    GASPP_MODULE_TYPES(GASPP_X)
#undef GASPP_X
  }
}

// The bytes of chunk k's direction right before it, as far as they are known, up to N: written to
// out[N - n .. N), n returned. They come from the chunks before it in the batch (prev links) and,
// past the first, from the flow's tail (when it is this flow's). A gap or a lost chunk ends them.
template <uint32_t N>
GASPP_HD inline uint32_t stream_before(const StreamRef& sr, const DecodedView& d, const StreamTail<N>* tail, uint32_t k,
                                       uint8_t* out) {
  uint32_t have = 0;
  for (uint32_t cur = k; have < N;) {
    const StreamChunk& c = sr.chunks[cur];
    if (c.gap || c.prev == kChunkPrevLost) break;
    const uint8_t* src;
    uint32_t avail;
    if (c.prev == kChunkNoPrev) {
      if (!tail || tail->flow_id[c.dir & 1] != c.flow_id) break;
      src = tail->bytes[c.dir & 1];
      avail = tail->len[c.dir & 1];
    } else {
      const StreamChunk& pc = sr.chunks[c.prev];
      src = stream_item_bytes(sr, d, pc.src) + pc.src_off;
      avail = pc.len;
    }
    const uint32_t take = avail < N - have ? avail : N - have;
    for (uint32_t b = 0; b < take; ++b) out[N - have - take + b] = src[avail - take + b];
    have += take;
    if (c.prev == kChunkNoPrev) break;
    cur = c.prev;
  }
  return have;
}

template <class M>
GASPP_HD GASPP_FORCEINLINE StreamTail<M::kStreamBefore>* stream_tail_of(const StreamHooks& h, uint32_t hk,
                                                                         const StreamChunk& c) {
  if (c.slot == kNoFlow) return nullptr;
  return reinterpret_cast<StreamTail<M::kStreamBefore>*>(h.table.module_slice(c.slot, h.state_off[hk]));
}

// kRetry: the retry pass (on_stream_bulk_retry), for a piece the bulk pass queued.
template <class M, bool kRetry = false>
GASPP_HD GASPP_FORCEINLINE void stream_bulk_one(const StreamHooks& h, uint32_t hk, const StreamRef& sr,
                                                const DecodedView& d, uint32_t k) {
  if constexpr (HasOnStreamBulk<M> && (!kRetry || HasOnStreamBulkRetry<M>)) {
    constexpr uint32_t N = M::kStreamBefore;
    const StreamChunk& c = sr.chunks[k];
    uint8_t before[N];
    const uint32_t n = stream_before<N>(sr, d, stream_tail_of<M>(h, hk, c), k, before);
    const typename M::View& v = *static_cast<const typename M::View*>(h.view[hk]);
    if constexpr (kRetry) {
      StreamPiece p(h, c, stream_item_bytes(sr, d, c.src) + c.src_off, c.slot, c.packet, hk);
      M::on_stream_bulk_retry(p, before + (N - n), n, v);
    } else {
      StreamPiece p(h, c, stream_item_bytes(sr, d, c.src) + c.src_off, c.slot, c.packet, hk, k);
      atomic_add_u64(&h.counts[size_t(h.module[hk]) * kModuleCounters + size_t(mc_stream_pieces)], 1);
      M::on_stream_bulk(p, before + (N - n), n, v);
    }
  }
}

template <class M>
GASPP_HD GASPP_FORCEINLINE void stream_tail_one(const StreamHooks& h, uint32_t hk, const StreamRef& sr,
                                                const DecodedView& d, uint32_t k) {
  if constexpr (HasOnStreamBulk<M>) {
    constexpr uint32_t N = M::kStreamBefore;
    const StreamChunk& c = sr.chunks[k];
    StreamTail<N>* t = stream_tail_of<M>(h, hk, c);
    if (!t) return;
    uint8_t buf[N];
    const uint32_t dir = c.dir & 1;
    const uint8_t* bytes = stream_item_bytes(sr, d, c.src) + c.src_off;
    uint32_t len;
    if (c.len >= N) {
      for (uint32_t b = 0; b < N; ++b) buf[b] = bytes[c.len - N + b];
      len = N;
    } else {
      const uint32_t n = stream_before<N>(sr, d, t, k, buf);  // at buf[N - n .. N)
      const uint32_t keep = n < N - c.len ? n : N - c.len;
      for (uint32_t b = 0; b < keep; ++b) buf[b] = buf[N - keep + b];
      for (uint32_t b = 0; b < c.len; ++b) buf[keep + b] = bytes[b];
      len = keep + c.len;
    }
    for (uint32_t b = 0; b < len; ++b) t->bytes[dir][b] = buf[b];
    t->len[dir] = uint16_t(len);
    t->flow_id[dir] = c.flow_id;
  }
}

// Each bulk module's hook (kTail: its tail update) for chunk k.
template <bool kTail>
GASPP_HD inline void stream_bulk_modules(const StreamHooks& h, const StreamRef& sr, const DecodedView& d, uint32_t k) {
  for (uint32_t hk = 0; hk < h.n && hk < kMaxStreamModules; ++hk) {
    if (!h.bulk[hk]) continue;
    int type = 0;
#define GASPP_X(M)                                   \
    if (h.type[hk] == type) {                        \
      if constexpr (kTail) stream_tail_one<M>(h, hk, sr, d, k); \
      else stream_bulk_one<M>(h, hk, sr, d, k);      \
    }                                                \
    ++type;
    GASPP_MODULE_TYPES(GASPP_X)
#undef GASPP_X
  }
}

// The retry pass over entry e of StreamHooks::retry (any order, any thread; e < the entries queued).
GASPP_HD inline void stream_bulk_retry(const StreamHooks& h, const StreamRef& sr, const DecodedView& d, uint32_t e) {
  const uint32_t code = h.retry[e];
  const uint32_t k = code / kMaxStreamModules, hk = code % kMaxStreamModules;
  int type = 0;
#define GASPP_X(M)                                                          \
  if (h.type[hk] == type) stream_bulk_one<M, true>(h, hk, sr, d, k); \
  ++type;
  GASPP_MODULE_TYPES(GASPP_X)
#undef GASPP_X
}

// How many retry entries the bulk pass queued (those past the capacity were refused).
GASPP_HD GASPP_FORCEINLINE uint32_t stream_retry_count(const StreamHooks& h) {
  if (!h.retry_n) return 0;
  return *h.retry_n < h.retry_cap ? *h.retry_n : h.retry_cap;
}

// The bulk pass over chunk k of the batch (any order, any thread).
GASPP_HD inline void stream_bulk_chunk(const StreamHooks& h, const StreamRef& sr, const DecodedView& d, uint32_t k) {
  const StreamChunk& c = sr.chunks[k];
  if (!c.len || (c.flags & kChunkConflict)) return;
  stream_bulk_modules<false>(h, sr, d, k);
}

// The tail pass over chunk k: the chunk that ends its direction's data in the batch writes the
// direction's tail, when the slot still holds its flow.
GASPP_HD inline void stream_bulk_tail(const StreamHooks& h, const StreamRef& sr, const DecodedView& d, uint32_t k) {
  const StreamChunk& c = sr.chunks[k];
  if (!c.len || (c.flags & (kChunkConflict | kChunkHasNext)) || c.slot == kNoFlow) return;
  if (h.table.recs[c.slot].flow_id != c.flow_id) return;
  stream_bulk_modules<true>(h, sr, d, k);
}

// The flow walk's sink (stream/reassembly.hpp) with stream modules: counts through Counters and
// delivers each piece to the hooks.
template <class Counters>
struct StreamHookSink {
  Counters& c;
  GASPP_HD GASPP_FORCEINLINE void add(int i, uint64_t n) { c.add(i, n); }
  GASPP_HD GASPP_FORCEINLINE void stream_piece(const StreamHooks& h, const StreamChunk& ch, const uint8_t* bytes,
                                                uint32_t slot, uint32_t packet) {
    stream_hooks_call(h, ch, bytes, slot, packet);
  }
};

}  // namespace gaspp
