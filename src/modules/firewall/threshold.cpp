// modules/firewall/threshold.cpp — see threshold.hpp.
#include "modules/firewall/threshold.hpp"

#include <cstdlib>
#include <cstring>
#include <sstream>

namespace gaspp {
namespace {
std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}
}  // namespace

std::string parse_threshold(const std::string& text, ThresholdSpec& out) {
  out = ThresholdSpec{};
  const size_t colon = text.find(':');
  if (colon == std::string::npos) return "no value";
  const std::string kw = trim(text.substr(0, colon));
  if (kw == "detection_filter") out.kind = ThresholdSpec::detection_filter;
  else if (kw != "threshold") return "not a threshold: " + kw;
  bool have_count = false, have_seconds = false, have_track = false;
  std::stringstream ss(text.substr(colon + 1));
  for (std::string item; std::getline(ss, item, ',');) {
    item = trim(item);
    const size_t sp = item.find_first_of(" \t");
    if (sp == std::string::npos) return "'" + item + "' has no value";
    const std::string k = item.substr(0, sp), v = trim(item.substr(sp));
    if (k == "type" && out.kind != ThresholdSpec::detection_filter) {
      if (v == "limit") out.kind = ThresholdSpec::limit;
      else if (v == "threshold") out.kind = ThresholdSpec::threshold;
      else if (v == "both") out.kind = ThresholdSpec::both;
      else return "type: limit, threshold or both, not '" + v + "'";
    } else if (k == "track") {
      if (v == "by_src") out.track = ThresholdSpec::by_src;
      else if (v == "by_dst") out.track = ThresholdSpec::by_dst;
      else if (v == "by_rule") out.track = ThresholdSpec::by_rule;
      else if (v == "by_both") out.track = ThresholdSpec::by_both;
      else return "track: by_src, by_dst, by_rule or by_both, not '" + v + "'";
      have_track = true;
    } else if (k == "count" || k == "seconds") {
      char* end = nullptr;
      const unsigned long n = std::strtoul(v.c_str(), &end, 10);
      if (v.empty() || *end || n == 0 || n > 0xffffffffUL) return k + ": a positive number, not '" + v + "'";
      (k == "count" ? out.count : out.seconds) = uint32_t(n);
      (k == "count" ? have_count : have_seconds) = true;
    } else {
      return "unknown setting '" + k + "'";
    }
  }
  if (out.kind == ThresholdSpec::none) return "no type";
  if (!have_count || !have_seconds || !have_track) return "needs track, count and seconds";
  return "";
}

bool ThresholdTable::Key::operator<(const Key& o) const {
  if (rule != o.rule) return rule < o.rule;
  if (family != o.family) return family < o.family;
  const int c = std::memcmp(a, o.a, 16);
  if (c) return c < 0;
  return std::memcmp(b, o.b, 16) < 0;
}

bool ThresholdTable::alert(const ThresholdSpec& s, uint32_t rule, const uint8_t src[16], const uint8_t dst[16],
                           uint8_t family, uint64_t ts_ns) {
  if (s.kind == ThresholdSpec::none) return true;
  Key k{};
  k.rule = rule;
  k.family = family;
  if (s.track == ThresholdSpec::by_src || s.track == ThresholdSpec::by_both) std::memcpy(k.a, src, 16);
  if (s.track == ThresholdSpec::by_dst) std::memcpy(k.a, dst, 16);
  if (s.track == ThresholdSpec::by_both) std::memcpy(k.b, dst, 16);
  auto it = w_.find(k);
  if (it == w_.end()) {
    if (w_.size() >= max_) {
      ++full_;
      return true;
    }
    it = w_.emplace(k, Window{ts_ns, 0}).first;
  }
  Window& w = it->second;
  if (ts_ns >= w.start_ns + uint64_t(s.seconds) * 1'000'000'000ull) w = Window{ts_ns, 0};
  const uint64_t m = ++w.matches;
  bool yes = true;
  switch (s.kind) {
    case ThresholdSpec::limit: yes = m <= s.count; break;
    case ThresholdSpec::threshold: yes = m % s.count == 0; break;
    case ThresholdSpec::both: yes = m == s.count; break;
    case ThresholdSpec::detection_filter: yes = m > s.count; break;
    case ThresholdSpec::none: break;
  }
  suppressed_ += !yes;
  return yes;
}

}  // namespace gaspp
