// modules/firewall/alert_eve.cpp — an EVE alert line for a rule (alert_eve.hpp).
#include "modules/firewall/alert_eve.hpp"

#include <arpa/inet.h>

#include <cctype>
#include <ctime>
#include <stdexcept>

#include "core/eve_event.hpp"
#include "decode/decoder.hpp"

namespace gaspp {
namespace {

std::string base64(const uint8_t* d, size_t n) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string o;
  o.reserve((n + 2) / 3 * 4);
  for (size_t i = 0; i < n; i += 3) {
    const uint32_t v = uint32_t(d[i]) << 16 | (i + 1 < n ? uint32_t(d[i + 1]) << 8 : 0) | (i + 2 < n ? d[i + 2] : 0);
    o += k[(v >> 18) & 63];
    o += k[(v >> 12) & 63];
    o += i + 1 < n ? k[(v >> 6) & 63] : '=';
    o += i + 2 < n ? k[v & 63] : '=';
  }
  return o;
}

// The packet's payload (captured part), or empty.
void payload_of(const HostPacket& p, const uint8_t*& data, uint32_t& len) {
  data = nullptr;
  len = 0;
  if (!p.decoded || !p.frame) return;
  const DecodedPacket& d = *static_cast<const DecodedPacket*>(p.decoded);
  if (d.payload_off[0] == kNoOffset || d.payload_off[0] >= d.cap_len[0]) return;
  data = p.frame + d.payload_off[0];
  len = std::min<uint32_t>(d.cap_len[0] - d.payload_off[0], d.payload_len[0]);
}

}  // namespace

bool alert_metadata_option(const std::string& k, const std::string& v, AlertMetadata& m) {
  bool* f = k == "metadata.flow"            ? &m.flow
            : k == "metadata.app-layer"     ? &m.app_layer
            : k == "metadata.rule.metadata" ? &m.rule_metadata
            : k == "metadata.rule.raw"      ? &m.rule_raw
                                            : nullptr;
  if (!f) return false;
  if (v != "on" && v != "off") throw std::invalid_argument(k + " is on or off, not '" + v + "'");
  *f = v == "on";
  return true;
}

std::string eve_packet_json(const uint8_t* frame, uint32_t len, uint8_t decoder_link) {
  // The frame as captured (for a reassembled datagram, the one defrag built), and its link type as
  // libpcap reports it (pcap_datalink: the file's LINKTYPE_RAW 101 is DLT_RAW 12 on Linux).
  const unsigned link = decoder_link == uint8_t(LinkType::linux_sll2) ? 276u : decoder_link == uint8_t(LinkType::raw) ? 12u : decoder_link;
  // Suricata's names for the link types (util-datalink.c's table), "n/a" for the others.
  const char* name = link == 0 ? "NULL" : link == 1 ? "EN10MB" : link == 113 ? "LINUX_SLL" : link == 276 ? "LINUX_SLL2"
                     : link == 9 ? "PPP" : link == 12 ? "RAW" : link == 104 ? "C_HDLC" : link == 228 ? "IPv4"
                     : link == 229 ? "IPv6" : "n/a";
  return ",\"packet\":\"" + base64(frame, len) + "\",\"packet_info\":{\"linktype\":" + std::to_string(link) +
         ",\"linktype_name\":\"" + name + "\"}";
}

// `,"payload":BASE64,"payload_printable":TEXT` of n bytes (CR and LF kept, other unprintable
// bytes as '.', as Suricata's SCJbSetPrintAsciiString).
std::string payload_json(const uint8_t* d, size_t n) {
  std::string printable;
  for (size_t i = 0; i < n; ++i) printable += (std::isprint(d[i]) || d[i] == '\n' || d[i] == '\r') ? char(d[i]) : '.';
  return ",\"payload\":\"" + base64(d, n) + "\",\"payload_printable\":\"" + json_escape(printable) + "\"";
}

std::string eve_frame_json(const EveFrame& f) {
  // Suricata's FrameJsonLogOneFrame: TCP frames carry their stream offset and as much of their
  // bytes as the alert's payload buffer holds (4 KiB), complete when all of them were there; UDP
  // frames at most 256 bytes, complete when the datagram holds the whole frame.
  auto u = [](uint64_t v) { return std::to_string(v); };
  std::string j = ",\"frame\":{\"type\":\"" + json_escape(f.type) + "\",\"id\":" + u(f.id) +
                  ",\"direction\":\"" + (f.to_server ? "toserver" : "toclient") + "\"";
  const size_t have = std::min<uint64_t>(f.have, f.length);
  const bool complete = have == f.length;
  if (f.tcp) {
    if (f.stream_offset != kEveNoOffset) j += ",\"stream_offset\":" + u(f.stream_offset);
    j += ",\"length\":" + u(f.length);
    const size_t n = std::min<size_t>(have, 4096);
    if (n) j += payload_json(f.data, n) + ",\"complete\":" + (complete ? "true" : "false");
  } else {
    j += ",\"length\":" + u(f.length) + ",\"complete\":" + (complete ? "true" : "false") +
         payload_json(f.data, std::min<size_t>(have, 256));
  }
  if (f.tx_id != kEveNoOffset) j += ",\"tx_id\":" + u(f.tx_id);
  return j + "}";
}

std::string eve_packet_json(const HostPacket& p) {
  if (!p.decoded || !p.frame) return "";
  // A packet decoded out of a tunnel is, as Suricata logs its tunnel pseudo-packet, the tunnel's
  // payload with the raw link type.
  const auto [off, len] = tunnel_packet_span(p);
  if (len) return eve_packet_json(p.frame + off, len, 12);
  return eve_packet_json(p.frame, p.cap_len, static_cast<const DecodedPacket*>(p.decoded)->link[0]);
}

std::string eve_alert_line(const Rule& r, const Classifications& classes_, const HostPacket& p, bool blocked,
                           const AlertExtras& x) {
  std::string j = eve_packet_head(p, "alert");
  if (x.xff_overwrite) {
    const std::string key = x.xff_overwrite == 1 ? ",\"src_ip\":\"" : ",\"dest_ip\":\"";
    const size_t at = j.find(key);
    if (at != std::string::npos) {
      const size_t from = at + key.size(), to = j.find('"', from);
      j.replace(from, to - from, json_escape(x.xff));
    }
  }
  if (x.ether) j += eve_ether_json(p);
  j += ",\"alert\":{\"action\":\"";
  j += blocked ? "blocked" : "allowed";
  j += "\",\"gid\":" + std::to_string(r.gid) + ",\"signature_id\":" + std::to_string(r.sid) +
       ",\"rev\":" + std::to_string(r.rev) + ",\"signature\":\"" + json_escape(r.msg) + "\"";
  if (!r.classtype.empty()) {
    // The class's description from classification.config, as Suricata writes it; the class name
    // when no file describes it.
    const std::string* d = class_description(classes_, r.classtype);
    j += ",\"category\":\"" + json_escape(d ? *d : r.classtype) + "\"";
  }
  j += ",\"severity\":" + std::to_string(rule_priority(r));
  if (x.meta.rule_metadata && !r.metadata.empty()) {
    // key → [values], grouped when the rule was read, as Suricata groups them.
    const auto& md = r.metadata;
    j += ",\"metadata\":{";
    for (size_t a = 0; a < md.size(); ++a) {
      j += (a ? ",\"" : "\"") + json_escape(md[a].first) + "\":[";
      for (size_t b = 0; b < md[a].second.size(); ++b) j += (b ? ",\"" : "\"") + json_escape(md[a].second[b]) + "\"";
      j += "]";
    }
    j += "}";
  }
  if (!x.context.empty()) j += ",\"context\":{" + x.context + "}";
  if (x.meta.rule_raw && !r.text.empty()) j += ",\"rule\":\"" + json_escape(r.text) + "\"";
  if (!x.xff.empty() && !x.xff_overwrite) j += ",\"xff\":\"" + json_escape(x.xff) + "\"";
  j += "}";
  // A transaction's alert carries its app_proto with its object; any other alert the flow's, as
  // Suricata writes it for every alert on a flow whose protocol it knows.
  j += x.app;
  if (x.app.empty() && p.app_proto) j += ",\"app_proto\":\"" + std::string(p.app_proto) + "\"";
  j += eve_tunnel_json(p);
  j += x.vars;
  if (x.meta.flow) j += eve_alert_flow_json(p);
  if (x.payload) {
    const uint8_t* d;
    uint32_t n;
    payload_of(p, d, n);
    j += payload_json(d, n) + ",\"stream\":" + (x.stream ? "1" : "0");
  }
  j += x.frame;
  if (x.packet) j += eve_packet_json(p);
  if (x.verdict) {
    // Suricata's EveAddVerdict (IPS): drop when the packet is dropped, else pass for a pass rule's
    // alert, else alert.
    const char* v = (p.verdict & kVerdictDrop) ? "drop" : x.pass ? "pass" : "alert";
    j += std::string(",\"verdict\":{\"action\":\"") + v + "\"";
    if (x.reject_dirs && (p.verdict & kVerdictDrop)) {
      // A reject to the source is Suricata's "to_client", to the destination "to_server"; a TCP
      // packet gets a reset, any other an ICMP unreachable (output/reject_packet.hpp).
      const uint8_t d = x.reject_dirs;
      j += std::string(",\"reject_target\":\"") +
           (d == (kRejectToSource | kRejectToDest) ? "both" : d == kRejectToDest ? "to_server" : "to_client") + "\"";
      const auto* dp = static_cast<const DecodedPacket*>(p.decoded);
      const bool tcp = dp && dp->ip_proto[0] == 6;
      j += std::string(",\"reject\":[\"") + (tcp ? "tcp-reset" : "icmp-prohib") + "\"]";
    }
    j += "}";
  }
  j += "}";
  return j;
}

std::string fast_log_line(const Rule& r, const Classifications& classes, const HostPacket& p, bool blocked) {
  const time_t sec = time_t(p.ts_ns / 1000000000ull);
  std::tm tm{};
  gmtime_r(&sec, &tm);
  char ts[64];
  std::snprintf(ts, sizeof ts, "%02d/%02d/%04d-%02d:%02d:%02d.%06llu", tm.tm_mon + 1, tm.tm_mday, tm.tm_year + 1900,
                tm.tm_hour, tm.tm_min, tm.tm_sec, (unsigned long long)(p.ts_ns % 1000000000ull / 1000));
  std::string l = ts;
  l += blocked ? "  [Drop] [**] [" : "  [**] [";
  l += std::to_string(r.gid) + ":" + std::to_string(r.sid) + ":" + std::to_string(r.rev) + "] " + r.msg + " [**]";
  if (!r.classtype.empty()) {
    const std::string* d = class_description(classes, r.classtype);
    l += " [Classification: " + (d ? *d : r.classtype) + "]";
  }
  l += " [Priority: " + std::to_string(rule_priority(r)) + "]";
  // Endpoints: the packet's, else (flow-only) the flow's as its client sent.
  const uint32_t *src = nullptr, *dst = nullptr;
  uint16_t sp = 0, dp = 0;
  uint8_t proto = 0, fam = 4;
  if (p.decoded) {
    const DecodedPacket& d = *static_cast<const DecodedPacket*>(p.decoded);
    src = d.src_ip;
    dst = d.dst_ip;
    sp = d.sport[0];
    dp = d.dport[0];
    proto = d.ip_proto[0];
    fam = d.l3[0] == uint8_t(L3::ipv6) ? 6 : 4;
  } else if (p.flow) {
    const int c = p.flow->client_lo ? 0 : 1;
    src = p.flow->key.addr[c];
    dst = p.flow->key.addr[1 - c];
    sp = p.flow->key.port[c];
    dp = p.flow->key.port[1 - c];
    proto = p.flow->key.proto;
    fam = p.flow->key.family;
  }
  const char* pn = proto == 6 ? "TCP" : proto == 17 ? "UDP" : proto == 1 ? "ICMP" : proto == 58 ? "IPV6-ICMP" : nullptr;
  l += " {" + (pn ? std::string(pn) : std::string("PROTO:") + std::to_string(proto)) + "} ";
  if (src && dst) {
    char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];
    inet_ntop(fam == 6 ? AF_INET6 : AF_INET, src, a, sizeof a);
    inet_ntop(fam == 6 ? AF_INET6 : AF_INET, dst, b, sizeof b);
    const bool ports = proto == 6 || proto == 17;
    l += std::string(a) + (ports ? ":" + std::to_string(sp) : "") + " -> " + b + (ports ? ":" + std::to_string(dp) : "");
  }
  return l;
}

}  // namespace gaspp
