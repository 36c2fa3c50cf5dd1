// core/drop_event.cpp — see core/drop_event.hpp.
#include "core/drop_event.hpp"

#include <cstdio>
#include <string>

#include "core/eve_event.hpp"
#include "decode/decoder.hpp"
#include "flow/flow_track.hpp"

namespace gaspp {


const char* drop_reason_name(uint32_t r) {
  switch (r) {
    case kDropReasonRules: return "rules";
    case kDropReasonDefaultPacketPolicy: return "default_packet_policy";
    case kDropReasonDefaultAppPolicy: return "default_app_policy";
    default: return "flow_drop";
  }
}

// A drop event's `reason` as Suricata writes it (PacketDropReasonToString: words, not the stats'
// key): "rules", "flow drop", "stream error", "default packet policy", ...
std::string drop_event_reason(const char* stats_key) {
  std::string s = stats_key;
  for (char& ch : s)
    if (ch == '_') ch = ' ';
  return s;
}

// An EVE `drop` event for a dropped packet, with the fields Suricata's drop log writes: from the IP
// header (IPv4: total length, tos, ttl, id; IPv6: payload length, traffic class, hop limit, flow
// label) and the transport (TCP: sequence, ack, window, flags, reserved bits, urgent pointer; UDP:
// length; ICMP/ICMPv6 echo: id and sequence), read from the frame where it holds them.
std::string drop_event_json(const HostPacket& hp, const std::string& reason, bool ether) {
  const DecodedPacket& d = *static_cast<const DecodedPacket*>(hp.decoded);
  auto u = [](uint64_t v) { return std::to_string(v); };
  const uint8_t* f = hp.frame;
  const uint32_t cap = hp.cap_len;
  auto have = [&](uint32_t off, uint32_t n) { return off != kNoOffset && off + n <= cap; };
  auto be16 = [&](uint32_t off) { return uint32_t(f[off]) << 8 | f[off + 1]; };
  std::string j = eve_packet_head(hp, "drop");
  if (ether) j += eve_ether_json(hp);
  j += ",\"drop\":{";
  const uint32_t l3 = d.l3_off[0], l4 = d.l4_off[0];
  if (d.l3[0] == uint8_t(L3::ipv4) && have(l3, 20)) {
    j += "\"len\":" + u(be16(l3 + 2)) + ",\"tos\":" + u(f[l3 + 1]) + ",\"ttl\":" + u(f[l3 + 8]) + ",\"ipid\":" + u(be16(l3 + 4)) + ",";
  } else if (d.l3[0] == uint8_t(L3::ipv6) && have(l3, 40)) {
    j += "\"len\":" + u(be16(l3 + 4)) + ",\"tc\":" + u(uint32_t(f[l3] & 0x0f) << 4 | f[l3 + 1] >> 4) +
         ",\"hoplimit\":" + u(f[l3 + 7]) + ",\"flowlbl\":" + u(uint32_t(f[l3 + 1] & 0x0f) << 16 | be16(l3 + 2)) + ",";
  }
  if (d.l4[0] == uint8_t(L4::tcp) && have(l4, 20)) {
    const uint16_t fl = d.tcp_flags[0];
    auto b = [](bool x) { return x ? "true" : "false"; };
    j += "\"tcpseq\":" + u(d.tcp_seq[0]) + ",\"tcpack\":" + u(d.tcp_ack[0]) + ",\"tcpwin\":" + u(d.tcp_win[0]) +
         ",\"syn\":" + b(fl & kTcpSyn) + ",\"ack\":" + b(fl & kTcpAck) + ",\"psh\":" + b(fl & kTcpPsh) +
         ",\"rst\":" + b(fl & kTcpRst) + ",\"urg\":" + b(fl & kTcpUrg) + ",\"fin\":" + b(fl & kTcpFin) +
         ",\"tcpres\":" + u(f[l4 + 12] & 0x0f) + ",\"tcpurgp\":" + u(be16(l4 + 18)) + ",";
  } else if (d.l4[0] == uint8_t(L4::udp) && have(l4, 8)) {
    j += "\"udplen\":" + u(be16(l4 + 4)) + ",";
  } else if ((d.l4[0] == uint8_t(L4::icmp) || d.l4[0] == uint8_t(L4::icmpv6)) && have(l4, 8)) {
    const uint8_t t = d.icmp_type[0];
    const bool echo = t == 0 || t == 8 || t == 128 || t == 129;
    j += "\"icmp_id\":" + u(echo ? be16(l4 + 4) : 0) + ",\"icmp_seq\":" + u(echo ? be16(l4 + 6) : 0) + ",";
  }
  j += std::string("\"reason\":\"") + reason + "\"}}";
  return j;
}


}  // namespace gaspp
