// The reference TCP reassembler the reassembly tests compare against: one direction of one
// connection, written for obviousness, not speed.
//
// Semantics (what docs/ will promise for the stream engine):
//   * bytes are numbered from the ISN + 1 (the SYN's sequence number + 1), in 64-bit offsets, so
//     32-bit wraparound is unwrapped once: a segment's offset is the one nearest the bytes already
//     seen;
//   * of the copies of a byte still waiting (not yet delivered), the first wins (policy `first`)
//     or the last (`last`); a later copy with different data is a conflict (counted, with its
//     offset), a later copy with the same data is a retransmission; delivered bytes never change;
//   * bytes are delivered in order, each once; a hole is skipped only when the stream is closed
//     (close()), and the skip is reported as a gap (offset, length) before the bytes after it.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace gaspp::test {

class ReferenceReassembler {
 public:
  struct Gap {
    uint64_t offset, length;
    bool operator==(const Gap&) const = default;
  };

  explicit ReferenceReassembler(uint32_t isn, bool last_wins = false)
      : base_(uint64_t(isn) + 1), last_abs_(uint64_t(isn) + 1), last_wins_(last_wins) {}

  // One segment: its sequence number and payload.
  void segment(uint32_t seq, const std::string& data) {
    const uint64_t abs = unwrap(seq);
    for (size_t k = 0; k < data.size(); ++k) {
      const uint64_t a = abs + k;
      if (a < base_) continue;  // before the stream start (e.g. the SYN's byte)
      const uint64_t off = a - base_;
      if (off < delivered_) {  // already delivered, or skipped as part of a gap
        auto d = delivered_bytes_.find(off);
        if (d == delivered_bytes_.end()) {
          ++late_bytes_;  // its hole was already reported as a gap
        } else {
          ++retransmitted_bytes_;
          if (d->second != data[k]) conflicts_.push_back(off);
        }
        continue;
      }
      auto it = pending_.find(off);
      if (it == pending_.end()) {
        pending_.emplace(off, data[k]);
      } else {
        ++retransmitted_bytes_;
        if (it->second != data[k]) conflicts_.push_back(off);
        if (last_wins_) it->second = data[k];
      }
    }
    if (!data.empty()) last_abs_ = abs + data.size();
    drain();
  }

  // The stream ended (FIN, RST, expiry): holes are skipped, everything pending is delivered.
  void close() {
    while (!pending_.empty()) {
      const uint64_t next = pending_.begin()->first;
      if (next > delivered_) {
        gaps_.push_back({delivered_, next - delivered_});
        delivered_ = next;
      }
      drain();
    }
  }

  const std::string& bytes() const { return out_; }  // delivered bytes, gaps removed
  const std::vector<Gap>& gaps() const { return gaps_; }
  const std::vector<uint64_t>& conflicts() const { return conflicts_; }
  uint64_t retransmitted_bytes() const { return retransmitted_bytes_; }
  uint64_t late_bytes() const { return late_bytes_; }  // arrived after their hole was skipped
  uint64_t delivered() const { return delivered_; }  // stream offset reached, gaps included

 private:
  // Nearest 64-bit sequence to the last one seen with the same low 32 bits.
  uint64_t unwrap(uint32_t seq) const {
    const uint64_t hi = last_abs_ & ~0xffffffffull;
    uint64_t best = hi | seq;
    for (int64_t d : {-1, 1}) {
      const int64_t cand_hi = int64_t(hi >> 32) + d;
      if (cand_hi < 0) continue;
      const uint64_t cand = (uint64_t(cand_hi) << 32) | seq;
      const auto dist = [&](uint64_t x) { return x > last_abs_ ? x - last_abs_ : last_abs_ - x; };
      if (dist(cand) < dist(best)) best = cand;
    }
    return best;
  }
  void drain() {
    for (auto it = pending_.find(delivered_); it != pending_.end() && it->first == delivered_;
         it = pending_.erase(it)) {
      out_.push_back(it->second);
      delivered_bytes_.emplace(delivered_, it->second);
      ++delivered_;
    }
  }
  uint64_t base_;
  uint64_t last_abs_;
  bool last_wins_;
  uint64_t delivered_ = 0;
  std::map<uint64_t, char> pending_;
  std::string out_;
  std::vector<Gap> gaps_;
  std::map<uint64_t, char> delivered_bytes_;
  std::vector<uint64_t> conflicts_;
  uint64_t retransmitted_bytes_ = 0;
  uint64_t late_bytes_ = 0;
};

}  // namespace gaspp::test
