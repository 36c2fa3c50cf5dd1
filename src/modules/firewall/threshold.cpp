// modules/firewall/threshold.cpp — see threshold.hpp.
#include "modules/firewall/threshold.hpp"

#include "gaspp/module.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace gaspp {
namespace {
std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r\n"), b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

bool parse_track(const std::string& v, ThresholdSpec::Track& t) {
  if (v == "by_src") t = ThresholdSpec::by_src;
  else if (v == "by_dst") t = ThresholdSpec::by_dst;
  else if (v == "by_rule") t = ThresholdSpec::by_rule;
  else if (v == "by_both") t = ThresholdSpec::by_both;
  else if (v == "by_flow") t = ThresholdSpec::by_flow;
  else return false;
  return true;
}

// A uint32 of decimal digits (Suricata's StringParseUint32); false when it is not one.
bool parse_u32(const std::string& v, uint32_t& out) {
  if (v.empty() || v.size() > 10 || v.find_first_not_of("0123456789") != std::string::npos) return false;
  const unsigned long long n = std::strtoull(v.c_str(), nullptr, 10);
  if (n > 0xffffffffULL) return false;
  out = uint32_t(n);
  return true;
}

// Backoff's next alerting count: cur * m, or UINT32_MAX where that overflows (Suricata's
// BackoffCalcNextValue).
uint32_t backoff_next(uint32_t cur, uint32_t m) { return m && UINT32_MAX / m < cur ? UINT32_MAX : cur * m; }
}  // namespace

std::string parse_threshold(const std::string& text, ThresholdSpec& out) {
  out = ThresholdSpec{};
  const size_t colon = text.find(':');
  if (colon == std::string::npos) return "no value";
  const std::string kw = trim(text.substr(0, colon));
  if (kw == "detection_filter") out.kind = ThresholdSpec::detection_filter;
  else if (kw != "threshold") return "not a threshold: " + kw;
  bool have_count = false, have_seconds = false, have_track = false, have_multiplier = false;
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
      else if (v == "backoff") out.kind = ThresholdSpec::backoff;
      else return "type: limit, threshold, both or backoff, not '" + v + "'";
    } else if (k == "track") {
      if (!parse_track(v, out.track)) return "track: by_src, by_dst, by_rule, by_both or by_flow, not '" + v + "'";
      have_track = true;
    } else if (k == "unique_on" && out.kind == ThresholdSpec::detection_filter) {
      if (v == "src_port") out.unique_on = ThresholdSpec::src_port;
      else if (v == "dst_port") out.unique_on = ThresholdSpec::dst_port;
      else return "unique_on: src_port or dst_port, not '" + v + "'";
    } else if (k == "count" || k == "seconds" || (k == "multiplier" && out.kind != ThresholdSpec::detection_filter)) {
      uint32_t n = 0;
      if (!parse_u32(v, n) || n == 0) return k + ": a positive number, not '" + v + "'";
      (k == "count" ? out.count : k == "seconds" ? out.seconds : out.multiplier) = n;
      (k == "count" ? have_count : k == "seconds" ? have_seconds : have_multiplier) = true;
    } else {
      return "unknown setting '" + k + "'";
    }
  }
  if (out.kind == ThresholdSpec::none) return "no type";
  if (out.kind == ThresholdSpec::backoff) {
    // Suricata's bounds (detect-threshold.c).
    if (!have_count || !have_multiplier || !have_track || have_seconds)
      return "type backoff needs track, count and multiplier, and no seconds";
    if (out.count > 65535) return "backoff count is 1-65535";
    if (out.multiplier < 2 || out.multiplier > 65535) return "backoff multiplier is 2-65535";
    if (out.track != ThresholdSpec::by_flow) return "type backoff needs track by_flow";
    return "";
  }
  if (have_multiplier) return "multiplier is for type backoff";
  if (!have_count || !have_seconds || !have_track) return "needs track, count and seconds";
  return "";
}

bool load_threshold_config(const std::string& path, const RuleVars& vars, std::vector<ThresholdConfigEntry>& out,
                           std::vector<RuleError>& errors) {
  std::ifstream in(path);
  if (!in) {
    errors.push_back({path, 0, "cannot be read"});
    return false;
  }
  // Suricata's expressions (util-threshold-config.c), case and spacing as it accepts them.
  static const std::regex base(
      R"(^\s*(event_filter|threshold|rate_filter|suppress)\s*gen_id\s*(\d+)\s*,\s*sig_id\s*(\d+)\s*(.*?)\s*$)");
  static const std::regex thr(
      R"(^,\s*type\s*(limit|both|threshold)\s*,\s*track\s*(by_dst|by_src|by_both|by_rule|by_flow)\s*,\s*count\s*(\d+)\s*,\s*seconds\s*(\d+)\s*$)");
  static const std::regex rate(
      R"(^,\s*track\s*(by_dst|by_src|by_both|by_rule|by_flow)\s*,\s*count\s*(\d+)\s*,\s*seconds\s*(\d+)\s*,\s*new_action\s*(alert|drop|pass|log|sdrop|reject)\s*,\s*timeout\s*(\d+)\s*$)");
  static const std::regex sup(R"(^,\s*track\s*(by_dst|by_src|by_either)\s*,\s*ip\s*([\[\],\$\s\da-zA-Z.:/_!-]+?)\s*$)");
  std::string line, text;
  uint32_t n = 0, first = 0;
  while (std::getline(in, line)) {
    ++n;
    if (text.empty()) first = n;
    // A '\' as the last character that is not a space continues the entry on the next line.
    const size_t last = line.find_last_not_of(" \t\r");
    if (last != std::string::npos && line[last] == '\\') {
      text += line.substr(0, last);
      continue;
    }
    text += line;
    const std::string entry = trim(text);
    text.clear();
    if (entry.empty() || entry[0] == '#') continue;
    auto bad = [&](const std::string& why) { errors.push_back({path, first, why}); };
    std::smatch m;
    if (!std::regex_match(entry, m, base)) {
      bad("not a threshold, event_filter, rate_filter or suppress entry with gen_id and sig_id: '" + entry + "'");
      continue;
    }
    ThresholdConfigEntry e;
    e.file = path;
    e.line = first;
    if (!parse_u32(m[2].str(), e.gid) || !parse_u32(m[3].str(), e.sid)) {
      bad("gen_id and sig_id are 32-bit numbers");
      continue;
    }
    if (e.sid != 0 && e.gid == 0) {
      bad("sig_id " + m[3].str() + " with gen_id 0: give the rule's gid");
      continue;
    }
    const std::string type = m[1].str(), rest = m[4].str();
    std::smatch r;
    if (type == "suppress") {
      e.type = ThresholdConfigEntry::suppress;
      if (rest.empty()) {
        e.suppress_all = true;
      } else if (std::regex_match(rest, r, sup)) {
        const std::string t = r[1].str();
        e.suppress_spec.track = t == "by_src" ? SuppressSpec::by_src : t == "by_dst" ? SuppressSpec::by_dst : SuppressSpec::by_either;
        const std::string why = parse_addr_set(r[2].str(), vars, e.suppress_spec.addrs);
        if (!why.empty()) {
          bad("suppress ip: " + why);
          continue;
        }
      } else {
        bad("suppress takes `track by_src|by_dst|by_either, ip ADDRESSES` or nothing, not '" + rest + "'");
        continue;
      }
    } else if (type == "rate_filter") {
      e.type = ThresholdConfigEntry::rate_filter;
      e.spec.kind = ThresholdSpec::rate_filter;
      if (!std::regex_match(rest, r, rate)) {
        bad("rate_filter takes track, count, seconds, new_action and timeout, not '" + rest + "'");
        continue;
      }
      parse_track(r[1].str(), e.spec.track);
      const std::string a = r[4].str();
      // log and sdrop parse in Suricata and change nothing there either.
      e.spec.new_action = a == "alert" ? ThresholdSpec::alert : a == "drop" ? ThresholdSpec::drop
                        : a == "reject" ? ThresholdSpec::reject : a == "pass" ? ThresholdSpec::pass : ThresholdSpec::keep;
      if (!parse_u32(r[2].str(), e.spec.count) || !parse_u32(r[3].str(), e.spec.seconds) ||
          !parse_u32(r[5].str(), e.spec.timeout)) {
        bad("count, seconds and timeout are 32-bit numbers");
        continue;
      }
    } else {
      e.type = ThresholdConfigEntry::threshold;
      if (!std::regex_match(rest, r, thr)) {
        bad(type + " takes type limit|both|threshold, track, count and seconds, not '" + rest + "'");
        continue;
      }
      const std::string k = r[1].str();
      e.spec.kind = k == "limit" ? ThresholdSpec::limit : k == "both" ? ThresholdSpec::both : ThresholdSpec::threshold;
      parse_track(r[2].str(), e.spec.track);
      if (!parse_u32(r[3].str(), e.spec.count) || !parse_u32(r[4].str(), e.spec.seconds)) {
        bad("count and seconds are 32-bit numbers");
        continue;
      }
    }
    if (e.type != ThresholdConfigEntry::suppress && e.spec.count == 0) {
      bad("count must be 1 or more");
      continue;
    }
    out.push_back(std::move(e));
  }
  if (!trim(text).empty()) errors.push_back({path, first, "the file ends inside a continued ('\\') entry"});
  return true;
}

void apply_threshold_config(const std::vector<ThresholdConfigEntry>& entries, const std::vector<RuleId>& ids,
                            std::vector<RuleThresholds>& out, std::vector<size_t>& unmatched) {
  out.resize(ids.size());
  for (size_t k = 0; k < entries.size(); ++k) {
    const ThresholdConfigEntry& e = entries[k];
    const bool all = e.sid == 0;
    bool found = false;
    for (size_t i = 0; i < ids.size(); ++i) {
      if (all ? (e.gid != 0 && ids[i].gid != e.gid) : (ids[i].sid != e.sid || ids[i].gid != e.gid)) continue;
      found = true;
      RuleThresholds& t = out[i];
      if (e.type == ThresholdConfigEntry::suppress) {
        if (e.suppress_all) t.noalert = true;
        else t.suppress.push_back(e.suppress_spec);
        continue;
      }
      // SetupThresholdRule: an entry for all rules, or a rate_filter, leaves a rule's own threshold
      // or detection_filter (or an earlier entry's) in place; a threshold for this rule replaces
      // the last of them.
      if (all || e.type == ThresholdConfigEntry::rate_filter) {
        if (!t.thresholds.empty()) continue;
      } else if (!t.thresholds.empty()) {
        t.thresholds.pop_back();
      }
      t.thresholds.push_back(e.spec);
    }
    if (!found && !all) unmatched.push_back(k);
  }
}

size_t load_threshold_config_for(const std::string& path, const RuleVars& vars, const std::vector<RuleId>& ids,
                                 std::vector<RuleThresholds>& out, bool report, const char* who) {
  std::vector<ThresholdConfigEntry> entries;
  std::vector<RuleError> errors;
  if (!load_threshold_config(path, vars, entries, errors))
    throw std::invalid_argument(std::string(who) + ": threshold file " + path + " cannot be read");
  std::vector<size_t> unmatched;
  apply_threshold_config(entries, ids, out, unmatched);
  if (!report) return entries.size();
  for (const RuleError& e : errors)
    std::fprintf(stderr, "gaspp: %s:%u: threshold.config entry skipped: %s\n", e.file.c_str(), e.line, e.why.c_str());
  for (size_t k : unmatched)
    std::fprintf(stderr, "gaspp: %s:%u: threshold.config entry for gen_id %u, sig_id %u: no such rule\n",
                 entries[k].file.c_str(), entries[k].line, entries[k].gid, entries[k].sid);
  return entries.size();
}

uint8_t reject_dirs_for(const Rule& r, ThresholdSpec::NewAction a) {
  if (a == ThresholdSpec::reject) return r.reject_dirs ? r.reject_dirs : uint8_t(kRejectToSource);
  return a == ThresholdSpec::keep ? r.reject_dirs : 0;
}

bool rate_filter_unapplied(ThresholdSpec::NewAction a, RuleAction rule) {
  // A drop the device decided cannot be undone; one it did not decide is decided late
  // (LateVerdicts) where the match has a packet.
  const bool blocks = rule == RuleAction::drop || rule == RuleAction::reject;
  return a == ThresholdSpec::alert && blocks;
}

bool ThresholdTable::Key::operator<(const Key& o) const {
  if (rule != o.rule) return rule < o.rule;
  if (spec != o.spec) return spec < o.spec;
  if (track != o.track) return track < o.track;
  if (family != o.family) return family < o.family;
  if (flow != o.flow) return flow < o.flow;
  const int c = std::memcmp(a, o.a, 16);
  if (c) return c < 0;
  return std::memcmp(b, o.b, 16) < 0;
}

ThresholdTable::Outcome ThresholdTable::check(const RuleThresholds& t, uint32_t rule, const Packet& p,
                                              ThresholdSpec::NewAction& new_action) {
  new_action = ThresholdSpec::keep;
  if (t.noalert) return silent;  // the caller counts noalert rules itself
  // Suppressions first: an address on the list silences the alert (PacketAlertHandle).
  for (const SuppressSpec& s : t.suppress) {
    const bool hit = (s.track != SuppressSpec::by_dst && s.addrs.matches(p.family, p.src)) ||
                     (s.track != SuppressSpec::by_src && s.addrs.matches(p.family, p.dst));
    if (hit) {
      ++suppressed_;
      return silent;
    }
  }
  for (size_t k = 0; k < t.thresholds.size(); ++k) {
    const Outcome o = one(t.thresholds[k], rule, uint16_t(k), p, new_action);
    if (o != alert) {
      ++suppressed_;
      return o;
    }
  }
  return alert;
}

void ThresholdTable::add_port(Window& w, const ThresholdSpec& s, const Packet& p) {
  if (w.ports.empty()) {
    w.ports.assign(65536 / 64, 0);
    w.count = 0;
  }
  const uint16_t port = s.unique_on == ThresholdSpec::src_port ? p.sport : p.dport;
  uint64_t& word = w.ports[port / 64];
  const uint64_t bit = 1ull << (port % 64);
  if (!(word & bit)) {
    word |= bit;
    ++w.count;
  }
}

ThresholdTable::Outcome ThresholdTable::one(const ThresholdSpec& s, uint32_t rule, uint16_t spec, const Packet& p,
                                            ThresholdSpec::NewAction& new_action) {
  if (s.kind == ThresholdSpec::none) return alert;
  // Suricata's fast path: a threshold of count 1 alerts on every match, keeping no state.
  if (s.kind == ThresholdSpec::threshold && s.count == 1) return alert;
  if (s.track == ThresholdSpec::by_flow && p.flow_id == 0) return no_alert;
  Key k{};
  k.rule = rule;
  k.spec = spec;
  k.track = s.track;
  switch (s.track) {
    case ThresholdSpec::by_src: std::memcpy(k.a, p.src, 16); k.family = p.family; break;
    case ThresholdSpec::by_dst: std::memcpy(k.a, p.dst, 16); k.family = p.family; break;
    case ThresholdSpec::by_both: {
      // The pair in either direction: the lower address first.
      const size_t n = p.family == 6 ? 16 : 4;
      const bool src_low = std::memcmp(p.src, p.dst, n) < 0;
      std::memcpy(k.a, src_low ? p.src : p.dst, 16);
      std::memcpy(k.b, src_low ? p.dst : p.src, 16);
      k.family = p.family;
      break;
    }
    case ThresholdSpec::by_flow: k.flow = p.flow_id; break;
    case ThresholdSpec::by_rule: break;
  }
  auto it = w_.find(k);
  if (it == w_.end()) {
    if (w_.size() >= max_) {
      ++full_;
      return alert;
    }
    // ThresholdSetup: the first match of a key.
    Window w{p.ts_ns, 1, 0, 0, false, {}};
    if (s.unique_on != ThresholdSpec::no_unique) add_port(w, s, p);
    Outcome o = no_alert;
    switch (s.kind) {
      case ThresholdSpec::limit:
      case ThresholdSpec::rate_filter: o = alert; break;
      case ThresholdSpec::threshold:
      case ThresholdSpec::both: o = s.count == 1 ? alert : no_alert; break;
      case ThresholdSpec::backoff:
        w.next = s.count;
        if (s.count == 1) {
          w.next = backoff_next(w.next, s.multiplier);
          o = alert;
        }
        break;
      case ThresholdSpec::detection_filter:
      case ThresholdSpec::none: break;
    }
    w_.emplace(k, w);
    return o;
  }
  // ThresholdCheckUpdate: within the window while the packet time is at most `seconds` past its start.
  Window& w = it->second;
  const bool within = p.ts_ns <= w.start_ns + uint64_t(s.seconds) * 1'000'000'000ull;
  switch (s.kind) {
    case ThresholdSpec::limit:
      if (!within) {
        w.start_ns = p.ts_ns, w.count = 1;
        return alert;
      }
      return ++w.count <= s.count ? alert : silent;
    case ThresholdSpec::threshold:
      if (!within) {
        w.start_ns = p.ts_ns, w.count = 1;
        return no_alert;
      }
      if (++w.count >= s.count) {
        w.count = 0;
        return alert;
      }
      return no_alert;
    case ThresholdSpec::both:
      if (!within) {
        w.start_ns = p.ts_ns, w.count = 1;
        return s.count == 1 ? alert : no_alert;
      }
      ++w.count;
      return w.count == s.count ? alert : w.count > s.count ? silent : no_alert;
    case ThresholdSpec::detection_filter:
      if (s.unique_on != ThresholdSpec::no_unique) {
        // Distinct ports: the window's count is the number of ports seen in it.
        if (!within) {
          w.start_ns = p.ts_ns, w.count = 0;
          std::fill(w.ports.begin(), w.ports.end(), 0);
          add_port(w, s, p);
          return no_alert;
        }
        add_port(w, s, p);
        return w.count > s.count ? alert : no_alert;
      }
      if (!within) {
        w.start_ns = p.ts_ns, w.count = 1;
        return no_alert;
      }
      return ++w.count > s.count ? alert : no_alert;
    case ThresholdSpec::rate_filter: {
      if (w.timeout_on) {
        // The new action holds while fewer than `timeout` whole seconds have passed.
        if (p.ts_ns / 1'000'000'000ull - w.timeout_ns / 1'000'000'000ull > s.timeout) w.timeout_on = false;
        else new_action = s.new_action;
      } else if (within) {
        if (++w.count > s.count) {
          w.timeout_on = true;
          w.timeout_ns = p.ts_ns;
          new_action = s.new_action;
        }
      } else {
        w.start_ns = p.ts_ns, w.count = 1;
      }
      return alert;
    }
    case ThresholdSpec::backoff:
      if (w.count == UINT32_MAX) return silent;
      if (++w.count == w.next) {
        w.next = backoff_next(w.next, s.multiplier);
        return alert;
      }
      return silent;
    case ThresholdSpec::none: break;
  }
  return alert;
}

}  // namespace gaspp
