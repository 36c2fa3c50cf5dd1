// bench/bench_stream.cpp — TCP reassembly throughput, in one run on the machine it runs on:
//   * the physical limits (pinned H2D/D2H and device-memory bandwidth, bench_pipeline.hpp);
//   * the paper's HTTP workload (connections of ~870 packets; generator http mode) and the
//     realistic mix, each with 1k, 10k and 100k concurrent flows: Mpps for decode alone,
//     + flow tracking, + reassembly; CUDA (64k-packet batches) and our CPU backend on all host
//     threads. Every timed pass starts from an empty flow table (a fresh backend, built outside the
//     timing), so connections are created, followed from their SYN and reassembled, as live
//     traffic is. Median of --reps passes after a warm-up pass;
//   * the peer: libnids on one core (peer_libnids, given by --nids) on the same capture, read from
//     memory (the capture is written under --tmp; use /dev/shm).
// Prints a table and writes JSON (--json PATH) with every figure, the ratios and the targets.
//
// usage: bench_stream [--json PATH] [--reps N] [--packets N] [--tmp DIR] [--nids PATH]
#include <unistd.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "bench_pipeline.hpp"
#include "bench_util.hpp"
#include "capture/generator.hpp"

using namespace gaspp;
using namespace gaspp::bench;

namespace {

enum class Stages { decode, flow, stream };

struct Result {
  double mpps;
  Counters totals;
};

Result measure(bool cuda, Stages st, const CaptureFile& cap, const std::vector<BatchDesc>& batches, uint64_t packets,
               int reps, int threads) {
  std::vector<double> t;
  Result r{};
  for (int rep = 0; rep < reps + 1; ++rep) {
    BackendConfig bc;
    bc.batch_packets = 65536;
    bc.batch_bytes = 65536ull * 1600;
    bc.threads = threads;
    bc.flow.enabled = st != Stages::decode;
    bc.stream.enabled = st == Stages::stream;
    auto be = cuda ? make_cuda_backend(bc) : make_cpu_backend(bc);
    be->attach_source(cap.data(), cap.size());
    uint64_t pk = 0;
    Counters c{};
    const double s = one_pass(*be, cap, batches, &pk, &c);
    if (pk != packets) {
      std::fprintf(stderr, "bench_stream: %s processed %llu packets, expected %llu\n", be->name().c_str(),
                   (unsigned long long)pk, (unsigned long long)packets);
      std::exit(1);
    }
    be->detach_source();
    if (rep) t.push_back(s);
    r.totals = c;
  }
  r.mpps = double(packets) / median(t) / 1e6;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::string json_path, tmp = "/tmp", nids;
  int reps = 3;
  uint64_t npk = 1'000'000;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json" && i + 1 < argc) json_path = argv[++i];
    else if (a == "--reps" && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (a == "--packets" && i + 1 < argc) npk = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--tmp" && i + 1 < argc) tmp = argv[++i];
    else if (a == "--nids" && i + 1 < argc) nids = argv[++i];
    else { std::fprintf(stderr, "usage: bench_stream [--json PATH] [--reps N] [--packets N] [--tmp DIR] [--nids PATH]\n"); return 1; }
  }
  std::string why;
  if (!cuda_usable(&why)) { std::fprintf(stderr, "bench_stream: needs a CUDA device: %s\n", why.c_str()); return 1; }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const int host_threads = int(std::thread::hardware_concurrency());
  std::printf("device: %s, %d SMs; host threads: %d\n", prop.name, prop.multiProcessorCount, host_threads);
  const Bandwidth bw = measure_bandwidth(reps);
  std::printf("limits: H2D %.1f GB/s (64 MiB copies), D2H %.1f GB/s, device memory %.0f GB/s\n", bw.h2d_64m,
              bw.d2h_64m, bw.dev_copy);

  std::string json = "{\"device\":\"" + std::string(prop.name) + "\",\"host_threads\":" + std::to_string(host_threads) +
                     ",\"reps\":" + std::to_string(reps) + ",\"packets_per_workload\":" + std::to_string(npk) + ",";
  char buf[1024];
  std::snprintf(buf, sizeof buf, "\"limits\":{\"h2d_gbs_64m\":%.2f,\"d2h_gbs_64m\":%.2f,\"device_memory_gbs\":%.1f},",
                bw.h2d_64m, bw.d2h_64m, bw.dev_copy);
  json += buf;
  json += "\"workloads\":[";
  std::printf("\n%-10s %8s | %-8s %9s %9s %9s | %7s %7s | %-8s %9s | %9s %8s | %s\n", "workload", "flows", "cuda",
              "decode", "+flow", "+stream", "ovh", "ovh/dec", "cpu", "+stream", "libnids", "x nids", "limit Mpps");
  bool first = true;
  for (const char* mode : {"http", "mix"}) {
    for (uint32_t flows : {1000u, 10000u, 100000u}) {
      GenConfig g;
      g.mode = parse_gen_mode(mode);
      g.packets = npk;
      g.flows = flows;
      g.seed = 7;
      if (g.mode == GenMode::mix) {
        g.ipv6_share = 0.1;
        g.vlan_share = 0.1;
      }
      const std::string path = tmp + "/gaspp-bench-stream-" + mode + "-" + std::to_string(flows) + ".pcap";
      generate_pcap(g, path);
      const CaptureFile cap = CaptureFile::open(path);
      uint64_t packets = 0, records = 0;
      {
        RecordWalker wk(cap);
        RecordInfo r;
        while (wk.next(r)) { ++packets; records += 16 + r.cap_len; }
      }
      const double limit_mpps = bw.h2d_64m * 1e9 / (double(records) / double(packets) + 4) / 1e6;
      const auto batches = index_batches(cap, 65536);
      Result cu[3], cp[3];
      for (Stages st : {Stages::decode, Stages::flow, Stages::stream}) {
        cu[int(st)] = measure(true, st, cap, batches, packets, reps, 0);
        cp[int(st)] = measure(false, st, cap, batches, packets, std::max(1, reps / 2 + 1), host_threads);
      }
      std::string peer = "null";
      double nids_mpps = 0;
      if (!nids.empty()) {
        const std::string cmd = nids + " " + path + " " + std::to_string(std::max(1, reps / 2 + 1));
        if (std::FILE* p = ::popen(cmd.c_str(), "r")) {
          char line[512] = {};
          if (std::fgets(line, sizeof line, p)) {
            peer = line;
            while (!peer.empty() && (peer.back() == '\n' || peer.back() == '\r')) peer.pop_back();
            const auto at = peer.find("\"mpps\":");
            if (at != std::string::npos) nids_mpps = std::atof(peer.c_str() + at + 7);
          }
          ::pclose(p);
        }
      }
      const Counters& tc = cu[2].totals;
      const double ovh = 1 - cu[2].mpps / cu[0].mpps;
      const double ovh_flow = 1 - cu[2].mpps / cu[1].mpps;
      std::printf("%-10s %8u | %-8s %9.2f %9.2f %9.2f | %6.1f%% %6.1f%% | %-8s %9.2f | %9.3f %8.1f | %.1f\n", mode, flows,
                  "", cu[0].mpps, cu[1].mpps, cu[2].mpps, 100 * ovh_flow, 100 * ovh, "", cp[2].mpps, nids_mpps,
                  nids_mpps > 0 ? cu[2].mpps / nids_mpps : 0.0, limit_mpps);
      std::snprintf(buf, sizeof buf,
                    "%s{\"workload\":\"%s\",\"flows\":%u,\"packets\":%llu,\"mean_record_bytes\":%.1f,\"limit_mpps\":%.2f,"
                    "\"cuda_mpps\":{\"decode\":%.3f,\"flow\":%.3f,\"stream\":%.3f},"
                    "\"cpu_mpps\":{\"decode\":%.3f,\"flow\":%.3f,\"stream\":%.3f},"
                    "\"stream_overhead_vs_decode\":%.4f,\"stream_overhead_vs_flow\":%.4f,\"cuda_over_cpu\":%.3f,"
                    "\"cuda_over_libnids\":%s,\"stream_counters\":{\"segments\":%llu,\"in_order\":%llu,"
                    "\"out_of_order_buffered\":%llu,\"retransmissions\":%llu,\"bytes\":%llu,\"gaps\":%llu,"
                    "\"out_of_order_dropped\":%llu},\"libnids\":%s}",
                    first ? "" : ",", mode, flows, (unsigned long long)packets, double(records) / double(packets),
                    limit_mpps, cu[0].mpps, cu[1].mpps, cu[2].mpps, cp[0].mpps, cp[1].mpps, cp[2].mpps, ovh, ovh_flow,
                    cu[2].mpps / cp[2].mpps, nids_mpps > 0 ? std::to_string(cu[2].mpps / nids_mpps).c_str() : "null",
                    (unsigned long long)tc.v[c_stream_segments], (unsigned long long)tc.v[c_stream_in_order],
                    (unsigned long long)tc.v[c_stream_ooo_buffered], (unsigned long long)tc.v[c_stream_retransmit],
                    (unsigned long long)tc.v[c_stream_bytes], (unsigned long long)tc.v[c_stream_gaps],
                    (unsigned long long)tc.v[c_stream_ooo_dropped], peer.c_str());
      json += buf;
      first = false;
      ::unlink(path.c_str());
    }
  }
  json += "]}\n";
  return write_file(json_path, json) ? 0 : 1;
}
