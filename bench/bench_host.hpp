// bench/bench_host.hpp — what every benchmark program shares, CUDA or not: the options, the
// median of timed runs, writing the JSON result, a capture indexed into batches beforehand, and one
// timed pass of those batches through a backend's rotating slots.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "capture/capture_file.hpp"
#include "decode/decoder.hpp"

namespace gaspp::bench {

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The host CPU's model name (/proc/cpuinfo).
inline std::string cpu_model_name() {
  std::FILE* f = std::fopen("/proc/cpuinfo", "r");
  char line[512];
  std::string name = "unknown CPU";
  while (f && std::fgets(line, sizeof line, f)) {
    const std::string l = line;
    if (l.rfind("model name", 0) == 0 && l.find(':') != std::string::npos) {
      name = l.substr(l.find(':') + 2);
      while (!name.empty() && name.back() == '\n') name.pop_back();
      break;
    }
  }
  if (f) std::fclose(f);
  return name;
}

// Writes `text` to `path` (nothing when path is empty); false after printing why if it cannot.
inline bool write_file(const std::string& path, const std::string& text) {
  if (path.empty()) return true;
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) {
    std::perror(path.c_str());
    return false;
  }
  std::fputs(text.c_str(), f);
  return std::fclose(f) == 0;
}

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
  for (const StageTime& t : st) {
    std::printf(" %s %.1f", t.name.c_str(), t.mean_us());
    if (t.threads) std::printf(" (%.0f%% busy)", 100.0 * t.busy_share());
    std::printf(";");
  }
  std::printf("\n");
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


inline std::string v4(uint32_t a) {
  return std::to_string(a >> 24) + "." + std::to_string((a >> 16) & 255) + "." + std::to_string((a >> 8) & 255) + "." +
         std::to_string(a & 255);
}

// n random firewall rules (alert/drop/pass, IPv4/IPv6 prefixes and addresses, port ranges, some
// `<>`); every 32nd uses an endpoint of the traffic, so that some verdicts and alerts happen.
// Returns the path, "" when it cannot be written.
inline std::string random_rules(const std::string& path, const CaptureFile& cap, uint32_t n) {
  std::vector<uint32_t> seen;
  {
    RecordWalker w(cap);
    RecordInfo ri;
    DecodedPacket d;
    while (w.next(ri) && seen.size() < 4096) {
      decode_record(cap.data() + ri.offset, cap.size() - ri.offset, cap.format(), cap.link(), d);
      if (d.l3[0] == uint8_t(L3::ipv4)) seen.push_back(__builtin_bswap32(d.dst_ip[0]));
    }
  }
  std::mt19937_64 rng(42);
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return "";
  const char* acts[] = {"alert", "drop", "pass", "alert"};
  const char* protos[] = {"tcp", "udp", "ip", "tcp"};
  for (uint32_t k = 0; k < n; ++k) {
    auto addr = [&]() -> std::string {
      const uint64_t c = rng() % 16;
      if (c < 3) return "any";
      if (c == 3) {
        char b[64];
        std::snprintf(b, sizeof b, "2001:db8:%x:%x::/%d", unsigned(rng() & 0xffff), unsigned(rng() & 0xffff), int(32 + rng() % 97));
        return b;
      }
      const uint32_t a = (k % 32 == 0 && !seen.empty()) ? seen[rng() % seen.size()] : uint32_t(rng());
      return c < 10 ? v4(a) : v4(a) + "/" + std::to_string(16 + rng() % 17);
    };
    auto port = [&]() -> std::string {
      const uint64_t c = rng() % 4;
      const uint32_t p = uint32_t(rng() % 65536);
      if (c == 0) return "any";
      if (c == 1) return std::to_string(p);
      return std::to_string(p) + ":" + std::to_string(std::min<uint32_t>(65535, p + uint32_t(rng() % 2048)));
    };
    const char* proto = protos[rng() % 4];
    std::fprintf(f, "%s %s %s %s %s %s %s (msg:\"random %u\"; sid:%u;)\n", acts[rng() % 4], proto, addr().c_str(),
                 port().c_str(), rng() % 8 ? "->" : "<>", addr().c_str(), port().c_str(), k + 1, k + 1);
  }
  std::fclose(f);
  return path;
}

}  // namespace gaspp::bench
