// output/reject_packet.cpp — see output/reject_packet.hpp.
#include "output/reject_packet.hpp"

#include <algorithm>
#include <cstring>

#include "decode/checksum.hpp"

namespace gaspp {
namespace {

uint16_t get16(const uint8_t* p) { return uint16_t(p[0] << 8 | p[1]); }
uint32_t get32(const uint8_t* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }
void put16(uint8_t* p, uint16_t v) {
  p[0] = uint8_t(v >> 8);
  p[1] = uint8_t(v);
}
void put32(uint8_t* p, uint32_t v) {
  for (int k = 0; k < 4; ++k) p[k] = uint8_t(v >> (24 - 8 * k));
}

// The one's-complement checksum of an IPv4 or IPv6 pseudo-header (addresses at src/dst, alen bytes
// each) and the segment at seg (n bytes, its checksum field zero).
uint16_t l4_checksum(const uint8_t* src, const uint8_t* dst, int alen, uint8_t proto, const uint8_t* seg, uint32_t n) {
  using namespace csum_detail;
  uint32_t s = add_bytes(0, src, uint32_t(alen));
  s = add_bytes(s, dst, uint32_t(alen));
  s += proto;
  s += n & 0xffff;
  s += n >> 16;
  s = add_bytes(s, seg, n);
  return uint16_t(~fold(s));
}

}  // namespace

bool build_reject(const uint8_t* f, uint32_t cap, bool to_source, uint32_t mtu, std::vector<uint8_t>& out) {
  out.clear();
  if (cap < 14) return false;
  uint32_t l2 = 14;
  uint16_t et = get16(f + 12);
  if (et == 0x8100) {  // one 802.1Q tag, kept
    if (cap < 18) return false;
    et = get16(f + 16);
    l2 = 18;
  }
  const bool v4 = et == 0x0800, v6 = et == 0x86dd;
  if (!v4 && !v6) return false;
  const uint8_t* ip = f + l2;
  const uint32_t ip_cap = cap - l2;
  uint32_t ihl, ip_len;
  uint8_t proto;
  if (v4) {
    if (ip_cap < 20 || (ip[0] >> 4) != 4) return false;
    ihl = uint32_t(ip[0] & 15) * 4;
    ip_len = get16(ip + 2);
    proto = ip[9];
    if (ihl < 20 || ip_cap < ihl || ip_len < ihl) return false;
  } else {
    if (ip_cap < 40 || (ip[0] >> 4) != 6) return false;
    ihl = 40;
    ip_len = 40 + uint32_t(get16(ip + 4));
    proto = ip[6];
    // Past the extension headers (hop-by-hop, routing, destination options, AH; a first fragment's
    // header) to the transport header, as Suricata's decoder finds the TCP header it answers; a
    // later fragment, or headers cut by the capture, have none: an ICMPv6 answer then. At most 8
    // headers are walked.
    for (int k = 0; k < 8 && (proto == 0 || proto == 43 || proto == 60 || proto == 51 || proto == 44); ++k) {
      if (ip_cap < ihl + 8) break;
      const uint8_t* h = ip + ihl;
      const uint32_t hlen = proto == 44 ? 8 : proto == 51 ? (uint32_t(h[1]) + 2) * 4 : (uint32_t(h[1]) + 1) * 8;
      if (proto == 44 && (get16(h + 2) & 0xfff8) != 0) break;  // not the first fragment
      if (ip_cap < ihl + hlen) break;
      proto = h[0];
      ihl += hlen;
    }
    if (proto != 6) ihl = 40;  // the ICMPv6 answer quotes the packet from its fixed header
  }
  const int alen = v4 ? 4 : 16;
  const uint8_t* ip_src = ip + (v4 ? 12 : 8);
  const uint8_t* ip_dst = ip_src + alen;
  const uint8_t* new_src = to_source ? ip_dst : ip_src;
  const uint8_t* new_dst = to_source ? ip_src : ip_dst;
  const uint32_t ip_hdr = v4 ? 20 : 40;
  const bool tcp = proto == 6;
  uint32_t l4_len;  // the answer's transport part
  if (tcp) {
    if (ip_cap < ihl + 20) return false;
    l4_len = 20;
  } else {
    // Quote the packet up to the MTU: IPv4 at least its header and 8 bytes (Suricata's minimum).
    const uint32_t room = mtu > ip_hdr + 8 ? mtu - ip_hdr - 8 : 0;
    uint32_t quote = std::min({ip_len, ip_cap, room});
    if (v4 && quote < std::min(ip_len, ihl + 8)) quote = std::min({ip_len, ip_cap, ihl + 8});
    l4_len = 8 + quote;
  }
  out.assign(l2 + ip_hdr + l4_len, 0);
  uint8_t* o = out.data();
  // Ethernet (and the tag): towards the source the MAC addresses swap.
  std::memcpy(o, f, l2);
  if (to_source) {
    std::memcpy(o, f + 6, 6);
    std::memcpy(o + 6, f, 6);
  }
  uint8_t* oip = o + l2;
  const uint8_t l4_proto = tcp ? 6 : v4 ? 1 : 58;
  if (v4) {
    oip[0] = 0x45;
    put16(oip + 2, uint16_t(ip_hdr + l4_len));
    oip[8] = 64;
    oip[9] = l4_proto;
    std::memcpy(oip + 12, new_src, 4);
    std::memcpy(oip + 16, new_dst, 4);
    put16(oip + 10, uint16_t(~csum_detail::fold(csum_detail::add_bytes(0, oip, 20))));
  } else {
    oip[0] = 0x60;
    put16(oip + 4, uint16_t(l4_len));
    oip[6] = l4_proto;
    oip[7] = 64;
    std::memcpy(oip + 8, new_src, 16);
    std::memcpy(oip + 24, new_dst, 16);
  }
  uint8_t* l4 = oip + ip_hdr;
  if (tcp) {
    const uint8_t* t = ip + ihl;
    const uint32_t doff = uint32_t(t[12] >> 4) * 4;
    const uint32_t seg = ip_len > ihl + doff ? ip_len - ihl - doff : 0;  // the segment's payload
    const uint32_t seq = get32(t + 4), ack = get32(t + 8);
    if (to_source) {
      put16(l4, get16(t + 2));
      put16(l4 + 2, get16(t));
      put32(l4 + 4, ack);  // 0 when the segment acknowledges nothing
      put32(l4 + 8, ack == 0 ? seq + seg + 1 : seq + seg);
    } else {
      std::memcpy(l4, t, 4);
      put32(l4 + 4, seq);
      put32(l4 + 8, ack);
    }
    l4[12] = 5 << 4;
    l4[13] = 0x14;  // RST|ACK
    std::memcpy(l4 + 14, t + 14, 2);  // the segment's window
  } else {
    l4[0] = v4 ? 3 : 1;    // destination unreachable
    l4[1] = v4 ? 10 : 1;   // administratively prohibited
    std::memcpy(l4 + 8, ip, l4_len - 8);
  }
  const uint16_t c = v4 && !tcp ? uint16_t(~csum_detail::fold(csum_detail::add_bytes(0, l4, l4_len)))
                                : l4_checksum(new_src, new_dst, alen, l4_proto, l4, l4_len);
  put16(l4 + (tcp ? 16 : 2), c);
  return true;
}

}  // namespace gaspp
