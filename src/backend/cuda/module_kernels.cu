#include "backend/cuda/module_kernels.cuh"

#include <stdexcept>
#include <string>

#include "backend/cuda/cuda_check.hpp"
#include "core/module_stage.hpp"
#include "modules/registry.hpp"

namespace gaspp {
namespace {

// Runs body(s) with the block's module counters s in shared memory, then adds them to d_counts.
template <class F>
__device__ __forceinline__ void with_block_counters(unsigned long long* d_counts, F&& body) {
  __shared__ unsigned long long s[kModuleCounters];
  for (int k = threadIdx.x; k < kModuleCounters; k += blockDim.x) s[k] = 0;
  __syncthreads();
  body(s);
  __syncthreads();
  for (int k = threadIdx.x; k < kModuleCounters; k += blockDim.x)
    if (s[k]) atomicAdd(&d_counts[k], s[k]);
}

// One module stage over the batch: the block's module counters in shared memory, flushed once.
template <class M>
__global__ void __launch_bounds__(ModulePolicy::kThreads)
module_stage_kernel(StageArgs a, typename M::View v, unsigned long long* d_counts) {
  with_block_counters(d_counts, [&](unsigned long long* s) {
    for (uint32_t k = blockIdx.x * blockDim.x + threadIdx.x; k < a.count; k += gridDim.x * blockDim.x)
      module_stage_packet<M>(a, v, k, s);
  });
}

// The stage's retry pass (module_stage_retry): a kernel of its own, so that what only the retry
// runs (the detection module's regex search) does not weigh on the stage kernel's registers and
// code.
template <class M>
__global__ void __launch_bounds__(ModulePolicy::kThreads)
module_retry_kernel(StageArgs a, typename M::View v, unsigned long long* d_counts) {
  with_block_counters(d_counts, [&](unsigned long long* s) {
    const uint32_t n = module_retry_count(a);
    for (uint32_t e = blockIdx.x * blockDim.x + threadIdx.x; e < n; e += gridDim.x * blockDim.x)
      module_stage_retry<M>(a, v, e, s);
  });
}

template <class M>
void launch_stage_of(const StageArgs& a, const typename M::View& v, int blocks, cudaStream_t st,
                     unsigned long long* d_counts) {
  if constexpr (HasOnIpRetry<M>) {
    if (a.retry_n) GASPP_CUDA_CHECK(cudaMemsetAsync(a.retry_n, 0, sizeof(uint32_t), st));
  }
  module_stage_kernel<M><<<blocks, ModulePolicy::kThreads, 0, st>>>(a, v, d_counts);
  GASPP_CUDA_CHECK(cudaGetLastError());
  if constexpr (HasOnIpRetry<M>) {
    if (a.retry_n) {
      module_retry_kernel<M><<<blocks, ModulePolicy::kThreads, 0, st>>>(a, v, d_counts);
      GASPP_CUDA_CHECK(cudaGetLastError());
    }
  }
}

// Scheduling: the key of every packet for the next stage (core/module_stage.hpp) and its index.
__global__ void __launch_bounds__(ModulePolicy::kThreads)
schedule_keys_kernel(StageArgs a, uint16_t next_stage, uint32_t* keys, uint32_t* vals) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < a.count; i += gridDim.x * blockDim.x) {
    keys[i] = schedule_key(a, i, next_stage);
    vals[i] = i;
  }
}

}  // namespace

void launch_module_stage(const ModuleInstance& m, const void* view, const StageArgs& a, int blocks, cudaStream_t st,
                         unsigned long long* d_counts) {
  int type = 0;
#define GASPP_X(M)                                                                                      \
  if (m.type() == type++) {                                                                             \
    launch_stage_of<M>(a, *static_cast<const typename M::View*>(view), blocks, st, d_counts);             \
    return;                                                                                             \
  }
  GASPP_MODULE_TYPES(GASPP_X)
#undef GASPP_X
  throw std::logic_error(std::string("module type not built into the CUDA backend: ") + m.name());
}

void launch_schedule_keys(int blocks, cudaStream_t st, const StageArgs& a, uint16_t next_stage, uint32_t* keys,
                          uint32_t* vals) {
  schedule_keys_kernel<<<blocks, ModulePolicy::kThreads, 0, st>>>(a, next_stage, keys, vals);
  GASPP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace gaspp
