#include "modules/detect/iprep.hpp"
#include "modules/detect/text.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace gaspp {

namespace {

bool small_number(const std::string& t, unsigned max, unsigned& v) {
  if (t.empty() || t.size() > 3) return false;
  for (char c : t)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  v = unsigned(std::atoi(t.c_str()));
  return v <= max;
}

// Reads the lines of path, each through f(line, n): "" or the error.
template <class F>
std::string each_line(const std::string& path, F&& f) {
  std::ifstream in(path);
  if (!in) return path + ": cannot be read";
  std::string line;
  for (uint32_t n = 1; std::getline(in, line); ++n) {
    const std::string t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    const std::string err = f(t);
    if (!err.empty()) return path + ":" + std::to_string(n) + ": " + err;
  }
  return "";
}

void mask(uint8_t* a, int len, int prefix) {
  for (int i = 0; i < len; ++i) {
    const int keep = prefix - 8 * i;
    a[i] &= keep >= 8 ? 0xff : keep <= 0 ? 0 : uint8_t(0xff << (8 - keep));
  }
}

}  // namespace

std::string load_iprep_categories(const std::string& path, std::map<std::string, uint8_t>& out) {
  return each_line(path, [&](const std::string& line) -> std::string {
    const std::vector<std::string> f = split_trimmed(line, ',');
    unsigned id;
    if (f.size() < 2 || !small_number(f[0], kIprepCategories - 1, id) || f[1].empty())
      return "not \"id,shortname,description\" with an id 0.." + std::to_string(kIprepCategories - 1);
    out[f[1]] = uint8_t(id);
    return "";
  });
}

std::string parse_iprep(const std::string& value, const std::map<std::string, uint8_t>& cats, IprepCond& out) {
  out = IprepCond{};
  const std::vector<std::string> f = split_trimmed(value, ',');
  if (f.size() != 3 && f.size() != 4) return "error:iprep takes SIDE,CATEGORY,OP,VALUE or SIDE,CATEGORY,isset|isnotset";
  if (f[0] == "any") out.side = IprepCond::any;
  else if (f[0] == "src") out.side = IprepCond::src;
  else if (f[0] == "dst") out.side = IprepCond::dst;
  else if (f[0] == "both") out.side = IprepCond::both;
  else return "error:iprep: side any, src, dst or both, not '" + f[0] + "'";
  if (cats.empty()) return "error:iprep without reputation categories (reputation-categories-file)";
  const auto it = cats.find(f[1]);
  if (it == cats.end()) return "error:iprep: unknown category '" + f[1] + "'";
  out.cat = it->second;
  // Suricata builds the u8 condition from the operator and the value as given (no refusal of <0).
  if (f.size() == 3) {
    if (f[2] == "isset") out.c.mode = kUintGe;  // >= 0: any value
    else if (f[2] == "isnotset") out.isnotset = true;
    else return "error:iprep: isset or isnotset, not '" + f[2] + "'";
    return "";
  }
  static const std::pair<const char*, uint8_t> kOps[] = {{"<", kUintLt}, {">", kUintGt}, {"=", kUintEq},
                                                         {"!=", kUintNe}, {"<=", kUintLe}, {">=", kUintGe}};
  const auto op = std::find_if(std::begin(kOps), std::end(kOps), [&](const auto& o) { return f[2] == o.first; });
  if (op == std::end(kOps)) return "error:iprep: operator < > = != <= >=, not '" + f[2] + "'";
  unsigned v;
  if (!small_number(f[3], 255, v)) return "error:iprep: value 0..255, not '" + f[3] + "'";
  out.c.mode = op->second;
  out.c.a = v;
  return "";
}

std::string IpReputation::load(const std::string& path) {
  return each_line(path, [&](const std::string& line) -> std::string {
    const std::vector<std::string> f = split_trimmed(line, ',');
    if (f.size() >= 1 && f[0] == "ip") return "";  // a header line
    unsigned cat, score;
    if (f.size() != 3 || !small_number(f[1], kIprepCategories - 1, cat) || !small_number(f[2], 127, score))
      return "not \"ip[/prefix],category,score\" (category 0.." + std::to_string(kIprepCategories - 1) + ", score 0..127)";
    std::string ip = f[0];
    int prefix = -1;
    if (const size_t slash = ip.find('/'); slash != std::string::npos) {
      unsigned p;
      if (!small_number(ip.substr(slash + 1), 128, p)) return "bad prefix in '" + f[0] + "'";
      prefix = int(p);
      ip = ip.substr(0, slash);
    }
    uint8_t a[16] = {};
    int fam;
    if (inet_pton(AF_INET, ip.c_str(), a) == 1) fam = 4;
    else if (inet_pton(AF_INET6, ip.c_str(), a) == 1) fam = 6;
    else return "'" + f[0] + "' is not an address";
    const int len = fam == 4 ? 4 : 16;
    if (prefix < 0) prefix = 8 * len;
    if (prefix > 8 * len) return "bad prefix in '" + f[0] + "'";
    const std::string key(reinterpret_cast<const char*>(a), size_t(len));
    bool fresh;
    if (f[0].find('/') == std::string::npos) {
      auto r = hosts_[fam == 6].try_emplace(key, std::array<uint8_t, kIprepCategories>{});
      r.first->second[cat] = uint8_t(score);
      fresh = r.second;
    } else {
      mask(a, len, prefix);
      auto r = nets_[fam == 6][cat][prefix].insert_or_assign(std::string(reinterpret_cast<const char*>(a), size_t(len)), uint8_t(score));
      fresh = r.second;
    }
    if (fresh && ++entries_ > kIprepMaxEntries) return "more than " + std::to_string(kIprepMaxEntries) + " hosts and netblocks";
    return "";
  });
}

int IpReputation::score(uint8_t fam, const uint8_t* addr, uint8_t cat) const {
  const int len = fam == 6 ? 16 : 4;
  const auto h = hosts_[fam == 6].find(std::string(reinterpret_cast<const char*>(addr), size_t(len)));
  if (h != hosts_[fam == 6].end()) return h->second[cat];
  for (const auto& [prefix, table] : nets_[fam == 6][cat]) {
    uint8_t a[16];
    std::memcpy(a, addr, size_t(len));
    mask(a, len, prefix);
    const auto it = table.find(std::string(reinterpret_cast<const char*>(a), size_t(len)));
    if (it != table.end()) return it->second;
  }
  return -1;
}

bool IpReputation::holds(const IprepCond& c, uint8_t fam, const uint8_t* src, const uint8_t* dst) const {
  // Each side's score is looked up only when the condition reads it.
  const auto has = [&](const uint8_t* a) {
    const int v = score(fam, a, c.cat);
    return c.isnotset ? v >= 0 : v >= 0 && uint_cond_holds(c.c, uint64_t(v));
  };
  // isnotset: "has" is "has a value", and the answers are its negations.
  switch (c.side) {
    case IprepCond::any: return c.isnotset ? !(has(src) && has(dst)) : (has(src) || has(dst));
    case IprepCond::src: return c.isnotset ? !has(src) : has(src);
    case IprepCond::dst: return c.isnotset ? !has(dst) : has(dst);
    case IprepCond::both: return c.isnotset ? !(has(src) || has(dst)) : (has(src) && has(dst));
  }
  return false;
}

}  // namespace gaspp
