// modules/detect/uint_cond.hpp — Suricata's integer condition (its detect/uint.rs): the argument
// of flow.pkts, flow.bytes, stream_size, vlan.id and vlan.layers, parsed on the host and matched
// where the signatures run, and the conditions of those keywords (IntCond).
//
// Forms (parse_uint_cond): N or =N, !N or !=N, <N, <=N, >N, >=N, N-M or N<>M (N < x < M; M must
// exceed N by more than one), !N-M (outside it), &MASK=V and &MASK!=V (x & MASK compared with V);
// a number is decimal (with an optional kb/kib/mb/mib/gb/gib unit, as Suricata's) or 0xHEX. A
// value above the keyword's maximum is an error, as Suricata refuses it.
#pragma once
#include <cstdint>
#include <string>
#include <type_traits>

#include "gaspp/flow.hpp"
#include "gaspp/hd.hpp"

namespace gaspp {

enum UintMode : uint8_t { kUintNone, kUintEq, kUintNe, kUintLt, kUintLe, kUintGt, kUintGe, kUintRange, kUintNegRange, kUintMask, kUintNegMask };

struct UintCond {
  uint8_t mode = kUintNone;  // UintMode
  uint8_t pad_[7] = {};
  uint64_t a = 0, b = 0;     // the value (a); a range's ends, a mask and its value (a, b)
};
static_assert(std::is_trivially_copyable_v<UintCond>, "UintCond is a table entry");

GASPP_HD GASPP_FORCEINLINE bool uint_cond_holds(const UintCond& c, uint64_t x) {
  switch (c.mode) {
    case kUintEq: return x == c.a;
    case kUintNe: return x != c.a;
    case kUintLt: return x < c.a;
    case kUintLe: return x <= c.a;
    case kUintGt: return x > c.a;
    case kUintGe: return x >= c.a;
    case kUintRange: return x > c.a && x < c.b;
    case kUintNegRange: return x <= c.a || x >= c.b;
    case kUintMask: return (x & c.a) == c.b;
    case kUintNegMask: return (x & c.a) != c.b;
    default: return true;
  }
}

// A signature's integer condition on the packet's flow or VLAN tags (Signature::int_conds):
//   flow.pkts, flow.bytes   the flow's packets / bytes in a direction (to server, to client, either
//                           or both), counting this packet: they make a signature a packet one
//   stream_size             a TCP session side's next_seq - isn (client: the to-server side), at the
//                           packet (or the packet that delivered a stream piece)
//   vlan.id                 the packet's VLAN ids: any (default), all, all_or_absent, or_absent,
//                           the one at an index (negative from the innermost; oob_or: also when
//                           there is none), as Suricata's multi-integers
//   vlan.layers             how many VLAN tags the packet has
//   flow.age                whole seconds from the flow's first packet to this one (a packet one)
enum IntCondKey : uint8_t { kIcFlowPkts, kIcFlowBytes, kIcStreamSize, kIcVlanId, kIcVlanLayers, kIcFlowAge };
enum IntCondDir : uint8_t { kIcToServer, kIcToClient, kIcEither, kIcBoth };
enum IntCondIndex : uint8_t { kIcAny, kIcAll, kIcAllOrAbsent, kIcOrAbsent, kIcAt };
struct IntCond {
  uint8_t key = kIcFlowPkts;  // IntCondKey
  uint8_t dir = kIcToServer;  // IntCondDir (flow.*, stream_size)
  uint8_t index = kIcAny;     // IntCondIndex (vlan.id)
  int8_t at = 0;              // kIcAt: the index
  uint8_t oob_or = 0;         // kIcAt: holds when the index is out of range
  uint8_t pad_[3] = {};
  UintCond c;
};
static_assert(std::is_trivially_copyable_v<IntCond>, "IntCond is a table entry");

// Suricata's multi-integer over n values (vlan.id's tags, dns.rrtype's types): any of them
// (default), all (none: no match), all_or_absent, or_absent, or the one at an index (negative from
// the last; out of range: no match, oob_or: match).
template <class V>
GASPP_HD inline bool uint_array_holds(const IntCond& ic, const V* v, uint32_t n) {
  switch (ic.index) {
    case kIcAt: {
      const int32_t i = ic.at < 0 ? int32_t(n) + ic.at : ic.at;
      if (i < 0 || uint32_t(i) >= n) return ic.oob_or != 0;
      return uint_cond_holds(ic.c, v[i]);
    }
    case kIcAll:
    case kIcAllOrAbsent:
      for (uint32_t i = 0; i < n; ++i)
        if (!uint_cond_holds(ic.c, v[i])) return false;
      return n > 0 || ic.index == kIcAllOrAbsent;
    default:  // any, or_absent
      for (uint32_t i = 0; i < n; ++i)
        if (uint_cond_holds(ic.c, v[i])) return true;
      return n == 0 && ic.index == kIcOrAbsent;
  }
}

// What the conditions read: the flow as the packet left it (null: no flow, or not known), whether
// the packet is TCP, its VLAN ids (outermost first) and how many there are.
GASPP_HD inline bool int_cond_holds(const IntCond& ic, const FlowPosAt* pos, bool tcp, const uint16_t* vlan, uint32_t vlan_n) {
  if (ic.key == kIcVlanLayers) return uint_cond_holds(ic.c, vlan_n);
  if (ic.key == kIcVlanId) return uint_array_holds(ic, vlan, vlan_n);
  if (!pos) return false;
  if (ic.key == kIcFlowAge) return uint_cond_holds(ic.c, pos->age_s);
  uint64_t x[2];
  if (ic.key == kIcStreamSize) {
    if (!tcp || !pos->tcp_session) return false;
    x[0] = pos->stream[0];
    x[1] = pos->stream[1];
  } else if (ic.key == kIcFlowPkts) {
    x[0] = pos->pkts[0];
    x[1] = pos->pkts[1];
  } else {
    x[0] = pos->bytes[0];
    x[1] = pos->bytes[1];
  }
  switch (ic.dir) {
    case kIcToServer: return uint_cond_holds(ic.c, x[0]);
    case kIcToClient: return uint_cond_holds(ic.c, x[1]);
    case kIcEither: return uint_cond_holds(ic.c, x[0]) || uint_cond_holds(ic.c, x[1]);
    default: return uint_cond_holds(ic.c, x[0]) && uint_cond_holds(ic.c, x[1]);
  }
}

// Parses `text` (leading and trailing spaces allowed) as above; "" or why it is not one.
std::string parse_uint_cond(const std::string& text, uint64_t max, UintCond& out);
// The index of a multi-integer (uint_array_holds), after the condition's comma: any, all,
// all_or_absent, or_absent, N or oob_or N (N from -limit to limit - 1); "" or why it is not one.
std::string parse_uint_index(const std::string& text, int limit, IntCond& out);

}  // namespace gaspp
