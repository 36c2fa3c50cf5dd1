#include "backend/cuda/decode_kernels.cuh"

#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/kernel_util.cuh"
#include "decode/decoder.hpp"

namespace gaspp {
namespace {

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

}  // namespace

void launch_slice_gather(const BatchView& b, const uint8_t* lo, uint8_t* heads, int blocks_cap, cudaStream_t st) {
  // A warp a kSliceGroups records.
  const uint64_t threads = (uint64_t(b.count) + kSliceGroups - 1) / kSliceGroups * 32;
  slice_gather_kernel<<<grid_blocks(threads, blocks_cap, DecodePolicy::kThreads), DecodePolicy::kThreads, 0, st>>>(b, lo,
                                                                                                                  heads);
  GASPP_CUDA_CHECK(cudaGetLastError());
}

void launch_decode(const BatchView& b, const uint8_t* heads, unsigned long long* d_counters, int blocks_cap,
                   cudaStream_t st) {
  decode_kernel<<<grid_blocks(b.count, blocks_cap, DecodePolicy::kThreads), DecodePolicy::kThreads, 0, st>>>(b, heads,
                                                                                                            d_counters);
  GASPP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace gaspp
