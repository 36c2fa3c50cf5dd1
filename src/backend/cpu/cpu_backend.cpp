// backend/cpu/cpu_backend.cpp — the CPU backend: the same per-packet functions on a thread pool.
//
// Each slot owns host arrays for the decoded fields and verdicts. submit() decodes the batch in
// place (reading the records straight from the source span) across all pool threads, each with
// its own counters, merged at the end, then runs the flow stage; wait() has nothing left to do.
//
// Flow stage (the same per-packet functions as the CUDA kernels, flow/flow_track.hpp):
//   1. lookup: every packet finds or claims its flow slot, in parallel;
//   2. retry: packets that found no room, in capture order, under the bucket locks;
//   3. tick: emergency mode decision;
//   4. walk: worker w applies, in capture order, the packets whose hashed slot % workers == w, so
//      each flow's packets are applied in order by one worker (hashed: in a sparse table most flows
//      sit in the first slot of their bucket, so plain slot numbers would share out badly);
//   5. sweep (when due in packet time, or in emergency): timed-out flows leave the table.
#include <algorithm>
#include <thread>
#include <vector>

#include "backend/backend.hpp"
#include "core/thread_pool.hpp"
#include "decode/decoder.hpp"
#include "flow/flow_track.hpp"
#include "flow/host_lookup.hpp"

namespace gaspp {
namespace {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const BackendConfig& cfg)
      : cfg_(cfg), pool_(cfg.threads > 0 ? cfg.threads : int(std::max(1u, std::thread::hardware_concurrency()))),
        slots_(size_t(std::max(cfg.slots, 3))), per_thread_(size_t(pool_.size())), failed_(size_t(pool_.size())),
        table_(cfg.flow) {
    record_capacity_ = cfg.batch_packets + kSweepRecords;
    records_.resize(record_capacity_);
    for (auto& s : slots_) {
      s.flow_slot.resize(cfg.batch_packets);
      s.flow_flags.resize(cfg.batch_packets);
      s.rec_off.resize(cfg.batch_packets);
      s.verdict.resize(cfg.batch_packets);
      s.decoded.resize(cfg.batch_packets);
      s.batch.capacity = cfg.batch_packets;
      s.batch.h_rec_off = s.rec_off.data();
      s.batch.h_verdict = s.verdict.data();
    }
  }

  std::string name() const override { return "cpu"; }
  std::string describe() const override {
    return "cpu (" + std::to_string(pool_.size()) + " threads, " + std::to_string(slots_.size()) + " batch slots of " +
           std::to_string(cfg_.batch_packets) + " packets" +
           (cfg_.flow.enabled ? ", flow table " + std::to_string(table_.shape().capacity) + " flows in " +
                                    std::to_string(table_.shape().bytes() >> 20) + " MiB"
                              : std::string()) +
           ")";
  }
  int slots() const override { return int(slots_.size()); }
  PacketBatch& batch(int slot) override { return slots_[size_t(slot)].batch; }

  void submit(int slot) override {
    Slot& s = slots_[size_t(slot)];
    PacketBatch& b = s.batch;
    BatchView v{b.h_span, b.span_len, b.h_rec_off, b.count, b.fmt, b.link, b.source, s.decoded.view(), b.h_verdict};
    for (auto& c : per_thread_) c = Counters{};
    pool_.parallel_for(b.count, [&](uint64_t begin, uint64_t end, int w) {
      HostCounterSink sink{per_thread_[size_t(w)]};
      DecodedPacket p;
      for (uint64_t i = begin; i < end; ++i) {
        decode_batch_packet(v, uint32_t(i), p);
        store(v.dec, uint32_t(i), p);
        v.verdict[i] = kVerdictPass;
        count_packet(sink, p);
      }
    });
    b.flow_records.clear();
    if (cfg_.flow.enabled) flow_stage(s, v.dec);
    b.counters = Counters{};
    for (auto& c : per_thread_)
      for (int k = 0; k < c_count_; ++k) b.counters.v[k] += c.v[k];
    if (b.want_decoded) {
      // The decoded arrays are already host memory: hand them over by swapping storage.
      b.decoded.resize(b.capacity);
      std::swap(b.decoded, s.decoded);
      b.flow_slot.assign(s.flow_slot.begin(), s.flow_slot.begin() + b.count);
      b.flow_flags.assign(s.flow_flags.begin(), s.flow_flags.begin() + b.count);
    }
  }
  void wait(int) override {}

  FlowGauges flow_gauges() override {
    FlowGauges g;
    g.enabled = cfg_.flow.enabled;
    g.capacity = table_.shape().capacity;
    g.slots = table_.shape().slots();
    g.bytes = table_.shape().bytes();
    g.live = table_.state().live;
    g.peak = table_.state().peak_live;
    g.emergency = table_.state().emergency != 0;
    return g;
  }

  std::vector<FlowRecordOut> flush_flows() override {
    std::vector<FlowRecordOut> all;
    if (!cfg_.flow.enabled) return all;
    for (;;) {
      const uint32_t n = sweep(0, false, true);
      all.insert(all.end(), records_.begin(), records_.begin() + n);
      if (table_.state().live == 0 || n == 0) break;
    }
    sort_flow_records(all);
    return all;
  }

 private:
  static constexpr uint32_t kSweepRecords = 65536;

  // Sweeps the table; returns how many records it wrote to records_ (from index 0).
  uint32_t sweep(uint64_t now, bool emergency, bool shutdown) {
    FlowTableRef t = table_.ref();
    uint32_t count = 0;
    FlowRecordSink out{records_.data(), &count, record_capacity_};
    pool_.parallel_for(t.slots(), [&](uint64_t begin, uint64_t end, int w) {
      HostCounterSink sink{per_thread_[size_t(w)]};
      for (uint64_t s = begin; s < end; ++s)
        flow_sweep_slot(t, uint32_t(s), now, cfg_.flow.timeouts, emergency, shutdown, out, sink);
    });
    return std::min(count, record_capacity_);
  }

  struct Slot;
  void flow_stage(Slot& s, const DecodedView& dec) {
    PacketBatch& b = s.batch;
    FlowTableRef t = table_.ref();
    FlowTrackParams prm{cfg_.flow.timeouts, ++epoch_, cfg_.flow.midstream, cfg_.flow.vlan_in_key};
    const uint32_t n = b.count;
    uint32_t* slot = s.flow_slot.data();
    uint8_t* flags = s.flow_flags.data();
    for (auto& f : failed_) f.clear();
    pool_.parallel_for(n, [&](uint64_t begin, uint64_t end, int w) {
      HostCounterSink sink{per_thread_[size_t(w)]};
      flow_lookup_range(t, dec, begin, end, prm, slot, flags, [&](FlowSkip why) { count_skip(sink, why); },
                        [&](uint32_t i) {
                          atomic_add(&t.state->failed, 1);
                          failed_[size_t(w)].push_back(i);
                        });
    });
    uint32_t out_count = 0;
    FlowRecordSink out{records_.data(), &out_count, record_capacity_};
    {
      // Each worker's list is in capture order and workers hold consecutive ranges.
      HostCounterSink sink{per_thread_[0]};
      for (auto& f : failed_)
        for (uint32_t i : f) slot[i] = flow_retry_packet(t, dec, i, prm, out, sink);
      flow_tick(*t.state, t.capacity, cfg_.flow.emergency_enter_pct, cfg_.flow.emergency_recover_pct, sink);
    }
    const bool emergency = t.state->emergency != 0;
    const uint32_t workers = uint32_t(pool_.size());
    pool_.parallel_for(workers, [&](uint64_t begin, uint64_t end, int w) {
      HostCounterSink sink{per_thread_[size_t(w)]};
      for (uint64_t shard = begin; shard < end; ++shard)
        for (uint32_t i = 0; i < n; ++i)
          if (slot[i] != kNoFlow && mix32(slot[i]) % workers == shard)
            flags[i] = flow_track_packet(t, slot[i], dec, i, flags[i], prm, emergency, out, sink);
    });
    const uint32_t walked = std::min(out_count, record_capacity_);
    b.flow_records.assign(records_.begin(), records_.begin() + walked);
    // Sweep when due in packet time (or every batch in emergency).
    const bool due = b.max_ts_ns >= next_sweep_ns_;
    if (due || emergency) {
      if (due) next_sweep_ns_ = b.max_ts_ns + cfg_.flow.sweep_interval_ns;
      const uint32_t swept = sweep(b.max_ts_ns, emergency, false);
      b.flow_records.insert(b.flow_records.end(), records_.begin(), records_.begin() + swept);
    }
    sort_flow_records(b.flow_records);
  }

 private:
  struct Slot {
    std::vector<uint32_t> flow_slot;
    std::vector<uint8_t> flow_flags;
    std::vector<uint32_t> rec_off;
    std::vector<uint8_t> verdict;
    DecodedArrays decoded;
    PacketBatch batch;
  };
  BackendConfig cfg_;
  ThreadPool pool_;
  std::vector<Slot> slots_;
  std::vector<Counters> per_thread_;
  std::vector<std::vector<uint32_t>> failed_;
  HostFlowTable table_;
  std::vector<FlowRecordOut> records_;
  uint32_t record_capacity_ = 0;
  uint32_t epoch_ = 0;
  uint64_t next_sweep_ns_ = 0;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(const BackendConfig& cfg) { return std::make_unique<CpuBackend>(cfg); }

}  // namespace gaspp
