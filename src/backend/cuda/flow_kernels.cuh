// backend/cuda/flow_kernels.cuh — the flow stage on CUDA: lookup, retry, tick, the sort's run heads,
// the flow walk (tracking and reassembly), the out-of-order buffer's kernels, the verdict walk and
// the sweep, with their launch functions (flow_kernels.cu). The per-packet and per-run work is the
// engine's (flow/flow_track.hpp, stream/reassembly.hpp, core/module_stage.hpp), shared with the CPU
// backend; these only spread it over a grid. Each launch queues on `st` and checks the launch;
// `blocks` is the grid (grid_blocks, kernel_util.cuh) and counters go to d_counters.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "flow/flow_track.hpp"
#include "stream/stream.hpp"

namespace gaspp {

struct FlowPolicy {
  static constexpr int kThreads = 256;
  // The walks (flow walk, verdict walk) take a grid of at most this many blocks per SM, a thread a
  // run (run_heads_kernel), striding when there are more runs. A run is a serial chain of memory
  // waits: a grid of one thread per item held every SM's thread slots through those waits while
  // ~1 lane in 26 worked, so the next batch's gather and decode could not run beside it.
  static constexpr int kWalkBlocksPerSm = 2;
};

// Lookup: packet i of n finds or claims its slot (slot[i], flags[i]); its sort item item_base + i
// gets the slot as key (t.slots() when it has none); packets that found no room are appended to
// failed (count in t.state->failed).
void launch_flow_lookup(int blocks, cudaStream_t st, const FlowTableRef& t, const DecodedView& dec, uint32_t n,
                        const FlowTrackParams& prm, uint32_t* slot, uint8_t* flags, uint32_t* keys, uint32_t* vals,
                        uint32_t item_base, uint32_t* failed, unsigned long long* d_counters);
// Retry: the failed packets again under the bucket locks; untracked_verdict (may be null) takes
// the exception policy's drops.
void launch_flow_retry(int blocks, cudaStream_t st, const FlowTableRef& t, const DecodedView& dec,
                       const FlowTrackParams& prm, const uint32_t* failed, uint32_t* slot, uint32_t* keys,
                       uint32_t item_base, const FlowRecordSink& out, uint8_t* untracked_verdict,
                       unsigned long long* d_counters);
// Tick: the emergency decision (one thread).
void launch_flow_tick(cudaStream_t st, FlowTableState* state, uint32_t capacity, uint32_t enter_pct,
                      uint32_t recover_pct, unsigned long long* d_counters);
// The first item of each run of one key in sorted keys (not the sentinel's), into heads / n_heads
// (n_heads zeroed by the caller).
void launch_run_heads(int blocks, cudaStream_t st, const uint32_t* keys, uint32_t items, uint32_t sentinel,
                      uint32_t* heads, uint32_t* n_heads);
// The flow walk over the sorted runs, a thread a run; with_streams: reassembly too (sr).
void launch_flow_walk(bool with_streams, int blocks, cudaStream_t st, const FlowTableRef& t, const DecodedView& dec,
                      const uint32_t* keys, const uint32_t* vals, uint32_t items, const uint32_t* heads,
                      const uint32_t* n_heads, const FlowTrackParams& prm, const FlowRecordSink& out, uint8_t* flags,
                      const StreamRef& sr, bool final, unsigned long long* d_counters);
// After a walk whose hooks have bulk modules: their pass over the batch's chunks, then the tails
// (two kernels on st, a thread a chunk).
void launch_stream_bulk(int blocks, cudaStream_t st, const StreamRef& sr, const DecodedView& dec);
// Reassembly: the out-of-order buffer's counts before a walk (one thread), the held segments' sort
// items, and the chunks' bytes copied to out (a warp a chunk).
void launch_stream_begin(cudaStream_t st, StreamCounts* c, int in, uint32_t held_cap, uint32_t pool_bytes);
void launch_stream_held_keys(int blocks, cudaStream_t st, const StreamHeld* held, const uint32_t* held_n,
                             uint32_t held_cap, uint32_t sentinel, uint32_t* keys, uint32_t* vals);
void launch_stream_gather(int blocks, cudaStream_t st, const StreamRef& sr, const DecodedView& dec,
                          const StreamChunk* chunks, uint8_t* out);
// The verdict walk over the flow walk's sorted runs (core/module_stage.hpp, verdict_walk_run).
void launch_verdict_walk(int blocks, cudaStream_t st, const FlowTableRef& t, const uint32_t* keys, const uint32_t* vals,
                         uint32_t items, const uint32_t* heads, const uint32_t* n_heads, uint32_t item_base,
                         const uint8_t* flags, uint8_t* verdict, bool drop_invalid, const uint32_t* cap_len,
                         FlowCountsAt* pkt_counts, const uint32_t* payload_len,
                         unsigned long long* d_counters);
// The sweep: when due (or in emergency, or at shutdown) flows that timed out leave the table.
void launch_flow_sweep(int blocks, cudaStream_t st, const FlowTableRef& t, uint64_t now, bool due, bool shutdown,
                       const FlowTimeouts& to, const FlowRecordSink& out, unsigned long long* d_counters);

}  // namespace gaspp
