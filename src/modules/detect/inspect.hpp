// modules/detect/inspect.hpp — a signature's payload list evaluated on one buffer, written once for
// both backends: Suricata's DetectEngineContentInspection, as an explicit stack instead of
// recursion (a GPU thread has little stack).
//
// Semantics, as Suricata's: a content is searched in its window — [offset, depth) from the buffer
// start, or for distance/within from the end of the previous match (prev + distance, up to prev +
// distance + within), byte_extract variables in place of numbers. On a match the next option runs;
// when it fails and it depends on where this content ended (kOpWithinNext: within, a negated
// relative content, a relative isdataat, byte_* or pcre), the content is searched again from one
// past this occurrence's start; otherwise the chain gives up. A content with neither
// relative modifiers nor a relative next that is not found ends the whole evaluation
// (discontinue). A negated content matches when its window does not hold it. pcre (R: from the
// previous match end) records the match end for what follows and retries later matches the same
// way. isdataat, byte_test, byte_jump (moves the position), byte_extract and byte_math (set a
// variable and move the position) as in Suricata. Evaluation stops after kDetRecursionLimit steps (no match).
//
// min_end, max_start: a match counts only if some content or pcre of it ends beyond min_end bytes
// into the buffer and some starts before max_start (the stream inspects a carried tail of earlier
// data before the start of each new piece: a match lying entirely in the tail, or entirely in the
// new piece, is found elsewhere). kInspectAnywhere: no condition.
//
// pcre: on the host PCRE2 (detect_host.cpp); in device code (and on the CPU's device path) the
// expression's program for the regex search (regex.hpp), which finds PCRE2's match; a pcre with no
// program, or a search past its step limit, answers kInspectNeedsHost.
#pragma once
#include <cstdint>

#include "gaspp/fields.hpp"
#include "gaspp/hd.hpp"
#include "modules/detect/detect_tables.hpp"

namespace gaspp {

// kInspectRetry: the list reached a pcre with a program while the search was left out (kRegex
// false): the caller runs it again with the search (DetectModule's retry pass).
enum InspectResult : int { kInspectNoMatch = 0, kInspectMatch = 1, kInspectNeedsHost = 2, kInspectRetry = 3 };
constexpr uint32_t kInspectAnywhere = 0xffffffffu;

// PCRE2 on the host: 1 match (ov0/ov1: start/end, relative to subject), 0 none.
int detect_host_pcre(const DetectHostMatchers* m, uint32_t id, const uint8_t* subject, uint32_t len, uint32_t start,
                     uint32_t& ov0, uint32_t& ov1);
// A dataset command on the host (dataset.hpp): whether the buffer matches it.
bool detect_host_dataset(const DetectHostMatchers* m, uint32_t id, const uint8_t* data, uint32_t len);
// base64_decode on the host: decodes data[0..n) (already past the op's offset, at most its bytes)
// and inspects op o's base64_data list on the result: kInspectMatch or kInspectNoMatch.
int detect_host_base64(const DetectView& v, const DetOp& o, const uint8_t* data, uint32_t n);

GASPP_HD GASPP_FORCEINLINE uint8_t det_lower(uint8_t c) { return (c >= 'A' && c <= 'Z') ? uint8_t(c + 32) : c; }

// First occurrence of pat (lower-cased when nocase) in s[0..n); -1 when none.
GASPP_HD inline int64_t det_find(const uint8_t* s, uint32_t n, const uint8_t* pat, uint32_t m, bool nocase) {
  if (m == 0) return 0;
  if (m > n) return -1;
  const uint8_t first = pat[0];
  for (uint32_t i = 0; i + m <= n; ++i) {
    if ((nocase ? det_lower(s[i]) : s[i]) != first) continue;
    uint32_t k = 1;
    if (nocase) {
      while (k < m && det_lower(s[i + k]) == pat[k]) ++k;
    } else {
      while (k < m && s[i + k] == pat[k]) ++k;
    }
    if (k == m) return int64_t(i);
  }
  return -1;
}

// A number written in `n` characters (Suricata's ByteExtractStringUint64: strtoull on them):
// leading blanks skipped; returns the characters consumed, 0 when no digit.
GASPP_HD inline int det_parse_string(const uint8_t* p, uint32_t n, uint32_t base, uint64_t& v) {
  uint32_t i = 0;
  v = 0;
  while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r' || p[i] == '\f' || p[i] == '\v')) ++i;
  if (i < n && p[i] == '+') ++i;
  if (base == 16 && i + 1 < n && p[i] == '0' && (p[i + 1] == 'x' || p[i + 1] == 'X')) i += 2;
  const uint32_t start = i;
  for (; i < n; ++i) {
    const uint8_t c = det_lower(p[i]);
    uint32_t d = 99;
    if (c >= '0' && c <= '9') d = uint32_t(c - '0');
    else if (c >= 'a' && c <= 'f') d = uint32_t(c - 'a' + 10);
    if (d >= base) break;
    v = v * base + d;
  }
  return i == start ? 0 : int(i);
}

GASPP_HD GASPP_FORCEINLINE uint64_t det_read_int(const uint8_t* p, uint32_t n, bool little) {
  uint64_t v = 0;
  for (uint32_t k = 0; k < n; ++k) v |= uint64_t(p[k]) << (8 * (little ? k : n - 1 - k));
  return v;
}

// Extracts a byte_* value at p (n bytes available): false when it does not fit or parse.
GASPP_HD inline bool det_extract(const DetOp& o, uint32_t nbytes, const uint8_t* p, int64_t avail, uint64_t& v,
                                 uint32_t& used) {
  if (int64_t(nbytes) > avail) return false;
  if (o.base) {
    const int k = det_parse_string(p, nbytes, o.base, v);
    if (k <= 0) return false;
    used = uint32_t(k);
  } else {
    v = det_read_int(p, nbytes, o.flags & kOpLittle);
    used = nbytes;
  }
  return true;
}

// Evaluates the option list ops[op_off, op_off + op_n) on buf[0..len), with the signature's
// byte_extract / byte_math variables in vals (read and written). Returns an InspectResult. kRegex
// false: the device's regex search is not compiled in; a pcre that would need it answers
// kInspectRetry. base: where buf starts in the buffer it is part of (an HTTP body's inspect
// window, body_window.hpp): a content's depth counts from the buffer's start, as Suricata's
// stream_start_offset makes it (its offset and other positions count from buf's start, as there).
template <bool kRegex = true>
GASPP_HD inline int detect_inspect_list(const DetectView& v, uint32_t op_off, uint32_t op_n, const uint8_t* buf,
                                        uint32_t len, uint32_t min_end, uint32_t max_start, uint64_t* vals,
                                        uint64_t base = 0);

// Signature s's payload list on buf[0..len), its variables starting at 0.
template <bool kRegex = true>
GASPP_HD inline int detect_inspect(const DetectView& v, const DetSig& s, const uint8_t* buf, uint32_t len,
                                   uint32_t min_end = 0, uint32_t max_start = kInspectAnywhere, uint64_t base = 0) {
  uint64_t vals[kDetMaxVars];
  for (uint32_t k = 0; k < kDetMaxVars; ++k) vals[k] = 0;
  return detect_inspect_list<kRegex>(v, s.op_off, s.op_n, buf, len, min_end, max_start, vals, base);
}

// Where a packet's headers lie in its frame (what the header buffers read).
struct PacketHeaders {
  uint32_t cap_len;
  uint8_t l3, l4;                      // L3, L4
  uint32_t l3_off, l4_off, payload_off;  // kNoOffset: absent
  uint32_t payload_len;
};

// The bytes of header buffer hb (DetHdrBuf) in the frame, as Suricata's GetData of ipv4.hdr, ...:
// false when the packet has no such header or it is not captured whole.
GASPP_HD inline bool det_header_span(uint8_t hb, const uint8_t* frame, const PacketHeaders& h, uint32_t& off,
                                     uint32_t& len) {
  const bool l3 = h.l3_off != kNoOffset && h.l3_off < h.cap_len;
  const bool l4 = h.l4_off != kNoOffset && h.l4_off < h.cap_len;
  switch (hb) {
    case kHbIpv4:
      if (!l3 || h.l3 != uint8_t(L3::ipv4)) return false;
      off = h.l3_off;
      len = uint32_t(frame[off] & 0x0f) * 4;
      break;
    case kHbIpv6:
      if (!l3 || h.l3 != uint8_t(L3::ipv6)) return false;
      off = h.l3_off;
      // With its extension headers: up to the transport header where one was decoded.
      len = l4 && h.l4_off > h.l3_off ? h.l4_off - h.l3_off : 40;
      break;
    case kHbTcp:
      if (!l4 || h.l4 != uint8_t(L4::tcp) || h.l4_off + 13 > h.cap_len) return false;
      off = h.l4_off;
      len = uint32_t(frame[off + 12] >> 4) * 4;
      break;
    case kHbUdp:
      if (!l4 || h.l4 != uint8_t(L4::udp)) return false;
      off = h.l4_off;
      len = 8;
      break;
    case kHbIcmpv4: {
      if (!l4 || h.l4 != uint8_t(L4::icmp)) return false;
      off = h.l4_off;
      len = 8;
      // The message's length (Suricata's: the IP payload), and what its type adds to the header:
      // a timestamp's three times, a router advertisement's addresses, when they fit.
      const uint32_t msg = h.payload_off != kNoOffset ? h.payload_off - h.l4_off + h.payload_len : h.cap_len - h.l4_off;
      if (off + 6 > h.cap_len) return false;
      const uint8_t type = frame[off];
      if ((type == 13 || type == 14) && msg >= 8 + 12) len += 12;
      if (type == 9) {
        const uint32_t adv = uint32_t(frame[off + 4]) * uint32_t(frame[off + 5]) * 4;
        if (msg >= 8 + adv) len += adv;
      }
      break;
    }
    case kHbIcmpv6:
      if (!l4 || h.l4 != uint8_t(L4::icmpv6)) return false;
      off = h.l4_off;
      len = 8;
      break;
    case kHbIpSrc:
    case kHbIpDst: {
      // Suricata's ip.src / ip.dst: the address's bytes, 4 for IPv4 and 16 for IPv6 (network order).
      if (!l3) return false;
      const bool v4 = h.l3 == uint8_t(L3::ipv4);
      if (!v4 && h.l3 != uint8_t(L3::ipv6)) return false;
      len = v4 ? 4 : 16;
      off = h.l3_off + (v4 ? 12 : 8) + (hb == kHbIpDst ? len : 0);
      break;
    }
    default:
      return false;
  }
  return len > 0 && uint64_t(off) + len <= h.cap_len;
}

// A packet signature's lists: the payload list on payload[0..len), then each header buffer's list
// (DetSig::hb) on its bytes, in order, the variables carried from one list to the next. The first
// list that does not match decides (kInspectNoMatch, or kInspectRetry / kInspectNeedsHost where
// detect_inspect_list answers them).
template <bool kRegex = true>
GASPP_HD inline int det_packet_lists(const DetectView& v, const DetSig& s, const uint8_t* payload, uint32_t len,
                                     const uint8_t* frame, const PacketHeaders& h) {
  uint64_t vals[kDetMaxVars];
  for (uint32_t k = 0; k < kDetMaxVars; ++k) vals[k] = 0;
  int r = detect_inspect_list<kRegex>(v, s.op_off, s.op_n, payload, len, 0, kInspectAnywhere, vals);
  for (int j = 0; j < 2 && s.hb[j] && r == kInspectMatch; ++j) {
    uint32_t off = 0, n = 0;
    if (!frame || !det_header_span(s.hb[j], frame, h, off, n)) return kInspectNoMatch;
    r = detect_inspect_list<kRegex>(v, s.hop_off[j], s.hop_n[j], frame + off, n, 0, kInspectAnywhere, vals);
  }
  return r;
}

template <bool kRegex>
GASPP_HD inline int detect_inspect_list(const DetectView& v, uint32_t op_off, uint32_t op_n, const uint8_t* buf,
                                        uint32_t len, uint32_t min_end, uint32_t max_start, uint64_t* vals,
                                        uint64_t base) {
  struct Frame {
    uint16_t op;
    uint32_t retry_at;   // content: where the next search starts; pcre: the next match start (0: none)
    uint32_t pbo;        // the position before the option ran
    uint32_t hi, lo;
  };
  Frame st[kDetMaxOps];
  int sp = 0;
  uint32_t pos = 0;      // Suricata's buffer_offset
  uint32_t hi = 0;       // largest match end on this path
  uint32_t lo = kInspectAnywhere;  // smallest match start on this path
  auto counts = [&](uint32_t h, uint32_t l) {
    return (min_end == 0 || h > min_end) && (max_start == kInspectAnywhere || l < max_start);
  };
  uint32_t steps = 0;
  uint32_t i = 0;
  bool retry = false;
  uint32_t retry_at = 0, pbo = 0;
  int r = 0;             // 1 match, 0 no match, -1 give up
  if (op_n == 0) return counts(0, kInspectAnywhere) ? kInspectMatch : kInspectNoMatch;
  for (;;) {
    const DetOp& o = v.ops[op_off + i];
    const bool last = o.flags & kOpLast;
    bool next = false;   // the option matched: go on to the next one (or finish)
    if (!retry && ++steps >= kDetRecursionLimit) {
      r = -1;
    } else if (o.type == kOpContent) {
      if (!retry) {
        retry_at = 0;
        pbo = pos;
      }
      retry = false;
      int64_t depth = len, offset = 0;
      bool before_base = false;  // the depth ends before buf starts (base)
      // Suricata's depth against a buffer that starts at base: before it, no match; within it,
      // counted from base.
      const auto rebase = [&] {
        if (base == 0) return;
        if (uint64_t(depth) <= base) before_base = true;
        else if (uint64_t(depth) < base + len) depth -= int64_t(base);
      };
      const bool rel = o.flags & (kOpDistance | kOpWithin);
      int64_t dist = o.distance_var >= 0 ? int64_t(int32_t(vals[o.distance_var])) : o.distance;
      if (rel) {
        offset = pbo;
        if (o.flags & kOpDistance) {
          if (dist < 0 && -dist > offset) offset = 0;
          else offset += dist;
        } else {
          dist = 0;
        }
        if (o.flags & kOpWithin) {
          const int64_t w = o.within_var >= 0 ? int64_t(vals[o.within_var]) : o.within;
          if (depth > int64_t(pbo) + w + dist) depth = int64_t(pbo) + w + dist;
          if (pbo == 0) rebase();
        }
        if (o.flags & kOpDepth) {
          const int64_t d = o.depth_var >= 0 ? int64_t(vals[o.depth_var]) : o.depth;
          if (d + int64_t(pbo) < depth) depth = int64_t(pbo) + d;
        }
        const int64_t off = o.offset_var >= 0 ? int64_t(vals[o.offset_var]) : o.offset;
        if ((o.flags & kOpOffset) && off > offset) offset = off;
      } else {
        if (o.flags & kOpDepth) {
          depth = o.depth_var >= 0 ? int64_t(vals[o.depth_var]) : o.depth;
          rebase();
        }
        offset = (o.flags & kOpOffset) ? (o.offset_var >= 0 ? int64_t(vals[o.offset_var]) : o.offset) : 0;
        pbo = 0;
      }
      if ((o.depth_var >= 0 && (o.flags & kOpDepth)) || (o.offset_var >= 0 && (o.flags & kOpOffset))) depth += offset;
      if (retry_at != 0) offset = retry_at;
      if (depth > int64_t(len)) depth = len;
      const bool neg = o.flags & kOpNegated;
      int64_t found = -1;
      if (offset > depth || depth == 0 || before_base) {
        found = -2;  // cannot match
      } else if (!((o.flags & kOpEndsWith) && depth < int64_t(len)) && int64_t(o.pat_len) <= depth - offset) {
        found = det_find(buf + offset, uint32_t(depth - offset), v.bytes + o.pat_off, o.pat_len, o.flags & kOpNocase);
        if (found >= 0) found += offset;
      }
      if (before_base) {
        r = 0;  // Suricata's no_match, negated or not: the depth ends before this buffer
      } else if (found < 0) {
        if (neg) next = true;
        else r = (found == -1 && !rel) ? -1 : 0;
        if (found == -2 && !neg) r = 0;
      } else {
        const uint32_t match_end = uint32_t(found) + o.pat_len;
        if (neg) {
          if ((o.flags & kOpEndsWith) && uint32_t(depth - offset) != match_end) {
            next = true;
          } else {
            const bool single = !(o.flags & (kOpDistance | kOpWithin | kOpRelativeNext | kOpDepth | kOpOffset));
            r = single ? -1 : 0;
          }
        } else {
          pos = match_end;
          const uint32_t nhi = match_end > hi ? match_end : hi;
          const uint32_t nlo = uint32_t(found) < lo ? uint32_t(found) : lo;
          if (!(o.flags & kOpEndsWith) || match_end == len) {
            if (last) {
              if (counts(nhi, nlo)) return kInspectMatch;
              retry = true;   // a later occurrence may end in the new data
              retry_at = match_end - (o.pat_len - 1);
              continue;
            }
            st[sp++] = Frame{uint16_t(i), match_end - (o.pat_len - 1), pbo, hi, lo};
            hi = nhi;
            lo = nlo;
            ++i;
            continue;
          }
          retry = true;
          retry_at = match_end - (o.pat_len - 1);
          continue;
        }
      }
    } else if (o.type == kOpPcre) {
#if defined(__CUDA_ARCH__)
      constexpr bool device_search = true;
#else
      const bool device_search = v.host_defer_pcre;
#endif
      if (device_search && !o.rx_prog) return kInspectNeedsHost;
      if constexpr (!kRegex) {
        if (device_search) return kInspectRetry;
      }
      if (!retry) {
        retry_at = 0;
        pbo = pos;
      } else {
        pos = pbo;
      }
      retry = false;
      const uint32_t base = (o.flags & kOpRelative) ? pos : 0;
      if (base > len) {
        r = 0;
      } else {
        const uint32_t start = retry_at ? retry_at - base : 0;
        uint32_t ov0 = 0, ov1 = 0;
        int m = 0;
        if (start <= len - base) {
#if defined(__CUDA_ARCH__)
          if constexpr (kRegex) m = rx_search(v.rx, o.rx_prog - 1, buf + base, len - base, start, ov0, ov1);
#else
          if (!device_search) m = detect_host_pcre(v.host, o.pat_off, buf + base, len - base, start, ov0, ov1);
          else if constexpr (kRegex) m = rx_search(v.rx, o.rx_prog - 1, buf + base, len - base, start, ov0, ov1);
#endif
          if (m == kRxUnknown) return kInspectNeedsHost;
        }
        if (o.flags & kOpNegated) {
          if (m) r = 0;
          else next = true;
        } else if (!m) {
          r = 0;
        } else {
          pos = base + ov1;
          const uint32_t nhi = pos > hi ? pos : hi;
          const uint32_t nlo = base + ov0 < lo ? base + ov0 : lo;
          if (!(o.flags & kOpRelativeNext) || last) {
            hi = nhi;
            lo = nlo;
            next = true;
          } else {
            st[sp++] = Frame{uint16_t(i), base + ov0 + 1, pbo, hi, lo};
            hi = nhi;
            lo = nlo;
            ++i;
            continue;
          }
        }
      }
    } else if (o.type == kOpBase64) {
      // Suricata's DetectBase64DecodeDoMatch, then the base64_data list over what it decoded: the
      // decode ends the list (a match of that list is the signature's, else this path fails).
#if defined(__CUDA_ARCH__)
      return kInspectNeedsHost;  // application-layer signatures only: never on the device
#else
      // An offset at or past the end leaves nothing to decode (Suricata: no match).
      const uint64_t base = uint64_t((o.flags & kOpRelative) ? pos : 0) + uint32_t(o.offset);
      const uint32_t avail = base < len ? uint32_t(len - base) : 0;
      const uint32_t n = avail < uint32_t(o.depth) ? avail : uint32_t(o.depth);
      if (n && detect_host_base64(v, o, buf + base, n) == kInspectMatch && counts(hi, lo)) return kInspectMatch;
      r = 0;
#endif
    } else if (o.type == kOpDataset) {
      // Suricata's DetectDatasetBufferMatch on the whole buffer: a match goes on, anything else
      // ends the list (no_match_discontinue).
      // A packet pass (either backend) leaves it to the host's re-check of the packet, so that a
      // set is tested and changed once, in packet order (ip.src / ip.dst in packet signatures).
#if defined(__CUDA_ARCH__)
      return kInspectNeedsHost;
#else
      if (!v.host_datasets) return kInspectNeedsHost;
      if (detect_host_dataset(v.host, o.pat_off, buf, len)) next = true;
      else r = -1;
#endif
    } else if (o.type == kOpIsdataat) {
      const bool var = o.offset_var >= 0;
      const uint64_t at = var ? vals[o.offset_var] : uint64_t(o.offset);
      const bool neg = o.flags & kOpNegated;
      bool have;
      if (var && at >= 100000000ull) have = false;
      else if (o.flags & kOpRelative) have = uint64_t(pos) + at <= len;
      else have = at < len;
      if (have != neg) next = true;
      else r = (var || ((o.flags & kOpRelative) && neg)) ? 0 : -1;
    } else if (o.type == kOpByteMath) {
      // Suricata's DetectByteMathDoMatch: read, apply the operator with rvalue, mask, store the
      // result in its variable; the position moves past the bytes read.
      const uint64_t nb = o.nbytes_var >= 0 ? vals[o.nbytes_var] : o.nbytes;
      const uint64_t rv = o.value_var >= 0 ? vals[o.value_var] : o.value;
      int64_t at = (o.flags & kOpRelative) ? int64_t(pos) + o.offset : int64_t(o.offset);
      uint64_t val = 0;
      uint32_t used = 0;
      bool ok = len > 0 && nb >= 1 && nb <= (o.base ? 10u : 4u) && at >= 0 && int64_t(len) - at > 0 &&
                det_extract(o, uint32_t(nb), buf + at, int64_t(len) - at, val, used);
      if (ok) {
        switch (o.cmp) {
          case kMathAdd: val += rv; break;
          case kMathSub: val -= rv; break;
          case kMathMul: val *= rv; break;
          case kMathDiv: ok = rv != 0; if (ok) val /= rv; break;
          case kMathShl: val = rv < 64 ? val << rv : 0; break;
          default: val = rv < 64 ? val >> rv : 0; break;
        }
      }
      if (ok) {
        if (o.flags & kOpMask) {
          val &= o.mask;
          if (val && o.mask_shift) val >>= o.mask_shift;
        }
        vals[o.var] = val;
        pos = uint32_t(at) + used;
        next = true;
      } else {
        r = 0;
      }
    } else {
      // byte_test, byte_jump, byte_extract
      int64_t off = o.offset_var >= 0 ? int64_t(int32_t(vals[o.offset_var])) : o.offset;
      int64_t at = off;
      // A count from a variable beyond what the form reads (8 bytes, 23 characters): no match.
      const uint64_t nb = o.nbytes_var >= 0 ? vals[o.nbytes_var] : o.nbytes;
      bool ok = len > 0 && nb <= (o.base ? 23u : 8u);
      if (o.flags & kOpRelative) {
        at = int64_t(pos) + off;
        if (int64_t(len) - at <= 0 && (o.type != kOpByteJump || nb)) ok = false;
      }
      uint64_t val = 0;
      uint32_t used = 0;
      if (ok && (at < 0 || !det_extract(o, uint32_t(nb), buf + at, int64_t(len) - at, val, used))) ok = false;
      if (ok && o.type != kOpByteExtract && (o.flags & kOpMask)) {
        val &= o.mask;
        if (val && o.mask_shift) val >>= o.mask_shift;
      }
      if (ok && o.type == kOpByteTest) {
        const uint64_t want = o.value_var >= 0 ? vals[o.value_var] : o.value;
        bool m = false;
        switch (o.cmp) {
          case 0: m = val < want; break;
          case 1: m = val > want; break;
          case 2: m = val == want; break;
          case 3: m = (val & want) != 0; break;
          case 4: m = (val ^ want) != 0; break;
          case 5: m = val <= want; break;
          default: m = val >= want; break;
        }
        ok = (o.flags & kOpNegated) ? !m : m;
      } else if (ok && o.type == kOpByteJump) {
        val *= o.multiplier;
        if (o.align && (val % 4)) val += 4 - val % 4;
        val += uint64_t(int64_t(o.post_offset));
        int64_t j;
        if (o.flags & kOpFromBeginning) j = int64_t(val);
        else if (o.flags & kOpFromEnd) j = int64_t(len) + int64_t(val);
        else j = at + int64_t(val) + int64_t(used);
        if (j < 0) j = 0;
        if (j > int64_t(len)) ok = false;
        else pos = uint32_t(j);
      } else if (ok) {
        val *= o.multiplier;
        if (o.align && (val % o.align)) val += o.align - val % o.align;
        vals[o.var] = val;
        pos = uint32_t(at) + used;
      }
      if (ok) next = true;
      else r = 0;
    }
    if (next) {
      if (!last) {
        ++i;
        continue;
      }
      if (counts(hi, lo)) return kInspectMatch;
      r = 0;
    }
    // Unwind: the option at i failed with r (0 or -1); earlier contents/pcres may retry.
    bool resumed = false;
    while (sp > 0 && !resumed) {
      const Frame f = st[--sp];
      if (r == -1) continue;
      const DetOp& fo = v.ops[op_off + f.op];
      if (fo.type == kOpContent) {
        if (!(fo.flags & kOpWithinNext)) {
          r = -1;
          continue;
        }
      } else if (f.retry_at == 0) {
        continue;
      }
      i = f.op;
      retry = true;
      retry_at = f.retry_at;
      pbo = f.pbo;
      hi = f.hi;
      lo = f.lo;
      resumed = true;
    }
    if (!resumed) return kInspectNoMatch;
  }
}

}  // namespace gaspp
