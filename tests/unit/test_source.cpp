// The batcher over a Source that is not a mapped file, checked against the same records served by
// the FileSource: records scattered in memory (so no batch can be a span of it), in the other byte
// order from some record on (the batch must close there), with idle answers in between (a live
// source with nothing to give), and memory poisoned as soon as it is released (so a batch read
// after release() differs). Every packet must decode as from the file, the totals and flow records
// must agree (but for batch numbers), and every record must be released once, in order, after its batch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "tools/gen/generator.hpp"
#include "output/decode_rows.hpp"
#include "pipeline/pipeline.hpp"
#include "test_support.hpp"

using namespace gaspp;

namespace {

// The records of a capture in blocks of `block` records, each block an allocation of its own with
// its records back to back (as a ring's blocks hold them): batches within a block are spans of it,
// batches across blocks are copied.
//
// Ring mode (block 0): every record in one allocation, listed as the source's region, with a gap
// of 1 to 63 bytes before each (a ring's frame headers and alignment), and the second half of the
// records placed before the first (the ring wraps there): batches are spans of the region with
// gaps, but for the one that holds the wrap, which is copied.
class ScatteredSource final : public Source {
 public:
  ScatteredSource(const CaptureFile& cap, uint32_t block, uint64_t swap_from, uint32_t idle_every)
      : cap_(cap), idle_every_(idle_every) {
    RecordWalker w(cap);
    RecordInfo r;
    std::vector<RecordInfo> all;
    while (w.next(r)) all.push_back(r);
    if (block == 0) {
      const auto gap = [](size_t k) { return 1 + (k * 37) % 63; };
      uint64_t total = 0;
      for (size_t k = 0; k < all.size(); ++k) total += gap(k) + kRecordHeaderBytes + all[k].cap_len;
      ring_len_ = total;
      blocks_.push_back(std::make_unique<uint8_t[]>(total));
      uint8_t* base = blocks_.back().get();
      std::memset(base, 0xAB, total);
      const size_t mid = all.size() / 2;
      std::vector<uint8_t*> at(all.size());
      uint8_t* p = base;
      for (size_t k : {size_t(1), size_t(0)})  // the second half first in memory
        for (size_t i = k ? mid : 0; i < (k ? all.size() : mid); ++i) {
          p += gap(i);
          at[i] = p;
          p += kRecordHeaderBytes + all[i].cap_len;
        }
      for (size_t k = 0; k < all.size(); ++k) {
        const uint64_t n = kRecordHeaderBytes + all[k].cap_len;
        std::memcpy(at[k], cap.data() + all[k].offset, n);
        const bool swap = k >= swap_from;
        if (swap)
          for (int f = 0; f < 4; ++f) std::reverse(at[k] + 4 * f, at[k] + 4 * f + 4);
        recs_.push_back(at[k]);
        lens_.push_back(n);
        info_.push_back(all[k]);
        swapped_.push_back(swap);
      }
      return;
    }
    for (size_t b = 0; b < all.size(); b += block) {
      const size_t e = std::min(all.size(), b + block);
      uint64_t total = 0;
      for (size_t k = b; k < e; ++k) total += kRecordHeaderBytes + all[k].cap_len;
      blocks_.push_back(std::make_unique<uint8_t[]>(total));
      uint8_t* at = blocks_.back().get();
      for (size_t k = b; k < e; ++k) {
        const uint64_t n = kRecordHeaderBytes + all[k].cap_len;
        std::memcpy(at, cap.data() + all[k].offset, n);
        const bool swap = k >= swap_from;
        if (swap)  // the header's four fields in the other byte order
          for (int f = 0; f < 4; ++f) std::reverse(at + 4 * f, at + 4 * f + 4);
        recs_.push_back(at);
        lens_.push_back(n);
        info_.push_back(all[k]);
        swapped_.push_back(swap);
        at += n;
      }
    }
  }
  // Answers idle once before each of these record positions (a burst of traffic ends there).
  void idle_before(std::vector<uint64_t> at) { idle_at_ = std::move(at); }
  // Capture times to report instead of the file's, by record position (a live source's clock).
  void set_times(std::vector<uint64_t> t) { times_ = std::move(t); }
  SourceStatus next(SourceRecord& r, uint64_t) override {
    if (at_ == recs_.size()) return SourceStatus::end;
    if (idle_every_ && ++calls_ % idle_every_ == 0) return SourceStatus::idle;
    if (next_idle_ < idle_at_.size() && idle_at_[next_idle_] == at_) {
      ++next_idle_;
      return SourceStatus::idle;
    }
    r.rec = recs_[at_];
    r.seq = at_;
    r.ts_ns = at_ < times_.size() ? times_[at_] : info_[at_].ts_ns;
    r.cap_len = info_[at_].cap_len;
    r.wire_len = info_[at_].wire_len;
    r.fmt = RecordFormat{uint8_t(cap_.format().swapped ^ swapped_[at_]), cap_.format().nanos};
    r.link = cap_.link();
    r.interface = 0;
    ++at_;
    return SourceStatus::record;
  }
  void release(uint64_t seq) override {
    EXPECT_LT(seq, at_) << "released a record not handed out";
    EXPECT_TRUE(released_ == 0 || seq + 1 >= released_) << "released out of order";
    for (; released_ <= seq; ++released_) std::memset(recs_[released_], 0xEE, lens_[released_]);
  }
  SourceReport report() const override {
    SourceReport r;
    r.name = "scattered";
    r.container = "memory";
    return r;
  }
  uint64_t released() const { return released_; }
  uint64_t records() const { return recs_.size(); }
  std::vector<MemoryRegion> regions() const override {
    if (!ring_len_) return {};
    return {MemoryRegion{blocks_[0].get(), ring_len_}};
  }

 private:
  const CaptureFile& cap_;
  uint32_t idle_every_;
  std::vector<std::unique_ptr<uint8_t[]>> blocks_;
  std::vector<uint8_t*> recs_;
  std::vector<uint64_t> lens_;
  std::vector<RecordInfo> info_;
  std::vector<bool> swapped_;
  uint64_t at_ = 0, calls_ = 0, released_ = 0, ring_len_ = 0;
  std::vector<uint64_t> idle_at_;
  size_t next_idle_ = 0;
  std::vector<uint64_t> times_;
};

struct Outcome {
  RunReport rep;
  std::vector<std::string> rows;
  std::vector<FlowRecordOut> flows;
  std::vector<std::pair<uint64_t, uint32_t>> batches;  // first packet number, count
  std::vector<uint8_t> swapped;                        // per batch
  std::vector<const uint8_t*> spans;                   // per batch: its h_span
  std::vector<uint64_t> span_lens, record_bytes;
};

Outcome run_on(Source& src, uint32_t batch) {
  BackendConfig bc;
  bc.batch_packets = batch;
  auto be = test::make_backend(bc);
  RunOptions ro;
  ro.policy.max_packets = batch;
  ro.want_decoded = true;
  Outcome o;
  DecodedPacket p;
  o.rep = run_source(
      src, *be, ro,
      [&](const PacketBatch& b) {
        o.batches.emplace_back(b.first_index + 1, b.count);
        o.swapped.push_back(b.fmt.swapped);
        o.spans.push_back(b.h_span);
        o.span_lens.push_back(b.span_len);
        o.record_bytes.push_back(b.record_bytes);
        DecodedView v = const_cast<PacketBatch&>(b).decoded.view();
        for (uint32_t i = 0; i < b.count; ++i) {
          load(v, i, p);
          std::string s;
          format_decode_row(b.first_index + i + 1, p, s);
          o.rows.push_back(s);
        }
      },
      [&](const std::vector<FlowRecordOut>& f) { o.flows.insert(o.flows.end(), f.begin(), f.end()); });
  return o;
}

}  // namespace

TEST(Source, ScatteredRecordsBatchAsTheFileDoes) {
  GenConfig g;
  g.mode = GenMode::http;
  g.packets = 3000;
  g.flows = 40;
  g.ipv6_share = 0.3;
  const CaptureFile cap = test::generated_capture(g);
  const uint64_t swap_from = 1234;
  for (const auto& [batch, block] : {std::pair{1u, 1u}, {7u, 1u}, {256u, 1u}, {65536u, 1u}, {7u, 100u}, {256u, 500u},
                                     {7u, 0u}, {256u, 0u}, {65536u, 0u}}) {
    SCOPED_TRACE("batch " + std::to_string(batch) + ", block " + std::to_string(block));
    FileSource file(cap);
    const Outcome want = run_on(file, batch);
    ScatteredSource scattered(cap, block, swap_from, block == 1 ? 5 : 0);
    const Outcome got = run_on(scattered, batch);
    ASSERT_EQ(got.rows.size(), want.rows.size());
    for (size_t i = 0; i < got.rows.size(); ++i) ASSERT_EQ(got.rows[i], want.rows[i]) << "packet " << i + 1;
    for (int k = 0; k < c_count_; ++k) EXPECT_EQ(got.rep.totals.v[k], want.rep.totals.v[k]) << "counter " << k;
    // The flows, by id, alike but for the number of the batch that last looked each up (idle answers
    // end batches early, so the numbers differ).
    ASSERT_EQ(got.flows.size(), want.flows.size());
    auto by_id = [](std::vector<FlowRecordOut> v) {
      for (auto& f : v) f.rec.epoch = 0;
      std::sort(v.begin(), v.end(), [](const FlowRecordOut& a, const FlowRecordOut& b) { return a.rec.flow_id < b.rec.flow_id; });
      return v;
    };
    const auto gf = by_id(got.flows), wf = by_id(want.flows);
    for (size_t k = 0; k < gf.size(); ++k)
      EXPECT_EQ(std::memcmp(&gf[k], &wf[k], sizeof(FlowRecordOut)), 0) << "flow " << gf[k].rec.flow_id;
    EXPECT_EQ(scattered.released(), scattered.records());
    EXPECT_EQ(got.rep.path, "scattered");
    // A batch never spans the change of byte order: one starts at record swap_from + 1.
    bool starts_there = false;
    for (size_t k = 0; k < got.batches.size(); ++k) {
      const auto [first, n] = got.batches[k];
      EXPECT_FALSE(first <= swap_from && first + n > swap_from + 1) << "batch " << k << " mixes byte orders";
      starts_there |= first == swap_from + 1;
      EXPECT_EQ(got.swapped[k] != cap.format().swapped, first > swap_from) << "batch " << k;
    }
    EXPECT_TRUE(starts_there);
    if (block == 0) {
      // Ring mode: batches are spans of the region with gaps, read in place; only a batch holding
      // the wrap is copied (h_rebuilt, back to back).
      const MemoryRegion ring = scattered.regions()[0];
      size_t in_place = 0, copied = 0;
      for (size_t k = 0; k < got.spans.size(); ++k) {
        const bool in_ring = got.spans[k] >= ring.base && got.spans[k] < ring.base + ring.len;
        if (in_ring) {
          EXPECT_LE(got.spans[k] + got.span_lens[k], ring.base + ring.len) << "batch " << k;
          in_place += got.batches[k].second > 1 && got.span_lens[k] > got.record_bytes[k];
        } else {
          EXPECT_EQ(got.span_lens[k], got.record_bytes[k]) << "batch " << k << ": copied with gaps";
          ++copied;
        }
      }
      EXPECT_GT(in_place, 0u) << "no batch was a span with gaps";
      EXPECT_LE(copied, 1u) << "only the batch holding the wrap is copied";
    }
  }
}

// Adaptive batching (BatchPolicy::adaptive, live traffic): batch sizes follow the rule — start at
// the minimum, double after a batch that filled the target, halve after one the source's idleness
// closed at less than half of it, within [min, max] — computed here from the bursts the source
// delivers; the packets and their decoding are those of a run without it.
TEST(Source, AdaptiveBatchSizeFollowsTheLoad) {
  GenConfig g;
  g.mode = GenMode::mix;
  g.packets = 6000;
  g.flows = 40;
  const CaptureFile cap = test::generated_capture(g);
  struct Case {
    const char* name;
    std::vector<uint64_t> bursts;  // records between idles; the rest after the last
    uint32_t min, max;
  };
  const std::vector<Case> cases = {
      {"load then quiet then load", {3000, 20, 20, 20, 5, 1}, 64, 1024},
      {"steady quiet", {10, 10, 10, 10, 10, 10, 10, 10}, 4, 4096},
      {"one burst to the maximum", {}, 1, 512},
      {"minimum above the bursts", {3, 3, 3}, 16, 16},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ScatteredSource src(cap, 1u << 20, ~0ull, 0);
    std::vector<uint64_t> idle_at;
    uint64_t at = 0;
    for (uint64_t n : c.bursts) idle_at.push_back(at += n);
    src.idle_before(idle_at);
    // The expected sizes: the rule over each burst (the last burst: the records left).
    std::vector<uint64_t> bursts = c.bursts;
    bursts.push_back(src.records() - at);
    std::vector<uint32_t> want;
    uint32_t target = c.min;
    for (uint64_t left : bursts) {
      while (left) {
        const uint32_t take = uint32_t(std::min<uint64_t>(left, target));
        want.push_back(take);
        left -= take;
        if (take == target) target = std::min(c.max, target * 2);
        else if (take < target / 2) target = std::max(c.min, target / 2);
      }
    }
    BackendConfig bc;
    bc.batch_packets = c.max;
    auto be = test::make_backend(bc);
    RunOptions ro;
    ro.policy.max_packets = c.max;
    ro.policy.timeout_ns = 0;
    ro.policy.adaptive = true;
    ro.policy.adaptive_min_packets = c.min;
    ro.want_decoded = true;
    std::vector<uint32_t> got;
    std::vector<std::string> rows;
    DecodedPacket p;
    const RunReport rep = run_source(src, *be, ro, [&](const PacketBatch& b) {
      got.push_back(b.count);
      DecodedView v = const_cast<PacketBatch&>(b).decoded.view();
      for (uint32_t i = 0; i < b.count; ++i) {
        load(v, i, p);
        std::string row;
        format_decode_row(b.first_index + i + 1, p, row);
        rows.push_back(row);
      }
    });
    EXPECT_EQ(got, want);
    EXPECT_TRUE(rep.adaptive);
    EXPECT_EQ(rep.totals.v[c_packets], src.records());
    FileSource file(cap);
    const Outcome plain = run_on(file, c.max);
    EXPECT_EQ(rows, plain.rows);
  }
}

TEST(Source, AdaptiveBatchSizeStaysInItsBounds) {
  // The rule alone, table-driven: (min, max, [(count, full)...]) -> the targets after each batch.
  struct Step { uint32_t count; bool full; uint32_t target_after; };
  struct Case { uint32_t min, max; std::vector<Step> steps; };
  const std::vector<Case> cases = {
      {4, 16, {{4, true, 8}, {8, true, 16}, {16, true, 16}, {9, false, 16}, {7, false, 8}, {3, false, 4}, {1, false, 4}}},
      {5, 12, {{5, true, 10}, {10, true, 12}, {12, true, 12}, {5, false, 6}, {2, false, 5}}},
      {100, 50, {{50, true, 50}, {1, false, 50}}},  // a minimum above the maximum is the maximum
      {0, 3, {{1, true, 2}, {2, true, 3}, {1, false, 3}, {0, false, 1}}},
  };
  for (const Case& c : cases) {
    AdaptiveBatchSize a(c.min, c.max);
    for (const Step& s : c.steps) {
      a.after_batch(s.count, s.full);
      EXPECT_EQ(a.target, s.target_after) << "min " << c.min << " max " << c.max << " count " << s.count;
      EXPECT_GE(a.target, std::min(std::max(c.min, 1u), c.max));
      EXPECT_LE(a.target, c.max);
    }
  }
}

// The latency histogram's quantiles against the exact ones of the sorted samples: never below them,
// above by at most one bucket (an eighth of the value's power of two), on spreads from nanoseconds
// to seconds.
TEST(Source, LatencyQuantilesBoundTheExactOnes) {
  struct Case {
    const char* name;
    uint64_t lo, hi;
    int n;
  };
  const Case cases[] = {{"tiny", 0, 20, 1000}, {"microseconds", 1'000, 900'000, 5000},
                        {"milliseconds", 100'000, 50'000'000, 20000}, {"seconds", 1'000'000'000, 9'000'000'000, 300},
                        {"one", 123456, 123456, 1}};
  for (const Case& c : cases) {
    std::mt19937_64 rng(uint64_t(c.n) * 7 + c.lo);
    std::uniform_int_distribution<uint64_t> d(c.lo, c.hi);
    LatencyHistogram h;
    std::vector<uint64_t> v;
    for (int i = 0; i < c.n; ++i) {
      const uint64_t x = (i % 3 == 0) ? c.lo + (c.hi - c.lo) / 4 : d(rng);  // ties too
      v.push_back(x);
      h.add(x);
    }
    std::sort(v.begin(), v.end());
    EXPECT_EQ(h.count, uint64_t(c.n)) << c.name;
    EXPECT_EQ(h.max_ns, v.back()) << c.name;
    for (const double q : {0.01, 0.5, 0.9, 0.99, 1.0}) {
      const uint64_t exact = v[size_t(std::ceil(q * c.n)) - 1];
      const uint64_t got = h.quantile_ns(q);
      EXPECT_GE(got, exact) << c.name << " q=" << q;
      EXPECT_LE(got, exact + exact / 8 + 1) << c.name << " q=" << q;
    }
  }
  EXPECT_EQ(LatencyHistogram{}.quantile_ns(0.5), 0u);
}

// Fail-open on overload (RunOptions::on_bypass): records older than bypass_after_ns when the
// batcher would start a batch with them go to on_bypass, after the batches in flight, in capture
// order; batching resumes at the first fresh record. Every record is inspected or bypassed once,
// the two in capture order, and released in order.
TEST(Source, OverloadBypassKeepsCaptureOrder) {
  GenConfig g;
  g.mode = GenMode::mix;
  g.packets = 3000;
  g.flows = 30;
  const CaptureFile cap = test::generated_capture(g);
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  const uint64_t fresh = (uint64_t(now.tv_sec) + 3600) * 1000000000ull;  // an hour ahead: never late
  struct Case {
    const char* name;
    uint64_t stale_from, stale_to;  // records [from, to) are a minute old
    uint32_t batch;
  };
  const Case cases[] = {{"a late stretch mid-capture", 1000, 2000, 64},
                        {"late from the start", 0, 700, 100},
                        {"late to the end", 2500, 3000, 256},
                        {"none late", 0, 0, 64}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ScatteredSource src(cap, 1u << 20, ~0ull, 0);
    std::vector<uint64_t> times(src.records(), fresh);
    for (uint64_t k = c.stale_from; k < c.stale_to; ++k) times[k] = fresh - 3660ull * 1000000000ull;
    src.set_times(times);
    BackendConfig bc;
    bc.batch_packets = c.batch;
    auto be = test::make_backend(bc);
    RunOptions ro;
    ro.policy.max_packets = c.batch;
    ro.policy.timeout_ns = 0;
    ro.bypass_after_ns = 1000000000ull;  // a second behind
    std::vector<uint64_t> order, bypassed;
    ro.on_bypass = [&](const std::vector<SourceRecord>& recs) {
      EXPECT_LE(recs.size(), 256u);
      for (const SourceRecord& r : recs) {
        order.push_back(r.seq);
        bypassed.push_back(r.seq);
      }
    };
    const RunReport rep = run_source(src, *be, ro, [&](const PacketBatch& b) {
      for (uint32_t i = 0; i < b.count; ++i) order.push_back(b.first_index + i);
    });
    std::vector<uint64_t> all(src.records());
    for (uint64_t k = 0; k < all.size(); ++k) all[k] = k;
    EXPECT_EQ(order, all);  // every record once, in capture order
    EXPECT_EQ(src.released(), src.records());
    EXPECT_EQ(rep.overload_bypassed, bypassed.size());
    EXPECT_EQ(rep.totals.v[c_packets] + rep.overload_bypassed, src.records());
    if (c.stale_to == c.stale_from) {
      EXPECT_TRUE(bypassed.empty());
      EXPECT_EQ(rep.overload_episodes, 0u);
      continue;
    }
    // The late stretch from the first batch start inside it to its end: one episode.
    ASSERT_FALSE(bypassed.empty());
    EXPECT_EQ(rep.overload_episodes, 1u);
    EXPECT_GE(bypassed.front(), c.stale_from);
    EXPECT_LT(bypassed.front(), c.stale_from + c.batch);
    EXPECT_EQ(bypassed.back(), c.stale_to - 1);
    EXPECT_EQ(bypassed.size(), bypassed.back() - bypassed.front() + 1);
  }
}

