// bench/bench_cpu.cpp — the CPU backend's scaling, in one run on the machine it runs on (no GPU
// needed):
//   * the host's memory-read limit (GB/s, one thread and all threads summing a 1 GiB buffer);
//   * the generator's HTTP workload (1,000 connections) and mix (10,000 flows), and each capture
//     given with --capture: Mpps of the backend stage (records indexed beforehand, capture in
//     memory) for decode alone, + flow tracking, + reassembly, with 1, 2, 4, ... threads up to all
//     of them, at the CPU's batch size (kCpuBatchPackets) and, for reference, at 16,384 and 32,768
//     with all threads and at the CUDA batch size (65,536) with one thread and all threads. Every
//     timed pass starts from an empty flow table (a fresh backend, built outside the timing);
//     median of --reps passes after a warm-up;
//   * the flows sharded (backend/sharded/): all threads as N backends of threads/N threads each
//     (N = all threads: one thread a backend, each walking only its own flows), the packets placed
//     by a host decode on all threads first; + reassembly, at the CPU's batch size;
//   * the ceiling of any partition of the work over cores: N copies of the one-thread backend, each
//     with its own flow table, over the whole capture at once (nothing shared but the records,
//     read-only, and the memory system), against one copy alone; and the host's share of that
//     ceiling: register-only arithmetic on one thread and on N, one dependent chain (the clock: a
//     core may run faster when the others are idle) and eight independent ones (a core's
//     multiplier busy every cycle: cores that share physical resources do not add up);
//   * where a +reassembly batch's time goes with one thread and all threads (stage times: each
//     stage's mean and how busy it kept the threads), one untimed pass each;
//   * the peer: libnids on one core (peer_libnids, --nids PATH; its callback does no per-byte work);
//   * gaspp end to end (--gaspp PATH: `gaspp -r` with the capture in the page cache, one thread and
//     all threads), so the reader's share shows.
// Prints a table and writes JSON (--json PATH) with every figure and the ratios.
//
// usage: bench_cpu [--json PATH] [--reps N] [--packets N] [--tmp DIR] [--nids PATH] [--gaspp PATH]
//                  [--capture PATH]... [--commit SHA] [--max-threads N] [--limits-only]
// --limits-only: the memory-read and arithmetic probes alone.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <latch>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "backend/sharded/sharded_backend.hpp"
#include "bench_host.hpp"
#include "core/engine_config.hpp"
#include "tools/gen/generator.hpp"

using namespace gaspp;
using namespace gaspp::bench;

namespace {

enum class Stages { decode, flow, stream };
const char* const kStageNames[] = {"decode", "flow", "stream"};

// The CPU backend's configuration for a stage set: decode alone, + flow tracking, + reassembly.
BackendConfig cpu_config(Stages st, uint32_t batch, int threads) {
  BackendConfig bc;
  bc.batch_packets = batch;
  bc.threads = threads;
  bc.flow.enabled = st != Stages::decode;
  bc.stream.enabled = st == Stages::stream;
  return bc;
}

// The median of `reps` values of pass() after one more, first, that warms caches and pages.
template <class Pass>
double median_after_warmup(int reps, Pass&& pass) {
  std::vector<double> t;
  for (int rep = 0; rep < reps + 1; ++rep) {
    const double v = pass();
    if (rep) t.push_back(v);
  }
  return median(t);
}

// Seconds from starting `threads` threads running fn(k) (k = 0..threads-1), all released at
// once, until the last of them ends.
template <class Fn>
double together_s(int threads, Fn&& fn) {
  std::latch ready(threads + 1);
  std::vector<std::thread> th;
  for (int k = 0; k < threads; ++k)
    th.emplace_back([&, k] {
      ready.arrive_and_wait();
      fn(k);
    });
  const auto t0 = std::chrono::steady_clock::now();
  ready.count_down();
  for (auto& x : th) x.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// shards > 1: that many CPU backends of threads / shards threads each behind make_sharded_backend.
double measure(Stages st, const CaptureFile& cap, uint32_t batch, uint64_t packets, int reps, int threads,
               int shards = 1) {
  const auto batches = index_batches(cap, batch);
  const double s = median_after_warmup(reps, [&] {
    const BackendConfig bc = cpu_config(st, batch, threads);
    std::unique_ptr<Backend> be;
    if (shards <= 1) {
      be = make_cpu_backend(bc);
    } else {
      std::vector<std::unique_ptr<Backend>> parts;
      for (int k = 0; k < shards; ++k) parts.push_back(make_cpu_backend(shard_config(bc, k, shards, false, 1)));
      be = make_sharded_backend(std::move(parts), bc, threads);
    }
    return checked_pass(*be, cap, batches, packets, "bench_cpu");
  });
  return double(packets) / s / 1e6;
}

// One pass of the backend with reassembly and BackendConfig::stage_times (after the timed passes,
// so the clocks do not weigh on their figures): each stage's mean a batch and how busy it kept
// the threads. Written as a JSON array.
std::string stage_profile(const CaptureFile& cap, uint32_t batch, uint64_t packets, int threads) {
  const auto batches = index_batches(cap, batch);
  BackendConfig bc = cpu_config(Stages::stream, batch, threads);
  bc.stage_times = true;
  auto be = make_cpu_backend(bc);
  checked_pass(*be, cap, batches, packets, "bench_cpu");
  print_stage_times(*be, "+stream, " + std::to_string(threads) + " thread(s)");
  std::string json = "[";
  char b[256];
  for (const StageTime& t : be->stage_times()) {
    std::snprintf(b, sizeof b, "%s{\"stage\":\"%s\",\"mean_us\":%.2f,\"busy_share\":%.3f}", json.size() > 1 ? "," : "",
                  t.name.c_str(), t.mean_us(), t.busy_share());
    json += b;
  }
  return json + "]";
}

// `copies` backends of one thread each (+ reassembly, the CPU's batch size), each over the whole
// capture, all started together: aggregate Mpps (copies x packets over the wall time until the
// last one ends), median of reps after a warm-up. No executor that splits the same work over
// `copies` cores shares less than this.
double independent_mpps(const CaptureFile& cap, uint64_t packets, int copies, int reps) {
  const auto batches = index_batches(cap, kCpuBatchPackets);
  const double s = median_after_warmup(reps, [&] {
    std::vector<std::unique_ptr<Backend>> bes;  // built outside the timing
    for (int k = 0; k < copies; ++k) bes.push_back(make_cpu_backend(cpu_config(Stages::stream, kCpuBatchPackets, 1)));
    return together_s(copies, [&](int k) { checked_pass(*bes[size_t(k)], cap, batches, packets, "bench_cpu"); });
  });
  return double(packets) * copies / s / 1e6;
}

std::atomic<uint64_t> g_sum{0};  // the loops' results land here, so their work is not dropped

// Iterations a second of `threads` threads each running `Chains` multiply-xorshift chains in
// registers (no memory), median of reps. One chain waits on each multiply's latency: its ratio at
// N threads to one thread is what the clock allows (turbo on one busy core against all cores
// busy). Eight independent chains keep a core's multiplier busy every cycle: two hardware threads
// of one physical core share it, so where the host's "cores" are hyperthreads of fewer physical
// cores (a virtual machine may not say), this ratio falls well below the first.
template <int Chains>
double compute_rate(int threads, int reps) {
  static_assert(Chains == 1 || Chains == 8);
  constexpr uint64_t kIters = 200'000'000 / Chains;
  constexpr uint64_t kMul = 0xbf58476d1ce4e5b9ull;
  const double s = median_after_warmup(reps, [&] {
    return together_s(threads, [](int k) {
      // Named variables, not an array: the compiler keeps them in registers (an array's loop
      // over the chains went through the stack).
      uint64_t a = 0x9e3779b97f4a7c15ull + uint64_t(k), b = a + 1, c = a + 2, d = a + 3, e = a + 4, f = a + 5,
               g = a + 6, h = a + 7;
      auto step = [](uint64_t& v) {
        v *= kMul;
        v ^= v >> 31;
      };
      for (uint64_t i = 0; i < kIters; ++i) {
        step(a);
        if constexpr (Chains == 8) {
          step(b), step(c), step(d), step(e), step(f), step(g), step(h);
        }
      }
      g_sum += Chains == 8 ? a + b + c + d + e + f + g + h : a;
    });
  });
  return double(kIters) * Chains * threads / s;
}

// GB/s of `threads` threads summing their share of a buffer (each 8 bytes read once), median.
double read_gbps(const std::vector<uint64_t>& buf, int threads, int reps) {
  const size_t per = buf.size() / size_t(threads);
  const double s = median_after_warmup(reps, [&] {
    return together_s(threads, [&](int k) {
      const uint64_t* p = buf.data() + per * size_t(k);
      uint64_t a = 0, b = 0, c = 0, d = 0;
      for (size_t i = 0; i + 4 <= per; i += 4) {
        a += p[i];
        b += p[i + 1];
        c += p[i + 2];
        d += p[i + 3];
      }
      g_sum += a + b + c + d;
    });
  });
  return double(per * size_t(threads) * 8) / s / 1e9;
}

// The first line a command prints (empty when it cannot run).
std::string first_line(const std::string& cmd) {
  std::string line;
  if (std::FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[1024] = {};
    if (std::fgets(buf, sizeof buf, p)) line = buf;
    ::pclose(p);
  }
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  return line;
}

double json_number(const std::string& text, const std::string& key) {
  const auto at = text.find("\"" + key + "\":");
  return at == std::string::npos ? 0 : std::atof(text.c_str() + at + key.size() + 3);
}

// gaspp -r end to end on the CPU: Mpps from its --stats-json, median of reps after a warm-up.
double gaspp_mpps(const std::string& gaspp, const std::string& path, int threads, int reps, const std::string& tmp) {
  std::vector<double> v;
  const std::string stats = tmp + "/bench-cpu-stats.json";
  for (int rep = 0; rep < reps + 1; ++rep) {
    const std::string cmd = gaspp + " -r " + path + " --backend cpu -q --threads " + std::to_string(threads) +
                            " --stats-json " + stats + " >/dev/null 2>&1";
    if (std::system(cmd.c_str()) != 0) return 0;
    std::ifstream in(stats);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (rep) v.push_back(json_number(text, "pps") / 1e6);
  }
  ::unlink(stats.c_str());
  return median(v);
}

}  // namespace

int main(int argc, char** argv) {
  std::string json_path, tmp = "/tmp", nids, gaspp, commit = "unknown";
  std::vector<std::string> captures;
  int reps = 5, max_threads = int(std::thread::hardware_concurrency());
  bool limits_only = false;  // the memory and arithmetic probes alone
  uint64_t npk = 2'000'000;
  for (int i = 1; i < argc; ++i) {
    const std::string o = argv[i];
    const bool value = i + 1 < argc;
    if (value && o == "--json") json_path = argv[++i];
    else if (value && o == "--reps") reps = std::max(1, std::atoi(argv[++i]));
    else if (value && o == "--packets") npk = std::strtoull(argv[++i], nullptr, 10);
    else if (value && o == "--tmp") tmp = argv[++i];
    else if (value && o == "--nids") nids = argv[++i];
    else if (value && o == "--gaspp") gaspp = argv[++i];
    else if (value && o == "--capture") captures.push_back(argv[++i]);
    else if (value && o == "--commit") commit = argv[++i];
    else if (value && o == "--max-threads") max_threads = std::max(1, std::atoi(argv[++i]));
    else if (o == "--limits-only") limits_only = true;
    else {
      std::fprintf(stderr,
                   "usage: bench_cpu [--json PATH] [--reps N] [--packets N] [--tmp DIR] [--nids PATH] [--gaspp PATH] "
                   "[--capture PATH]... [--commit SHA] [--max-threads N] [--limits-only]\n");
      return 1;
    }
  }
  std::vector<int> counts;
  for (int t = 1; t < max_threads; t *= 2) counts.push_back(t);
  counts.push_back(max_threads);
  const std::string device = cpu_model_name();
  std::printf("host: %s, %d threads used at most\n", device.c_str(), max_threads);

  std::vector<uint64_t> buf((1ull << 30) / 8);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = i * 0x9e3779b97f4a7c15ull;
  const double read1 = read_gbps(buf, 1, reps), readn = read_gbps(buf, max_threads, reps);
  buf = {};
  std::printf("memory read: %.1f GB/s one thread, %.1f GB/s %d threads\n", read1, readn, max_threads);
  const double comp1 = compute_rate<1>(1, reps), compn = compute_rate<1>(max_threads, reps);
  const double wide1 = compute_rate<8>(1, reps), widen = compute_rate<8>(max_threads, reps);
  std::printf("register-only arithmetic: %d threads do %.2fx one thread (one chain), %.2fx (eight chains)\n", max_threads,
              compn / comp1, widen / wide1);

  struct Work {
    std::string name, path;
    bool generated;
  };
  std::vector<Work> works;
  for (const char* mode : {"http", "mix"}) {
    GenConfig g;
    g.mode = parse_gen_mode(mode);
    g.packets = npk;
    g.flows = g.mode == GenMode::http ? 1000 : 10000;
    g.seed = 7;
    if (g.mode == GenMode::mix) g.ipv6_share = g.vlan_share = 0.1;
    const std::string path = tmp + "/gaspp-bench-cpu-" + mode + ".pcap";
    generate_pcap(g, path);
    works.push_back({mode, path, true});
  }
  for (const std::string& c : captures) works.push_back({c.substr(c.find_last_of('/') + 1), c, false});

  std::string json = "{\"device\":\"" + device + "\",\"commit\":\"" + commit +
                     "\",\"command\":\"scripts/device/run.sh " + (limits_only ? "bench-cpu-limits" : "bench-cpu") +
                     "\",\"host_threads\":" +
                     std::to_string(std::thread::hardware_concurrency()) + ",\"reps\":" + std::to_string(reps) +
                     ",\"cpu_batch_packets\":" + std::to_string(kCpuBatchPackets) + ",";
  char b[512];
  std::snprintf(b, sizeof b, "\"memory_read_gbs\":{\"1t\":%.2f,\"%dt\":%.2f},", read1, max_threads, readn);
  json += b;
  std::snprintf(b, sizeof b, "\"compute_scaling\":{\"threads\":%d,\"over_1t\":%.3f,\"eight_chains_over_1t\":%.3f},",
                max_threads, compn / comp1, widen / wide1);
  json += b;
  if (limits_only) return write_file(json_path, json.substr(0, json.size() - 1) + "}\n") ? 0 : 1;
  json += "\"workloads\":[";
  double http1 = 0, httpn = 0, nids_http = 0, http_sharded = 0, http_indep = 0;
  for (size_t w = 0; w < works.size(); ++w) {
    const Work& wk = works[w];
    const CaptureFile cap = CaptureFile::open(wk.path);
    const CaptureSize size = capture_size(cap);
    std::printf("\n%s: %llu packets, %.0f bytes a record\n", wk.name.c_str(), (unsigned long long)size.packets,
                size.mean_record());
    std::printf("%-8s %7s %9s %9s %9s\n", "threads", "batch", "decode", "+flow", "+stream");
    json += std::string(w ? "," : "") + "{\"workload\":\"" + wk.name + "\",\"packets\":" + std::to_string(size.packets) +
            ",\"runs\":[";
    bool first = true;
    double stream1 = 0, streamn = 0;
    for (uint32_t batch : {kCpuBatchPackets, 16384u, 32768u, 65536u}) {
      for (int t : counts) {
        // Other batch sizes: one thread and all threads only (at 16384 and 32768 all threads only).
        if (batch != kCpuBatchPackets && t != max_threads && !(t == 1 && batch == 65536u)) continue;
        double m[3];
        for (Stages st : {Stages::decode, Stages::flow, Stages::stream})
          m[int(st)] = measure(st, cap, batch, size.packets, reps, t);
        if (batch == kCpuBatchPackets && t == 1) stream1 = m[2];
        if (batch == kCpuBatchPackets && t == max_threads) streamn = m[2];
        std::printf("%-8d %7u %9.3f %9.3f %9.3f\n", t, batch, m[0], m[1], m[2]);
        std::snprintf(b, sizeof b, "%s{\"threads\":%d,\"batch\":%u,\"mpps\":{\"%s\":%.4f,\"%s\":%.4f,\"%s\":%.4f}}",
                      first ? "" : ",", t, batch, kStageNames[0], m[0], kStageNames[1], m[1], kStageNames[2], m[2]);
        json += b;
        first = false;
      }
    }
    json += "]";
    // Where a batch's time goes, one thread against all of them.
    json += ",\"stage_times\":{";
    for (int t : {1, max_threads}) {
      json += (t == 1 ? "\"" : ",\"") + std::to_string(t) + "t\":" + stage_profile(cap, kCpuBatchPackets, size.packets, t);
      if (max_threads == 1) break;
    }
    json += "}";
    // The flows sharded over backends: N x 1 thread and N/4 x 4 threads (all threads in all).
    json += ",\"sharded\":[";
    bool first_sh = true;
    for (int per : {1, 4}) {
      const int shards = std::max(1, max_threads / per);
      if (shards < 2) continue;
      const double m = measure(Stages::stream, cap, kCpuBatchPackets, size.packets, reps, max_threads, shards);
      std::printf("sharded: %d backends x %d thread(s), +stream: %.3f Mpps\n", shards, per, m);
      std::snprintf(b, sizeof b, "%s{\"shards\":%d,\"threads_each\":%d,\"stream_mpps\":%.4f}", first_sh ? "" : ",",
                    shards, per, m);
      json += b;
      first_sh = false;
      if (per == 1 && wk.name == "http") http_sharded = m;
    }
    json += "]";
    // N independent copies of the one-thread backend: the ceiling of any split over N cores.
    const double indep = max_threads > 1 ? independent_mpps(cap, size.packets, max_threads, reps) : stream1;
    std::printf("%d independent copies of one thread, +stream: %.3f Mpps (%.1fx one)\n", max_threads, indep,
                stream1 > 0 ? indep / stream1 : 0.0);
    std::snprintf(b, sizeof b, ",\"independent\":{\"copies\":%d,\"stream_mpps\":%.4f,\"over_1t\":%.3f}", max_threads,
                  indep, stream1 > 0 ? indep / stream1 : 0.0);
    json += b;
    if (wk.name == "http") http_indep = indep;
    double nids_mpps = 0;
    if (!nids.empty()) {
      const std::string peer = first_line(nids + " " + wk.path + " " + std::to_string(reps));
      nids_mpps = json_number(peer, "mpps");
      std::printf("libnids (one core): %.3f Mpps\n", nids_mpps);
      json += ",\"libnids\":" + (peer.empty() ? std::string("null") : peer);
    }
    std::snprintf(b, sizeof b, ",\"libnids_1t_mpps\":%.4f,\"stream_1t_over_libnids\":%.3f,\"stream_scaling_%dt\":%.3f",
                  nids_mpps, nids_mpps > 0 ? stream1 / nids_mpps : 0.0, max_threads, stream1 > 0 ? streamn / stream1 : 0.0);
    json += b;
    if (!gaspp.empty()) {
      const double e1 = gaspp_mpps(gaspp, wk.path, 1, std::max(1, reps / 2), tmp);
      const double en = gaspp_mpps(gaspp, wk.path, max_threads, std::max(1, reps / 2), tmp);
      std::printf("gaspp -r end to end: %.3f Mpps one thread, %.3f Mpps %d threads\n", e1, en, max_threads);
      std::snprintf(b, sizeof b, ",\"gaspp_end_to_end_mpps\":{\"1t\":%.4f,\"%dt\":%.4f}", e1, max_threads, en);
      json += b;
    }
    json += "}";
    if (wk.name == "http") {
      http1 = stream1;
      httpn = streamn;
      nids_http = nids_mpps;
    }
    if (wk.generated) ::unlink(wk.path.c_str());
  }
  std::snprintf(b, sizeof b,
                "],\"http_reassembly_1t_mpps\":%.4f,\"http_reassembly_%dt_mpps\":%.4f,\"libnids_1t_mpps\":%.4f,"
                "\"http_reassembly_sharded_1t_each_mpps\":%.4f,\"http_reassembly_independent_mpps\":%.4f,"
                "\"targets\":{\"http_1t_over_libnids\":{\"target\":2,\"measured\":%.3f},"
                "\"http_scaling\":{\"threads\":%d,\"target\":12,\"measured\":%.3f,"
                "\"independent_copies_bound\":%.3f,\"compute_bound\":%.3f,\"compute_eight_chains_bound\":%.3f}}}\n",
                http1, max_threads, httpn, nids_http, http_sharded, http_indep, nids_http > 0 ? http1 / nids_http : 0.0,
                max_threads, http1 > 0 ? httpn / http1 : 0.0, http1 > 0 ? http_indep / http1 : 0.0, compn / comp1,
                widen / wide1);
  json += b;
  std::printf("\nhttp with reassembly: %.3f Mpps one thread (%.2fx libnids), %.3f Mpps %d threads (%.1fx one); "
              "sharded, one thread a backend: %.3f Mpps (%.1fx one); %d independent copies: %.3f Mpps (%.1fx one)\n",
              http1, nids_http > 0 ? http1 / nids_http : 0.0, httpn, max_threads, http1 > 0 ? httpn / http1 : 0.0,
              http_sharded, http1 > 0 ? http_sharded / http1 : 0.0, max_threads, http_indep,
              http1 > 0 ? http_indep / http1 : 0.0);
  return write_file(json_path, json) ? 0 : 1;
}
