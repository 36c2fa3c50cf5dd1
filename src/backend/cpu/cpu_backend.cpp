// backend/cpu/cpu_backend.cpp — the CPU backend: the same per-packet functions on a thread pool.
//
// Each slot owns host arrays for the decoded fields and verdicts. submit() decodes the batch in
// place (reading the records straight from the source span) across all pool threads, each with
// its own counters, merged at the end, then runs the flow stage; wait() has nothing left to do.
//
// Flow stage (the same per-packet functions as the CUDA kernels, flow/flow_track.hpp and
// stream/reassembly.hpp):
//   1. lookup: every packet finds or claims its flow slot, in parallel;
//   2. retry: packets that found no room, in capture order, under the bucket locks;
//   3. tick: emergency mode decision;
//   4. walk: worker w takes the items (packets, and segments held in the out-of-order buffer)
//      whose hashed slot % workers == w, sorts them by (slot, item) — a flow's items become a run,
//      held segments first, then packets in capture order — and walks each run (hashed: in a
//      sparse table most flows sit in the first slot of their bucket, so plain slot numbers would
//      share out badly);
//   5. sweep (when due in packet time, or in emergency): timed-out flows leave the table.
// The out-of-order buffer: two sets of segment descriptions used in turn (a batch reads what the
// previous one held) and two byte pools where held bytes stay while they wait (StreamCounts).
//
// Modules: each stage runs over the batch on the pool (core/module_stage.hpp), before the sweep so
// that records leaving the table carry the flow's decision; then the verdict walk goes over the
// walk's sorted runs again, shard by shard. Module tables stay in the modules' host memory.
#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "backend/backend.hpp"
#include "core/module_stage.hpp"
#include "core/stream_dispatch.hpp"
#include "core/thread_pool.hpp"
#include "decode/decoder.hpp"
#include "flow/flow_track.hpp"
#include "flow/host_lookup.hpp"
#include "stream/reassembly.hpp"

namespace gaspp {
namespace {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const BackendConfig& cfg)
      : cfg_(cfg), pool_(cfg.threads > 0 ? cfg.threads : int(std::max(1u, std::thread::hardware_concurrency()))),
        slots_(size_t(std::max(cfg.slots, 3))), per_thread_(size_t(pool_.size())), failed_(size_t(pool_.size())),
        shard_items_(size_t(pool_.size())), shard_vals_(size_t(pool_.size())), shard_pend_(size_t(pool_.size())),
        table_(cfg.flow) {
    record_capacity_ = cfg.batch_packets + kSweepRecords;
    records_.resize(record_capacity_);
    streams_ = cfg.flow.enabled && cfg.stream.enabled;
    if (streams_) {
      held_cap_ = stream_held_cap(cfg.stream, cfg.batch_packets);
      for (int k = 0; k < 2; ++k) {
        held_[k].resize(held_cap_);
        pool_bytes_[k].resize(cfg.stream.held_bytes);  // std::vector storage is 16-byte aligned (malloc)
      }
      chunks_.resize(stream_chunk_cap(cfg.batch_packets, held_cap_));
    }
    if (!cfg.modules.empty()) {
      InPlaceTables mem;
      for (ModuleInstance* m : cfg.modules) m->upload(mem);
      ctx_.resize(cfg.batch_packets);
      class_order_ = flat_class_orders(cfg);
      hooks_ = stream_hooks_of(cfg.modules, nullptr);
      if (hooks_.n && !(cfg.flow.enabled && cfg.stream.enabled))
        throw std::invalid_argument("a module with on_stream needs flow tracking and reassembly");
      stream_counts_.assign(cfg.modules.size() * kModuleCounters, 0);
      classes_ = uint16_t(cfg.class_orders.empty() ? 1 : cfg.class_orders.size());
      schedule_ = cfg.schedule == BackendConfig::Schedule::on;  // automatic: off here (no warps to group)
      if (schedule_) {
        order_.resize(cfg.batch_packets);
        sched_.resize(cfg.batch_packets);
      }
      events_.resize(event_capacity_of(cfg));
      mod_counts_.assign(size_t(pool_.size()), std::vector<unsigned long long>(cfg.modules.size() * kModuleCounters));
    }
    for (auto& s : slots_) {
      // The flow counters at each alerted packet (the verdict walk writes them; alerts show them).
      if (!cfg.modules.empty() && cfg.flow.enabled) {
        s.pkt_counts.resize(cfg.batch_packets);
        s.batch.h_pkt_counts = s.pkt_counts.data();
      }
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
           (streams_ ? ", out-of-order buffer " + std::to_string(held_cap_) + " segments / " +
                           std::to_string(cfg_.stream.held_bytes >> 20) + " MiB"
                     : std::string()) +
           ")";
  }
  int slots() const override { return int(slots_.size()); }
  PacketBatch& batch(int slot) override { return slots_[size_t(slot)].batch; }

  void submit(int slot) override {
    Slot& s = slots_[size_t(slot)];
    PacketBatch& b = s.batch;
    BatchView v{b.h_span,  b.span_len, b.h_rec_off,        b.count,     b.fmt,
                b.link,    b.source,   s.decoded.view(),   b.h_verdict, cfg_.validate_checksums, cfg_.flow.defrag};
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
    b.stream_chunks.clear();
    b.stream_bytes.clear();
    b.events.clear();
    b.module_counts.clear();
    event_n_ = 0;  // stream hooks (in the walk) raise events before the module stages
    std::fill(stream_counts_.begin(), stream_counts_.end(), 0ull);
    hooks_.verdict = v.verdict;
    if (cfg_.flow.enabled) flow_stage(s, v);
    else run_modules(s, v);
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

  void flush_streams(std::vector<StreamChunk>& chunks, std::vector<uint8_t>& bytes, Counters& added,
                     StreamFlushModules& mods) override {
    chunks.clear();
    bytes.clear();
    mods.events.clear();
    mods.module_counts.clear();
    if (!streams_ || counts_.held_n[in_] == 0) return;
    event_n_ = 0;
    std::fill(stream_counts_.begin(), stream_counts_.end(), 0ull);
    StreamRef sr = stream_ref(nullptr, nullptr, true);
    for (auto& c : per_thread_) c = Counters{};
    walk(table_.ref(), DecodedView{}, 0, nullptr, nullptr, FlowTrackParams{}, false, FlowRecordSink{}, &sr, true);
    collect_chunks(sr, DecodedView{}, chunks, bytes);
    in_ ^= 1;  // the final walk held nothing
    for (auto& c : per_thread_)
      for (int k = 0; k < c_count_; ++k) added.v[k] += c.v[k];
    if (hooks_.n) {
      mods.events.assign(events_.begin(), events_.begin() + std::min<size_t>(event_n_, events_.size()));
      mods.module_counts.assign(stream_counts_.begin(), stream_counts_.end());
    }
  }

  StreamGauges stream_gauges() override {
    return streams_ ? stream_gauges_of(counts_, cfg_.stream, held_cap_) : StreamGauges{};
  }


 private:
  static constexpr uint32_t kSweepRecords = 65536;

  class InPlaceTables final : public TableMemory {
   public:
    const void* place(const void* host, size_t) override { return host; }
  };

  // The module stages, then (with flows) the verdict walk over the flow walk's runs.
  struct Slot;
  void run_modules(Slot& s, const BatchView& v) {
    if (cfg_.modules.empty()) return;
    PacketBatch& b = s.batch;
    const bool flows = cfg_.flow.enabled;
    const uint32_t cap = uint32_t(events_.size());
    for (auto& c : mod_counts_) std::fill(c.begin(), c.end(), 0ull);
    StageArgs a{};
    a.data = v.data;
    a.rec_off = v.rec_off;
    a.count = v.count;
    a.dec = v.dec;
    a.verdict = v.verdict;
    a.ctx = ctx_.data();
    a.order = nullptr;
    a.flow_slot = flows ? s.flow_slot.data() : nullptr;
    a.flow_flags = flows ? s.flow_flags.data() : nullptr;
    if (flows) a.table = table_.ref();
    a.events = EventSinkRef{events_.data(), &event_n_, cap};
    a.has_flows = flows;
    a.class_order = class_order_.data();
    a.classes = classes_;
    a.modules = uint16_t(cfg_.modules.size());
    for (uint16_t st = 0; st < a.modules; ++st) {
      a.stage = st;
      a.first = st == 0;
      // Each module some class runs at this stage, over the whole order (packets of other
      // classes are skipped by module_stage_packet).
      for (uint16_t k = 0; k < a.modules; ++k) {
        if (!stage_runs_module(class_order_, classes_, st, k)) continue;
        const ModuleInstance* m = cfg_.modules[k];
        a.module = k;
        a.state_off = m->state_off;
        pool_.parallel_for(v.count, [&](uint64_t begin, uint64_t end, int w) {
          m->run_cpu(a, uint32_t(begin), uint32_t(end), mod_counts_[size_t(w)].data() + size_t(k) * kModuleCounters);
        });
      }
      if (schedule_ && st + 1 < a.modules && regroup_after_stage(cfg_.modules, class_order_, classes_, st)) {
        for (uint32_t i = 0; i < v.count; ++i) sched_[i] = {schedule_key(a, i, uint16_t(st + 1)), i};
        std::sort(sched_.begin(), sched_.begin() + v.count);
        for (uint32_t k = 0; k < v.count; ++k) order_[k] = sched_[k].second;
        a.order = order_.data();
      }
    }
    if (flows) {
      const FlowTableRef t = table_.ref();
      const uint32_t base = streams_ ? held_cap_ : 0;
      pool_.parallel_for(shard_items_.size(), [&](uint64_t begin, uint64_t end, int w) {
        HostCounterSink sink{per_thread_[size_t(w)]};
        for (uint64_t shard = begin; shard < end; ++shard) {
          const auto& items = shard_items_[shard];
          const uint32_t* vals = shard_vals_[shard].data();
          for (uint32_t j = 0; j < items.size();) {
            const uint32_t sl = uint32_t(items[j] >> 32);
            uint32_t m = j + 1;
            while (m < items.size() && uint32_t(items[m] >> 32) == sl) ++m;
            verdict_walk_run(t, vals, j, m, sl, base, s.flow_flags.data(), v.verdict, cfg_.drop_invalid, v.dec.cap_len,
                             s.pkt_counts.empty() ? nullptr : s.pkt_counts.data(), sink);
            j = m;
          }
        }
      });
    }
    b.events.assign(events_.begin(), events_.begin() + std::min(event_n_, cap));
    b.module_counts.assign(cfg_.modules.size() * kModuleCounters, 0);
    for (auto& c : mod_counts_)
      for (size_t k = 0; k < c.size(); ++k) b.module_counts[k] += c[k];
    for (size_t k = 0; k < stream_counts_.size(); ++k) b.module_counts[k] += stream_counts_[k];
  }

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

  // A StreamRef over this backend's buffers: reading the held set `in_`, writing the other.
  StreamRef stream_ref(const uint8_t* data, const uint32_t* rec_off, bool final) {
    StreamRef sr{};
    sr.cfg = cfg_.stream;
    sr.data = data;
    sr.rec_off = rec_off;
    stream_begin(counts_, in_, held_cap_, cfg_.stream.held_bytes);
    const int out = in_ ^ 1;
    sr.held_in = held_[in_].data();
    sr.held_in_n = &counts_.held_n[in_];
    sr.held_out = final ? nullptr : held_[out].data();
    sr.held_out_n = &counts_.held_n[out];
    sr.held_out_bytes = &counts_.live_bytes[out];
    sr.pool[0] = pool_bytes_[0].data();
    sr.pool[1] = pool_bytes_[1].data();
    sr.counts = &counts_;
    sr.held_cap = held_cap_;
    sr.chunks = chunks_.data();
    sr.chunk_n = &counts_.chunk_n;  // zeroed by stream_begin
    sr.chunk_cap = uint32_t(chunks_.size());
    sr.bytes_used = nullptr;
    sr.gather = false;
    sr.hooks = hooks_;
    if (hooks_.n) {
      sr.hooks.table = table_.ref();
      sr.hooks.counts = stream_counts_.data();
      // At the final flush no batch's packets take verdicts; events go to flush_streams' caller.
      sr.hooks.events = EventSinkRef{events_.data(), &event_n_, uint32_t(events_.size())};
      if (final) sr.hooks.verdict = nullptr;
    }
    return sr;
  }

  // Step 4 of the flow stage (see the header): n packets plus, with reassembly, the held segments.
  void walk(const FlowTableRef& t, const DecodedView& dec, uint32_t n, const uint32_t* slot, uint8_t* flags,
            const FlowTrackParams& prm, bool emergency, const FlowRecordSink& out, const StreamRef* sr, bool final) {
    const uint32_t workers = uint32_t(pool_.size());
    const uint32_t held_n = sr ? *sr->held_in_n : 0;  // clamped by stream_begin
    const uint32_t base = sr ? sr->held_cap : 0;  // item number of packet 0
    pool_.parallel_for(workers, [&](uint64_t begin, uint64_t end, int w) {
      HostCounterSink sink{per_thread_[size_t(w)]};
      for (uint64_t shard = begin; shard < end; ++shard) {
        auto& items = shard_items_[shard];
        items.clear();
        for (uint32_t h = 0; h < held_n; ++h)
          if (mix32(sr->held_in[h].slot) % workers == shard) items.push_back(uint64_t(sr->held_in[h].slot) << 32 | h);
        for (uint32_t i = 0; i < n; ++i)
          if (slot[i] != kNoFlow && mix32(slot[i]) % workers == shard) items.push_back(uint64_t(slot[i]) << 32 | (base + i));
        std::sort(items.begin(), items.end());
        auto& vals = shard_vals_[shard];
        vals.resize(items.size());
        for (size_t k = 0; k < items.size(); ++k) vals[k] = uint32_t(items[k]);
        StreamRef mine;
        if (sr) {
          shard_pend_[shard].resize(items.size());
          mine = *sr;
          mine.pend = shard_pend_[shard].data();
        }
        for (uint32_t j = 0; j < items.size();) {
          const uint32_t s = uint32_t(items[j] >> 32);
          uint32_t m = j + 1;
          while (m < items.size() && uint32_t(items[m] >> 32) == s) ++m;
          if (sr) {
            StreamHookSink<HostCounterSink> walk_sink{sink};
            flow_walk_run(t, dec, vals.data(), j, m, s, flags, prm, emergency, out, &mine, final, walk_sink);
          } else {
            NoStreamModules<HostCounterSink> walk_sink{sink};
            flow_walk_run(t, dec, vals.data(), j, m, s, flags, prm, emergency, out, nullptr, final, walk_sink);
          }
          j = m;
        }
      }
    });
  }

  // Copies the walk's chunks and their bytes out, grouped by flow and direction.
  void collect_chunks(const StreamRef& sr, const DecodedView& dec, std::vector<StreamChunk>& chunks,
                      std::vector<uint8_t>& bytes) {
    const uint32_t n = std::min(counts_.chunk_n, uint32_t(chunks_.size()));
    chunks.assign(chunks_.begin(), chunks_.begin() + n);
    sort_stream_chunks(chunks);
    uint64_t total = 0;
    for (auto& c : chunks) total += (c.flags & kChunkConflict) ? 0 : c.len;
    bytes.resize(total);
    uint32_t at = 0;
    for (auto& c : chunks) {
      if ((c.flags & kChunkConflict) || c.len == 0) {
        c.data = at;
        continue;
      }
      std::memcpy(bytes.data() + at, stream_item_bytes(sr, dec, c.src) + c.src_off, c.len);
      c.data = at;
      at += c.len;
    }
  }

  void flow_stage(Slot& s, const BatchView& v) {
    const DecodedView& dec = v.dec;
    PacketBatch& b = s.batch;
    FlowTableRef t = table_.ref();
    FlowTrackParams prm{cfg_.flow.timeouts, ++epoch_, cfg_.flow.midstream, cfg_.flow.vlan_in_key,
                        cfg_.drop_invalid && cfg_.stream.urgent == UrgentPolicy::drop, cfg_.flow.defrag,
                        s.pkt_counts.empty() ? nullptr : s.pkt_counts.data()};
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
        for (uint32_t i : f) {
          slot[i] = flow_retry_packet(t, dec, i, prm, out, sink);
          untracked_policy(slot[i], i, cfg_.untracked_drop ? v.verdict : nullptr, sink);
        }
      flow_tick(*t.state, t.capacity, cfg_.flow.emergency_enter_pct, cfg_.flow.emergency_recover_pct, sink);
    }
    const bool emergency = t.state->emergency != 0;
    if (streams_) {
      StreamRef sr = stream_ref(v.data, v.rec_off, false);
      walk(t, dec, n, slot, flags, prm, emergency, out, &sr, false);
      in_ ^= 1;  // what this batch held is what the next one reads
      // Chunks from held segments name descriptions of the set this batch read (sr.held_in), whose
      // bytes are untouched until the next batch.
      if (b.want_streams) collect_chunks(sr, dec, b.stream_chunks, b.stream_bytes);
    } else {
      walk(t, dec, n, slot, flags, prm, emergency, out, nullptr, false);
    }
    run_modules(s, v);  // before the sweep: records leaving the table carry the flow's decision
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
    std::vector<FlowCountsAt> pkt_counts;  // modules with flows: counters at alerted packets
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
  std::vector<std::vector<uint64_t>> shard_items_;        // per shard: (slot << 32 | item), sorted
  std::vector<std::vector<uint32_t>> shard_vals_;         // per shard: the items alone
  std::vector<std::vector<StreamPending>> shard_pend_;    // per shard: the walk's scratch
  HostFlowTable table_;
  bool streams_ = false;
  uint32_t held_cap_ = 0;
  std::vector<StreamHeld> held_[2];      // the out-of-order buffer, two sets used in turn
  std::vector<uint8_t> pool_bytes_[2];   // its byte pools (see StreamCounts)
  StreamCounts counts_{};
  int in_ = 0;                           // the set the next batch reads
  std::vector<StreamChunk> chunks_;
  std::vector<uint32_t> ctx_;                       // modules: context key per packet
  std::vector<uint16_t> class_order_;               // modules: classes x stages
  StreamHooks hooks_{};                             // modules with on_stream (the walk calls them)
  std::vector<unsigned long long> stream_counts_;   // their counters (atomic: the walk is parallel)
  uint16_t classes_ = 1;
  bool schedule_ = false;
  std::vector<uint32_t> order_;                     // scheduling: the order of the next stage
  std::vector<std::pair<uint32_t, uint32_t>> sched_;
  std::vector<ModuleEvent> events_;                 // modules: the batch's events (bounded)
  uint32_t event_n_ = 0;
  std::vector<std::vector<unsigned long long>> mod_counts_;  // per thread: modules x counters

  std::vector<FlowRecordOut> records_;
  uint32_t record_capacity_ = 0;
  uint32_t epoch_ = 0;
  uint64_t next_sweep_ns_ = 0;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(const BackendConfig& cfg) { return std::make_unique<CpuBackend>(cfg); }

}  // namespace gaspp
