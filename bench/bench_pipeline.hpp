// bench/bench_pipeline.hpp — what the CUDA pipeline benchmarks share: the physical limits of the
// machine (pinned H2D/D2H bandwidth, device-memory bandwidth); the batches and timed passes are in
// bench_host.hpp.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "bench_util.hpp"
#include "capture/capture_file.hpp"

namespace gaspp::bench {

// The device's properties; exits with the reason when no CUDA device is usable.
inline cudaDeviceProp require_cuda(const char* prog) {
  std::string why;
  if (!cuda_usable(&why)) {
    std::fprintf(stderr, "%s: needs a CUDA device: %s\n", prog, why.c_str());
    std::exit(1);
  }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  return prop;
}

struct Bandwidth {
  double h2d_64k, h2d_1m, h2d_64m, d2h_64k, d2h_1m, d2h_64m, dev_copy;
};

// GB/s of repeated copies of `bytes` (pinned host <-> device), median over reps of a timed loop.
inline double copy_gbps(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, int reps) {
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  const int inner = std::max(1, int((256ull << 20) / bytes));  // ~256 MiB per timed loop
  std::vector<double> r;
  for (int rep = 0; rep < reps + 1; ++rep) {
    CK(cudaEventRecord(a, s));
    for (int i = 0; i < inner; ++i) CK(cudaMemcpyAsync(dst, src, bytes, kind, s));
    CK(cudaEventRecord(b, s));
    CK(cudaEventSynchronize(b));
    float ms;
    CK(cudaEventElapsedTime(&ms, a, b));
    if (rep) r.push_back(double(bytes) * inner / (ms * 1e-3) / 1e9);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cudaStreamDestroy(s);
  return median(r);
}

// Fills [p, p + bytes) (a multiple of 8) with pseudo-random bytes: copies are never timed on
// zero-filled data.
inline void fill_random(uint8_t* p, size_t bytes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i + 8 <= bytes; i += 8) {
    const uint64_t v = rng();
    std::memcpy(p + i, &v, 8);
  }
}

inline Bandwidth measure_bandwidth(int reps) {
  Bandwidth bw{};
  const size_t big = 64ull << 20;
  uint8_t* h;
  void* d;
  CK(cudaMallocHost(&h, big));
  CK(cudaMalloc(&d, big));
  fill_random(h, big, 1);
  bw.h2d_64k = copy_gbps(d, h, 64 << 10, cudaMemcpyHostToDevice, reps);
  bw.h2d_1m = copy_gbps(d, h, 1 << 20, cudaMemcpyHostToDevice, reps);
  bw.h2d_64m = copy_gbps(d, h, big, cudaMemcpyHostToDevice, reps);
  bw.d2h_64k = copy_gbps(h, d, 64 << 10, cudaMemcpyDeviceToHost, reps);
  bw.d2h_1m = copy_gbps(h, d, 1 << 20, cudaMemcpyDeviceToHost, reps);
  bw.d2h_64m = copy_gbps(h, d, big, cudaMemcpyDeviceToHost, reps);
  const size_t dev = 1ull << 30;
  void *d1, *d2;
  CK(cudaMalloc(&d1, dev));
  CK(cudaMalloc(&d2, dev));
  CK(cudaMemset(d1, 0x5a, dev));
  bw.dev_copy = 2 * copy_gbps(d2, d1, dev, cudaMemcpyDeviceToDevice, reps);  // read + write
  cudaFree(d1);
  cudaFree(d2);
  cudaFree(d);
  cudaFreeHost(h);
  return bw;
}

}  // namespace gaspp::bench
