// bench/bench_detect.cpp — the signature engine's throughput, in one run on the machine it runs on:
//   * the physical limit: pinned H2D bandwidth (bench_pipeline.hpp), as Gbit/s of each workload;
//   * workloads: the generator's HTTP (--flows connections) and the realistic mix, with planted
//     matches: one packet in --plant-every with payload gets a random fast pattern of the loaded
//     rules written at a random place (nocase ones in random case);
//   * rules: every file of --et DIR (all of ET Open that loads: the signatures need the payload);
//   * for each: Mpps and Gbit/s (captured frame bytes) of decode + flow + reassembly alone and with
//     the signature engine, CUDA and our CPU backend on all host threads; the Hyperscan prefilter
//     alone over the same payloads (each packet's payload a block, all host threads) and the
//     hashed prefilter alone on the host threads; median of --reps passes after a warm-up;
//   * the device's matchers alone on the GPU over the same payloads, already in device memory
//     (device_matchers.cuh: the hashed filter and Aho-Corasick, a thread or a warp per payload),
//     each checked to find as many pattern occurrences as the hashed filter on the host.
// Alerts come back to host memory as module events; formatting them is host work not timed.
//
// usage: bench_detect --et DIR [--json PATH] [--reps N] [--packets N] [--tmp DIR] [--batch N] [--plant-every N]
//                     [--flows N] [--cuda-only]
#include <hs/hs.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench_pipeline.hpp"
#include "bench_util.hpp"
#include "device_matchers.cuh"
#include "core/modules.hpp"
#include "decode/decoder.hpp"
#include "modules/detect/detect.hpp"
#include "tools/gen/generator.hpp"

using namespace gaspp;
using namespace gaspp::bench;

namespace {

struct Result {
  double mpps = 0, gbps = 0;
  std::vector<uint64_t> module_counts;
};

Result measure(bool cuda, const std::string& rules, const CaptureFile& cap, const std::vector<BatchDesc>& batches,
               uint32_t batch, uint64_t packets, uint64_t frame_bytes, int reps, int threads) {
  std::vector<double> t;
  Result r;
  for (int rep = 0; rep < reps + 1; ++rep) {
    ModuleSet mods;
    if (!rules.empty()) mods.add(make_module("detect", {{"rules", rules}}));
    BackendConfig bc;
    bc.batch_packets = batch;
    bc.batch_bytes = uint64_t(batch) * 1600;
    bc.threads = threads;
    bc.flow.capacity = 1u << 20;
    bc.modules = mods.pointers();
    bc.flow.module_state_bytes = mods.flow_state_bytes();
    auto be = cuda ? make_cuda_backend(bc) : make_cpu_backend(bc);
    std::vector<uint64_t> counts;
    const double s = checked_pass(*be, cap, batches, packets, "bench_detect", &counts);
    if (rep == 0) r.module_counts = counts;
    if (rep) t.push_back(s);
  }
  const double sec = median(t);
  r.mpps = double(packets) / sec / 1e6;
  r.gbps = double(frame_bytes) * 8 / sec / 1e9;
  return r;
}

struct Payload {
  uint64_t off;
  uint32_t len;
};

// Every packet's payload (captured part) in the capture's memory.
std::vector<Payload> payloads_of(const CaptureFile& cap, uint64_t* frame_bytes) {
  std::vector<Payload> out;
  RecordWalker w(cap);
  RecordInfo ri;
  DecodedPacket d;
  *frame_bytes = 0;
  while (w.next(ri)) {
    decode_record(cap.data() + ri.offset, cap.size() - ri.offset, cap.format(), cap.link(), d);
    *frame_bytes += d.cap_len[0];
    if (d.payload_off[0] == kNoOffset || d.payload_off[0] >= d.cap_len[0]) continue;
    const uint32_t len = std::min<uint32_t>(d.cap_len[0] - d.payload_off[0], d.payload_len[0]);
    if (len) out.push_back({ri.offset + 16 + d.payload_off[0], len});
  }
  return out;
}

// Writes a random fast pattern into one payload in `every` (where it fits); returns how many.
uint64_t plant(const std::string& path, const std::vector<std::pair<std::string, bool>>& pats, uint64_t every) {
  uint64_t planted = 0;
  const CaptureFile cap = CaptureFile::open(path);
  uint64_t fb;
  const std::vector<Payload> pl = payloads_of(cap, &fb);
  std::vector<uint8_t> bytes(cap.data(), cap.data() + cap.size());
  std::mt19937_64 rng(11);
  for (size_t k = 0; k < pl.size(); ++k) {
    if (every == 0 || rng() % every) continue;
    const auto& [p, nocase] = pats[rng() % pats.size()];
    if (p.size() > pl[k].len) continue;
    const uint64_t at = pl[k].off + rng() % (pl[k].len - p.size() + 1);
    for (size_t i = 0; i < p.size(); ++i)
      bytes[at + i] = uint8_t(nocase && (rng() & 1) ? std::toupper(static_cast<unsigned char>(p[i])) : p[i]);
    ++planted;
  }
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  return f.good() ? planted : 0;
}

// A prefilter over every payload on `threads` host threads; returns the median seconds.
template <class Scan>
double prefilter_alone(const CaptureFile& cap, const std::vector<Payload>& pl, int threads, int reps, Scan&& make_scan,
                       uint64_t* hits) {
  std::vector<double> t;
  for (int rep = 0; rep < reps + 1; ++rep) {
    std::atomic<uint64_t> total{0};
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> th;
    for (int k = 0; k < threads; ++k)
      th.emplace_back([&, k] {
        auto scan = make_scan();
        uint64_t n = 0;
        for (size_t i = size_t(k); i < pl.size(); i += size_t(threads)) n += scan(cap.data() + pl[i].off, pl[i].len);
        total += n;
      });
    for (auto& x : th) x.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (rep) t.push_back(s);
    *hits = total;
  }
  return median(t);
}

int on_match(unsigned, unsigned long long, unsigned long long, unsigned, void* ctx) {
  ++*static_cast<uint64_t*>(ctx);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t plant_every = 1000;
  uint32_t flows = 1000;
  bool cuda_only = false;
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string o = argv[i];
    if (o == "--plant-every" && i + 1 < argc) plant_every = std::stoull(argv[++i]);
    else if (o == "--flows" && i + 1 < argc) flows = uint32_t(std::stoul(argv[++i]));
    else if (o == "--cuda-only") cuda_only = true;
    else rest.push_back(argv[i]);
  }
  BenchArgs args;
  args.packets = 2'000'000;
  if (!parse_bench_args(int(rest.size()), rest.data(), "bench_detect", "--et", "DIR", args)) return 1;
  if (args.extra.empty()) {
    std::fprintf(stderr, "bench_detect: --et DIR (ET Open's rule files) is required\n");
    return 1;
  }
  std::vector<std::string> files;
  for (auto& e : std::filesystem::directory_iterator(args.extra))
    if (e.path().extension() == ".rules") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  std::string rules;
  for (const auto& f : files) rules += (rules.empty() ? "" : ",") + f;
  const cudaDeviceProp prop = require_cuda("bench_detect");
  const int host_threads = int(std::thread::hardware_concurrency());
  std::printf("device: %s, %d SMs; host threads: %d\n", prop.name, prop.multiProcessorCount, host_threads);
  const Bandwidth bw = measure_bandwidth(args.reps);
  std::printf("limits: H2D %.1f GB/s (%.0f Gbit/s)\n", bw.h2d_64m, bw.h2d_64m * 8);
  // The rule set once, for its patterns and the load time.
  const auto l0 = std::chrono::steady_clock::now();
  DetectModule::Host host({{"rules", rules}, {"matcher", "ac"}});
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - l0).count();
  const auto& pats = host.fast_patterns();
  std::map<std::string, uint64_t> rep_counts;
  host.report(rep_counts);
  std::printf("rules: %llu signatures, %zu fast patterns, loaded in %.2f s\n",
              (unsigned long long)rep_counts["signatures"], pats.size(), load_s);
  hs_database_t* db = nullptr;
  {
    std::vector<const char*> p;
    std::vector<size_t> l;
    std::vector<unsigned> fl, id;
    for (unsigned k = 0; k < pats.size(); ++k) {
      p.push_back(pats[k].first.data());
      l.push_back(pats[k].first.size());
      fl.push_back(HS_FLAG_SINGLEMATCH | (pats[k].second ? HS_FLAG_CASELESS : 0));
      id.push_back(k);
    }
    hs_compile_error_t* err = nullptr;
    if (hs_compile_lit_multi(p.data(), fl.data(), id.data(), l.data(), unsigned(p.size()), HS_MODE_BLOCK, nullptr, &db, &err) !=
        HS_SUCCESS) {
      std::fprintf(stderr, "bench_detect: Hyperscan: %s\n", err ? err->message : "?");
      return 1;
    }
  }
  hs_scratch_t* proto = nullptr;
  hs_alloc_scratch(db, &proto);
  PrefilterTables pft;
  pft.compile(pats);
  struct InPlace final : TableMemory {
    const void* place(const void* h, size_t) override { return h; }
  } here;
  const PrefilterView pfv = pft.place(here);

  char buf[4096];
  std::string json = "{\"device\":\"" + std::string(prop.name) + "\",\"host_threads\":" + std::to_string(host_threads) +
                     ",\"reps\":" + std::to_string(args.reps) + ",\"batch_packets\":" + std::to_string(args.batch) +
                     ",\"packets_per_workload\":" + std::to_string(args.packets) + ",";
  std::snprintf(buf, sizeof buf,
                "\"limits\":{\"h2d_gbs_64m\":%.2f,\"h2d_gbit_s\":%.1f},\"rules\":{\"signatures\":%llu,\"fast_patterns\":%zu,"
                "\"load_seconds\":%.3f},\"plant_every\":%llu,\"targets\":{\"http_gbit_s\":200,\"mix_fraction_of_link\":0.9},"
                "\"workloads\":[",
                bw.h2d_64m, bw.h2d_64m * 8, (unsigned long long)rep_counts["signatures"], pats.size(), load_s,
                (unsigned long long)plant_every);
  json += buf;
  std::printf("\n%-5s | %8s %8s | %8s %8s | %8s %8s | %8s %8s | %8s %8s | %6s\n", "work", "cu base", "cu det", "cu Gb/s",
              "cpu det", "cpu Gb/s", "hs Gb/s", "hs Mpps", "hash Gb", "lim Gb/s", "x hs", "alerts");
  bool first = true;
  for (const char* mode : {"http", "mix"}) {
    GenConfig g;
    g.mode = parse_gen_mode(mode);
    g.packets = args.packets;
    g.flows = flows;
    g.seed = 5;
    const std::string path = args.tmp + "/gaspp-bench-detect-" + mode + ".pcap";
    generate_pcap(g, path);
    const uint64_t planted = plant(path, pats, plant_every);
    const CaptureFile cap = CaptureFile::open(path);
    const CaptureSize size = capture_size(cap);
    const uint64_t packets = size.packets;
    uint64_t frame_bytes = 0;
    const std::vector<Payload> pl = payloads_of(cap, &frame_bytes);
    uint64_t payload_bytes = 0;
    for (const Payload& p : pl) payload_bytes += p.len;
    const auto batches = index_batches(cap, args.batch);
    const double limit_gbit = bw.h2d_64m * 8 * double(frame_bytes) / double(cap.size());
    const Result cu0 = measure(true, "", cap, batches, args.batch, packets, frame_bytes, args.reps, 0);
    const Result cu = measure(true, rules, cap, batches, args.batch, packets, frame_bytes, args.reps, 0);
    const Result cp = cuda_only ? Result{}
                                : measure(false, rules, cap, batches, args.batch, packets, frame_bytes,
                                          std::max(1, args.reps / 2 + 1), host_threads);
    if (!cuda_only && cp.module_counts != cu.module_counts)
      std::fprintf(stderr, "bench_detect: %s: module counters differ between CUDA and CPU\n", mode);
    uint64_t hs_hits = 0, hash_hits = 0;
    const double hs_s = prefilter_alone(cap, pl, host_threads, args.reps, [&] {
      hs_scratch_t* s = nullptr;
      hs_clone_scratch(proto, &s);
      return [s, db, n = uint64_t(0)](const uint8_t* p, uint32_t len) mutable {
        uint64_t c = 0;
        hs_scan(db, reinterpret_cast<const char*>(p), len, 0, s, on_match, &c);
        return c;
      };
    }, &hs_hits);
    const double hash_s = prefilter_alone(cap, pl, host_threads, args.reps, [&] {
      return [&](const uint8_t* p, uint32_t len) {
        uint64_t c = 0;
        prefilter_scan(pfv, p, len, [&](uint32_t) { ++c; });
        return c;
      };
    }, &hash_hits);
    std::vector<std::pair<uint64_t, uint32_t>> spans;
    for (const Payload& p : pl) spans.emplace_back(p.off, p.len);
    const std::vector<DeviceMatcherFigures> dm = device_matchers_alone(host, cap.data(), spans, args.reps);
    std::string dm_json;
    for (const DeviceMatcherFigures& f : dm) {
      const double gbit = double(frame_bytes) * 8 / f.seconds / 1e9;
      std::printf("  %s: device matcher %-12s %8.1f Gbit/s (frames), %7.1f GB/s of payload, %llu hits%s\n", mode,
                  f.name.c_str(), gbit, double(payload_bytes) / f.seconds / 1e9, (unsigned long long)f.hits,
                  f.hits == hash_hits ? "" : "  MISMATCH with the host's count");
      if (f.hits != hash_hits) {
        std::fprintf(stderr, "bench_detect: %s: device matcher %s found %llu occurrences, the host %llu\n", mode,
                     f.name.c_str(), (unsigned long long)f.hits, (unsigned long long)hash_hits);
        return 1;
      }
      char fb[256];
      std::snprintf(fb, sizeof fb, "%s\"%s\":{\"gbit_s\":%.2f,\"payload_gbs\":%.2f}", dm_json.empty() ? "" : ",",
                    f.name.c_str(), gbit, double(payload_bytes) / f.seconds / 1e9);
      dm_json += fb;
    }
    const double hs_gbit = double(frame_bytes) * 8 / hs_s / 1e9, hs_mpps = double(packets) / hs_s / 1e6;
    const double hash_gbit = double(frame_bytes) * 8 / hash_s / 1e9;
    const uint64_t events = cu.module_counts.size() > size_t(mc_events) ? cu.module_counts[size_t(mc_events)] : 0;
    std::printf("%-5s | %8.2f %8.2f | %8.1f %8.2f | %8.1f %8.1f | %8.2f %8.1f | %8.1f %8.2f | %6llu\n", mode, cu0.mpps,
                cu.mpps, cu.gbps, cp.mpps, cp.gbps, hs_gbit, hs_mpps, hash_gbit, limit_gbit, cu.gbps / hs_gbit,
                (unsigned long long)events);
    std::snprintf(buf, sizeof buf,
                  "%s{\"workload\":\"%s\",\"packets\":%llu,\"frame_bytes\":%llu,\"payload_bytes\":%llu,\"planted\":%llu,"
                  "\"limit_gbit_s\":%.2f,\"cuda\":{\"base_mpps\":%.3f,\"base_gbit_s\":%.2f,\"detect_mpps\":%.3f,\"detect_gbit_s\":%.2f},"
                  "\"cpu\":{\"detect_mpps\":%.3f,\"detect_gbit_s\":%.2f},\"hyperscan_prefilter_alone\":{\"gbit_s\":%.2f,\"mpps\":%.3f,"
                  "\"hits\":%llu},\"hashed_prefilter_alone_host\":{\"gbit_s\":%.2f,\"hits\":%llu},\"detect_events\":%llu,"
                  "\"cuda_over_hyperscan\":%.3f,\"cuda_fraction_of_link\":%.4f,\"device_matchers_alone\":{%s}}",
                  first ? "" : ",", mode, (unsigned long long)packets, (unsigned long long)frame_bytes,
                  (unsigned long long)payload_bytes, (unsigned long long)planted, limit_gbit, cu0.mpps, cu0.gbps, cu.mpps,
                  cu.gbps, cp.mpps, cp.gbps, hs_gbit, hs_mpps, (unsigned long long)hs_hits, hash_gbit,
                  (unsigned long long)hash_hits, (unsigned long long)events, cu.gbps / hs_gbit, cu.gbps / limit_gbit,
                  dm_json.c_str());
    json += buf;
    first = false;
    ::unlink(path.c_str());
  }
  json += "]}\n";
  hs_free_scratch(proto);
  hs_free_database(db);
  return write_file(args.json, json) ? 0 : 1;
}
