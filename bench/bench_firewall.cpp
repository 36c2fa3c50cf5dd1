// bench/bench_firewall.cpp — the firewall module's throughput, in one run on the machine it runs on:
//   * the physical limits (pinned H2D and device-memory bandwidth, bench_pipeline.hpp), and the
//     packet rate the H2D link allows for each workload's mean record size;
//   * workloads: the realistic mix and 64-byte frames (generator), 10k concurrent flows;
//   * rule sets: 10,000 random rules (random IPv4/IPv6 prefixes and single addresses, port ranges,
//     protocols, alert/drop/pass, some `<>`; a few percent built from the traffic's own endpoints, so
//     that some verdicts and alerts happen: on a few of the 10k flows, events_per_packet in the JSON) and the ET IP lists (drop, compromised, ciarmy, tor,
//     dshield; given by --et DIR);
//   * for each: Mpps with decode + flow tracking alone, and with the firewall added; CUDA
//     (--batch packets a batch, 65536 by default) with header-only slicing off (whole records
//     copied: bounded by the link) and on (each record's 96-byte head gathered through the capture's
//     mapping, by a gather on SMs of its own: --gather-sms; also measured sharing every SM), and our CPU
//     backend on all host threads; median of --reps passes after a warm-up pass, each from an empty
//     flow table.
// Module events (alerts) come back to host memory; formatting them as EVE is host work not timed.
//
// usage: bench_firewall [--json PATH] [--reps N] [--packets N] [--tmp DIR] [--batch N] [--gather-sms N] [--stage-times] [--et DIR]
//                       [--workload mix|fixed] [--cuda-only]
// (--workload: that workload alone; --cuda-only: the CPU backend is not measured, its figures are 0.)
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench_pipeline.hpp"
#include "bench_util.hpp"
#include "tools/gen/generator.hpp"
#include "core/modules.hpp"
#include "decode/decoder.hpp"

using namespace gaspp;
using namespace gaspp::bench;

namespace {

struct Result {
  double mpps = 0;
  std::vector<uint64_t> module_counts;
};

bool g_stage_times = false;  // --stage-times

Result measure(bool cuda, bool slice, const std::string& rules, const CaptureFile& cap, const std::vector<BatchDesc>& batches,
               uint32_t batch, int gather_sms, uint64_t packets, int reps, int threads, bool flows = true) {
  std::vector<double> t;
  Result r;
  for (int rep = 0; rep < reps + 1; ++rep) {
    ModuleSet mods;
    if (!rules.empty()) mods.add(make_module("firewall", {{"rules", rules}}));
    BackendConfig bc;
    bc.batch_packets = batch;
    bc.batch_bytes = uint64_t(batch) * 1600;
    bc.threads = threads;
    bc.stream.enabled = false;
    bc.slice = slice ? BackendConfig::Slice::on : BackendConfig::Slice::off;
    bc.gather_sms = gather_sms;
    bc.flow.capacity = 1u << 20;
    bc.flow.enabled = flows;
    bc.modules = mods.pointers();
    bc.flow.module_state_bytes = mods.flow_state_bytes();
    bc.stage_times = g_stage_times && cuda && rep == reps;
    auto be = cuda ? make_cuda_backend(bc) : make_cpu_backend(bc);
    std::vector<uint64_t> counts;
    const double s = checked_pass(*be, cap, batches, packets, "bench_firewall", &counts);
    if (rep == 0) r.module_counts = counts;
    if (bc.stage_times)
      print_stage_times(*be, std::string(slice ? "sliced" : "copied") + (rules.empty() ? "" : ", firewall") +
                                 (flows ? "" : ", no flows") + ", gather_sms " + std::to_string(gather_sms));
    if (rep) t.push_back(s);
  }
  r.mpps = double(packets) / median(t) / 1e6;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  // This bench's own flags first; the rest are the common ones.
  std::string only_workload;
  bool cuda_only = false;
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string o = argv[i];
    if (o == "--workload" && i + 1 < argc) only_workload = argv[++i];
    else if (o == "--cuda-only") cuda_only = true;
    else rest.push_back(argv[i]);
  }
  if (!only_workload.empty() && only_workload != "mix" && only_workload != "fixed") {
    std::fprintf(stderr, "bench_firewall: --workload is mix or fixed, not %s\n", only_workload.c_str());
    return 1;
  }
  BenchArgs args;
  args.packets = 2'000'000;
  if (!parse_bench_args(int(rest.size()), rest.data(), "bench_firewall", "--et", "DIR", args)) return 1;
  const std::string &json_path = args.json, &tmp = args.tmp, &et = args.extra;
  const int reps = args.reps;
  g_stage_times = args.stage_times;
  const uint64_t npk = args.packets;
  const cudaDeviceProp prop = require_cuda("bench_firewall");
  const int host_threads = int(std::thread::hardware_concurrency());
  std::printf("device: %s, %d SMs; host threads: %d\n", prop.name, prop.multiProcessorCount, host_threads);
  Bandwidth bw = measure_bandwidth(reps);
  std::printf("limits: H2D %.1f GB/s (64 MiB copies), device memory %.0f GB/s\n", bw.h2d_64m, bw.dev_copy);
  std::string et_rules;
  if (!et.empty())
    for (const char* f : {"drop.rules", "compromised.rules", "ciarmy.rules", "tor.rules", "dshield.rules"})
      et_rules += (et_rules.empty() ? "" : ",") + et + "/" + f;

  std::string json = "{\"device\":\"" + std::string(prop.name) + "\",\"host_threads\":" + std::to_string(host_threads) +
                     ",\"reps\":" + std::to_string(reps) + ",\"batch_packets\":" + std::to_string(args.batch) +
                     ",\"gather_sms\":" + std::to_string(args.gather_sms) + ",\"packets_per_workload\":" + std::to_string(npk) + ",";
  char buf[2048];
  std::snprintf(buf, sizeof buf, "\"limits\":{\"h2d_gbs_64m\":%.2f,\"device_memory_gbs\":%.1f},", bw.h2d_64m, bw.dev_copy);
  json += buf;
  json += "\"targets\":{\"firewall_mix_mpps_with_header_slicing\":500,\"paper_gtx480_mpps\":8},"
          "\"note\":\"copied: whole records cross PCIe (bounded by limit_mpps); sliced: "
          "each record's head (its first 96 bytes, as 16-byte loads of the aligned window) is gathered through the capture's mapping "
          "(limit_mpps_64b: the link at 64 B per packet)\","
          "\"workloads\":[";
  std::printf("\n%-6s %-7s %6s | %-6s %7s %7s %5s | %-6s %7s %7s | %-3s %7s %7s | %6s | %7s %7s\n", "work", "rules",
              "rules", "copied", "no fw", "+fw", "ovh", "sliced", "no fw", "+fw", "cpu", "no fw", "+fw", "x cpu", "limit",
              "lim64");
  bool first = true;
  for (const char* mode : {"mix", "fixed"}) {
    if (!only_workload.empty() && only_workload != mode) continue;
    GenConfig g;
    g.mode = parse_gen_mode(mode);
    g.size = 60;  // 64-byte frames with the FCS
    g.packets = npk;
    g.flows = 10000;
    g.seed = 9;
    if (g.mode == GenMode::mix) {
      g.ipv6_share = 0.1;
      g.vlan_share = 0.1;
    }
    const std::string path = tmp + "/gaspp-bench-fw-" + mode + ".pcap";
    generate_pcap(g, path);
    const CaptureFile cap = CaptureFile::open(path);
    const CaptureSize size = capture_size(cap);
    const uint64_t packets = size.packets;
    const double mean_record = size.mean_record();
    const double limit_mpps = bw.h2d_64m * 1e9 / (mean_record + 4) / 1e6;
    const double limit64_mpps = bw.h2d_64m * 1e9 / 64 / 1e6;
    const auto batches = index_batches(cap, args.batch);
    // What slicing moves over the link per record: the 32-byte sectors holding its first 96 bytes
    // (reads through the mapping fetch whole sectors; a sector two neighbouring records share is
    // read once, as the L2 keeps it; the mapping is page-aligned, so a record's alignment is its
    // file offset's) and its 4-byte offset. The link's packet rate at that size.
    double sector_bytes = 0;
    for (const BatchDesc& d : batches) {
      uint64_t next = 0;  // the first sector of the batch not counted yet
      for (size_t k = 0; k < d.rec_off.size(); ++k) {
        const uint64_t at = d.span_off + d.rec_off[k];
        const uint64_t end = k + 1 < d.rec_off.size() ? d.span_off + d.rec_off[k + 1] : d.span_off + d.span_len;
        const uint64_t first = std::max(at / 32, next), last = (std::min(at + 96, end) - 1) / 32;
        if (last >= first) sector_bytes += double(32 * (last - first + 1));
        sector_bytes += 4;
        next = std::max(next, last + 1);
      }
    }
    const double sliced_record = sector_bytes / double(packets);
    const double limit_sliced_mpps = bw.h2d_64m * 1e9 / sliced_record / 1e6;
    const std::string rnd = random_rules(tmp + "/gaspp-bench-fw-random.rules", cap, 10000);
    const Result base_cu = measure(true, false, "", cap, batches, args.batch, args.gather_sms, packets, reps, 0);
    const Result base_sl = measure(true, true, "", cap, batches, args.batch, args.gather_sms, packets, reps, 0);
    // The CPU backend on every host thread (not measured with --cuda-only: its figures are 0).
    auto measure_cpu = [&](const std::string& rules) {
      return cuda_only ? Result{}
                       : measure(false, false, rules, cap, batches, args.batch, args.gather_sms, packets,
                                 std::max(1, reps / 2 + 1), host_threads);
    };
    const Result base_cp = measure_cpu("");
    // The same sliced pass with the gather sharing every SM (no partition), and the sliced front end
    // alone (gather and decode, no flow tracking), for comparison.
    const Result base_shared = measure(true, true, "", cap, batches, args.batch, -1, packets, reps, 0);
    const Result front = measure(true, true, "", cap, batches, args.batch, args.gather_sms, packets, reps, 0, false);
    std::printf("%-6s sliced decode+flow: %.2f Mpps with the gather on SMs of its own, %.2f sharing every SM; "
                "decode alone %.2f; link at %.1f B a record: %.1f\n",
                mode, base_sl.mpps, base_shared.mpps, front.mpps, sliced_record, limit_sliced_mpps);
    struct Set { const char* name; std::string files; };
    std::vector<Set> sets = {{"random", rnd}};
    if (!et_rules.empty()) sets.push_back({"et-ip", et_rules});
    for (const Set& s : sets) {
      ModuleSet probe;
      probe.add(make_module("firewall", {{"rules", s.files}}));
      std::map<std::string, uint64_t> rep;
      probe.at(0).report(rep);
      const Result cu = measure(true, false, s.files, cap, batches, args.batch, args.gather_sms, packets, reps, 0);
      const Result sl = measure(true, true, s.files, cap, batches, args.batch, args.gather_sms, packets, reps, 0);
      const Result cp = measure_cpu(s.files);
      if (sl.module_counts != cu.module_counts) {
        std::fprintf(stderr, "bench_firewall: %s/%s: module counts differ with slicing on and off\n", mode, s.name);
        return 1;
      }
      const double best = std::max(cu.mpps, sl.mpps);
      const double over_cpu = cp.mpps > 0 ? best / cp.mpps : 0.0;
      // What the firewall decided over the pass (its counters), per packet: events cross PCIe
      // and are copied by the host, so they cost throughput.
      auto per_packet = [&](int c) {
        return cu.module_counts.size() > size_t(c) ? double(cu.module_counts[size_t(c)]) / double(packets) : 0.0;
      };
      const double events_pp = per_packet(mc_events), dropped_pp = per_packet(mc_drop);
      std::printf("%-6s %-7s %6llu | %-6s %7.2f %7.2f %4.1f%% | %-6s %7.2f %7.2f | %-3s %7.2f %7.2f | %6.1f | %7.1f %7.1f\n",
                  mode, s.name, (unsigned long long)rep["rules"], "", base_cu.mpps, cu.mpps,
                  100 * (1 - cu.mpps / base_cu.mpps), "", base_sl.mpps, sl.mpps, "", base_cp.mpps, cp.mpps,
                  over_cpu, limit_mpps, limit64_mpps);
      std::printf("       firewall: %.5f events and %.5f drops per packet\n", events_pp, dropped_pp);
      std::snprintf(buf, sizeof buf,
                    "%s{\"workload\":\"%s\",\"rules\":\"%s\",\"rule_count\":%llu,\"table_bytes\":%llu,\"packets\":%llu,"
                    "\"mean_record_bytes\":%.1f,\"limit_mpps\":%.2f,\"limit_mpps_64b\":%.2f,"
                    "\"sliced_link_bytes_per_record\":%.1f,\"limit_mpps_sliced\":%.2f,"
                    "\"cuda_mpps\":{\"decode_flow\":%.3f,\"firewall\":%.3f,\"decode_flow_sliced\":%.3f,"
                    "\"firewall_sliced\":%.3f,\"decode_flow_sliced_gather_sharing_sms\":%.3f,\"decode_sliced\":%.3f},"
                    "\"cpu_mpps\":{\"decode_flow\":%.3f,\"firewall\":%.3f},\"cuda_firewall_overhead\":%.4f,"
                    "\"slicing_speedup\":%.3f,\"cuda_best_over_cpu\":%.3f,\"cuda_copied_fraction_of_limit\":%.4f,"
                    "\"events_per_packet\":%.4f,\"drops_per_packet\":%.4f}",
                    first ? "" : ",", mode, s.name, (unsigned long long)rep["rules"], (unsigned long long)rep["table_bytes"],
                    (unsigned long long)packets, mean_record, limit_mpps, limit64_mpps, sliced_record, limit_sliced_mpps, base_cu.mpps, cu.mpps, base_sl.mpps,
                    sl.mpps, base_shared.mpps, front.mpps, base_cp.mpps, cp.mpps, 1 - cu.mpps / base_cu.mpps, sl.mpps / cu.mpps, over_cpu,
                    cu.mpps / limit_mpps, events_pp, dropped_pp);
      json += buf;
      first = false;
    }
    ::unlink(path.c_str());
  }
  json += "]}\n";
  return write_file(json_path, json) ? 0 : 1;
}
