// modules/detect/pcre_capture.cpp — see pcre_capture.hpp.
#include "modules/detect/pcre_capture.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace gaspp {

std::string parse_pcre_captures(const std::string& list, const std::string& regex, std::vector<PcreCaptureSpec>& out) {
  out.clear();
  // The list (Suricata's DetectPcreParseCapture: strtok on " ,"), then the named groups.
  std::vector<std::string> names;
  std::string cur;
  for (char c : list + ",") {
    if (c == ',' || c == ' ' || c == '\t') {
      if (!cur.empty()) names.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  bool key = false;
  for (const std::string& n : names) {
    PcreCaptureSpec s;
    if (n == "pkt:key") {
      s.type = PcreCaptureSpec::pkt_kv;
      key = true;
      out.push_back(s);
      continue;
    }
    if (n == "pkt:value") {
      if (!key) return "error:pcre: pkt:value without pkt:key before it";
      key = false;
      continue;
    }
    if (key) return "error:pcre: pkt:key not followed by pkt:value";
    const size_t colon = n.find(':');
    const std::string type = colon == std::string::npos ? "" : n.substr(0, colon);
    s.name = colon == std::string::npos ? "" : n.substr(colon + 1);
    if (type == "pkt") s.type = PcreCaptureSpec::pkt;
    else if (type == "flow") s.type = PcreCaptureSpec::flow;
    else if (type == "alert") s.type = PcreCaptureSpec::alert;
    else return "error:pcre: capture name '" + n + "' must start with pkt:, flow: or alert:";
    if (s.name.empty()) return "error:pcre: capture name '" + n + "' has no name";
    out.push_back(s);
  }
  if (key) return "error:pcre: pkt:key not followed by pkt:value";
  // Named groups (?P<TYPE_NAME>: Suricata's PARSE_CAPTURE_REGEX, letters for the type.
  for (size_t at = regex.find("(?P<"); at != std::string::npos; at = regex.find("(?P<", at + 4)) {
    if (at > 0 && regex[at - 1] == '\\') continue;
    const size_t end = regex.find('>', at + 4);
    if (end == std::string::npos) break;
    const std::string g = regex.substr(at + 4, end - at - 4);
    const size_t us = g.find('_');
    if (us == std::string::npos || us == 0 || us + 1 >= g.size()) continue;
    const std::string type = g.substr(0, us);
    PcreCaptureSpec s;
    s.name = g.substr(us + 1);
    if (type == "pkt") s.type = PcreCaptureSpec::pkt;
    else if (type == "flow") s.type = PcreCaptureSpec::flow;
    else if (type == "alert") s.type = PcreCaptureSpec::alert;
    else continue;  // the expression's own group
    out.push_back(s);
  }
  if (out.size() > kPcreMaxCaptures)
    return "error:pcre: more than " + std::to_string(kPcreMaxCaptures) + " captures";
  return "";
}

void PcreCaptureRecorder::record(uint32_t pcre_id, const std::vector<PcreCaptureSpec>& specs, const size_t* ov,
                                 uint32_t pairs, const uint8_t* subject) {
  if (!active_ || specs.empty()) return;
  const auto group = [&](size_t g, std::string& out) {
    constexpr size_t kUnset = ~size_t(0);
    if (g >= pairs || ov[2 * g] == kUnset || ov[2 * g + 1] < ov[2 * g]) return false;
    const size_t n = std::min<size_t>(ov[2 * g + 1] - ov[2 * g], 0xffff);
    out.assign(reinterpret_cast<const char*>(subject) + ov[2 * g], n);
    return true;
  };
  std::vector<CapturedVar> vars;
  for (size_t x = 0; x < specs.size(); ++x) {
    CapturedVar v{specs[x].type, specs[x].name, {}};
    if (specs[x].type == PcreCaptureSpec::pkt_kv) {
      // Group x + 1 names the variable (at most 255 bytes), group x + 2 is its value.
      std::string k;
      if (!group(x + 1, k) || !group(x + 2, v.value)) break;
      v.type = PcreCaptureSpec::pkt;
      v.name = k.substr(0, 0xff);
    } else if (!group(x + 1, v.value)) {
      continue;
    }
    vars.push_back(std::move(v));
  }
  for (auto& [id, old] : by_pcre_)
    if (id == pcre_id) {
      old = std::move(vars);
      return;
    }
  by_pcre_.emplace_back(pcre_id, std::move(vars));
}

std::vector<CapturedVar> PcreCaptureRecorder::take() {
  active_ = false;
  std::sort(by_pcre_.begin(), by_pcre_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<CapturedVar> out;
  for (auto& [id, vars] : by_pcre_)
    for (CapturedVar& v : vars) out.push_back(std::move(v));
  by_pcre_.clear();
  return out;
}

PcreCaptureRecorder& pcre_capture_recorder() {
  thread_local PcreCaptureRecorder r;
  return r;
}

std::string printable_ascii(const std::string& s) {
  std::string o = s;
  for (char& c : o)
    if (c < 0x20 || c > 0x7e) c = '.';
  return o;
}

}  // namespace gaspp
