// capture/multi_source.hpp — several live Sources as one (`gaspp -i A -i B`, and the two sides of
// `--inline A:B`): their records interleaved as they come, each marked with its input's number
// (SourceRecord::interface, the order given), one flow state for all.
//
// The merge takes records from one input while it has them at once, up to kRun records, then
// moves on, so that the batcher (which closes a batch where the interface changes) gets long runs
// of one interface and a busy input cannot starve the others. When none has a record it waits on
// all of them (Source::wait_fd) up to the batcher's wait. Sequence numbers are the merge's own; a
// release reaches each input as the last of its records that the merged number covers.
//
// The report is the inputs' together: names joined by commas, kernel counts summed, issues listed
// in input order.
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <tuple>
#include <vector>

#include "capture/source.hpp"

namespace gaspp {

class MultiSource final : public Source {
 public:
  static constexpr uint32_t kRun = 4096;
  explicit MultiSource(std::vector<std::unique_ptr<Source>> inputs);
  SourceStatus next(SourceRecord& r, uint64_t wait_ns) override;
  void release(uint64_t seq) override;
  void finish() override;
  void refresh_counts() override {
    for (auto& s : in_) s->refresh_counts();
  }
  SourceReport report() const override;
  // The inputs' regions, in input order (a backend registers the first).
  std::vector<MemoryRegion> regions() const override {
    std::vector<MemoryRegion> all;
    for (const auto& s : in_)
      for (const MemoryRegion& m : s->regions()) all.push_back(m);
    return all;
  }

 private:
  std::vector<std::unique_ptr<Source>> in_;
  std::vector<bool> ended_;
  size_t cur_ = 0;
  uint32_t run_ = 0;
  uint64_t seq_ = 0;
  // Records handed out and not yet released: (merged seq, input, the input's seq), in order.
  std::deque<std::tuple<uint64_t, uint16_t, uint64_t>> out_;
};

}  // namespace gaspp
