// bench/bench_pipeline.hpp — what the pipeline benchmarks share: the physical limits of the
// machine (pinned H2D/D2H bandwidth, device-memory bandwidth), a capture indexed into batches
// beforehand, and one timed pass of those batches through a backend's rotating slots.
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

// The options the pipeline benchmarks share (--json PATH, --reps N, --packets N, --tmp DIR,
// --batch N: packets per batch, --gather-sms N: BackendConfig::gather_sms, --stage-times: print
// where CUDA batches spent their time, BackendConfig::stage_times) plus one of the program's own
// (`extra_flag`, its value in `extra`).
struct BenchArgs {
  std::string json, tmp = "/tmp", extra;
  int reps = 3;
  uint64_t packets = 0;
  uint32_t batch = 65536;
  int gather_sms = 0;
  bool stage_times = false;
};

// Parses argv into a (its defaults as given); prints the usage and returns false on anything else.
inline bool parse_bench_args(int argc, char** argv, const char* prog, const char* extra_flag, const char* extra_value,
                             BenchArgs& a) {
  for (int i = 1; i < argc; ++i) {
    const std::string o = argv[i];
    const bool value = i + 1 < argc;
    if (value && o == "--json") a.json = argv[++i];
    else if (value && o == "--reps") a.reps = std::atoi(argv[++i]);
    else if (value && o == "--packets") a.packets = std::strtoull(argv[++i], nullptr, 10);
    else if (value && o == "--tmp") a.tmp = argv[++i];
    else if (value && o == "--batch" && std::strtoul(argv[i + 1], nullptr, 10) > 0)
      a.batch = uint32_t(std::strtoul(argv[++i], nullptr, 10));
    else if (value && o == "--gather-sms") a.gather_sms = std::atoi(argv[++i]);
    else if (value && o == extra_flag) a.extra = argv[++i];
    else if (o == "--stage-times") a.stage_times = true;
    else {
      std::fprintf(stderr, "usage: %s [--json PATH] [--reps N] [--packets N] [--tmp DIR] [--batch N] [--gather-sms N] [--stage-times] [%s %s]\n", prog, extra_flag,
                   extra_value);
      return false;
    }
  }
  return true;
}

// Prints a backend's stage times (BackendConfig::stage_times), the mean per batch, under `label`.
inline void print_stage_times(const Backend& be, const std::string& label) {
  const std::vector<StageTime> st = be.stage_times();
  if (st.empty()) return;
  std::printf("  stage times, %s (mean us a batch):", label.c_str());
  for (const StageTime& t : st) std::printf(" %s %.1f;", t.name.c_str(), t.mean_us());
  std::printf("\n");
}

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

// Packets and record bytes (16-byte header + captured bytes) of a capture.
struct CaptureSize {
  uint64_t packets = 0, record_bytes = 0;
  double mean_record() const { return double(record_bytes) / double(packets); }
};
inline CaptureSize capture_size(const CaptureFile& cap) {
  CaptureSize z;
  RecordWalker wk(cap);
  RecordInfo r;
  while (wk.next(r)) {
    ++z.packets;
    z.record_bytes += 16 + r.cap_len;
  }
  return z;
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

struct BatchDesc {
  uint64_t span_off, span_len, record_bytes, max_ts_ns;
  std::vector<uint32_t> rec_off;
};

inline std::vector<BatchDesc> index_batches(const CaptureFile& cap, uint32_t per_batch) {
  std::vector<BatchDesc> out;
  RecordWalker w(cap);
  RecordInfo r;
  BatchDesc cur{};
  auto close = [&] {
    if (cur.rec_off.empty()) return;
    out.push_back(std::move(cur));
    cur = BatchDesc{};
  };
  while (w.next(r)) {
    if (cur.rec_off.size() == per_batch) close();
    if (cur.rec_off.empty()) cur.span_off = r.offset;
    cur.rec_off.push_back(uint32_t(r.offset - cur.span_off));
    cur.record_bytes += 16 + r.cap_len;
    cur.max_ts_ns = std::max(cur.max_ts_ns, r.ts_ns);
    cur.span_len = r.offset + 16 + r.cap_len - cur.span_off;
  }
  close();
  return out;
}


// One timed pass: every batch through the slots, as the pipeline does, offsets already indexed.
// Returns seconds; the batches' counters are added to `totals` when given.
inline double one_pass(Backend& be, const CaptureFile& cap, const std::vector<BatchDesc>& batches, uint64_t* packets_out,
                       Counters* totals = nullptr, std::vector<uint64_t>* module_counts = nullptr) {
  const int n = be.slots();
  std::vector<bool> busy(size_t(n), false);
  uint64_t packets = 0;
  const auto t0 = std::chrono::steady_clock::now();
  auto finish = [&](int s) {
    be.wait(s);
    const PacketBatch& b = be.batch(s);
    packets += b.counters.v[c_packets];
    if (totals)
      for (int k = 0; k < c_count_; ++k) totals->v[k] += b.counters.v[k];
    if (module_counts) {
      module_counts->resize(b.module_counts.size());
      for (size_t k = 0; k < b.module_counts.size(); ++k) (*module_counts)[k] += b.module_counts[k];
    }
  };
  int slot = 0;
  for (const auto& d : batches) {
    if (busy[size_t(slot)]) finish(slot);
    PacketBatch& b = be.batch(slot);
    b.count = uint32_t(d.rec_off.size());
    std::memcpy(b.h_rec_off, d.rec_off.data(), d.rec_off.size() * 4);
    b.h_span = cap.data() + d.span_off;
    b.span_len = d.span_len;
    b.record_bytes = d.record_bytes;
    b.fmt = cap.format();
    b.link = cap.link();
    b.source = 0;
    b.want_decoded = false;
    b.max_ts_ns = d.max_ts_ns;
    be.submit(slot);
    busy[size_t(slot)] = true;
    slot = (slot + 1) % n;
  }
  for (int k = 0; k < n; ++k) {
    const int s = (slot + k) % n;
    if (busy[size_t(s)]) finish(s);
  }
  *packets_out = packets;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// one_pass over the whole capture, attached for the pass, that must process `packets` packets
// (else the program ends, saying so as `prog`). Returns seconds.
inline double checked_pass(Backend& be, const CaptureFile& cap, const std::vector<BatchDesc>& batches, uint64_t packets,
                           const char* prog, std::vector<uint64_t>* module_counts = nullptr) {
  be.attach_source(cap.data(), cap.size());
  uint64_t pk = 0;
  const double s = one_pass(be, cap, batches, &pk, nullptr, module_counts);
  if (pk != packets) {
    std::fprintf(stderr, "%s: %s processed %llu packets, expected %llu\n", prog, be.name().c_str(), (unsigned long long)pk,
                 (unsigned long long)packets);
    std::exit(1);
  }
  be.detach_source();
  return s;
}


}  // namespace gaspp::bench
