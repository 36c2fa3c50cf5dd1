// core/eve_event.hpp — the pieces of a Suricata EVE event that modules and the pipeline write
// about a packet (alerts, drops, a module's own events): the common head (timestamp, flow_id,
// pcap_cnt, event_type, addresses, ports, proto, direction, pkt_src), an alert's `flow` object,
// Suricata's timestamp and address forms, and JSON string escaping. The EVE file itself, flow
// records and stats are written by output/eve.hpp, which builds on these.
#pragma once
#include <cstdint>
#include <string>
#include <utility>

#include "flow/flow_record.hpp"
#include "gaspp/module.hpp"

namespace gaspp {

// Times as Suricata prints them, UTC: 2024-04-01T12:00:00.123456+0000.
std::string eve_timestamp(uint64_t ts_ns);
// The contents of a JSON string holding `s` (no quotes): escaped, invalid UTF-8 replaced by U+FFFD.
std::string json_escape(const std::string& s);
// An address as Suricata's EVE writes it: dotted IPv4; IPv6 as eight groups of four hex digits with
// no "::" shortening ("2001:0db8:0000:...:0001"), or, after set_eve_ipv6_compress(true) (eve-log's
// `ipv6-compress: yes`, --eve-ipv6-compress), in RFC 5952's compressed form ("2001:db8::1").
std::string eve_address(const uint32_t* words, bool v6);
// The process's IPv6 form in EVE (set once at start, before any event is written).
void set_eve_ipv6_compress(bool on);
// ,"vlan":[ids] of the n (at most 3) tags, outermost first; nothing without tags.
std::string vlan_json(const uint16_t* ids, int n);
// ,"src_ip",["src_port",]"dest_ip",["dest_port",]"ip_v","proto" of a flow, endpoint `si` of its key sending.
std::string flow_endpoints_json(const FlowKey& k, int si);
// The fields every per-packet event starts with, as Suricata writes them: {"timestamp", "flow_id"
// (when the packet has a flow), "pcap_cnt", "event_type", "vlan", "src_ip", "src_port", "dest_ip",
// "dest_port", "proto", "ip_v", "direction", "pkt_src" ("wire/pcap", or "ipv4 tunnel" / "ipv6 tunnel"
// for a packet decoded out of a tunnel) — open: the caller appends its fields and the closing brace.
std::string eve_packet_head(const HostPacket& p, const char* event_type);
// Suricata's `ether` object (eve-log's `ethernet: yes`) of an event on a packet captured on
// Ethernet: ,"ether":{"src_mac":"..","dest_mac":".."} from the frame's Ethernet header (the
// outermost one: a tunneled packet's carrier's). Empty for another link type or a flow-only event.
std::string eve_ether_json(const HostPacket& p);
// Suricata's `tunnel` object of an alert on a packet decoded out of a tunnel (GTP-U, IP in IP):
// ,"tunnel":{src_ip, src_port, dest_ip, dest_port, proto, depth, pcap_cnt, pkt_src} of the
// outermost packet as captured. Empty for a packet that came in no tunnel.
std::string eve_tunnel_json(const HostPacket& p);
// The packet Suricata makes of a tunnel's payload for a packet decoded out of a tunnel: {offset,
// length} in p.frame of the innermost tunnel's payload (the inner IP packet, the Ethernet frame
// VXLAN or Geneve carried, all GRE carried after its header) up to the end of its carrier's
// payload; {0, 0} for a packet that came in no tunnel.
std::pair<uint32_t, uint32_t> tunnel_packet_span(const HostPacket& p);
// Suricata's `flow` object of an alert: ,"flow":{pkts_toserver, pkts_toclient, bytes_toserver,
// bytes_toclient, start, src_ip, dest_ip, src_port, dest_port} — the flow's counters right after
// the packet (HostPacket::flow_counts; for a flow-only event, the record's), addresses from the
// client's side. Empty when the packet has no flow or no counters were recorded.
std::string eve_alert_flow_json(const HostPacket& p);

}  // namespace gaspp
