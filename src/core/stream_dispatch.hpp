// core/stream_dispatch.hpp — calls the stream modules' on_stream hooks for one piece of a TCP
// direction (gaspp/stream_hook.hpp), from the flow walk, on both backends. Each listed module's type
// picks its hook (GASPP_MODULE_TYPES); the context key goes from module to module, starting at 0.
// The backends hand the walk (stream/reassembly.hpp) a StreamHookSink, through which the engine
// reaches the modules without knowing them.
#pragma once
#include "core/module_stage.hpp"
#include "gaspp/stream_hook.hpp"
#include "modules/registry.hpp"

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
