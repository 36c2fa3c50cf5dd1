// backend/cuda/cuda_backend.cu — the CUDA backend: streams, pinned memory, device buffers, kernels.
//
// Each of the (at least three) slots has its own CUDA stream, pinned host arrays (record offsets,
// verdicts, counters), a pinned staging buffer and device buffers sized for one full batch. For a
// batch, submit() queues on the slot's stream: the H2D copy of the records, the decode kernel, and
// the D2H copy of verdicts and counters only (decoded fields stay on the device unless the caller
// asked for them). wait() synchronizes the slot's stream.
//
// Transfers (GASPP §5.1): the capture mapping is registered with cudaHostRegister (read-only), so
// a dense batch — a file range — is DMA'd to the device straight from the page cache. A sparse
// batch (record bytes / span bytes under `compact_below`) is first packed back to back, each
// record at a 16-byte boundary, into the slot's pinned staging buffer. If registration fails, every
// batch goes through staging. The counts of both kinds and the bytes moved are reported.
//
// Header-only slicing (BackendConfig::slice): when nothing downstream reads payload (no module
// declares kLayerPayload or kLayerStream, reassembly is off), a batch in the registered mapping is
// not copied at all: a gather kernel copies each record's first kSliceHeadBytes through the mapping's
// device alias (16-byte reads, many in flight), decode reads those heads (and the whole record,
// through the mapping, only for a packet whose headers do not fit), and later kernels read the
// records through the mapping. Only the heads, and the bytes the later kernels touch, cross PCIe. Every kernel sees the whole record, so results are the same as with slicing off (a module
// that reads payload anyway still gets it, only slower). Such batches are counted as sliced.
// Automatic slicing applies to batches whose records average kSliceMinMeanRecord bytes or more.
//
// Flow stage (flow/flow_track.hpp, the same per-packet functions as the CPU backend), queued on the
// slot's stream after decode but only once the previous batch's flow stage has finished (an event
// chain), so flow state sees batches in order while copies and decode of the next batch overlap:
//   lookup kernel   every packet finds or claims its slot (lock-free, see flow/flow_table.hpp);
//                   packets that found no room are appended to a retry list
//   retry kernel    those packets again, under per-bucket locks, evicting if needed
//   tick kernel     emergency decision (one thread)
//   held keys       (reassembly) the previous batch's out-of-order segments join the sort
//   CUB radix sort  (slot, item) pairs: a flow's held segments then packets become adjacent, in
//                   capture order
//   walk kernel     the first thread of each run tracks the flow's packets in order and
//                   reassembles its TCP directions (stream/reassembly.hpp)
//   gather kernel   (only when the host asked for the streams) chunk bytes to the host
//   module stages   one kernel per module (module_stage_kernel<M>, core/module_stage.hpp), then the
//                   verdict walk over the same sorted runs: flow decisions in capture order
//   sweep kernel    when due in packet time or in emergency: expired flows leave the table
// Records leaving the table, and with want_streams the stream chunks and their bytes, are written
// by the kernels straight into the slot's pinned, mapped host buffers, so nothing extra is copied
// back. The out-of-order buffer (two sets of segment descriptions used in turn, two byte pools where
// held bytes stay; stream/stream.hpp) lives in device memory; the event chain orders the batches.
// Module tables are copied to device memory once, when the backend starts (DeviceTables); module
// events go to a mapped host buffer per slot, module counters come back with the verdicts.
#include <cuda_runtime.h>

#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/device_flow_table.hpp"
#include "backend/cuda/sm_partition.hpp"
#include "core/module_stage.hpp"
#include "decode/decoder.hpp"
#include "modules/registry.hpp"
#include "flow/flow_track.hpp"
#include "stream/reassembly.hpp"

namespace gaspp {
namespace {

// Automatic slicing: the mean record size (header + frame) from which a batch is sliced rather than
// copied. Copied, a batch costs its bytes at the H2D rate; sliced, about a fixed rate set by the
// gather's reads through the mapping (H100, 262144-packet batches, the gather on its own SMs:
// 387 Mpps decode+flow on the mix; bench_firewall, bench/results/2026-11-23-h100-firewall-walk.json):
// they meet near 54.8 GB/s / 387 Mpps = 142 B, so batches from 144 B a record on are sliced (64-byte
// frames: 620 Mpps copied, 544 sliced).
constexpr uint32_t kSliceMinMeanRecord = 144;

// Tuning of the decode launch, named rather than scattered.
struct DecodePolicy {
  static constexpr int kThreads = 256;
  static constexpr int kBlocksPerSm = 8;
  // The slice gather mostly waits on PCIe reads. On SMs of its own (sm_partition.hpp) it fills
  // them, to keep as many reads in flight as it can; sharing every SM, this many blocks per SM keep
  // hundreds of KiB in flight and leave room to the other slots' kernels.
  static constexpr int kGatherBlocksPerOwnSm = 8;
  static constexpr int kGatherBlocksPerSm = 2;
};

struct SharedCounterSink {
  unsigned long long* s;
  __device__ void add(int i, uint64_t n) { atomicAdd(&s[i], static_cast<unsigned long long>(n)); }
};

// Header-only slicing: record i's head is the 16-byte-aligned window of the mapping that holds its
// first kSliceHeadBytes, copied to heads + i * kSliceStride; the record starts at its misalignment.
// kSlicePieces lanes of a warp take one record (16-byte loads: wide PCIe reads, all in flight at
// once), so a warp gathers kSliceGroups records per step. A window piece reaching outside [lo, the
// batch's end) — lo is where the mapping starts — is copied byte by byte within the record (the
// mapping may end).
constexpr uint32_t kSliceStride = kSliceHeadBytes + 16;
constexpr uint32_t kSlicePieces = kSliceStride / 16, kSliceGroups = 32 / kSlicePieces;
__device__ __forceinline__ uint32_t slice_misalign(const BatchView& b, uint32_t i) {
  return uint32_t(reinterpret_cast<uintptr_t>(b.data + b.rec_off[i]) & 15);
}
__global__ void __launch_bounds__(DecodePolicy::kThreads) slice_gather_kernel(BatchView b, const uint8_t* lo,
                                                                               uint8_t* heads) {
  const uint32_t lane = threadIdx.x & 31, group = lane / kSlicePieces, piece = lane % kSlicePieces;
  const uint32_t warps = (gridDim.x * blockDim.x) >> 5;
  if (group >= kSliceGroups) return;  // the lanes left over
  const uint8_t* end = b.data + b.data_len;
  for (uint32_t w = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; w * kSliceGroups < b.count; w += warps) {
    const uint32_t i = w * kSliceGroups + group;
    if (i >= b.count) break;
    const uint8_t* src = b.data + b.rec_off[i];
    const uint32_t mis = slice_misalign(b, i);
    const uint32_t n = slice_head_len(b, i, kSliceHeadBytes);
    if (piece * 16 >= mis + n) continue;
    const uint8_t* c = src - mis + piece * 16;
    uint8_t* dst = heads + size_t(i) * kSliceStride + piece * 16;
    if (c >= lo && c + 16 <= end) {
      *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(c);
    } else {
      for (uint32_t k = 0; k < 16; ++k)
        if (c + k >= src && c + k < src + n) dst[k] = c[k];
    }
  }
}

// heads: a sliced batch's gathered heads (slice_gather_kernel), decoded from there and the whole
// record only where headers do not fit; null: decode the records in b.data.
__global__ void __launch_bounds__(DecodePolicy::kThreads) decode_kernel(BatchView b, const uint8_t* heads,
                                                                        unsigned long long* d_counters) {
  __shared__ unsigned long long s[c_count_];
  for (int k = threadIdx.x; k < c_count_; k += blockDim.x) s[k] = 0;
  __syncthreads();
  SharedCounterSink sink{s};
  DecodedPacket p;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < b.count; i += gridDim.x * blockDim.x) {
    if (heads)
      decode_sliced_packet(b, heads + size_t(i) * kSliceStride + slice_misalign(b, i),
                           slice_head_len(b, i, kSliceHeadBytes), i, p);
    else
      decode_batch_packet(b, i, p);
    store(b.dec, i, p);
    b.verdict[i] = kVerdictPass;
    count_packet(sink, p);
  }
  __syncthreads();
  for (int k = threadIdx.x; k < c_count_; k += blockDim.x)
    if (s[k]) atomicAdd(&d_counters[k], s[k]);
}

// Block-level counters in shared memory, flushed to the batch's global counters once per block.
__device__ __forceinline__ void block_counters_zero(unsigned long long* s) {
  for (int k = threadIdx.x; k < c_count_; k += blockDim.x) s[k] = 0;
  __syncthreads();
}
__device__ __forceinline__ void block_counters_flush(unsigned long long* s, unsigned long long* d) {
  __syncthreads();
  for (int k = threadIdx.x; k < c_count_; k += blockDim.x)
    if (s[k]) atomicAdd(&d[k], s[k]);
}

struct FlowPolicy {
  static constexpr int kThreads = 256;
  // The walks (flow walk, verdict walk) take a grid of at most this many blocks per SM, a thread a
  // run (run_heads_kernel), striding when there are more runs. A run is a serial chain of memory
  // waits: a grid of one thread per item held every SM's thread slots through those waits while
  // ~1 lane in 26 worked, so the next batch's gather and decode could not run beside it.
  static constexpr int kWalkBlocksPerSm = 2;
};

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
    flow_walk_run(t, dec, vals, j, m, key, flags, prm, emergency, out, kStreams ? &sr : nullptr, final, sink);
  });
  block_counters_flush(s, d_counters);
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

struct ModulePolicy {
  static constexpr int kThreads = 256;
};

// One module stage over the batch: the block's module counters in shared memory, flushed once.
template <class M>
__global__ void __launch_bounds__(ModulePolicy::kThreads)
module_stage_kernel(StageArgs a, typename M::View v, unsigned long long* d_counts) {
  __shared__ unsigned long long s[kModuleCounters];
  for (int k = threadIdx.x; k < kModuleCounters; k += blockDim.x) s[k] = 0;
  __syncthreads();
  for (uint32_t k = blockIdx.x * blockDim.x + threadIdx.x; k < a.count; k += gridDim.x * blockDim.x)
    module_stage_packet<M>(a, v, k, s);
  __syncthreads();
  for (int k = threadIdx.x; k < kModuleCounters; k += blockDim.x)
    if (s[k]) atomicAdd(&d_counts[k], s[k]);
}

// Launches the stage of module m (its type picks the kernel instantiation).
void launch_module_stage(const ModuleInstance& m, const StageArgs& a, int blocks, cudaStream_t st,
                         unsigned long long* d_counts) {
  int type = 0;
#define GASPP_X(M)                                                                                      \
  if (m.type() == type++) {                                                                             \
    module_stage_kernel<M><<<blocks, ModulePolicy::kThreads, 0, st>>>(                                 \
        a, *static_cast<const typename M::View*>(m.view()), d_counts);                                 \
    GASPP_CUDA_CHECK(cudaGetLastError());                                                               \
    return;                                                                                             \
  }
  GASPP_MODULE_TYPES(GASPP_X)
#undef GASPP_X
  throw std::logic_error(std::string("module type not built into the CUDA backend: ") + m.name());
}

// Scheduling: the key of every packet for the next stage (core/module_stage.hpp) and its index.
__global__ void __launch_bounds__(ModulePolicy::kThreads)
schedule_keys_kernel(StageArgs a, uint16_t next_stage, uint32_t* keys, uint32_t* vals) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < a.count; i += gridDim.x * blockDim.x) {
    keys[i] = schedule_key(a, i, next_stage);
    vals[i] = i;
  }
}

__global__ void __launch_bounds__(FlowPolicy::kThreads)
verdict_walk_kernel(FlowTableRef t, const uint32_t* keys, const uint32_t* vals, uint32_t items, const uint32_t* heads,
                    const uint32_t* n_heads, uint32_t item_base, const uint8_t* flags, uint8_t* verdict,
                    bool drop_invalid, const uint32_t* cap_len, FlowCountsAt* pkt_counts,
                    unsigned long long* d_counters) {
  __shared__ unsigned long long s[c_count_];
  block_counters_zero(s);
  SharedCounterSink sink{s};
  for_each_run(keys, items, heads, n_heads, [&](uint32_t j, uint32_t m, uint32_t key) {
    verdict_walk_run(t, vals, j, m, key, item_base, flags, verdict, drop_invalid, cap_len, pkt_counts, sink);
  });
  block_counters_flush(s, d_counters);
}

// Module tables in device memory, owned here, freed with the backend.
class DeviceTables final : public TableMemory {
 public:
  ~DeviceTables() override {
    for (void* p : allocs_) cudaFree(p);
  }
  const void* place(const void* host, size_t bytes) override {
    if (!bytes) return nullptr;
    void* d = nullptr;
    GASPP_CUDA_CHECK(cudaMalloc(&d, bytes));
    allocs_.push_back(d);
    GASPP_CUDA_CHECK(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice));
    bytes_ += bytes;
    return d;
  }
  uint64_t bytes() const { return bytes_; }

 private:
  std::vector<void*> allocs_;
  uint64_t bytes_ = 0;
};

// Device storage for the decoded fields of one slot: one allocation carved into aligned arrays.
class DeviceDecoded {
 public:
  void allocate(uint32_t packets) {
    size_t total = 0;
#define GASPP_X(type, name, n) total += align(sizeof(type) * size_t(packets) * (n));
    GASPP_DECODED_FIELDS(GASPP_X)
#undef GASPP_X
    GASPP_CUDA_CHECK(cudaMalloc(&base_, total));
    bytes_ = total;
    char* p = static_cast<char*>(base_);
#define GASPP_X(type, name, n)                          \
  view_.name = reinterpret_cast<type*>(p);              \
  p += align(sizeof(type) * size_t(packets) * (n));
    GASPP_DECODED_FIELDS(GASPP_X)
#undef GASPP_X
  }
  void release() {
    if (base_) cudaFree(base_);
    base_ = nullptr;
  }
  const DecodedView& view() const { return view_; }
  size_t bytes() const { return bytes_; }
  // Copies the first `count` packets of every field into host arrays (queued on `stream`).
  void copy_to_host_async(DecodedArrays& h, uint32_t count, cudaStream_t stream) const {
    DecodedView hv = h.view();
#define GASPP_X(type, name, n) \
  GASPP_CUDA_CHECK(cudaMemcpyAsync(hv.name, view_.name, sizeof(type) * size_t(count) * (n), cudaMemcpyDeviceToHost, stream));
    GASPP_DECODED_FIELDS(GASPP_X)
#undef GASPP_X
  }

 private:
  static size_t align(size_t n) { return (n + 255) & ~size_t(255); }
  void* base_ = nullptr;
  size_t bytes_ = 0;
  DecodedView view_{};
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const BackendConfig& cfg) : cfg_(cfg), slots_(size_t(std::max(cfg.slots, 3))) {
    GASPP_CUDA_CHECK(cudaGetDevice(&device_));
    GASPP_CUDA_CHECK(cudaGetDeviceProperties(&prop_, device_));
    slice_ = slicing_applies(cfg);
    if (slice_ && cfg.gather_sms >= 0) {
      part_ = std::make_unique<SmPartition>(device_, unsigned(cfg.gather_sms));
      if (!part_->ok()) {
        part_note_ = part_->why();
        part_.reset();
      }
    }
    if (cfg.flow.enabled) {
      table_ = std::make_unique<DeviceFlowTable>(cfg.flow);
      device_bytes_ += table_->shape().bytes();
      streams_ = cfg.stream.enabled;
      if (streams_) {
        held_cap_ = stream_held_cap(cfg.stream, cfg.batch_packets);
        chunk_cap_ = stream_chunk_cap(cfg.batch_packets, held_cap_);
        for (int k = 0; k < 2; ++k) {
          GASPP_CUDA_CHECK(cudaMalloc(&d_held_[k], sizeof(StreamHeld) * held_cap_));
          GASPP_CUDA_CHECK(cudaMalloc(&d_pool_[k], cfg.stream.held_bytes));
        }
        GASPP_CUDA_CHECK(cudaMalloc(&d_stream_counts_, sizeof(StreamCounts)));
        GASPP_CUDA_CHECK(cudaMemset(d_stream_counts_, 0, sizeof(StreamCounts)));
        GASPP_CUDA_CHECK(cudaMalloc(&d_pend_, sizeof(StreamPending) * (size_t(held_cap_) + cfg.batch_packets)));
        GASPP_CUDA_CHECK(cudaMalloc(&d_chunks_, sizeof(StreamChunk) * chunk_cap_));
        device_bytes_ += 2 * (sizeof(StreamHeld) * held_cap_ + cfg.stream.held_bytes) + sizeof(StreamCounts) +
                         sizeof(StreamPending) * (size_t(held_cap_) + cfg.batch_packets) + sizeof(StreamChunk) * chunk_cap_;
      }
      const size_t n = size_t(cfg.batch_packets) + held_cap_;  // sorted items: held segments, then packets
      GASPP_CUDA_CHECK(cudaMalloc(&d_keys_, sizeof(uint32_t) * (n * 5 + 1)));
      d_vals_ = d_keys_ + n;
      d_keys_sorted_ = d_keys_ + 2 * n;
      d_vals_sorted_ = d_keys_ + 3 * n;
      d_run_heads_ = d_keys_ + 4 * n;
      d_run_n_ = d_keys_ + 5 * n;
      GASPP_CUDA_CHECK(cudaMalloc(&d_failed_, sizeof(uint32_t) * cfg.batch_packets));
      GASPP_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, sort_temp_bytes_, d_keys_, d_keys_sorted_, d_vals_,
                                                       d_vals_sorted_, int(n)));
      GASPP_CUDA_CHECK(cudaMalloc(&d_sort_temp_, sort_temp_bytes_));
      device_bytes_ += sizeof(uint32_t) * (n * 5 + 1 + cfg.batch_packets) + sort_temp_bytes_;
      record_capacity_ = cfg.batch_packets + kSweepRecords;
      GASPP_CUDA_CHECK(cudaEventCreateWithFlags(&flow_done_, cudaEventDisableTiming));
      GASPP_CUDA_CHECK(cudaStreamCreateWithFlags(&flush_stream_, cudaStreamNonBlocking));
    }
    staging_bytes_ = cfg.batch_bytes + uint64_t(cfg.batch_packets) * 16;
    for (auto& s : slots_) {
      if (part_) {
        s.stream = part_->stream(false);
        s.gather_stream = part_->stream(true);
        if (!s.stream || !s.gather_stream) throw std::runtime_error("cuda backend: " + part_->why());
        GASPP_CUDA_CHECK(cudaEventCreateWithFlags(&s.gathered, cudaEventDisableTiming));
      } else {
        GASPP_CUDA_CHECK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
      }
      GASPP_CUDA_CHECK(cudaMallocHost(&s.h_rec_off, sizeof(uint32_t) * cfg.batch_packets));
      GASPP_CUDA_CHECK(cudaMallocHost(&s.h_rec_off_staged, sizeof(uint32_t) * cfg.batch_packets));
      GASPP_CUDA_CHECK(cudaMallocHost(&s.h_verdict, cfg.batch_packets));
      GASPP_CUDA_CHECK(cudaMallocHost(&s.h_counters, sizeof(unsigned long long) * c_count_));
      GASPP_CUDA_CHECK(cudaMallocHost(&s.h_staging, staging_bytes_));
      GASPP_CUDA_CHECK(cudaMalloc(&s.d_data, staging_bytes_));
      if (slice_) {
        GASPP_CUDA_CHECK(cudaMalloc(&s.d_heads, size_t(cfg.batch_packets) * kSliceStride));
        device_bytes_ += uint64_t(cfg.batch_packets) * kSliceStride;
      }
      GASPP_CUDA_CHECK(cudaMalloc(&s.d_rec_off, sizeof(uint32_t) * cfg.batch_packets));
      if (cfg.stage_times)
        for (auto& e : s.marks) GASPP_CUDA_CHECK(cudaEventCreate(&e));
      GASPP_CUDA_CHECK(cudaMalloc(&s.d_verdict, cfg.batch_packets));
      GASPP_CUDA_CHECK(cudaMalloc(&s.d_counters, sizeof(unsigned long long) * c_count_));
      s.dec.allocate(cfg.batch_packets);
      if (cfg.flow.enabled) {
        GASPP_CUDA_CHECK(cudaMalloc(&s.d_flow_slot, sizeof(uint32_t) * cfg.batch_packets));
        GASPP_CUDA_CHECK(cudaMalloc(&s.d_flow_flags, cfg.batch_packets));
        GASPP_CUDA_CHECK(cudaHostAlloc(&s.h_records, sizeof(FlowRecordOut) * record_capacity_, cudaHostAllocMapped));
        GASPP_CUDA_CHECK(cudaHostAlloc(&s.h_record_count, sizeof(uint32_t), cudaHostAllocMapped));
        GASPP_CUDA_CHECK(cudaHostGetDevicePointer(&s.d_records, s.h_records, 0));
        GASPP_CUDA_CHECK(cudaHostGetDevicePointer(&s.d_record_count, s.h_record_count, 0));
        *s.h_record_count = 0;
        device_bytes_ += 5ull * cfg.batch_packets;
      }
      s.batch.capacity = cfg.batch_packets;
      s.batch.h_rec_off = s.h_rec_off;
      s.batch.h_verdict = s.h_verdict;
      device_bytes_ += staging_bytes_ + 5ull * cfg.batch_packets + 8 * c_count_ + s.dec.bytes();
    }
    const int sms = part_ ? int(part_->rest_sms()) : prop_.multiProcessorCount;  // where the slot streams run
    blocks_cap_ = sms * DecodePolicy::kBlocksPerSm;
    walk_blocks_cap_ = sms * FlowPolicy::kWalkBlocksPerSm;
    gather_blocks_cap_ = part_ ? int(part_->small_sms()) * DecodePolicy::kGatherBlocksPerOwnSm
                               : prop_.multiProcessorCount * DecodePolicy::kGatherBlocksPerSm;
    if (!cfg.modules.empty()) {
      for (ModuleInstance* m : cfg.modules) m->upload(tables_);
      event_cap_ = event_capacity_of(cfg);
      class_order_ = flat_class_orders(cfg);
      hooks_ = stream_hooks_of(cfg.modules, &tables_);
      if (hooks_.n && !streams_) throw std::invalid_argument("a module with on_stream needs flow tracking and reassembly");
      classes_ = uint16_t(cfg.class_orders.empty() ? 1 : cfg.class_orders.size());
      d_class_order_ = static_cast<const uint16_t*>(tables_.place(class_order_.data(), class_order_.size() * 2));
      schedule_ = cfg.schedule == BackendConfig::Schedule::on;  // automatic: off (see BackendConfig)
      if (schedule_)
        GASPP_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, sched_temp_bytes_, static_cast<uint32_t*>(nullptr),
                                                         static_cast<uint32_t*>(nullptr), static_cast<uint32_t*>(nullptr),
                                                         static_cast<uint32_t*>(nullptr), int(cfg.batch_packets)));
      const size_t nc = cfg.modules.size() * kModuleCounters;
      for (auto& s : slots_) {
        GASPP_CUDA_CHECK(cudaMalloc(&s.d_ctx, sizeof(uint32_t) * cfg.batch_packets));
        GASPP_CUDA_CHECK(cudaMalloc(&s.d_module_counts, sizeof(unsigned long long) * nc));
        GASPP_CUDA_CHECK(cudaMallocHost(&s.h_module_counts, sizeof(unsigned long long) * nc));
        GASPP_CUDA_CHECK(cudaHostAlloc(&s.h_events, sizeof(ModuleEvent) * event_cap_, cudaHostAllocMapped));
        GASPP_CUDA_CHECK(cudaHostGetDevicePointer(&s.d_events, s.h_events, 0));
        GASPP_CUDA_CHECK(cudaHostAlloc(&s.h_event_n, sizeof(uint32_t), cudaHostAllocMapped));
        GASPP_CUDA_CHECK(cudaHostGetDevicePointer(&s.d_event_n, s.h_event_n, 0));
        *s.h_event_n = 0;
        device_bytes_ += sizeof(uint32_t) * cfg.batch_packets + sizeof(unsigned long long) * nc;
        if (cfg.flow.enabled) {
          // The flow counters at each alerted packet: the verdict walk writes the few it needs
          // straight into host memory (mapped), so a batch without alerts moves nothing.
          GASPP_CUDA_CHECK(cudaHostAlloc(&s.h_pkt_counts, sizeof(FlowCountsAt) * cfg.batch_packets, cudaHostAllocMapped));
          GASPP_CUDA_CHECK(cudaHostGetDevicePointer(&s.d_pkt_counts, s.h_pkt_counts, 0));
          s.batch.h_pkt_counts = s.h_pkt_counts;
        }
        if (schedule_) {
          GASPP_CUDA_CHECK(cudaMalloc(&s.d_sched_keys, sizeof(uint32_t) * 2 * cfg.batch_packets));
          GASPP_CUDA_CHECK(cudaMalloc(&s.d_sched_vals, sizeof(uint32_t) * 2 * cfg.batch_packets));
          GASPP_CUDA_CHECK(cudaMalloc(&s.d_sched_temp, sched_temp_bytes_));
          device_bytes_ += 16ull * cfg.batch_packets + sched_temp_bytes_;
        }
      }
      device_bytes_ += tables_.bytes();
    }
  }

  ~CudaBackend() override {
    detach_source();
    for (auto& s : slots_) {
      if (s.stream) cudaStreamSynchronize(s.stream);
      cudaStreamDestroy(s.stream);
      if (s.gather_stream) cudaStreamDestroy(s.gather_stream);
      if (s.gathered) cudaEventDestroy(s.gathered);
      for (auto& e : s.marks)
        if (e) cudaEventDestroy(e);
      cudaFreeHost(s.h_rec_off);
      cudaFreeHost(s.h_rec_off_staged);
      cudaFreeHost(s.h_verdict);
      cudaFreeHost(s.h_counters);
      cudaFreeHost(s.h_staging);
      cudaFree(s.d_data);
      cudaFree(s.d_heads);
      cudaFree(s.d_rec_off);
      cudaFree(s.d_verdict);
      cudaFree(s.d_counters);
      cudaFree(s.d_flow_slot);
      cudaFree(s.d_flow_flags);
      if (s.h_records) cudaFreeHost(s.h_records);
      if (s.h_record_count) cudaFreeHost(s.h_record_count);
      if (s.h_chunks) cudaFreeHost(s.h_chunks);
      if (s.h_stream_bytes) cudaFreeHost(s.h_stream_bytes);
      if (s.h_stream_counts) cudaFreeHost(s.h_stream_counts);
      cudaFree(s.d_ctx);
      cudaFree(s.d_sched_keys);
      cudaFree(s.d_sched_vals);
      cudaFree(s.d_sched_temp);
      cudaFree(s.d_module_counts);
      if (s.h_module_counts) cudaFreeHost(s.h_module_counts);
      if (s.h_events) cudaFreeHost(s.h_events);
      if (s.h_event_n) cudaFreeHost(s.h_event_n);
      if (s.h_pkt_counts) cudaFreeHost(s.h_pkt_counts);
      s.dec.release();
    }
    if (streams_) {
      for (int k = 0; k < 2; ++k) {
        cudaFree(d_held_[k]);
        cudaFree(d_pool_[k]);
      }
      cudaFree(d_stream_counts_);
      cudaFree(d_pend_);
      cudaFree(d_chunks_);
    }
    if (table_) {
      cudaFree(d_keys_);
      cudaFree(d_failed_);
      cudaFree(d_sort_temp_);
      cudaEventDestroy(flow_done_);
      cudaStreamDestroy(flush_stream_);
    }
  }

  std::string name() const override { return "cuda"; }
  std::string describe() const override {
    char b[256];
    std::snprintf(b, sizeof b, "cuda (%s, %d SMs, %zu batch slots of %u packets, %.1f MiB device memory reserved",
                  prop_.name, prop_.multiProcessorCount, slots_.size(), cfg_.batch_packets, double(device_bytes_) / 1048576.0);
    std::string d = b;
    if (part_) d += ", slice gather on " + std::to_string(part_->small_sms()) + " SMs of its own";
    else if (!part_note_.empty()) d += ", slice gather sharing every SM: " + part_note_;
    return d + ")";
  }
  int slots() const override { return int(slots_.size()); }
  PacketBatch& batch(int slot) override { return slots_[size_t(slot)].batch; }

  bool attach_source(const uint8_t* base, uint64_t len) override {
    if (registered_ && base == registered_ && len == registered_len_) return true;
    detach_source();
    if (!base || len == 0) return false;
    const cudaError_t e = cudaHostRegister(const_cast<uint8_t*>(base), len,
                                           cudaHostRegisterReadOnly | cudaHostRegisterPortable |
                                               cudaHostRegisterMapped);
    if (e != cudaSuccess) {
      cudaGetLastError();  // clear it: staging works without registration
      return false;
    }
    registered_ = base;
    registered_len_ = len;
    // The device alias of the mapping, for slicing; without one every batch is copied.
    void* alias = nullptr;
    if (cudaHostGetDevicePointer(&alias, const_cast<uint8_t*>(base), 0) != cudaSuccess) {
      cudaGetLastError();
      alias = nullptr;
    }
    d_registered_ = static_cast<const uint8_t*>(alias);
    return true;
  }
  void detach_source() override {
    if (registered_) {
      for (auto& s : slots_) cudaStreamSynchronize(s.stream);
      cudaHostUnregister(const_cast<uint8_t*>(registered_));
    }
    registered_ = nullptr;
    d_registered_ = nullptr;
    registered_len_ = 0;
  }

  void submit(int slot) override {
    Slot& s = slots_[size_t(slot)];
    PacketBatch& b = s.batch;
    const bool in_registered = registered_ && b.h_span >= registered_ && b.h_span + b.span_len <= registered_ + registered_len_;
    const double occupancy = b.span_len ? double(b.record_bytes) / double(b.span_len) : 1.0;
    // Automatic slicing only pays for batches of large packets (kSliceMinMeanRecord): a head is read
    // through the mapping, a small record is cheaper copied whole.
    const bool big_enough = cfg_.slice == BackendConfig::Slice::on ||
                            (b.count && b.record_bytes >= uint64_t(kSliceMinMeanRecord) * b.count);
    const bool sliced = slice_ && big_enough && in_registered && d_registered_ && !cfg_.force_compact;
    const bool direct = in_registered && !cfg_.force_compact && occupancy >= cfg_.compact_below &&
                        b.span_len <= staging_bytes_;
    uint64_t data_len;
    const uint32_t* rec_off;
    if (sliced) {
      // Only heads are copied; the kernels read anything else through the mapping (see the top).
      s.d_batch_data = d_registered_ + (b.h_span - registered_);
      data_len = b.span_len;
      rec_off = b.h_rec_off;
      ++sliced_;
    } else if (direct) {
      s.d_batch_data = s.d_data;
      GASPP_CUDA_CHECK(cudaMemcpyAsync(s.d_data, b.h_span, b.span_len, cudaMemcpyHostToDevice, s.stream));
      data_len = b.span_len;
      rec_off = b.h_rec_off;
      ++direct_;
    } else {
      // Pack records back to back at 16-byte boundaries into pinned staging.
      s.d_batch_data = s.d_data;
      uint64_t o = 0;
      for (uint32_t i = 0; i < b.count; ++i) {
        const uint8_t* r = b.h_span + b.h_rec_off[i];
        const uint64_t n = kRecordHeaderBytes + read_record_header(r, b.fmt).cap_len;
        std::memcpy(s.h_staging + o, r, n);
        s.h_rec_off_staged[i] = uint32_t(o);
        o += (n + 15) & ~uint64_t(15);
      }
      GASPP_CUDA_CHECK(cudaMemcpyAsync(s.d_data, s.h_staging, o, cudaMemcpyHostToDevice, s.stream));
      data_len = o;
      rec_off = s.h_rec_off_staged;
      ++compacted_;
    }
    b.compacted = !direct && !sliced;
    // A sliced batch's offsets and gather go on the gather's stream (its own SMs, when partitioned);
    // the slot's stream waits for them.
    const cudaStream_t gs = sliced && s.gather_stream ? s.gather_stream : s.stream;
    s.n_marks = 0;
    mark(s, gs, "submitted");
    GASPP_CUDA_CHECK(cudaMemcpyAsync(s.d_rec_off, rec_off, sizeof(uint32_t) * b.count, cudaMemcpyHostToDevice, gs));
    mark(s, gs, "offsets to device");
    GASPP_CUDA_CHECK(cudaMemsetAsync(s.d_counters, 0, sizeof(unsigned long long) * c_count_, s.stream));
    h2d_ += (sliced ? 0 : data_len) + sizeof(uint32_t) * b.count;
    if (b.count > 0) {
      BatchView v{s.d_batch_data, data_len, s.d_rec_off, b.count,       b.fmt,
                  b.link,         b.source, s.dec.view(), s.d_verdict, cfg_.validate_checksums, cfg_.flow.defrag};
      const int blocks = grid_blocks(b.count, blocks_cap_, DecodePolicy::kThreads);
      if (sliced) {
        // A warp a kSliceGroups records.
        const uint64_t gather_threads = (uint64_t(b.count) + kSliceGroups - 1) / kSliceGroups * 32;
        const int gather_blocks = grid_blocks(gather_threads, gather_blocks_cap_, DecodePolicy::kThreads);
        slice_gather_kernel<<<gather_blocks, DecodePolicy::kThreads, 0, gs>>>(v, d_registered_, s.d_heads);
        GASPP_CUDA_CHECK(cudaGetLastError());
        mark(s, gs, "slice gather");
      }
      if (gs != s.stream) {
        GASPP_CUDA_CHECK(cudaEventRecord(s.gathered, gs));
        GASPP_CUDA_CHECK(cudaStreamWaitEvent(s.stream, s.gathered, 0));
      }
      decode_kernel<<<blocks, DecodePolicy::kThreads, 0, s.stream>>>(v, sliced ? s.d_heads : nullptr, s.d_counters);
      GASPP_CUDA_CHECK(cudaGetLastError());
      mark(s, s.stream, "decode");
    }
    const StageArgs args = stage_args(s);
    if (!cfg_.modules.empty()) {
      *s.h_event_n = 0;  // the slot's previous batch was finished (wait) before the slot was refilled
      GASPP_CUDA_CHECK(cudaMemsetAsync(s.d_module_counts, 0,
                                       sizeof(unsigned long long) * cfg_.modules.size() * kModuleCounters, s.stream));
    }
    if (table_) flow_stage_async(s, s.dec.view(), s.d_batch_data, s.d_rec_off, args);
    else modules_async(s, args);
    if (!cfg_.modules.empty()) {
      GASPP_CUDA_CHECK(cudaMemcpyAsync(s.h_module_counts, s.d_module_counts,
                                       sizeof(unsigned long long) * cfg_.modules.size() * kModuleCounters,
                                       cudaMemcpyDeviceToHost, s.stream));
      d2h_ += sizeof(unsigned long long) * cfg_.modules.size() * kModuleCounters;
    }
    GASPP_CUDA_CHECK(cudaMemcpyAsync(s.h_verdict, s.d_verdict, b.count, cudaMemcpyDeviceToHost, s.stream));
    GASPP_CUDA_CHECK(cudaMemcpyAsync(s.h_counters, s.d_counters, sizeof(unsigned long long) * c_count_,
                                     cudaMemcpyDeviceToHost, s.stream));
    d2h_ += b.count + sizeof(unsigned long long) * c_count_;
    mark(s, s.stream, "results to host");
    if (b.want_decoded) {
      b.decoded.resize(b.capacity);
      s.dec.copy_to_host_async(b.decoded, b.count, s.stream);
      d2h_ += uint64_t(decoded_bytes_per_packet()) * b.count;
      if (table_) {
        b.flow_slot.resize(b.count);
        b.flow_flags.resize(b.count);
        // Pageable destinations: these copies complete before the stream moves on.
        GASPP_CUDA_CHECK(cudaMemcpyAsync(b.flow_slot.data(), s.d_flow_slot, sizeof(uint32_t) * b.count,
                                         cudaMemcpyDeviceToHost, s.stream));
        GASPP_CUDA_CHECK(cudaMemcpyAsync(b.flow_flags.data(), s.d_flow_flags, b.count, cudaMemcpyDeviceToHost, s.stream));
        d2h_ += 5ull * b.count;
      }
    }
  }

  void wait(int slot) override {
    Slot& s = slots_[size_t(slot)];
    GASPP_CUDA_CHECK(cudaStreamSynchronize(s.stream));
    add_stage_times(s);
    for (int k = 0; k < c_count_; ++k) s.batch.counters.v[k] = s.h_counters[k];
    s.batch.flow_records.clear();
    s.batch.stream_chunks.clear();
    s.batch.stream_bytes.clear();
    if (table_) {
      const uint32_t n = std::min(*s.h_record_count, record_capacity_);
      s.batch.flow_records.assign(s.h_records, s.h_records + n);
      sort_flow_records(s.batch.flow_records);
    }
    if (s.streams_back) collect_chunks(s, s.batch.stream_chunks, s.batch.stream_bytes);
    s.batch.events.clear();
    s.batch.module_counts.clear();
    if (!cfg_.modules.empty()) {
      s.batch.events.assign(s.h_events, s.h_events + std::min(*s.h_event_n, event_cap_));
      s.batch.module_counts.assign(s.h_module_counts, s.h_module_counts + cfg_.modules.size() * kModuleCounters);
    }
  }

  void flush_streams(std::vector<StreamChunk>& chunks, std::vector<uint8_t>& bytes, Counters& added,
                     StreamFlushModules& mods) override {
    chunks.clear();
    bytes.clear();
    mods.events.clear();
    mods.module_counts.clear();
    if (!streams_) return;
    for (auto& s : slots_) GASPP_CUDA_CHECK(cudaStreamSynchronize(s.stream));
    Slot& s = slots_[0];  // idle now: its buffers (events and module counters too) are free to use
    ensure_stream_host_buffers(s);
    GASPP_CUDA_CHECK(cudaMemsetAsync(s.d_counters, 0, sizeof(unsigned long long) * c_count_, flush_stream_));
    const size_t nc = cfg_.modules.size() * kModuleCounters;
    if (hooks_.n) {
      *s.h_event_n = 0;
      GASPP_CUDA_CHECK(cudaMemsetAsync(s.d_module_counts, 0, sizeof(unsigned long long) * nc, flush_stream_));
    }
    StreamRef sr = stream_ref(s, nullptr, nullptr, true);
    stream_walk_async(flush_stream_, sr, DecodedView{}, 0, FlowTrackParams{}, FlowRecordSink{}, s.d_flow_flags, true,
                      s.d_counters);
    stream_finish_async(flush_stream_, s, sr, DecodedView{});
    GASPP_CUDA_CHECK(cudaMemcpyAsync(s.h_counters, s.d_counters, sizeof(unsigned long long) * c_count_,
                                     cudaMemcpyDeviceToHost, flush_stream_));
    if (hooks_.n)
      GASPP_CUDA_CHECK(cudaMemcpyAsync(s.h_module_counts, s.d_module_counts, sizeof(unsigned long long) * nc,
                                       cudaMemcpyDeviceToHost, flush_stream_));
    GASPP_CUDA_CHECK(cudaStreamSynchronize(flush_stream_));
    in_ ^= 1;  // the final walk held nothing; the set it wrote is empty
    for (int k = 0; k < c_count_; ++k) added.v[k] += s.h_counters[k];
    collect_chunks(s, chunks, bytes);
    if (hooks_.n) {
      mods.events.assign(s.h_events, s.h_events + std::min(*s.h_event_n, event_cap_));
      mods.module_counts.assign(s.h_module_counts, s.h_module_counts + nc);
    }
  }

  StreamGauges stream_gauges() override {
    if (!streams_) return StreamGauges{};
    for (auto& s : slots_) GASPP_CUDA_CHECK(cudaStreamSynchronize(s.stream));
    StreamCounts c;
    GASPP_CUDA_CHECK(cudaMemcpy(&c, d_stream_counts_, sizeof c, cudaMemcpyDeviceToHost));
    return stream_gauges_of(c, cfg_.stream, held_cap_);
  }


  FlowGauges flow_gauges() override {
    FlowGauges g;
    if (!table_) return g;
    for (auto& s : slots_) GASPP_CUDA_CHECK(cudaStreamSynchronize(s.stream));
    const FlowTableState st = table_->read_state();
    g.enabled = true;
    g.capacity = table_->shape().capacity;
    g.slots = table_->shape().slots();
    g.bytes = table_->shape().bytes();
    g.live = st.live;
    g.peak = st.peak_live;
    g.emergency = st.emergency != 0;
    return g;
  }

  std::vector<FlowRecordOut> flush_flows() override {
    std::vector<FlowRecordOut> all;
    if (!table_) return all;
    for (auto& s : slots_) GASPP_CUDA_CHECK(cudaStreamSynchronize(s.stream));
    Slot& s = slots_[0];  // idle now: its record buffer and counters are free to use
    const FlowTableRef t = table_->ref();
    const FlowRecordSink out{s.d_records, s.d_record_count, record_capacity_};
    for (;;) {
      *s.h_record_count = 0;
      flow_sweep_kernel<<<blocks_cap_, FlowPolicy::kThreads, 0, flush_stream_>>>(t, 0, true, true, cfg_.flow.timeouts,
                                                                                 out, s.d_counters);
      GASPP_CUDA_CHECK(cudaGetLastError());
      GASPP_CUDA_CHECK(cudaStreamSynchronize(flush_stream_));
      const uint32_t n = std::min(*s.h_record_count, record_capacity_);
      all.insert(all.end(), s.h_records, s.h_records + n);
      if (n == 0 || table_->read_state().live == 0) break;
    }
    sort_flow_records(all);
    return all;
  }

  uint64_t batches_direct() const override { return direct_; }
  uint64_t batches_compacted() const override { return compacted_; }
  uint64_t batches_sliced() const override { return sliced_; }
  uint64_t bytes_h2d() const override { return h2d_; }
  uint64_t bytes_d2h() const override { return d2h_; }
  std::vector<StageTime> stage_times() const override { return stage_times_; }

 private:
  static constexpr int kStageMarks = 32;  // stage-time events a batch (BackendConfig::stage_times)
  struct Slot {
    cudaStream_t stream = nullptr;
    cudaStream_t gather_stream = nullptr;  // slicing on a partitioned device: the gather's SMs
    cudaEvent_t gathered = nullptr;        // the gather is done (the stream waits for it)
    uint32_t* h_rec_off = nullptr;
    uint32_t* h_rec_off_staged = nullptr;
    uint8_t* h_verdict = nullptr;
    unsigned long long* h_counters = nullptr;
    uint8_t* h_staging = nullptr;
    uint8_t* d_data = nullptr;             // the batch's records when copied
    const uint8_t* d_batch_data = nullptr; // where the kernels read this batch: d_data or the mapping
    uint8_t* d_heads = nullptr;            // slicing: each record's first kSliceHeadBytes
    uint32_t* d_rec_off = nullptr;
    uint8_t* d_verdict = nullptr;
    unsigned long long* d_counters = nullptr;
    DeviceDecoded dec;
    uint32_t* d_flow_slot = nullptr;
    uint8_t* d_flow_flags = nullptr;
    FlowRecordOut* h_records = nullptr;   // pinned, mapped: kernels write records here directly
    FlowRecordOut* d_records = nullptr;
    uint32_t* h_record_count = nullptr;
    uint32_t* d_record_count = nullptr;
    // Stream data for the host (allocated on first use): chunks and bytes pinned and mapped, and
    // the counts (chunks, bytes) copied back after the walk.
    StreamChunk* h_chunks = nullptr;
    StreamChunk* d_chunks_mapped = nullptr;
    uint8_t* h_stream_bytes = nullptr;
    uint8_t* d_stream_bytes_mapped = nullptr;
    uint32_t* h_stream_counts = nullptr;
    bool streams_back = false;  // the batch in this slot sends its streams to the host
    // Modules: context keys, counters (device, and pinned for the copy back), events (mapped).
    uint32_t* d_ctx = nullptr;
    unsigned long long* d_module_counts = nullptr;
    unsigned long long* h_module_counts = nullptr;
    ModuleEvent* h_events = nullptr;
    ModuleEvent* d_events = nullptr;
    uint32_t* h_event_n = nullptr;
    uint32_t* d_event_n = nullptr;
    // Modules with flows: the flow counters at alerted packets (mapped; the verdict walk writes them).
    FlowCountsAt* h_pkt_counts = nullptr;
    FlowCountsAt* d_pkt_counts = nullptr;
    // Scheduling: keys in and out, indices in and out (the out half is the next stage's order).
    uint32_t* d_sched_keys = nullptr;
    uint32_t* d_sched_vals = nullptr;
    void* d_sched_temp = nullptr;
    // Stage times (BackendConfig::stage_times): an event at the end of each stage, and its name.
    std::array<cudaEvent_t, kStageMarks> marks{};
    std::array<const char*, kStageMarks> mark_names{};
    int n_marks = 0;
    PacketBatch batch;
  };

  // Records the end of a stage of slot s's batch on stream st (BackendConfig::stage_times).
  void mark(Slot& s, cudaStream_t st, const char* name) {
    if (!cfg_.stage_times || s.n_marks >= kStageMarks) return;
    GASPP_CUDA_CHECK(cudaEventRecord(s.marks[size_t(s.n_marks)], st));
    s.mark_names[size_t(s.n_marks++)] = name;
  }
  // Adds slot s's finished batch to stage_times_ (after its stream was synchronized).
  void add_stage_times(Slot& s) {
    for (int k = 1; k < s.n_marks; ++k) {
      float ms = 0;
      GASPP_CUDA_CHECK(cudaEventElapsedTime(&ms, s.marks[size_t(k - 1)], s.marks[size_t(k)]));
      const std::string name = s.mark_names[size_t(k)];
      auto it = std::find_if(stage_times_.begin(), stage_times_.end(), [&](const StageTime& t) { return t.name == name; });
      if (it == stage_times_.end()) it = stage_times_.insert(stage_times_.end(), StageTime{name, 0, 0});
      it->total_us += 1000.0 * double(ms);
      ++it->batches;
    }
    s.n_marks = 0;  // counted once, whatever calls wait() again
  }
  std::vector<StageTime> stage_times_;

  StageArgs stage_args(Slot& s) {
    StageArgs a{};
    a.data = s.d_batch_data;
    a.rec_off = s.d_rec_off;
    a.count = s.batch.count;
    a.dec = s.dec.view();
    a.verdict = s.d_verdict;
    a.ctx = s.d_ctx;
    a.order = nullptr;
    a.flow_slot = table_ ? s.d_flow_slot : nullptr;
    a.flow_flags = table_ ? s.d_flow_flags : nullptr;
    if (table_) a.table = table_->ref();
    a.events = EventSinkRef{s.d_events, s.d_event_n, event_cap_};
    a.has_flows = table_ != nullptr;
    return a;
  }

  // Queues the module stages and, with flow tracking, the verdict walk (over the sorted runs the
  // flow walk used, still in d_keys_sorted_ / d_vals_sorted_: call right after the walk).
  void modules_async(Slot& s, StageArgs a) {
    if (cfg_.modules.empty() || a.count == 0) return;
    const int blocks = grid_blocks(a.count, blocks_cap_, ModulePolicy::kThreads);
    a.class_order = d_class_order_;
    a.classes = classes_;
    a.modules = uint16_t(cfg_.modules.size());
    const uint32_t n = a.count;
    for (uint16_t st = 0; st < a.modules; ++st) {
      a.stage = st;
      a.first = st == 0;
      for (uint16_t k = 0; k < a.modules; ++k) {  // each module some class runs at this stage
        if (!stage_runs_module(class_order_, classes_, st, k)) continue;
        const ModuleInstance& m = *cfg_.modules[k];
        a.module = k;
        a.state_off = m.state_off;
        launch_module_stage(m, a, blocks, s.stream, s.d_module_counts + size_t(k) * kModuleCounters);
        mark(s, s.stream, m.name());
      }
      if (schedule_ && st + 1 < a.modules && regroup_after_stage(cfg_.modules, class_order_, classes_, st)) {
        uint32_t* keys = s.d_sched_keys;
        uint32_t* idx = s.d_sched_vals;
        schedule_keys_kernel<<<blocks, ModulePolicy::kThreads, 0, s.stream>>>(a, uint16_t(st + 1), keys, idx);
        GASPP_CUDA_CHECK(cudaGetLastError());
        size_t temp = sched_temp_bytes_;
        GASPP_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(s.d_sched_temp, temp, keys, keys + cfg_.batch_packets, idx,
                                                         idx + cfg_.batch_packets, int(n), 0, classes_ > 1 ? 32 : 24,
                                                         s.stream));
        a.order = idx + cfg_.batch_packets;
        mark(s, s.stream, "schedule");
      }
    }
    if (table_) {
      const uint32_t base = streams_ ? held_cap_ : 0;
      const uint32_t items = base + a.count;
      verdict_walk_kernel<<<walk_blocks(items), FlowPolicy::kThreads, 0, s.stream>>>(
          table_->ref(), d_keys_sorted_, d_vals_sorted_, items, d_run_heads_, d_run_n_, base, s.d_flow_flags, s.d_verdict,
          cfg_.drop_invalid, a.dec.cap_len, s.d_pkt_counts, s.d_counters);
      GASPP_CUDA_CHECK(cudaGetLastError());
      mark(s, s.stream, "verdict walk");
    }
  }

  void ensure_stream_host_buffers(Slot& s) {
    if (s.h_chunks) return;
    GASPP_CUDA_CHECK(cudaHostAlloc(&s.h_chunks, sizeof(StreamChunk) * chunk_cap_, cudaHostAllocMapped));
    GASPP_CUDA_CHECK(cudaHostGetDevicePointer(&s.d_chunks_mapped, s.h_chunks, 0));
    GASPP_CUDA_CHECK(cudaHostAlloc(&s.h_stream_bytes, stream_bytes_cap(), cudaHostAllocMapped));
    GASPP_CUDA_CHECK(cudaHostGetDevicePointer(&s.d_stream_bytes_mapped, s.h_stream_bytes, 0));
    GASPP_CUDA_CHECK(cudaMallocHost(&s.h_stream_counts, 2 * sizeof(uint32_t)));
  }
  // Most chunk bytes one batch can deliver: its payload plus everything held.
  uint64_t stream_bytes_cap() const { return staging_bytes_ + cfg_.stream.held_bytes; }

  // A StreamRef over the device buffers, reading set in_ and writing the other; chunks go to the
  // slot's mapped host buffer when the host wants them.
  StreamRef stream_ref(Slot& s, const uint8_t* data, const uint32_t* rec_off, bool to_host) {
    StreamCounts* c = d_stream_counts_;
    StreamRef sr{};
    sr.cfg = cfg_.stream;
    sr.data = data;
    sr.rec_off = rec_off;
    sr.held_in = d_held_[in_];
    sr.held_in_n = &c->held_n[in_];
    sr.held_out = d_held_[in_ ^ 1];
    sr.held_out_n = &c->held_n[in_ ^ 1];
    sr.held_out_bytes = &c->live_bytes[in_ ^ 1];
    sr.pool[0] = d_pool_[0];
    sr.pool[1] = d_pool_[1];
    sr.counts = c;
    sr.held_cap = held_cap_;
    sr.pend = d_pend_;
    sr.chunks = to_host ? s.d_chunks_mapped : d_chunks_;
    sr.chunk_n = &c->chunk_n;
    sr.chunk_cap = chunk_cap_;
    sr.bytes_used = &c->bytes_used;
    sr.gather = to_host;
    sr.hooks = hooks_;
    if (hooks_.n) {
      sr.hooks.table = table_->ref();
      // The end-of-run flush (no data) has no packets to take verdicts; its events and counters go
      // to the slot's buffers all the same, which flush_streams reads back.
      sr.hooks.verdict = data == nullptr ? nullptr : s.d_verdict;
      sr.hooks.events = EventSinkRef{s.d_events, s.d_event_n, event_cap_};
      sr.hooks.counts = s.d_module_counts;
    }
    return sr;
  }

  // Queues the held keys, the sort of held segments and n packets (keys/values already written by
  // the lookup) and the walk.
  void stream_walk_async(cudaStream_t st, const StreamRef& sr, const DecodedView& dec, uint32_t n,
                         const FlowTrackParams& prm, const FlowRecordSink& out, uint8_t* flags, bool final,
                         unsigned long long* d_counters, Slot* traced = nullptr) {
    const FlowTableRef t = table_->ref();
    const uint32_t base = streams_ ? held_cap_ : 0;
    const uint32_t items = base + n;
    if (streams_) {
      stream_begin_kernel<<<1, 1, 0, st>>>(d_stream_counts_, in_, held_cap_, cfg_.stream.held_bytes);
      const int hb = grid_blocks(held_cap_, blocks_cap_);
      stream_held_keys_kernel<<<hb, FlowPolicy::kThreads, 0, st>>>(d_held_[in_], &d_stream_counts_->held_n[in_],
                                                                    held_cap_, t.slots(), d_keys_, d_vals_);
    }
    if (items == 0) return;
    int end_bit = 1;
    while (end_bit < 32 && (uint64_t(1) << end_bit) <= t.slots()) ++end_bit;
    size_t temp = sort_temp_bytes_;
    GASPP_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(d_sort_temp_, temp, d_keys_, d_keys_sorted_, d_vals_, d_vals_sorted_,
                                                     int(items), 0, end_bit, st));
    GASPP_CUDA_CHECK(cudaMemsetAsync(d_run_n_, 0, sizeof(uint32_t), st));
    run_heads_kernel<<<grid_blocks(items, blocks_cap_), FlowPolicy::kThreads, 0, st>>>(d_keys_sorted_, items, t.slots(),
                                                                                       d_run_heads_, d_run_n_);
    if (traced) mark(*traced, st, "flow sort");
    auto walk = streams_ ? flow_walk_kernel<true> : flow_walk_kernel<false>;
    walk<<<walk_blocks(items), FlowPolicy::kThreads, 0, st>>>(t, dec, d_keys_sorted_, d_vals_sorted_, items, d_run_heads_,
                                                              d_run_n_, prm, out, flags, sr, final, d_counters);
    GASPP_CUDA_CHECK(cudaGetLastError());
    if (traced) mark(*traced, st, "flow walk");
  }

  // After the walk: the chunk bytes to the host (when wanted) and the counts back.
  void stream_finish_async(cudaStream_t st, Slot& s, const StreamRef& sr, const DecodedView& dec) {
    if (!sr.gather) return;
    stream_gather_kernel<<<blocks_cap_, FlowPolicy::kThreads, 0, st>>>(sr, dec, sr.chunks, s.d_stream_bytes_mapped);
    GASPP_CUDA_CHECK(cudaGetLastError());
    GASPP_CUDA_CHECK(cudaMemcpyAsync(s.h_stream_counts, &d_stream_counts_->chunk_n, 2 * sizeof(uint32_t),
                                     cudaMemcpyDeviceToHost, st));
  }

  void collect_chunks(Slot& s, std::vector<StreamChunk>& chunks, std::vector<uint8_t>& bytes) {
    const uint32_t n = std::min(s.h_stream_counts[0], chunk_cap_);
    const uint64_t nbytes = std::min<uint64_t>(s.h_stream_counts[1], stream_bytes_cap());
    chunks.assign(s.h_chunks, s.h_chunks + n);
    bytes.assign(s.h_stream_bytes, s.h_stream_bytes + nbytes);
    sort_stream_chunks(chunks);
  }

  // Queues the flow stage of slot s (see the header comment).
  void flow_stage_async(Slot& s, const DecodedView& dec, const uint8_t* d_data, const uint32_t* d_rec_off,
                        const StageArgs& args) {
    PacketBatch& b = s.batch;
    const FlowTableRef t = table_->ref();
    const FlowTrackParams prm{cfg_.flow.timeouts, ++epoch_, cfg_.flow.midstream, cfg_.flow.vlan_in_key,
                              cfg_.drop_invalid && cfg_.stream.urgent == UrgentPolicy::drop, cfg_.flow.defrag,
                              s.d_pkt_counts};
    const uint32_t n = b.count;
    const uint32_t base = streams_ ? held_cap_ : 0;  // item number of packet 0
    *s.h_record_count = 0;  // the slot's previous batch was finished (wait) before the slot was refilled
    const FlowRecordSink out{s.d_records, s.d_record_count, record_capacity_};
    if (flow_started_) GASPP_CUDA_CHECK(cudaStreamWaitEvent(s.stream, flow_done_, 0));
    flow_started_ = true;
    mark(s, s.stream, "wait for the previous flow stage");
    const int blocks_n = grid_blocks(n, blocks_cap_);
    if (n > 0) {
      flow_lookup_kernel<<<blocks_n, FlowPolicy::kThreads, 0, s.stream>>>(t, dec, n, prm, s.d_flow_slot, s.d_flow_flags,
                                                                          d_keys_, d_vals_, base, d_failed_, s.d_counters);
      flow_retry_kernel<<<blocks_n, FlowPolicy::kThreads, 0, s.stream>>>(t, dec, prm, d_failed_, s.d_flow_slot, d_keys_,
                                                                         base, out, cfg_.untracked_drop ? s.d_verdict : nullptr,
                                                                         s.d_counters);
    }
    flow_tick_kernel<<<1, 1, 0, s.stream>>>(t.state, t.capacity, cfg_.flow.emergency_enter_pct,
                                            cfg_.flow.emergency_recover_pct, s.d_counters);
    mark(s, s.stream, "flow lookup");
    s.streams_back = streams_ && b.want_streams;
    if (s.streams_back) ensure_stream_host_buffers(s);
    const StreamRef sr = streams_ ? stream_ref(s, d_data, d_rec_off, s.streams_back) : StreamRef{};
    stream_walk_async(s.stream, sr, dec, n, prm, out, s.d_flow_flags, false, s.d_counters, &s);
    if (streams_) {
      stream_finish_async(s.stream, s, sr, dec);
      in_ ^= 1;  // what this batch holds is what the next one reads
    }
    modules_async(s, args);  // before the sweep: records leaving the table carry the flow's decision
    const bool due = b.max_ts_ns >= next_sweep_ns_;
    if (due) next_sweep_ns_ = b.max_ts_ns + cfg_.flow.sweep_interval_ns;
    flow_sweep_kernel<<<blocks_cap_, FlowPolicy::kThreads, 0, s.stream>>>(t, b.max_ts_ns, due, false,
                                                                          cfg_.flow.timeouts, out, s.d_counters);
    GASPP_CUDA_CHECK(cudaGetLastError());
    mark(s, s.stream, "flow sweep");
    GASPP_CUDA_CHECK(cudaEventRecord(flow_done_, s.stream));
  }
  static constexpr uint32_t kSweepRecords = 65536;
  std::unique_ptr<DeviceFlowTable> table_;
  bool streams_ = false;
  uint32_t held_cap_ = 0, chunk_cap_ = 0;
  StreamHeld* d_held_[2] = {nullptr, nullptr};  // the out-of-order buffer, two sets used in turn
  uint8_t* d_pool_[2] = {nullptr, nullptr};
  StreamCounts* d_stream_counts_ = nullptr;
  StreamPending* d_pend_ = nullptr;              // the walk's scratch, one entry per sorted item
  StreamChunk* d_chunks_ = nullptr;              // chunks when the host does not want them
  int in_ = 0;                                   // the set the next walk reads
  DeviceTables tables_;                          // module tables
  uint32_t event_cap_ = 0;
  StreamHooks hooks_{};                          // modules with on_stream (views in device memory)
  std::vector<uint16_t> class_order_;            // classes x stages (host copy)
  const uint16_t* d_class_order_ = nullptr;
  uint16_t classes_ = 1;
  bool schedule_ = false;
  size_t sched_temp_bytes_ = 0;
  // One allocation: keys, values, sorted keys, sorted values, the first item of each run of the
  // sorted keys (run_heads_kernel) and how many runs there are.
  uint32_t* d_keys_ = nullptr;
  uint32_t* d_vals_ = nullptr;
  uint32_t* d_keys_sorted_ = nullptr;
  uint32_t* d_vals_sorted_ = nullptr;
  uint32_t* d_run_heads_ = nullptr;
  uint32_t* d_run_n_ = nullptr;
  uint32_t* d_failed_ = nullptr;
  void* d_sort_temp_ = nullptr;
  size_t sort_temp_bytes_ = 0;
  uint32_t record_capacity_ = 0;
  uint32_t epoch_ = 0;
  uint64_t next_sweep_ns_ = 0;
  bool flow_started_ = false;
  cudaEvent_t flow_done_ = nullptr;
  cudaStream_t flush_stream_ = nullptr;
  BackendConfig cfg_;
  std::vector<Slot> slots_;
  int device_ = 0;
  cudaDeviceProp prop_{};
  uint64_t staging_bytes_ = 0;
  uint64_t device_bytes_ = 0;
  int blocks_cap_ = 1, walk_blocks_cap_ = 1, gather_blocks_cap_ = 1;
  // A grid of a block of `threads` per that many items, at least one and at most cap blocks.
  static int grid_blocks(uint64_t items, int cap, int threads = FlowPolicy::kThreads) {
    return int(std::max<uint64_t>(1, std::min<uint64_t>(uint64_t(cap), (items + uint64_t(threads) - 1) / uint64_t(threads))));
  }
  int walk_blocks(uint64_t items) const { return grid_blocks(items, walk_blocks_cap_); }
  const uint8_t* registered_ = nullptr;
  const uint8_t* d_registered_ = nullptr;  // device alias of the mapping (null: none, no slicing)
  uint64_t registered_len_ = 0;
  bool slice_ = false;
  std::unique_ptr<SmPartition> part_;  // slicing: the gather's SMs and the rest (null: not partitioned)
  std::string part_note_;              // why not, when the driver refused
  uint64_t direct_ = 0, compacted_ = 0, sliced_ = 0, h2d_ = 0, d2h_ = 0;
};

}  // namespace

bool cuda_usable(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    if (why) *why = e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device";
    cudaGetLastError();
    return false;
  }
  return true;
}

std::unique_ptr<Backend> make_cuda_backend(const BackendConfig& cfg) {
  std::string why;
  if (!cuda_usable(&why)) throw std::runtime_error("no usable CUDA device: " + why);
  return std::make_unique<CudaBackend>(cfg);
}

}  // namespace gaspp
