// backend/cuda/kernel_util.cuh — what the kernels of the CUDA backend share: counters kept per
// block in shared memory and flushed once, and the grid size rule.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "decode/counters.hpp"

namespace gaspp {

struct SharedCounterSink {
  unsigned long long* s;
  __device__ void add(int i, uint64_t n) { atomicAdd(&s[i], static_cast<unsigned long long>(n)); }
};

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

// A grid of a block of `threads` per that many items, at least one and at most cap blocks.
inline int grid_blocks(uint64_t items, int cap, int threads) {
  return int(std::max<uint64_t>(1, std::min<uint64_t>(uint64_t(cap), (items + uint64_t(threads) - 1) / uint64_t(threads))));
}

}  // namespace gaspp
