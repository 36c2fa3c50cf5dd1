// MultiSource (capture/multi_source.hpp) over scripted inputs, against what the merge must do: each
// input's records come out once, in the input's order, marked with its number; merged sequence
// numbers run 0, 1, 2, ...; an input is left after kRun records in a row when another has records,
// and keeps going when none has; a release reaches each input as the last of its records that the
// merged number covers, never beyond; the merge ends when every input has.
#include <gtest/gtest.h>

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "capture/multi_source.hpp"

using namespace gaspp;

namespace {

// An input that answers from a script: 'r' a record, 'i' idle; then end.
class ScriptedSource final : public Source {
 public:
  ScriptedSource(std::string script, std::vector<uint64_t>* released) : script_(std::move(script)), released_(released) {}
  SourceStatus next(SourceRecord& r, uint64_t) override {
    if (at_ == script_.size()) return SourceStatus::end;
    if (script_[at_++] == 'i') return SourceStatus::idle;
    byte_ = uint8_t(seq_);
    r = SourceRecord{};
    r.rec = &byte_;
    r.seq = seq_++;
    return SourceStatus::record;
  }
  void release(uint64_t seq) override {
    EXPECT_TRUE(released_->empty() || seq > released_->back()) << "releases go forward";
    EXPECT_LT(seq, seq_) << "only records handed out are released";
    released_->push_back(seq);
  }
  SourceReport report() const override { return SourceReport{}; }

 private:
  std::string script_;
  std::vector<uint64_t>* released_;
  size_t at_ = 0;
  uint64_t seq_ = 0;
  uint8_t byte_ = 0;
};

struct Case {
  const char* name;
  std::vector<std::string> scripts;
};

}  // namespace

TEST(MultiSource, MergesEveryRecordOnceAndReleasesPerInput) {
  const std::string many(3 * MultiSource::kRun + 5, 'r');
  const std::vector<Case> cases = {
      {"one input", {"rrirr"}},
      {"two alternating with idles", {"ririr", "irrrir"}},
      {"one busy, one sparse", {many, "iiiirr" + std::string(10, 'i') + "r"}},
      {"three, one empty", {"rrr", "", "irir"}},
      {"two busy", {many, many}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<std::vector<uint64_t>> released(c.scripts.size());
    std::vector<std::unique_ptr<Source>> in;
    size_t total = 0;
    for (size_t i = 0; i < c.scripts.size(); ++i) {
      in.push_back(std::make_unique<ScriptedSource>(c.scripts[i], &released[i]));
      for (char ch : c.scripts[i]) total += ch == 'r';
    }
    MultiSource m(std::move(in));
    std::vector<uint64_t> next_local(c.scripts.size(), 0);
    std::vector<std::pair<uint16_t, uint64_t>> got;  // (input, its seq) by merged seq
    uint32_t run = 0, longest_run_with_others_waiting = 0;
    uint16_t last = 0xffff;
    SourceRecord r;
    for (int guard = 0; guard < 1000000; ++guard) {
      const SourceStatus st = m.next(r, 0);
      if (st == SourceStatus::end) break;
      if (st == SourceStatus::idle) continue;
      ASSERT_EQ(r.seq, got.size()) << "merged numbers run on";
      ASSERT_LT(r.interface, c.scripts.size());
      const uint64_t local = *r.rec;  // the input wrote its own seq (mod 256) into the record
      EXPECT_EQ(local, next_local[r.interface] % 256) << "an input's records in its order";
      got.emplace_back(r.interface, next_local[r.interface]++);
      run = r.interface == last ? run + 1 : 1;
      last = r.interface;
      if (run > longest_run_with_others_waiting) longest_run_with_others_waiting = run;
      // Release as a batcher would, every 7 records, up to the one before last: each input must
      // then have released up to its last record at or before that merged number, no further.
      if (got.size() % 7 == 0) {
        const uint64_t upto = got.size() - 2;
        m.release(upto);
        std::vector<int64_t> want(c.scripts.size(), -1);
        for (uint64_t k = 0; k <= upto; ++k) want[got[k].first] = int64_t(got[k].second);
        for (size_t i = 0; i < c.scripts.size(); ++i)
          if (want[i] >= 0) {
            ASSERT_FALSE(released[i].empty());
            EXPECT_EQ(released[i].back(), uint64_t(want[i])) << "input " << i << " after release(" << upto << ")";
          }
      }
    }
    EXPECT_EQ(got.size(), total) << "every record once";
    m.release(got.size() - 1);
    for (size_t i = 0; i < c.scripts.size(); ++i) {
      if (next_local[i] == 0) {
        EXPECT_TRUE(released[i].empty());
        continue;
      }
      ASSERT_FALSE(released[i].empty());
      EXPECT_EQ(released[i].back(), next_local[i] - 1) << "input " << i << ": all released at the end";
    }
    if (std::string(c.name) == "two busy") {
      EXPECT_EQ(longest_run_with_others_waiting, MultiSource::kRun) << "a busy input yields after kRun";
    }
  }
}
