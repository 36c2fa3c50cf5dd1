// modules/firewall/threshold.hpp — Suricata's `threshold` and `detection_filter` for the firewall's
// alerts (applied on the host, in capture order, to the alerts of a rule; verdicts are not affected).
//
//   threshold: type limit, track by_src, count N, seconds T      at most N alerts per window of T s
//   threshold: type threshold, track ..., count N, seconds T     an alert at every N-th match in a window
//   threshold: type both, track ..., count N, seconds T          one alert per window, at the N-th match
//   detection_filter: track ..., count N, seconds T              alerts for matches after the N-th in a window
// track: by_src, by_dst, by_rule, by_both (source and destination). A window starts at the first
// match of a (rule, tracked address) and lasts T seconds of packet time; the next match after it
// starts a new one.
//
// Limit: `max_entries` tracked (rule, address) pairs (default 1 M); a match that needs a new entry
// when the table is full is alerted (not suppressed) and counted (`threshold_table_full`).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <tuple>

namespace gaspp {

struct ThresholdSpec {
  enum Kind : uint8_t { none, limit, threshold, both, detection_filter } kind = none;
  enum Track : uint8_t { by_src, by_dst, by_rule, by_both } track = by_src;
  uint32_t count = 1;
  uint32_t seconds = 60;
};

// Parses the option as the rule parser keeps it ("threshold:type limit, ..." or
// "detection_filter:track ..."); "" on success, else why not.
std::string parse_threshold(const std::string& text, ThresholdSpec& out);

class ThresholdTable {
 public:
  explicit ThresholdTable(uint64_t max_entries = 1u << 20) : max_(max_entries) {}
  // Whether the match of `rule` (tracked addresses: 16 bytes each, family 4 or 6) at ts_ns alerts.
  bool alert(const ThresholdSpec& s, uint32_t rule, const uint8_t src[16], const uint8_t dst[16], uint8_t family,
             uint64_t ts_ns);
  uint64_t suppressed() const { return suppressed_; }
  uint64_t table_full() const { return full_; }

 private:
  struct Key {
    uint32_t rule;
    uint8_t family;
    uint8_t a[16], b[16];
    bool operator<(const Key& o) const;
  };
  struct Window {
    uint64_t start_ns;
    uint64_t matches;
  };
  std::map<Key, Window> w_;
  uint64_t max_;
  uint64_t suppressed_ = 0, full_ = 0;
};

}  // namespace gaspp
