// bench/device_matchers.cu — see device_matchers.cuh.
#include <cuda_runtime.h>

#include <algorithm>

#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/device_buffer.hpp"
#include "backend/cuda/device_memory.hpp"
#include "bench/device_matchers.cuh"

namespace gaspp::bench {
namespace {

enum Mode { kHashThread, kAcThread, kHashWarp, kAcWarp };

template <int M>
__global__ void match_kernel(DetectView v, const uint8_t* bytes, const uint64_t* off, const uint32_t* len, uint32_t n,
                             unsigned long long* hits) {
  uint64_t h = 0;
  auto count = [&](uint32_t, uint32_t = 0) { ++h; };
  const uint32_t tid = blockIdx.x * blockDim.x + threadIdx.x, all = gridDim.x * blockDim.x;
  if constexpr (M == kHashThread || M == kAcThread) {
    for (uint32_t p = tid; p < n; p += all) {
      if constexpr (M == kHashThread) prefilter_scan(v.pf, bytes + off[p], len[p], count);
      else ac_scan(v.ac, v.pf, bytes + off[p], len[p], count);
    }
  } else {
    const uint32_t lane = threadIdx.x & 31, warp = tid >> 5, warps = all >> 5;
    for (uint32_t p = warp; p < n; p += warps) {
      const uint8_t* b = bytes + off[p];
      const uint32_t m = len[p];
      if constexpr (M == kHashWarp) {
        for (uint32_t i = lane; i < m; i += 32) prefilter_at(v.pf, b, m, i, count);
      } else {
        const uint32_t part = (m + 31) / 32, lo = min(m, lane * part), hi = min(m, lo + part);
        const uint32_t back = v.ac.max_len ? v.ac.max_len - 1 : 0;
        if (lo < hi) ac_scan_range(v.ac, v.pf, b, lo > back ? lo - back : 0, lo, hi, count);
      }
    }
  }
  for (int d = 16; d; d >>= 1) h += __shfl_down_sync(0xffffffffu, h, d);
  if ((threadIdx.x & 31) == 0 && h) atomicAdd(hits, (unsigned long long)h);
}

template <int M>
double run_one(const DetectView& v, const uint8_t* bytes, const uint64_t* off, const uint32_t* len, uint32_t n,
               unsigned long long* d_hits, uint64_t* hits, int reps) {
  int sms = 0, dev = 0;
  GASPP_CUDA_CHECK(cudaGetDevice(&dev));
  GASPP_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  const int threads = 256, blocks = sms * 8;
  CudaEvent a = CudaEvent::make(), b = CudaEvent::make();
  std::vector<double> t;
  for (int r = 0; r < reps + 1; ++r) {
    GASPP_CUDA_CHECK(cudaMemset(d_hits, 0, sizeof(unsigned long long)));
    GASPP_CUDA_CHECK(cudaEventRecord(a, 0));
    match_kernel<M><<<blocks, threads>>>(v, bytes, off, len, n, d_hits);
    GASPP_CUDA_CHECK(cudaGetLastError());
    GASPP_CUDA_CHECK(cudaEventRecord(b, 0));
    GASPP_CUDA_CHECK(cudaEventSynchronize(b));
    float ms = 0;
    GASPP_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    if (r) t.push_back(ms / 1e3);
  }
  unsigned long long h = 0;
  GASPP_CUDA_CHECK(cudaMemcpy(&h, d_hits, sizeof h, cudaMemcpyDeviceToHost));
  *hits = h;
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

std::vector<DeviceMatcherFigures> device_matchers_alone(DetectModule::Host& host, const uint8_t* bytes,
                                                        const std::vector<std::pair<uint64_t, uint32_t>>& payloads,
                                                        int reps) {
  DeviceTables mem;
  const DetectView v = host.upload(mem);
  std::vector<uint8_t> packed;
  std::vector<uint64_t> off;
  std::vector<uint32_t> len;
  for (const auto& [o, l] : payloads) {
    off.push_back(packed.size());
    len.push_back(l);
    packed.insert(packed.end(), bytes + o, bytes + o + l);
  }
  DeviceBuffer<uint8_t> d_bytes(std::max<size_t>(packed.size(), 1));
  DeviceBuffer<uint64_t> d_off(std::max<size_t>(off.size(), 1));
  DeviceBuffer<uint32_t> d_len(std::max<size_t>(len.size(), 1));
  DeviceBuffer<unsigned long long> d_hits(1);
  GASPP_CUDA_CHECK(cudaMemcpy(d_bytes.get(), packed.data(), packed.size(), cudaMemcpyHostToDevice));
  GASPP_CUDA_CHECK(cudaMemcpy(d_off.get(), off.data(), off.size() * 8, cudaMemcpyHostToDevice));
  GASPP_CUDA_CHECK(cudaMemcpy(d_len.get(), len.data(), len.size() * 4, cudaMemcpyHostToDevice));
  const uint32_t n = uint32_t(payloads.size());
  std::vector<DeviceMatcherFigures> out(4);
  out[0].name = "hash/thread";
  out[0].seconds = run_one<kHashThread>(v, d_bytes.get(), d_off.get(), d_len.get(), n, d_hits.get(), &out[0].hits, reps);
  out[1].name = "ac/thread";
  out[1].seconds = run_one<kAcThread>(v, d_bytes.get(), d_off.get(), d_len.get(), n, d_hits.get(), &out[1].hits, reps);
  out[2].name = "hash/warp";
  out[2].seconds = run_one<kHashWarp>(v, d_bytes.get(), d_off.get(), d_len.get(), n, d_hits.get(), &out[2].hits, reps);
  out[3].name = "ac/warp";
  out[3].seconds = run_one<kAcWarp>(v, d_bytes.get(), d_off.get(), d_len.get(), n, d_hits.get(), &out[3].hits, reps);
  return out;
}

}  // namespace gaspp::bench
