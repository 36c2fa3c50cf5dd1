// backend/sharded/sharded_backend.cpp — several backends as one (see sharded_backend.hpp).
#include "backend/sharded/sharded_backend.hpp"

#include <algorithm>
#include <climits>
#include <exception>
#include <string>
#include <thread>

#include "core/thread_pool.hpp"
#include "decode/decoder.hpp"
#include "flow/flow_table.hpp"

namespace gaspp {

namespace {
int hardware_threads() { return int(std::max(1u, std::thread::hardware_concurrency())); }
}  // namespace

uint32_t shard_of_packet(const DecodedPacket& p, uint32_t index, uint32_t n, bool vlan_in_key, bool defrag) {
  if (n <= 1) return 0;
  // The packet as a one-packet view (flow_key_of reads views; it writes nothing).
  DecodedPacket& q = const_cast<DecodedPacket&>(p);
  DecodedView one;
#define GASPP_X(type, name, n) one.name = q.name;
  GASPP_DECODED_FIELDS(GASPP_X)
#undef GASPP_X
  FlowKey k;
  bool from_lo = false;
  if (flow_key_of(one, 0, vlan_in_key, defrag, k, from_lo) != FlowSkip::none) return index % n;
  // Mixed again: the flow table picks buckets from the same hash (flow_bucket), and a shard's
  // table should see its flows spread as evenly as one table sees all of them.
  return uint32_t((uint64_t(mix32(flow_key_hash(k) ^ 0x85ebca6bu)) * n) >> 32);
}

BackendConfig shard_config(const BackendConfig& cfg, int k, int n, bool cuda, int gpus) {
  BackendConfig sc = cfg;
  if (cuda) {
    sc.device = cfg.device + k % std::max(gpus, 1);
  } else {
    const int threads = cfg.threads > 0 ? cfg.threads : hardware_threads();
    sc.threads = std::max(1, threads / n);
    sc.flow.capacity = std::max<uint32_t>(cfg.flow.capacity / uint32_t(n), 64u);
  }
  return sc;
}

namespace {

class ShardedBackend final : public Backend {
 public:
  ShardedBackend(std::vector<std::unique_ptr<Backend>> shards, const BackendConfig& cfg, int split_threads)
      : cfg_(cfg), shards_(std::move(shards)), n_(uint32_t(shards_.size())),
        split_pool_(split_threads > 0 ? split_threads : hardware_threads()), shard_pool_(int(shards_.size())),
        errors_(shards_.size()) {
    int slots = INT_MAX;
    for (auto& s : shards_) slots = std::min(slots, s->slots());
    const uint32_t cap = shards_[0]->batch(0).capacity;
    slots_.resize(size_t(slots));
    for (Slot& sl : slots_) {
      sl.rec_off.resize(cap);
      sl.verdict.resize(cap);
      sl.owner.resize(cap);
      sl.rec_bytes.resize(cap);
      sl.idx.resize(n_);
      sl.batch.capacity = cap;
      sl.batch.h_rec_off = sl.rec_off.data();
      sl.batch.h_verdict = sl.verdict.data();
    }
  }

  std::string name() const override { return shards_[0]->name(); }
  std::string describe() const override {
    std::string d = std::to_string(n_) + " shards of the flows";
    for (uint32_t s = 0; s < n_; ++s) d += "; shard " + std::to_string(s) + ": " + shards_[s]->describe();
    return d;
  }
  int slots() const override { return int(slots_.size()); }
  PacketBatch& batch(int slot) override { return slots_[size_t(slot)].batch; }

  // What every shard registered (each registers the same set: the regions are portable).
  size_t attach_sources(const std::vector<MemoryRegion>& regions) override {
    size_t n = regions.size();
    for (auto& s : shards_) n = std::min(n, s->attach_sources(regions));
    return n;
  }
  // In reverse: shards that found the region registered by an earlier one detach before it.
  void detach_source() override {
    for (auto it = shards_.rbegin(); it != shards_.rend(); ++it) (*it)->detach_source();
  }

  // Placement on all host threads; then each shard's thread lists its packets, fills its batch and
  // submits it, all shards at once (the per-packet host work never runs on one thread for all).
  void submit(int k) override {
    Slot& sl = slots_[size_t(k)];
    const PacketBatch& b = sl.batch;
    place(sl);
    on_shards([&](uint32_t s) {
      std::vector<uint32_t>& idx = sl.idx[s];
      idx.clear();
      for (uint32_t i = 0; i < b.count; ++i)
        if (sl.owner[i] == s) idx.push_back(i);
      PacketBatch& ib = shards_[s]->batch(k);
      ib.count = uint32_t(idx.size());
      ib.first_index = b.first_index;
      ib.h_span = b.h_span;
      ib.span_len = b.span_len;
      ib.fmt = b.fmt;
      ib.link = b.link;
      ib.source = b.source;
      ib.want_decoded = b.want_decoded;
      ib.want_streams = b.want_streams;
      ib.max_ts_ns = b.max_ts_ns;
      ib.compacted = false;
      ib.reassembled.clear();
      ib.h_rebuilt.clear();  // the records stay in the batch's span (h_span), which outlives the run
      uint64_t bytes = 0;
      for (uint32_t j = 0; j < ib.count; ++j) {
        const uint32_t i = idx[j];
        ib.h_rec_off[j] = b.h_rec_off[i];
        bytes += sl.rec_bytes[i];
        if (b.is_reassembled(i)) ib.reassembled.push_back(j);
      }
      ib.record_bytes = bytes;
      shards_[s]->submit(k);
    });
  }

  void wait(int k) override {
    Slot& sl = slots_[size_t(k)];
    prepare_merge(sl);
    on_shards([&](uint32_t s) {
      shards_[s]->wait(k);
      scatter(sl, k, s);
    });
    merge(sl, k);
  }

  TransferStats transfer_stats() const override {
    TransferStats t;
    for (auto& s : shards_) {
      const TransferStats x = s->transfer_stats();
      t.batches_direct += x.batches_direct;
      t.batches_compacted += x.batches_compacted;
      t.batches_sliced += x.batches_sliced;
      t.bytes_h2d += x.bytes_h2d;
      t.bytes_d2h += x.bytes_d2h;
      // Every shard registers the same set: the most any shard left out.
      t.regions_registered = &s == &shards_.front() ? x.regions_registered : std::min(t.regions_registered, x.regions_registered);
      t.regions_not_registered = std::max(t.regions_not_registered, x.regions_not_registered);
    }
    return t;
  }

  FlowGauges flow_gauges() override {
    FlowGauges g;
    for (auto& s : shards_) {
      const FlowGauges x = s->flow_gauges();
      g.enabled = x.enabled;
      g.capacity += x.capacity;
      g.slots += x.slots;
      g.bytes += x.bytes;
      g.live += x.live;
      g.peak += x.peak;
      g.emergency = g.emergency || x.emergency;
    }
    return g;
  }

  std::vector<FlowRecordOut> flush_flows() override {
    std::vector<FlowRecordOut> all;
    for (auto& s : shards_) {
      std::vector<FlowRecordOut> r = s->flush_flows();
      all.insert(all.end(), r.begin(), r.end());
    }
    sort_flow_records(all);
    return all;
  }

  void flush_streams(std::vector<StreamChunk>& chunks, std::vector<uint8_t>& bytes, Counters& added,
                     StreamFlushModules& mods) override {
    for (uint32_t s = 0; s < n_; ++s) {
      std::vector<StreamChunk> c;
      std::vector<uint8_t> b;
      Counters a{};
      StreamFlushModules m;
      shards_[s]->flush_streams(c, b, a, m);
      append_chunks(chunks, bytes, c, b, s, nullptr);
      for (int j = 0; j < c_count_; ++j) added.v[j] += a.v[j];
      mods.events.insert(mods.events.end(), m.events.begin(), m.events.end());
      add_counts(mods.module_counts, m.module_counts);
    }
    sort_stream_chunks(chunks);
  }

  StreamGauges stream_gauges() override {
    StreamGauges g;
    for (auto& s : shards_) {
      const StreamGauges x = s->stream_gauges();
      g.enabled = x.enabled;
      g.overlap = x.overlap;
      g.held_cap += x.held_cap;
      g.held_bytes_cap += x.held_bytes_cap;
      g.peak_segs += x.peak_segs;
      g.peak_bytes += x.peak_bytes;
      g.compactions += x.compactions;
    }
    return g;
  }

  std::vector<StageTime> stage_times() const override {
    std::vector<StageTime> all;
    for (auto& s : shards_) {
      for (const StageTime& t : s->stage_times()) {
        StageTime& sum = stage_time_named(all, t.name);
        sum.total_us += t.total_us;
        sum.busy_us += t.busy_us;
        sum.threads += t.threads;
        sum.batches = std::max(sum.batches, t.batches);
        sum.max_us = std::max(sum.max_us, t.max_us);
      }
    }
    return all;
  }

 private:
  struct Slot {
    PacketBatch batch;
    std::vector<uint32_t> rec_off;
    std::vector<uint8_t> verdict;
    std::vector<uint32_t> owner;      // shard of each packet
    std::vector<uint32_t> rec_bytes;  // 16 + captured length of each record
    std::vector<std::vector<uint32_t>> idx;  // per shard: its packets' indices in the batch, ascending
    std::vector<FlowCountsAt> pkt_counts;
    bool decoded_sized = false;  // batch.decoded holds `capacity` packets
  };

  // Finds each packet's shard, in parallel.
  void place(Slot& sl) {
    const PacketBatch& b = sl.batch;
    const uint32_t n = b.count;
    const BatchView v{b.h_span, b.span_len, b.h_rec_off, n, b.fmt, b.link, b.source, DecodedView{}, nullptr, false,
                      cfg_.flow.defrag};
    split_pool_.parallel_for(n, [&](uint64_t lo, uint64_t hi, int) {
      DecodedPacket p;
      decode_batch_range(v, lo, hi, p, [&](uint64_t i, const DecodedPacket& d) {
        sl.owner[i] = shard_of_packet(d, uint32_t(i), n_, cfg_.flow.vlan_in_key, cfg_.flow.defrag);
        sl.rec_bytes[i] = uint32_t(kRecordHeaderBytes + d.cap_len[0]);  // the decoder clipped it to the span
      });
    });
  }

  // Runs fn(shard) for every shard at once, one host thread each; rethrows the first failure.
  template <class Fn>
  void on_shards(const Fn& fn) {
    if (n_ == 1) {
      fn(0);
      return;
    }
    shard_pool_.parallel_for(n_, [&](uint64_t lo, uint64_t hi, int) {
      for (uint64_t s = lo; s < hi; ++s) {
        try {
          fn(uint32_t(s));
        } catch (...) {
          errors_[s] = std::current_exception();
        }
      }
    });
    for (auto& e : errors_) {
      if (!e) continue;
      std::exception_ptr first = e;
      for (auto& x : errors_) x = nullptr;
      std::rethrow_exception(first);
    }
  }

  static void add_counts(std::vector<uint64_t>& into, const std::vector<uint64_t>& from) {
    if (into.size() < from.size()) into.resize(from.size(), 0);
    for (size_t j = 0; j < from.size(); ++j) into[j] += from[j];
  }

  uint32_t slot_of(uint32_t inner, uint32_t s) const { return inner == kNoFlow ? kNoFlow : inner * n_ + s; }

  // Appends shard s's chunks and bytes; idx maps its packet indices back (null: no packets).
  void append_chunks(std::vector<StreamChunk>& chunks, std::vector<uint8_t>& bytes, const std::vector<StreamChunk>& c,
                     std::span<const uint8_t> b, uint32_t s, const std::vector<uint32_t>* idx) const {
    const uint32_t base_chunk = uint32_t(chunks.size());
    const uint32_t base_byte = uint32_t(bytes.size());
    for (StreamChunk x : c) {
      x.data += base_byte;
      if (x.prev != kChunkNoPrev && x.prev != kChunkPrevLost) x.prev += base_chunk;
      x.slot = slot_of(x.slot, s);
      if (x.packet != kNoFlow && idx) x.packet = (*idx)[x.packet];
      chunks.push_back(x);
    }
    bytes.insert(bytes.end(), b.begin(), b.end());
  }

  // Before the shards' results are scattered back: the batch's per-packet outputs sized.
  void prepare_merge(Slot& sl) {
    PacketBatch& b = sl.batch;
    if (b.want_decoded) {
      if (!sl.decoded_sized) {
        b.decoded.resize(b.capacity);
        sl.decoded_sized = true;
      }
      b.flow_slot.assign(b.count, kNoFlow);
      b.flow_flags.assign(b.count, 0);
    }
    if (sl.pkt_counts.size() < b.capacity) sl.pkt_counts.resize(b.capacity);
  }

  // Shard s's per-packet results back to each packet's index (shards write disjoint packets, so
  // they do this at once, each on its own thread).
  void scatter(Slot& sl, int k, uint32_t s) {
    PacketBatch& b = sl.batch;
    const PacketBatch& ib = shards_[s]->batch(k);
    const std::vector<uint32_t>& idx = sl.idx[s];
    for (uint32_t j = 0; j < ib.count; ++j) b.h_verdict[idx[j]] = ib.h_verdict[j];
    if (ib.h_pkt_counts)
      for (uint32_t j = 0; j < ib.count; ++j) sl.pkt_counts[idx[j]] = ib.h_pkt_counts[j];
    if (!b.want_decoded) return;
    DecodedView to = b.decoded.view();
    DecodedView from = const_cast<PacketBatch&>(ib).decoded.view();
    for (uint32_t j = 0; j < ib.count; ++j) {
      const uint64_t i = idx[j];
#define GASPP_X(type, name, n) \
  for (int c = 0; c < (n); ++c) to.name[i * (n) + c] = from.name[uint64_t(j) * (n) + c];
      GASPP_DECODED_FIELDS(GASPP_X)
#undef GASPP_X
      if (j < ib.flow_slot.size()) b.flow_slot[i] = slot_of(ib.flow_slot[j], s);
      if (j < ib.flow_flags.size()) b.flow_flags[i] = ib.flow_flags[j];
    }
  }

  // What is not per packet: summed or concatenated in shard order, then sorted as one backend sorts.
  void merge(Slot& sl, int k) {
    PacketBatch& b = sl.batch;
    b.counters = Counters{};
    b.compacted = false;
    b.flow_records.clear();
    b.stream_chunks.clear();
    b.stream_bytes.clear();
    b.events.clear();
    b.module_counts.clear();
    b.h_pkt_counts = nullptr;
    for (uint32_t s = 0; s < n_; ++s) {
      PacketBatch& ib = shards_[s]->batch(k);
      const std::vector<uint32_t>& idx = sl.idx[s];
      for (int j = 0; j < c_count_; ++j) b.counters.v[j] += ib.counters.v[j];
      b.compacted = b.compacted || ib.compacted;
      if (ib.h_pkt_counts) b.h_pkt_counts = sl.pkt_counts.data();
      b.flow_records.insert(b.flow_records.end(), ib.flow_records.begin(), ib.flow_records.end());
      append_chunks(b.stream_chunks, b.stream_bytes, ib.stream_chunks, ib.stream_data(), s, &idx);
      for (ModuleEvent e : ib.events) {
        if (e.packet != kNoPacket) e.packet = idx[e.packet];
        b.events.push_back(e);
      }
      add_counts(b.module_counts, ib.module_counts);
    }
    sort_flow_records(b.flow_records);
    sort_stream_chunks(b.stream_chunks);
  }

  BackendConfig cfg_;
  std::vector<std::unique_ptr<Backend>> shards_;
  uint32_t n_;
  ThreadPool split_pool_;
  ThreadPool shard_pool_;
  std::vector<std::exception_ptr> errors_;
  std::vector<Slot> slots_;
};

}  // namespace

std::unique_ptr<Backend> make_sharded_backend(std::vector<std::unique_ptr<Backend>> shards, const BackendConfig& cfg,
                                              int split_threads) {
  if (shards.empty()) throw std::invalid_argument("a sharded backend needs at least one backend");
  return std::make_unique<ShardedBackend>(std::move(shards), cfg, split_threads);
}

}  // namespace gaspp
