// ThreadedSource (capture/threaded_source.hpp) over a simulated ring, against what the reader
// thread must keep: every record comes out once, in the inner source's order and with its sequence
// numbers, still holding what the ring wrote (a slot is not reused before the pipeline released
// it); the pipeline's releases reach the inner source in order, never beyond what it handed out;
// the inner source is only ever called from one thread, not the pipeline's; the end comes through
// after the last record; records read and not taken when the run stops are counted. Cases: a ring
// smaller than the queue (the thread waits for releases), idle stretches, waits with and without a
// timeout, and several threaded rings merged by MultiSource.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "capture/multi_source.hpp"
#include "capture/threaded_source.hpp"

using namespace gaspp;

namespace {

// A ring of `slots` records: a record's slot holds its sequence number (8 bytes) until released;
// next() hands out the script's records ('r'), says idle for an 'i' or when every slot waits for
// a release, then ends.
class RingSim final : public Source {
 public:
  struct Seen {
    std::mutex mu;
    std::vector<uint64_t> released;
    std::thread::id caller{};
    bool other_caller = false;
    uint64_t handed_out = 0;
  };
  RingSim(std::string script, size_t slots, Seen* seen)
      : script_(std::move(script)), ring_(slots), seen_(seen) {}
  SourceStatus next(SourceRecord& r, uint64_t) override {
    note_caller();
    if (seq_ - released_ == ring_.size()) return SourceStatus::idle;  // every slot is ours
    if (at_ == script_.size()) return SourceStatus::end;
    if (script_[at_++] == 'i') return SourceStatus::idle;
    uint64_t& slot = ring_[seq_ % ring_.size()];
    slot = seq_;
    r = SourceRecord{};
    r.rec = reinterpret_cast<const uint8_t*>(&slot);
    r.seq = seq_++;
    std::lock_guard<std::mutex> lk(seen_->mu);
    seen_->handed_out = seq_;
    return SourceStatus::record;
  }
  void release(uint64_t seq) override {
    note_caller();
    std::lock_guard<std::mutex> lk(seen_->mu);
    EXPECT_TRUE(seen_->released.empty() || seq > seen_->released.back()) << "releases go forward";
    EXPECT_LT(seq, seq_) << "only records handed out are released";
    for (; released_ <= seq; ++released_) ring_[released_ % ring_.size()] = ~0ull;  // the kernel's again
    seen_->released.push_back(seq);
  }
  SourceReport report() const override { return SourceReport{}; }

 private:
  void note_caller() {
    std::lock_guard<std::mutex> lk(seen_->mu);
    if (seen_->caller == std::thread::id{}) seen_->caller = std::this_thread::get_id();
    else if (seen_->caller != std::this_thread::get_id()) seen_->other_caller = true;
  }
  std::string script_;
  std::vector<uint64_t> ring_;
  Seen* seen_;
  size_t at_ = 0;
  uint64_t seq_ = 0, released_ = 0;
};

std::string script(size_t records, size_t idle_every) {
  std::string s;
  for (size_t k = 0; k < records; ++k) {
    if (idle_every && k % idle_every == 0) s += "iii";
    s += 'r';
  }
  return s;
}

struct Case {
  const char* name;
  size_t records, idle_every, slots, release_every;
  uint64_t wait_ns;  // the pipeline's wait in next()
};

}  // namespace

TEST(ThreadedSource, HandsOutEveryRecordInOrderAndReleasesOnItsThread) {
  const std::vector<Case> cases = {
      {"busy, large ring", 200000, 0, 1u << 20, 64, 1000000},
      {"ring smaller than the queue", 100000, 0, 100, 16, 1000000},
      {"ring of one batch", 5000, 0, 8, 8, 1000000},
      {"idle stretches", 20000, 97, 4096, 50, 1000000},
      {"no waiting in next", 50000, 13, 512, 32, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    RingSim::Seen seen;
    ThreadedSource src(std::make_unique<RingSim>(script(c.records, c.idle_every), c.slots, &seen));
    uint64_t got = 0, last_release = ~0ull;
    SourceRecord r;
    for (int guard = 0; guard < 50000000; ++guard) {
      const SourceStatus st = src.next(r, c.wait_ns);
      if (st == SourceStatus::end) break;
      if (st == SourceStatus::idle) {
        // Hand back everything taken, as a batcher finishing its batches when the source is quiet.
        if (got && last_release != got - 1) src.release(last_release = got - 1);
        continue;
      }
      ASSERT_EQ(r.seq, got) << "the inner source's order and numbers";
      uint64_t held;
      std::memcpy(&held, r.rec, sizeof held);
      ASSERT_EQ(held, got) << "the slot still holds its record";
      ++got;
      // Release up to the record before last every release_every records (a batch finished).
      if (got % c.release_every == 0) src.release(last_release = got - 2);
    }
    EXPECT_EQ(got, c.records) << "every record once";
    src.release(got - 1);
    src.finish();
    EXPECT_EQ(src.report().unprocessed_at_stop, 0u);
    std::lock_guard<std::mutex> lk(seen.mu);
    EXPECT_FALSE(seen.other_caller) << "the inner source is called from one thread";
    EXPECT_NE(seen.caller, std::this_thread::get_id()) << "and not the pipeline's";
  }
}

TEST(ThreadedSource, CountsRecordsLeftInTheQueueAtTheStop) {
  RingSim::Seen seen;
  ThreadedSource src(std::make_unique<RingSim>(std::string(10000, 'r'), 1u << 16, &seen));
  SourceRecord r;
  uint64_t got = 0;
  while (got < 100 && src.next(r, 1000000000ull) == SourceStatus::record) ++got;
  ASSERT_EQ(got, 100u);
  // Let the thread read on: it fills the queue (10,000 records fit) and waits.
  for (int k = 0; k < 2000; ++k) {
    {
      std::lock_guard<std::mutex> lk(seen.mu);
      if (seen.handed_out == 10000) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  src.finish();
  uint64_t handed_out;
  {
    std::lock_guard<std::mutex> lk(seen.mu);
    handed_out = seen.handed_out;
  }
  EXPECT_EQ(handed_out, 10000u);
  EXPECT_EQ(src.report().unprocessed_at_stop, handed_out - got);
}

TEST(ThreadedSource, SeveralRingsMergedByMultiSource) {
  constexpr int kRings = 4;
  RingSim::Seen seen[kRings];
  std::vector<std::unique_ptr<Source>> in;
  const size_t per_ring[kRings] = {30000, 1, 0, 12345};
  for (int i = 0; i < kRings; ++i)
    in.push_back(std::make_unique<ThreadedSource>(std::make_unique<RingSim>(script(per_ring[i], 101), 256, &seen[i])));
  MultiSource m(std::move(in));
  uint64_t next_local[kRings] = {0, 0, 0, 0};
  uint64_t merged = 0;
  SourceRecord r;
  for (int guard = 0; guard < 50000000; ++guard) {
    const SourceStatus st = m.next(r, 1000000);
    if (st == SourceStatus::end) break;
    if (st == SourceStatus::idle) {
      if (merged) m.release(merged - 1);
      continue;
    }
    ASSERT_EQ(r.seq, merged++);
    ASSERT_LT(r.interface, kRings);
    uint64_t held;
    std::memcpy(&held, r.rec, sizeof held);
    ASSERT_EQ(held, next_local[r.interface]++) << "ring " << r.interface << ": its records in order";
    if (merged % 32 == 0) m.release(merged - 1);
  }
  for (int i = 0; i < kRings; ++i) EXPECT_EQ(next_local[i], per_ring[i]) << "ring " << i;
  m.finish();
  for (int i = 0; i < kRings; ++i) {
    std::lock_guard<std::mutex> lk(seen[i].mu);
    EXPECT_FALSE(seen[i].other_caller) << "ring " << i;
  }
}
