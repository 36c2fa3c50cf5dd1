// bench/bench_decode.cpp — transfer limits, and pipeline throughput (decode alone, and decode +
// flow tracking), CUDA vs CPU, in one run.
//
// Measures, on the machine it runs on:
//   1. the physical limits: pinned H2D and D2H bandwidth at 64 KiB, 1 MiB and 64 MiB per copy, and
//      device-memory bandwidth (a 1 GiB device-to-device copy, bytes read + written);
//   2. throughput from host memory, PCIe included: a generated capture (64 and 1514-byte frames,
//      the realistic mix, and the HTTP workload of many ~870-packet connections) is indexed into
//      batches beforehand, then the batches are pushed through the backend's rotating slots (H2D of
//      the records, decode kernel, [flow stage], D2H of verdicts and counters) — CUDA at 64k and
//      128k-packet batches, and the CPU backend on all host threads; each with flow tracking off
//      and on. Passes repeat over the same capture, so after the first pass flows are found rather
//      than created. Median of several timed passes after a warm-up pass.
// Prints a table and writes JSON (--json PATH) with every figure. The data is generated traffic
// (random payloads, never zero-filled).
//
// usage: bench_decode [--json PATH] [--reps N] [--scale F] [--tmp DIR]
#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backend/backend.hpp"
#include "capture/capture_file.hpp"
#include "tools/gen/generator.hpp"
#include "bench_pipeline.hpp"
#include "bench_util.hpp"

using namespace gaspp;
using Clock = std::chrono::steady_clock;
using bench::median;
using namespace gaspp::bench;

namespace {

struct Throughput {
  double mpps, gbps;  // gbps: wire bytes of the frames
  uint64_t packets, bytes;
};

struct Workload {
  std::string name;
  GenConfig cfg;
};

Throughput measure(Backend& be, const CaptureFile& cap, const std::vector<BatchDesc>& batches, uint64_t wire_bytes,
                   uint64_t expect_packets, int reps) {
  be.attach_source(cap.data(), cap.size());
  std::vector<double> t;
  for (int rep = 0; rep < reps + 1; ++rep) {
    uint64_t pk = 0;
    const double s = one_pass(be, cap, batches, &pk);
    if (pk != expect_packets) {
      std::fprintf(stderr, "bench: %s processed %llu packets, expected %llu\n", be.name().c_str(),
                   (unsigned long long)pk, (unsigned long long)expect_packets);
      std::exit(1);
    }
    if (rep) t.push_back(s);
  }
  be.flush_flows();
  be.detach_source();
  const double s = median(t);
  return {double(expect_packets) / s / 1e6, double(wire_bytes) * 8 / s / 1e9, expect_packets, wire_bytes};
}

}  // namespace

int main(int argc, char** argv) {
  std::string json_path, tmp = "/tmp";
  int reps = 5;
  double scale = 1.0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json" && i + 1 < argc) json_path = argv[++i];
    else if (a == "--reps" && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (a == "--scale" && i + 1 < argc) scale = std::atof(argv[++i]);
    else if (a == "--tmp" && i + 1 < argc) tmp = argv[++i];
    else { std::fprintf(stderr, "usage: bench_decode [--json PATH] [--reps N] [--scale F] [--tmp DIR]\n"); return 1; }
  }
  std::string why;
  if (!cuda_usable(&why)) { std::fprintf(stderr, "bench_decode: needs a CUDA device: %s\n", why.c_str()); return 1; }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const int host_threads = int(std::thread::hardware_concurrency());

  std::printf("device: %s, %d SMs; host threads: %d\n", prop.name, prop.multiProcessorCount, host_threads);
  const Bandwidth bw = measure_bandwidth(reps);
  std::printf("limits: H2D %.1f / %.1f / %.1f GB/s (64 KiB / 1 MiB / 64 MiB), D2H %.1f / %.1f / %.1f GB/s, "
              "device memory %.0f GB/s\n",
              bw.h2d_64k, bw.h2d_1m, bw.h2d_64m, bw.d2h_64k, bw.d2h_1m, bw.d2h_64m, bw.dev_copy);

  // Sized so that each workload is a few hundred MB: long enough for steady state.
  auto fixed = [&](uint32_t size, uint64_t packets) {
    GenConfig g;
    g.mode = GenMode::fixed;
    g.size = size;
    g.packets = uint64_t(double(packets) * scale);
    g.flows = 4096;
    return Workload{"fixed" + std::to_string(size), g};
  };
  std::vector<Workload> workloads = {fixed(64, 8'000'000), fixed(1514, 400'000)};
  {
    GenConfig g;
    g.mode = GenMode::mix;
    g.packets = uint64_t(1'000'000 * scale);
    g.flows = 4096;
    g.ipv6_share = 0.1;
    g.vlan_share = 0.1;
    workloads.push_back({"mix", g});
    // The paper's HTTP workload: many concurrent connections of ~870 packets each.
    GenConfig h;
    h.mode = GenMode::http;
    h.packets = uint64_t(1'000'000 * scale);
    h.flows = 10000;
    workloads.push_back({"http", h});
  }
  const uint32_t batch_sizes[] = {65536, 131072};

  std::string json = "{\"device\":\"" + std::string(prop.name) + "\",\"sms\":" + std::to_string(prop.multiProcessorCount) +
                     ",\"host_threads\":" + std::to_string(host_threads) + ",\"reps\":" + std::to_string(reps) + ",";
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "\"limits\":{\"h2d_gbs_64k\":%.2f,\"h2d_gbs_1m\":%.2f,\"h2d_gbs_64m\":%.2f,\"d2h_gbs_64k\":%.2f,"
                "\"d2h_gbs_1m\":%.2f,\"d2h_gbs_64m\":%.2f,\"device_memory_gbs\":%.1f},",
                bw.h2d_64k, bw.h2d_1m, bw.h2d_64m, bw.d2h_64k, bw.d2h_1m, bw.d2h_64m, bw.dev_copy);
  json += buf;
  json += "\"decode\":[";
  std::printf("\n%-10s %-6s %-12s %7s %10s %9s %9s %12s %12s\n", "workload", "backend", "stages", "batch", "Mpps",
              "Gbit/s", "H2D GB/s", "limit Mpps", "% of limit");
  bool first = true;
  for (const auto& w : workloads) {
    const std::string path = tmp + "/gaspp-bench-" + w.name + ".pcap";
    generate_pcap(w.cfg, path);
    const CaptureFile cap = CaptureFile::open(path);
    uint64_t packets = 0, wire = 0, records = 0;
    {
      RecordWalker wk(cap);
      RecordInfo r;
      while (wk.next(r)) { ++packets; wire += r.wire_len; records += 16 + r.cap_len; }
    }
    // Bytes that cross PCIe per packet: its record (16-byte header + frame) and its 4-byte offset.
    const double bus_bytes_per_packet = double(records) / double(packets) + 4;
    const double limit_mpps = bw.h2d_64m * 1e9 / bus_bytes_per_packet / 1e6;
    auto row = [&](const char* backend, bool flows, uint32_t batch, const Throughput& t) {
      const double h2d = t.mpps * 1e6 * bus_bytes_per_packet / 1e9;
      const char* stages = flows ? "decode+flow" : "decode";
      std::printf("%-10s %-6s %-12s %7u %10.2f %9.2f %9.2f %12.1f %11.1f%%\n", w.name.c_str(), backend, stages, batch,
                  t.mpps, t.gbps, h2d, limit_mpps, 100 * t.mpps / limit_mpps);
      std::snprintf(buf, sizeof buf,
                    "%s{\"workload\":\"%s\",\"backend\":\"%s\",\"stages\":\"%s\",\"batch\":%u,\"packets\":%llu,"
                    "\"mean_frame_bytes\":%.1f,\"mpps\":%.3f,\"gbps\":%.3f,\"h2d_gbs\":%.3f,\"limit_mpps\":%.2f,"
                    "\"fraction_of_limit\":%.4f}",
                    first ? "" : ",", w.name.c_str(), backend, stages, batch, (unsigned long long)t.packets,
                    double(wire) / double(packets), t.mpps, t.gbps, h2d, limit_mpps, t.mpps / limit_mpps);
      json += buf;
      first = false;
    };
    for (bool flows : {false, true}) {
      for (uint32_t bs : batch_sizes) {
        BackendConfig bc;
        bc.batch_packets = bs;
        bc.batch_bytes = uint64_t(bs) * 1600;
        bc.flow.enabled = flows;
        bc.stream.enabled = false;  // decode+flow here; reassembly is bench_stream's
        bc.slice = BackendConfig::Slice::off;  // copies measured here; slicing is bench_firewall's
        auto be = make_cuda_backend(bc);
        row("cuda", flows, bs, measure(*be, cap, index_batches(cap, bs), wire, packets, reps));
      }
      BackendConfig bc;
      bc.batch_packets = 65536;
      bc.threads = host_threads;
      bc.flow.enabled = flows;
      bc.stream.enabled = false;
      bc.slice = BackendConfig::Slice::off;
      auto be = make_cpu_backend(bc);
      row("cpu", flows, 65536, measure(*be, cap, index_batches(cap, 65536), wire, packets, std::max(1, reps / 2)));
    }
    ::unlink(path.c_str());
  }
  json += "]}\n";
  return bench::write_file(json_path, json) ? 0 : 1;
}
