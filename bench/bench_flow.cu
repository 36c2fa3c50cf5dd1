// bench/bench_flow.cu — the flow table alone: lookups+inserts per second, and the expiry sweep.
//
//   1. Table throughput at 1 M and 16 M flows: packets of uniformly random flows (IPv4/UDP keys,
//      decoded fields built directly), pushed in 64k-packet batches through the pipeline's lookup
//      (launch_flow_lookup, backend/cuda/flow_kernels.cuh). First pass: every flow is new
//      (inserts); later passes: lookups. CUDA (one kernel per batch) vs the CPU on all host threads
//      (the CPU backend's grouped, prefetching lookup, flow/host_lookup.hpp, on its thread pool).
//      Also the alternative the paper used, per-bucket
//      locks (lock the bucket, scan, insert, unlock), on the GPU, to compare with the lock-free
//      claim the table ships with.
//   2. Expiry sweep time vs table size and occupancy (the paper's Table 3 grid): tables of 1 M, 8 M
//      and 16 M slots filled with 0.1 M .. 16 M flows, one sweep in which nothing expires (the cost
//      every sweep pays) and one in which everything does, by the pipeline's sweep
//      (launch_flow_sweep).
// Median of several runs after a warm-up. Prints a table and writes JSON (--json PATH).
//
// usage: bench_flow [--json PATH] [--reps N]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "flow/flow_track.hpp"
#include "core/thread_pool.hpp"
#include "backend/cuda/device_buffer.hpp"
#include "backend/cuda/device_flow_table.hpp"
#include "backend/cuda/flow_kernels.cuh"
#include "bench_util.hpp"
#include "flow/host_flow_table.hpp"
#include "flow/host_lookup.hpp"

using namespace gaspp;
using Clock = std::chrono::steady_clock;
using bench::median;

namespace {

// The decoded fields flow_key_of() reads, for `n` packets, on the host and on the device.
struct Packets {
  uint32_t n = 0;
  std::vector<uint8_t> l3, l4, proto, malformed, frag, vlan_n, icmp_t, icmp_c;
  std::vector<uint16_t> sport, dport, icmp_id, vlan;
  std::vector<uint32_t> src, dst;
  DecodedView host{}, dev{};
  std::vector<void*> dev_bufs;

  void make(uint32_t packets, uint32_t flows, uint64_t seed) {
    n = packets;
    l3.assign(n, uint8_t(L3::ipv4)); l4.assign(n, uint8_t(L4::udp)); proto.assign(n, 17);
    malformed.assign(n, 0); frag.assign(n, 0); vlan_n.assign(n, 0); icmp_t.assign(n, 0); icmp_c.assign(n, 0);
    sport.resize(n); dport.resize(n); icmp_id.assign(n, 0); vlan.assign(size_t(n) * 3, 0);
    src.assign(size_t(n) * 4, 0); dst.assign(size_t(n) * 4, 0);
    std::mt19937_64 rng(seed);
    for (uint32_t i = 0; i < n; ++i) {
      const uint64_t f = (i < flows ? i : rng() % flows);  // the first pass meets every flow once
      const uint64_t h = mix64(f + 1);
      src[size_t(i) * 4] = uint32_t(h);
      dst[size_t(i) * 4] = uint32_t(h >> 32) | 1;
      sport[i] = uint16_t(f);
      dport[i] = uint16_t(f >> 16);
      if (rng() & 1) { std::swap(src[size_t(i) * 4], dst[size_t(i) * 4]); std::swap(sport[i], dport[i]); }
    }
    host = view_of(l3.data(), l4.data(), proto.data(), malformed.data(), frag.data(), vlan_n.data(), icmp_t.data(),
                   icmp_c.data(), sport.data(), dport.data(), icmp_id.data(), vlan.data(), src.data(), dst.data());
    dev = view_of(up(l3), up(l4), up(proto), up(malformed), up(frag), up(vlan_n), up(icmp_t), up(icmp_c), up(sport),
                  up(dport), up(icmp_id), up(vlan), up(src), up(dst));
  }
  ~Packets() {
    for (void* p : dev_bufs) cudaFree(p);
  }
  template <class T>
  T* up(const std::vector<T>& v) {
    T* d;
    CK(cudaMalloc(&d, sizeof(T) * v.size()));
    CK(cudaMemcpy(d, v.data(), sizeof(T) * v.size(), cudaMemcpyHostToDevice));
    dev_bufs.push_back(d);
    return d;
  }
  static DecodedView view_of(uint8_t* l3, uint8_t* l4, uint8_t* proto, uint8_t* mal, uint8_t* frag, uint8_t* vn,
                             uint8_t* it, uint8_t* ic, uint16_t* sp, uint16_t* dp, uint16_t* iid, uint16_t* vl,
                             uint32_t* s, uint32_t* d) {
    DecodedView v{};
    v.l3 = l3; v.l4 = l4; v.ip_proto = proto; v.malformed = mal; v.ip_frag = frag; v.vlan_count = vn;
    v.icmp_type = it; v.icmp_code = ic; v.sport = sp; v.dport = dp; v.icmp_id = iid; v.vlan_id = vl;
    v.src_ip = s; v.dst_ip = d;
    return v;
  }
  static DecodedView offset(DecodedView v, uint32_t first) {
    v.l3 += first; v.l4 += first; v.ip_proto += first; v.malformed += first; v.ip_frag += first;
    v.vlan_count += first; v.icmp_type += first; v.icmp_code += first; v.sport += first; v.dport += first;
    v.icmp_id += first; v.vlan_id += size_t(first) * 3; v.src_ip += size_t(first) * 4; v.dst_ip += size_t(first) * 4;
    return v;
  }
};

// The paper's alternative: lock the bucket, scan it, insert if absent, unlock.
__global__ void locked_lookup_kernel(FlowTableRef t, DecodedView d, uint32_t n, FlowTrackParams prm, uint32_t* slot) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    FlowKey k;
    bool from_lo, created, evicted;
    flow_key_of(d, i, prm.vlan_in_key, prm.defrag, k, from_lo);
    slot[i] = flow_claim_or_evict(t, k, flow_key_hash(k), prm.epoch, created, evicted, [](const FlowRecord&, FlowReason) {});
  }
}

constexpr uint32_t kBatch = 65536;

struct TableRate {
  double insert_mops, lookup_mops;
};

// GPU: the first pass (flows new) and later passes (lookups), one kernel per 64k batch.
TableRate gpu_rate(uint32_t flows, const Packets& p, bool locked, int reps) {
  DeviceFlowTable t(FlowConfig{.capacity = flows});
  // The pipeline's lookup (launch_flow_lookup) also writes each packet's sort item and flags, and
  // lists packets that found no room; the failed count is reset a batch as the tick does.
  DeviceBuffer<uint32_t> d_slot(kBatch), d_keys(kBatch), d_vals(kBatch), d_failed(kBatch);
  DeviceBuffer<uint8_t> d_flags(kBatch);
  DeviceBuffer<unsigned long long> d_counters(c_count_);
  FlowTrackParams prm{};
  prm.vlan_in_key = true;
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  auto pass = [&](uint32_t first, uint32_t count) {
    cudaEventRecord(a);
    for (uint32_t o = first; o < first + count; o += kBatch) {
      const uint32_t n = std::min(kBatch, first + count - o);
      ++prm.epoch;
      if (locked) {
        locked_lookup_kernel<<<(n + 255) / 256, 256>>>(t.ref(), Packets::offset(p.dev, o), n, prm, d_slot.get());
      } else {
        launch_flow_lookup(int((n + 255) / 256), nullptr, t.ref(), Packets::offset(p.dev, o), n, prm, d_slot.get(),
                           d_flags.get(), d_keys.get(), d_vals.get(), 0, d_failed.get(), d_counters.get());
        CK(cudaMemsetAsync(&t.ref().state->failed, 0, sizeof(uint32_t)));
      }
    }
    cudaEventRecord(b);
    CK(cudaEventSynchronize(b));
    float ms;
    cudaEventElapsedTime(&ms, a, b);
    return double(count) / (ms / 1e3) / 1e6;
  };
  std::vector<double> ins, look;
  for (int r = 0; r < reps + 1; ++r) {
    t.clear();
    const double i = pass(0, flows);  // every flow new
    const double l = pass(flows, p.n - flows);  // random lookups of existing flows
    if (r) { ins.push_back(i); look.push_back(l); }
  }
  return {median(ins), median(look)};
}

TableRate cpu_rate(uint32_t flows, const Packets& p, int threads, int reps) {
  ThreadPool pool(threads);
  FlowConfig cfg;
  cfg.capacity = flows;
  std::vector<double> ins, look;
  for (int r = 0; r < std::max(1, reps / 2) + 1; ++r) {
    HostFlowTable table(cfg);
    FlowTableRef t = table.ref();
    FlowTrackParams prm{};
    prm.vlan_in_key = true;
    std::vector<uint32_t> slot(p.n);
    std::vector<uint8_t> flags(p.n);
    auto pass = [&](uint32_t first, uint32_t count) {
      const auto t0 = Clock::now();
      for (uint32_t o = first; o < first + count; o += kBatch) {
        const uint32_t n = std::min(kBatch, first + count - o);
        ++prm.epoch;
        pool.parallel_for(n, [&](uint64_t b, uint64_t e, int) {
          flow_lookup_range(t, p.host, o + b, o + e, prm, slot.data(), flags.data(), [](FlowSkip) {}, [](uint32_t) {});
        });
      }
      return double(count) / std::chrono::duration<double>(Clock::now() - t0).count() / 1e6;
    };
    const double i = pass(0, flows);
    const double l = pass(flows, p.n - flows);
    if (r) { ins.push_back(i); look.push_back(l); }
  }
  return {median(ins), median(look)};
}

}  // namespace

int main(int argc, char** argv) {
  std::string json_path;
  int reps = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json" && i + 1 < argc) json_path = argv[++i];
    else if (a == "--reps" && i + 1 < argc) reps = std::atoi(argv[++i]);
    else { std::fprintf(stderr, "usage: bench_flow [--json PATH] [--reps N]\n"); return 1; }
  }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const int threads = int(std::thread::hardware_concurrency());
  std::printf("device: %s; host threads: %d\n", prop.name, threads);
  std::string json = "{\"device\":\"" + std::string(prop.name) + "\",\"host_threads\":" + std::to_string(threads) +
                     ",\"reps\":" + std::to_string(reps) + ",\"table\":[";
  char buf[512];
  std::printf("\n%-10s %-22s %14s %14s\n", "flows", "variant", "insert Mops/s", "lookup Mops/s");
  bool first = true;
  for (uint32_t flows : {1u << 20, 16u << 20}) {
    Packets p;
    p.make(flows + 16 * kBatch, flows, flows);
    auto row = [&](const char* variant, const TableRate& r) {
      std::printf("%-10u %-22s %14.1f %14.1f\n", flows, variant, r.insert_mops, r.lookup_mops);
      std::snprintf(buf, sizeof buf, "%s{\"flows\":%u,\"variant\":\"%s\",\"insert_mops\":%.2f,\"lookup_mops\":%.2f}",
                    first ? "" : ",", flows, variant, r.insert_mops, r.lookup_mops);
      json += buf;
      first = false;
    };
    row("cuda lock-free claim", gpu_rate(flows, p, false, reps));
    row("cuda bucket locks", gpu_rate(flows, p, true, reps));
    row("cpu all threads", cpu_rate(flows, p, threads, reps));
  }
  json += "],\"sweep\":[";
  std::printf("\n%-10s %-12s %16s %16s\n", "slots", "flows", "sweep, none µs", "sweep, all µs");
  first = true;
  FlowRecordOut* d_out;
  uint32_t* d_count;
  CK(cudaMalloc(&d_out, sizeof(FlowRecordOut) * (1u << 16)));
  CK(cudaMalloc(&d_count, sizeof(uint32_t)));
  for (uint32_t slots : {1u << 20, 8u << 20, 16u << 20}) {
    for (uint32_t occ : {100'000u, 1u << 20, 4u << 20, 8u << 20, 16u << 20}) {
      if (occ > slots * 9ull / 10) continue;  // a full open table is not a state it runs in
      Packets p;
      p.make(occ, occ, occ + slots);
      // Exactly `slots` slots (not the 5/4 the pipeline adds), so the grid's sizes are the table's.
      FlowTableShape shape = flow_table_shape(FlowConfig{.capacity = slots});
      shape.buckets = (slots + kFlowBucketSlots - 1) / kFlowBucketSlots;
      DeviceFlowTable t(shape);
      DeviceBuffer<uint32_t> d_slot(kBatch);
      DeviceBuffer<unsigned long long> d_counters(c_count_);
      FlowTrackParams prm{};
      prm.vlan_in_key = true;
      auto fill = [&] {
        t.clear();
        for (uint32_t o = 0; o < occ; o += kBatch) {
          const uint32_t n = std::min(kBatch, occ - o);
          locked_lookup_kernel<<<(n + 255) / 256, 256>>>(t.ref(), Packets::offset(p.dev, o), n, prm, d_slot.get());
        }
        CK(cudaDeviceSynchronize());
      };
      fill();
      FlowTableState st;
      CK(cudaMemcpy(&st, t.ref().state, sizeof st, cudaMemcpyDeviceToHost));
      const int blocks = prop.multiProcessorCount * 8;
      FlowRecordSink out{d_out, d_count, 1u << 16};
      auto timed_sweep = [&](uint64_t now) {
        CK(cudaMemset(d_count, 0, 4));
        cudaEvent_t a, b;
        cudaEventCreate(&a);
        cudaEventCreate(&b);
        cudaEventRecord(a);
        launch_flow_sweep(blocks, nullptr, t.ref(), now, true, false, FlowTimeouts{}, out, d_counters.get());
        cudaEventRecord(b);
        CK(cudaEventSynchronize(b));
        float ms;
        cudaEventElapsedTime(&ms, a, b);
        return double(ms) * 1000;
      };
      std::vector<double> none, all;
      for (int r = 0; r < reps + 1; ++r) {
        const double x = timed_sweep(0);  // records have last_ts 0: nothing has timed out at 0
        if (r) none.push_back(x);
      }
      // Everything expired: the sweep writes what fits in its record buffer (64k) and frees it.
      for (int r = 0; r < std::min(reps, 3); ++r) {
        all.push_back(timed_sweep(~0ull >> 1));
        fill();
      }
      std::printf("%-10u %-12u %16.1f %16.1f\n", t.shape().slots(), st.live, median(none), median(all));
      std::snprintf(buf, sizeof buf, "%s{\"slots\":%u,\"flows\":%u,\"sweep_none_us\":%.2f,\"sweep_all_us\":%.2f}",
                    first ? "" : ",", t.shape().slots(), st.live, median(none), median(all));
      json += buf;
      first = false;
    }
  }
  json += "]}\n";
  cudaFree(d_out);
  cudaFree(d_count);
  return bench::write_file(json_path, json) ? 0 : 1;
}
