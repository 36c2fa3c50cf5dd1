// modules/firewall/firewall_compile.cpp — rules → tables (see firewall_compile.hpp).
#include "modules/firewall/firewall_compile.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

namespace gaspp {
namespace {

using u128 = unsigned __int128;
using Range = std::pair<u128, u128>;  // inclusive

U128 from_u128(u128 x) { return U128{uint64_t(x >> 64), uint64_t(x)}; }
u128 family_max(int fam) { return fam == 4 ? u128(0xffffffffu) : ~u128(0); }

// Sorted, merged (adjacent ranges joined).
std::vector<Range> merged(std::vector<Range> v) {
  std::sort(v.begin(), v.end());
  std::vector<Range> out;
  for (const Range& r : v) {
    if (!out.empty() && (out.back().second == ~u128(0) || r.first <= out.back().second + 1)) {
      out.back().second = std::max(out.back().second, r.second);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

// a \ b, both merged.
std::vector<Range> subtract(const std::vector<Range>& a, const std::vector<Range>& b) {
  std::vector<Range> out;
  for (Range r : a) {
    bool gone = false;
    for (const Range& x : b) {
      if (x.second < r.first || x.first > r.second) continue;
      if (x.first > r.first) out.push_back({r.first, x.first - 1});
      if (x.second >= r.second) {
        gone = true;
        break;
      }
      r.first = x.second + 1;
    }
    if (!gone) out.push_back(r);
  }
  return out;
}

Range item_range(const AddrItem& it) {
  u128 v = 0;
  const int n = it.family == 4 ? 4 : 16;
  for (int k = 0; k < n; ++k) v = (v << 8) | it.bytes[k];
  if (it.range) {
    u128 h = 0;
    for (int k = 0; k < n; ++k) h = (h << 8) | it.hi[k];
    return {v, h};
  }
  const int bits = n * 8;
  const int host = bits - std::min<int>(it.prefix, bits);
  const u128 low_mask = host == 0 ? u128(0) : host >= 128 ? ~u128(0) : ((u128(1) << host) - 1);
  return {v & ~low_mask, v | low_mask};
}

// The addresses of family `fam` a set matches (AddrSet::matches semantics: per family, a family
// with only negated items is everything but them, one the set does not name is empty).
std::vector<Range> addr_ranges(const AddrSet& s, int fam) {
  std::vector<Range> pos, neg;
  bool any_pos = false;
  for (const AddrItem& it : s.items) {
    if (it.any) {
      if (it.neg) return {};
      any_pos = true;
      continue;
    }
    if (it.family != fam) continue;
    (it.neg ? neg : pos).push_back(item_range(it));
  }
  if (s.items.empty() || any_pos || (pos.empty() && !neg.empty())) pos = {{0, family_max(fam)}};
  return subtract(merged(pos), merged(neg));
}

std::vector<std::pair<uint16_t, uint16_t>> port_ranges(const PortSet& s) {
  std::vector<Range> pos, neg;
  bool has_pos = false;
  for (const PortItem& it : s.items) {
    if (!it.neg) has_pos = true;
    (it.neg ? neg : pos).push_back({it.lo, it.hi});
  }
  if (!has_pos) pos = {{0, 65535}};
  std::vector<std::pair<uint16_t, uint16_t>> out;
  for (const Range& r : subtract(merged(pos), merged(neg))) out.push_back({uint16_t(r.first), uint16_t(r.second)});
  return out;
}

long double range_size(const std::vector<Range>& v) {
  long double n = 0;
  for (const Range& r : v) n += static_cast<long double>(r.second - r.first) + 1.0L;
  return n;
}

uint8_t fw_action(RuleAction a) {
  switch (a) {
    case RuleAction::pass: return kFwPass;
    case RuleAction::drop: return kFwDrop;
    case RuleAction::reject: return kFwReject;
    case RuleAction::alert: break;
    case RuleAction::accept: break;  // firewall-mode rules: policy.hpp decides, not this field
  }
  return kFwAlert;
}

// Cuts (range, entry) pairs into elementary pieces (cut wherever a range begins or ends) and for
// each piece some range covers, appends the covering entries to `entries` and calls
// piece(first, last, their span). Throws std::length_error when `entries` outgrows max_entries.
template <class Piece>
void elementary_pieces(std::vector<std::pair<Range, uint32_t>>& rg, std::vector<uint32_t>& entries,
                       uint64_t max_entries, Piece piece) {
  if (rg.empty()) return;
  std::vector<u128> cuts;
  for (auto& [x, e] : rg) {
    cuts.push_back(x.first);
    if (x.second != ~u128(0)) cuts.push_back(x.second + 1);
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  std::sort(rg.begin(), rg.end(), [](auto& a, auto& b) { return a.first.first < b.first.first; });
  std::multimap<u128, uint32_t> ends;  // last value → entry, of the active ranges
  std::multiset<uint32_t> active;
  size_t next = 0;
  for (size_t c = 0; c < cuts.size(); ++c) {
    const u128 at = cuts[c];
    while (!ends.empty() && ends.begin()->first < at) {
      active.erase(active.find(ends.begin()->second));
      ends.erase(ends.begin());
    }
    while (next < rg.size() && rg[next].first.first == at) {
      active.insert(rg[next].second);
      ends.emplace(rg[next].first.second, rg[next].second);
      ++next;
    }
    if (active.empty()) continue;
    const u128 last = c + 1 < cuts.size() ? cuts[c + 1] - 1 : ~u128(0);
    const FwSpan span{uint32_t(entries.size()), uint32_t(active.size())};
    entries.insert(entries.end(), active.begin(), active.end());
    if (entries.size() > max_entries)
      throw std::length_error("firewall: the rules need more than " + std::to_string(max_entries) +
                              " interval list entries (overlapping address or port ranges); split the rule set");
    piece(at, last, span);
  }
}

}  // namespace

void FirewallTables::compile(const std::vector<Rule>& rules, const FirewallLimits& lim, const ActionOrder& action_order) {
  *this = FirewallTables{};
  // Per family and side: single addresses → entries, ranges → (range, entry).
  std::map<u128, std::vector<uint32_t>> singles[2][2];
  std::vector<std::pair<Range, uint32_t>> ranges[2][2];
  std::vector<uint32_t> wild[2];
  std::vector<Range> sets[2][2];  // this rule's [family][src/dst]
  // Alert order: the action order (Suricata's default: pass, drop, reject, alert), then priority
  // (lower first), then file order.
  auto action_rank = [&](RuleAction a) { return action_order.rank(a); };
  std::vector<uint32_t> order(rules.size()), rank(rules.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return std::make_pair(action_rank(rules[a].action), rule_priority(rules[a])) <
           std::make_pair(action_rank(rules[b].action), rule_priority(rules[b]));
  });
  for (uint32_t k = 0; k < order.size(); ++k) rank[order[k]] = k;
  for (size_t ri = 0; ri < rules.size(); ++ri) {
    const Rule& r = rules[ri];
    FwRule fr{};
    fr.sid = r.sid;
    fr.rank = rank[ri];
    fr.action = fw_action(r.action);
    fr.proto = r.proto;
    fr.flags = uint8_t((r.sport.items.empty() ? kFwSportAny : 0) | (r.dport.items.empty() ? kFwDportAny : 0) |
                       (r.bidirectional ? kFwBidir : 0) |
                       (!like_ip_only_addresses(r) && !r.flowbits_change ? kFwFirstOnly : 0));
    for (int f = 0; f < 2; ++f) {
      const int fam = f ? 6 : 4;
      sets[f][0] = addr_ranges(r.src, fam);
      sets[f][1] = addr_ranges(r.dst, fam);
      for (int side = 0; side < 2; ++side) {
        fr.addr[f][side] = FwSpan{uint32_t(intervals_.size()), uint32_t(sets[f][side].size())};
        for (const Range& x : sets[f][side]) intervals_.push_back(FwInterval{from_u128(x.first), from_u128(x.second)});
      }
    }
    const PortSet* ps[2] = {&r.sport, &r.dport};
    for (int side = 0; side < 2; ++side) {
      const auto pr = port_ranges(*ps[side]);
      fr.port[side] = FwSpan{uint32_t(ports_.size()), uint32_t(pr.size())};
      for (auto& x : pr) ports_.push_back(FwPortRange{x.first, x.second});
    }
    rules_.push_back(fr);
    for (uint32_t sw = 0; sw < (r.bidirectional ? 2u : 1u); ++sw) {
      const uint32_t entry = uint32_t(ri) * 2 + sw;
      for (int f = 0; f < 2; ++f) {
        const std::vector<Range>& s = sets[f][sw];      // what the packet's source must be in
        const std::vector<Range>& d = sets[f][1 - sw];  // its destination
        if (s.empty() || d.empty()) continue;           // no packet of this family matches
        const u128 max = family_max(f ? 6 : 4);
        const bool s_full = s.size() == 1 && s[0].first == 0 && s[0].second == max;
        const bool d_full = d.size() == 1 && d[0].first == 0 && d[0].second == max;
        if (s_full && d_full) {
          wild[f].push_back(entry);
          continue;
        }
        const int side = range_size(s) <= range_size(d) ? 0 : 1;
        for (const Range& x : side == 0 ? s : d) {
          if (x.first == x.second) singles[f][side][x.first].push_back(entry);
          else ranges[f][side].push_back({x, entry});
        }
      }
    }
  }
  for (int f = 0; f < 2; ++f) {
    for (int side = 0; side < 2; ++side) {
      // Exact-match hash: open addressing at load factor <= 1/2.
      const auto& sm = singles[f][side];
      if (!sm.empty()) {
        uint32_t cap = 2;
        while (cap < 2 * sm.size()) cap <<= 1;
        auto& h = hash_[f][side];
        h.assign(cap, FwHashSlot{});
        for (auto& [key, list] : sm) {
          const U128 k = from_u128(key);
          uint32_t at = uint32_t(fw_hash(k)) & (cap - 1);
          while (h[at].list.n) at = (at + 1) & (cap - 1);
          h[at].key = k;
          h[at].list = FwSpan{uint32_t(entries_.size()), uint32_t(list.size())};
          entries_.insert(entries_.end(), list.begin(), list.end());
          ++hash_keys_;
        }
      }
      // Elementary intervals: cut at every start and every end + 1, then list what covers each piece.
      elementary_pieces(ranges[f][side], entries_, lim.max_list_entries, [&](u128 first, u128 last, FwSpan list) {
        elem_[f][side].push_back(FwElementary{FwInterval{from_u128(first), from_u128(last)}, list});
        ++elementary_;
      });
    }
    // Entries with any address on both sides: by the packet's destination ports when they name
    // some, else by its source ports, else the wildcard list.
    wildcard_entries_ += uint32_t(wild[f].size());
    std::vector<std::pair<Range, uint32_t>> by_port[2];
    std::vector<uint32_t> rest;
    for (uint32_t entry : wild[f]) {
      const FwRule& r = rules_[entry >> 1];
      const uint32_t sw = entry & 1;
      const bool sany = r.flags & (sw ? kFwDportAny : kFwSportAny), dany = r.flags & (sw ? kFwSportAny : kFwDportAny);
      const int side = !dany ? 1 : !sany ? 0 : -1;  // which port of the packet
      if (side < 0) {
        rest.push_back(entry);
        continue;
      }
      const FwSpan ps = r.port[side == 0 ? sw : 1 - sw];
      for (uint32_t k = 0; k < ps.n; ++k) by_port[side].push_back({{ports_[ps.off + k].lo, ports_[ps.off + k].hi}, entry});
    }
    for (int side = 0; side < 2; ++side)
      elementary_pieces(by_port[side], entries_, lim.max_list_entries, [&](u128 first, u128 last, FwSpan list) {
        by_port_[f][side].push_back(FwPortPiece{uint16_t(first), uint16_t(last), list});
      });
    wild[f] = rest;
    wildcard_[f] = FwSpan{uint32_t(entries_.size()), uint32_t(wild[f].size())};
    entries_.insert(entries_.end(), wild[f].begin(), wild[f].end());
  }
}

namespace {
// Places host vectors as they are (the CPU backend and tests read them in place).
class InPlace final : public TableMemory {
 public:
  const void* place(const void* host, size_t) override { return host; }
};
}  // namespace

FirewallView FirewallTables::place(TableMemory& mem) const {
  FirewallView v{};
  v.rules = mem.place(rules_);
  v.rule_n = uint32_t(rules_.size());
  v.intervals = mem.place(intervals_);
  v.ports = mem.place(ports_);
  v.entries = mem.place(entries_);
  for (int f = 0; f < 2; ++f) {
    for (int side = 0; side < 2; ++side) {
      FwSideIndex& ix = v.side[f][side];
      ix.hash = mem.place(hash_[f][side]);
      ix.hash_mask = hash_[f][side].empty() ? 0 : uint32_t(hash_[f][side].size() - 1);
      ix.elem = mem.place(elem_[f][side]);
      ix.elem_n = uint32_t(elem_[f][side].size());
      v.by_port[f][side] = FwPortIndex{mem.place(by_port_[f][side]), uint32_t(by_port_[f][side].size())};
    }
    v.wildcard[f] = wildcard_[f];
  }
  return v;
}

FirewallView FirewallTables::host_view() const {
  InPlace mem;
  return place(mem);
}

uint64_t FirewallTables::bytes() const {
  uint64_t n = rules_.size() * sizeof(FwRule) + intervals_.size() * sizeof(FwInterval) +
               ports_.size() * sizeof(FwPortRange) + entries_.size() * sizeof(uint32_t);
  for (int f = 0; f < 2; ++f)
    for (int s = 0; s < 2; ++s)
      n += hash_[f][s].size() * sizeof(FwHashSlot) + elem_[f][s].size() * sizeof(FwElementary) +
           by_port_[f][s].size() * sizeof(FwPortPiece);
  return n;
}

}  // namespace gaspp
