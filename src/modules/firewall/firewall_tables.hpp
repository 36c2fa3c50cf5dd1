// modules/firewall/firewall_tables.hpp — the firewall's compiled rule tables and the per-packet
// match, written once for both backends.
//
// Every address set of a rule is compiled per family into sorted, disjoint, merged intervals of
// 128-bit numbers (IPv4 as 0..2^32-1), negations applied; port sets into sorted disjoint ranges.
// A rule (or, for `<>`, each of its two directions: an "entry" is rule*2 + swapped) is indexed per
// family under one address side, the one that covers fewer addresses:
//   * single addresses of that side go to an exact-match hash table (open addressing, linear
//     probing, key → list of entries);
//   * ranges go to a table of elementary intervals (the ranges of all entries cut where any begins
//     or ends), sorted, found by binary search, each with the list of entries covering it;
//   * an entry with `any` on both sides is indexed by port instead: by the ports the packet's
//     destination port must be in when it names some (elementary port ranges, binary search),
//     else by its source ports, else it goes to the family's wildcard list. (10k random rules have
//     hundreds of such entries; scanning them all for every packet cost more than the rest.)
// A packet looks up its source address in the source-side tables and its destination address in
// the destination-side ones, its ports in the port tables, adds the wildcard list, and checks each
// candidate entry in full (protocol, both address sets, ports). An entry is listed under one side
// only and an address or port falls in at most one piece of a set, so no candidate comes twice.
//
// Result (FwMatch): whether a pass rule matched, the strongest action, and the matched non-pass
// rules (up to kFwMaxAlerts, Suricata's packet_alert_max; more are counted as overflow), in rule
// order.
#pragma once
#include <cstdint>
#include <type_traits>

#include "gaspp/hd.hpp"

namespace gaspp {

struct U128 {
  uint64_t hi, lo;
};
GASPP_HD GASPP_FORCEINLINE bool u128_less(const U128& a, const U128& b) { return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo); }
GASPP_HD GASPP_FORCEINLINE bool u128_le(const U128& a, const U128& b) { return !u128_less(b, a); }
GASPP_HD GASPP_FORCEINLINE bool u128_eq(const U128& a, const U128& b) { return a.hi == b.hi && a.lo == b.lo; }

GASPP_HD GASPP_FORCEINLINE uint32_t bswap32(uint32_t x) {
  return (x >> 24) | ((x >> 8) & 0xff00u) | ((x << 8) & 0xff0000u) | (x << 24);
}
// An address as the decoder stores it (network-order bytes packed four to a word) as a number.
GASPP_HD GASPP_FORCEINLINE U128 addr_number(const uint32_t* w, uint8_t family) {
  if (family == 4) return U128{0, bswap32(w[0])};
  return U128{(uint64_t(bswap32(w[0])) << 32) | bswap32(w[1]), (uint64_t(bswap32(w[2])) << 32) | bswap32(w[3])};
}

struct FwInterval {
  U128 lo, hi;  // inclusive
};
struct FwPortRange {
  uint16_t lo, hi;
};
struct FwSpan {
  uint32_t off, n;  // into the table's array
};

enum FwAction : uint8_t { kFwAlert = 0, kFwDrop = 1, kFwReject = 2, kFwPass = 3 };
// kFwFirstOnly: Suricata's IP-only engine inspects the rule on the first packet of each direction of
// a flow only (and on every packet without a flow): no negated address, no IPv6 range, flowbits
// set only (FirewallModule::on_ip).
enum FwRuleFlags : uint8_t { kFwSportAny = 1, kFwDportAny = 2, kFwBidir = 4, kFwFirstOnly = 8 };

struct FwRule {
  FwSpan addr[2][2];   // [family 0: v4, 1: v6][0 src, 1 dst] into intervals
  FwSpan port[2];      // [0 sport, 1 dport] into ports
  uint32_t sid;
  uint32_t rank;       // alert order: the action order (rules.hpp ActionOrder), then priority, then file order
  uint8_t action;      // FwAction
  uint8_t proto;       // 0: any IP protocol
  uint8_t flags;       // FwRuleFlags
  uint8_t pad_ = 0;
};

struct FwHashSlot {
  U128 key;
  FwSpan list;         // list.n == 0: empty slot
  uint32_t pad_[2] = {};
};
struct FwElementary {
  FwInterval range;
  FwSpan list;
};

struct FwPortPiece {
  uint16_t lo, hi;     // inclusive
  FwSpan list;
};
// Entries with any address on both sides, by one port of the packet: elementary port ranges.
struct FwPortIndex {
  const FwPortPiece* piece;
  uint32_t n;
};

// One family's index of one side: exact hash + elementary intervals.
struct FwSideIndex {
  const FwHashSlot* hash;
  uint32_t hash_mask;    // slots - 1 (0 with no table)
  uint32_t elem_n;
  const FwElementary* elem;
};

struct FirewallView {
  const FwRule* rules;
  uint32_t rule_n;
  const FwInterval* intervals;
  const FwPortRange* ports;
  const uint32_t* entries;   // lists: rule * 2 + swapped
  FwSideIndex side[2][2];    // [family][0 src, 1 dst]
  FwPortIndex by_port[2][2];  // [family][0 the packet's source port, 1 its destination port]
  FwSpan wildcard[2];        // [family]: any address, any port
};
static_assert(std::is_trivially_copyable_v<FirewallView>, "FirewallView is a kernel argument");

constexpr int kFwMaxAlerts = 15;

struct FwMatch {
  bool pass = false;
  uint32_t pass_rank = 0xffffffffu;  // the first pass rule matched (FwRule::rank)
  uint32_t drop_rank = 0xffffffffu;  // the first drop or reject rule matched
  int8_t action = -1;          // strongest non-pass action matched, -1: none
  uint8_t n = 0;               // matched non-pass rules kept
  uint32_t overflow = 0;       // matched beyond kFwMaxAlerts
  uint32_t rule[kFwMaxAlerts]; // rule indices, in alert order (FwRule::rank): the first matches kept
};

// What the firewall reads of a packet.
struct FwPacket {
  U128 addr[2];      // src, dst
  uint8_t family;    // 4 or 6
  uint8_t proto;
  bool has_ports;
  uint16_t port[2];  // sport, dport
};

GASPP_HD GASPP_FORCEINLINE uint64_t fw_hash(const U128& k) { return mix64(k.hi * 0x9e3779b97f4a7c15ull ^ k.lo); }

GASPP_HD GASPP_FORCEINLINE bool fw_in_intervals(const FwInterval* v, FwSpan s, const U128& x) {
  uint32_t lo = 0, hi = s.n;  // first interval with hi >= x
  while (lo < hi) {
    const uint32_t mid = (lo + hi) / 2;
    if (u128_less(v[s.off + mid].hi, x)) lo = mid + 1;
    else hi = mid;
  }
  return lo < s.n && u128_le(v[s.off + lo].lo, x);
}

GASPP_HD GASPP_FORCEINLINE bool fw_in_ports(const FwPortRange* v, FwSpan s, uint16_t p) {
  for (uint32_t k = 0; k < s.n; ++k)  // port sets are short
    if (v[s.off + k].lo <= p && p <= v[s.off + k].hi) return true;
  return false;
}

GASPP_HD GASPP_FORCEINLINE bool fw_entry_matches(const FirewallView& fw, uint32_t entry, const FwPacket& p) {
  const FwRule& r = fw.rules[entry >> 1];
  const int sw = int(entry & 1);  // swapped: the rule's dst side is the packet's source
  if (r.proto && r.proto != p.proto) return false;
  const int f = p.family == 6 ? 1 : 0;
  if (!fw_in_intervals(fw.intervals, r.addr[f][sw], p.addr[0])) return false;
  if (!fw_in_intervals(fw.intervals, r.addr[f][1 - sw], p.addr[1])) return false;
  const bool sany = r.flags & (sw ? kFwDportAny : kFwSportAny), dany = r.flags & (sw ? kFwSportAny : kFwDportAny);
  if (sany && dany) return true;
  if (!p.has_ports) return false;  // a port condition needs a packet with ports
  if (!sany && !fw_in_ports(fw.ports, r.port[sw], p.port[0])) return false;
  if (!dany && !fw_in_ports(fw.ports, r.port[1 - sw], p.port[1])) return false;
  return true;
}

GASPP_HD GASPP_FORCEINLINE void fw_consider(const FirewallView& fw, uint32_t entry, const FwPacket& p, FwMatch& m) {
  if (!fw_entry_matches(fw, entry, p)) return;
  // A `<>` rule that matches both ways counts once: its swapped entry yields to the direct one
  // (the list may be full, so it could not be found there to skip).
  if ((entry & 1) && fw_entry_matches(fw, entry & ~1u, p)) return;
  const uint32_t rule = entry >> 1;
  const uint8_t act = fw.rules[rule].action;
  const uint32_t rank = fw.rules[rule].rank;
  if (act == kFwPass) {
    m.pass = true;
    if (rank < m.pass_rank) m.pass_rank = rank;
    return;
  }
  if ((act == kFwDrop || act == kFwReject) && rank < m.drop_rank) m.drop_rank = rank;
  // Keep the list in alert order, as Suricata's alert queue: when full, a match ranked after every
  // kept one is the one left out.
  uint32_t at = m.n;
  while (at > 0 && fw.rules[m.rule[at - 1]].rank > rank) --at;
  if (int8_t(act) > m.action) m.action = int8_t(act);
  if (m.n == kFwMaxAlerts) {
    if (at == kFwMaxAlerts) {
      ++m.overflow;
      return;
    }
    ++m.overflow;  // the last one falls off
    --m.n;
  }
  for (uint32_t k = m.n; k > at; --k) m.rule[k] = m.rule[k - 1];
  m.rule[at] = rule;
  ++m.n;
}

GASPP_HD GASPP_FORCEINLINE void fw_consider_list(const FirewallView& fw, FwSpan s, const FwPacket& p, FwMatch& m) {
  for (uint32_t k = 0; k < s.n; ++k) fw_consider(fw, fw.entries[s.off + k], p, m);
}

// Calls visit(FwSpan) for each list of entries the packet's addresses and ports select (the
// candidates; each still needs fw_entry_matches). An entry is listed under one side only and an
// address or port falls in one piece of a set, so no entry comes twice.
template <class Visit>
GASPP_HD GASPP_FORCEINLINE void fw_for_each_list(const FirewallView& fw, const FwPacket& p, Visit&& visit) {
  const int f = p.family == 6 ? 1 : 0;
  for (int side = 0; side < 2; ++side) {
    const FwSideIndex& ix = fw.side[f][side];
    const U128& a = p.addr[side];
    if (ix.hash_mask) {
      for (uint32_t h = uint32_t(fw_hash(a)) & ix.hash_mask;; h = (h + 1) & ix.hash_mask) {
        const FwHashSlot& s = ix.hash[h];
        if (s.list.n == 0) break;
        if (u128_eq(s.key, a)) {
          visit(s.list);
          break;
        }
      }
    }
    uint32_t lo = 0, hi = ix.elem_n;  // first elementary interval with hi >= a
    while (lo < hi) {
      const uint32_t mid = (lo + hi) / 2;
      if (u128_less(ix.elem[mid].range.hi, a)) lo = mid + 1;
      else hi = mid;
    }
    if (lo < ix.elem_n && u128_le(ix.elem[lo].range.lo, a)) visit(ix.elem[lo].list);
  }
  if (p.has_ports)  // an entry in these names ports, which a packet without them never matches
    for (int side = 0; side < 2; ++side) {
      const FwPortIndex& ix = fw.by_port[f][side];
      const uint16_t port = p.port[side];
      uint32_t lo = 0, hi = ix.n;  // first piece with hi >= port
      while (lo < hi) {
        const uint32_t mid = (lo + hi) / 2;
        if (ix.piece[mid].hi < port) lo = mid + 1;
        else hi = mid;
      }
      if (lo < ix.n && ix.piece[lo].lo <= port) visit(ix.piece[lo].list);
    }
  visit(fw.wildcard[f]);
}

GASPP_HD GASPP_FORCEINLINE void firewall_match(const FirewallView& fw, const FwPacket& p, FwMatch& m) {
  fw_for_each_list(fw, p, [&](FwSpan s) { fw_consider_list(fw, s, p, m); });
}

}  // namespace gaspp
