// applayer/detection_ports.cpp — see detection_ports.hpp.
#include "applayer/detection_ports.hpp"

#include <cctype>

namespace gaspp {

namespace {
bool port_number(const std::string& s, uint16_t& out) {
  if (s.empty() || s.size() > 5) return false;
  uint32_t v = 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    v = v * 10 + uint32_t(c - '0');
  }
  if (v > 65535) return false;
  out = uint16_t(v);
  return true;
}
}  // namespace

std::string parse_port_ranges(const std::string& text, PortRanges& out) {
  std::string t;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c))) t += c;
  if (t.size() >= 2 && t.front() == '[' && t.back() == ']') t = t.substr(1, t.size() - 2);
  if (t.empty()) return "an empty port list";
  PortRanges r;
  size_t at = 0;
  while (at <= t.size()) {
    const size_t comma = t.find(',', at);
    const std::string item = t.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    uint16_t lo = 0, hi = 65535;
    if (item != "any") {
      const size_t colon = item.find(':');
      if (colon == std::string::npos) {
        if (!port_number(item, lo)) return "'" + item + "' is not a port";
        hi = lo;
      } else if (!port_number(item.substr(0, colon), lo) || !port_number(item.substr(colon + 1), hi) || lo > hi) {
        return "'" + item + "' is not a port range";
      }
    }
    if (r.n == PortRanges::kMax) return "more than " + std::to_string(PortRanges::kMax) + " ports or ranges";
    r.lo[r.n] = lo;
    r.hi[r.n] = hi;
    ++r.n;
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  out = r;
  return "";
}

std::string port_ranges_text(const PortRanges& p) {
  std::string s;
  for (int i = 0; i < p.n; ++i) {
    if (i) s += ",";
    s += std::to_string(p.lo[i]);
    if (p.hi[i] != p.lo[i]) s += ":" + std::to_string(p.hi[i]);
  }
  return s;
}

}  // namespace gaspp
