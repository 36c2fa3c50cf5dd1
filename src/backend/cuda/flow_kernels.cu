#include "backend/cuda/flow_kernels.cuh"

#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/kernel_util.cuh"
#include "core/module_stage.hpp"
#include "core/stream_dispatch.hpp"
#include "stream/reassembly.hpp"

namespace gaspp {
namespace {

// The first item of each run of one key in sorted keys (the sentinel's excepted), appended to heads
// in no particular order (a shared count per block, one global add per block and pass), so that
// the walks give every run a thread of its own: a thread striding over items met several runs'
// first items now and then, and walked them one after another, which set the walk's length.
__global__ void __launch_bounds__(FlowPolicy::kThreads)
run_heads_kernel(const uint32_t* keys, uint32_t items, uint32_t sentinel, uint32_t* heads, uint32_t* n_heads) {
  __shared__ uint32_t block_n, block_base;
  for (uint32_t j0 = blockIdx.x * blockDim.x; j0 < items; j0 += gridDim.x * blockDim.x) {  // uniform per block
    const uint32_t j = j0 + threadIdx.x;
    if (threadIdx.x == 0) block_n = 0;
    __syncthreads();
    bool head = false;
    if (j < items) {
      const uint32_t key = keys[j];
      head = key != sentinel && (j == 0 || keys[j - 1] != key);
    }
    const uint32_t mine = head ? atomicAdd(&block_n, 1u) : 0;
    __syncthreads();
    if (threadIdx.x == 0) block_base = block_n ? atomicAdd(n_heads, block_n) : 0;
    __syncthreads();
    if (head) heads[block_base + mine] = j;
    __syncthreads();  // block_base and block_n are reused by the next pass
  }
}

// Calls fn(j, m, key) for each run [j, m) of one key in sorted keys, one thread a run (heads from
// run_heads_kernel). Run h goes to lane h / warps of warp h % warps, so that a few runs spread over
// every warp of the grid: packed into the first warps (run h to thread h), their lanes' divergent
// walks ran one after another on a few SMs, and the walks took three times as long.
template <class F>
__device__ __forceinline__ void for_each_run(const uint32_t* keys, uint32_t items, const uint32_t* heads,
                                             const uint32_t* n_heads, F fn) {
  const uint32_t n = *n_heads;
  const uint32_t warps = (gridDim.x * blockDim.x) >> 5, threads = warps * 32;
  const uint32_t warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
  for (uint32_t h = lane * warps + warp; h < n; h += threads) {
    const uint32_t j = heads[h], key = keys[j];
    uint32_t m = j + 1;
    while (m < items && keys[m] == key) ++m;
    fn(j, m, key);
  }
}

__global__ void __launch_bounds__(FlowPolicy::kThreads)
flow_lookup_kernel(FlowTableRef t, DecodedView dec, uint32_t n, FlowTrackParams prm, uint32_t* slot, uint8_t* flags,
                   uint32_t* keys, uint32_t* vals, uint32_t item_base, uint32_t* failed, unsigned long long* d_counters) {
  __shared__ unsigned long long s[c_count_];
  block_counters_zero(s);
  SharedCounterSink sink{s};
  const uint32_t sentinel = t.slots();
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    FlowSkip skip;
    const uint32_t f = flow_lookup_packet(t, dec, i, prm, skip, flags[i]);
    slot[i] = f;
    keys[item_base + i] = f == kNoFlow ? sentinel : f;
    vals[item_base + i] = item_base + i;
    if (skip != FlowSkip::none) count_skip(sink, skip);
    else if (f == kNoFlow) failed[atomic_add(&t.state->failed, 1)] = i;
  }
  block_counters_flush(s, d_counters);
}

__global__ void __launch_bounds__(FlowPolicy::kThreads)
flow_retry_kernel(FlowTableRef t, DecodedView dec, FlowTrackParams prm, const uint32_t* failed, uint32_t* slot,
                  uint32_t* keys, uint32_t item_base, FlowRecordSink out, uint8_t* untracked_verdict,
                  unsigned long long* d_counters) {
  __shared__ unsigned long long s[c_count_];
  block_counters_zero(s);
  SharedCounterSink sink{s};
  const uint32_t nfailed = *reinterpret_cast<volatile uint32_t*>(&t.state->failed);
  for (uint32_t j = blockIdx.x * blockDim.x + threadIdx.x; j < nfailed; j += gridDim.x * blockDim.x) {
    const uint32_t i = failed[j];
    const uint32_t f = flow_retry_packet(t, dec, i, prm, out, sink);
    untracked_policy(f, i, untracked_verdict, sink);
    slot[i] = f;
    keys[item_base + i] = f == kNoFlow ? t.slots() : f;
  }
  block_counters_flush(s, d_counters);
}

__global__ void flow_tick_kernel(FlowTableState* st, uint32_t capacity, uint32_t enter_pct, uint32_t recover_pct,
                                 unsigned long long* d_counters) {
  struct GlobalSink {
    unsigned long long* d;
    __device__ void add(int i, uint64_t v) { d[i] += v; }
  } sink{d_counters};
  flow_tick(*st, capacity, enter_pct, recover_pct, sink);
}

// One instance with reassembly and one without: compiled together, the reassembly path's calls
// and frame made the plain walk spill nearly all its state (32 registers, a 2.7 KB stack).
template <bool kStreams>
__global__ void __launch_bounds__(FlowPolicy::kThreads)
flow_walk_kernel(FlowTableRef t, DecodedView dec, const uint32_t* keys, const uint32_t* vals, uint32_t items,
                 const uint32_t* heads, const uint32_t* n_heads, FlowTrackParams prm, FlowRecordSink out,
                 uint8_t* flags, StreamRef sr, bool final, unsigned long long* d_counters) {
  __shared__ unsigned long long s[c_count_];
  block_counters_zero(s);
  SharedCounterSink sink{s};
  const bool emergency = t.state->emergency != 0;
  for_each_run(keys, items, heads, n_heads, [&](uint32_t j, uint32_t m, uint32_t key) {
    if constexpr (kStreams) {
      StreamHookSink<SharedCounterSink> walk_sink{sink};
      flow_walk_run(t, dec, vals, j, m, key, flags, prm, emergency, out, &sr, final, walk_sink);
    } else {
      NoStreamModules<SharedCounterSink> walk_sink{sink};
      flow_walk_run(t, dec, vals, j, m, key, flags, prm, emergency, out, nullptr, final, walk_sink);
    }
  });
  block_counters_flush(s, d_counters);
}

// After a walk: the bulk stream modules over every chunk (kTail: then the tails), a thread a chunk
// (core/stream_dispatch.hpp). A warp a chunk (its lanes splitting the matcher's positions, the lane
// with a pattern's first occurrence checking its signatures) measured slower on HTTP (23.4 against
// 28.8 Gbit/s, bench/results/2026-11-25-h100-detect-bulk-streams.json): finding the first occurrence
// costs more than the lanes save.
template <bool kTail>
__global__ void __launch_bounds__(FlowPolicy::kThreads) stream_bulk_kernel(StreamRef sr, DecodedView dec) {
  const uint32_t n = min(*sr.chunk_n, sr.chunk_cap);
  for (uint32_t k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += gridDim.x * blockDim.x) {
    if constexpr (kTail) stream_bulk_tail(sr.hooks, sr, dec, k);
    else stream_bulk_chunk(sr.hooks, sr, dec, k);
  }
}

// Between the two: the pieces the bulk pass queued for a retry, a thread an entry. A kernel of its
// own so that what only the retry runs (the detection module's regex search) does not weigh on the
// bulk kernel's registers and code (bench/results/2026-11-26-detect-stages-device-pcre.json).
__global__ void __launch_bounds__(FlowPolicy::kThreads) stream_retry_kernel(StreamRef sr, DecodedView dec) {
  const uint32_t n = stream_retry_count(sr.hooks);
  for (uint32_t e = blockIdx.x * blockDim.x + threadIdx.x; e < n; e += gridDim.x * blockDim.x)
    stream_bulk_retry(sr.hooks, sr, dec, e);
}

// Before a walk: the out-of-order buffer's counts and pool decision (stream_begin, one thread).
__global__ void stream_begin_kernel(StreamCounts* c, int in, uint32_t held_cap, uint32_t pool_bytes) {
  stream_begin(*c, in, held_cap, pool_bytes);
}

__global__ void stream_held_keys_kernel(const StreamHeld* held, const uint32_t* held_n, uint32_t held_cap,
                                        uint32_t sentinel, uint32_t* keys, uint32_t* vals) {
  const uint32_t n = *held_n;
  for (uint32_t h = blockIdx.x * blockDim.x + threadIdx.x; h < held_cap; h += gridDim.x * blockDim.x) {
    keys[h] = h < n ? held[h].slot : sentinel;
    vals[h] = h;
  }
}

// Copies each chunk's bytes to its place in the host's byte buffer (mapped): a warp per chunk.
__global__ void stream_gather_kernel(StreamRef sr, DecodedView dec, const StreamChunk* chunks, uint8_t* out) {
  const uint32_t n = min(*sr.chunk_n, sr.chunk_cap);
  const uint32_t lane = threadIdx.x & 31, warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const uint32_t warps = (gridDim.x * blockDim.x) >> 5;
  for (uint32_t k = warp; k < n; k += warps) {
    const StreamChunk& c = chunks[k];
    if ((c.flags & kChunkConflict) || c.len == 0) continue;
    const uint8_t* from = stream_item_bytes(sr, dec, c.src) + c.src_off;
    for (uint32_t x = lane; x < c.len; x += 32) out[c.data + x] = from[x];
  }
}

__global__ void __launch_bounds__(FlowPolicy::kThreads)
flow_sweep_kernel(FlowTableRef t, uint64_t now, bool due, bool shutdown, FlowTimeouts to, FlowRecordSink out,
                  unsigned long long* d_counters) {
  __shared__ unsigned long long s[c_count_];
  const bool emergency = t.state->emergency != 0;
  if (!due && !emergency && !shutdown) return;  // uniform across the grid: no barrier is skipped by a part
  block_counters_zero(s);
  SharedCounterSink sink{s};
  const uint32_t slots = t.slots();
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < slots; i += gridDim.x * blockDim.x)
    flow_sweep_slot(t, i, now, to, emergency, shutdown, out, sink);
  block_counters_flush(s, d_counters);
}

__global__ void __launch_bounds__(FlowPolicy::kThreads)
verdict_walk_kernel(FlowTableRef t, const uint32_t* keys, const uint32_t* vals, uint32_t items, const uint32_t* heads,
                    const uint32_t* n_heads, uint32_t item_base, const uint8_t* flags, uint8_t* verdict,
                    bool drop_invalid, const uint32_t* cap_len, FlowCountsAt* pkt_counts,
                    const uint32_t* payload_len, unsigned long long* d_counters) {
  __shared__ unsigned long long s[c_count_];
  block_counters_zero(s);
  SharedCounterSink sink{s};
  for_each_run(keys, items, heads, n_heads, [&](uint32_t j, uint32_t m, uint32_t key) {
    verdict_walk_run(t, vals, j, m, key, item_base, flags, verdict, drop_invalid, cap_len, pkt_counts, payload_len, sink);
  });
  block_counters_flush(s, d_counters);
}

}  // namespace

void launch_flow_lookup(int blocks, cudaStream_t st, const FlowTableRef& t, const DecodedView& dec, uint32_t n,
                        const FlowTrackParams& prm, uint32_t* slot, uint8_t* flags, uint32_t* keys, uint32_t* vals,
                        uint32_t item_base, uint32_t* failed, unsigned long long* d_counters) {
  flow_lookup_kernel<<<blocks, FlowPolicy::kThreads, 0, st>>>(t, dec, n, prm, slot, flags, keys, vals, item_base, failed,
                                                              d_counters);
  GASPP_CUDA_CHECK(cudaGetLastError());
}

void launch_flow_retry(int blocks, cudaStream_t st, const FlowTableRef& t, const DecodedView& dec,
                       const FlowTrackParams& prm, const uint32_t* failed, uint32_t* slot, uint32_t* keys,
                       uint32_t item_base, const FlowRecordSink& out, uint8_t* untracked_verdict,
                       unsigned long long* d_counters) {
  flow_retry_kernel<<<blocks, FlowPolicy::kThreads, 0, st>>>(t, dec, prm, failed, slot, keys, item_base, out,
                                                             untracked_verdict, d_counters);
  GASPP_CUDA_CHECK(cudaGetLastError());
}

void launch_flow_tick(cudaStream_t st, FlowTableState* state, uint32_t capacity, uint32_t enter_pct,
                      uint32_t recover_pct, unsigned long long* d_counters) {
  flow_tick_kernel<<<1, 1, 0, st>>>(state, capacity, enter_pct, recover_pct, d_counters);
  GASPP_CUDA_CHECK(cudaGetLastError());
}

void launch_run_heads(int blocks, cudaStream_t st, const uint32_t* keys, uint32_t items, uint32_t sentinel,
                      uint32_t* heads, uint32_t* n_heads) {
  run_heads_kernel<<<blocks, FlowPolicy::kThreads, 0, st>>>(keys, items, sentinel, heads, n_heads);
  GASPP_CUDA_CHECK(cudaGetLastError());
}

void launch_flow_walk(bool with_streams, int blocks, cudaStream_t st, const FlowTableRef& t, const DecodedView& dec,
                      const uint32_t* keys, const uint32_t* vals, uint32_t items, const uint32_t* heads,
                      const uint32_t* n_heads, const FlowTrackParams& prm, const FlowRecordSink& out, uint8_t* flags,
                      const StreamRef& sr, bool final, unsigned long long* d_counters) {
  auto walk = with_streams ? flow_walk_kernel<true> : flow_walk_kernel<false>;
  walk<<<blocks, FlowPolicy::kThreads, 0, st>>>(t, dec, keys, vals, items, heads, n_heads, prm, out, flags, sr, final,
                                                d_counters);
  GASPP_CUDA_CHECK(cudaGetLastError());
}

void launch_stream_bulk(int blocks, cudaStream_t st, const StreamRef& sr, const DecodedView& dec) {
  stream_bulk_kernel<false><<<blocks, FlowPolicy::kThreads, 0, st>>>(sr, dec);
  GASPP_CUDA_CHECK(cudaGetLastError());
  if (sr.hooks.retry_n) {
    stream_retry_kernel<<<blocks, FlowPolicy::kThreads, 0, st>>>(sr, dec);
    GASPP_CUDA_CHECK(cudaGetLastError());
  }
  stream_bulk_kernel<true><<<blocks, FlowPolicy::kThreads, 0, st>>>(sr, dec);
  GASPP_CUDA_CHECK(cudaGetLastError());
}

void launch_stream_begin(cudaStream_t st, StreamCounts* c, int in, uint32_t held_cap, uint32_t pool_bytes) {
  stream_begin_kernel<<<1, 1, 0, st>>>(c, in, held_cap, pool_bytes);
  GASPP_CUDA_CHECK(cudaGetLastError());
}

void launch_stream_held_keys(int blocks, cudaStream_t st, const StreamHeld* held, const uint32_t* held_n,
                             uint32_t held_cap, uint32_t sentinel, uint32_t* keys, uint32_t* vals) {
  stream_held_keys_kernel<<<blocks, FlowPolicy::kThreads, 0, st>>>(held, held_n, held_cap, sentinel, keys, vals);
  GASPP_CUDA_CHECK(cudaGetLastError());
}

void launch_stream_gather(int blocks, cudaStream_t st, const StreamRef& sr, const DecodedView& dec,
                          const StreamChunk* chunks, uint8_t* out) {
  stream_gather_kernel<<<blocks, FlowPolicy::kThreads, 0, st>>>(sr, dec, chunks, out);
  GASPP_CUDA_CHECK(cudaGetLastError());
}

void launch_verdict_walk(int blocks, cudaStream_t st, const FlowTableRef& t, const uint32_t* keys, const uint32_t* vals,
                         uint32_t items, const uint32_t* heads, const uint32_t* n_heads, uint32_t item_base,
                         const uint8_t* flags, uint8_t* verdict, bool drop_invalid, const uint32_t* cap_len,
                         FlowCountsAt* pkt_counts, const uint32_t* payload_len, unsigned long long* d_counters) {
  verdict_walk_kernel<<<blocks, FlowPolicy::kThreads, 0, st>>>(t, keys, vals, items, heads, n_heads, item_base, flags,
                                                               verdict, drop_invalid, cap_len, pkt_counts, payload_len,
                                                               d_counters);
  GASPP_CUDA_CHECK(cudaGetLastError());
}

void launch_flow_sweep(int blocks, cudaStream_t st, const FlowTableRef& t, uint64_t now, bool due, bool shutdown,
                       const FlowTimeouts& to, const FlowRecordSink& out, unsigned long long* d_counters) {
  flow_sweep_kernel<<<blocks, FlowPolicy::kThreads, 0, st>>>(t, now, due, shutdown, to, out, d_counters);
  GASPP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace gaspp
