#include "output/decode_rows.hpp"

#include <arpa/inet.h>

#include <cstring>

namespace gaspp {

const char* decode_rows_header() {
  return "#frame\tsource\tts_ns\tcap_len\twire_len\tlink\tethertype\tvlan\tl3\tsrc\tdst\tip_proto\tttl\tfrag\tl4\tsport\tdport\t"
         "seq\tack\tflags\twin\tmss\twscale\ttcp_opts\ttsval\ttsecr\tsack\ticmp_type\ticmp_code\ticmp_id\t"
         "payload_off\tpayload_len\tflow_hash\ttunnel\tundecoded\tmalformed\n";
}

std::string format_address(const uint32_t* words, bool v6) {
  uint8_t b[16];
  for (int k = 0; k < 4; ++k)
    for (int j = 0; j < 4; ++j) b[4 * k + j] = uint8_t(words[k] >> (8 * j));
  char s[INET6_ADDRSTRLEN];
  inet_ntop(v6 ? AF_INET6 : AF_INET, b, s, sizeof s);
  return s;
}

void format_decode_row(uint64_t n, const DecodedPacket& p, std::string& o) {
  char b[512];
  const bool ip = p.l3[0] == uint8_t(L3::ipv4) || p.l3[0] == uint8_t(L3::ipv6);
  const bool v6 = p.l3[0] == uint8_t(L3::ipv6);
  const bool ports = p.l4[0] == uint8_t(L4::tcp) || p.l4[0] == uint8_t(L4::udp);
  const bool tcp = p.l4[0] == uint8_t(L4::tcp);
  const bool icmp = p.l4[0] == uint8_t(L4::icmp) || p.l4[0] == uint8_t(L4::icmpv6);
  std::string vlan = "-";
  for (int k = 0; k < p.vlan_count[0]; ++k) vlan = (k ? vlan + "," : std::string()) + std::to_string(p.vlan_id[k]);
  std::string sack = "-";
  for (int k = 0; k < p.tcp_sack_n[0]; ++k)
    sack = (k ? sack + "," : std::string()) + std::to_string(p.tcp_sack[2 * k]) + "-" + std::to_string(p.tcp_sack[2 * k + 1]);
  const auto num = [](bool has, uint64_t v) { return has ? std::to_string(v) : std::string("-"); };
  std::snprintf(b, sizeof b, "%llu\t%u\t%llu\t%u\t%u\t%s\t0x%04x\t%s\t%s\t", (unsigned long long)n, p.source[0],
                (unsigned long long)p.ts_ns[0], p.cap_len[0], p.wire_len[0], link_name(LinkType(p.link[0])),
                p.ethertype[0], vlan.c_str(), l3_name(L3(p.l3[0])));
  o += b;
  o += ip ? format_address(p.src_ip, v6) : "-";
  o += '\t';
  o += ip ? format_address(p.dst_ip, v6) : "-";
  std::snprintf(b, sizeof b, "\t%s\t%s\t%u\t%s\t", num(ip, p.ip_proto[0]).c_str(), num(ip, p.ip_ttl[0]).c_str(),
                p.ip_frag[0], l4_name(L4(p.l4[0])));
  o += b;
  o += num(ports, p.sport[0]) + '\t' + num(ports, p.dport[0]) + '\t';
  if (tcp) {
    std::snprintf(b, sizeof b, "%u\t%u\t0x%03x\t%u\t%u\t%u\t%u\t%u\t%u\t%s\t", p.tcp_seq[0], p.tcp_ack[0],
                  p.tcp_flags[0], p.tcp_win[0], p.tcp_mss[0], p.tcp_wscale[0], p.tcp_opts[0], p.tcp_tsval[0],
                  p.tcp_tsecr[0], sack.c_str());
    o += b;
  } else {
    o += "-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t";
  }
  o += num(icmp, p.icmp_type[0]) + '\t' + num(icmp, p.icmp_code[0]) + '\t' + num(icmp, p.icmp_id[0]) + '\t';
  const bool pl = p.payload_off[0] != kNoOffset;
  std::snprintf(b, sizeof b, "%s\t%s\t%08x\t%u\t%s\t%s\n", num(pl, p.payload_off[0]).c_str(),
                num(pl, p.payload_len[0]).c_str(), p.flow_hash[0], p.tunnel_depth[0],
                undecoded_reason_name(UndecodedReason(p.undecoded[0])), malformed_reason_name(MalformedReason(p.malformed[0])));
  o += b;
}

}  // namespace gaspp
