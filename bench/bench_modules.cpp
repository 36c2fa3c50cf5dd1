// bench/bench_modules.cpp — module scheduling and consolidation, in one run on the machine it runs on
// (CUDA, --batch packets a batch (default 262144), the realistic mix with 10k flows). Every module
// here reads headers only, so batches are sliced (only heads cross PCIe, as bench_firewall's
// sliced runs): copied, the mix is bound by the link at ~85 Mpps and no module's work would show.
//   * the pipeline without modules (decode and flow tracking), for reference;
//   * scheduling (GASPP Figure 10b): a router module spreads flows over N = 1..64 modules by context
//     key (probe route=N), each of which does a fixed amount of work (probe work=W, and 16 W) on
//     its share only; Mpps with packets in network order (--schedule off) and regrouped between
//     stages (--schedule on), and the speedup;
//   * the cost of scheduling for a light module: the firewall (10k random rules) plus one pass
//     module, with and without scheduling;
//   * consolidation (GASPP Figure 12): the firewall alone, then with 1..4 synthetic heavy modules
//     (probe work=W on every packet) added one by one, in one pipeline.
// Median of --reps passes after a warm-up pass, each from an empty flow table.
//
// usage: bench_modules [--json PATH] [--reps N] [--packets N] [--tmp DIR] [--batch N] [--work W]
#include <unistd.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "bench_pipeline.hpp"
#include "bench_util.hpp"
#include "tools/gen/generator.hpp"
#include "core/modules.hpp"

using namespace gaspp;
using namespace gaspp::bench;

namespace {

using Specs = std::vector<std::pair<std::string, ModuleOptions>>;

double measure(const Specs& specs, BackendConfig::Schedule sched, const CaptureFile& cap,
               const std::vector<BatchDesc>& batches, uint32_t batch, uint64_t packets, int reps) {
  std::vector<double> t;
  for (int rep = 0; rep < reps + 1; ++rep) {
    ModuleSet mods;
    for (auto& [n, o] : specs) mods.add(make_module(n, o));
    BackendConfig bc;
    bc.batch_packets = batch;
    bc.batch_bytes = uint64_t(batch) * 1600;
    bc.stream.enabled = false;
    bc.slice = BackendConfig::Slice::on;  // headers only over PCIe (see the top)
    bc.modules = mods.pointers();
    bc.flow.module_state_bytes = mods.flow_state_bytes();
    bc.schedule = sched;
    auto be = make_cuda_backend(bc);
    be->attach_source(cap.data(), cap.size());
    uint64_t pk = 0;
    const double s = one_pass(*be, cap, batches, &pk);
    be->detach_source();
    if (pk != packets) {
      std::fprintf(stderr, "bench_modules: processed %llu packets, expected %llu\n", (unsigned long long)pk,
                   (unsigned long long)packets);
      std::exit(1);
    }
    if (rep) t.push_back(s);
  }
  return double(packets) / median(t) / 1e6;
}

std::string random_rules(const std::string& path, uint32_t n) {
  std::mt19937_64 rng(42);
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return "";
  for (uint32_t k = 0; k < n; ++k) {
    auto a = [&] {
      const uint32_t x = uint32_t(rng());
      return std::to_string(x >> 24) + "." + std::to_string((x >> 16) & 255) + "." + std::to_string((x >> 8) & 255) +
             "." + std::to_string(x & 255) + "/" + std::to_string(16 + rng() % 17);
    };
    std::fprintf(f, "%s tcp %s any -> %s %u (msg:\"r%u\"; sid:%u;)\n", rng() % 2 ? "alert" : "drop", a().c_str(),
                 a().c_str(), unsigned(rng() % 65536), k + 1, k + 1);
  }
  std::fclose(f);
  return path;
}

}  // namespace

int main(int argc, char** argv) {
  BenchArgs args;
  args.packets = 2'000'000;
  args.extra = "256";
  args.batch = 262144;
  if (!parse_bench_args(argc, argv, "bench_modules", "--work", "W", args)) return 1;
  const std::string &json_path = args.json, &tmp = args.tmp;
  const int reps = args.reps;
  const uint64_t npk = args.packets;
  const uint32_t work = uint32_t(std::atoi(args.extra.c_str()));
  const cudaDeviceProp prop = require_cuda("bench_modules");
  std::printf("device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  const Bandwidth bw = measure_bandwidth(reps);
  GenConfig g;
  g.mode = GenMode::mix;
  g.packets = npk;
  g.flows = 10000;
  g.seed = 13;
  const std::string path = tmp + "/gaspp-bench-modules.pcap";
  generate_pcap(g, path);
  const CaptureFile cap = CaptureFile::open(path);
  const CaptureSize size = capture_size(cap);
  const uint64_t packets = size.packets;
  const double limit_mpps = bw.h2d_64m * 1e9 / (size.mean_record() + 4) / 1e6;
  const uint32_t batch = args.batch;
  const auto batches = index_batches(cap, batch);
  const auto off = BackendConfig::Schedule::off, on = BackendConfig::Schedule::on;
  std::printf("limits: H2D %.1f GB/s -> %.1f Mpps for this workload copied; work per selected packet: %u hash rounds\n",
              bw.h2d_64m, limit_mpps, work);
  const double base = measure({}, off, cap, batches, batch, packets, reps);
  std::printf("sliced, %u packets a batch: decode and flow tracking without modules %.2f Mpps\n", batch, base);

  char buf[512];
  std::string json = "{\"device\":\"" + std::string(prop.name) + "\",\"reps\":" + std::to_string(reps) +
                     ",\"packets\":" + std::to_string(packets) + ",\"work_rounds\":" + std::to_string(work);
  std::snprintf(buf, sizeof buf, ",\"limits\":{\"h2d_gbs_64m\":%.2f,\"limit_mpps\":%.2f}", bw.h2d_64m, limit_mpps);
  json += buf;
  std::snprintf(buf, sizeof buf, ",\"sliced\":true,\"batch_packets\":%u,\"no_modules_mpps\":%.3f", batch, base);
  json += buf;
  json += ",\"scheduling\":[";
  bool first = true;
  for (const uint32_t w : {work, 16 * work}) {
    std::printf("\nscheduling: N modules, each on 1/N of the flows, work %u\n%4s %10s %10s %8s\n", w, "N", "off Mpps",
                "on Mpps", "speedup");
    for (uint32_t n : {1u, 2u, 4u, 8u, 16u, 32u, 64u}) {
      Specs s = {{"probe", {{"route", std::to_string(n)}}}};
      for (uint32_t k = 1; k <= n; ++k) s.push_back({"probe", {{"ctx", std::to_string(k)}, {"work", std::to_string(w)}}});
      const double a = measure(s, off, cap, batches, batch, packets, reps), b = measure(s, on, cap, batches, batch, packets, reps);
      std::printf("%4u %10.2f %10.2f %7.2fx\n", n, a, b, b / a);
      std::snprintf(buf, sizeof buf, "%s{\"work_rounds\":%u,\"modules\":%u,\"off_mpps\":%.3f,\"on_mpps\":%.3f,\"speedup\":%.3f}",
                    first ? "" : ",", w, n, a, b, b / a);
      json += buf;
      first = false;
    }
  }
  const std::string rules = random_rules(tmp + "/gaspp-bench-modules.rules", 10000);
  const Specs light = {{"firewall", {{"rules", rules}}}, {"pass", {}}};
  const double l_off = measure(light, off, cap, batches, batch, packets, reps),
               l_on = measure(light, on, cap, batches, batch, packets, reps);
  std::printf("\nlight (firewall + pass): off %.2f Mpps, on %.2f Mpps (cost of scheduling %.1f%%)\n", l_off, l_on,
              100 * (1 - l_on / l_off));
  std::snprintf(buf, sizeof buf, "],\"light\":{\"off_mpps\":%.3f,\"on_mpps\":%.3f,\"scheduling_cost\":%.4f}", l_off, l_on,
                1 - l_on / l_off);
  json += buf;
  json += ",\"consolidation\":[";
  std::printf("\nconsolidation: firewall + k heavy modules (work %u on every packet)\n%3s %10s\n", work, "k", "Mpps");
  Specs cons = {{"firewall", {{"rules", rules}}}};
  for (uint32_t k = 0; k <= 4; ++k) {
    if (k) cons.push_back({"probe", {{"work", std::to_string(work)}}});
    const double m = measure(cons, BackendConfig::Schedule::automatic, cap, batches, batch, packets, reps);
    std::printf("%3u %10.2f\n", k, m);
    std::snprintf(buf, sizeof buf, "%s{\"heavy_modules\":%u,\"mpps\":%.3f}", k ? "," : "", k, m);
    json += buf;
  }
  json += "]}\n";
  ::unlink(path.c_str());
  return write_file(json_path, json) ? 0 : 1;
}
