// decode/decoder.hpp — the packet decoder, written once for the CPU and the GPU.
//
// decode_frame() walks one captured frame from its link-layer header to its transport header and
// fills a DecodedPacket (one packet's worth of the fields in fields.hpp). Every read is checked
// against the captured length first; a fault stops the walk, records a MalformedReason and keeps
// what was decoded before it. decode_record() does the same for a frame preceded by its 16-byte
// pcap record header, which is how packets sit in a batch buffer (see core/packet_batch.hpp), and
// store()/load() move one packet between a DecodedPacket and the struct-of-arrays view.
//
// Supported: Ethernet II and 802.3 (length field), up to 3 stacked 802.1Q / 802.1ad / QinQ tags;
// Linux SLL and SLL2; raw IPv4/IPv6; BSD and OpenBSD loopback; Cisco HDLC. Between the link and IP:
// PPPoE sessions (PPP carrying IPv4/IPv6), MPLS label stacks (up to kMaxMplsLabels; IP payload
// told by its version nibble, an Ethernet pseudowire by its control word), NSH (ethertype 0x894f,
// carrying IP, Ethernet or MPLS). Tunnels: GTP-U G-PDUs
// (UDP port 2152), VXLAN (UDP destination port 4789) and Geneve (UDP port 6081), IP in IP (IPv4
// or IPv6 carried as protocol 4 or 41 in IPv4 or IPv6) and GRE are
// decoded into their inner packet, up to kMaxTunnelDepth levels, and the packet's fields are
// the inner packet's (tunnel_depth says how deep; decode_frame's max_depth stops short of that to
// read a carrier). A layer gaspp does not decode (another ethertype, PPP control
// traffic, an MPLS pseudowire, PPPoE discovery) sets `undecoded` to the reason and stops there;
// nothing is guessed. IPv4 with options (validated) and
// fragments (flagged; only the first fragment is decoded past L3); IPv6 with hop-by-hop, routing,
// fragment, destination-options, AH and mobility extension headers; TCP with MSS, window scale,
// SACK-permitted, SACK and timestamp options; UDP; ICMP; ICMPv6.
//
// Example (host):
//   DecodedPacket p;
//   decode_frame(frame, caplen, LinkType::ethernet, p);
//   if (p.l4 == uint8_t(L4::tcp)) use(p.tcp_seq[0], p.payload_len[0]);
#pragma once
#include "gaspp/fields.hpp"

namespace gaspp {

// One packet's fields, laid out as the view's arrays would hold them (element 0..N-1).
struct DecodedPacket {
#define GASPP_X(type, name, n) type name[n];
  GASPP_DECODED_FIELDS(GASPP_X)
#undef GASPP_X
};

GASPP_HD GASPP_FORCEINLINE void clear(DecodedPacket& p) {
#define GASPP_X(type, name, n) \
  for (int k = 0; k < (n); ++k) p.name[k] = 0;
  GASPP_DECODED_FIELDS(GASPP_X)
#undef GASPP_X
  p.l3_off[0] = p.l4_off[0] = p.payload_off[0] = kNoOffset;
}

GASPP_HD GASPP_FORCEINLINE void store(const DecodedView& v, uint32_t i, const DecodedPacket& p) {
#define GASPP_X(type, name, n) \
  for (int k = 0; k < (n); ++k) v.name[size_t(i) * (n) + k] = p.name[k];
  GASPP_DECODED_FIELDS(GASPP_X)
#undef GASPP_X
}

GASPP_HD GASPP_FORCEINLINE void load(const DecodedView& v, uint32_t i, DecodedPacket& p) {
#define GASPP_X(type, name, n) \
  for (int k = 0; k < (n); ++k) p.name[k] = v.name[size_t(i) * (n) + k];
  GASPP_DECODED_FIELDS(GASPP_X)
#undef GASPP_X
}

namespace detail {

constexpr int kMaxVlanTags = 3;
constexpr int kMaxIpv6ExtHeaders = 8;
constexpr int kMaxMplsLabels = 8;      // labels in one stack (Suricata and Zeek take any; 8 is ample)
constexpr int kMaxTunnelDepth = 2;     // nested tunnels decoded (Zeek's Tunnel::max_depth default)
constexpr int kMaxGtpExtensions = 8;   // GTP-U extension headers walked
constexpr uint16_t kGtpUPort = 2152;
constexpr uint16_t kVxlanPort = 4789;   // IANA; Suricata's decoder.vxlan.ports default
constexpr uint16_t kGenevePort = 6081;  // IANA; Suricata's decoder.geneve.ports default

GASPP_HD GASPP_FORCEINLINE void fail(DecodedPacket& p, MalformedReason r) {
  if (p.malformed[0] == 0) p.malformed[0] = static_cast<uint8_t>(r);
}

// Raises decoder event e on p (once): appended to p.events while there is room; past that the
// last slot's high bit says events were dropped (count_packet counts it).
GASPP_HD GASPP_FORCEINLINE void raise(DecodedPacket& p, DecodeEvent e) {
  for (int k = 0; k < kDecodeEventSlots; ++k) {
    if ((p.events[k] & 0x7f) == uint8_t(e)) return;
    if (p.events[k] == 0) {
      p.events[k] = uint8_t(e);
      return;
    }
  }
  p.events[kDecodeEventSlots - 1] |= 0x80;
}
GASPP_HD GASPP_FORCEINLINE void fail(DecodedPacket& p, MalformedReason r, DecodeEvent e) {
  fail(p, r);
  raise(p, e);
}

GASPP_HD GASPP_FORCEINLINE void undecoded(DecodedPacket& p, UndecodedReason r, uint32_t off) {
  p.undecoded[0] = static_cast<uint8_t>(r);
  p.l3[0] = uint8_t(L3::other);
  p.l3_off[0] = static_cast<uint16_t>(off);
}

GASPP_HD GASPP_FORCEINLINE void copy_addr4(uint32_t* dst, const uint8_t* src) {
  dst[0] = load_bytes32(src);
  dst[1] = dst[2] = dst[3] = 0;
}
GASPP_HD GASPP_FORCEINLINE void copy_addr16(uint32_t* dst, const uint8_t* src) {
  for (int k = 0; k < 4; ++k) dst[k] = load_bytes32(src + 4 * k);
}

// TCP options between f[off] and f[end]; end is within the captured bytes.
// Events as Suricata's DecodeTCPOptions: a length that does not fit or is wrong for the kind is
// tcp.opt_invalid_len, a second MSS, window scale, SACK-permitted, SACK, timestamp or Fast Open
// option tcp.opt_duplicate (the first one counts).
GASPP_HD inline void decode_tcp_options(const uint8_t* f, uint32_t off, uint32_t end, DecodedPacket& p) {
  constexpr auto kBad = MalformedReason::tcp_bad_options;
  constexpr auto kLen = DecodeEvent::tcp_opt_invalid_len;
  while (off < end) {
    const uint8_t kind = f[off];
    if (kind == 0) return;  // end of option list
    if (kind == 1) { ++off; continue; }
    if (off + 2 > end) { fail(p, kBad, kLen); return; }
    const uint8_t len = f[off + 1];
    if (len < 2 || off + len > end) { fail(p, kBad, kLen); return; }
    const uint8_t* o = f + off;
    const auto once = [&](uint8_t bit) {
      if (p.tcp_opts[0] & bit) raise(p, DecodeEvent::tcp_opt_duplicate);
      return !(p.tcp_opts[0] & bit);
    };
    switch (kind) {
      case 2:
        if (len != 4) fail(p, kBad, kLen);
        else if (once(kOptMss)) { p.tcp_mss[0] = load_be16(o + 2); p.tcp_opts[0] |= kOptMss; }
        break;
      case 3:
        if (len != 3) fail(p, kBad, kLen);
        else if (once(kOptWscale)) { p.tcp_wscale[0] = o[2]; p.tcp_opts[0] |= kOptWscale; }
        break;
      case 4:
        if (len != 2) fail(p, kBad, kLen);
        else if (once(kOptSackPerm)) p.tcp_opts[0] |= kOptSackPerm;
        break;
      case 5: {
        if (len == 2) break;  // an empty SACK: useless, allowed (Suricata raises nothing)
        if ((len - 2) % 8 != 0 || len < 10 || len > 34) { fail(p, kBad, kLen); break; }
        if (!once(kOptSack)) break;
        p.tcp_opts[0] |= kOptSack;
        const int blocks = (len - 2) / 8;
        for (int b = 0; b < blocks && p.tcp_sack_n[0] < 4; ++b) {
          const int n = p.tcp_sack_n[0]++;
          p.tcp_sack[2 * n] = load_be32(o + 2 + 8 * b);
          p.tcp_sack[2 * n + 1] = load_be32(o + 6 + 8 * b);
        }
        break;
      }
      case 8:
        if (len != 10) {
          fail(p, kBad, kLen);
        } else if (once(kOptTimestamp)) {
          p.tcp_tsval[0] = load_be32(o + 2);
          p.tcp_tsecr[0] = load_be32(o + 6);
          p.tcp_opts[0] |= kOptTimestamp;
        }
        break;
      case 34:
        // TCP Fast Open: a cookie request (2) or a cookie of 4 to 16 bytes, even (Suricata's check).
        if (len == 2 || (len >= 6 && len <= 18 && (len - 2) % 2 == 0)) {
          if (once(kOptTfo)) p.tcp_opts[0] |= kOptTfo;
        } else {
          fail(p, kBad, kLen);
        }
        break;
      case 253:
      case 254:
        // Experimental options: TCP Fast Open's before kind 34 (magic 0xf989, RFC 7413 draft).
        if ((len == 4 || len == 12) && load_be16(o + 2) == 0xf989) p.tcp_opts[0] |= kOptTfo;
        break;
      default:
        break;  // unknown options are skipped by their length, as a TCP stack does
    }
    off += len;
  }
}

// Transport header at f[off]; l4_end is where the IP datagram says it ends (may exceed caplen when
// the capture was cut short by the snap length).
GASPP_HD inline void decode_l4(const uint8_t* f, uint32_t caplen, uint32_t off, uint32_t l4_end,
                               DecodedPacket& p) {
  p.l4_off[0] = static_cast<uint16_t>(off);
  const uint32_t avail = caplen > off ? caplen - off : 0;
  const uint32_t ip_payload = l4_end > off ? l4_end - off : 0;
  switch (p.ip_proto[0]) {
    case 6: {
      p.l4[0] = uint8_t(L4::tcp);
      if (avail < 20) { fail(p, MalformedReason::tcp_truncated, DecodeEvent::tcp_pkt_too_small); return; }
      const uint8_t* t = f + off;
      p.sport[0] = load_be16(t);
      p.dport[0] = load_be16(t + 2);
      p.tcp_seq[0] = load_be32(t + 4);
      p.tcp_ack[0] = load_be32(t + 8);
      const uint32_t hlen = uint32_t(t[12] >> 4) * 4;
      p.tcp_flags[0] = static_cast<uint16_t>(((t[12] & 1) << 8) | t[13]);
      p.tcp_win[0] = load_be16(t + 14);
      if (hlen < 20) { fail(p, MalformedReason::tcp_bad_offset, DecodeEvent::tcp_hlen_too_small); return; }
      if (hlen > avail) { fail(p, MalformedReason::tcp_truncated, DecodeEvent::tcp_hlen_too_small); return; }
      if (hlen > ip_payload) { fail(p, MalformedReason::tcp_bad_offset, DecodeEvent::tcp_hlen_too_small); return; }
      decode_tcp_options(f, off + 20, off + hlen, p);
      p.payload_off[0] = static_cast<uint16_t>(off + hlen);
      p.payload_len[0] = ip_payload - hlen;
      return;
    }
    case 17: {
      p.l4[0] = uint8_t(L4::udp);
      if (avail < 8) { fail(p, MalformedReason::udp_truncated, DecodeEvent::udp_hlen_too_small); return; }
      const uint8_t* u = f + off;
      p.sport[0] = load_be16(u);
      p.dport[0] = load_be16(u + 2);
      const uint32_t ulen = load_be16(u + 4);
      if (ip_payload < 8) { fail(p, MalformedReason::udp_bad_length, DecodeEvent::udp_hlen_too_small); return; }
      p.payload_off[0] = static_cast<uint16_t>(off + 8);
      p.payload_len[0] = ip_payload - 8;
      // A zero length is legal over IPv6 for jumbograms; anything else must fit the datagram. A
      // first fragment holds only the start of its datagram: its length may reach past it, and
      // what it carries is what it announces.
      const bool first_fragment = p.ip_frag[0] & kFragMore;
      if ((ulen != 0 || p.l3[0] != uint8_t(L3::ipv6)) && (ulen < 8 || (ulen > ip_payload && !first_fragment)))
        fail(p, MalformedReason::udp_bad_length, ulen < 8 ? DecodeEvent::udp_len_invalid : DecodeEvent::udp_pkt_too_small);
      else if (ulen >= 8)
        p.payload_len[0] = ulen - 8 < ip_payload - 8 ? ulen - 8 : ip_payload - 8;
      return;
    }
    case 1:
    case 58: {
      p.l4[0] = uint8_t(p.ip_proto[0] == 1 ? L4::icmp : L4::icmpv6);
      // ICMP in the other IP version (Suricata's ipv4.icmpv6, ipv6.icmpv4) is decoded as it says.
      if (p.ip_proto[0] == 58 && p.l3[0] == uint8_t(L3::ipv4)) raise(p, DecodeEvent::ipv4_icmpv6);
      if (p.ip_proto[0] == 1 && p.l3[0] == uint8_t(L3::ipv6)) raise(p, DecodeEvent::ipv6_icmpv4);
      const DecodeEvent small = p.ip_proto[0] == 1 ? DecodeEvent::icmpv4_pkt_too_small : DecodeEvent::icmpv6_pkt_too_small;
      if (avail < 4) { fail(p, MalformedReason::icmp_truncated, small); return; }
      const uint8_t* c = f + off;
      p.icmp_type[0] = c[0];
      p.icmp_code[0] = c[1];
      const bool v4 = p.ip_proto[0] == 1;
      const bool echo = v4 ? (c[0] == 0 || c[0] == 8) : (c[0] == 128 || c[0] == 129);
      if (echo) {
        if (avail < 8) { fail(p, MalformedReason::icmp_truncated, small); return; }
        p.icmp_id[0] = load_be16(c + 4);
      }
      if (ip_payload >= 8) {
        p.payload_off[0] = static_cast<uint16_t>(off + 8);
        p.payload_len[0] = ip_payload - 8;
      }
      return;
    }
    default:
      p.l4[0] = uint8_t(L4::other);
      p.payload_off[0] = static_cast<uint16_t>(off);
      p.payload_len[0] = ip_payload;
      return;
  }
}

// IPv4 options between f[o] and f[end] (a header of ihl > 20 bytes, captured). An option that does
// not fit makes the packet malformed; the rest are Suricata's events only (DecodeIPV4Options): a
// second option of a known kind, a length wrong for its kind, a route or timestamp pointer out of
// place, an unknown kind, an option cut by the header's end where an EOL should have been.
GASPP_HD inline void decode_ipv4_options(const uint8_t* f, uint32_t o, uint32_t end, DecodedPacket& p) {
  uint16_t seen = 0;  // IpOptBits of the known kinds met (valid or not: a second one is a duplicate)
  while (o < end) {
    const uint8_t t = f[o];
    if (t == 0) { p.ip_opts[0] |= kIpOptEol; return; }
    if (t == 1) { p.ip_opts[0] |= kIpOptNop; ++o; continue; }
    if (o + 2 > end) { fail(p, MalformedReason::ipv4_bad_options, DecodeEvent::ipv4_opt_eol_required); return; }
    const uint8_t len = f[o + 1];
    if (len < 2 || o + len > end) { fail(p, MalformedReason::ipv4_bad_options, DecodeEvent::ipv4_opt_invalid_len); return; }
    const uint8_t* v = f + o;
    uint16_t flag = 0;  // IpOptBits
    bool len_ok = true, ptr_ok = true;
    switch (t) {
      case 7: case 131: case 137:  // record route, loose and strict source route
        flag = t == 7 ? kIpOptRr : t == 131 ? kIpOptLsrr : kIpOptSsrr;
        len_ok = len >= 3;
        ptr_ok = !len_ok || (v[2] >= 4 && v[2] % 4 == 0 && v[2] <= len + 1);
        break;
      case 68: {  // timestamp: pointer past the 4-byte header, on a record boundary
        flag = kIpOptTs;
        len_ok = len >= 5;
        const uint32_t rec = (len_ok && (v[3] & 0x0f)) ? 8 : 4;
        ptr_ok = !len_ok || (v[2] >= 5 && (v[2] - 5) % rec == 0 && v[2] <= len + 1);
        break;
      }
      case 25: flag = kIpOptQs; len_ok = len >= 8; break;        // quick-start
      case 130: flag = kIpOptSec; len_ok = len >= 3; break;      // security
      case 133: flag = kIpOptEsec; len_ok = len >= 3; break;     // extended security
      case 134: flag = kIpOptCipso; len_ok = len >= 10; break;   // CIPSO
      case 136: flag = kIpOptSid; len_ok = len == 4; break;      // stream id
      case 148: flag = kIpOptRtralt; len_ok = len == 4; break;   // router alert
      default: raise(p, DecodeEvent::ipv4_opt_invalid); break;
    }
    if (flag) {
      if (seen & flag) raise(p, DecodeEvent::ipv4_opt_duplicate);
      else if (!len_ok) raise(p, DecodeEvent::ipv4_opt_invalid_len);
      else if (!ptr_ok) raise(p, DecodeEvent::ipv4_opt_malformed);
      else p.ip_opts[0] |= flag;
      seen |= flag;
    }
    o += len;
  }
}

GASPP_HD inline void decode_ipv4(const uint8_t* f, uint32_t caplen, uint32_t off, DecodedPacket& p) {
  p.l3[0] = uint8_t(L3::ipv4);
  p.l3_off[0] = static_cast<uint16_t>(off);
  if (caplen < off + 20) { fail(p, MalformedReason::ipv4_truncated, DecodeEvent::ipv4_pkt_too_small); return; }
  const uint8_t* h = f + off;
  if ((h[0] >> 4) != 4) { fail(p, MalformedReason::ipv4_bad_version, DecodeEvent::ipv4_wrong_ip_version); return; }
  const uint32_t ihl = uint32_t(h[0] & 15) * 4;
  if (ihl < 20) { fail(p, MalformedReason::ipv4_bad_ihl, DecodeEvent::ipv4_hlen_too_small); return; }
  const uint32_t total = load_be16(h + 2);
  p.ip_ttl[0] = h[8];
  p.ip_proto[0] = h[9];
  copy_addr4(p.src_ip, h + 12);
  copy_addr4(p.dst_ip, h + 16);
  const uint16_t frag = load_be16(h + 6);
  const uint32_t frag_off = uint32_t(frag & 0x1fff) * 8;
  uint8_t ff = 0;
  if (frag & 0x4000) ff |= kFragDontFragment;
  if (frag & 0x2000) ff |= kFragMore;
  if ((frag & 0x2000) || frag_off != 0) ff |= kFragIsFragment;
  if ((ff & kFragIsFragment) && frag_off == 0) ff |= kFragFirst;
  p.ip_frag[0] = ff;
  if (caplen < off + ihl) { fail(p, MalformedReason::ipv4_truncated, DecodeEvent::ipv4_trunc_pkt); return; }
  if (total < ihl) { fail(p, MalformedReason::ipv4_bad_total_len, DecodeEvent::ipv4_iplen_smaller_than_hlen); return; }
  // Suricata's ipv4.trunc_pkt: fewer bytes captured than the datagram announces (the snap length
  // included); the packet is decoded as far as it goes.
  // p.cap_len, not caplen: a sliced head is decoded with caplen cut to the head's bytes.
  if (p.cap_len[0] < off + total) raise(p, DecodeEvent::ipv4_trunc_pkt);
  decode_ipv4_options(f, off + 20, off + ihl, p);
  uint32_t end = off + total;
  // A datagram longer than the frame on the wire is bogus; one longer than the capture was only
  // cut by the snap length.
  if (end > p.wire_len[0]) { fail(p, MalformedReason::ipv4_bad_total_len); end = p.wire_len[0]; }
  if (frag_off != 0) return;  // later fragments carry no transport header
  decode_l4(f, caplen, off + ihl, end, p);
}

GASPP_HD inline bool ipv6_is_extension(uint8_t nh) {
  return nh == 0 || nh == 43 || nh == 44 || nh == 60 || nh == 51 || nh == 135;
}

// The options of a hop-by-hop or destination-options header (opts: its bytes after the next-header
// and length bytes), for Suricata's events: an option that overruns the header, a router alert,
// jumbo or home-address option too short for its value (exthdr_invalid_optlen); an option of
// another kind (unknown_opt); a header of padding only (only_padding). Options are not kept.
GASPP_HD inline void ipv6_option_events(const uint8_t* opts, uint32_t n, bool hop, DecodedPacket& p) {
  uint32_t pads = 0, others = 0;
  for (uint32_t k = 0; k < n;) {
    const uint8_t t = opts[k];
    if (t == 0) { ++pads; ++k; continue; }  // Pad1
    if (k + 1 >= n || k + 2 + opts[k + 1] > n) { raise(p, DecodeEvent::ipv6_exthdr_invalid_optlen); break; }
    const uint8_t len = opts[k + 1];
    if (t == 1) {
      ++pads;
    } else if ((t == 0x05 && len < 2) || (t == 0xc2 && len < 4) || (t == 0xc9 && len < 16)) {
      raise(p, DecodeEvent::ipv6_exthdr_invalid_optlen);
      break;
    } else {
      if (t != 0x05 && t != 0xc2 && t != 0xc9)
        raise(p, hop ? DecodeEvent::ipv6_hopopts_unknown_opt : DecodeEvent::ipv6_dstopts_unknown_opt);
      if (t != 0xc2) ++others;  // Suricata counts a jumbo option as neither
    }
    k += 2u + len;
  }
  if (pads && !others) raise(p, hop ? DecodeEvent::ipv6_hopopts_only_padding : DecodeEvent::ipv6_dstopts_only_padding);
}

// IPv6 and its extension headers, with Suricata's events (DecodeIPV6ExtHdrs): a second
// hop-by-hop or routing header, a third destination-options header, and a second fragment header
// are skipped with an event (exthdr_dupl_*); a fragment header at offset 0 with no more fragments
// is no fragment (exthdr_useless_fh) and decoding goes on past it.
GASPP_HD inline void decode_ipv6(const uint8_t* f, uint32_t caplen, uint32_t off, DecodedPacket& p) {
  p.l3[0] = uint8_t(L3::ipv6);
  p.l3_off[0] = static_cast<uint16_t>(off);
  if (caplen < off + 40) { fail(p, MalformedReason::ipv6_truncated, DecodeEvent::ipv6_pkt_too_small); return; }
  const uint8_t* h = f + off;
  if ((h[0] >> 4) != 6) { fail(p, MalformedReason::ipv6_bad_version, DecodeEvent::ipv6_wrong_ip_version); return; }
  const uint32_t plen = load_be16(h + 4);
  uint8_t nh = h[6];
  p.ip_ttl[0] = h[7];
  copy_addr16(p.src_ip, h + 8);
  copy_addr16(p.dst_ip, h + 24);
  uint32_t end = off + 40 + plen;
  if (plen == 0) end = p.wire_len[0];  // jumbogram (hop-by-hop jumbo option) or empty
  if (p.cap_len[0] < end) raise(p, DecodeEvent::ipv6_trunc_pkt);  // as ipv4.trunc_pkt (decode_ipv4)
  if (end > p.wire_len[0]) { fail(p, MalformedReason::ipv6_bad_payload_len); end = p.wire_len[0]; }
  uint32_t o = off + 40;
  uint32_t seen = 0;  // 1 hop-by-hop, 2 routing, 4 fragment; destination options counted in dst
  int dst = 0;
  constexpr auto kTrunc = DecodeEvent::ipv6_trunc_exthdr;
  for (int n = 0; ipv6_is_extension(nh); ++n) {
    if (n == kMaxIpv6ExtHeaders) { p.ip_proto[0] = nh; fail(p, MalformedReason::ipv6_too_many_ext); return; }
    if (caplen < o + 8 || o + 8 > end) { p.ip_proto[0] = nh; fail(p, MalformedReason::ipv6_ext_truncated, kTrunc); return; }
    const uint8_t* e = f + o;
    uint32_t len;
    if (nh == 44) {  // fragment header: fixed 8 bytes
      len = 8;
      if (e[1] != 0) raise(p, DecodeEvent::ipv6_fh_non_zero_reserved_field);
      const uint16_t fo = load_be16(e + 2);
      const uint32_t frag_off = uint32_t(fo >> 3) * 8;
      if (seen & 4) {
        raise(p, DecodeEvent::ipv6_exthdr_dupl_fh);
      } else if (frag_off == 0 && !(fo & 1)) {
        seen |= 4;
        raise(p, DecodeEvent::ipv6_exthdr_useless_fh);
      } else {
        seen |= 4;
        uint8_t ff = kFragIsFragment;
        if (fo & 1) ff |= kFragMore;
        if (frag_off == 0) ff |= kFragFirst;
        p.ip_frag[0] = ff;
        // RFC 8200 4.5: every fragment but the last is a multiple of 8 bytes.
        if ((fo & 1) && (end - o) % 8 != 0) raise(p, DecodeEvent::ipv6_frag_invalid_length);
        if (frag_off != 0) { p.ip_proto[0] = e[0]; return; }
      }
    } else if (nh == 51) {
      len = (uint32_t(e[1]) + 2) * 4;
    } else {
      len = (uint32_t(e[1]) + 1) * 8;
      if (o + len <= caplen && o + len <= end) {
        if (nh == 0 || nh == 60) {
          const bool dupl = nh == 0 ? (seen & 1) != 0 : dst == 2;
          if (dupl) raise(p, nh == 0 ? DecodeEvent::ipv6_exthdr_dupl_hh : DecodeEvent::ipv6_exthdr_dupl_dh);
          else ipv6_option_events(e + 2, len - 2, nh == 0, p);
          if (nh == 0) seen |= 1;
          else if (dst < 2) ++dst;
        } else if (nh == 43) {
          if (seen & 2) raise(p, DecodeEvent::ipv6_exthdr_dupl_rh);
          else if (e[2] == 0) raise(p, DecodeEvent::ipv6_rh_type_0);
          seen |= 2;
        }
      }
    }
    nh = e[0];
    o += len;
    if (o > caplen || o > end) { p.ip_proto[0] = nh; fail(p, MalformedReason::ipv6_ext_truncated, kTrunc); return; }
  }
  p.ip_proto[0] = nh;
  if (nh == 59) {  // no next header
    p.l4[0] = uint8_t(L4::none);
    if (o < end) raise(p, DecodeEvent::ipv6_data_after_none_header);
    return;
  }
  // Past an extension header Suricata reads no header of fewer than 2 bytes, an upper-layer one
  // included: trunc_exthdr. Right after the fixed header the transport's own checks decide
  // (tcp.pkt_too_small for an empty TCP payload, ...), as its DecodeIPV6 hands it over directly.
  if (o > off + 40 && end < o + 2) { fail(p, MalformedReason::ipv6_ext_truncated, kTrunc); return; }
  decode_l4(f, caplen, o, end, p);
}

// Ethertype for a raw IP packet, from its version nibble.
GASPP_HD GASPP_FORCEINLINE uint16_t ethertype_from_version(const uint8_t* f, uint32_t caplen, uint32_t off) {
  if (caplen <= off) return 0;
  const int v = f[off] >> 4;
  return v == 4 ? 0x0800 : v == 6 ? 0x86dd : 0;
}

// Address family of BSD loopback → ethertype (AF_INET is 2 everywhere; AF_INET6 is 24, 28 or 30).
GASPP_HD GASPP_FORCEINLINE uint16_t ethertype_from_af(uint32_t af) {
  if (af == 2) return 0x0800;
  if (af == 24 || af == 28 || af == 30 || af == 10) return 0x86dd;
  return 0;
}

// Offset of the inner IP packet when the decoded packet is a GTP-U G-PDU (UDP port 2152, GTPv1,
// message type 255) that is not an IP fragment; 0 when it is not one. Sets malformed for a G-PDU
// whose header or extension chain does not fit.
GASPP_HD inline uint32_t gtp_u_inner(const uint8_t* f, uint32_t caplen, DecodedPacket& p) {
  if (p.l4[0] != uint8_t(L4::udp) || (p.sport[0] != kGtpUPort && p.dport[0] != kGtpUPort)) return 0;
  if ((p.ip_frag[0] & kFragIsFragment) || p.malformed[0]) return 0;
  const uint32_t off = p.payload_off[0];
  const uint32_t end = off + p.payload_len[0];  // the UDP payload as its header announces
  if (end < off + 8) return 0;                  // too short to be a G-PDU: plain UDP
  // Bytes the datagram has but the capture (or a sliced head) lacks: the packet cannot be told
  // apart from plain UDP, so it is flagged rather than guessed.
  if (caplen < off + 8) { fail(p, MalformedReason::gtp_truncated); return 0; }
  const uint8_t* g = f + off;
  // Version 1, protocol type GTP (not GTP'), G-PDU: other messages (echo, error indication,
  // end marker) are signalling on the outer flow.
  if ((g[0] >> 5) != 1 || !(g[0] & 0x10) || g[1] != 0xff) return 0;
  uint32_t o = off + 8;
  if (g[0] & 0x07) {  // E, S or PN: sequence number, N-PDU number and next extension type follow
    if (o + 4 > end) { fail(p, MalformedReason::gtp_bad_extension); return 0; }
    if (caplen < o + 4) { fail(p, MalformedReason::gtp_truncated); return 0; }
    uint8_t next = f[o + 3];
    o += 4;
    for (int n = 0; (g[0] & 0x04) && next != 0; ++n) {
      if (n == kMaxGtpExtensions || o + 4 > end) { fail(p, MalformedReason::gtp_bad_extension); return 0; }
      if (caplen < o + 1) { fail(p, MalformedReason::gtp_truncated); return 0; }
      const uint32_t len = uint32_t(f[o]) * 4;  // in 4-byte units, including length and next type
      if (len == 0 || o + len > end) { fail(p, MalformedReason::gtp_bad_extension); return 0; }
      if (caplen < o + len) { fail(p, MalformedReason::gtp_truncated); return 0; }
      next = f[o + len - 1];
      o += len;
    }
  }
  if (o >= end) return 0;  // a G-PDU with no payload: nothing inside to decode
  if (caplen <= o) { fail(p, MalformedReason::gtp_truncated); return 0; }
  return o;
}

GASPP_HD GASPP_FORCEINLINE bool is_vlan_tpid(uint16_t et) { return et == 0x8100 || et == 0x88a8 || et == 0x9100; }

// Which UDP tunnel a carrier packet is by its ports, in the order decode_l3 tries them (the
// packet is known to carry a tunnel: its inner packet was decoded): 1 GTP-U, 2 VXLAN, 3 Geneve.
GASPP_HD GASPP_FORCEINLINE int udp_tunnel_kind(const DecodedPacket& c) {
  if (c.l4[0] != uint8_t(L4::udp)) return 0;
  if (c.sport[0] == kGtpUPort || c.dport[0] == kGtpUPort) return 1;
  if (c.dport[0] == kVxlanPort) return 2;
  if (c.sport[0] == kGenevePort || c.dport[0] == kGenevePort) return 3;
  return 0;
}

// The inner packet of a VXLAN (RFC 7348) or Geneve (RFC 8926) datagram, as Suricata's decoders
// take them with their default settings: VXLAN on UDP destination port 4789 (RFC 7348 tells it by
// that port only), its I flag set and every reserved bit zero (reserved-bits-check: strict), an
// Ethernet frame inside; Geneve on either port 6081, version 0, no reserved flag or byte set, its
// options adding up to the option length, carrying Ethernet (0x6558), IPv4, IPv6 or ARP. Returns
// the inner offset and its type in et (0x6558: an Ethernet header first); 0 when the datagram is
// none of them or fails a check (it stays plain UDP, as in Suricata). The inner packet must be
// captured, as Suricata's length checks read captured bytes. A VXLAN frame whose ethertype is not
// IP, ARP or a VLAN tag is left as UDP (Suricata raises VXLAN_UNKNOWN_PAYLOAD_TYPE there).
GASPP_HD inline uint32_t udp_tunnel_inner(const uint8_t* f, uint32_t caplen, DecodedPacket& p, uint16_t& et) {
  if (p.l4[0] != uint8_t(L4::udp) || (p.ip_frag[0] & kFragIsFragment) || p.malformed[0]) return 0;
  const uint32_t off = p.payload_off[0];
  if (off == kNoOffset) return 0;
  uint32_t end = off + p.payload_len[0];
  if (end > caplen) end = caplen;
  if (end <= off) return 0;
  const uint8_t* v = f + off;
  if (p.dport[0] == kVxlanPort) {
    if (end < off + 8 + 14) return 0;
    if (!(v[0] & 0x08) || (v[0] & 0xf7) || v[1] || v[2] || v[3] || v[7]) return 0;
    const uint16_t inner_et = load_be16(v + 8 + 12);
    if (inner_et != 0x0800 && inner_et != 0x86dd && inner_et != 0x0806 && !is_vlan_tpid(inner_et)) return 0;
    et = 0x6558;
    return off + 8;
  }
  if (p.sport[0] == kGenevePort || p.dport[0] == kGenevePort) {
    if (end < off + 8) return 0;
    const uint32_t opt = uint32_t(v[0] & 0x3f) * 4;
    if ((v[0] >> 6) != 0 || (v[1] & 0x3f) || v[7] || end < off + 8 + opt) return 0;
    uint32_t walked = 0;  // each option: class, type, length in 4-byte words; a multiple of 4 each
    while (walked < opt) walked += 4 + uint32_t(v[8 + walked + 3] & 0x1f) * 4;
    if (walked != opt) return 0;
    const uint16_t t = load_be16(v + 2);
    if (t != 0x6558 && t != 0x0800 && t != 0x86dd && t != 0x0806) return 0;
    const uint32_t inner = off + 8 + opt;
    if (inner >= end || (t == 0x6558 && end < inner + 14)) return 0;
    et = t;
    return inner;
  }
  return 0;
}

// The offset of the inner IP header when packet p (its IPv4 or IPv6 header just decoded) carries
// IPv4 in IP (protocol 4, RFC 2003) or IPv6 in IP (protocol 41, RFC 4213 / RFC 2473); 0 when it
// does not. A fragment (the reassembled datagram is decoded instead), a malformed outer header or
// an inner header whose version disagrees with the protocol leaves the packet as it is; an inner
// header the capture cut off is ip_in_ip_truncated (the packet cannot be decoded as announced).
GASPP_HD GASPP_FORCEINLINE uint32_t ip_in_ip_inner(const uint8_t* f, uint32_t caplen, DecodedPacket& p) {
  if (p.l4[0] != uint8_t(L4::other) || (p.ip_proto[0] != 4 && p.ip_proto[0] != 41)) return 0;
  if ((p.ip_frag[0] & kFragIsFragment) || p.malformed[0] || p.payload_off[0] == kNoOffset || p.payload_len[0] == 0) return 0;
  const uint32_t off = p.payload_off[0];
  if (caplen <= off) { fail(p, MalformedReason::ip_in_ip_truncated); return 0; }
  if ((f[off] >> 4) == (p.ip_proto[0] == 4 ? 4 : 6)) return off;
  if (p.l3[0] == uint8_t(L3::ipv6))
    raise(p, p.ip_proto[0] == 4 ? DecodeEvent::ipv6_ipv4_in_ipv6_wrong_version : DecodeEvent::ipv6_ipv6_in_ipv6_wrong_version);
  return 0;
}

// The ethertype of what a PPP frame of `protocol` carries (IPv4, IPv6, MPLS); 0 for the rest (LCP,
// IPCP and PPP's other control and non-IP protocols).
GASPP_HD GASPP_FORCEINLINE uint16_t ethertype_of_ppp(uint16_t protocol) {
  switch (protocol) {
    case 0x0021: return 0x0800;
    case 0x0057: return 0x86dd;
    case 0x0281: return 0x8847;
    case 0x0283: return 0x8848;
    default: return 0;
  }
}

// The offset past a PPP link header (LinkType::ppp / ppp_hdlc) and its protocol; 0 when the frame
// is too short. The address/control pair (ff 03) is optional on LINKTYPE_PPP: a first byte ff is
// the address (no protocol starts with it); a protocol whose first byte is odd is one byte long
// (RFC 1661 protocol-field compression).
GASPP_HD GASPP_FORCEINLINE uint32_t ppp_header(const uint8_t* f, uint32_t caplen, uint16_t& protocol) {
  if (caplen < 1 || (f[0] == 0xff && caplen < 2)) return 0;
  uint32_t off = f[0] == 0xff ? 2 : 0;
  if (caplen < off + 1) return 0;
  if (f[off] & 1) {
    protocol = f[off];
    return off + 1;
  }
  if (caplen < off + 2) return 0;
  protocol = load_be16(f + off);
  return off + 2;
}

constexpr int kMaxGreRoutes = 16;  // RFC 1701 source route entries walked in a GRE header

// The offset of what a GRE packet carries (IP protocol 47, packet p's IPv4 or IPv6 header just
// decoded), as Suricata's decoder reads GRE: version 0 (RFC 2784 and 2890: checksum, key and
// sequence number when flagged; RFC 1701's source route entries walked to the null one) or version
// 1 (PPTP, RFC 2637: a key, no checksum, routing or recursion, PPP inside). `et` gets what it
// carries: 0x0800 / 0x86dd (IP), 0x0806 (ARP), 0x8100 / 0x88a8 (a VLAN tag), 0x6558 (an Ethernet
// frame: transparent Ethernet bridging, ERSPAN types I, II and III, whose headers are skipped) or,
// for PPP, its protocol's ethertype. 0 when p is not GRE or is a fragment; when the header is cut
// off (gre_truncated) or breaks the rules (gre_bad_header: p is malformed); when it carries
// anything else (undecoded gre_payload, or ppp_protocol for PPP control traffic); and for a PPTP
// acknowledgement without payload (nothing inside).
// header_end, when given, gets where the GRE header ends (the EVE packet of a GRE tunnel's packet
// starts there, before any ERSPAN or PPP header, as Suricata's pseudo-packet does).
GASPP_HD inline uint32_t gre_inner(const uint8_t* f, uint32_t caplen, DecodedPacket& p, uint16_t& et,
                                   uint32_t* header_end = nullptr) {
  if (p.l4[0] != uint8_t(L4::other) || p.ip_proto[0] != 47) return 0;
  if ((p.ip_frag[0] & kFragIsFragment) || p.malformed[0] || p.payload_off[0] == kNoOffset) return 0;
  const uint32_t base = p.payload_off[0], end = base + p.payload_len[0];
  // A field the header announces must lie within the IP payload (else a bad header, Suricata's
  // event `too_big` for it) and within the capture (else cut off). Each fault raises the event
  // Suricata's DecodeGRE gives it (the first it meets).
  const auto have = [&](uint32_t upto, DecodeEvent too_big) {
    if (upto > end) {
      fail(p, MalformedReason::gre_bad_header);
      if (too_big != DecodeEvent::none) raise(p, too_big);  // none: Suricata has no event for it
      return false;
    }
    if (upto > caplen) { fail(p, MalformedReason::gre_truncated); return false; }
    return true;
  };
  if (!have(base + 4, DecodeEvent::gre_pkt_too_small)) return 0;
  const uint8_t flags = f[base], ver = f[base + 1];
  const uint16_t proto = load_be16(f + base + 2);
  uint32_t o = base + 4;
  const auto bad = [&](DecodeEvent e) {
    fail(p, MalformedReason::gre_bad_header, e);
    return uint32_t(0);
  };
  if ((ver & 0x07) == 0) {
    constexpr DecodeEvent kBig = DecodeEvent::gre_version0_hdr_too_big;
    if (flags & 0x07) return bad(DecodeEvent::gre_version0_recur);  // recursion control
    if (ver & 0xf8) return bad(DecodeEvent::gre_version0_flags);
    if (flags & 0xc0) o += 4;  // checksum and offset (present with either bit)
    if (flags & 0x20) o += 4;  // key
    if (flags & 0x10) o += 4;  // sequence number
    if (!have(o, kBig)) return 0;
    if (flags & 0x40) {  // source route entries: address family, offset, length, then `length` bytes
      for (int n = 0;; ++n) {
        if (n == kMaxGreRoutes) { fail(p, MalformedReason::gre_bad_header); return 0; }
        if (!have(o + 4, kBig)) return 0;
        const uint16_t af = load_be16(f + o);
        const uint8_t len = f[o + 3];
        o += 4;
        if (af == 0 && len == 0) break;
        o += len;
        if (!have(o, kBig)) return 0;
      }
    }
  } else if ((ver & 0x07) == 1) {
    // PPTP: checksum, routing, strict source route, recursion and the other flags must be clear,
    // the key present, the protocol PPP.
    if (flags & 0x80) return bad(DecodeEvent::gre_version1_chksum);
    if (flags & 0x40) return bad(DecodeEvent::gre_version1_route);
    if (flags & 0x08) return bad(DecodeEvent::gre_version1_ssr);
    if (flags & 0x07) return bad(DecodeEvent::gre_version1_recur);
    if (ver & 0x78) return bad(DecodeEvent::gre_version1_flags);
    if (proto != 0x880b) return bad(DecodeEvent::gre_version1_wrong_protocol);
    if (!(flags & 0x20)) return bad(DecodeEvent::gre_version1_no_key);
    o += 4;                     // key: payload length, call id
    if (flags & 0x10) o += 4;   // sequence number
    if (ver & 0x80) o += 4;     // acknowledgement number
    if (!have(o, DecodeEvent::gre_version1_hdr_too_big)) return 0;
    if (load_be16(f + base + 4) == 0) return 0;  // an acknowledgement alone: nothing inside
  } else {
    return bad(DecodeEvent::gre_wrong_version);
  }
  if (header_end) *header_end = o;
  switch (proto) {
    case 0x0800: case 0x86dd: case 0x0806: case 0x8100: case 0x88a8: case 0x6558:
      et = proto;
      return o;
    case 0x88be:  // ERSPAN type II (sequence number present: an 8-byte header first) or type I (none)
      if (flags & 0x10) {
        if (!have(o + 8, DecodeEvent::none)) return 0;
        if ((f[o] >> 4) != 1) { p.undecoded[0] = uint8_t(UndecodedReason::gre_payload); return 0; }
        o += 8;
      }
      et = 0x6558;
      return o;
    case 0x22eb:  // ERSPAN type III: a 12-byte header, 8 more with the platform subheader (bit O)
      if (!have(o + 12, DecodeEvent::none)) return 0;
      if ((f[o] >> 4) != 2) { p.undecoded[0] = uint8_t(UndecodedReason::gre_payload); return 0; }
      o += (f[o + 11] & 0x01) ? 20 : 12;
      if (!have(o, DecodeEvent::none)) return 0;
      et = 0x6558;
      return o;
    case 0x880b: {  // PPP: address and control optional, then its protocol
      uint16_t ppp = 0;
      const uint32_t hl = o < caplen ? ppp_header(f + o, caplen - o, ppp) : 0;
      if (hl == 0) { fail(p, MalformedReason::gre_truncated); return 0; }
      et = ethertype_of_ppp(ppp);
      if (et == 0 || et == 0x8847 || et == 0x8848) {  // control traffic, or MPLS (not read inside GRE)
        p.undecoded[0] = uint8_t(et ? UndecodedReason::gre_payload : UndecodedReason::ppp_protocol);
        return 0;
      }
      return o + hl;
    }
    default:  // the carrier stays as it is, counted
      p.undecoded[0] = uint8_t(UndecodedReason::gre_payload);
      return 0;
  }
}


// A VLAN tag (802.1Q, 802.1ad, or QinQ's 0x9100) at f[off]: its id joins the packet's, `et` becomes
// the type after it and off moves past it. false when p became malformed: `cut` when the tag is
// cut off, vlan_too_deep past kMaxVlanTags tags.
GASPP_HD GASPP_FORCEINLINE bool read_vlan_tag(const uint8_t* f, uint32_t caplen, uint32_t& off, uint16_t& et,
                                              DecodedPacket& p, MalformedReason cut) {
  if (p.vlan_count[0] == kMaxVlanTags) { fail(p, MalformedReason::vlan_too_deep); return false; }
  if (caplen < off + 4) { fail(p, cut); return false; }
  p.vlan_id[p.vlan_count[0]++] = load_be16(f + off) & 0x0fff;
  et = load_be16(f + off + 2);
  off += 4;
  return true;
}

// Clears what an outer IP packet's decoding set, before its tunnel's inner packet is decoded.
GASPP_HD GASPP_FORCEINLINE void clear_l3_up(DecodedPacket& p) {
  for (int k = 0; k < 4; ++k) p.src_ip[k] = p.dst_ip[k] = 0;
  p.ip_proto[0] = p.ip_ttl[0] = p.ip_frag[0] = 0;
  p.ip_opts[0] = 0;
  p.l4[0] = 0;
  p.sport[0] = p.dport[0] = p.icmp_id[0] = 0;
  p.icmp_type[0] = p.icmp_code[0] = 0;
  p.payload_len[0] = 0;
  p.l4_off[0] = p.payload_off[0] = kNoOffset;
}

// The IP layer at f[off] by p.ethertype, then any tunnel inside it, iteratively (no recursion on
// the device): each tunnel's inner packet (GTP-U G-PDU, IP in IP, GRE) replaces the outer one's
// fields. An Ethernet frame inside GRE (bridging, ERSPAN) is read down to its ethertype, its VLAN
// tags joining the packet's (as Suricata's tunnel packets keep their carrier's tags and add their
// own). max_depth < kMaxTunnelDepth stops at that many tunnel levels and leaves the carrier's
// fields (the host reads the outer headers of a tunneled packet this way).
GASPP_HD inline void decode_l3(const uint8_t* f, uint32_t caplen, uint32_t off, DecodedPacket& p,
                               int max_depth = kMaxTunnelDepth) {
  for (int depth = 0;; ++depth) {
    switch (p.ethertype[0]) {
      case 0x0800: decode_ipv4(f, caplen, off, p); break;
      case 0x86dd: decode_ipv6(f, caplen, off, p); break;
      case 0x0806: p.l3[0] = uint8_t(L3::arp); p.l3_off[0] = static_cast<uint16_t>(off); return;
      default: undecoded(p, UndecodedReason::ethertype, off); return;
    }
    uint16_t et = 0;
    uint32_t inner = gtp_u_inner(f, caplen, p);
    if (inner == 0) inner = ip_in_ip_inner(f, caplen, p);
    if (inner != 0) {
      const int v = f[inner] >> 4;
      et = v == 4 ? 0x0800 : v == 6 ? 0x86dd : 0;
    } else {
      inner = udp_tunnel_inner(f, caplen, p, et);
      if (inner == 0) inner = gre_inner(f, caplen, p, et);
    }
    if (inner == 0) return;
    if (depth == max_depth && max_depth < kMaxTunnelDepth) return;
    if (depth == kMaxTunnelDepth) { p.undecoded[0] = uint8_t(UndecodedReason::tunnel_too_deep); return; }
    if (et == 0) { p.undecoded[0] = uint8_t(UndecodedReason::gtp_payload); return; }
    if (et == 0x6558) {  // an Ethernet frame: its addresses, then its type
      if (caplen < inner + 14) { fail(p, MalformedReason::gre_truncated); return; }
      et = load_be16(f + inner + 12);
      inner += 14;
    }
    while (is_vlan_tpid(et))
      if (!read_vlan_tag(f, caplen, inner, et, p, MalformedReason::gre_truncated)) return;
    clear_l3_up(p);
    p.tunnel_depth[0] = static_cast<uint8_t>(depth + 1);
    p.ethertype[0] = et;
    off = inner;
  }
}

// The layers between the link header and IP, from the ethertype `et` at f[off]: VLAN tags
// (802.1Q, 802.1ad, QinQ), PPPoE sessions, MPLS label stacks and the Ethernet pseudowires behind
// them, NSH, in any order they nest; then decode_l3.
GASPP_HD inline void decode_network(const uint8_t* f, uint32_t caplen, uint32_t off, uint16_t et, DecodedPacket& p,
                                    int max_depth = kMaxTunnelDepth) {
  for (;;) {
    p.ethertype[0] = et;
    if (is_vlan_tpid(et)) {
      if (!read_vlan_tag(f, caplen, off, et, p, MalformedReason::l2_truncated)) return;
    } else if (et < 0x0600) {  // 802.3 length field (or an SLL protocol below it): LLC, not decoded
      p.ethertype[0] = 0;
      undecoded(p, UndecodedReason::llc, off);
      return;
    } else if (et == 0x8864) {  // PPPoE session: version/type, code 0, session id, length, PPP protocol
      if (caplen < off + 8) { fail(p, MalformedReason::pppoe_truncated); return; }
      if (f[off] != 0x11 || f[off + 1] != 0) { fail(p, MalformedReason::pppoe_bad_header); return; }
      const uint16_t ppp = load_be16(f + off + 6);
      off += 8;
      et = ethertype_of_ppp(ppp);
      if (et == 0) { p.ethertype[0] = ppp; undecoded(p, UndecodedReason::ppp_protocol, off); return; }
    } else if (et == 0x8863) {
      undecoded(p, UndecodedReason::pppoe_discovery, off);
      return;
    } else if (et == 0x894f) {
      // NSH (RFC 8300), as Suricata's decoder reads it: version 0; MD type 1 (fixed, 24-byte
      // header) or 2 (variable); the length field in 4-byte words; then IPv4, IPv6, Ethernet or
      // MPLS.
      if (caplen < off + 8) { fail(p, MalformedReason::nsh_truncated); return; }
      const uint32_t len = uint32_t(f[off + 1] & 0x3f) * 4;
      const uint8_t md = f[off + 2] & 0x0f, next = f[off + 3];
      if ((f[off] >> 6) != 0 || (md != 1 && md != 2)) { undecoded(p, UndecodedReason::nsh_unsupported, off); return; }
      if (len < 8 || (md == 1 && len != 24)) { fail(p, MalformedReason::nsh_bad_length); return; }
      if (caplen <= off + len) { fail(p, MalformedReason::nsh_truncated); return; }
      off += len;
      if (next == 1) et = 0x0800;
      else if (next == 2) et = 0x86dd;
      else if (next == 5) et = 0x8847;
      else if (next == 3) {
        if (caplen < off + 14) { fail(p, MalformedReason::nsh_truncated); return; }
        et = load_be16(f + off + 12);
        off += 14;
      } else {
        undecoded(p, UndecodedReason::nsh_unsupported, off - len);
        return;
      }
    } else if (et == 0x8847 || et == 0x8848) {  // MPLS unicast / multicast: labels to bottom of stack
      for (int n = 0;; ++n) {
        if (n == kMaxMplsLabels) { fail(p, MalformedReason::mpls_too_deep); return; }
        if (caplen < off + 4) { fail(p, MalformedReason::mpls_truncated); return; }
        const bool bottom = f[off + 2] & 1;
        off += 4;
        if (bottom) break;
      }
      if (caplen <= off) { fail(p, MalformedReason::mpls_truncated); return; }
      et = ethertype_from_version(f, caplen, off);
      if (et == 0 && (f[off] >> 4) == 0) {
        // The generic pseudowire control word (RFC 4385: first nibble 0), then an Ethernet frame,
        // as Suricata and Wireshark read it. Without a control word an Ethernet pseudowire cannot
        // be told from other payloads, so nothing else is tried.
        if (caplen < off + 4 + 14) { fail(p, MalformedReason::mpls_truncated); return; }
        et = load_be16(f + off + 4 + 12);
        off += 4 + 14;
      } else if (et == 0) {
        undecoded(p, UndecodedReason::mpls_payload, off);
        return;
      }
    } else {
      decode_l3(f, caplen, off, p, max_depth);
      return;
    }
  }
}

GASPP_HD GASPP_FORCEINLINE uint32_t symmetric_flow_hash(const DecodedPacket& p) {
  const uint32_t* a = p.src_ip;
  const uint32_t* b = p.dst_ip;
  uint16_t pa = p.sport[0], pb = p.dport[0];
  if (p.l4[0] == uint8_t(L4::icmp) || p.l4[0] == uint8_t(L4::icmpv6)) pa = pb = p.icmp_id[0];
  bool swap = false;
  for (int k = 0; k < 4; ++k) {
    if (a[k] != b[k]) { swap = a[k] > b[k]; break; }
    if (k == 3) swap = pa > pb;
  }
  if (swap) { const uint32_t* t = a; a = b; b = t; uint16_t tp = pa; pa = pb; pb = tp; }
  uint32_t h = 0x9e3779b9u ^ p.ip_proto[0];
  for (int k = 0; k < 4; ++k) h = mix32(h ^ a[k]) + 0x7f4a7c15u;
  for (int k = 0; k < 4; ++k) h = mix32(h ^ b[k]) + 0x7f4a7c15u;
  return mix32(h ^ (uint32_t(pa) << 16 | pb));
}

}  // namespace detail

// Decodes one frame of `caplen` captured bytes; wire_len/ts/cap_len are left to the caller.
// max_depth: the tunnel levels to decode into (decode_l3); the default decodes all it may.
GASPP_HD inline void decode_frame(const uint8_t* f, uint32_t caplen, LinkType link, DecodedPacket& p,
                                  int max_depth = detail::kMaxTunnelDepth) {
  using namespace detail;
  p.link[0] = static_cast<uint8_t>(link);
  if (caplen == 0) { fail(p, MalformedReason::empty); return; }
  uint32_t off = 0;
  switch (link) {
    case LinkType::ethernet:
      if (caplen < 14) { fail(p, MalformedReason::l2_truncated); return; }
      decode_network(f, caplen, 14, load_be16(f + 12), p, max_depth);
      break;
    case LinkType::linux_sll:
      if (caplen < 16) { fail(p, MalformedReason::l2_truncated); return; }
      decode_network(f, caplen, 16, load_be16(f + 14), p, max_depth);
      break;
    case LinkType::linux_sll2:
      if (caplen < 20) { fail(p, MalformedReason::l2_truncated); return; }
      decode_network(f, caplen, 20, load_be16(f), p, max_depth);
      break;
    case LinkType::cisco_hdlc:  // address (0x0f unicast, 0x8f broadcast), control, protocol
      if (caplen < 4) { fail(p, MalformedReason::l2_truncated); return; }
      decode_network(f, caplen, 4, load_be16(f + 2), p, max_depth);
      break;
    case LinkType::ppp:
    case LinkType::ppp_hdlc: {
      uint16_t proto = 0;
      off = ppp_header(f, caplen, proto);
      if (off == 0) { fail(p, MalformedReason::l2_truncated); return; }
      const uint16_t et = ethertype_of_ppp(proto);
      if (et == 0) { p.ethertype[0] = proto; undecoded(p, UndecodedReason::ppp_protocol, off); break; }
      decode_network(f, caplen, off, et, p, max_depth);
      break;
    }
    case LinkType::raw:
    case LinkType::ipv4:
    case LinkType::ipv6:
      p.ethertype[0] = ethertype_from_version(f, caplen, 0);
      if (p.ethertype[0] == 0) { undecoded(p, UndecodedReason::ip_version, 0); break; }
      decode_l3(f, caplen, 0, p, max_depth);
      break;
    case LinkType::null_bsd:
    case LinkType::loop: {
      if (caplen < 4) { fail(p, MalformedReason::l2_truncated); return; }
      uint32_t af = link == LinkType::loop ? load_be32(f) : load_le32(f);
      if (link == LinkType::null_bsd && (af & 0xffff) == 0) af = load_be32(f);  // big-endian writer
      off = 4;
      p.ethertype[0] = ethertype_from_af(af);
      if (p.ethertype[0] == 0) { undecoded(p, UndecodedReason::address_family, 4); break; }
      decode_l3(f, caplen, off, p, max_depth);
      break;
    }
    default:
      fail(p, MalformedReason::link_unsupported);
      return;
  }
  p.flow_hash[0] = symmetric_flow_hash(p);
}

// The 16-byte record header that precedes every frame in a batch buffer: the classic pcap record
// header in the byte order and time resolution of the source.
struct RecordFormat {
  uint8_t swapped;  // fields are in the opposite byte order of little-endian
  uint8_t nanos;    // second field is nanoseconds (else microseconds)
};

constexpr uint64_t kRecordHeaderBytes = 16;

struct RecordHeader {
  uint64_t ts_ns;
  uint32_t cap_len;
  uint32_t wire_len;
};

GASPP_HD GASPP_FORCEINLINE RecordHeader read_record_header(const uint8_t* r, RecordFormat fmt) {
  auto rd = [&](int k) { return fmt.swapped ? load_be32(r + k) : load_le32(r + k); };
  RecordHeader h;
  const uint64_t frac = rd(4);
  h.ts_ns = uint64_t(rd(0)) * 1000000000ull + (fmt.nanos ? frac : frac * 1000ull);
  h.cap_len = rd(8);
  h.wire_len = rd(12);
  return h;
}

// Decodes the record at r; `limit` is how many bytes of the buffer follow r (the frame is cut to it).
// `record_limit` (at least limit) is how many bytes the whole record has there when r is only its
// head (slicing): p.cap_len is then the record's, and the decoder reads no further than limit.
GASPP_HD inline void decode_record(const uint8_t* r, uint64_t limit, RecordFormat fmt, LinkType link,
                                   DecodedPacket& p, uint64_t record_limit = 0) {
  clear(p);
  const RecordHeader h = limit >= 16 ? read_record_header(r, fmt) : RecordHeader{0, 0, 0};
  const auto clip = [&](uint64_t lim) -> uint32_t {
    if (limit < 16 || lim < 16) return 0;
    return h.cap_len > lim - 16 ? static_cast<uint32_t>(lim - 16) : h.cap_len;
  };
  const uint32_t cap = clip(limit);
  const uint32_t record_cap = record_limit > limit ? clip(record_limit) : cap;
  p.ts_ns[0] = h.ts_ns;
  p.cap_len[0] = record_cap;
  p.wire_len[0] = h.wire_len < record_cap ? record_cap : h.wire_len;
  decode_frame(r + 16, cap, link, p);
}

// Captured payload bytes of a decoded packet (payload_len is what the headers announce).
GASPP_HD GASPP_FORCEINLINE uint32_t captured_payload(uint32_t payload_off, uint32_t cap_len, uint32_t payload_len) {
  if (payload_off == kNoOffset || payload_off >= cap_len) return 0;
  const uint32_t room = cap_len - payload_off;
  return payload_len < room ? payload_len : room;
}
GASPP_HD GASPP_FORCEINLINE uint32_t captured_payload(const DecodedPacket& p) {
  return captured_payload(p.payload_off[0], p.cap_len[0], p.payload_len[0]);
}
GASPP_HD GASPP_FORCEINLINE uint32_t captured_payload(const DecodedView& d, uint32_t i) {
  return captured_payload(d.payload_off[i], d.cap_len[i], d.payload_len[i]);
}

}  // namespace gaspp
