// modules/detect/detect_tables.hpp — the signatures compiled for matching: flat, trivially
// copyable tables that a View points to (host memory on the CPU backend, device copies on CUDA).
//
// Signatures are stored in Suricata's evaluation order (action, flowbits role, priority, load
// order: detect_compile.cpp), so a signature's index is its rank, and one packet's matches handed
// to the host sort in the order Suricata evaluates them. Each signature's payload list is a run of
// DetOp in `ops`; content bytes live in `bytes` (lower-cased for nocase). Its header (protocol,
// addresses, ports) is entry 2*i (and 2*i+1 for `<>`) of the firewall's header tables `hdr`.
// Prefilter: a signature with a fast pattern is a candidate for a buffer only when its pattern
// occurs there (pattern id -> signatures: pat_sigs[pat_sig_off[id] .. pat_sig_off[id+1])); those
// without one are listed in nofp, their headers indexed by address and port as the firewall's
// (nofp_hdr): a packet's candidates among them are those its addresses and ports select.
#pragma once
#include <cstdint>
#include <type_traits>

#include "gaspp/hd.hpp"
#include "modules/detect/prefilter.hpp"
#include "modules/detect/prefilter_ac.hpp"
#include "modules/detect/regex.hpp"
#include "modules/detect/uint_cond.hpp"
#include "modules/firewall/firewall_tables.hpp"

namespace gaspp {

// kOpBase64 (base64_decode): decodes and inspects the base64_data list (its DetSig in the host's
// table, pat_off); host only (application-layer signatures).
// kOpByteMath: byte_math (cmp: ByteMathOper, value / value_var: rvalue, var: the result). Same order
// as SigOpType.
// kOpDataset: a dataset command (pat_off: its id in the host's Datasets); host only (sticky buffers).
enum DetOpType : uint8_t { kOpContent, kOpPcre, kOpIsdataat, kOpByteTest, kOpByteJump, kOpByteExtract, kOpBase64, kOpByteMath, kOpDataset };
// byte_math's operators (SigOp::cmp and DetOp::cmp of a byte_math).
enum ByteMathOper : uint8_t { kMathAdd, kMathSub, kMathMul, kMathDiv, kMathShl, kMathShr };

enum DetOpFlags : uint32_t {
  kOpNegated = 1u << 0,
  kOpNocase = 1u << 1,
  kOpRelative = 1u << 2,     // content: distance or within; others: relative
  kOpEndsWith = 1u << 3,
  kOpDepth = 1u << 4,
  kOpOffset = 1u << 5,
  kOpDistance = 1u << 6,
  kOpWithin = 1u << 7,
  kOpWithinNext = 1u << 8,   // what follows depends on where this content ended: retry other occurrences
  kOpRelativeNext = 1u << 9, // the next option is relative to this one
  kOpLast = 1u << 10,
  kOpLittle = 1u << 11,
  kOpMask = 1u << 12,
  kOpFromBeginning = 1u << 13,
  kOpFromEnd = 1u << 14,
};

struct DetOp {
  uint8_t type;        // DetOpType
  uint8_t nbytes;      // byte_*
  uint8_t base;        // byte_*: 0 binary, else the string base
  uint8_t cmp;         // byte_test: SigCmp; byte_math: ByteMathOper
  uint32_t flags;      // DetOpFlags
  int32_t offset, depth, distance, within;  // content; isdataat: offset = N; byte_*: offset; base64: offset, bytes
  int8_t offset_var, depth_var, distance_var, within_var;  // byte_extract variables, -1: the number
  int8_t value_var, var;                                    // byte_test value; byte_extract target
  uint8_t mask_shift;
  int8_t nbytes_var;           // byte_test, byte_jump: the byte count is this variable's (-1: nbytes)
  uint32_t pat_off, pat_len;   // content: its bytes in DetectView::bytes; pcre: id in the host's table;
                               // base64: its base64_data list in the host's table (~0u: none)
  uint64_t value, mask;
  uint32_t multiplier, align;
  int32_t post_offset;
  uint32_t rx_prog;            // pcre: its program for the device's search + 1 (regex.hpp); 0: PCRE2 only
};
static_assert(std::is_trivially_copyable_v<DetOp>, "DetOp is a table entry");

// A numeric condition (dsize, itype, icode): kind 0 none, 1 compare (cmp: SigCmp), 2 range
// (lo < x < hi); neg inverts.
struct DetCond {
  uint8_t kind, cmp, neg, pad_;
  uint16_t lo, hi;
};
GASPP_HD GASPP_FORCEINLINE bool det_cond_holds(const DetCond& c, int64_t x) {
  if (!c.kind) return true;
  bool m;
  if (c.kind == 2) {
    m = x > c.lo && x < c.hi;
  } else {
    switch (c.cmp) {
      case 0: m = x < c.lo; break;
      case 1: m = x > c.lo; break;
      case 5: m = x <= c.lo; break;
      case 6: m = x >= c.lo; break;
      default: m = x == c.lo; break;
    }
  }
  return m != bool(c.neg);
}

// TCP flags (Suricata's `flags`): the packet's flags outside `ignore` compared with `want`:
// mode 0 exactly, 1 all of them (+), 2 any of them (*), 3 not all of them (!).
struct DetFlags {
  uint8_t on, mode;
  uint16_t want, ignore;
};
GASPP_HD GASPP_FORCEINLINE bool det_flags_hold(const DetFlags& f, uint16_t flags) {
  if (!f.on) return true;
  const uint16_t x = flags & uint16_t(~f.ignore) & 0xffu;
  switch (f.mode) {
    case 1: return (x & f.want) == f.want;
    case 2: return (x & f.want) != 0;
    case 3: return (x & f.want) != f.want;
    default: return x == f.want;
  }
}

// What a signature's match decides for the packet or flow where the match is found (DetSig::verdict).
// Only a signature whose match is final there is marked drop or pass: one that reads flowbits or
// flowints, or has a pcre that did not compile for the device (regex_compile.hpp), is decided on the
// host, after the verdicts, and only alerts (drop) or ends the packet's alerts (pass).
enum DetVerdict : uint8_t {
  kDetDrop = 1,       // drop or reject
  kDetPass = 2,       // pass
  kDetFlowScope = 4,  // IP-only: a match decides the flow (others: the packet, or the flow on a stream match)
  // A match alerts for sure: decided where it is found (as kDetDrop), no noalert, threshold,
  // suppression or pass. The packet is then marked alerted (kVerdictAlerted), so that its alert
  // carries the flow's counters at it and the flow event says `alerted`.
  kDetAlerts = 8,
  // Suricata's IP-only engine (SIG_TYPE_IPONLY): the signature is inspected on the first packet of
  // each direction of a flow (FLOW_PKT_TOSERVER_FIRST / TOCLIENT_FIRST, kPktDirFirst) and on every
  // packet without a flow. Like-IP-only signatures (a negated address, an IPv6 range) are packet
  // signatures: inspected on every packet, their actions still the flow's.
  kDetFirstOnly = 16,
};

struct DetSig {
  uint32_t op_off;
  uint16_t op_n;
  uint8_t mode;        // SigMode bits (signature.hpp)
  uint8_t proto;       // 0: any IP protocol
  uint8_t flow_dir;    // 1 to_server, 2 to_client
  uint8_t flow_est;    // 1 established, 2 not_established
  uint8_t verdict;     // DetVerdict bits: what a match decides where it is found
  uint8_t bidir;
  DetCond dsize, itype, icode;
  DetFlags flags;
  uint32_t sid;
  // Packet header conditions: ttl, tcp.mss (absent option: no match), ip_proto; seq, ack and
  // window (hdr bits DetHdrBits) on TCP packets.
  DetCond ttl, mss, ip_proto;
  uint32_t seq, ack;
  uint16_t win;
  uint8_t hdr;
  uint8_t decode_event;  // DecodeEvent the packet must have raised (decode-event); 0: none asked
  DetCond icmp_id, icmp_seq;  // of an ICMP message that has them (DetectModule::icmp_id_seq)
  uint16_t ipopts;            // IpOptBits the packet's IPv4 options must all include
  uint16_t ic_n;              // integer conditions (flow.pkts, stream_size, vlan.id, ...): DetectView::int_conds
  uint32_t ic_off;            //   [ic_off, ic_off + ic_n)
  uint8_t csum_valid, csum_invalid;  // DetCsumBits: checksums that must be right / wrong
  // Options on the packet's header buffers (ipv4.hdr, ...): up to two lists, each on buffer hb[j]
  // (DetHdrBuf; kHbNone: no list), ops [hop_off[j], hop_off[j] + hop_n[j]), evaluated after the
  // payload list with its variables (det_packet_lists).
  uint8_t hb[2];
  uint16_t hop_n[2];
  uint32_t hop_off[2];
};
// The packet's header buffers, in signature.hpp's kBufIpv4Hdr.. order.
enum DetHdrBuf : uint8_t { kHbNone, kHbIpv4, kHbIpv6, kHbTcp, kHbUdp, kHbIcmpv4, kHbIcmpv6, kHbIpSrc, kHbIpDst };
enum DetHdrBits : uint8_t { kHdrSeq = 1, kHdrAck = 2, kHdrWin = 4, kHdrWinNeg = 8 };
// The checksum keywords (Suricata's ipv4-csum, tcpv4-csum, ...: valid or invalid), bits of
// DetSig::csum_valid / csum_invalid (Signature's too).
enum DetCsumBits : uint8_t {
  kCkIpv4 = 1, kCkTcpv4 = 2, kCkTcpv6 = 4, kCkUdpv4 = 8, kCkUdpv6 = 16, kCkIcmpv4 = 32, kCkIcmpv6 = 64,
};
static_assert(std::is_trivially_copyable_v<DetSig>, "DetSig is a table entry");

constexpr uint32_t kDetMaxOps = 64;   // options in one payload list (more: the rule is skipped)
constexpr uint32_t kDetMaxVars = 16;  // byte_extract variables of one rule
// Suricata's detect.inspection-recursion-limit: steps of one chain's evaluation before it gives up.
constexpr uint32_t kDetRecursionLimit = 3000;

// A CPU-only helper the View carries as an opaque host pointer (prefilter and PCRE2; null where
// the tables run on a device).
struct DetectHostMatchers;

struct DetectView {
  FirewallView hdr;
  const DetSig* sigs;
  uint32_t sig_n;
  const DetOp* ops;
  const uint8_t* bytes;
  const uint32_t* pat_sig_off;   // pat_n + 1 offsets
  const uint32_t* pat_sigs;
  uint32_t pat_n;
  const uint32_t* nofp;          // signatures without a fast pattern, in rank order
  uint32_t nofp_n;
  FirewallView nofp_hdr;         // their headers, indexed (rule k is signature nofp[k])
  uint32_t stream_carry;         // bytes of a direction's stream kept to match across pieces
  PrefilterView pf;              // the hashed prefilter (the device's; the CPU's with prefilter=hash)
  AcView ac;                     // Aho-Corasick over the same patterns (matcher=ac)
  uint8_t matcher_ac;            // the device's matcher: 0 the hashed filter, 1 Aho-Corasick
  uint8_t host_hash_prefilter;   // CPU backend: use pf instead of Hyperscan
  uint8_t host_defer_pcre;       // CPU backend: run pcre as the device does (its programs, else the host handler)
  uint8_t host_datasets;         // test datasets here (the host's re-checks and transactions); 0: answer needs-host
  RegexView rx;                  // the pcres that compiled for the device's search
  const IntCond* int_conds;      // the signatures' integer conditions (DetSig::ic_off)
  const DetectHostMatchers* host;
};
static_assert(std::is_trivially_copyable_v<DetectView>, "DetectView is a kernel argument");

// The device's multi-literal matcher over buf (the CPU's with prefilter=hash): hit(pattern id,
// start) for each occurrence. `lanes` threads may share one buffer, each calling this with its
// `lane` (0..lanes-1): together they report every occurrence once (the hashed filter takes every
// lanes-th start position; Aho-Corasick cuts the buffer into lanes parts, each read from the
// longest pattern's length before it).
template <class F>
GASPP_HD GASPP_FORCEINLINE void det_match_patterns(const DetectView& v, const uint8_t* buf, uint32_t len, uint32_t lane,
                                                   uint32_t lanes, F&& hit) {
  if (!v.pat_n || !len) return;
  if (v.matcher_ac) {
    const uint32_t part = (len + lanes - 1) / lanes;
    const uint32_t lo = lane * part < len ? lane * part : len, hi = lo + part < len ? lo + part : len;
    const uint32_t back = v.ac.max_len ? v.ac.max_len - 1 : 0;
    if (lo < hi) ac_scan_range(v.ac, v.pf, buf, lo > back ? lo - back : 0, lo, hi, hit);
  } else {
    for (uint32_t i = lane; i < len; i += lanes) prefilter_at(v.pf, buf, len, i, [&](uint32_t id) { hit(id, i); });
  }
}

}  // namespace gaspp
