// bench/bench_multi_gpu.cpp — the flows sharded over several GPUs (backend/sharded/), in one run:
//   * the physical limits: each GPU's pinned H2D bandwidth alone, and all of them copying at once;
//     with two GPUs, their peer copies each way and both at once (--limits-only: these alone);
//   * the host's placement rate: every packet's headers decoded on the host to find its shard
//     (shard_of_packet), on all host threads — what the sharded backend adds before any copy;
//   * workloads (generator): the realistic mix, HTTP (1000 flows) and 64-byte frames;
//   * stages: decode alone, decode + flow tracking, + reassembly, and the firewall (bench_firewall's
//     10,000 random rules; the ET IP lists with --et DIR) over decode + flow tracking, copied and
//     sliced;
//   * each with one GPU (the plain CUDA backend) and with --gpus N (default: every device, at least
//     2 shards: with one device, N shards on it, which measures the sharding's own cost).
// Median of --reps passes after a warm-up pass, each from empty flow tables. Every sharded pass
// must count the same module counters as the one-GPU pass (else the program fails).
//
// usage: bench_multi_gpu [--json PATH] [--reps N] [--packets N] [--tmp DIR] [--batch N] [--et DIR]
//                        [--gpus N] [--commit SHA]
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "backend/sharded/sharded_backend.hpp"
#include "bench_pipeline.hpp"
#include "bench_util.hpp"
#include "core/modules.hpp"
#include "core/thread_pool.hpp"
#include "decode/decoder.hpp"
#include "tools/gen/generator.hpp"

using namespace gaspp;
using namespace gaspp::bench;

namespace {

struct Result {
  double mpps = 0;
  std::vector<uint64_t> module_counts;
};

enum class Stage { decode, flow, reassembly, firewall };

Result measure(int gpus, int shards, Stage stage, bool slice, const std::string& rules, const CaptureFile& cap,
               const std::vector<BatchDesc>& batches, uint32_t batch, uint64_t packets, int reps) {
  std::vector<double> t;
  Result r;
  for (int rep = 0; rep < reps + 1; ++rep) {
    ModuleSet mods;
    if (stage == Stage::firewall) mods.add(make_module("firewall", {{"rules", rules}}));
    BackendConfig bc;
    bc.batch_packets = batch;
    bc.batch_bytes = uint64_t(batch) * 1600;
    bc.flow.enabled = stage != Stage::decode;
    bc.stream.enabled = stage == Stage::reassembly;
    bc.slice = slice ? BackendConfig::Slice::on : BackendConfig::Slice::off;
    bc.flow.capacity = 1u << 20;
    bc.modules = mods.pointers();
    bc.flow.module_state_bytes = mods.flow_state_bytes();
    std::unique_ptr<Backend> be;
    if (shards == 1) {
      be = make_cuda_backend(bc);
    } else {
      std::vector<std::unique_ptr<Backend>> parts;
      for (int k = 0; k < shards; ++k) parts.push_back(make_cuda_backend(shard_config(bc, k, shards, true, gpus)));
      be = make_sharded_backend(std::move(parts), bc, 0);
    }
    std::vector<uint64_t> counts;
    const double s = checked_pass(*be, cap, batches, packets, "bench_multi_gpu", &counts);
    if (rep == 0) r.module_counts = counts;
    if (rep) t.push_back(s);
  }
  r.mpps = double(packets) / median(t) / 1e6;
  return r;
}

// H2D GB/s of device d alone (64 MiB pinned copies).
double h2d_of(int d, int reps) {
  CK(cudaSetDevice(d));
  const size_t big = 64ull << 20;
  uint8_t* h;
  void* dev;
  CK(cudaMallocHost(&h, big));
  CK(cudaMalloc(&dev, big));
  fill_random(h, big, 1 + uint64_t(d));
  const double g = copy_gbps(dev, h, big, cudaMemcpyHostToDevice, reps);
  CK(cudaFree(dev));
  CK(cudaFreeHost(h));
  CK(cudaSetDevice(0));
  return g;
}

// Every device copying at once (one host thread each): the sum of their GB/s.
double h2d_together(int gpus, int reps) {
  std::vector<double> g(size_t(gpus), 0);
  std::vector<std::thread> th;
  for (int d = 0; d < gpus; ++d) th.emplace_back([&, d] { g[size_t(d)] = h2d_of(d, reps); });
  for (auto& x : th) x.join();
  double s = 0;
  for (double x : g) s += x;
  return s;
}

// Device-to-device GB/s between GPUs a and b with peer access on (NVLink where the GPUs have it,
// else through the host): a to b alone, b to a alone, and both ways at once (the sum; 64 MiB
// copies). The bandwidth a scheme that exchanges decoded records between GPUs would move them at.
struct PeerGbs {
  bool peer = false;  // the devices can address each other's memory
  double ab = 0, ba = 0, both = 0;
};
PeerGbs peer_gbs(int a, int b, int reps) {
  PeerGbs r;
  int can_ab = 0, can_ba = 0;
  CK(cudaDeviceCanAccessPeer(&can_ab, a, b));
  CK(cudaDeviceCanAccessPeer(&can_ba, b, a));
  r.peer = can_ab && can_ba;
  if (!r.peer) return r;
  const size_t big = 64ull << 20;
  void* buf[2][2];  // [device][src, dst]
  for (int k = 0; k < 2; ++k) {
    const int d = k ? b : a;
    CK(cudaSetDevice(d));
    const cudaError_t e = cudaDeviceEnablePeerAccess(k ? a : b, 0);
    if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) CK(e);
    (void)cudaGetLastError();
    CK(cudaMalloc(&buf[k][0], big));
    CK(cudaMalloc(&buf[k][1], big));
    CK(cudaMemset(buf[k][0], 0x5a + k, big));
  }
  // One direction, timed on the source device's stream.
  const auto one = [&](int from) {
    CK(cudaSetDevice(from ? b : a));
    return copy_gbps(buf[1 - from][1], buf[from][0], big, cudaMemcpyDeviceToDevice, reps);
  };
  r.ab = one(0);
  r.ba = one(1);
  double g[2] = {0, 0};
  std::thread t0([&] { g[0] = one(0); });
  std::thread t1([&] { g[1] = one(1); });
  t0.join();
  t1.join();
  r.both = g[0] + g[1];
  for (int k = 0; k < 2; ++k) {
    CK(cudaSetDevice(k ? b : a));
    CK(cudaFree(buf[k][0]));
    CK(cudaFree(buf[k][1]));
  }
  CK(cudaSetDevice(0));
  return r;
}

// Packets a second the host places (decode on the host + shard_of_packet), all host threads.
double placement_mpps(const CaptureFile& cap, const std::vector<BatchDesc>& batches, uint64_t packets, int shards,
                      int reps) {
  ThreadPool pool(int(std::max(1u, std::thread::hardware_concurrency())));
  std::vector<double> t;
  std::vector<uint32_t> owner;
  for (int rep = 0; rep < reps + 1; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    for (const BatchDesc& d : batches) {
      owner.resize(d.rec_off.size());
      const BatchView v{cap.data() + d.span_off, d.span_len, d.rec_off.data(), uint32_t(d.rec_off.size()), cap.format(),
                        cap.link(), 0, DecodedView{}, nullptr, false, false};
      pool.parallel_for(d.rec_off.size(), [&](uint64_t lo, uint64_t hi, int) {
        DecodedPacket p;
        decode_batch_range(v, lo, hi, p, [&](uint64_t i, const DecodedPacket& q) {
          owner[i] = shard_of_packet(q, uint32_t(i), uint32_t(shards), false, false);
        });
      });
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (rep) t.push_back(s);
  }
  return double(packets) / median(t) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  int want_gpus = 0;
  bool limits_only = false;  // the links' limits only (H2D, peer copies), no workloads
  std::string commit = "unknown";
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string o = argv[i];
    if (o == "--gpus" && i + 1 < argc) want_gpus = std::atoi(argv[++i]);
    else if (o == "--limits-only") limits_only = true;
    else if (o == "--commit" && i + 1 < argc) commit = argv[++i];
    else rest.push_back(argv[i]);
  }
  BenchArgs args;
  args.packets = 4'000'000;
  if (!parse_bench_args(int(rest.size()), rest.data(), "bench_multi_gpu", "--et", "DIR", args)) return 1;
  const cudaDeviceProp prop = require_cuda("bench_multi_gpu");
  const int devices = cuda_device_count();
  const int gpus = want_gpus > 0 ? std::min(want_gpus, devices) : devices;
  const int shards = std::max(gpus, 2);
  const int reps = args.reps;
  const int host_threads = int(std::thread::hardware_concurrency());
  std::printf("devices: %d x %s; sharded runs: %d shards on %d GPU(s); host threads: %d\n", devices, prop.name, shards,
              gpus, host_threads);
  std::vector<double> alone;
  for (int d = 0; d < gpus; ++d) alone.push_back(h2d_of(d, reps));
  const double together = h2d_together(gpus, reps);
  std::printf("H2D (64 MiB pinned copies):");
  for (int d = 0; d < gpus; ++d) std::printf(" GPU %d alone %.1f GB/s;", d, alone[size_t(d)]);
  std::printf(" all at once %.1f GB/s\n", together);
  PeerGbs peer;
  if (gpus >= 2) {
    peer = peer_gbs(0, 1, reps);
    if (peer.peer)
      std::printf("GPU 0 <-> GPU 1, peer copies (64 MiB): 0 to 1 %.1f GB/s, 1 to 0 %.1f GB/s, both at once %.1f GB/s\n",
                  peer.ab, peer.ba, peer.both);
    else
      std::printf("GPU 0 and GPU 1 cannot access each other's memory (no peer copies)\n");
  }
  std::string et_rules;
  if (!args.extra.empty())
    for (const char* f : {"drop.rules", "compromised.rules", "ciarmy.rules", "tor.rules", "dshield.rules"})
      et_rules += (et_rules.empty() ? "" : ",") + args.extra + "/" + f;

  std::string json = "{\"device\":\"" + std::to_string(devices) + "x " + std::string(prop.name) + "\",\"commit\":\"" +
                     commit + "\",\"gpus\":" + std::to_string(gpus) + ",\"shards\":" + std::to_string(shards) +
                     ",\"host_threads\":" + std::to_string(host_threads) + ",\"reps\":" + std::to_string(reps) +
                     ",\"batch_packets\":" + std::to_string(args.batch) +
                     ",\"packets_per_workload\":" + std::to_string(args.packets) + ",\"limits\":{\"h2d_gbs_alone\":[";
  char buf[1024];
  for (int d = 0; d < gpus; ++d) {
    std::snprintf(buf, sizeof buf, "%s%.2f", d ? "," : "", alone[size_t(d)]);
    json += buf;
  }
  std::snprintf(buf, sizeof buf, "],\"h2d_gbs_together\":%.2f", together);
  json += buf;
  if (gpus >= 2) {
    std::snprintf(buf, sizeof buf, ",\"peer\":{\"access\":%s,\"gbs_0_to_1\":%.2f,\"gbs_1_to_0\":%.2f,\"gbs_both\":%.2f}",
                  peer.peer ? "true" : "false", peer.ab, peer.ba, peer.both);
    json += buf;
  }
  json += "},";
  if (limits_only) {
    json += "\"workloads\":[]}";
    if (!args.json.empty() && !write_file(args.json, json)) return 1;
    return 0;
  }
  json += "\"targets\":{\"firewall_mix_mpps\":700,\"firewall_mix_speedup\":1.8,\"decode_64b_mpps\":1100},\"workloads\":[";
  double fw_mix_best = 0, fw_mix_single = 0, decode64_multi = 0;
  std::printf("\n%-6s %-22s %10s %10s %7s\n", "work", "stage", "1 GPU", "sharded", "ratio");
  bool first = true;
  for (const char* mode : {"mix", "http", "fixed"}) {
    GenConfig g;
    g.mode = parse_gen_mode(mode);
    g.packets = args.packets;
    g.seed = 9;
    if (g.mode == GenMode::fixed) {
      g.size = 60;
      g.flows = 10000;
    } else if (g.mode == GenMode::mix) {
      g.flows = 10000;
      g.ipv6_share = 0.1;
      g.vlan_share = 0.1;
    } else {
      g.flows = 1000;
    }
    const std::string path = args.tmp + "/gaspp-bench-mgpu-" + mode + ".pcap";
    generate_pcap(g, path);
    const CaptureFile cap = CaptureFile::open(path);
    const CaptureSize size = capture_size(cap);
    const auto batches = index_batches(cap, args.batch);
    const std::string rnd = random_rules(args.tmp + "/gaspp-bench-mgpu-random.rules", cap, 10000);
    const double place = placement_mpps(cap, batches, size.packets, shards, reps);
    std::printf("%-6s host placement (decode + shard hash, %d threads): %.1f Mpps\n", mode, host_threads, place);
    json += std::string(first ? "" : ",") + "{\"workload\":\"" + mode + "\",\"packets\":" + std::to_string(size.packets) +
            ",\"mean_record_bytes\":" + std::to_string(size.mean_record()) + ",";
    std::snprintf(buf, sizeof buf, "\"host_placement_mpps\":%.2f,\"stages\":[", place);
    json += buf;
    first = false;
    struct Run { const char* name; Stage stage; bool slice; std::string rules; };
    std::vector<Run> runs = {{"decode", Stage::decode, false, ""},
                             {"decode+flow", Stage::flow, false, ""},
                             {"decode+flow+reassembly", Stage::reassembly, false, ""},
                             {"firewall-random", Stage::firewall, false, rnd},
                             {"firewall-random-sliced", Stage::firewall, true, rnd}};
    if (!et_rules.empty()) {
      runs.push_back({"firewall-et-ip", Stage::firewall, false, et_rules});
      runs.push_back({"firewall-et-ip-sliced", Stage::firewall, true, et_rules});
    }
    bool first_stage = true;
    for (const Run& r : runs) {
      const Result one = measure(1, 1, r.stage, r.slice, r.rules, cap, batches, args.batch, size.packets, reps);
      const Result many = measure(gpus, shards, r.stage, r.slice, r.rules, cap, batches, args.batch, size.packets, reps);
      if (one.module_counts != many.module_counts) {
        std::fprintf(stderr, "bench_multi_gpu: %s/%s: module counters differ between 1 and %d shards\n", mode, r.name,
                     shards);
        return 1;
      }
      std::printf("%-6s %-22s %10.2f %10.2f %6.2fx\n", mode, r.name, one.mpps, many.mpps, many.mpps / one.mpps);
      std::snprintf(buf, sizeof buf, "%s{\"stage\":\"%s\",\"single_gpu_mpps\":%.2f,\"sharded_mpps\":%.2f}",
                    first_stage ? "" : ",", r.name, one.mpps, many.mpps);
      json += buf;
      first_stage = false;
      if (std::string(mode) == "mix" && r.stage == Stage::firewall && r.rules == rnd) {
        if (many.mpps > fw_mix_best) {
          fw_mix_best = many.mpps;
          fw_mix_single = one.mpps;
        }
      }
      if (std::string(mode) == "fixed" && r.stage == Stage::decode) decode64_multi = many.mpps;
    }
    json += "]}";
  }
  std::snprintf(buf, sizeof buf,
                "],\"firewall_mix_mpps\":%.2f,\"single_gpu_firewall_mix_mpps\":%.2f,\"decode_64b_mpps\":%.2f}\n",
                fw_mix_best, fw_mix_single, decode64_multi);
  json += buf;
  std::printf("\nfirewall on the mix (10k random rules, best of copied/sliced): %.2f Mpps sharded, %.2f Mpps one GPU; "
              "decode of 64-byte frames sharded: %.2f Mpps\n",
              fw_mix_best, fw_mix_single, decode64_multi);
  if (!args.json.empty() && !write_file(args.json, json)) return 1;
  return 0;
}
