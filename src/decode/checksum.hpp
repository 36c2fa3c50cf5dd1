// decode/checksum.hpp — IPv4 header and TCP/UDP/ICMP checksums of a decoded packet (`-k all`).
//
// checksum_status() recomputes, from the frame and the fields the decoder set, the checksums a
// receiver would check, and returns the ChecksumBad bits of those that are wrong:
//   * IPv4 header: the one's-complement sum over the IHL bytes must be 0xffff;
//   * TCP, UDP (IPv4 and IPv6), ICMPv6: over the pseudo-header and the whole segment;
//     a UDP checksum of 0 over IPv4 means "none" and is not checked;
//   * ICMPv4: over the ICMP message.
// A checksum that cannot be checked is not bad: a transport header in a fragment (the rest of the
// datagram is elsewhere), a segment not captured whole (snap length), a malformed packet, the
// transport inside a tunnel (the inner IP header is checked; inner and outer alike are the
// decoder's innermost layer). IPv6 pseudo-headers use the addresses of the IPv6 header (a routing
// header's final destination is not substituted).
//
// Checksums cost a pass over every payload byte, so they run only with validation on (the CLI's
// -k all, BackendConfig::validate_checksums); without it csum_bad stays 0 and nothing is read.
#pragma once
#include <cstdint>

#include "decode/decoder.hpp"

namespace gaspp {

enum ChecksumBad : uint8_t {
  kCsumBadIp = 1,  // IPv4 header checksum
  kCsumBadL4 = 2,  // TCP, UDP, ICMP or ICMPv6 checksum
};

namespace csum_detail {

// Adds n bytes at p to a 32-bit one's-complement accumulator, as big-endian 16-bit words.
GASPP_HD inline uint32_t add_bytes(uint32_t sum, const uint8_t* p, uint32_t n) {
  uint32_t k = 0;
  for (; k + 1 < n; k += 2) sum += uint32_t(p[k]) << 8 | p[k + 1];
  if (k < n) sum += uint32_t(p[k]) << 8;
  return sum;
}

GASPP_HD GASPP_FORCEINLINE uint16_t fold(uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return uint16_t(sum);
}

}  // namespace csum_detail

// The decoder's fields a checksum reads (one packet's).
struct ChecksumInput {
  uint32_t cap_len, l3_off, l4_off, payload_off, payload_len;
  uint8_t malformed, l3, l4, ip_frag, ip_proto;
};

// The ChecksumBad bits of a decoded packet whose frame (cap_len bytes) is at f.
GASPP_HD inline uint8_t checksum_status(const uint8_t* f, const ChecksumInput& p) {
  using namespace csum_detail;
  if (p.malformed || p.l3_off == kNoOffset) return 0;
  const uint32_t cap = p.cap_len, l3 = p.l3_off;
  const bool v4 = p.l3 == uint8_t(L3::ipv4), v6 = p.l3 == uint8_t(L3::ipv6);
  uint8_t bad = 0;
  if (v4) {
    if (l3 + 20 > cap) return 0;
    const uint32_t ihl = uint32_t(f[l3] & 0x0f) * 4;
    if (ihl >= 20 && l3 + ihl <= cap && fold(add_bytes(0, f + l3, ihl)) != 0xffff) bad |= kCsumBadIp;
  } else if (!v6) {
    return 0;
  }
  const uint8_t l4 = p.l4;
  if (p.l4_off == kNoOffset || (p.ip_frag & kFragIsFragment)) return bad;
  if (l4 != uint8_t(L4::tcp) && l4 != uint8_t(L4::udp) && l4 != uint8_t(L4::icmp) && l4 != uint8_t(L4::icmpv6))
    return bad;
  const uint32_t off = p.l4_off;
  // The transport's length: its header (up to the payload) and the payload the IP header announced.
  if (p.payload_off == kNoOffset || p.payload_off < off) return bad;
  const uint32_t len = (p.payload_off - off) + p.payload_len;
  if (off + len > cap || len < 4) return bad;  // not captured whole: cannot tell
  if (l4 == uint8_t(L4::udp) && v4 && f[off + 6] == 0 && f[off + 7] == 0) return bad;  // no checksum
  uint32_t sum = 0;
  if (l4 != uint8_t(L4::icmp)) {  // pseudo-header
    if (v4) sum = add_bytes(sum, f + l3 + 12, 8);
    else sum = add_bytes(sum, f + l3 + 8, 32);
    sum += p.ip_proto;
    sum += len & 0xffff;
    sum += len >> 16;
  }
  sum = add_bytes(sum, f + off, len);
  if (fold(sum) != 0xffff) bad |= kCsumBadL4;
  return bad;
}

GASPP_HD inline uint8_t checksum_status(const uint8_t* f, const DecodedPacket& p) {
  return checksum_status(f, ChecksumInput{p.cap_len[0], p.l3_off[0], p.l4_off[0], p.payload_off[0], p.payload_len[0],
                                          p.malformed[0], p.l3[0], p.l4[0], p.ip_frag[0], p.ip_proto[0]});
}

// Packet k of a decoded batch (the detect module's checksum keywords compute it where a
// signature asks).
GASPP_HD inline uint8_t checksum_status(const uint8_t* f, const DecodedView& d, uint32_t k) {
  return checksum_status(f, ChecksumInput{d.cap_len[k], d.l3_off[k], d.l4_off[k], d.payload_off[k], d.payload_len[k],
                                          d.malformed[k], d.l3[k], d.l4[k], d.ip_frag[k], d.ip_proto[k]});
}

}  // namespace gaspp
