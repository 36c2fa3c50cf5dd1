// bench/bench_live.cpp — live capture throughput and latency, in one run on one machine: frames sent
// into one end of a veth pair are captured at the other end by
//   * a bare AF_PACKET reader that does nothing (rings of gaspp's default shape and of the version
//     gaspp is given, --af-packet-version; --rings N of them in one fanout group, gaspp then reading
//     N rings too: it counts each block's or slot's frames and hands it back) — the limit of the
//     kernel path here;
//   * `gaspp -i` on each backend asked for (--backend cpu,cuda), with the modules given after --
//     (decode + flow + the firewall on ET's IP lists, say), at 1%, 10% and 100% of the limit.
// The sender (--threads threads, each a PACKET_TX_RING socket that bypasses the queueing
// discipline, output/packet_tx_ring.hpp) replays a workload of the generator, 64-byte frames over
// 10,000 flows or the mix, for --seconds, paced to a rate or as fast as it goes. A veth delivers
// on the sending CPU, so the sender's threads also run the kernel's receive path (into one ring,
// under its lock, unless there are several); the bare reader's rate is what that path delivers
// with nothing behind it.
//
// Per run: frames sent, frames the ring took (the kernel's count less its drops), kernel drops,
// Mpps delivered (taken / seconds of sending) and, for gaspp, the latency from the kernel's receive
// timestamp to the verdict (the stats JSON's `latency`: median and p99). Runs at full rate are
// repeated --reps times (median); paced ones once. A frame the veth itself dropped (its backlog)
// never reached the ring and is counted by neither side: "sent" and "taken" then differ.
//
// Needs root (packet sockets) and a veth pair whose ends are up: scripts/device/run.sh bench-live
// makes one in a namespace of its own.
//
// usage: bench_live --tx IFACE --rx IFACE --gaspp PATH [--backend cpu,cuda] [--seconds S] [--reps N]
//                   [--threads N] [--rings N] [--json PATH] [--commit SHA] [--device TEXT] [-- GASPP ARGS...]
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <arpa/inet.h>
#include <atomic>
#include <chrono>
#include <deque>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench_host.hpp"
#include "output/packet_tx_ring.hpp"
#include "tools/gen/generator.hpp"

extern char** environ;

using namespace gaspp;
using namespace gaspp::bench;
using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

namespace {

struct Workload {
  std::string name;
  std::vector<uint8_t> bytes;
  std::vector<uint32_t> off, len;
};

Workload make_workload(const std::string& name) {
  GenConfig g;
  g.seed = 11;
  g.flows = 10000;
  if (name == "64B") {
    g.mode = GenMode::fixed;
    g.size = 64;
    g.packets = 1u << 20;
  } else {
    g.mode = GenMode::mix;
    g.packets = 1u << 18;
  }
  Workload w;
  w.name = name;
  generate(g, [&](uint64_t, const uint8_t* frame, uint32_t len) {
    w.off.push_back(uint32_t(w.bytes.size()));
    w.len.push_back(len);
    w.bytes.insert(w.bytes.end(), frame, frame + len);
  });
  return w;
}

// Sends the workload out of iface from `threads` threads for `seconds`, each thread its own share
// of the frames over and over; pps_total 0: as fast as it goes. Returns frames sent.
struct SendResult {
  uint64_t sent = 0, lost = 0;
  double seconds = 0;
};
SendResult send_for(const Workload& w, const std::string& iface, int threads, double seconds, double pps_total) {
  std::atomic<uint64_t> sent{0}, lost{0};
  std::vector<std::thread> ts;
  const auto t0 = Clock::now();
  const auto end = t0 + std::chrono::duration<double>(seconds);
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      PacketTxRing tx(TxRingOptions{.iface = iface, .frame_size = 0, .frame_count = 4096, .qdisc_bypass = true});
      const double pps = pps_total / threads;
      const size_t n = w.off.size();
      size_t i = size_t(t);
      uint64_t mine = 0;
      // Frames a send call takes: bursts of 64 at full rate, of 4 when paced (a paced sender's
      // bursts would otherwise be the latency it measures).
      const uint32_t kChunk = pps > 0 ? 4 : 64;
      while (Clock::now() < end) {
        for (uint32_t k = 0; k < kChunk; ++k) {
          tx.queue(w.bytes.data() + w.off[i], w.len[i]);
          i += size_t(threads);
          if (i >= n) i = size_t(t);
        }
        tx.flush();
        mine += kChunk;
        if (pps > 0) {  // paced: wait until this thread's schedule has caught up
          const auto due = t0 + std::chrono::duration<double>(double(mine) / pps);
          while (Clock::now() < due && Clock::now() < end) {
            const auto left = due - Clock::now();
            if (left > std::chrono::microseconds(200)) std::this_thread::sleep_for(left - std::chrono::microseconds(100));
          }
        }
      }
      tx.flush();
      sent += tx.sent();
      lost += tx.send_errors() + tx.too_large();
    });
  }
  for (auto& t : ts) t.join();
  SendResult r;
  r.sent = sent;
  r.lost = lost;
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

// The bare reader: `rings` packet sockets on iface (several: one PACKET_FANOUT group, flows
// spread by hash, as gaspp's --af-packet-rings), each with its own thread and a ring of gaspp's
// default shape (1 MiB blocks, 128 of them; TPACKET_V3 with a 10 ms block timeout, or TPACKET_V2
// slots of 2 KiB when version is 2). It counts frames and hands each block or slot straight back,
// until stop; then reads the kernel's counters.
struct ReadResult {
  uint64_t frames = 0, kernel_packets = 0, kernel_drops = 0;
};
class BareReader {
 public:
  BareReader(const std::string& iface, int version, int rings) : version_(version) {
    const int group = int(getpid() & 0xffff);
    for (int k = 0; k < rings; ++k) {
      Ring& r = rings_.emplace_back();
      r.fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
      if (r.fd < 0) throw std::runtime_error("bare reader: socket: " + std::string(std::strerror(errno)));
      int v = version == 2 ? TPACKET_V2 : TPACKET_V3;
      setsockopt(r.fd, SOL_PACKET, PACKET_VERSION, &v, sizeof v);
      tpacket_req3 req{};
      req.tp_block_size = kBlock;
      req.tp_block_nr = kBlocks;
      req.tp_frame_size = kSlot;
      req.tp_frame_nr = kBlock / kSlot * kBlocks;
      req.tp_retire_blk_tov = version == 2 ? 0 : 10;
      if (setsockopt(r.fd, SOL_PACKET, PACKET_RX_RING, &req, version == 2 ? sizeof(tpacket_req) : sizeof req) < 0)
        throw std::runtime_error("bare reader: ring: " + std::string(std::strerror(errno)));
      void* m = mmap(nullptr, size_t(kBlock) * kBlocks, PROT_READ | PROT_WRITE, MAP_SHARED, r.fd, 0);
      if (m == MAP_FAILED) throw std::runtime_error("bare reader: mmap: " + std::string(std::strerror(errno)));
      r.ring = static_cast<uint8_t*>(m);
      sockaddr_ll sll{};
      sll.sll_family = AF_PACKET;
      sll.sll_protocol = htons(ETH_P_ALL);
      sll.sll_ifindex = int(if_nametoindex(iface.c_str()));
      if (bind(r.fd, reinterpret_cast<sockaddr*>(&sll), sizeof sll) < 0)
        throw std::runtime_error("bare reader: bind " + iface + ": " + std::strerror(errno));
      if (rings > 1) {
        const int arg = group | (PACKET_FANOUT_HASH << 16);
        if (setsockopt(r.fd, SOL_PACKET, PACKET_FANOUT, &arg, sizeof arg) < 0)
          throw std::runtime_error("bare reader: fanout: " + std::string(std::strerror(errno)));
      }
      stats(r);  // from zero
    }
    for (Ring& r : rings_) r.th = std::thread([this, &r] { version_ == 2 ? loop_v2(r) : loop_v3(r); });
  }
  ReadResult finish() {
    stop_ = true;
    ReadResult out;
    for (Ring& r : rings_) {
      r.th.join();
      stats(r);
      out.frames += r.frames;
      out.kernel_packets += r.kp;
      out.kernel_drops += r.kd;
      munmap(r.ring, size_t(kBlock) * kBlocks);
      close(r.fd);
    }
    return out;
  }

 private:
  static constexpr uint32_t kBlock = 1u << 20, kBlocks = 128, kSlot = 2048;
  struct Ring {
    int fd = -1;
    uint8_t* ring = nullptr;
    std::thread th;
    uint64_t frames = 0, kp = 0, kd = 0;
  };
  static void stats(Ring& r) {
    tpacket_stats_v3 st{};
    socklen_t l = sizeof st;
    getsockopt(r.fd, SOL_PACKET, PACKET_STATISTICS, &st, &l);  // since the last read; packets include drops
    r.kp += st.tp_packets;
    r.kd += st.tp_drops;
  }
  void wait(const Ring& r) const {
    pollfd p{r.fd, POLLIN | POLLERR, 0};
    poll(&p, 1, 50);
  }
  void loop_v3(Ring& r) {
    uint32_t cur = 0;
    while (!stop_) {
      auto* bd = reinterpret_cast<tpacket_block_desc*>(r.ring + size_t(cur) * kBlock);
      if (__atomic_load_n(&bd->hdr.bh1.block_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER) {
        r.frames += bd->hdr.bh1.num_pkts;
        __atomic_store_n(&bd->hdr.bh1.block_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
        cur = (cur + 1) % kBlocks;
        continue;
      }
      wait(r);
    }
  }
  void loop_v2(Ring& r) {
    const uint32_t n = kBlock / kSlot * kBlocks;
    uint32_t cur = 0;
    while (!stop_) {
      auto* h = reinterpret_cast<tpacket2_hdr*>(r.ring + size_t(cur) * kSlot);
      if (__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER) {
        ++r.frames;
        __atomic_store_n(&h->tp_status, uint32_t(TP_STATUS_KERNEL), __ATOMIC_RELEASE);
        cur = (cur + 1) % n;
        continue;
      }
      wait(r);
    }
  }
  int version_ = 3;
  std::deque<Ring> rings_;
  std::atomic<bool> stop_{false};
};

// gaspp -i rx with the given arguments, stopped with SIGINT; its stats JSON.
class GasppRun {
 public:
  GasppRun(const std::string& gaspp, const std::vector<std::string>& args, const std::string& stats) : stats_(stats) {
    int pipefd[2];
    if (pipe(pipefd) < 0) throw std::runtime_error("pipe");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pipefd[1], 2);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addclose(&fa, pipefd[0]);
    std::vector<char*> av;
    av.push_back(const_cast<char*>(gaspp.c_str()));
    for (const auto& a : args) av.push_back(const_cast<char*>(a.c_str()));
    av.push_back(nullptr);
    if (posix_spawn(&pid_, gaspp.c_str(), &fa, nullptr, av.data(), environ) != 0)
      throw std::runtime_error("cannot run " + gaspp);
    posix_spawn_file_actions_destroy(&fa);
    close(pipefd[1]);
    err_fd_ = pipefd[0];
    reader_ = std::thread([this] {
      char buf[4096];
      ssize_t n;
      while ((n = read(err_fd_, buf, sizeof buf)) > 0) {
        std::lock_guard<std::mutex> g(m_);
        err_.append(buf, size_t(n));
      }
    });
  }
  // Waits until gaspp says it captures (true), or exits or takes 60 s (false).
  bool wait_ready() {
    const auto end = Clock::now() + std::chrono::seconds(60);
    while (Clock::now() < end) {
      {
        std::lock_guard<std::mutex> g(m_);
        if (err_.find("capturing on") != std::string::npos) return true;
      }
      int st;
      if (waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }
  // SIGINT, then its stats JSON (null when it failed; stderr says why).
  json stop() {
    int st = 0;
    if (pid_ > 0) {
      kill(pid_, SIGINT);
      waitpid(pid_, &st, 0);
    }
    reader_.join();
    close(err_fd_);
    const bool ok = pid_ > 0 && WIFEXITED(st) && (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 130);
    if (!ok) {
      std::fprintf(stderr, "bench_live: gaspp failed:\n%s\n", err_.c_str());
      return nullptr;
    }
    std::ifstream in(stats_);
    try {
      return json::parse(in);
    } catch (...) {
      std::fprintf(stderr, "bench_live: no stats JSON from gaspp:\n%s\n", err_.c_str());
      return nullptr;
    }
  }

 private:
  std::string stats_;
  pid_t pid_ = -1;
  int err_fd_ = -1;
  std::thread reader_;
  std::mutex m_;
  std::string err_;
};

json run_bare(const Workload& w, const std::string& tx, const std::string& rx, int threads, double seconds, int version,
             int rings) {
  BareReader rd(rx, version, rings);
  const SendResult s = send_for(w, tx, threads, seconds, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the last blocks retire
  const ReadResult r = rd.finish();
  const uint64_t taken = r.kernel_packets - r.kernel_drops;
  return {{"sent", s.sent}, {"send_lost", s.lost}, {"read", r.frames}, {"taken", taken}, {"kernel_drops", r.kernel_drops},
          {"seconds", s.seconds}, {"mpps", double(taken) / s.seconds / 1e6}};
}

json run_gaspp(const Workload& w, const std::string& gaspp, const std::string& backend, const std::vector<std::string>& extra,
               const std::string& tx, const std::string& rx, int threads, double seconds, double pps) {
  const std::string stats = "/tmp/bench-live-stats.json";
  ::unlink(stats.c_str());
  std::vector<std::string> args = {"-i", rx, "--backend", backend, "--no-progress", "--stats-json", stats};
  args.insert(args.end(), extra.begin(), extra.end());
  GasppRun g(gaspp, args, stats);
  if (!g.wait_ready()) {
    g.stop();
    return nullptr;
  }
  const SendResult s = send_for(w, tx, threads, seconds, pps);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const json st = g.stop();
  if (st.is_null()) return nullptr;
  const json& cap = st.value("capture", json::object());
  const uint64_t kp = cap.value("kernel_packets", uint64_t(0)), kd = cap.value("kernel_drops", uint64_t(0));
  const json lat = st.value("latency", json::object());
  json r = {{"sent", s.sent},
            {"send_lost", s.lost},
            {"taken", kp - kd},
            {"kernel_drops", kd},
            {"processed", st.value("packets", uint64_t(0))},
            {"seconds", s.seconds},
            {"offered_mpps", pps > 0 ? pps / 1e6 : double(s.sent) / s.seconds / 1e6},
            {"mpps", double(kp - kd) / s.seconds / 1e6},
            {"latency_median_us", lat.value("median_us", 0.0)},
            {"latency_p99_us", lat.value("p99_us", 0.0)},
            {"latency_max_us", lat.value("max_us", 0.0)}};
  if (st.contains("batches")) r["batches"] = st["batches"];
  if (st.contains("stage_times")) r["stage_times"] = st["stage_times"];  // with -- --stage-times
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::string tx, rx, gaspp, json_path, commit = "unknown", device;
  std::vector<std::string> backends = {"cpu"}, extra, workloads = {"64B", "mix"};
  std::vector<double> shares = {0.01, 0.10, 1.0};
  double seconds = 3;
  int reps = 3, threads = std::max(1, int(std::thread::hardware_concurrency()) / 2), rings = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string o = argv[i];
    const bool value = i + 1 < argc;
    if (o == "--") {
      extra.assign(argv + i + 1, argv + argc);
      break;
    }
    if (value && o == "--tx") tx = argv[++i];
    else if (value && o == "--rx") rx = argv[++i];
    else if (value && o == "--gaspp") gaspp = argv[++i];
    else if (value && o == "--json") json_path = argv[++i];
    else if (value && o == "--commit") commit = argv[++i];
    else if (value && o == "--device") device = argv[++i];
    else if (value && o == "--seconds") seconds = std::atof(argv[++i]);
    else if (value && o == "--reps") reps = std::max(1, std::atoi(argv[++i]));
    else if (value && o == "--threads") threads = std::max(1, std::atoi(argv[++i]));
    else if (value && o == "--rings") rings = std::max(1, std::atoi(argv[++i]));
    else if (value && o == "--backend") {
      backends.clear();
      std::stringstream ss(argv[++i]);
      for (std::string b; std::getline(ss, b, ',');) backends.push_back(b);
    } else if (value && o == "--workloads") {
      workloads.clear();
      std::stringstream ss(argv[++i]);
      for (std::string x; std::getline(ss, x, ',');) workloads.push_back(x);
    } else if (value && o == "--loads") {  // shares of the bare reader's rate, 1 = full rate
      shares.clear();
      std::stringstream ss(argv[++i]);
      for (std::string x; std::getline(ss, x, ',');) shares.push_back(std::atof(x.c_str()));
    } else {
      std::fprintf(stderr, "bench_live: unknown or incomplete option %s\n", o.c_str());
      return 2;
    }
  }
  // The bare reader reads the ring gaspp reads: its version, and as many rings (a fanout group).
  int version = 3;
  for (size_t k = 0; k + 1 < extra.size(); ++k)
    if (extra[k] == "--af-packet-version") version = std::atoi(extra[k + 1].c_str());
  if (rings > 1) {
    extra.push_back("--af-packet-rings");
    extra.push_back(std::to_string(rings));
  }
  if (tx.empty() || rx.empty() || gaspp.empty()) {
    std::fprintf(stderr, "usage: bench_live --tx IFACE --rx IFACE --gaspp PATH [--backend cpu,cuda] [--seconds S] "
                         "[--reps N] [--threads N] [--rings N] [--workloads 64B,mix] [--loads 0.01,0.1,1] [--json PATH] [--commit SHA] "
                         "[--device TEXT] [-- GASPP ARGS...]\n");
    return 2;
  }
  json out = {{"bench", "live"},
              {"commit", commit},
              {"device", device.empty() ? cpu_model_name() : device},
              {"host_cpu", cpu_model_name()},
              {"cores", std::thread::hardware_concurrency()},
              {"sender_threads", threads},
              {"rings", rings},
              {"ring_version", version},
              {"seconds_per_run", seconds},
              {"reps_full_rate", reps},
              {"gaspp_args", extra}};
  {
    std::string cmd;
    for (int i = 0; i < argc; ++i) cmd += std::string(i ? " " : "") + argv[i];
    out["command"] = cmd;
  }
  bool failed = false;
  for (const std::string& wname : workloads) {
    const Workload w = make_workload(wname);
    json& wj = out["workloads"][wname];
    std::printf("== %s: %zu frames, %zu bytes\n", wname.c_str(), w.off.size(), w.bytes.size());
    // The limit: the bare reader at full rate.
    std::vector<double> lim;
    send_for(w, tx, threads, 0.5, 0);  // warm-up (nobody reads: the veth delivers to no socket)
    for (int k = 0; k < reps; ++k) {
      json r = run_bare(w, tx, rx, threads, seconds, version, rings);
      std::printf("  bare reader: sent %.2f Mpps, taken %.2f Mpps, kernel drops %llu\n",
                  double(r["sent"].get<uint64_t>()) / r["seconds"].get<double>() / 1e6, r["mpps"].get<double>(),
                  (unsigned long long)r["kernel_drops"].get<uint64_t>());
      lim.push_back(r["mpps"].get<double>());
      wj["bare_reader"]["runs"].push_back(r);
    }
    const double limit = median(lim);
    wj["bare_reader"]["mpps"] = limit;
    for (const std::string& be : backends) {
      json& bj = wj[be];
      for (const double share : shares) {
        char key_text[32];
        std::snprintf(key_text, sizeof key_text, "%g%%", share * 100);
        const std::string key = key_text;
        std::vector<double> mpps, p50, p99;
        const int n = share >= 1 ? reps : 1;
        for (int k = 0; k < n; ++k) {
          json r = run_gaspp(w, gaspp, be, extra, tx, rx, threads, seconds, share >= 1 ? 0 : share * limit * 1e6);
          if (r.is_null()) {
            failed = true;
            break;
          }
          std::printf("  gaspp %s at %s: offered %.3f Mpps, taken %.3f Mpps, kernel drops %llu, latency median %.0f us, p99 %.0f us\n",
                      be.c_str(), key.c_str(), r["offered_mpps"].get<double>(), r["mpps"].get<double>(),
                      (unsigned long long)r["kernel_drops"].get<uint64_t>(), r["latency_median_us"].get<double>(),
                      r["latency_p99_us"].get<double>());
          if (r.contains("stage_times"))  // each stage's mean and slowest batch: where a stall sat
            for (const json& t : r["stage_times"])
              std::printf("    %-48s mean %9.1f us  slowest %9.1f us  %llu batches\n",
                          t["stage"].get<std::string>().c_str(), t["mean_us"].get<double>(), t["max_us"].get<double>(),
                          (unsigned long long)t["batches"].get<uint64_t>());
          mpps.push_back(r["mpps"].get<double>());
          p50.push_back(r["latency_median_us"].get<double>());
          p99.push_back(r["latency_p99_us"].get<double>());
          bj[key]["runs"].push_back(r);
        }
        bj[key]["mpps"] = mpps.empty() ? 0.0 : median(mpps);
        bj[key]["latency_median_us"] = p50.empty() ? 0.0 : median(p50);
        bj[key]["latency_p99_us"] = p99.empty() ? 0.0 : median(p99);
      }
      // The figures, flat (those of the loads that ran: --loads may leave some out).
      if (bj.contains("100%")) {
        bj["ratio_to_bare_reader"] = limit > 0 ? bj["100%"]["mpps"].get<double>() / limit : 0;
        out[be + "_" + wname + "_mpps"] = bj["100%"]["mpps"];
        out[be + "_" + wname + "_ratio"] = bj["ratio_to_bare_reader"];
      }
      if (bj.contains("1%")) out[be + "_" + wname + "_p99_us_at_1pct"] = bj["1%"]["latency_p99_us"];
    }
    out["bare_reader_" + wname + "_mpps"] = limit;
  }
  const std::string text = out.dump(2) + "\n";
  if (!json_path.empty()) {
    std::ofstream f(json_path);
    f << text;
    f.close();
    if (!f) {
      std::fprintf(stderr, "bench_live: cannot write %s\n", json_path.c_str());
      return 1;
    }
  }
  return failed ? 1 : 0;
}
