// The compiled firewall matcher (firewall_compile.hpp → firewall_tables.hpp's firewall_match)
// against verdicts written by hand, one table row per case: the rule text(s), a packet, and what a
// reader of the rule expects. No rule is evaluated by the test itself: the oracle is the table.
//
// A packet is written `PROTO SRC > DST`: PROTO is tcp, udp, icmp, icmpv6, or tcp-frag (a TCP
// fragment after the first: protocol 6 but no ports); an endpoint is `1.2.3.4:80`, `[2001:db8::1]:80`,
// or an address alone for protocols without ports.
// A verdict is what the firewall module (firewall.hpp) does with the match: `pass` (a pass rule
// matched: no alert), `drop S,...` (a drop or reject rule matched), `alert S,...` (only alert rules),
// or `none`; the sids are the alerts raised, in Suricata's alert order (action drop, reject, alert;
// then priority, 3 when not given; then file order).
#include <gtest/gtest.h>
#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "modules/firewall/firewall_compile.hpp"
#include "modules/firewall/rules.hpp"

using namespace gaspp;

namespace {

struct Row {
  const char* name;
  std::vector<std::string> rules;
  const char* packet;
  const char* want;
};

// `a.b.c.d[:port]` or `[v6]:port` or a bare v6 address; false when it does not parse.
bool parse_endpoint(std::string t, uint8_t& family, uint8_t bytes[16], uint16_t& port, bool& has_port) {
  std::string addr = t;
  has_port = false;
  if (!t.empty() && t[0] == '[') {
    const size_t close = t.find(']');
    if (close == std::string::npos || close + 1 >= t.size() || t[close + 1] != ':') return false;
    addr = t.substr(1, close - 1);
    port = uint16_t(std::stoul(t.substr(close + 2)));
    has_port = true;
  } else if (std::count(t.begin(), t.end(), ':') == 1) {
    const size_t colon = t.find(':');
    addr = t.substr(0, colon);
    port = uint16_t(std::stoul(t.substr(colon + 1)));
    has_port = true;
  }
  std::memset(bytes, 0, 16);
  if (inet_pton(AF_INET, addr.c_str(), bytes) == 1) family = 4;
  else if (inet_pton(AF_INET6, addr.c_str(), bytes) == 1) family = 6;
  else return false;
  return true;
}

// The packet of a row, as FirewallModule::packet_of hands it to the matcher: addresses as the
// decoder stores them (network-order bytes, four to a word).
bool parse_packet(const std::string& text, FwPacket& p, std::string& why) {
  const size_t s1 = text.find(' '), gt = text.find(" > ");
  if (s1 == std::string::npos || gt == std::string::npos) {
    why = "expected 'PROTO SRC > DST'";
    return false;
  }
  const std::string proto = text.substr(0, s1), src = text.substr(s1 + 1, gt - s1 - 1), dst = text.substr(gt + 3);
  p = FwPacket{};
  bool ports = false;
  if (proto == "tcp") { p.proto = 6; ports = true; }
  else if (proto == "udp") { p.proto = 17; ports = true; }
  else if (proto == "tcp-frag") p.proto = 6;
  else if (proto == "icmp") p.proto = 1;
  else if (proto == "icmpv6") p.proto = 58;
  else {
    why = "unknown protocol " + proto;
    return false;
  }
  uint8_t fam[2], b[2][16];
  bool hp[2];
  for (int k = 0; k < 2; ++k) {
    if (!parse_endpoint(k ? dst : src, fam[k], b[k], p.port[k], hp[k])) {
      why = "bad endpoint " + (k ? dst : src);
      return false;
    }
    if (hp[k] != ports) {
      why = "ports given for a protocol without them, or missing";
      return false;
    }
  }
  if (fam[0] != fam[1]) {
    why = "source and destination of different families";
    return false;
  }
  p.family = fam[0];
  p.has_ports = ports;
  for (int k = 0; k < 2; ++k) {
    uint32_t w[4];
    std::memcpy(w, b[k], 16);
    p.addr[k] = addr_number(w, p.family);
  }
  return true;
}

std::string verdict(const FwMatch& m, const std::vector<Rule>& rules) {
  if (m.pass) return "pass";
  std::string s = (m.action == kFwDrop || m.action == kFwReject) ? "drop" : m.n ? "alert" : "none";
  for (int k = 0; k < m.n; ++k) s += (k ? "," : " ") + std::to_string(rules[m.rule[k]].sid);
  return s;
}

// clang-format off
const std::vector<Row> kRows = {
  // --- IPv4 prefixes ---------------------------------------------------------------------------
  {"v4 /0 src, ordinary address",   {"alert ip 0.0.0.0/0 any -> any any (sid:1;)"}, "tcp 1.2.3.4:1 > 5.6.7.8:2", "alert 1"},
  {"v4 /0 src, 0.0.0.0",            {"alert ip 0.0.0.0/0 any -> any any (sid:1;)"}, "udp 0.0.0.0:68 > 255.255.255.255:67", "alert 1"},
  {"v4 /0 dst, 255.255.255.255",    {"alert ip any any -> 0.0.0.0/0 any (sid:1;)"}, "udp 0.0.0.0:68 > 255.255.255.255:67", "alert 1"},
  {"v4 /0 is not IPv6",             {"alert ip 0.0.0.0/0 any -> any any (sid:1;)"}, "tcp [2001:db8::1]:1 > [2001:db8::2]:2", "none"},
  {"v4 /31 neighbour below",        {"alert ip 10.0.0.2/31 any -> any any (sid:1;)"}, "tcp 10.0.0.1:1 > 8.8.8.8:2", "none"},
  {"v4 /31 first address",          {"alert ip 10.0.0.2/31 any -> any any (sid:1;)"}, "tcp 10.0.0.2:1 > 8.8.8.8:2", "alert 1"},
  {"v4 /31 second address",         {"alert ip 10.0.0.2/31 any -> any any (sid:1;)"}, "tcp 10.0.0.3:1 > 8.8.8.8:2", "alert 1"},
  {"v4 /31 neighbour above",        {"alert ip 10.0.0.2/31 any -> any any (sid:1;)"}, "tcp 10.0.0.4:1 > 8.8.8.8:2", "none"},
  {"v4 /31 host bit set, in",       {"alert ip 10.0.0.3/31 any -> any any (sid:1;)"}, "tcp 10.0.0.2:1 > 8.8.8.8:2", "alert 1"},
  {"v4 /31 host bit set, out",      {"alert ip 10.0.0.3/31 any -> any any (sid:1;)"}, "tcp 10.0.0.4:1 > 8.8.8.8:2", "none"},
  {"v4 /31 dst, both in",           {"alert ip any any -> 10.0.0.2/31 any (sid:1;)"}, "udp 8.8.8.8:1 > 10.0.0.3:2", "alert 1"},
  {"v4 /31 dst, neighbour out",     {"alert ip any any -> 10.0.0.2/31 any (sid:1;)"}, "udp 8.8.8.8:1 > 10.0.0.1:2", "none"},
  {"v4 /32 dst, below",             {"alert ip any any -> 192.168.1.1/32 any (sid:1;)"}, "udp 8.8.8.8:1 > 192.168.1.0:2", "none"},
  {"v4 /32 dst, itself",            {"alert ip any any -> 192.168.1.1/32 any (sid:1;)"}, "udp 8.8.8.8:1 > 192.168.1.1:2", "alert 1"},
  {"v4 /32 dst, above",             {"alert ip any any -> 192.168.1.1/32 any (sid:1;)"}, "udp 8.8.8.8:1 > 192.168.1.2:2", "none"},
  {"v4 bare address is /32, in",    {"alert ip 192.168.1.1 any -> any any (sid:1;)"}, "tcp 192.168.1.1:1 > 8.8.8.8:2", "alert 1"},
  {"v4 bare address is /32, out",   {"alert ip 192.168.1.1 any -> any any (sid:1;)"}, "tcp 192.168.1.2:1 > 8.8.8.8:2", "none"},
  {"v4 /32 on dst only",            {"alert ip 192.168.1.1 any -> any any (sid:1;)"}, "tcp 8.8.8.8:1 > 192.168.1.1:2", "none"},
  {"v4 /24 below",                  {"alert ip 172.16.5.0/24 any -> any any (sid:1;)"}, "tcp 172.16.4.255:1 > 8.8.8.8:2", "none"},
  {"v4 /24 first",                  {"alert ip 172.16.5.0/24 any -> any any (sid:1;)"}, "tcp 172.16.5.0:1 > 8.8.8.8:2", "alert 1"},
  {"v4 /24 last",                   {"alert ip 172.16.5.0/24 any -> any any (sid:1;)"}, "tcp 172.16.5.255:1 > 8.8.8.8:2", "alert 1"},
  {"v4 /24 above",                  {"alert ip 172.16.5.0/24 any -> any any (sid:1;)"}, "tcp 172.16.6.0:1 > 8.8.8.8:2", "none"},
  {"v4 /8 below",                   {"alert ip 10.0.0.0/8 any -> any any (sid:1;)"}, "tcp 9.255.255.255:1 > 8.8.8.8:2", "none"},
  {"v4 /8 last",                    {"alert ip 10.0.0.0/8 any -> any any (sid:1;)"}, "tcp 10.255.255.255:1 > 8.8.8.8:2", "alert 1"},
  {"v4 /8 above",                   {"alert ip 10.0.0.0/8 any -> any any (sid:1;)"}, "tcp 11.0.0.0:1 > 8.8.8.8:2", "none"},
  {"v4 /31 top of space, last",     {"alert ip 255.255.255.254/31 any -> any any (sid:1;)"}, "udp 255.255.255.255:1 > 8.8.8.8:2", "alert 1"},
  {"v4 /31 top of space, below",    {"alert ip 255.255.255.254/31 any -> any any (sid:1;)"}, "udp 255.255.255.253:1 > 8.8.8.8:2", "none"},
  {"v4 rule, v4-compatible v6 addr",{"alert ip 10.0.0.1 any -> any any (sid:1;)"}, "udp [::a00:1]:1 > [::1]:2", "none"},
  // --- IPv6 prefixes ---------------------------------------------------------------------------
  {"v6 /128 itself",                {"alert ip 2001:db8::1/128 any -> any any (sid:1;)"}, "tcp [2001:db8::1]:1 > [2001:db8::9]:2", "alert 1"},
  {"v6 /128 below",                 {"alert ip 2001:db8::1/128 any -> any any (sid:1;)"}, "tcp [2001:db8::]:1 > [2001:db8::9]:2", "none"},
  {"v6 /128 above",                 {"alert ip 2001:db8::1/128 any -> any any (sid:1;)"}, "tcp [2001:db8::2]:1 > [2001:db8::9]:2", "none"},
  {"v6 bare address is /128",       {"alert ip any any -> 2001:db8::1 any (sid:1;)"}, "tcp [2001:db8::9]:1 > [2001:db8::1]:2", "alert 1"},
  {"v6 bare address, neighbour",    {"alert ip any any -> 2001:db8::1 any (sid:1;)"}, "tcp [2001:db8::9]:1 > [2001:db8::3]:2", "none"},
  {"v6 /127 neighbour below",       {"alert ip 2001:db8::2/127 any -> any any (sid:1;)"}, "udp [2001:db8::1]:1 > [2001:db8::9]:2", "none"},
  {"v6 /127 first",                 {"alert ip 2001:db8::2/127 any -> any any (sid:1;)"}, "udp [2001:db8::2]:1 > [2001:db8::9]:2", "alert 1"},
  {"v6 /127 second",                {"alert ip 2001:db8::2/127 any -> any any (sid:1;)"}, "udp [2001:db8::3]:1 > [2001:db8::9]:2", "alert 1"},
  {"v6 /127 neighbour above",       {"alert ip 2001:db8::2/127 any -> any any (sid:1;)"}, "udp [2001:db8::4]:1 > [2001:db8::9]:2", "none"},
  {"v6 /127 at the 64-bit seam, in",{"alert ip 2001:db8::ffff:ffff:ffff:fffe/127 any -> any any (sid:1;)"}, "udp [2001:db8::ffff:ffff:ffff:ffff]:1 > [::1]:2", "alert 1"},
  {"v6 /127 seam, next /64 out",    {"alert ip 2001:db8::ffff:ffff:ffff:fffe/127 any -> any any (sid:1;)"}, "udp [2001:db8:0:1::]:1 > [::1]:2", "none"},
  {"v6 /127 seam, below out",       {"alert ip 2001:db8::ffff:ffff:ffff:fffe/127 any -> any any (sid:1;)"}, "udp [2001:db8::ffff:ffff:ffff:fffd]:1 > [::1]:2", "none"},
  {"v6 /127 top of space",          {"alert ip ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe/127 any -> any any (sid:1;)"}, "udp [ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:1 > [::1]:2", "alert 1"},
  {"v6 /0 ::",                      {"alert ip ::/0 any -> any any (sid:1;)"}, "tcp [::]:1 > [::1]:2", "alert 1"},
  {"v6 /0 all ones",                {"alert ip ::/0 any -> any any (sid:1;)"}, "tcp [ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:1 > [::1]:2", "alert 1"},
  {"v6 /0 on dst",                  {"alert ip any any -> ::/0 any (sid:1;)"}, "tcp [::1]:1 > [2001:db8::1]:2", "alert 1"},
  {"v6 /0 is not IPv4",             {"alert ip ::/0 any -> any any (sid:1;)"}, "tcp 1.2.3.4:1 > 5.6.7.8:2", "none"},
  {"v6 /64 last",                   {"alert ip 2001:db8:0:1::/64 any -> any any (sid:1;)"}, "tcp [2001:db8:0:1:ffff:ffff:ffff:ffff]:1 > [::1]:2", "alert 1"},
  {"v6 /64 above",                  {"alert ip 2001:db8:0:1::/64 any -> any any (sid:1;)"}, "tcp [2001:db8:0:2::]:1 > [::1]:2", "none"},
  {"v6 /64 below",                  {"alert ip 2001:db8:0:1::/64 any -> any any (sid:1;)"}, "tcp [2001:db8::ffff:ffff:ffff:ffff]:1 > [::1]:2", "none"},
  {"v6 /65 first",                  {"alert ip 2001:db8::8000:0:0:0/65 any -> any any (sid:1;)"}, "tcp [2001:db8::8000:0:0:0]:1 > [::1]:2", "alert 1"},
  {"v6 /65 last",                   {"alert ip 2001:db8::8000:0:0:0/65 any -> any any (sid:1;)"}, "tcp [2001:db8::ffff:ffff:ffff:ffff]:1 > [::1]:2", "alert 1"},
  {"v6 /65 below",                  {"alert ip 2001:db8::8000:0:0:0/65 any -> any any (sid:1;)"}, "tcp [2001:db8::7fff:ffff:ffff:ffff]:1 > [::1]:2", "none"},
  // --- ports ------------------------------------------------------------------------------------
  {"range lo-1",                    {"alert tcp any any -> any 1000:2000 (sid:1;)"}, "tcp 10.0.0.1:5 > 10.0.0.2:999", "none"},
  {"range lo",                      {"alert tcp any any -> any 1000:2000 (sid:1;)"}, "tcp 10.0.0.1:5 > 10.0.0.2:1000", "alert 1"},
  {"range hi",                      {"alert tcp any any -> any 1000:2000 (sid:1;)"}, "tcp 10.0.0.1:5 > 10.0.0.2:2000", "alert 1"},
  {"range hi+1",                    {"alert tcp any any -> any 1000:2000 (sid:1;)"}, "tcp 10.0.0.1:5 > 10.0.0.2:2001", "none"},
  {"range on v6",                   {"alert tcp any any -> any 1000:2000 (sid:1;)"}, "tcp [::1]:5 > [::2]:1500", "alert 1"},
  {"open range 1024: at 1023",      {"alert tcp any any -> any 1024: (sid:1;)"}, "tcp 10.0.0.1:5 > 10.0.0.2:1023", "none"},
  {"open range 1024: at 1024",      {"alert tcp any any -> any 1024: (sid:1;)"}, "tcp 10.0.0.1:5 > 10.0.0.2:1024", "alert 1"},
  {"open range 1024: at 65535",     {"alert tcp any any -> any 1024: (sid:1;)"}, "tcp 10.0.0.1:5 > 10.0.0.2:65535", "alert 1"},
  {"open range :1023 at 0",         {"alert tcp any any -> any :1023 (sid:1;)"}, "tcp 10.0.0.1:5 > 10.0.0.2:0", "alert 1"},
  {"open range :1023 at 1023",      {"alert tcp any any -> any :1023 (sid:1;)"}, "tcp 10.0.0.1:5 > 10.0.0.2:1023", "alert 1"},
  {"open range :1023 at 1024",      {"alert tcp any any -> any :1023 (sid:1;)"}, "tcp 10.0.0.1:5 > 10.0.0.2:1024", "none"},
  {"port 65535 itself",             {"alert udp any any -> any 65535 (sid:1;)"}, "udp 10.0.0.1:5 > 10.0.0.2:65535", "alert 1"},
  {"port 65535, 65534",             {"alert udp any any -> any 65535 (sid:1;)"}, "udp 10.0.0.1:5 > 10.0.0.2:65534", "none"},
  {"!80 at 79",                     {"alert tcp any any -> any !80 (sid:1;)"}, "tcp 10.0.0.1:5 > 10.0.0.2:79", "alert 1"},
  {"!80 at 80",                     {"alert tcp any any -> any !80 (sid:1;)"}, "tcp 10.0.0.1:5 > 10.0.0.2:80", "none"},
  {"!80 at 81",                     {"alert tcp any any -> any !80 (sid:1;)"}, "tcp 10.0.0.1:5 > 10.0.0.2:81", "alert 1"},
  {"!1:1023 at 0",                  {"alert tcp any any -> any !1:1023 (sid:1;)"}, "tcp 10.0.0.1:5 > 10.0.0.2:0", "alert 1"},
  {"!1:1023 at 1",                  {"alert tcp any any -> any !1:1023 (sid:1;)"}, "tcp 10.0.0.1:5 > 10.0.0.2:1", "none"},
  {"!1:1023 at 1023",               {"alert tcp any any -> any !1:1023 (sid:1;)"}, "tcp 10.0.0.1:5 > 10.0.0.2:1023", "none"},
  {"!1:1023 at 1024",               {"alert tcp any any -> any !1:1023 (sid:1;)"}, "tcp 10.0.0.1:5 > 10.0.0.2:1024", "alert 1"},
  {"port list, 443",                {"alert tcp any any -> any [80,443,8000:8080] (sid:1;)"}, "tcp 10.0.0.1:5 > 10.0.0.2:443", "alert 1"},
  {"port list, 444",                {"alert tcp any any -> any [80,443,8000:8080] (sid:1;)"}, "tcp 10.0.0.1:5 > 10.0.0.2:444", "none"},
  {"port list, 7999",               {"alert tcp any any -> any [80,443,8000:8080] (sid:1;)"}, "tcp 10.0.0.1:5 > 10.0.0.2:7999", "none"},
  {"port list, 8000",               {"alert tcp any any -> any [80,443,8000:8080] (sid:1;)"}, "tcp 10.0.0.1:5 > 10.0.0.2:8000", "alert 1"},
  {"port list, 8080",               {"alert tcp any any -> any [80,443,8000:8080] (sid:1;)"}, "tcp 10.0.0.1:5 > 10.0.0.2:8080", "alert 1"},
  {"port list, 8081",               {"alert tcp any any -> any [80,443,8000:8080] (sid:1;)"}, "tcp 10.0.0.1:5 > 10.0.0.2:8081", "none"},
  {"range minus a port, 1499",      {"alert tcp any any -> any [1000:2000,!1500] (sid:1;)"}, "tcp 10.0.0.1:5 > 10.0.0.2:1499", "alert 1"},
  {"range minus a port, 1500",      {"alert tcp any any -> any [1000:2000,!1500] (sid:1;)"}, "tcp 10.0.0.1:5 > 10.0.0.2:1500", "none"},
  {"range minus a port, 1501",      {"alert tcp any any -> any [1000:2000,!1500] (sid:1;)"}, "tcp 10.0.0.1:5 > 10.0.0.2:1501", "alert 1"},
  {"range minus a port, 999",       {"alert tcp any any -> any [1000:2000,!1500] (sid:1;)"}, "tcp 10.0.0.1:5 > 10.0.0.2:999", "none"},
  {"negated list, 80",              {"alert tcp any any -> any ![80,443] (sid:1;)"}, "tcp 10.0.0.1:5 > 10.0.0.2:80", "none"},
  {"negated list, 443",             {"alert tcp any any -> any ![80,443] (sid:1;)"}, "tcp 10.0.0.1:5 > 10.0.0.2:443", "none"},
  {"negated list, 8080",            {"alert tcp any any -> any ![80,443] (sid:1;)"}, "tcp 10.0.0.1:5 > 10.0.0.2:8080", "alert 1"},
  {"source port 53",                {"alert udp any 53 -> any any (sid:1;)"}, "udp 10.0.0.1:53 > 10.0.0.2:1000", "alert 1"},
  {"source port 54",                {"alert udp any 53 -> any any (sid:1;)"}, "udp 10.0.0.1:54 > 10.0.0.2:1000", "none"},
  {"source port rule, dport 53",    {"alert udp any 53 -> any any (sid:1;)"}, "udp 10.0.0.1:1000 > 10.0.0.2:53", "none"},
  {"both ports, both in",           {"alert tcp any 1024: -> any 80 (sid:1;)"}, "tcp 10.0.0.1:1024 > 10.0.0.2:80", "alert 1"},
  {"both ports, sport out",         {"alert tcp any 1024: -> any 80 (sid:1;)"}, "tcp 10.0.0.1:1023 > 10.0.0.2:80", "none"},
  {"both ports, dport out",         {"alert tcp any 1024: -> any 80 (sid:1;)"}, "tcp 10.0.0.1:1024 > 10.0.0.2:81", "none"},
  {"address and port",              {"alert tcp 10.0.0.0/8 any -> any 22 (sid:1;)"}, "tcp 10.0.0.1:5 > 8.8.8.8:22", "alert 1"},
  {"address and port, port out",    {"alert tcp 10.0.0.0/8 any -> any 22 (sid:1;)"}, "tcp 10.0.0.1:5 > 8.8.8.8:23", "none"},
  {"ip rule with port, ICMP",       {"alert ip any any -> any 80 (sid:1;)"}, "icmp 10.0.0.1 > 10.0.0.2", "none"},
  {"ip rule with !port, ICMP",      {"alert ip any any -> any !80 (sid:1;)"}, "icmp 10.0.0.1 > 10.0.0.2", "none"},
  {"ip rule with port, UDP",        {"alert ip any any -> any 80 (sid:1;)"}, "udp 10.0.0.1:5 > 10.0.0.2:80", "alert 1"},
  {"port rule, later fragment",     {"alert tcp any any -> any 80 (sid:1;)"}, "tcp-frag 10.0.0.1 > 10.0.0.2", "none"},
  {"portless rule, later fragment", {"alert tcp any any -> any any (sid:1;)"}, "tcp-frag 10.0.0.1 > 10.0.0.2", "alert 1"},
  // --- protocols --------------------------------------------------------------------------------
  {"tcp rule, TCP",                 {"alert tcp any any -> any any (sid:1;)"}, "tcp 10.0.0.1:5 > 10.0.0.2:6", "alert 1"},
  {"tcp rule, UDP",                 {"alert tcp any any -> any any (sid:1;)"}, "udp 10.0.0.1:5 > 10.0.0.2:6", "none"},
  {"udp rule, TCP",                 {"alert udp any any -> any any (sid:1;)"}, "tcp 10.0.0.1:5 > 10.0.0.2:6", "none"},
  {"icmp rule, ICMP",               {"alert icmp any any -> any any (sid:1;)"}, "icmp 10.0.0.1 > 10.0.0.2", "alert 1"},
  {"icmp rule, UDP",                {"alert icmp any any -> any any (sid:1;)"}, "udp 10.0.0.1:5 > 10.0.0.2:6", "none"},
  {"icmpv6 rule, ICMPv6",           {"alert icmpv6 any any -> any any (sid:1;)"}, "icmpv6 2001:db8::1 > ff02::1", "alert 1"},
  {"icmp rule, ICMPv6",             {"alert icmp any any -> any any (sid:1;)"}, "icmpv6 2001:db8::1 > ff02::1", "none"},
  {"ip rule, ICMPv6",               {"alert ip any any -> any any (sid:1;)"}, "icmpv6 2001:db8::1 > ff02::1", "alert 1"},
  {"ip rule, UDP over v4",          {"alert ip any any -> any any (sid:1;)"}, "udp 10.0.0.1:5 > 10.0.0.2:6", "alert 1"},
  {"tcp-pkt is tcp",                {"alert tcp-pkt any any -> any any (sid:1;)"}, "tcp 10.0.0.1:5 > 10.0.0.2:6", "alert 1"},
  // --- negated addresses, lists, variables, any -------------------------------------------------
  {"!10/8 inside",                  {"alert ip !10.0.0.0/8 any -> any any (sid:1;)"}, "tcp 10.1.2.3:1 > 8.8.8.8:2", "none"},
  {"!10/8 below",                   {"alert ip !10.0.0.0/8 any -> any any (sid:1;)"}, "tcp 9.255.255.255:1 > 8.8.8.8:2", "alert 1"},
  {"!10/8 above",                   {"alert ip !10.0.0.0/8 any -> any any (sid:1;)"}, "tcp 11.0.0.0:1 > 8.8.8.8:2", "alert 1"},
  // rules.hpp: a set of negated items only matches whatever no negated item matches, IPv6 too.
  {"!10/8, an IPv6 packet",         {"alert ip !10.0.0.0/8 any -> any any (sid:1;)"}, "tcp [2001:db8::1]:1 > [::1]:2", "none"},
  {"!::1 alone, an IPv4 packet",    {"alert ip ![::1] any -> any any (sid:1;)"}, "tcp 10.0.0.1:1 > 10.0.0.2:2", "none"},
  {"!::1 alone, another IPv6",      {"alert ip ![::1] any -> any any (sid:1;)"}, "tcp [2001:db8::1]:1 > [::1]:2", "alert 1"},
  {"10/8 and !::1, an IPv6 packet", {"alert ip [10.0.0.0/8,!::1] any -> any any (sid:1;)"}, "tcp [2001:db8::1]:1 > [::1]:2", "alert 1"},
  {"$EXTERNAL_NET, an IPv6 packet", {"alert ip $EXTERNAL_NET any -> any any (sid:1;)"}, "tcp [2001:db8::1]:1 > [::1]:2", "none"},
  {"!v4 dst itself",                {"alert ip any any -> !192.168.1.1 any (sid:1;)"}, "udp 8.8.8.8:1 > 192.168.1.1:2", "none"},
  {"!v4 dst neighbour",             {"alert ip any any -> !192.168.1.1 any (sid:1;)"}, "udp 8.8.8.8:1 > 192.168.1.2:2", "alert 1"},
  {"!v6 /128 itself",               {"alert ip !::1/128 any -> any any (sid:1;)"}, "udp [::1]:1 > [::2]:2", "none"},
  {"!v6 /128 neighbour",            {"alert ip !::1/128 any -> any any (sid:1;)"}, "udp [::2]:1 > [::2]:2", "alert 1"},
  {"list of two, first",            {"alert ip [10.0.0.1,10.0.0.3] any -> any any (sid:1;)"}, "tcp 10.0.0.1:1 > 8.8.8.8:2", "alert 1"},
  {"list of two, between",          {"alert ip [10.0.0.1,10.0.0.3] any -> any any (sid:1;)"}, "tcp 10.0.0.2:1 > 8.8.8.8:2", "none"},
  {"list of two, second",           {"alert ip [10.0.0.1,10.0.0.3] any -> any any (sid:1;)"}, "tcp 10.0.0.3:1 > 8.8.8.8:2", "alert 1"},
  {"net minus subnet, in",          {"alert ip [10.0.0.0/8,!10.1.0.0/16] any -> any any (sid:1;)"}, "tcp 10.0.255.255:1 > 8.8.8.8:2", "alert 1"},
  {"net minus subnet, hole start",  {"alert ip [10.0.0.0/8,!10.1.0.0/16] any -> any any (sid:1;)"}, "tcp 10.1.0.0:1 > 8.8.8.8:2", "none"},
  {"net minus subnet, hole end",    {"alert ip [10.0.0.0/8,!10.1.0.0/16] any -> any any (sid:1;)"}, "tcp 10.1.255.255:1 > 8.8.8.8:2", "none"},
  {"net minus subnet, after hole",  {"alert ip [10.0.0.0/8,!10.1.0.0/16] any -> any any (sid:1;)"}, "tcp 10.2.0.0:1 > 8.8.8.8:2", "alert 1"},
  {"net minus subnet, outside",     {"alert ip [10.0.0.0/8,!10.1.0.0/16] any -> any any (sid:1;)"}, "tcp 11.0.0.0:1 > 8.8.8.8:2", "none"},
  {"negated list, first",           {"alert ip ![10.0.0.1,10.0.0.2] any -> any any (sid:1;)"}, "tcp 10.0.0.1:1 > 8.8.8.8:2", "none"},
  {"negated list, second",          {"alert ip ![10.0.0.1,10.0.0.2] any -> any any (sid:1;)"}, "tcp 10.0.0.2:1 > 8.8.8.8:2", "none"},
  {"negated list, other",           {"alert ip ![10.0.0.1,10.0.0.2] any -> any any (sid:1;)"}, "tcp 10.0.0.3:1 > 8.8.8.8:2", "alert 1"},
  {"nested list, inner",            {"alert ip [[10.0.0.1,10.0.0.2],192.168.0.0/24] any -> any any (sid:1;)"}, "tcp 10.0.0.2:1 > 8.8.8.8:2", "alert 1"},
  {"nested list, outer",            {"alert ip [[10.0.0.1,10.0.0.2],192.168.0.0/24] any -> any any (sid:1;)"}, "tcp 192.168.0.200:1 > 8.8.8.8:2", "alert 1"},
  {"nested list, outside",          {"alert ip [[10.0.0.1,10.0.0.2],192.168.0.0/24] any -> any any (sid:1;)"}, "tcp 192.168.1.0:1 > 8.8.8.8:2", "none"},
  {"mixed families, v4 in",         {"alert ip [10.0.0.0/8,2001:db8::/32] any -> any any (sid:1;)"}, "tcp 10.9.9.9:1 > 8.8.8.8:2", "alert 1"},
  {"mixed families, v6 in",         {"alert ip [10.0.0.0/8,2001:db8::/32] any -> any any (sid:1;)"}, "tcp [2001:db8:ffff::1]:1 > [::1]:2", "alert 1"},
  {"mixed families, v6 out",        {"alert ip [10.0.0.0/8,2001:db8::/32] any -> any any (sid:1;)"}, "tcp [2001:db9::]:1 > [::1]:2", "none"},
  {"mixed families, v4 out",        {"alert ip [10.0.0.0/8,2001:db8::/32] any -> any any (sid:1;)"}, "tcp 11.0.0.1:1 > 8.8.8.8:2", "none"},
  {"any with a negation, in hole",  {"alert ip [any,!10.0.0.0/8] any -> any any (sid:1;)"}, "tcp 10.0.0.1:1 > 8.8.8.8:2", "none"},
  {"any with a negation, outside",  {"alert ip [any,!10.0.0.0/8] any -> any any (sid:1;)"}, "tcp 11.0.0.1:1 > 8.8.8.8:2", "alert 1"},
  {"$HOME_NET 192.168/16 end",      {"alert ip $HOME_NET any -> any any (sid:1;)"}, "tcp 192.168.255.255:1 > 8.8.8.8:2", "alert 1"},
  {"$HOME_NET 172.16/12 end",       {"alert ip $HOME_NET any -> any any (sid:1;)"}, "tcp 172.31.255.255:1 > 8.8.8.8:2", "alert 1"},
  {"$HOME_NET after 172.16/12",     {"alert ip $HOME_NET any -> any any (sid:1;)"}, "tcp 172.32.0.0:1 > 8.8.8.8:2", "none"},
  {"$HOME_NET before 172.16/12",    {"alert ip $HOME_NET any -> any any (sid:1;)"}, "tcp 172.15.255.255:1 > 8.8.8.8:2", "none"},
  {"$HOME_NET public address",      {"alert ip $HOME_NET any -> any any (sid:1;)"}, "tcp 8.8.8.8:1 > 10.0.0.1:2", "none"},
  {"$EXTERNAL_NET public address",  {"alert ip $EXTERNAL_NET any -> any any (sid:1;)"}, "tcp 8.8.8.8:1 > 10.0.0.1:2", "alert 1"},
  {"$EXTERNAL_NET home address",    {"alert ip $EXTERNAL_NET any -> any any (sid:1;)"}, "tcp 10.1.1.1:1 > 8.8.8.8:2", "none"},
  {"home to external",              {"alert tcp $HOME_NET any -> $EXTERNAL_NET 443 (sid:1;)"}, "tcp 192.168.1.5:40000 > 1.1.1.1:443", "alert 1"},
  {"home to external, reversed",    {"alert tcp $HOME_NET any -> $EXTERNAL_NET 443 (sid:1;)"}, "tcp 1.1.1.1:443 > 192.168.1.5:40000", "none"},
  {"any any, v4",                   {"alert ip any any -> any any (sid:1;)"}, "tcp 1.2.3.4:1 > 5.6.7.8:2", "alert 1"},
  {"any any, v6",                   {"alert ip any any -> any any (sid:1;)"}, "tcp [2001:db8::1]:1 > [::1]:2", "alert 1"},
  // --- direction --------------------------------------------------------------------------------
  {"<> forward",                    {"alert tcp 10.0.0.1 any <> 10.0.0.2 80 (sid:1;)"}, "tcp 10.0.0.1:5555 > 10.0.0.2:80", "alert 1"},
  {"<> backward",                   {"alert tcp 10.0.0.1 any <> 10.0.0.2 80 (sid:1;)"}, "tcp 10.0.0.2:80 > 10.0.0.1:5555", "alert 1"},
  {"<> backward, port on wrong end",{"alert tcp 10.0.0.1 any <> 10.0.0.2 80 (sid:1;)"}, "tcp 10.0.0.2:5555 > 10.0.0.1:80", "none"},
  {"<> forward, port on wrong end", {"alert tcp 10.0.0.1 any <> 10.0.0.2 80 (sid:1;)"}, "tcp 10.0.0.1:80 > 10.0.0.2:5555", "none"},
  {"-> backward",                   {"alert tcp 10.0.0.1 any -> 10.0.0.2 80 (sid:1;)"}, "tcp 10.0.0.2:80 > 10.0.0.1:5555", "none"},
  {"<> matching both ways is once", {"alert ip 10.0.0.0/8 any <> 10.0.0.0/8 any (sid:1;)"}, "udp 10.0.0.1:1 > 10.0.0.2:2", "alert 1"},
  // --- actions and alert order ------------------------------------------------------------------
  {"drop alone",                    {"drop ip any any -> any any (sid:1;)"}, "tcp 1.2.3.4:1 > 5.6.7.8:2", "drop 1"},
  {"reject drops",                  {"reject tcp any any -> any any (sid:1;)"}, "tcp 1.2.3.4:1 > 5.6.7.8:2", "drop 1"},
  {"pass alone",                    {"pass ip any any -> any any (sid:1;)"}, "tcp 1.2.3.4:1 > 5.6.7.8:2", "pass"},
  {"pass after drop in file wins",  {"drop ip any any -> any any (sid:1;)", "pass ip any any -> any any (sid:2;)"}, "tcp 1.2.3.4:1 > 5.6.7.8:2", "pass"},
  {"pass before alert: no alert",   {"pass ip any any -> any any (sid:1;)", "alert ip any any -> any any (sid:2;)"}, "tcp 1.2.3.4:1 > 5.6.7.8:2", "pass"},
  {"pass not matching",             {"drop ip any any -> any any (sid:1;)", "pass tcp any any -> any 22 (sid:2;)"}, "tcp 1.2.3.4:1 > 5.6.7.8:80", "drop 1"},
  {"pass matching",                 {"drop ip any any -> any any (sid:1;)", "pass tcp any any -> any 22 (sid:2;)"}, "tcp 1.2.3.4:1 > 5.6.7.8:22", "pass"},
  {"drop alerts before alert",      {"alert ip any any -> any any (sid:1;)", "drop ip any any -> any any (sid:2;)"}, "tcp 1.2.3.4:1 > 5.6.7.8:2", "drop 2,1"},
  {"drop, reject, alert order",     {"alert ip any any -> any any (sid:1;)", "reject ip any any -> any any (sid:2;)", "drop ip any any -> any any (sid:3;)"}, "tcp 1.2.3.4:1 > 5.6.7.8:2", "drop 3,2,1"},
  {"only the drop rule matches",    {"alert udp any any -> any any (sid:1;)", "drop tcp any any -> any any (sid:2;)"}, "tcp 1.2.3.4:1 > 5.6.7.8:2", "drop 2"},
  {"only the alert rule matches",   {"alert udp any any -> any any (sid:1;)", "drop tcp any any -> any any (sid:2;)"}, "udp 1.2.3.4:1 > 5.6.7.8:2", "alert 1"},
  {"lower priority value first",    {"alert ip any any -> any any (sid:1; priority:3;)", "alert ip any any -> any any (sid:2; priority:1;)"}, "tcp 1.2.3.4:1 > 5.6.7.8:2", "alert 2,1"},
  {"no priority equals 3",          {"alert ip any any -> any any (sid:1;)", "alert ip any any -> any any (sid:2; priority:3;)"}, "tcp 1.2.3.4:1 > 5.6.7.8:2", "alert 1,2"},
  {"priority 2 before none",        {"alert ip any any -> any any (sid:1;)", "alert ip any any -> any any (sid:2; priority:2;)"}, "tcp 1.2.3.4:1 > 5.6.7.8:2", "alert 2,1"},
  {"none before priority 4",        {"alert ip any any -> any any (sid:1; priority:4;)", "alert ip any any -> any any (sid:2;)"}, "tcp 1.2.3.4:1 > 5.6.7.8:2", "alert 2,1"},
  {"action before priority",        {"alert ip any any -> any any (sid:1; priority:1;)", "drop ip any any -> any any (sid:2; priority:4;)"}, "tcp 1.2.3.4:1 > 5.6.7.8:2", "drop 2,1"},
  {"file order, not sid order",     {"alert ip any any -> any any (sid:7;)", "alert ip any any -> any any (sid:3;)"}, "tcp 1.2.3.4:1 > 5.6.7.8:2", "alert 7,3"},
  {"two indexes, one packet",       {"alert ip 10.0.0.1 any -> any any (sid:1;)", "alert ip any any -> 10.0.0.0/8 any (sid:2;)", "alert tcp any any -> any 80 (sid:3;)", "alert ip any any -> any any (sid:4;)"}, "tcp 10.0.0.1:5 > 10.0.0.2:80", "alert 1,2,3,4"},
  {"two indexes, some miss",        {"alert ip 10.0.0.1 any -> any any (sid:1;)", "alert ip any any -> 10.0.0.0/8 any (sid:2;)", "alert tcp any any -> any 80 (sid:3;)", "alert ip any any -> any any (sid:4;)"}, "tcp 10.0.0.3:5 > 10.0.0.2:81", "alert 2,4"},
};
// clang-format on

}  // namespace

TEST(FirewallMatcherTable, HandWrittenVerdicts) {
  uint32_t checked = 0;
  for (const Row& row : kRows) {
    SCOPED_TRACE(std::string("row \"") + row.name + "\"");
    std::vector<Rule> rules;
    for (const std::string& text : row.rules) {
      Rule r;
      ASSERT_EQ(parse_rule(text, RuleVars{}, r), "") << "row \"" << row.name << "\": " << text;
      rules.push_back(r);
    }
    FwPacket p;
    std::string why;
    ASSERT_TRUE(parse_packet(row.packet, p, why)) << "row \"" << row.name << "\": " << row.packet << ": " << why;
    FirewallTables t;
    t.compile(rules);
    FwMatch m;
    firewall_match(t.host_view(), p, m);
    EXPECT_EQ(verdict(m, rules), row.want) << "row \"" << row.name << "\": " << row.packet;
    EXPECT_EQ(m.overflow, 0u) << "row \"" << row.name << "\"";
    ++checked;
  }
  EXPECT_EQ(checked, kRows.size());
}

// The same rows, each row's rules compiled between rules of other shapes (exact addresses,
// ranges that overlap the rows' own, port-indexed and wildcard entries of both families), so that
// every index of the tables is populated and the row's rules sit at other indices: the row's
// verdict, from its own rules' alerts, must not change. The extra rules only alert (sids 9000 and
// up) and are left out of the verdict.
TEST(FirewallMatcherTable, HandWrittenVerdictsAmongOtherRules) {
  const std::vector<std::string> before = {
      "alert ip 203.0.113.7 any -> any any (sid:9001;)",
      "alert ip any any -> 203.0.113.0/24 any (sid:9002;)",
      "alert ip 2001:db8:dead::1 any -> any any (sid:9003;)",
      "alert ip [10.0.0.0/8,!10.0.0.0/24] any -> any any (sid:9004;)",
  };
  const std::vector<std::string> after = {
      "alert ip any any -> 2001:db8:dead::/48 any (sid:9005;)",
      "alert udp any any -> any 7 (sid:9006;)",
      "alert tcp any 7 -> any any (sid:9007;)",
      "alert icmpv6 any any <> any any (sid:9008;)",
      "alert ip any any -> [0.0.0.0/1,::/1] any (sid:9009; priority:1;)",
  };
  uint64_t extra_hits = 0;
  for (const Row& row : kRows) {
    std::vector<Rule> rules;
    for (const auto* part : {&before, &row.rules, &after})
      for (const std::string& text : *part) {
        Rule r;
        ASSERT_EQ(parse_rule(text, RuleVars{}, r), "") << text;
        rules.push_back(r);
      }
    FwPacket p;
    std::string why;
    ASSERT_TRUE(parse_packet(row.packet, p, why)) << row.name << ": " << why;
    FirewallTables t;
    t.compile(rules);
    FwMatch m;
    firewall_match(t.host_view(), p, m);
    ASSERT_EQ(m.overflow, 0u) << "row \"" << row.name << "\"";
    FwMatch own = m;  // the row's rules only
    own.n = 0;
    own.action = -1;
    for (int k = 0; k < m.n; ++k) {
      const Rule& r = rules[m.rule[k]];
      if (r.sid >= 9000) {
        ++extra_hits;
        continue;
      }
      own.rule[own.n++] = m.rule[k];
      const int8_t a = r.action == RuleAction::drop ? kFwDrop : r.action == RuleAction::reject ? kFwReject : kFwAlert;
      own.action = std::max(own.action, a);
    }
    EXPECT_EQ(verdict(own, rules), row.want) << "row \"" << row.name << "\" among other rules: " << row.packet;
  }
  EXPECT_GT(extra_hits, kRows.size() / 2);  // the other rules do meet the packets
}
