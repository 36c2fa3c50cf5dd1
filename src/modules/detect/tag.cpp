#include "modules/detect/tag.hpp"

#include <algorithm>
#include <cctype>

#include "modules/detect/text.hpp"

namespace gaspp {

namespace {

constexpr uint32_t kTagMaxPackets = 256;      // DETECT_TAG_MAX_PKTS
constexpr uint32_t kTagMatchLimit = 10;       // DETECT_TAG_MATCH_LIMIT
constexpr size_t kTagMaxTags = 50;            // DETECT_TAG_MAX_TAGS
constexpr uint64_t kTagIdleNs = 600000000000; // TAG_MAX_LAST_TIME_SEEN, 600 s

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::string parse_tag_option(const std::string& value, TagSpec& out) {
  const std::vector<std::string> f = split_trimmed(value, ',');
  out = TagSpec{};
  if (f.empty() || f.size() == 2 || f.size() > 4) return "error:tag: '" + value + "': want host|session[, count, metric[, src|dst]]";
  const std::string type = lower(f[0]);
  if (type == "host") out.host = true;
  else if (type != "session") return "error:tag: type '" + f[0] + "' is neither session nor host";
  if (f.size() == 1) return "";
  const std::string& n = f[1];
  if (n.empty() || n.size() > 10 || !std::all_of(n.begin(), n.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      std::stoull(n) > UINT32_MAX)
    return "error:tag: count '" + n + "' is not a number of 0 to 4294967295";
  out.count = uint32_t(std::stoul(n));
  const std::string metric = lower(f[2]);
  if (metric == "packets") {
    out.metric = TagSpec::packets;
    out.count = std::min(out.count, kTagMaxPackets);
  } else if (metric == "bytes") {
    out.metric = TagSpec::bytes;
  } else if (metric == "seconds") {
    out.metric = TagSpec::seconds;
  } else {
    return "error:tag: metric '" + f[2] + "' is none of packets, bytes, seconds";
  }
  if (f.size() == 4) {
    const std::string dir = lower(f[3]);
    if (dir != "src" && dir != "dst") return "error:tag: direction '" + f[3] + "' is neither src nor dst";
    out.dir_src = dir == "src";
  }
  return "";
}

TagTable::Key TagTable::host_key(uint8_t family, const uint8_t* addr) {
  Key k(1 + (family == 6 ? 16 : 4), '\0');
  k[0] = char(family);
  std::memcpy(k.data() + 1, addr, k.size() - 1);
  return k;
}

TagTable::Key TagTable::session_key(const TagPacket& p) {
  // Either direction: the endpoints in a fixed order.
  Key a = host_key(p.family, p.src), b = host_key(p.family, p.dst);
  a.append(reinterpret_cast<const char*>(&p.sport), 2);
  b.append(reinterpret_cast<const char*>(&p.dport), 2);
  if (b < a) std::swap(a, b);
  return std::string(1, char(p.proto)) + a + b;
}

void TagTable::add_to(std::unordered_map<Key, std::vector<Entry>>& m, const Key& k, const Entry& e) {
  auto it = m.find(k);
  if (it == m.end()) {
    if (m.size() >= kTagMaxKeys) {
      // Full: tags idle for the host timeout go first (a session's flow may have ended long ago).
      for (auto i = m.begin(); i != m.end();) {
        auto& l = i->second;
        l.erase(std::remove_if(l.begin(), l.end(), [&](const Entry& x) { return x.last_ts + kTagIdleNs < e.first_ts; }),
                l.end());
        i = l.empty() ? m.erase(i) : std::next(i);
      }
      if (m.size() >= kTagMaxKeys) {
        ++full_;
        return;
      }
    }
    it = m.emplace(k, std::vector<Entry>{}).first;
  }
  for (Entry& x : it->second) {
    if (x.sid != e.sid || x.gid != e.gid) continue;
    // The same signature again: its tag starts over, up to the match limit (Suricata's defence
    // against a flood of alerts keeping a tag alive).
    if (++x.matches < kTagMatchLimit) {
      x.first_ts = x.last_ts = e.first_ts;
      x.packets = 0;
      x.bytes = 0;
    }
    return;
  }
  if (it->second.size() >= kTagMaxTags) {
    ++full_;
    return;
  }
  it->second.insert(it->second.begin(), e);  // Suricata prepends
}

void TagTable::add(const TagSpec& t, uint32_t gid, uint32_t sid, const TagPacket& p) {
  if (!p.family) return;
  Entry e{gid, sid, t.metric, t.count, 0, 0, p.ts_ns, p.ts_ns, 0, false};
  if (t.host) add_to(hosts_, host_key(p.family, t.dir_src ? p.src : p.dst), e);
  else add_to(sessions_, session_key(p), e);
}

bool TagTable::handle_list(std::vector<Entry>& list, const TagPacket& p, bool host) {
  bool tagged = false;
  if (host)  // TagTimeoutCheck: a host tag not seen for the timeout ends
    list.erase(std::remove_if(list.begin(), list.end(), [&](const Entry& x) { return x.last_ts + kTagIdleNs < p.ts_ns; }),
               list.end());
  for (size_t k = 0; k < list.size();) {
    Entry& x = list[k];
    x.last_ts = p.ts_ns;
    if (x.metric == TagSpec::packets) ++x.packets;
    else if (x.metric == TagSpec::bytes) x.bytes += p.len;
    if (!x.skipped_first) {
      // The packet that raised the alert: its alert logs it.
      x.skipped_first = true;
      ++k;
      continue;
    }
    const bool over = x.metric == TagSpec::packets ? x.packets > x.count
                      : x.metric == TagSpec::bytes ? x.bytes > x.count
                                                   : x.last_ts / 1000000000 - x.first_ts / 1000000000 > x.count;
    if (over) {
      list.erase(list.begin() + std::ptrdiff_t(k));
      continue;
    }
    tagged = true;
    ++k;
  }
  return tagged;
}

bool TagTable::handle(const TagPacket& p) {
  if (!p.family || empty()) return false;
  bool tagged = false;
  if (!sessions_.empty()) {
    const auto it = sessions_.find(session_key(p));
    if (it != sessions_.end()) {
      tagged |= handle_list(it->second, p, false);
      if (it->second.empty()) sessions_.erase(it);
    }
  }
  for (const uint8_t* a : {p.src, p.dst}) {
    if (hosts_.empty()) break;
    const auto it = hosts_.find(host_key(p.family, a));
    if (it == hosts_.end()) continue;
    tagged |= handle_list(it->second, p, true);
    if (it->second.empty()) hosts_.erase(it);
  }
  tagged_ += tagged;
  return tagged;
}

}  // namespace gaspp
