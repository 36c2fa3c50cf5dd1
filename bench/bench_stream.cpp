// bench/bench_stream.cpp — TCP reassembly throughput, in one run on the machine it runs on:
//   * the physical limits (pinned H2D/D2H and device-memory bandwidth, bench_pipeline.hpp);
//   * the paper's HTTP workload (connections of ~870 packets; generator http mode) and the
//     realistic mix, each with 1k, 10k and 100k concurrent flows: Mpps for decode alone,
//     + flow tracking, + reassembly; CUDA (64k-packet batches) and our CPU backend on all host
//     threads; and HTTP at 10k flows with 2% reordering and 0.2% loss. Every timed pass starts
//     from an empty flow table (a fresh backend, built outside the timing), so connections are
//     created, followed from their SYN and reassembled, as live traffic is. Median of --reps
//     passes after a warm-up pass;
//   * the peer: libnids on one core (peer_libnids, given by --nids) on the same capture, read from
//     memory (the capture is written under --tmp; use /dev/shm).
// Prints a table and writes JSON (--json PATH) with every figure, the ratios and the targets.
//
// usage: bench_stream [--json PATH] [--reps N] [--packets N] [--tmp DIR] [--nids PATH]
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "bench_pipeline.hpp"
#include "bench_util.hpp"
#include "tools/gen/generator.hpp"

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
  BenchArgs args;
  args.packets = 1'000'000;
  if (!parse_bench_args(argc, argv, "bench_stream", "--nids", "PATH", args)) return 1;
  const std::string &json_path = args.json, &tmp = args.tmp, &nids = args.extra;
  const int reps = args.reps;
  const uint64_t npk = args.packets;
  const cudaDeviceProp prop = require_cuda("bench_stream");
  const int host_threads = int(std::thread::hardware_concurrency());
  std::printf("device: %s, %d SMs; host threads: %d\n", prop.name, prop.multiProcessorCount, host_threads);
  // The limits are measured before and after the workloads; the higher is the limit (a first
  // measurement on a GPU that just woke up can come out at half the link's rate).
  Bandwidth bw = measure_bandwidth(reps);
  const Bandwidth bw_before = bw;
  std::printf("limits (before): H2D %.1f GB/s (64 MiB copies), D2H %.1f GB/s, device memory %.0f GB/s\n",
              bw.h2d_64m, bw.d2h_64m, bw.dev_copy);
  struct Row {
    std::string mode;
    uint32_t flows;
    uint64_t packets;
    double mean_record;
    Result cu[3], cp[3];
    std::string peer;
    double nids_mpps;
  };
  std::vector<Row> rows;

  struct Spec {
    const char* name;
    const char* mode;
    uint32_t flows;
    double reorder, loss;
  };
  // The six of the issue, and HTTP with reordering and loss (holes wait in the out-of-order buffer).
  const Spec specs[] = {{"http", "http", 1000, 0, 0},       {"http", "http", 10000, 0, 0},
                        {"http", "http", 100000, 0, 0},     {"mix", "mix", 1000, 0, 0},
                        {"mix", "mix", 10000, 0, 0},        {"mix", "mix", 100000, 0, 0},
                        {"http-lossy", "http", 10000, 0.02, 0.002}};
  for (const Spec& sp : specs) {
    {
      const char* mode = sp.mode;
      const uint32_t flows = sp.flows;
      GenConfig g;
      g.mode = parse_gen_mode(mode);
      g.packets = npk;
      g.flows = flows;
      g.reorder = sp.reorder;
      g.loss = sp.loss;
      g.seed = 7;
      if (g.mode == GenMode::mix) {
        g.ipv6_share = 0.1;
        g.vlan_share = 0.1;
      }
      const std::string path = tmp + "/gaspp-bench-stream-" + sp.name + "-" + std::to_string(flows) + ".pcap";
      generate_pcap(g, path);
      const CaptureFile cap = CaptureFile::open(path);
      Row row{sp.name, flows, 0, 0, {}, {}, "null", 0};
      const CaptureSize size = capture_size(cap);
      row.packets = size.packets;
      row.mean_record = size.mean_record();
      const auto batches = index_batches(cap, 65536);
      for (Stages st : {Stages::decode, Stages::flow, Stages::stream}) {
        row.cu[int(st)] = measure(true, st, cap, batches, row.packets, reps, 0);
        row.cp[int(st)] = measure(false, st, cap, batches, row.packets, std::max(1, reps / 2 + 1), host_threads);
      }
      if (!nids.empty()) {
        const std::string cmd = nids + " " + path + " " + std::to_string(std::max(1, reps / 2 + 1));
        if (std::FILE* p = ::popen(cmd.c_str(), "r")) {
          char line[512] = {};
          if (std::fgets(line, sizeof line, p)) {
            row.peer = line;
            while (!row.peer.empty() && (row.peer.back() == '\n' || row.peer.back() == '\r')) row.peer.pop_back();
            const auto at = row.peer.find("\"mpps\":");
            if (at != std::string::npos) row.nids_mpps = std::atof(row.peer.c_str() + at + 7);
          }
          ::pclose(p);
        }
      }
      rows.push_back(row);
      ::unlink(path.c_str());
    }
  }
  const Bandwidth bw_after = measure_bandwidth(reps);
  std::printf("limits (after):  H2D %.1f GB/s (64 MiB copies), D2H %.1f GB/s, device memory %.0f GB/s\n",
              bw_after.h2d_64m, bw_after.d2h_64m, bw_after.dev_copy);
  bw.h2d_64m = std::max(bw_before.h2d_64m, bw_after.h2d_64m);
  bw.d2h_64m = std::max(bw_before.d2h_64m, bw_after.d2h_64m);
  bw.dev_copy = std::max(bw_before.dev_copy, bw_after.dev_copy);

  std::string json = "{\"device\":\"" + std::string(prop.name) + "\",\"host_threads\":" + std::to_string(host_threads) +
                     ",\"reps\":" + std::to_string(reps) + ",\"packets_per_workload\":" + std::to_string(npk) + ",";
  char buf[1536];
  std::snprintf(buf, sizeof buf,
                "\"limits\":{\"h2d_gbs_64m\":%.2f,\"d2h_gbs_64m\":%.2f,\"device_memory_gbs\":%.1f,"
                "\"h2d_gbs_64m_before\":%.2f,\"h2d_gbs_64m_after\":%.2f},",
                bw.h2d_64m, bw.d2h_64m, bw.dev_copy, bw_before.h2d_64m, bw_after.h2d_64m);
  json += buf;
  json += "\"targets\":{\"stream_overhead_vs_decode_max_10k_flows\":0.15,\"stream_overhead_vs_decode_max_1k_flows\":0.30,"
          "\"cuda_over_cpu_min\":5,\"cuda_over_libnids_expected_http\":30},";
  json += "\"note\":\"libnids follows connections from their handshake only; the mix workload's TCP flows have none, so "
          "libnids reassembles nothing there and its mix figure is not a reassembly rate\",";
  json += "\"workloads\":[";
  std::printf("\n%-6s %7s | %-4s %8s %8s %8s | %6s %6s | %-3s %8s %8s %8s | %5s | %8s %6s | %s\n", "work", "flows",
              "cuda", "decode", "+flow", "+stream", "ovh/f", "ovh/d", "cpu", "decode", "+flow", "+stream", "x cpu",
              "libnids", "x nids", "limit Mpps");
  bool first = true;
  for (const Row& row : rows) {
    const Result* cu = row.cu;
    const Result* cp = row.cp;
    const double limit_mpps = bw.h2d_64m * 1e9 / (row.mean_record + 4) / 1e6;
    const Counters& tc = cu[2].totals;
    const double ovh = 1 - cu[2].mpps / cu[0].mpps;
    const double ovh_flow = 1 - cu[2].mpps / cu[1].mpps;
    const double nids_mpps = row.nids_mpps;
    std::printf("%-6s %7u | %-4s %8.2f %8.2f %8.2f | %5.1f%% %5.1f%% | %-3s %8.2f %8.2f %8.2f | %5.1f | %8.3f %6.1f | %.1f\n",
                row.mode.c_str(), row.flows, "", cu[0].mpps, cu[1].mpps, cu[2].mpps, 100 * ovh_flow, 100 * ovh, "",
                cp[0].mpps, cp[1].mpps, cp[2].mpps, cu[2].mpps / cp[2].mpps, nids_mpps,
                nids_mpps > 0 ? cu[2].mpps / nids_mpps : 0.0, limit_mpps);
    std::snprintf(buf, sizeof buf,
                  "%s{\"workload\":\"%s\",\"flows\":%u,\"packets\":%llu,\"mean_record_bytes\":%.1f,\"limit_mpps\":%.2f,"
                  "\"cuda_mpps\":{\"decode\":%.3f,\"flow\":%.3f,\"stream\":%.3f},"
                  "\"cpu_mpps\":{\"decode\":%.3f,\"flow\":%.3f,\"stream\":%.3f},"
                  "\"cuda_stream_fraction_of_limit\":%.4f,"
                  "\"stream_overhead_vs_decode\":%.4f,\"stream_overhead_vs_flow\":%.4f,\"cuda_over_cpu\":%.3f,"
                  "\"cuda_over_libnids\":%s,\"stream_counters\":{\"segments\":%llu,\"in_order\":%llu,"
                  "\"out_of_order_buffered\":%llu,\"retransmissions\":%llu,\"bytes\":%llu,\"gaps\":%llu,"
                  "\"out_of_order_dropped\":%llu},\"libnids\":%s}",
                  first ? "" : ",", row.mode.c_str(), row.flows, (unsigned long long)row.packets, row.mean_record,
                  limit_mpps, cu[0].mpps, cu[1].mpps, cu[2].mpps, cp[0].mpps, cp[1].mpps, cp[2].mpps,
                  cu[2].mpps / limit_mpps, ovh, ovh_flow, cu[2].mpps / cp[2].mpps,
                  nids_mpps > 0 ? std::to_string(cu[2].mpps / nids_mpps).c_str() : "null",
                  (unsigned long long)tc.v[c_stream_segments], (unsigned long long)tc.v[c_stream_in_order],
                  (unsigned long long)tc.v[c_stream_ooo_buffered], (unsigned long long)tc.v[c_stream_retransmit],
                  (unsigned long long)tc.v[c_stream_bytes], (unsigned long long)tc.v[c_stream_gaps],
                  (unsigned long long)tc.v[c_stream_ooo_dropped], row.peer.c_str());
    json += buf;
    first = false;
  }
  json += "]}\n";
  return write_file(json_path, json) ? 0 : 1;
}
