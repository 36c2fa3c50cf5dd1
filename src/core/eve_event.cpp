// core/eve_event.cpp — see core/eve_event.hpp.
#include "core/eve_event.hpp"

#include <arpa/inet.h>

#include <cstdio>
#include <cstring>
#include <ctime>
#include <algorithm>

#include <nlohmann/json.hpp>

#include "decode/decoder.hpp"

namespace gaspp {

std::string json_escape(const std::string& s) {
  // The library's escaping, without the quotes it adds; bytes that are not valid UTF-8 (a rule's
  // msg in Latin-1, say) become U+FFFD, so every line stays valid JSON.
  const std::string q = nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return q.substr(1, q.size() - 2);
}

std::string eve_timestamp(uint64_t ts_ns) {
  const time_t secs = time_t(ts_ns / 1'000'000'000ull);
  const unsigned usec = unsigned((ts_ns % 1'000'000'000ull) / 1000);
  struct tm tm;
  gmtime_r(&secs, &tm);
  char b[64];
  std::snprintf(b, sizeof b, "%04d-%02d-%02dT%02d:%02d:%02d.%06u+0000", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, usec);
  return b;
}

// An address as Suricata's EVE writes it: dotted IPv4; IPv6 as eight groups of four hex digits, with
// no "::" shortening ("2001:0db8:0000:...:0001"), which is what suricata-verify's expected outputs
// hold. Readers that compare addresses should parse them.
namespace {
bool g_ipv6_compress = false;  // a run's output setting: written before the pipeline starts, read-only after
}  // namespace

void set_eve_ipv6_compress(bool on) { g_ipv6_compress = on; }

std::string eve_address(const uint32_t* words, bool v6) {
  if (v6 && g_ipv6_compress) {
    // RFC 5952 (as Suricata's PrintInetIPv6 with compression): inet_ntop's form.
    in6_addr a;
    std::memcpy(&a, words, 16);
    char s[INET6_ADDRSTRLEN];
    return inet_ntop(AF_INET6, &a, s, sizeof s) ? std::string(s) : std::string();
  }
  if (!v6) {
    const uint32_t w = words[0];  // the address's bytes in memory order
    char s[16];
    std::snprintf(s, sizeof s, "%u.%u.%u.%u", w & 0xff, (w >> 8) & 0xff, (w >> 16) & 0xff, w >> 24);
    return s;
  }
  char s[40];
  char* o = s;
  for (int g = 0; g < 8; ++g) {
    const uint32_t w = words[g / 2];
    const unsigned hi = (w >> (16 * (g % 2))) & 0xff, lo = (w >> (16 * (g % 2) + 8)) & 0xff;
    o += std::snprintf(o, 6, g ? ":%02x%02x" : "%02x%02x", hi, lo);
  }
  return std::string(s, size_t(o - s));
}

// ,"vlan":[ids] of the n (at most 3) tags, outermost first; nothing without tags.
std::string vlan_json(const uint16_t* ids, int n) {
  if (n <= 0) return "";
  std::string j = ",\"vlan\":[";
  for (int v = 0; v < n && v < 3; ++v) j += (v ? "," : "") + std::to_string(ids[v]);
  return j + "]";
}

// ,"src_ip",["src_port",]"dest_ip",["dest_port",]"ip_v","proto" of a flow, endpoint `si` of its key
// sending.
std::string flow_endpoints_json(const FlowKey& k, int si) {
  const bool v6 = k.family == 6;
  const bool ports = k.proto == 6 || k.proto == 17 || k.proto == 132;
  std::string j = ",\"src_ip\":\"" + eve_address(k.addr[si], v6) + "\"";
  if (ports) j += ",\"src_port\":" + std::to_string(k.port[si]);
  j += ",\"dest_ip\":\"" + eve_address(k.addr[si ^ 1], v6) + "\"";
  if (ports) j += ",\"dest_port\":" + std::to_string(k.port[si ^ 1]);
  j += v6 ? ",\"ip_v\":6" : ",\"ip_v\":4";  // Suricata 8 writes the IP version of every event
  return j + ",\"proto\":\"" + flow_proto_name(k.proto) + "\"";
}

namespace {

// The head of a flow-only event (HostPacket::flow, no packet): the flow's addresses in the event's
// direction, no pcap_cnt, and pkt_src as Suricata writes it for its flow-timeout pseudo-packets.
std::string eve_flow_only_head(const HostPacket& p, const char* event_type) {
  const FlowRecord& r = *p.flow;
  const FlowKey& k = r.key;
  const int ci = r.client_lo ? 0 : 1;  // key endpoint of the client
  auto u = [](uint64_t v) { return std::to_string(v); };
  std::string j = "{\"timestamp\":\"" + eve_timestamp(p.ts_ns) + "\"";
  if (p.flow_id) j += ",\"flow_id\":" + u(p.flow_id);
  j += std::string(",\"event_type\":\"") + event_type + "\"";
  j += vlan_json(k.vlan, k.vlan_n);
  j += flow_endpoints_json(k, p.to_client ? ci ^ 1 : ci);
  j += std::string(",\"direction\":\"") + (p.to_client ? "to_client" : "to_server") + "\"";
  return j + ",\"pkt_src\":\"stream (flow timeout)\"";
}

// The packet that carries tunneled packet p (decoded as d) at tunnel depth `depth` (0: the
// outermost), decoded again from p's frame into no deeper tunnel.
DecodedPacket carrier_of(const HostPacket& p, const DecodedPacket& d, int depth) {
  DecodedPacket c;
  clear(c);
  c.wire_len[0] = d.wire_len[0];
  decode_frame(p.frame, p.cap_len, LinkType(d.link[0]), c, depth);
  return c;
}

}  // namespace

std::string eve_packet_head(const HostPacket& p, const char* event_type) {
  if (!p.decoded) return eve_flow_only_head(p, event_type);
  const DecodedPacket& d = *static_cast<const DecodedPacket*>(p.decoded);
  auto u = [](uint64_t v) { return std::to_string(v); };
  std::string j = "{\"timestamp\":\"" + eve_timestamp(p.ts_ns) + "\"";
  if (p.flow_id) j += ",\"flow_id\":" + u(p.flow_id);
  j += ",\"pcap_cnt\":" + u(p.number) + ",\"event_type\":\"" + event_type + "\"";
  j += vlan_json(d.vlan_id, d.vlan_count[0]);
  const bool v6 = d.l3[0] == uint8_t(L3::ipv6);
  if (d.l3[0] == uint8_t(L3::ipv4) || v6) {
    const bool ports = d.l4[0] == uint8_t(L4::tcp) || d.l4[0] == uint8_t(L4::udp);
    j += ",\"src_ip\":\"" + eve_address(d.src_ip, v6) + "\"";
    if (ports) j += ",\"src_port\":" + u(d.sport[0]);
    j += ",\"dest_ip\":\"" + eve_address(d.dst_ip, v6) + "\"";
    if (ports) j += ",\"dest_port\":" + u(d.dport[0]);
    j += ",\"proto\":\"" + std::string(flow_proto_name(d.ip_proto[0])) + "\"";
    j += v6 ? ",\"ip_v\":6" : ",\"ip_v\":4";
    if (d.l4[0] == uint8_t(L4::icmp) || d.l4[0] == uint8_t(L4::icmpv6))
      j += ",\"icmp_type\":" + u(d.icmp_type[0]) + ",\"icmp_code\":" + u(d.icmp_code[0]);
  }
  if (p.flow_id) j += std::string(",\"direction\":\"") + (p.to_client ? "to_client" : "to_server") + "\"";
  // A packet decoded out of a tunnel is, as Suricata names its tunnel pseudo-packets, a "gre
  // tunnel" packet when GRE carried it, a "vxlan encapsulation" or "geneve encapsulation" one
  // when VXLAN or Geneve did, else an "ipv4 tunnel" or "ipv6 tunnel" packet after the IP
  // version of the packet that carried it.
  if (d.tunnel_depth[0] && p.frame) {
    const DecodedPacket carrier = carrier_of(p, d, int(d.tunnel_depth[0]) - 1);
    if (carrier.ip_proto[0] == 47) return j + ",\"pkt_src\":\"gre tunnel\"";
    const int udp = detail::udp_tunnel_kind(carrier);
    if (udp == 2) return j + ",\"pkt_src\":\"vxlan encapsulation\"";
    if (udp == 3) return j + ",\"pkt_src\":\"geneve encapsulation\"";
    return j + (carrier.l3[0] == uint8_t(L3::ipv6) ? ",\"pkt_src\":\"ipv6 tunnel\"" : ",\"pkt_src\":\"ipv4 tunnel\"");
  }
  return j + ",\"pkt_src\":\"wire/pcap\"";
}

std::string eve_ether_json(const HostPacket& p) {
  if (!p.decoded || !p.frame || p.cap_len < 14) return "";
  const DecodedPacket& d = *static_cast<const DecodedPacket*>(p.decoded);
  if (d.link[0] != uint8_t(LinkType::ethernet)) return "";
  auto mac = [&](uint32_t at) {
    static const char kHex[] = "0123456789abcdef";
    std::string m;
    for (uint32_t i = 0; i < 6; ++i) {
      if (i) m += ':';
      m += kHex[p.frame[at + i] >> 4];
      m += kHex[p.frame[at + i] & 15];
    }
    return m;
  };
  return ",\"ether\":{\"src_mac\":\"" + mac(6) + "\",\"dest_mac\":\"" + mac(0) + "\"}";
}

std::pair<uint32_t, uint32_t> tunnel_packet_span(const HostPacket& p) {
  if (!p.decoded || !p.frame) return {0, 0};
  const DecodedPacket& d = *static_cast<const DecodedPacket*>(p.decoded);
  if (!d.tunnel_depth[0]) return {0, 0};
  // The innermost tunnel's carrier, then where its tunnel's payload starts: as decode_l3 finds it
  // (an Ethernet frame inside VXLAN or Geneve included), and for GRE right after the GRE header
  // (Suricata's pseudo-packet holds an ERSPAN or PPP header and what follows).
  DecodedPacket c = carrier_of(p, d, int(d.tunnel_depth[0]) - 1);
  const uint32_t end = c.payload_off[0] == kNoOffset ? p.cap_len : std::min<uint32_t>(p.cap_len, c.payload_off[0] + c.payload_len[0]);
  uint16_t et = 0;
  uint32_t inner = detail::gtp_u_inner(p.frame, p.cap_len, c);
  if (inner == 0) inner = detail::ip_in_ip_inner(p.frame, p.cap_len, c);
  if (inner == 0) inner = detail::udp_tunnel_inner(p.frame, p.cap_len, c, et);
  uint32_t gre_end = 0;
  if (inner == 0 && detail::gre_inner(p.frame, p.cap_len, c, et, &gre_end) != 0) inner = gre_end;
  if (inner == 0 || inner >= end) return {0, 0};
  return {inner, end - inner};
}

std::string eve_tunnel_json(const HostPacket& p) {
  if (!p.decoded || !p.frame) return "";
  const DecodedPacket& d = *static_cast<const DecodedPacket*>(p.decoded);
  if (!d.tunnel_depth[0]) return "";
  const DecodedPacket root = carrier_of(p, d, 0);  // the outermost packet, as captured
  const bool v6 = root.l3[0] == uint8_t(L3::ipv6);
  auto u = [](uint64_t v) { return std::to_string(v); };
  std::string j = ",\"tunnel\":{\"src_ip\":\"" + eve_address(root.src_ip, v6) + "\",\"src_port\":" + u(root.sport[0]) +
                  ",\"dest_ip\":\"" + eve_address(root.dst_ip, v6) + "\",\"dest_port\":" + u(root.dport[0]) +
                  ",\"proto\":\"" + flow_proto_name(root.ip_proto[0]) + "\",\"depth\":" + u(d.tunnel_depth[0]);
  if (p.number) j += ",\"pcap_cnt\":" + u(p.number);
  return j + ",\"pkt_src\":\"wire/pcap\"}";
}

std::string eve_alert_flow_json(const HostPacket& p) {
  if (!p.flow_id) return "";
  FlowCountsAt c;
  std::string ends;  // ,"src_ip","dest_ip"[,"src_port","dest_port"], the client first
  auto u = [](uint64_t v) { return std::to_string(v); };
  if (p.decoded && p.flow_counts) {
    c = *p.flow_counts;
    const DecodedPacket& d = *static_cast<const DecodedPacket*>(p.decoded);
    const bool v6 = d.l3[0] == uint8_t(L3::ipv6);
    const uint32_t* cli = p.to_client ? d.dst_ip : d.src_ip;
    const uint32_t* srv = p.to_client ? d.src_ip : d.dst_ip;
    ends = ",\"src_ip\":\"" + eve_address(cli, v6) + "\",\"dest_ip\":\"" + eve_address(srv, v6) + "\"";
    if (d.l4[0] == uint8_t(L4::tcp) || d.l4[0] == uint8_t(L4::udp)) {
      ends += ",\"src_port\":" + u(p.to_client ? d.dport[0] : d.sport[0]) +
              ",\"dest_port\":" + u(p.to_client ? d.sport[0] : d.dport[0]);
    }
  } else if (!p.decoded && p.flow) {
    const FlowRecord& r = *p.flow;
    const FlowKey& k = r.key;
    c = flow_counts_at(r);
    const int ci = r.client_lo ? 0 : 1;
    const bool v6 = k.family == 6;
    ends = ",\"src_ip\":\"" + eve_address(k.addr[ci], v6) + "\",\"dest_ip\":\"" + eve_address(k.addr[ci ^ 1], v6) + "\"";
    if (k.proto == 6 || k.proto == 17 || k.proto == 132)
      ends += ",\"src_port\":" + u(k.port[ci]) + ",\"dest_port\":" + u(k.port[ci ^ 1]);
  } else {
    return "";
  }
  return ",\"flow\":{\"pkts_toserver\":" + u(c.pkts[0]) + ",\"pkts_toclient\":" + u(c.pkts[1]) +
         ",\"bytes_toserver\":" + u(c.bytes[0]) + ",\"bytes_toclient\":" + u(c.bytes[1]) + ",\"start\":\"" +
         eve_timestamp(c.first_ts) + "\"" + ends + "}";
}

}  // namespace gaspp
