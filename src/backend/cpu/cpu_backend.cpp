// backend/cpu/cpu_backend.cpp — the CPU backend: the same per-packet functions on a thread pool.
//
// submit() hands the batch to the backend's runner thread and returns; the runner runs the stages
// in the order core/stage_plan.hpp gives (the backend is its StageExecutor), batches one at a time
// in the order submitted, and wait() returns once the slot's results are in host memory (an
// exception thrown in the stages comes out of wait). So the caller reads and batches the next
// packets, and handles the previous batch's results, while the pool works on this one: run
// synchronously, that serial work on the pipeline's thread came between every two batches, and
// with all 16 cores in the pool `gaspp -r` ran at a third of the backend's rate. Each slot owns
// host arrays for the decoded fields and verdicts; the records are read where the source put them.
// How each stage runs here:
//   decode        the pool's threads over ranges of packets, a counter array per thread, merged in
//                 results();
//   flow lookup   every packet finds or claims its flow slot in parallel (flow/host_lookup.hpp,
//                 prefetching); packets that found no room retry in capture order on one thread;
//   flow walk     worker w takes the items (packets, and segments held in the out-of-order buffer)
//                 whose hashed slot % workers == w (the shard of each packet computed once, in
//                 parallel), groups them by slot in linear time — a flow's items become a run,
//                 held segments first, then packets in capture order; runs in order of first
//                 appearance, with a slot-indexed scratch array, where a sort of (slot, item) pairs
//                 was a tenth of the time — and walks each run (hashed: in a sparse table most
//                 flows sit in the first slot of their bucket, so plain slot numbers would share
//                 out badly). A worker writes its packets' new flags to an array of its own, and
//                 each range's worker copies them back by packet afterwards: written in place by
//                 flow, the flags of neighbouring packets (other workers' flows) share cache lines,
//                 which bounced between cores on every packet;
//   module stage  the module's run_cpu() over ranges of packets (core/module_stage.hpp); regroup:
//                 std::sort by schedule_key;
//   verdict walk  the walk's sorted runs again, shard by shard;
//   sweep         over ranges of table slots.
// decode prefetches the records a few packets ahead: each is a new cache line (packets are far
// apart in the batch), and waiting on it was most of decode's time.
// The out-of-order buffer: two sets of segment descriptions used in turn (a batch reads what the
// previous one held) and two byte pools where held bytes stay while they wait (StreamCounts).
// Module tables stay in the modules' host memory.
// With BackendConfig::stage_times each stage's wall time and the pool's busy time in it are kept
// (Backend::stage_times): where a batch's time goes, and which stage does not scale with threads.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "backend/backend.hpp"
#include "core/module_stage.hpp"
#include "core/stage_plan.hpp"
#include "core/stream_dispatch.hpp"
#include "core/thread_pool.hpp"
#include "decode/decoder.hpp"
#include "flow/flow_track.hpp"
#include "flow/host_flow_table.hpp"
#include "flow/host_lookup.hpp"
#include "stream/reassembly.hpp"

namespace gaspp {
namespace {

class CpuBackend final : public Backend, private StageExecutor {
 public:
  explicit CpuBackend(const BackendConfig& cfg)
      : cfg_(cfg), plan_(cfg), pool_(cfg.threads > 0 ? cfg.threads : int(std::max(1u, std::thread::hardware_concurrency()))),
        slots_(size_t(std::max(cfg.slots, 3))), per_thread_(size_t(pool_.size())), failed_(size_t(pool_.size())),
        groups_(size_t(pool_.size())), chunk_blocks_(size_t(pool_.size()), StreamRef::ChunkBlock{0, 0}),
        shard_pend_(size_t(pool_.size())), table_(cfg.flow) {
    pool_.set_timing(cfg.stage_times);
    if (cfg.flow.enabled) run_of_slot_.assign(table_.shape().slots(), kNoRun);
    // Each worker's counters a cache line apart from the next one's, whatever the vector's alignment.
    stride_ = (uint32_t(pool_.size()) + 15) / 16 * 16 + 16;
    range_next_.resize(size_t(pool_.size()) * stride_);
    record_capacity_ = flow_record_capacity(cfg);
    records_.reset(record_capacity_);
    streams_ = cfg.flow.enabled && cfg.stream.enabled;
    // Application-layer alerts come after the batch, on the packet that delivered the data: the
    // verdict walk then keeps the flow's counters at every packet with payload (module_stage.hpp).
    payload_counts_ = std::any_of(cfg.modules.begin(), cfg.modules.end(), [](const ModuleInstance* m) { return m->wants_app_layer(); });
    flow_pos_ = cfg.flow.enabled && std::any_of(cfg.modules.begin(), cfg.modules.end(),
                                                [](const ModuleInstance* m) { return m->wants_flow_positions(); });
    if (streams_) {
      held_cap_ = stream_held_cap(cfg.stream, cfg.batch_packets);
      for (int k = 0; k < 2; ++k) {
        held_[k].reset(held_cap_);
        pool_bytes_[k].reset(cfg.stream.held_bytes);  // calloc storage is 16-byte aligned
      }
      chunks_.reset(stream_chunk_cap(cfg.batch_packets, held_cap_));
    }
    if (!cfg.modules.empty()) {
      InPlaceTables mem;
      for (ModuleInstance* m : cfg.modules) m->upload(mem);
      ctx_.resize(cfg.batch_packets);
      hooks_ = stream_hooks_of(cfg.modules, nullptr);
      if (hooks_.bulk_n && chunks_.size()) retry_.reset(chunks_.size() * hooks_.bulk_n);
      stream_counts_.assign(cfg.modules.size() * kModuleCounters, 0);
      if (plan_.schedule()) {
        order_.resize(cfg.batch_packets);
        sched_.resize(cfg.batch_packets);
      }
      events_.resize(event_capacity_of(cfg));
      stage_retry_.reset(cfg.batch_packets);
      mod_counts_.assign(size_t(pool_.size()), std::vector<unsigned long long>(cfg.modules.size() * kModuleCounters));
    }
    for (auto& s : slots_) {
      // The flow counters at each alerted packet (the verdict walk writes them; alerts show them).
      if (!cfg.modules.empty() && cfg.flow.enabled) {
        s.pkt_counts.resize(cfg.batch_packets);
        s.batch.h_pkt_counts = s.pkt_counts.data();
      }
      if (flow_pos_) s.flow_pos.resize(cfg.batch_packets);
      // Entries count only in their batch's epoch (FlowIdAt): zero once, never cleared.
      if (!cfg.modules.empty() && cfg.flow.enabled) s.flow_id_at.resize(cfg.batch_packets);
      s.flow_slot.resize(cfg.batch_packets);
      s.flow_flags.resize(cfg.batch_packets);
      s.rec_off.resize(cfg.batch_packets);
      s.verdict.resize(cfg.batch_packets);
      s.decoded.resize(cfg.batch_packets);
      if (cfg.flow.enabled) s.shard.resize(cfg.batch_packets);
      s.batch.capacity = cfg.batch_packets;
      s.batch.h_rec_off = s.rec_off.data();
      s.batch.h_verdict = s.verdict.data();
    }
    queued_.assign(slots_.size(), false);
    runner_ = std::thread([this] { runner_main(); });
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

  // Batches queued and not started are dropped (their records may be gone); one running finishes.
  ~CpuBackend() override {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
      queue_.clear();
    }
    cv_.notify_all();
    runner_.join();
  }

  void submit(int slot) override {
    {
      std::lock_guard<std::mutex> lk(mu_);
      queued_[size_t(slot)] = true;
      queue_.push_back(slot);
    }
    cv_.notify_all();
  }
  void wait(int slot) override {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [&] { return !queued_[size_t(slot)]; });
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

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

  std::vector<FlowRecordOut> flush_flows() override { return plan_.flush_flows(*this); }

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
    for (auto& c : per_thread_) c = ThreadCounters{};
    walk(table_.ref(), DecodedView{}, 0, nullptr, nullptr, FlowTrackParams{}, false, FlowRecordSink{}, &sr, true);
    if (sr.hooks.bulk_n) bulk_pass(sr, DecodedView{});
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

  std::vector<StageTime> stage_times() const override { return stage_times_; }


 private:
  // Times one stage while it is in scope (BackendConfig::stage_times; nothing when off). `name`
  // must outlive the backend (a literal or a module's name).
  class StageClock {
   public:
    StageClock(CpuBackend& b, const char* name) : b_(b.cfg_.stage_times ? &b : nullptr), name_(name) {
      if (!b_) return;
      b_->pool_.take_busy_ns();  // what ran between stages is not this stage's
      t0_ = std::chrono::steady_clock::now();
    }
    ~StageClock() { stop(); }
    // Ends the timing before the scope does (once).
    void stop() {
      if (!b_) return;
      const double wall = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0_).count();
      const double busy = double(b_->pool_.take_busy_ns()) / 1e3;
      StageTime& st = stage_time_named(b_->stage_times_, name_);
      st.threads = b_->pool_.size();
      st.add(wall);
      st.busy_us += busy;
      b_ = nullptr;
    }
    StageClock(const StageClock&) = delete;
    StageClock& operator=(const StageClock&) = delete;

   private:
    CpuBackend* b_;
    const char* name_;
    std::chrono::steady_clock::time_point t0_{};
  };

  class InPlaceTables final : public TableMemory {
   public:
    const void* place(const void* host, size_t) override { return host; }
  };

  // The runner thread: the submitted batches in order, one at a time.
  void runner_main() {
    for (;;) {
      int slot;
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        slot = queue_.front();
        queue_.pop_front();
      }
      std::exception_ptr err;
      try {
        cur_ = &slots_[size_t(slot)];
        // A small batch (a quiet link's: a few packets) runs on this thread alone: waking the pool
        // for each of its stages costs more than the work, and a worker whose core is busy with
        // something else can hold the batch up for milliseconds.
        const uint64_t held = streams_ ? counts_.held_n[in_] : 0;
        pool_.set_serial(cur_->batch.count + held < kSerialBelow);
        plan_.run_batch(*this, cur_->batch.max_ts_ns);
      } catch (...) {
        err = std::current_exception();
      }
      pool_.set_serial(false);  // for this batch only: the flushes after the last may be large
      {
        std::lock_guard<std::mutex> lk(mu_);
        if (err && !error_) error_ = err;
        queued_[size_t(slot)] = false;
      }
      cv_.notify_all();
    }
  }

  // The stages (core/stage_plan.hpp), for the batch in cur_.
  void decode() override {
    StageClock clock(*this, "decode");
    Slot& s = *cur_;
    PacketBatch& b = s.batch;
    v_ = BatchView{b.h_span, b.span_len, b.h_rec_off,  b.count, b.fmt, b.link, b.source, s.decoded.view(),
                   b.h_verdict, cfg_.validate_checksums, cfg_.flow.defrag};
    for (auto& c : per_thread_) c = ThreadCounters{};
    pool_.parallel_for(b.count, [&](uint64_t begin, uint64_t end, int w) {
      HostCounterSink sink{per_thread_[size_t(w)]};
      DecodedPacket p;
      decode_batch_range(v_, begin, end, p, [&](uint64_t i, const DecodedPacket& d) {
        store(v_.dec, uint32_t(i), d);
        v_.verdict[i] = kVerdictPass;
        count_packet(sink, d);
      });
    });
    b.flow_records.clear();
    b.stream_chunks.clear();
    // stream_bytes keeps its size until collect_chunks sizes it (a vector cleared and resized is
    // filled with zeros again, every byte of every batch).
    if (!b.want_streams) b.stream_bytes.clear();
    b.events.clear();
    b.module_counts.clear();
    out_count_ = 0;
    event_n_ = 0;  // stream hooks (in the walk) raise events before the module stages
    std::fill(stream_counts_.begin(), stream_counts_.end(), 0ull);
    hooks_.verdict = v_.verdict;
    if (cfg_.modules.empty()) return;
    for (auto& c : mod_counts_) std::fill(c.begin(), c.end(), 0ull);
    const bool flows = cfg_.flow.enabled;
    a_ = StageArgs{};
    a_.data = v_.data;
    a_.rec_off = v_.rec_off;
    a_.count = v_.count;
    a_.dec = v_.dec;
    a_.verdict = v_.verdict;
    a_.ctx = ctx_.data();
    a_.order = nullptr;
    a_.flow_slot = flows ? s.flow_slot.data() : nullptr;
    a_.flow_flags = flows ? s.flow_flags.data() : nullptr;
    a_.flow_pos = s.flow_pos.empty() ? nullptr : s.flow_pos.data();
    a_.flow_id_at = s.flow_id_at.empty() ? nullptr : s.flow_id_at.data();
    if (flows) a_.table = table_.ref();
    a_.events = EventSinkRef{events_.data(), &event_n_, uint32_t(events_.size())};
    a_.retry = stage_retry_.data();
    a_.retry_n = &stage_retry_n_;
    a_.retry_cap = uint32_t(stage_retry_.size());
    a_.has_flows = flows;
    a_.class_order = plan_.class_order().data();
    a_.classes = plan_.classes();
    a_.modules = uint16_t(cfg_.modules.size());
  }

  void flow_lookup() override {
    Slot& s = *cur_;
    const DecodedView& dec = v_.dec;
    FlowTableRef t = table_.ref();
    prm_ = FlowTrackParams{cfg_.flow.timeouts, ++epoch_, cfg_.flow.midstream, cfg_.flow.vlan_in_key,
                           cfg_.drop_invalid && cfg_.stream.urgent == UrgentPolicy::drop, cfg_.flow.defrag,
                           s.pkt_counts.empty() ? nullptr : s.pkt_counts.data(),
                           s.flow_pos.empty() ? nullptr : s.flow_pos.data(),
                           s.flow_id_at.empty() ? nullptr : s.flow_id_at.data()};
    a_.flow_epoch = prm_.epoch;
    uint32_t* slot = s.flow_slot.data();
    uint8_t* flags = s.flow_flags.data();
    for (auto& f : failed_) f.clear();
    {
      StageClock clock(*this, "flow lookup");
      pool_.parallel_for(v_.count, [&](uint64_t begin, uint64_t end, int w) {
        HostCounterSink sink{per_thread_[size_t(w)]};
        flow_lookup_range(t, dec, begin, end, prm_, slot, flags, [&](FlowSkip why) { count_skip(sink, why); },
                          [&](uint32_t i) {
                            atomic_add(&t.state->failed, 1);
                            failed_[size_t(w)].push_back(i);
                          });
      });
    }
    // Each worker's list is in capture order and workers hold consecutive ranges.
    StageClock retries(*this, "flow lookup: retries");
    const FlowRecordSink out = record_sink();
    HostCounterSink sink{per_thread_[0]};
    for (auto& f : failed_)
      for (uint32_t i : f) {
        slot[i] = flow_retry_packet(t, dec, i, prm_, out, sink);
        untracked_policy(slot[i], i, cfg_.untracked_drop ? v_.verdict : nullptr, sink);
      }
  }

  void flow_tick() override {
    StageClock clock(*this, "flow tick");
    HostCounterSink sink{per_thread_[0]};
    FlowTableRef t = table_.ref();
    gaspp::flow_tick(*t.state, t.capacity, cfg_.flow.emergency_enter_pct, cfg_.flow.emergency_recover_pct, sink);
    emergency_ = t.state->emergency != 0;
  }

  void flow_walk() override {
    Slot& s = *cur_;
    PacketBatch& b = s.batch;
    const FlowTableRef t = table_.ref();
    const FlowRecordSink out = record_sink();
    if (streams_) {
      StreamRef sr = stream_ref(v_.data, v_.rec_off, false);
      walk(t, v_.dec, v_.count, s.flow_slot.data(), s.flow_flags.data(), prm_, emergency_, out, &sr, false);
      if (sr.hooks.bulk_n) {
        StageClock clock(*this, "stream bulk hooks");
        bulk_pass(sr, v_.dec);
      }
      in_ ^= 1;  // what this batch held is what the next one reads
      // Chunks from held segments name descriptions of the set this batch read (sr.held_in), whose
      // bytes are untouched until the next batch.
      if (b.want_streams) {
        StageClock clock(*this, "stream chunks out");
        collect_chunks(sr, v_.dec, b.stream_chunks, b.stream_bytes);
      }
    } else {
      walk(t, v_.dec, v_.count, s.flow_slot.data(), s.flow_flags.data(), prm_, emergency_, out, nullptr, false);
    }
  }

  void module_stage(uint16_t st, uint16_t k) override {
    const ModuleInstance* m = cfg_.modules[k];
    StageClock clock(*this, m->name());
    a_.stage = st;
    a_.first = st == 0;
    a_.module = k;
    a_.state_off = m->state_off;
    stage_retry_n_ = 0;
    pool_.parallel_for(v_.count, [&](uint64_t begin, uint64_t end, int w) {
      m->run_cpu(a_, uint32_t(begin), uint32_t(end), mod_counts_[size_t(w)].data() + size_t(k) * kModuleCounters);
    });
    if (const uint32_t r = module_retry_count(a_)) {
      pool_.parallel_for(r, [&](uint64_t begin, uint64_t end, int w) {
        m->run_cpu_retry(a_, uint32_t(begin), uint32_t(end),
                         mod_counts_[size_t(w)].data() + size_t(k) * kModuleCounters);
      });
    }
  }

  void regroup(uint16_t next_st) override {
    StageClock clock(*this, "regroup");
    for (uint32_t i = 0; i < v_.count; ++i) sched_[i] = {schedule_key(a_, i, next_st), i};
    std::sort(sched_.begin(), sched_.begin() + v_.count);
    for (uint32_t k = 0; k < v_.count; ++k) order_[k] = sched_[k].second;
    a_.order = order_.data();
  }

  // Over the walk's sorted runs again, shard by shard.
  void verdict_walk() override {
    StageClock clock(*this, "verdict walk");
    Slot& s = *cur_;
    const FlowTableRef t = table_.ref();
    const uint32_t base = streams_ ? held_cap_ : 0;
    pool_.parallel_for(groups_.size(), [&](uint64_t begin, uint64_t end, int w) {
      HostCounterSink sink{per_thread_[size_t(w)]};
      for (uint64_t shard = begin; shard < end; ++shard) {
        const Group& g = groups_[shard];
        for (const Run& r : g.runs)
          verdict_walk_run(t, g.vals.data(), r.start, r.start + r.n, r.slot, base, s.flow_flags.data(), v_.verdict,
                           cfg_.drop_invalid, v_.dec.cap_len, s.pkt_counts.empty() ? nullptr : s.pkt_counts.data(),
                           payload_counts_ ? v_.dec.payload_len : nullptr, sink);
      }
    });
  }

  void sweep(uint64_t now, bool due) override {
    StageClock clock(*this, "sweep");
    PacketBatch& b = cur_->batch;
    b.flow_records.assign(records_.begin(), records_.begin() + std::min(out_count_, record_capacity_));
    if (!due && !emergency_) return;
    const uint32_t swept = sweep_table(now, emergency_, false);
    b.flow_records.insert(b.flow_records.end(), records_.begin(), records_.begin() + swept);
  }

  void results() override {
    StageClock clock(*this, "results");
    Slot& s = *cur_;
    PacketBatch& b = s.batch;
    if (cfg_.flow.enabled) sort_flow_records(b.flow_records);
    if (!cfg_.modules.empty()) {
      b.events.assign(events_.begin(), events_.begin() + std::min<size_t>(event_n_, events_.size()));
      b.module_counts.assign(cfg_.modules.size() * kModuleCounters, 0);
      for (auto& c : mod_counts_)
        for (size_t k = 0; k < c.size(); ++k) b.module_counts[k] += c[k];
      for (size_t k = 0; k < stream_counts_.size(); ++k) b.module_counts[k] += stream_counts_[k];
    }
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

  uint32_t shutdown_sweep(std::vector<FlowRecordOut>& into, bool& flows_left) override {
    const uint32_t n = sweep_table(0, false, true);
    into.insert(into.end(), records_.begin(), records_.begin() + n);
    flows_left = table_.state().live != 0;
    return n;
  }

  FlowRecordSink record_sink() { return FlowRecordSink{records_.data(), &out_count_, record_capacity_}; }

  // Sweeps the table; returns how many records it wrote to records_ (from index 0).
  uint32_t sweep_table(uint64_t now, bool emergency, bool shutdown) {
    FlowTableRef t = table_.ref();
    uint32_t count = 0;
    FlowRecordSink out{records_.data(), &count, record_capacity_};
    pool_.parallel_for(t.slots(), [&](uint64_t begin, uint64_t end, int w) {
      HostCounterSink sink{per_thread_[size_t(w)]};
      // Most of a table is empty and a sweep comes every second of capture time, every batch on a
      // slow capture: a block of 64 tags without a live one (tags 0 and 1 are empty and being
      // claimed) is passed over with one vectorized test instead of 64 branches.
      constexpr uint64_t kBlock = 64;
      for (uint64_t s = begin; s < end;) {
        const uint64_t block_end = std::min(end, (s / kBlock + 1) * kBlock);
        uint32_t live = 0;
        if (block_end - s == kBlock) {  // a fixed count: the compiler vectorizes it
          const uint32_t* tag = t.tags + s;
          for (uint64_t k = 0; k < kBlock; ++k) live |= tag[k] & ~1u;
        } else {
          for (uint64_t k = s; k < block_end; ++k) live |= t.tags[k] & ~1u;
        }
        if (live)
          for (uint64_t k = s; k < block_end; ++k)
            flow_sweep_slot(t, uint32_t(k), now, cfg_.flow.timeouts, emergency, shutdown, out, sink);
        s = block_end;
      }
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
      sr.hooks.retry = retry_.data();
      sr.hooks.retry_n = &retry_n_;
      sr.hooks.retry_cap = uint32_t(retry_.size());
      sr.hooks.want_pos = flow_pos_ ? 1 : 0;
      sr.hooks.flow_pos = !final && cur_ && !cur_->flow_pos.empty() ? cur_->flow_pos.data() : nullptr;
    }
    return sr;
  }

  // Step 4 of the flow stage (see the header): n packets plus, with reassembly, the held segments.
  void walk(const FlowTableRef& t, const DecodedView& dec, uint32_t n, const uint32_t* slot, uint8_t* flags,
            const FlowTrackParams& prm, bool emergency, const FlowRecordSink& out, const StreamRef* sr, bool final) {
    const uint32_t workers = uint32_t(pool_.size());
    const uint32_t held_n = sr ? *sr->held_in_n : 0;  // clamped by stream_begin
    const uint32_t base = sr ? sr->held_cap : 0;  // item number of packet 0
    uint16_t* shard_of = cur_ && n ? cur_->shard.data() : nullptr;
    // Range w's packets of each shard (ranges as parallel_for splits n, the same in every pass).
    range_shard_n_.assign(size_t(workers) * stride_, 0);
    if (n) {
      StageClock clock(*this, "flow walk: shards");
      pool_.parallel_for(n, [&](uint64_t begin, uint64_t end, int w) {
        uint32_t* count = &range_shard_n_[size_t(w) * stride_];
        for (uint64_t i = begin; i < end; ++i) {
          shard_of[i] = slot[i] == kNoFlow ? kNoShard : uint16_t(mix32(slot[i]) % workers);
          if (shard_of[i] != kNoShard) ++count[shard_of[i]];
        }
      });
    }
    StageClock group_clock(*this, final ? "stream flush: grouping" : "flow walk: grouping");
    // Each shard's items listed once, in order, so that a shard's worker reads its own items
    // instead of scanning every packet and held segment for them (that cost grew with the
    // workers): packets by a counting sort over the ranges of the shards pass (range w's packets
    // of shard h go after those of ranges v < w), held segments by one serial pass.
    // range_before_[w][h]: shard h's packets in ranges v < w, the place of range w's first one
    // among them (the flags written back by packet below use it too).
    range_before_.resize(size_t(workers) * stride_);
    shard_at_.assign(size_t(workers) + 1, 0);
    for (uint32_t h = 0; h < workers; ++h) {
      uint32_t sum = 0;
      for (uint32_t w = 0; w < workers; ++w) {
        range_before_[size_t(w) * stride_ + h] = sum;
        sum += range_shard_n_[size_t(w) * stride_ + h];
      }
      shard_at_[h + 1] = shard_at_[h] + sum;
    }
    if (n) {
      shard_items_.resize(shard_at_[workers]);
      pool_.parallel_for(n, [&](uint64_t begin, uint64_t end, int w) {
        uint32_t* next = &range_next_[size_t(w) * stride_];
        for (uint32_t h = 0; h < workers; ++h) next[h] = shard_at_[h] + range_before_[size_t(w) * stride_ + h];
        for (uint64_t i = begin; i < end; ++i)
          if (shard_of[i] != kNoShard) shard_items_[next[shard_of[i]]++] = uint32_t(i);
      });
    }
    held_at_.assign(size_t(workers) + 1, 0);
    held_items_.resize(held_n);
    held_shard_.resize(held_n);
    for (uint32_t h = 0; h < held_n; ++h) ++held_at_[(held_shard_[h] = mix32(sr->held_in[h].slot) % workers) + 1];
    for (uint32_t k = 0; k < workers; ++k) held_at_[k + 1] += held_at_[k];
    held_fill_.assign(held_at_.begin(), held_at_.end() - 1);
    for (uint32_t h = 0; h < held_n; ++h) held_items_[held_fill_[held_shard_[h]]++] = h;
    pool_.parallel_for(workers, [&](uint64_t begin, uint64_t end, int) {
      for (uint64_t shard = begin; shard < end; ++shard) {
        Group& g = groups_[shard];
        g.runs.clear();
        g.items.clear();
        auto add = [&](uint32_t s, uint32_t item) {
          uint32_t& r = run_of_slot_[s];  // shards hold disjoint slots: no other worker touches it
          if (r == kNoRun) {
            r = uint32_t(g.runs.size());
            g.runs.push_back(Run{s, 0, 0});
          }
          ++g.runs[r].n;
          g.items.push_back(uint64_t(r) << 32 | item);
        };
        for (uint32_t k = held_at_[shard]; k < held_at_[shard + 1]; ++k) add(sr->held_in[held_items_[k]].slot, held_items_[k]);
        for (uint32_t k = shard_at_[shard]; k < shard_at_[shard + 1]; ++k) {
          const uint32_t i = shard_items_[k];
          add(slot[i], base + i);
        }
        // Each run's place, then its items in the order they came (held first, then capture order).
        uint32_t at = 0;
        for (Run& r : g.runs) {
          r.start = at;
          at += r.n;
          r.n = 0;
          run_of_slot_[r.slot] = kNoRun;
        }
        g.vals.resize(at);
        g.ord.resize(at);
        g.flags_at.resize(at);
        uint32_t packets = 0;
        for (const uint64_t x : g.items) {
          Run& r = g.runs[x >> 32];
          const uint32_t pos = r.start + r.n++;
          g.vals[pos] = uint32_t(x);
          g.ord[pos] = uint32_t(x) < base ? kHeldItem : packets++;
        }
        g.flags.resize(packets);
      }
    });
    group_clock.stop();
    // The walk itself, a worker's shards' runs one after the other.
    StageClock walk_clock(*this, final ? "stream flush: runs" : "flow walk: runs");
    pool_.parallel_for(workers, [&](uint64_t begin, uint64_t end, int w) {
      HostCounterSink sink{per_thread_[size_t(w)]};
      for (uint64_t shard = begin; shard < end; ++shard) {
        Group& g = groups_[shard];
        const uint32_t at = uint32_t(g.vals.size());
        StreamRef mine;
        if (sr) {
          shard_pend_[shard].resize(at);
          mine = *sr;
          mine.pend = shard_pend_[shard].data();
          mine.block = &chunk_blocks_[shard];
        }
        for (const Run& r : g.runs) {
          if (sr) {
            StreamHookSink<HostCounterSink> walk_sink{sink};
            flow_walk_run(t, dec, g.vals.data(), r.start, r.start + r.n, r.slot, flags, prm, emergency, out, &mine, final,
                          walk_sink, g.flags_at.data());
          } else {
            NoStreamModules<HostCounterSink> walk_sink{sink};
            flow_walk_run(t, dec, g.vals.data(), r.start, r.start + r.n, r.slot, flags, prm, emergency, out, nullptr,
                          final, walk_sink, g.flags_at.data());
          }
        }
        for (uint32_t pos = 0; pos < at; ++pos)
          if (g.ord[pos] != kHeldItem) g.flags[g.ord[pos]] = g.flags_at[pos];
      }
    });
    walk_clock.stop();
    if (sr) {
      // Only what reads chunks by number needs them back to back: the bulk hooks and the chunks
      // handed out (a stream hook saw each chunk as the walk made it).
      if (final || sr->hooks.bulk_n || (cur_ && cur_->batch.want_streams)) {
        StageClock close_clock(*this, final ? "stream flush: chunk blocks" : "flow walk: chunk blocks");
        close_chunk_blocks(*sr);
      } else {
        for (StreamRef::ChunkBlock& b : chunk_blocks_) b = StreamRef::ChunkBlock{0, 0};
      }
    }
    // The walk's flags back by packet, each range by the worker that owns it: range w's first
    // packet of shard h is that shard's packet number range_before_[w][h].
    if (n) {
      StageClock back_clock(*this, "flow walk: flags back");
      pool_.parallel_for(n, [&](uint64_t begin, uint64_t end, int w) {
        uint32_t* next = &range_next_[size_t(w) * stride_];
        for (uint32_t h = 0; h < workers; ++h) next[h] = range_before_[size_t(w) * stride_ + h];
        for (uint64_t i = begin; i < end; ++i)
          if (shard_of[i] != kNoShard) flags[i] = groups_[shard_of[i]].flags[next[shard_of[i]]++];
      });
    }
  }

  // After a walk: the chunk places each worker took in blocks (StreamRef::block) and left unused
  // at the end of its last block are taken out, the chunks after them moved down and the links
  // between chunks (prev) renumbered, so the chunks are [0, chunk_n) as with one counter.
  void close_chunk_blocks(const StreamRef& sr) {
    const uint32_t taken = std::min(*sr.chunk_n, sr.chunk_cap);
    hole_.clear();
    for (StreamRef::ChunkBlock& b : chunk_blocks_) {
      if (b.next < b.end && b.next < taken) hole_.push_back({b.next, std::min(b.end, taken)});
      b = StreamRef::ChunkBlock{0, 0};
    }
    if (hole_.empty()) return;
    std::sort(hole_.begin(), hole_.end());
    const uint32_t first = hole_.front().first;
    renumber_.resize(taken);
    uint32_t j = first;
    size_t h = 0;
    for (uint32_t i = first; i < taken; ++i) {
      if (h < hole_.size() && i == hole_[h].first) {
        i = hole_[h++].second - 1;
        continue;
      }
      renumber_[i] = j;
      sr.chunks[j++] = sr.chunks[i];
    }
    for (uint32_t k = 0; k < j; ++k) {
      uint32_t& p = sr.chunks[k].prev;
      if (p < kChunkPrevLost && p >= first) p = renumber_[p];
    }
    *sr.chunk_n = j;
  }

  // After a walk with bulk stream modules: their hooks over every chunk, then the tails
  // (core/stream_dispatch.hpp), each pass split over the pool.
  void bulk_pass(const StreamRef& sr, const DecodedView& dec) {
    const uint32_t n = std::min(*sr.chunk_n, sr.chunk_cap);
    retry_n_ = 0;
    pool_.parallel_for(n, [&](uint64_t begin, uint64_t end, int) {
      for (uint64_t k = begin; k < end; ++k) stream_bulk_chunk(sr.hooks, sr, dec, uint32_t(k));
    });
    const uint32_t r = stream_retry_count(sr.hooks);
    if (r) {
      pool_.parallel_for(r, [&](uint64_t begin, uint64_t end, int) {
        for (uint64_t e = begin; e < end; ++e) stream_bulk_retry(sr.hooks, sr, dec, uint32_t(e));
      });
    }
    pool_.parallel_for(n, [&](uint64_t begin, uint64_t end, int) {
      for (uint64_t k = begin; k < end; ++k) stream_bulk_tail(sr.hooks, sr, dec, uint32_t(k));
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
    bytes.resize(total);  // zeros only past the last batch's size (decode() leaves it)
    uint32_t at = 0;
    for (auto& c : chunks) {
      c.data = at;
      if (!(c.flags & kChunkConflict)) at += c.len;
    }
    // Every byte of the batch's streams, copied on all threads (on one it was the largest serial
    // step of a batch with the application layer on).
    pool_.parallel_for(chunks.size(), [&](uint64_t begin, uint64_t end, int) {
      for (uint64_t k = begin; k < end; ++k) {
        const StreamChunk& c = chunks[k];
        if ((c.flags & kChunkConflict) || c.len == 0) continue;
        std::memcpy(bytes.data() + c.data, stream_item_bytes(sr, dec, c.src) + c.src_off, c.len);
      }
    });
  }

 private:
  // The walk's grouping of one shard: runs of one flow slot each, their items consecutive in vals.
  static constexpr uint64_t kSerialBelow = 256;  // packets and held segments: a batch run on the runner thread alone
  static constexpr uint32_t kNoRun = ~0u;
  static constexpr uint16_t kNoShard = 0xffff;  // a packet with no flow (thread pools stay below it)
  static constexpr uint32_t kHeldItem = ~0u;  // Group::ord of a held segment
  struct Run {
    uint32_t slot, start, n;
  };
  struct Group {
    std::vector<Run> runs;
    std::vector<uint32_t> vals;    // item numbers, run after run
    std::vector<uint64_t> items;   // scratch: (run << 32 | item) in arrival order
    std::vector<uint32_t> ord;     // per vals entry: the packet's place among the shard's packets in capture order
    std::vector<uint8_t> flags_at;  // per vals entry: the walk's packet flags (flow_walk_run's flags_at)
    std::vector<uint8_t> flags;    // the same by ord: the shard's packets' flags in capture order
  };
  // Per-thread counters on cache lines of their own (workers add to them for every packet).
  struct alignas(64) ThreadCounters : Counters {};
  struct Slot {
    std::vector<uint16_t> shard;           // the walk: each packet's shard (kNoShard: no flow)
    std::vector<FlowCountsAt> pkt_counts;  // modules with flows: counters at alerted packets
    std::vector<FlowPosAt> flow_pos;       // a module wants positions (flow_pos_): the walk writes each packet's
    std::vector<FlowIdAt> flow_id_at;      // modules with flows: ended connections' ids (FlowIdAt)
    std::vector<uint32_t> flow_slot;
    std::vector<uint8_t> flow_flags;
    std::vector<uint32_t> rec_off;
    std::vector<uint8_t> verdict;
    DecodedArrays decoded;
    PacketBatch batch;
  };
  BackendConfig cfg_;
  StagePlan plan_;
  ThreadPool pool_;
  std::vector<Slot> slots_;
  std::vector<ThreadCounters> per_thread_;
  std::vector<std::vector<uint32_t>> failed_;
  std::vector<Group> groups_;                             // per shard: the walk's runs
  std::vector<StreamRef::ChunkBlock> chunk_blocks_;        // per shard: its chunk places (StreamRef::block)
  std::vector<std::pair<uint32_t, uint32_t>> hole_;       // close_chunk_blocks' scratch
  std::vector<uint32_t> renumber_;
  std::vector<uint32_t> run_of_slot_;                     // the grouping's scratch, kNoRun between walks
  std::vector<uint32_t> range_shard_n_;                   // the walk: packets of range w in shard h, [w * stride_ + h]
  std::vector<uint32_t> range_before_;                    // the walk: shard h's packets in ranges before w, [w * stride_ + h]
  std::vector<uint32_t> shard_at_, shard_items_;          // the walk: shard h's packets, shard_items_[shard_at_[h]..[h+1])
  std::vector<uint32_t> held_at_, held_items_, held_fill_, held_shard_;  // and its held segments, likewise
  std::vector<uint32_t> range_next_;                      // the walk's write-back: each range's place in each shard
  uint32_t stride_ = 0;                                   // of the range tables: a line or more past the workers
  std::vector<std::vector<StreamPending>> shard_pend_;    // per shard: the walk's scratch
  HostFlowTable table_;
  bool streams_ = false;
  bool payload_counts_ = false;  // the verdict walk writes counters at packets with payload
  bool flow_pos_ = false;        // a module wants flow positions (ModuleInstance::wants_flow_positions)
  uint32_t held_cap_ = 0;
  ZeroFilledArray<StreamHeld> held_[2];      // the out-of-order buffer, two sets used in turn
  ZeroFilledArray<uint8_t> pool_bytes_[2];   // its byte pools (see StreamCounts)
  StreamCounts counts_{};
  int in_ = 0;                           // the set the next batch reads
  ZeroFilledArray<StreamChunk> chunks_;
  ZeroFilledArray<uint32_t> retry_;      // bulk pieces to run again (StreamHooks::retry), chunks x bulk modules
  uint32_t retry_n_ = 0;
  ZeroFilledArray<uint32_t> stage_retry_;  // packets a module stage runs again (StageArgs::retry)
  uint32_t stage_retry_n_ = 0;
  std::vector<uint32_t> ctx_;                       // modules: context key per packet
  StreamHooks hooks_{};                             // modules with on_stream (the walk calls them)
  std::vector<unsigned long long> stream_counts_;   // their counters (atomic: the walk is parallel)
  std::vector<uint32_t> order_;                     // scheduling: the order of the next stage
  std::vector<std::pair<uint32_t, uint32_t>> sched_;
  std::vector<ModuleEvent> events_;                 // modules: the batch's events (bounded)
  uint32_t event_n_ = 0;
  std::vector<std::vector<unsigned long long>> mod_counts_;  // per thread: modules x counters
  std::vector<StageTime> stage_times_;              // BackendConfig::stage_times

  ZeroFilledArray<FlowRecordOut> records_;
  uint32_t record_capacity_ = 0;
  uint32_t epoch_ = 0;
  // The batch being run (submit) and what its stages share.
  Slot* cur_ = nullptr;
  BatchView v_{};
  StageArgs a_{};
  FlowTrackParams prm_{};
  bool emergency_ = false;
  uint32_t out_count_ = 0;  // records written to records_ by the lookup and the walk
  // submit() / wait() and the runner (see the header). Declared last: the runner starts once the
  // rest is built, and the destructor stops it before anything else goes.
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<int> queue_;          // submitted slots not started yet, in order
  std::vector<bool> queued_;       // per slot: submitted and not finished
  std::exception_ptr error_;       // the first exception a batch threw, for the next wait()
  bool stop_ = false;
  std::thread runner_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(const BackendConfig& cfg) { return std::make_unique<CpuBackend>(cfg); }

}  // namespace gaspp
