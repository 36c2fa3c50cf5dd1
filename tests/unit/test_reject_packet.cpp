// The answers to rejected packets (output/reject_packet.hpp) field by field, against Suricata's
// respond-reject-libnet11.c rules written out per case, with every checksum recomputed here by a
// plain RFC 1071 sum (the reference), for the cases the live test's capture does not have: IPv6
// TCP, a SYN (acknowledgment 0), an 802.1Q-tagged frame, ICMPv4 quoting, and frames that cannot be
// answered.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "output/reject_packet.hpp"

using namespace gaspp;

namespace {

uint16_t be16(const uint8_t* p) { return uint16_t(p[0] << 8 | p[1]); }
uint32_t be32(const uint8_t* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }

// RFC 1071 over a byte string: 0 when the checksum field inside it is right.
uint16_t rfc1071(const std::vector<uint8_t>& b) {
  uint32_t s = 0;
  for (size_t k = 0; k < b.size(); k += 2) s += uint32_t(b[k]) << 8 | (k + 1 < b.size() ? b[k + 1] : 0);
  while (s >> 16) s = (s & 0xffff) + (s >> 16);
  return uint16_t(~s);
}

// The pseudo-header (addresses at a, alen bytes each) and the transport part, checked.
uint16_t l4_check(const uint8_t* a, int alen, uint8_t proto, const uint8_t* l4, uint32_t n) {
  std::vector<uint8_t> b(a, a + 2 * alen);
  b.push_back(0);
  b.push_back(proto);
  b.push_back(uint8_t(n >> 8));
  b.push_back(uint8_t(n));
  if (alen == 16) b.insert(b.begin() + 32, {0, 0});  // IPv6: 32-bit length
  b.insert(b.end(), l4, l4 + n);
  return rfc1071(b);
}

struct Frame {
  std::vector<uint8_t> b;
  uint32_t l3 = 14;
};

// Ethernet (MACs 02..01 -> 02..02, an optional 802.1Q tag), then IPv4 or IPv6 10.0.0.1 / fd00::1
// -> 10.0.0.2 / fd00::2, then a TCP header (ports 1000 -> 80, seq, ack, flags, window 0x1234) or
// UDP, and `payload` bytes.
Frame make(bool v6, bool tagged, bool tcp, uint32_t seq, uint32_t ack, uint32_t payload) {
  Frame f;
  auto& b = f.b;
  b = {2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1};
  if (tagged) b.insert(b.end(), {0x81, 0x00, 0x00, 0x05});
  f.l3 = uint32_t(b.size()) + 2;
  b.push_back(v6 ? 0x86 : 0x08);
  b.push_back(v6 ? 0xdd : 0x00);
  const uint32_t l4 = tcp ? 20 : 8;
  if (v6) {
    const uint32_t plen = l4 + payload;
    b.insert(b.end(), {0x60, 0, 0, 0, uint8_t(plen >> 8), uint8_t(plen), uint8_t(tcp ? 6 : 17), 55});
    for (int side = 1; side <= 2; ++side) {
      b.insert(b.end(), {0xfd, 0});
      b.insert(b.end(), 13, 0);
      b.push_back(uint8_t(side));
    }
  } else {
    const uint32_t tot = 20 + l4 + payload;
    b.insert(b.end(), {0x45, 0, uint8_t(tot >> 8), uint8_t(tot), 0, 7, 0x40, 0, 55, uint8_t(tcp ? 6 : 17), 0, 0,
                       10, 0, 0, 1, 10, 0, 0, 2});
  }
  if (tcp)
    b.insert(b.end(), {0x03, 0xe8, 0, 80, uint8_t(seq >> 24), uint8_t(seq >> 16), uint8_t(seq >> 8), uint8_t(seq),
                       uint8_t(ack >> 24), uint8_t(ack >> 16), uint8_t(ack >> 8), uint8_t(ack), 0x50,
                       uint8_t(ack ? 0x18 : 0x02), 0x12, 0x34, 0, 0, 0, 0});
  else
    b.insert(b.end(), {0x03, 0xe8, 0, 53, uint8_t((8 + payload) >> 8), uint8_t(8 + payload), 0, 0});
  for (uint32_t k = 0; k < payload; ++k) b.push_back(uint8_t('a' + k % 26));
  return f;
}

}  // namespace

TEST(RejectPacket, AnswersAsSuricatasRespondReject) {
  struct Row {
    const char* name;
    bool v6, tagged, tcp, to_source;
    uint32_t seq, ack, payload;
    uint32_t want_seq, want_ack;  // TCP
    uint32_t want_len;            // the answer's frame length
  };
  const Row rows[] = {
      {"IPv4 TCP with data, to the source", false, false, true, true, 1000, 5000, 10, 5000, 1010, 54},
      {"IPv4 SYN, to the source: seq 0, ack seq+1", false, false, true, true, 77, 0, 0, 0, 78, 54},
      {"IPv4 TCP, to the destination: its own numbers", false, false, true, false, 1000, 5000, 10, 1000, 5000, 54},
      {"IPv6 TCP with data, to the source", true, false, true, true, 0xfffffff0u, 9, 32, 9, 0x10, 74},
      {"tagged IPv4 TCP, to the source", false, true, true, true, 1, 2, 3, 2, 4, 58},
      {"IPv4 UDP, to the source: ICMP quoting it", false, false, false, true, 0, 0, 40, 0, 0, 14 + 20 + 8 + 20 + 8 + 40},
      {"IPv6 UDP, to the destination: ICMPv6 quoting it", true, false, false, false, 0, 0, 40, 0, 0, 14 + 40 + 8 + 40 + 8 + 40},
      {"IPv4 UDP past the MTU: the quote stops there", false, false, false, true, 0, 0, 3000, 0, 0, 14 + 1500},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    const Frame in = make(r.v6, r.tagged, r.tcp, r.seq, r.ack, r.payload);
    std::vector<uint8_t> out;
    ASSERT_TRUE(build_reject(in.b.data(), uint32_t(in.b.size()), r.to_source, 1500, out));
    ASSERT_EQ(out.size(), r.want_len);
    // Ethernet: swapped towards the source; the tag and type kept.
    const std::vector<uint8_t> dst_mac(out.begin(), out.begin() + 6), src_mac(out.begin() + 6, out.begin() + 12);
    EXPECT_EQ(dst_mac, std::vector<uint8_t>(in.b.begin() + (r.to_source ? 6 : 0), in.b.begin() + (r.to_source ? 12 : 6)));
    EXPECT_EQ(src_mac, std::vector<uint8_t>(in.b.begin() + (r.to_source ? 0 : 6), in.b.begin() + (r.to_source ? 6 : 12)));
    EXPECT_TRUE(std::equal(out.begin() + 12, out.begin() + in.l3, in.b.begin() + 12));
    const uint8_t* ip = out.data() + in.l3;
    const uint8_t* oip = in.b.data() + in.l3;
    const int alen = r.v6 ? 16 : 4;
    const uint8_t* a = ip + (r.v6 ? 8 : 12);
    const uint8_t* oa = oip + (r.v6 ? 8 : 12);
    // Addresses: swapped towards the source.
    EXPECT_TRUE(std::equal(a, a + alen, r.to_source ? oa + alen : oa));
    EXPECT_TRUE(std::equal(a + alen, a + 2 * alen, r.to_source ? oa : oa + alen));
    const uint32_t ihl = r.v6 ? 40 : 20;
    const uint8_t* l4 = ip + ihl;
    const uint32_t l4n = uint32_t(out.size()) - in.l3 - ihl;
    if (r.v6) {
      EXPECT_EQ(ip[7], 64);
      EXPECT_EQ(be16(ip + 4), l4n);
    } else {
      EXPECT_EQ(ip[8], 64);
      EXPECT_EQ(be16(ip + 2), ihl + l4n);
      EXPECT_EQ(be16(ip + 4), 0);  // id 0
      EXPECT_EQ(rfc1071(std::vector<uint8_t>(ip, ip + 20)), 0) << "IPv4 header checksum";
    }
    if (r.tcp) {
      EXPECT_EQ(ip[r.v6 ? 6 : 9], 6);
      EXPECT_EQ(be16(l4), r.to_source ? 80 : 1000);
      EXPECT_EQ(be16(l4 + 2), r.to_source ? 1000 : 80);
      EXPECT_EQ(be32(l4 + 4), r.want_seq);
      EXPECT_EQ(be32(l4 + 8), r.want_ack);
      EXPECT_EQ(l4[12], 0x50);
      EXPECT_EQ(l4[13], 0x14);  // RST|ACK
      EXPECT_EQ(be16(l4 + 14), 0x1234);
      EXPECT_EQ(l4_check(a, alen, 6, l4, l4n), 0) << "TCP checksum";
    } else {
      EXPECT_EQ(l4[0], r.v6 ? 1 : 3);
      EXPECT_EQ(l4[1], r.v6 ? 1 : 10);
      EXPECT_TRUE(std::equal(l4 + 8, l4 + l4n, oip)) << "the quote is the packet's start";
      if (r.v6) EXPECT_EQ(l4_check(a, alen, 58, l4, l4n), 0) << "ICMPv6 checksum";
      else EXPECT_EQ(rfc1071(std::vector<uint8_t>(l4, l4 + l4n)), 0) << "ICMP checksum";
    }
  }
}

// IPv6 with extension headers before TCP (RFC 8200 §4): the answer is a reset of the segment behind
// them (Suricata answers the TCP header its decoder found), without the headers; behind a later
// fragment there is no TCP header: an ICMPv6 answer.
TEST(RejectPacket, Ipv6ExtensionHeadersAreWalked) {
  struct Row {
    const char* name;
    std::vector<std::vector<uint8_t>> ext;  // each header without its next-header byte
    std::vector<uint8_t> types;             // each header's type
    bool tcp_answer;
  };
  const Row rows[] = {
      {"hop-by-hop", {{0, 1, 4, 0, 0, 0, 0}}, {0}, true},
      {"hop-by-hop then destination options (16 bytes)",
       {{0, 1, 4, 0, 0, 0, 0}, {1, 1, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}}, {0, 60}, true},
      {"a first fragment", {{0, 0, 0, 0, 0, 0, 1}}, {44}, true},
      {"a later fragment", {{0, 0, 8, 0, 0, 0, 1}}, {44}, false},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    Frame in = make(true, false, true, 1000, 5000, 10);
    // Insert the headers behind the fixed header, each pointing at the next, the last at TCP (6).
    std::vector<uint8_t> hdrs;
    for (size_t k = 0; k < r.ext.size(); ++k) {
      hdrs.push_back(k + 1 < r.types.size() ? r.types[k + 1] : 6);
      hdrs.insert(hdrs.end(), r.ext[k].begin(), r.ext[k].end());
    }
    const uint32_t l3 = in.l3;
    in.b[l3 + 6] = r.types[0];
    const uint32_t plen = be16(in.b.data() + l3 + 4) + uint32_t(hdrs.size());
    in.b[l3 + 4] = uint8_t(plen >> 8);
    in.b[l3 + 5] = uint8_t(plen);
    in.b.insert(in.b.begin() + l3 + 40, hdrs.begin(), hdrs.end());
    std::vector<uint8_t> out;
    ASSERT_TRUE(build_reject(in.b.data(), uint32_t(in.b.size()), true, 1500, out));
    const uint8_t* ip = out.data() + l3;
    const uint8_t* l4 = ip + 40;
    const uint32_t l4n = uint32_t(out.size()) - l3 - 40;
    if (r.tcp_answer) {
      ASSERT_EQ(out.size(), 14u + 40 + 20);
      EXPECT_EQ(ip[6], 6);
      EXPECT_EQ(be16(l4), 80);
      EXPECT_EQ(be16(l4 + 2), 1000);
      EXPECT_EQ(be32(l4 + 4), 5000u);
      EXPECT_EQ(be32(l4 + 8), 1010u);  // the segment's 10 bytes acknowledged
      EXPECT_EQ(l4[13], 0x14);
      EXPECT_EQ(l4_check(ip + 8, 16, 6, l4, l4n), 0) << "TCP checksum";
    } else {
      EXPECT_EQ(ip[6], 58);
      EXPECT_EQ(l4[0], 1);
      EXPECT_TRUE(std::equal(l4 + 8, l4 + l4n, in.b.data() + l3)) << "the quote is the packet's start";
      EXPECT_EQ(l4_check(ip + 8, 16, 58, l4, l4n), 0) << "ICMPv6 checksum";
    }
  }
}

TEST(RejectPacket, FramesItCannotAnswer) {
  const Frame tcp = make(false, false, true, 1, 2, 0);
  std::vector<uint8_t> out;
  // Cut inside the TCP header; cut inside the IPv4 header; an ARP frame; a bare Ethernet header.
  EXPECT_FALSE(build_reject(tcp.b.data(), 14 + 20 + 10, true, 1500, out));
  EXPECT_FALSE(build_reject(tcp.b.data(), 14 + 10, true, 1500, out));
  std::vector<uint8_t> arp = tcp.b;
  arp[12] = 0x08;
  arp[13] = 0x06;
  EXPECT_FALSE(build_reject(arp.data(), uint32_t(arp.size()), true, 1500, out));
  EXPECT_FALSE(build_reject(tcp.b.data(), 14, true, 1500, out));
  EXPECT_TRUE(out.empty());
}
