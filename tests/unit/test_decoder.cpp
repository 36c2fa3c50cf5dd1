// The decoder on frames no capture in ../shared/data has: deep VLAN stacks, IPv4 options and
// fragments, IPv6 extension chains, TCP options, every link type, and every truncation point.
#include <gtest/gtest.h>

#include "decode/decoder.hpp"
#include "test_support.hpp"

using namespace gaspp;
using gaspp::test::tcp4_frame;

namespace {

DecodedPacket decode(const std::vector<uint8_t>& f, LinkType link = LinkType::ethernet, uint32_t caplen = ~0u) {
  DecodedPacket p;
  clear(p);
  p.cap_len[0] = caplen == ~0u ? uint32_t(f.size()) : caplen;
  p.wire_len[0] = uint32_t(f.size());
  decode_frame(f.data(), p.cap_len[0], link, p);
  return p;
}

MalformedReason reason(const DecodedPacket& p) { return MalformedReason(p.malformed[0]); }

std::vector<uint8_t> with_vlans(int tags) {
  auto f = tcp4_frame(5, 3);
  std::vector<uint8_t> out(f.begin(), f.begin() + 12);
  for (int k = 0; k < tags; ++k) {
    out.push_back(k == 0 ? 0x88 : 0x81);
    out.push_back(k == 0 ? 0xa8 : 0x00);
    out.push_back(uint8_t(k));
    out.push_back(uint8_t(10 + k));
  }
  out.insert(out.end(), f.begin() + 12, f.end());
  return out;
}

// IPv6 + extension headers (each 8 bytes) + TCP (20 bytes, no options).
std::vector<uint8_t> ipv6_with_ext(const std::vector<uint8_t>& ext_types, uint16_t frag_field = 0) {
  std::vector<uint8_t> f = {2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x86, 0xdd};
  const uint16_t plen = uint16_t(8 * ext_types.size() + 20);
  std::vector<uint8_t> ip(40, 0);
  ip[0] = 0x60; ip[4] = uint8_t(plen >> 8); ip[5] = uint8_t(plen); ip[7] = 63;
  ip[6] = ext_types.empty() ? 6 : ext_types[0];
  ip[8] = 0x20; ip[9] = 0x01; ip[23] = 1; ip[24] = 0x20; ip[25] = 0x01; ip[39] = 2;
  f.insert(f.end(), ip.begin(), ip.end());
  for (size_t k = 0; k < ext_types.size(); ++k) {
    std::vector<uint8_t> e(8, 0);
    e[0] = k + 1 < ext_types.size() ? ext_types[k + 1] : 6;
    if (ext_types[k] == 44) { e[2] = uint8_t(frag_field >> 8); e[3] = uint8_t(frag_field); }
    f.insert(f.end(), e.begin(), e.end());
  }
  std::vector<uint8_t> t(20, 0);
  t[0] = 0x04; t[1] = 0xd2; t[3] = 80; t[12] = 0x50; t[13] = 0x02;
  f.insert(f.end(), t.begin(), t.end());
  return f;
}

using Bytes = std::vector<uint8_t>;

Bytes cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const auto& b : parts) out.insert(out.end(), b.begin(), b.end());
  return out;
}

// The IPv4 packet of tcp4_frame (seq, payload bytes), without its Ethernet header.
Bytes ip4_tcp(uint32_t seq, uint16_t payload = 2) {
  const auto f = tcp4_frame(seq, payload);
  return Bytes(f.begin() + 14, f.end());
}

// IPv4 (10.9.0.1 → 10.9.0.2) + UDP sport → dport around `payload`.
Bytes ip4_udp(uint16_t sport, uint16_t dport, const Bytes& payload) {
  Bytes ip(28, 0);
  const uint16_t tot = uint16_t(28 + payload.size()), ulen = uint16_t(8 + payload.size());
  ip[0] = 0x45; ip[2] = uint8_t(tot >> 8); ip[3] = uint8_t(tot); ip[8] = 64; ip[9] = 17;
  ip[12] = 10; ip[13] = 9; ip[15] = 1; ip[16] = 10; ip[17] = 9; ip[19] = 2;
  ip[20] = uint8_t(sport >> 8); ip[21] = uint8_t(sport); ip[22] = uint8_t(dport >> 8); ip[23] = uint8_t(dport);
  ip[24] = uint8_t(ulen >> 8); ip[25] = uint8_t(ulen);
  return cat({ip, payload});
}

// A GTP-U G-PDU (flags 0x30: version 1, GTP) around `inner`; `opt` is the optional part (flags
// 0x32/0x34 carry it) including any extension headers.
Bytes gtp(const Bytes& inner, uint8_t flags = 0x30, const Bytes& opt = {}) {
  const uint16_t len = uint16_t(opt.size() + inner.size());
  return cat({{flags, 0xff, uint8_t(len >> 8), uint8_t(len), 0, 0, 0x12, 0x34}, opt, inner});
}

// IPv4 (10.9.0.1 → 10.9.0.2) with protocol `proto` around `inner` (IP in IP: 4, IPv6 in IP: 41).
Bytes ip4_around(uint8_t proto, const Bytes& inner) {
  Bytes ip(20, 0);
  const uint16_t tot = uint16_t(20 + inner.size());
  ip[0] = 0x45; ip[2] = uint8_t(tot >> 8); ip[3] = uint8_t(tot); ip[8] = 64; ip[9] = proto;
  ip[12] = 10; ip[13] = 9; ip[15] = 1; ip[16] = 10; ip[17] = 9; ip[19] = 2;
  return cat({ip, inner});
}
// IPv6 (2001::1 → 2001::2) with next header `nh` around `inner`.
Bytes ip6_around(uint8_t nh, const Bytes& inner) {
  Bytes ip(40, 0);
  ip[0] = 0x60; ip[4] = uint8_t(inner.size() >> 8); ip[5] = uint8_t(inner.size()); ip[6] = nh; ip[7] = 64;
  ip[8] = 0x20; ip[9] = 0x01; ip[23] = 1; ip[24] = 0x20; ip[25] = 0x01; ip[39] = 2;
  return cat({ip, inner});
}

// An NSH header (RFC 8300): MD type 1 (24 bytes, four context headers) or 2 (8 bytes), version
// `ver`, carrying `next` (1 IPv4, 2 IPv6, 3 Ethernet, 5 MPLS).
Bytes nsh(uint8_t next, uint8_t md = 1, uint8_t ver = 0, uint8_t words = 0) {
  const uint8_t len = words ? words : (md == 1 ? 6 : 2);
  Bytes h = {uint8_t(ver << 6), len, md, next, 0, 0, 1, 2};
  h.resize(size_t(len) * 4, 0);
  return h;
}

Bytes eth(uint16_t type) { return {2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, uint8_t(type >> 8), uint8_t(type)}; }
Bytes pppoe(uint16_t ppp_proto, uint8_t vertype = 0x11) { return {vertype, 0, 0, 7, 0, 0, uint8_t(ppp_proto >> 8), uint8_t(ppp_proto)}; }
Bytes mpls(uint32_t label, bool bottom) {
  return {uint8_t(label >> 12), uint8_t(label >> 4), uint8_t((label << 4) | (bottom ? 1 : 0)), 64};
}
Bytes vlan(uint16_t tpid, uint16_t id, uint16_t next) {
  return {uint8_t(tpid >> 8), uint8_t(tpid), uint8_t(id >> 8), uint8_t(id), uint8_t(next >> 8), uint8_t(next)};
}
Bytes ip6_tcp() {
  const auto f = ipv6_with_ext({});
  return Bytes(f.begin() + 14, f.end());
}

// A GRE header: flags byte, version byte, protocol, then `rest` (checksum and offset, key,
// sequence and acknowledgement numbers, source routes, as the flags say).
Bytes gre(uint8_t flags, uint8_t ver, uint16_t proto, const Bytes& rest = {}) {
  return cat({{flags, ver, uint8_t(proto >> 8), uint8_t(proto)}, rest});
}

struct LayerCase {
  const char* name;
  Bytes frame;
  LinkType link;
  MalformedReason malformed;
  UndecodedReason undecoded;
  L3 l3;
  L4 l4;
  uint8_t tunnel_depth;
  uint16_t dport;  // of the innermost decoded transport header (0: none)
};

Bytes eth_no_type() { Bytes e = eth(0); e.resize(12); return e; }

std::vector<LayerCase> layer_cases() {
  const Bytes tcp = ip4_tcp(9);
  const Bytes gpdu = ip4_udp(40000, 2152, gtp(tcp));
  const Bytes pdu_container = {1, 0x10, 0x01, 0x00};  // one 4-byte extension header, then none
  return {
      {"pppoe", cat({eth(0x8864), pppoe(0x0021), tcp}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::tcp, 0, 80},
      {"pppoe ipv6", cat({eth(0x8864), pppoe(0x0057), ip6_tcp()}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv6, L4::tcp, 0, 80},
      {"qinq pppoe", cat({eth_no_type(), vlan(0x88a8, 10, 0x8100), {0, 20, 0x88, 0x64}, pppoe(0x0021), tcp}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::tcp, 0, 80},
      {"pppoe lcp", cat({eth(0x8864), pppoe(0xc021), Bytes(12, 1)}), LinkType::ethernet, MalformedReason::none, UndecodedReason::ppp_protocol, L3::other, L4::none, 0, 0},
      {"pppoe discovery", cat({eth(0x8863), Bytes(20, 0)}), LinkType::ethernet, MalformedReason::none, UndecodedReason::pppoe_discovery, L3::other, L4::none, 0, 0},
      {"pppoe bad version", cat({eth(0x8864), pppoe(0x0021, 0x21), tcp}), LinkType::ethernet, MalformedReason::pppoe_bad_header, UndecodedReason::none, L3::none, L4::none, 0, 0},
      {"mpls", cat({eth(0x8847), mpls(100, false), mpls(200, true), tcp}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::tcp, 0, 80},
      {"mpls ipv6", cat({eth(0x8848), mpls(3, true), ip6_tcp()}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv6, L4::tcp, 0, 80},
      {"mpls ethernet pseudowire", cat({eth(0x8847), mpls(5, true), Bytes(4, 0), eth(0x0800), tcp}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::tcp, 0, 80},
      {"mpls pseudowire vlan", cat({eth(0x8847), mpls(5, true), Bytes(4, 0), eth_no_type(), vlan(0x8100, 7, 0x0800), tcp}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::tcp, 0, 80},
      {"mpls associated channel", cat({eth(0x8847), mpls(13, true), {0x10, 0, 0, 0x21}, Bytes(20, 0)}), LinkType::ethernet, MalformedReason::none, UndecodedReason::mpls_payload, L3::other, L4::none, 0, 0},
      {"mpls too deep", [&] { Bytes f = eth(0x8847); for (int k = 0; k < 9; ++k) f = cat({f, mpls(k, false)}); return cat({f, tcp}); }(), LinkType::ethernet, MalformedReason::mpls_too_deep, UndecodedReason::none, L3::none, L4::none, 0, 0},
      {"mpls eight labels", [&] { Bytes f = eth(0x8847); for (int k = 0; k < 8; ++k) f = cat({f, mpls(k, k == 7)}); return cat({f, tcp}); }(), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::tcp, 0, 80},
      {"cisco hdlc", cat({{0x0f, 0, 0x08, 0x00}, tcp}), LinkType::cisco_hdlc, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::tcp, 0, 80},
      {"cisco hdlc mpls", cat({{0x0f, 0, 0x88, 0x47}, mpls(16, true), tcp}), LinkType::cisco_hdlc, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::tcp, 0, 80},
      {"cisco hdlc slarp", cat({{0x8f, 0, 0x80, 0x35}, Bytes(20, 0)}), LinkType::cisco_hdlc, MalformedReason::none, UndecodedReason::ethertype, L3::other, L4::none, 0, 0},
      {"ppp hdlc-like framing", cat({{0xff, 0x03, 0x00, 0x21}, tcp}), LinkType::ppp, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::tcp, 0, 80},
      {"ppp no address/control", cat({{0x00, 0x21}, tcp}), LinkType::ppp, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::tcp, 0, 80},
      {"ppp compressed protocol", cat({{0x21}, tcp}), LinkType::ppp, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::tcp, 0, 80},
      {"ppp ipv6", cat({{0xff, 0x03, 0x00, 0x57}, ip6_tcp()}), LinkType::ppp, MalformedReason::none, UndecodedReason::none, L3::ipv6, L4::tcp, 0, 80},
      {"ppp mpls", cat({{0xff, 0x03, 0x02, 0x81}, mpls(16, true), tcp}), LinkType::ppp, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::tcp, 0, 80},
      {"ppp lcp", cat({{0xff, 0x03, 0xc0, 0x21}, Bytes(12, 1)}), LinkType::ppp, MalformedReason::none, UndecodedReason::ppp_protocol, L3::other, L4::none, 0, 0},
      {"ppp truncated", Bytes{0xff, 0x03, 0x00}, LinkType::ppp, MalformedReason::l2_truncated, UndecodedReason::none, L3::none, L4::none, 0, 0},
      {"ppp_hdlc", cat({{0xff, 0x03, 0x00, 0x21}, tcp}), LinkType::ppp_hdlc, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::tcp, 0, 80},
      {"lldp", cat({eth(0x88cc), Bytes(30, 0)}), LinkType::ethernet, MalformedReason::none, UndecodedReason::ethertype, L3::other, L4::none, 0, 0},
      {"802.3 llc", cat({eth(46), Bytes(46, 0x42)}), LinkType::ethernet, MalformedReason::none, UndecodedReason::llc, L3::other, L4::none, 0, 0},
      {"raw version 5", cat({{0x50}, Bytes(39, 0)}), LinkType::raw, MalformedReason::none, UndecodedReason::ip_version, L3::other, L4::none, 0, 0},
      {"gtp-u", cat({eth(0x0800), gpdu}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::tcp, 1, 80},
      {"gtp-u from port 2152", cat({eth(0x0800), ip4_udp(2152, 40000, gtp(tcp))}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::tcp, 1, 80},
      {"gtp-u ipv6 inside", cat({eth(0x0800), ip4_udp(40000, 2152, gtp(ip6_tcp()))}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv6, L4::tcp, 1, 80},
      {"gtp-u sequence number", cat({eth(0x0800), ip4_udp(40000, 2152, gtp(tcp, 0x32, {0, 1, 0, 0}))}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::tcp, 1, 80},
      {"gtp-u extension header", cat({eth(0x0800), ip4_udp(40000, 2152, gtp(tcp, 0x34, cat({{0, 0, 0, 0x85}, pdu_container})))}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::tcp, 1, 80},
      {"gtp-u extension of length 0", cat({eth(0x0800), ip4_udp(40000, 2152, gtp(tcp, 0x34, {0, 0, 0, 0x85, 0, 0, 0, 0}))}), LinkType::ethernet, MalformedReason::gtp_bad_extension, UndecodedReason::none, L3::ipv4, L4::udp, 0, 2152},
      {"gtp-u in gtp-u", cat({eth(0x0800), ip4_udp(40000, 2152, gtp(gpdu))}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::tcp, 2, 80},
      {"gtp-u three deep", cat({eth(0x0800), ip4_udp(40000, 2152, gtp(ip4_udp(40000, 2152, gtp(gpdu))))}), LinkType::ethernet, MalformedReason::none, UndecodedReason::tunnel_too_deep, L3::ipv4, L4::udp, 2, 2152},
      {"gtp-u not ip inside", cat({eth(0x0800), ip4_udp(40000, 2152, gtp(Bytes(20, 0x11)))}), LinkType::ethernet, MalformedReason::none, UndecodedReason::gtp_payload, L3::ipv4, L4::udp, 0, 2152},
      {"gtp-u echo request", cat({eth(0x0800), ip4_udp(40000, 2152, {0x32, 1, 0, 4, 0, 0, 0, 0, 0, 1, 0, 0})}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::udp, 0, 2152},
      {"udp 2152 too short for gtp", cat({eth(0x0800), ip4_udp(40000, 2152, {1, 2, 3})}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::udp, 0, 2152},
      {"gtp-u inside mpls", cat({eth(0x8847), mpls(1, true), ip4_udp(40000, 2152, gtp(tcp))}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::tcp, 1, 80},
      {"ipv4 in ipv4", cat({eth(0x0800), ip4_around(4, tcp)}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::tcp, 1, 80},
      {"ipv6 in ipv4 (6in4)", cat({eth(0x0800), ip4_around(41, ip6_tcp())}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv6, L4::tcp, 1, 80},
      {"ipv6 in ipv6", cat({eth(0x86dd), ip6_around(41, ip6_tcp())}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv6, L4::tcp, 1, 80},
      {"ipv4 in ipv6", cat({eth(0x86dd), ip6_around(4, tcp)}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::tcp, 1, 80},
      {"ip in ip inside gtp-u", cat({eth(0x0800), ip4_udp(40000, 2152, gtp(ip4_around(4, tcp)))}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::tcp, 2, 80},
      {"ip in ip three deep", cat({eth(0x0800), ip4_around(4, ip4_around(4, ip4_around(4, tcp)))}), LinkType::ethernet, MalformedReason::none, UndecodedReason::tunnel_too_deep, L3::ipv4, L4::other, 2, 0},
      {"protocol 4 with ipv6 inside is left as it is", cat({eth(0x0800), ip4_around(4, ip6_tcp())}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::other, 0, 0},
      {"nsh ipv4", cat({eth(0x894f), nsh(1), tcp}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::tcp, 0, 80},
      {"nsh md type 2 ipv6", cat({eth(0x894f), nsh(2, 2), ip6_tcp()}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv6, L4::tcp, 0, 80},
      {"nsh ethernet vlan", cat({eth(0x894f), nsh(3), eth_no_type(), vlan(0x8100, 7, 0x0800), tcp}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::tcp, 0, 80},
      {"nsh mpls", cat({eth(0x894f), nsh(5), mpls(9, true), tcp}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::tcp, 0, 80},
      {"nsh in vlan", cat({eth_no_type(), vlan(0x8100, 3, 0x894f), nsh(1), tcp}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::tcp, 0, 80},
      {"nsh md type 1 of the wrong length", cat({eth(0x894f), nsh(1, 1, 0, 4), tcp}), LinkType::ethernet, MalformedReason::nsh_bad_length, UndecodedReason::none, L3::none, L4::none, 0, 0},
      {"nsh version 1", cat({eth(0x894f), nsh(1, 1, 1), tcp}), LinkType::ethernet, MalformedReason::none, UndecodedReason::nsh_unsupported, L3::other, L4::none, 0, 0},
      {"nsh carrying nsh", cat({eth(0x894f), nsh(4), nsh(1), tcp}), LinkType::ethernet, MalformedReason::none, UndecodedReason::nsh_unsupported, L3::other, L4::none, 0, 0},
      {"protocol 41 without payload", cat({eth(0x0800), ip4_around(41, {})}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::other, 0, 0},
      {"gre ipv4", cat({eth(0x0800), ip4_around(47, cat({gre(0, 0, 0x0800), tcp}))}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::tcp, 1, 80},
      {"gre checksum key sequence ipv6", cat({eth(0x0800), ip4_around(47, cat({gre(0xb0, 0, 0x86dd, Bytes(12, 0)), ip6_tcp()}))}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv6, L4::tcp, 1, 80},
      {"gre over ipv6", cat({eth(0x86dd), ip6_around(47, cat({gre(0x20, 0, 0x0800, Bytes(4, 7)), tcp}))}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::tcp, 1, 80},
      {"gre ethernet with a vlan tag", cat({eth(0x0800), ip4_around(47, cat({gre(0, 0, 0x6558), eth_no_type(), vlan(0x8100, 9, 0x0800), tcp}))}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::tcp, 1, 80},
      {"gre vlan", cat({eth(0x0800), ip4_around(47, cat({gre(0, 0, 0x8100), {0, 9, 0x08, 0x00}, tcp}))}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::tcp, 1, 80},
      {"gre erspan type i", cat({eth(0x0800), ip4_around(47, cat({gre(0, 0, 0x88be), eth(0x0800), tcp}))}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::tcp, 1, 80},
      {"gre erspan type ii", cat({eth(0x0800), ip4_around(47, cat({gre(0x10, 0, 0x88be, Bytes(4, 0)), {0x10, 1, 0, 5, 0, 0, 0, 0}, eth(0x0800), tcp}))}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::tcp, 1, 80},
      {"gre erspan type ii of version 2", cat({eth(0x0800), ip4_around(47, cat({gre(0x10, 0, 0x88be, Bytes(4, 0)), {0x20, 1, 0, 5, 0, 0, 0, 0}, eth(0x0800), tcp}))}), LinkType::ethernet, MalformedReason::none, UndecodedReason::gre_payload, L3::ipv4, L4::other, 0, 0},
      {"gre erspan type iii with platform subheader", cat({eth(0x0800), ip4_around(47, cat({gre(0, 0, 0x22eb), {0x20, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0, 1}, Bytes(8, 0), eth(0x0800), tcp}))}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::tcp, 1, 80},
      {"gre source routes", cat({eth(0x0800), ip4_around(47, cat({gre(0x40, 0, 0x0800, cat({Bytes(4, 0), {0x08, 0x00, 0, 4}, Bytes(4, 1), Bytes(4, 0)})), tcp}))}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::tcp, 1, 80},
      {"pptp ppp ipv4", cat({eth(0x0800), ip4_around(47, cat({gre(0x30, 0x81, 0x880b, {0, 0x2e, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2}), {0xff, 0x03, 0x00, 0x21}, tcp}))}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::tcp, 1, 80},
      {"pptp acknowledgement alone", cat({eth(0x0800), ip4_around(47, gre(0x20, 0x81, 0x880b, {0, 0, 0, 1, 0, 0, 0, 2}))}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::other, 0, 0},
      {"pptp lcp", cat({eth(0x0800), ip4_around(47, cat({gre(0x20, 0x01, 0x880b, {0, 8, 0, 1}), {0xff, 0x03, 0xc0, 0x21}, Bytes(4, 1)}))}), LinkType::ethernet, MalformedReason::none, UndecodedReason::ppp_protocol, L3::ipv4, L4::other, 0, 0},
      {"pptp without its key", cat({eth(0x0800), ip4_around(47, cat({gre(0x00, 0x01, 0x880b), {0xff, 0x03, 0x00, 0x21}, tcp}))}), LinkType::ethernet, MalformedReason::gre_bad_header, UndecodedReason::none, L3::ipv4, L4::other, 0, 0},
      {"gre mpls is left undecoded", cat({eth(0x0800), ip4_around(47, cat({gre(0, 0, 0x8847), mpls(5, true), tcp}))}), LinkType::ethernet, MalformedReason::none, UndecodedReason::gre_payload, L3::ipv4, L4::other, 0, 0},
      {"gre version 2", cat({eth(0x0800), ip4_around(47, cat({gre(0, 2, 0x0800), tcp}))}), LinkType::ethernet, MalformedReason::gre_bad_header, UndecodedReason::none, L3::ipv4, L4::other, 0, 0},
      {"gre recursion", cat({eth(0x0800), ip4_around(47, cat({gre(0x01, 0, 0x0800), tcp}))}), LinkType::ethernet, MalformedReason::gre_bad_header, UndecodedReason::none, L3::ipv4, L4::other, 0, 0},
      {"gre key beyond the ip payload", cat({eth(0x0800), ip4_around(47, gre(0x20, 0, 0x0800))}), LinkType::ethernet, MalformedReason::gre_bad_header, UndecodedReason::none, L3::ipv4, L4::other, 0, 0},
      {"gre three deep", cat({eth(0x0800), ip4_around(47, cat({gre(0, 0, 0x0800), ip4_around(47, cat({gre(0, 0, 0x0800), ip4_around(47, cat({gre(0, 0, 0x0800), tcp}))}))}))}), LinkType::ethernet, MalformedReason::none, UndecodedReason::tunnel_too_deep, L3::ipv4, L4::other, 2, 0},
      {"gre inside gtp-u", cat({eth(0x0800), ip4_udp(40000, 2152, gtp(ip4_around(47, cat({gre(0, 0, 0x0800), tcp}))))}), LinkType::ethernet, MalformedReason::none, UndecodedReason::none, L3::ipv4, L4::tcp, 2, 80},
  };
}

}  // namespace

TEST(Decoder, LinkAndTunnelLayers) {
  for (const auto& c : layer_cases()) {
    const auto p = decode(c.frame, c.link);
    EXPECT_EQ(reason(p), c.malformed) << c.name;
    EXPECT_EQ(UndecodedReason(p.undecoded[0]), c.undecoded) << c.name;
    if (c.l3 != L3::none) {
      EXPECT_EQ(L3(p.l3[0]), c.l3) << c.name;
    }
    EXPECT_EQ(L4(p.l4[0]), c.l4) << c.name;
    EXPECT_EQ(p.tunnel_depth[0], c.tunnel_depth) << c.name;
    if (c.dport) {
      EXPECT_EQ(p.dport[0], c.dport) << c.name;
    }
    if (c.l4 == L4::tcp && c.l3 == L3::ipv4) {  // ip4_tcp(9): seq 9, payload "ab"
      EXPECT_EQ(p.tcp_seq[0], 9u) << c.name;
      EXPECT_EQ(p.payload_len[0], 2u) << c.name;
      // The payload offset points at the inner packet's payload within the frame.
      EXPECT_EQ(c.frame[p.payload_off[0]], 'a') << c.name;
      EXPECT_EQ(c.frame[p.payload_off[0] + 1], 'b') << c.name;
    }
    if (c.tunnel_depth && c.l3 == L3::ipv4 && c.undecoded == UndecodedReason::none) {
      EXPECT_EQ(p.src_ip[0], 0x0100000au) << c.name << ": inner 10.0.0.1";
    }
    if (std::string(c.name).find("vlan") != std::string::npos && c.tunnel_depth) {
      ASSERT_EQ(p.vlan_count[0], 1) << c.name << ": the tag inside the tunnel";
      EXPECT_EQ(p.vlan_id[0], 9) << c.name;
    }
  }
}

TEST(Decoder, LinkAndTunnelLayersSurviveEveryTruncation) {
  for (const auto& c : layer_cases()) {
    for (uint32_t cut = 0; cut < c.frame.size(); ++cut) {
      Bytes exact(c.frame.begin(), c.frame.begin() + cut);
      DecodedPacket p;
      clear(p);
      p.cap_len[0] = cut;
      p.wire_len[0] = uint32_t(c.frame.size());
      decode_frame(exact.data(), cut, c.link, p);
      EXPECT_LE(captured_payload(p), cut) << c.name << " cut at " << cut;
      // Cut before the innermost transport header ends: never decoded as a complete packet of the
      // expected depth without a reason.
      if (c.malformed == MalformedReason::none && c.undecoded == UndecodedReason::none && c.l4 == L4::tcp &&
          p.malformed[0] == 0) {
        EXPECT_TRUE(p.tunnel_depth[0] == c.tunnel_depth && p.payload_off[0] != kNoOffset && cut >= p.payload_off[0])
            << c.name << " cut at " << cut << ": depth " << int(p.tunnel_depth[0]);
      }
    }
  }
}

TEST(Decoder, PlainTcp) {
  const auto p = decode(tcp4_frame(0xdeadbeef, 11, 0x18));
  EXPECT_EQ(reason(p), MalformedReason::none);
  EXPECT_EQ(p.l3[0], uint8_t(L3::ipv4));
  EXPECT_EQ(p.l4[0], uint8_t(L4::tcp));
  EXPECT_EQ(p.tcp_seq[0], 0xdeadbeefu);
  EXPECT_EQ(p.tcp_flags[0], 0x18);
  EXPECT_EQ(p.sport[0], 12345);
  EXPECT_EQ(p.dport[0], 80);
  EXPECT_EQ(p.payload_off[0], 54);
  EXPECT_EQ(p.payload_len[0], 11u);
  EXPECT_EQ(p.src_ip[0], 0x0100000au);  // 10.0.0.1 in memory order
}

TEST(Decoder, ThreeVlanTagsDecodeAndAFourthIsTooDeep) {
  auto p = decode(with_vlans(3));
  EXPECT_EQ(reason(p), MalformedReason::none);
  EXPECT_EQ(p.vlan_count[0], 3);
  EXPECT_EQ(p.vlan_id[0], 10);
  EXPECT_EQ(p.vlan_id[2], 0x20c);
  EXPECT_EQ(p.l4[0], uint8_t(L4::tcp));
  p = decode(with_vlans(4));
  EXPECT_EQ(reason(p), MalformedReason::vlan_too_deep);
  EXPECT_EQ(p.vlan_count[0], 3);
}

TEST(Decoder, Ipv4OptionsAreValidated) {
  auto f = tcp4_frame(1, 0);
  // Insert 4 bytes of options (NOP NOP NOP EOL) and fix IHL and total length.
  f.insert(f.begin() + 34, {1, 1, 1, 0});
  f[14] = 0x46;
  f[17] = 44;
  auto p = decode(f);
  EXPECT_EQ(reason(p), MalformedReason::none);
  EXPECT_EQ(p.l4_off[0], 38);
  f[34] = 7; f[35] = 9;  // record-route option claiming 9 bytes inside a 4-byte option area
  p = decode(f);
  EXPECT_EQ(reason(p), MalformedReason::ipv4_bad_options);
  EXPECT_EQ(p.l4[0], uint8_t(L4::tcp));  // decoding goes on past a bad option
}

TEST(Decoder, Ipv4FragmentsAreFlaggedAndOnlyTheFirstDecodedPastL3) {
  auto f = tcp4_frame(1, 8);
  f[20] = 0x20;  // MF, offset 0
  auto p = decode(f);
  EXPECT_EQ(p.ip_frag[0], kFragIsFragment | kFragMore | kFragFirst);
  EXPECT_EQ(p.l4[0], uint8_t(L4::tcp));
  f[20] = 0x00; f[21] = 0x10;  // offset 128, last fragment
  p = decode(f);
  EXPECT_EQ(p.ip_frag[0], kFragIsFragment);
  EXPECT_EQ(p.l4[0], uint8_t(L4::none));
  EXPECT_EQ(p.ip_proto[0], 6);
}

// A first fragment holds the start of its datagram: a UDP length that reaches past it is what the
// whole datagram carries, not a malformed header; a last fragment's is not read.
TEST(Decoder, UdpFirstFragmentIsNotMalformed) {
  Bytes ip = ip4_udp(5000, 53, Bytes(100, 'x'));
  ip[24] = 0x05; ip[25] = 0xdc;  // UDP length 1500: the datagram was cut into fragments
  auto p = decode(cat({eth(0x0800), ip}));
  EXPECT_EQ(reason(p), MalformedReason::udp_bad_length);  // not a fragment: the length lies
  ip[6] = 0x20;  // MF, offset 0
  p = decode(cat({eth(0x0800), ip}));
  EXPECT_EQ(reason(p), MalformedReason::none);
  EXPECT_EQ(p.l4[0], uint8_t(L4::udp));
  EXPECT_EQ(p.payload_len[0], 100u);  // what this fragment carries
  EXPECT_EQ(p.dport[0], 53);
}

TEST(Decoder, Ipv6ExtensionChain) {
  auto p = decode(ipv6_with_ext({0, 43, 60}));
  EXPECT_EQ(reason(p), MalformedReason::none);
  EXPECT_EQ(p.ip_proto[0], 6);
  EXPECT_EQ(p.l4_off[0], 14 + 40 + 24);
  EXPECT_EQ(p.l4[0], uint8_t(L4::tcp));
  p = decode(ipv6_with_ext({44}, 0x0001));  // first fragment, more follow
  EXPECT_EQ(p.ip_frag[0], kFragIsFragment | kFragMore | kFragFirst);
  EXPECT_EQ(p.l4[0], uint8_t(L4::tcp));
  p = decode(ipv6_with_ext({44}, 0x0100));  // later fragment
  EXPECT_EQ(p.ip_frag[0], kFragIsFragment);
  EXPECT_EQ(p.l4[0], uint8_t(L4::none));
  p = decode(ipv6_with_ext({0, 60, 60, 60, 60, 60, 60, 60, 60}));
  EXPECT_EQ(reason(p), MalformedReason::ipv6_too_many_ext);
}

TEST(Decoder, TcpOptions) {
  auto f = tcp4_frame(1, 0, 0x02);
  const std::vector<uint8_t> opts = {2, 4, 0x05, 0xb4, 1, 3, 3, 7, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2,
                                     5, 10, 0, 0, 0, 10, 0, 0, 0, 20, 0, 0};
  f.insert(f.end(), opts.begin(), opts.end());
  f[46] = uint8_t((20 + opts.size()) / 4) << 4;
  f[17] = uint8_t(40 + opts.size());
  const auto p = decode(f);
  EXPECT_EQ(reason(p), MalformedReason::none);
  EXPECT_EQ(p.tcp_mss[0], 1460);
  EXPECT_EQ(p.tcp_wscale[0], 7);
  EXPECT_EQ(p.tcp_tsval[0], 1u);
  EXPECT_EQ(p.tcp_tsecr[0], 2u);
  EXPECT_EQ(p.tcp_sack_n[0], 1);
  EXPECT_EQ(p.tcp_sack[0], 10u);
  EXPECT_EQ(p.tcp_sack[1], 20u);
  EXPECT_EQ(p.tcp_opts[0], kOptMss | kOptWscale | kOptSackPerm | kOptSack | kOptTimestamp);
  auto g = f;
  g[55] = 40;  // window-scale option length runs past the header
  EXPECT_EQ(reason(decode(g)), MalformedReason::tcp_bad_options);
}

// TCP Fast Open (Suricata's DecodeTCPOptions): kind 34 with no cookie or an even cookie of 4 to
// 16 bytes, or the experimental kinds 253/254 of length 4 or 12 with magic 0xf989.
TEST(Decoder, TcpFastOpenOption) {
  struct Case {
    std::vector<uint8_t> opt;
    bool tfo, malformed;
  };
  const Case cases[] = {
      {{34, 2, 1, 1}, true, false},                          // cookie request
      {{34, 10, 1, 2, 3, 4, 5, 6, 7, 8}, true, false},       // 8-byte cookie
      {{34, 5, 1, 2, 3, 1, 1, 1}, false, true},              // odd cookie length
      {{34, 4, 1, 2}, false, true},                          // too short a cookie
      {{254, 4, 0xf9, 0x89}, true, false},                   // experimental, request
      {{253, 12, 0xf9, 0x89, 1, 2, 3, 4, 5, 6, 7, 8}, true, false},
      {{254, 4, 0x12, 0x34}, false, false},                  // another experiment: skipped
  };
  for (const Case& c : cases) {
    auto f = tcp4_frame(1, 0, 0x02);
    std::vector<uint8_t> opts = c.opt;
    while (opts.size() % 4) opts.push_back(0);
    f.insert(f.end(), opts.begin(), opts.end());
    f[46] = uint8_t((20 + opts.size()) / 4) << 4;
    f[17] = uint8_t(40 + opts.size());
    const auto p = decode(f);
    SCOPED_TRACE(int(c.opt[0]) * 100 + c.opt[1]);
    EXPECT_EQ(reason(p) == MalformedReason::tcp_bad_options, c.malformed);
    if (!c.malformed) {
      EXPECT_EQ((p.tcp_opts[0] & kOptTfo) != 0, c.tfo);
    }
  }
}

TEST(Decoder, EveryLinkType) {
  const auto eth = tcp4_frame(9, 2);
  const std::vector<uint8_t> ip(eth.begin() + 14, eth.end());
  std::vector<uint8_t> sll(16, 0);
  sll[14] = 0x08;
  sll.insert(sll.end(), ip.begin(), ip.end());
  std::vector<uint8_t> sll2(20, 0);
  sll2[0] = 0x08;
  sll2.insert(sll2.end(), ip.begin(), ip.end());
  std::vector<uint8_t> null_le = {2, 0, 0, 0}, null_be = {0, 0, 0, 2}, loop = {0, 0, 0, 2};
  null_le.insert(null_le.end(), ip.begin(), ip.end());
  null_be.insert(null_be.end(), ip.begin(), ip.end());
  loop.insert(loop.end(), ip.begin(), ip.end());
  const std::pair<std::vector<uint8_t>, LinkType> cases[] = {
      {eth, LinkType::ethernet}, {ip, LinkType::raw},         {ip, LinkType::ipv4},
      {sll, LinkType::linux_sll}, {sll2, LinkType::linux_sll2}, {null_le, LinkType::null_bsd},
      {null_be, LinkType::null_bsd}, {loop, LinkType::loop}};
  for (const auto& [frame, link] : cases) {
    const auto p = decode(frame, link);
    EXPECT_EQ(reason(p), MalformedReason::none) << link_name(link);
    EXPECT_EQ(p.l4[0], uint8_t(L4::tcp)) << link_name(link);
    EXPECT_EQ(p.tcp_seq[0], 9u) << link_name(link);
    EXPECT_EQ(p.payload_len[0], 2u) << link_name(link);
  }
  EXPECT_EQ(reason(decode(eth, static_cast<LinkType>(250))), MalformedReason::link_unsupported);
}

TEST(Decoder, EveryTruncationPointIsSafeAndNamed) {
  const std::vector<std::vector<uint8_t>> frames = {tcp4_frame(1, 30), with_vlans(2), ipv6_with_ext({0, 43})};
  for (const auto& f : frames) {
    for (uint32_t cut = 0; cut < f.size(); ++cut) {
      // The decoder sees only `cut` bytes; put them at the end of an exactly-sized buffer so that
      // an over-read would leave it (caught under ASan in the fuzz build).
      std::vector<uint8_t> exact(f.begin(), f.begin() + cut);
      DecodedPacket p;
      clear(p);
      p.cap_len[0] = cut;
      p.wire_len[0] = uint32_t(f.size());
      decode_frame(exact.data(), cut, LinkType::ethernet, p);
      const bool payload_cut = p.payload_off[0] != kNoOffset && cut >= p.payload_off[0];
      if (!payload_cut) {
        EXPECT_NE(reason(p), MalformedReason::none) << "cut at " << cut;
      }
      EXPECT_LE(captured_payload(p), cut);
    }
  }
}

TEST(Decoder, FlowHashIsSymmetric) {
  auto a = tcp4_frame(1, 0);
  auto b = a;
  std::swap_ranges(b.begin() + 26, b.begin() + 30, b.begin() + 30);  // swap addresses
  std::swap_ranges(b.begin() + 34, b.begin() + 36, b.begin() + 36);  // swap ports
  const auto pa = decode(a), pb = decode(b);
  EXPECT_EQ(pa.flow_hash[0], pb.flow_hash[0]);
  auto c = a;
  c[35] ^= 1;  // another source port: another flow
  EXPECT_NE(decode(c).flow_hash[0], pa.flow_hash[0]);
}

// IPv6 extension headers of every length encoding: hop-by-hop, routing and destination options
// count 8-byte units beyond the first 8 (Hdr Ext Len), AH counts 4-byte units minus 2; each case
// puts the TCP header exactly where the lengths say and nowhere else.
TEST(Decoder, Ipv6ExtensionHeadersWithNonZeroLengthsAndAh) {
  struct Ext {
    uint8_t type;
    uint8_t len_field;
    size_t bytes;  // what the field means
  };
  const std::vector<std::vector<Ext>> chains = {
      {{0, 1, 16}},                          // hop-by-hop, 16 bytes
      {{60, 2, 24}},                         // destination options, 24 bytes
      {{43, 3, 32}},                         // routing, 32 bytes
      {{51, 4, 24}},                         // AH: (4 + 2) * 4 = 24 bytes
      {{51, 1, 12}},                         // AH with no ICV padding: 12 bytes
      {{0, 0, 8}, {51, 7, 36}, {60, 1, 16}}, // hop-by-hop, AH (36), destination options
  };
  for (const auto& chain : chains) {
    std::vector<uint8_t> f = {2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x86, 0xdd};
    size_t ext_total = 0;
    for (const Ext& e : chain) ext_total += e.bytes;
    const uint16_t plen = uint16_t(ext_total + 20);
    std::vector<uint8_t> ip(40, 0);
    ip[0] = 0x60; ip[4] = uint8_t(plen >> 8); ip[5] = uint8_t(plen); ip[6] = chain[0].type; ip[7] = 64;
    ip[8] = 0x20; ip[9] = 0x01; ip[23] = 1; ip[24] = 0x20; ip[25] = 0x01; ip[39] = 2;
    f.insert(f.end(), ip.begin(), ip.end());
    for (size_t k = 0; k < chain.size(); ++k) {
      // Filled with 0x06 so that a decoder reading a next-header from the wrong place sees "TCP"
      // at the wrong offset and gets the ports wrong.
      std::vector<uint8_t> e(chain[k].bytes, 0x06);
      e[0] = k + 1 < chain.size() ? chain[k + 1].type : 6;
      e[1] = chain[k].len_field;
      f.insert(f.end(), e.begin(), e.end());
    }
    std::vector<uint8_t> t(20, 0);
    t[0] = 0x04; t[1] = 0xd2; t[2] = 0x01; t[3] = 0xbb; t[12] = 0x50; t[13] = 0x02;
    f.insert(f.end(), t.begin(), t.end());
    const auto p = decode(f);
    SCOPED_TRACE("chain of " + std::to_string(chain.size()) + ", first type " + std::to_string(chain[0].type));
    EXPECT_EQ(reason(p), MalformedReason::none);
    EXPECT_EQ(p.l4[0], uint8_t(L4::tcp));
    EXPECT_EQ(p.l4_off[0], 14 + 40 + ext_total);
    EXPECT_EQ(p.sport[0], 1234);
    EXPECT_EQ(p.dport[0], 443);
    EXPECT_EQ(p.payload_len[0], 0u);
  }
}

namespace {

// The names of the decoder events p raised, in order, and "+dropped" when more did not fit.
std::vector<std::string> events_of(const DecodedPacket& p) {
  std::vector<std::string> out;
  for (int k = 0; k < kDecodeEventSlots && p.events[k]; ++k) out.push_back(decode_event_name(DecodeEvent(p.events[k] & 0x7f)));
  if (p.events[kDecodeEventSlots - 1] & 0x80) out.push_back("+dropped");
  return out;
}

// tcp4_frame with `opts` as IPv4 options (a multiple of 4 bytes), IHL and total length fixed.
Bytes ip4_options(const Bytes& opts) {
  auto f = tcp4_frame(1, 0);
  f.insert(f.begin() + 34, opts.begin(), opts.end());
  f[14] = uint8_t(0x45 + opts.size() / 4);
  f[17] = uint8_t(40 + opts.size());
  return f;
}

// tcp4_frame with `opts` as TCP options (a multiple of 4 bytes), data offset and lengths fixed.
Bytes tcp_options(const Bytes& opts) {
  auto f = tcp4_frame(1, 0, 0x02);
  f.insert(f.end(), opts.begin(), opts.end());
  f[46] = uint8_t((20 + opts.size()) / 4) << 4;
  f[17] = uint8_t(40 + opts.size());
  return f;
}

Bytes edit(Bytes f, size_t at, std::initializer_list<uint8_t> bytes) {
  for (const uint8_t b : bytes) f[at++] = b;
  return f;
}

}  // namespace

// Suricata's decoder events (decode-event:NAME), each on a frame built to raise it under the
// condition Suricata's decoders (decode-ipv4.c, decode-ipv6.c, decode-tcp.c, decode-udp.c) check,
// and frames that must raise none. Offsets: Ethernet 14, IPv4 at 14, TCP/UDP at 34; IPv6 at 14,
// its first extension header at 54.
TEST(Decoder, SuricataDecoderEvents) {
  struct Case {
    const char* what;
    Bytes frame;
    std::vector<std::string> want;
    uint32_t caplen = ~0u;
  };
  const Bytes v4 = tcp4_frame(1, 4);
  const Bytes udp = cat({eth(0x0800), ip4_udp(53, 53, Bytes(8, 'x'))});
  Bytes fh_only = ipv6_with_ext({44}, 0);  // a useless fragment header and no TCP header after it
  fh_only.resize(14 + 40 + 8);
  fh_only[19] = 8;
  const Case cases[] = {
      {"plain TCP", v4, {}},
      {"plain UDP", udp, {}},
      {"IPv6 with a hop-by-hop jumbo-free PadN", edit(ipv6_with_ext({0}), 56, {1, 4}), {"ipv6.hopopts_only_padding"}},
      {"IPv4 header length 16", edit(v4, 14, {0x44}), {"ipv4.hlen_too_small"}},
      {"version 6 behind ethertype IPv4", edit(v4, 14, {0x65}), {"ipv4.wrong_ip_version"}},
      {"total length under the header's", edit(v4, 16, {0, 16}), {"ipv4.iplen_smaller_than_hlen"}},
      {"fewer bytes captured than the total length", v4, {"ipv4.trunc_pkt"}, uint32_t(v4.size() - 2)},
      {"IPv4 header cut", v4, {"ipv4.pkt_too_small"}, 14 + 12},
      {"option length past the header", ip4_options({7, 9, 4, 0}), {"ipv4.opt_invalid_len"}},
      {"a kind Suricata does not know", ip4_options({0x99, 4, 0, 0}), {"ipv4.opt_invalid"}},
      {"record route pointer not on a word", ip4_options({7, 7, 5, 0, 0, 0, 0, 0}), {"ipv4.opt_malformed"}},
      {"router alert twice", ip4_options({148, 4, 0, 0, 148, 4, 0, 0}), {"ipv4.opt_duplicate"}},
      {"router alert of length 3", ip4_options({148, 3, 0, 1}), {"ipv4.opt_invalid_len"}},
      {"an option with no room for its length", ip4_options({1, 1, 1, 148}), {"ipv4.opt_eol_required"}},
      {"ICMPv6 inside IPv4", edit(v4, 23, {58}), {"ipv4.icmpv6"}},
      {"TCP data offset 16", edit(v4, 46, {0x40}), {"tcp.hlen_too_small"}},
      {"TCP header cut", v4, {"ipv4.trunc_pkt", "tcp.pkt_too_small"}, 34 + 12},
      {"MSS twice", tcp_options({2, 4, 5, 0xb4, 2, 4, 5, 0xb4}), {"tcp.opt_duplicate"}},
      {"MSS of length 3", tcp_options({2, 3, 5, 1}), {"tcp.opt_invalid_len"}},
      {"an empty SACK is allowed", tcp_options({5, 2, 1, 1}), {}},
      {"UDP length 4", edit(udp, 38, {0, 4}), {"udp.len_invalid"}},
      {"UDP length past the datagram", edit(udp, 38, {0, 40}), {"udp.pkt_too_small"}},
      {"IPv6 hop-by-hop twice", ipv6_with_ext({0, 0}), {"ipv6.hopopts_only_padding", "ipv6.exthdr_dupl_hh"}},
      {"destination options three times", ipv6_with_ext({60, 60, 60}),
       {"ipv6.dstopts_only_padding", "ipv6.exthdr_dupl_dh"}},
      {"an unknown destination option", edit(ipv6_with_ext({60}), 56, {0x1e, 4}), {"ipv6.dstopts_unknown_opt"}},
      {"an option past its header", edit(ipv6_with_ext({60}), 56, {0x1e, 9}), {"ipv6.exthdr_invalid_optlen"}},
      {"routing header type 0", ipv6_with_ext({43}), {"ipv6.rh_type_0"}},
      {"routing header twice", edit(ipv6_with_ext({43, 43}), 56, {2}), {"ipv6.exthdr_dupl_rh"}},
      {"fragment header at 0 without more", ipv6_with_ext({44}, 0), {"ipv6.exthdr_useless_fh"}},
      {"nothing after a fragment header", fh_only, {"ipv6.exthdr_useless_fh", "ipv6.trunc_exthdr"}},
      {"two fragment headers", ipv6_with_ext({44, 44}, 0), {"ipv6.exthdr_useless_fh", "ipv6.exthdr_dupl_fh"}},
      {"fragment header's reserved byte set", edit(ipv6_with_ext({44}, 0x0001), 55, {7}),
       {"ipv6.fh_non_zero_reserved_field", "ipv6.frag_invalid_length"}},
      {"a first fragment of 20 bytes (not a multiple of 8)", ipv6_with_ext({44}, 0x0001), {"ipv6.frag_invalid_length"}},
      {"data after no next header", edit(ipv6_with_ext({}), 20, {59}), {"ipv6.data_after_none_header"}},
      {"IPv6 header cut", ipv6_with_ext({}), {"ipv6.pkt_too_small"}, 14 + 30},
      {"fewer IPv6 bytes captured than announced", ipv6_with_ext({}), {"ipv6.trunc_pkt", "tcp.pkt_too_small"}, 14 + 40 + 20 - 1},
      {"ICMPv4 inside IPv6", edit(ipv6_with_ext({}), 20, {1}), {"ipv6.icmpv4"}},
      {"IPv4 announced inside IPv6, version 6 found", cat({eth(0x86dd), ip6_around(4, ip6_around(59, {}))}),
       {"ipv6.ipv4_in_ipv6_wrong_version"}},
      {"more events than a packet keeps", edit(ipv6_with_ext({0, 0, 43, 43, 60, 60, 60}), 54 + 16 + 2, {2}),
       {"ipv6.hopopts_only_padding", "ipv6.exthdr_dupl_hh", "ipv6.exthdr_dupl_rh", "ipv6.dstopts_only_padding",
        "+dropped"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    EXPECT_EQ(events_of(decode(c.frame, LinkType::ethernet, c.caplen)), c.want);
  }
}

// Head-only decoding (slicing) raises the events of the whole record: the truncation events read
// the record's captured length, not the head's.
TEST(Decoder, SlicedHeadRaisesTheWholeRecordsEvents) {
  const Bytes f = tcp4_frame(1, 400);
  Bytes rec(16, 0);
  rec[8] = uint8_t(f.size()); rec[9] = uint8_t(f.size() >> 8);
  rec[12] = rec[8]; rec[13] = rec[9];
  rec.insert(rec.end(), f.begin(), f.end());
  DecodedPacket head, whole;
  decode_record(rec.data(), 96, RecordFormat{0, 0}, LinkType::ethernet, head, rec.size());
  decode_record(rec.data(), rec.size(), RecordFormat{0, 0}, LinkType::ethernet, whole);
  EXPECT_EQ(events_of(head), std::vector<std::string>{});
  EXPECT_EQ(head.cap_len[0], whole.cap_len[0]);
  EXPECT_EQ(events_of(decode(f, LinkType::ethernet, 80)), std::vector<std::string>{"ipv4.trunc_pkt"});
}
