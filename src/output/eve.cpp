#include "output/eve.hpp"

#include <chrono>

#include <cerrno>
#include <cstring>
#include <cstdio>
#include <ctime>
#include <stdexcept>

#include "decode/decoder.hpp"
#include "output/summary.hpp"

namespace gaspp {

namespace {

std::string hex_flags(uint16_t f) {
  char b[8];
  std::snprintf(b, sizeof b, "%02x", unsigned(f & 0xff));  // two digits, as Suricata
  return b;
}

}  // namespace

std::string eve_flow_json(const FlowRecordOut& o, const char* app_proto, const char* app_proto_orig, const std::string& vars) {
  const FlowRecord& r = o.rec;
  const FlowKey& k = r.key;
  const int ci = r.client_lo ? 0 : 1;  // key endpoint of the client
  auto u = [](uint64_t v) { return std::to_string(v); };
  std::string j = "{\"timestamp\":\"" + eve_timestamp(r.last_ts) + "\",\"flow_id\":" + u(r.flow_id) +
                  ",\"event_type\":\"flow\"" + flow_endpoints_json(k, ci);
  j += vlan_json(k.vlan, k.vlan_n);
  const FlowSide& c = r.side[0];
  const FlowSide& s = r.side[1];
  if (k.proto == 1 || k.proto == 58) {
    // As Suricata: the type and code of the first message each way (the key holds the request's).
    const uint32_t ct = (c.isn & kIcmpSeen) ? c.isn : (uint32_t(k.icmp_type) << 8 | k.icmp_code);
    j += ",\"icmp_type\":" + u((ct >> 8) & 0xff) + ",\"icmp_code\":" + u(ct & 0xff);
    if (s.isn & kIcmpSeen) j += ",\"response_icmp_type\":" + u((s.isn >> 8) & 0xff) + ",\"response_icmp_code\":" + u(s.isn & 0xff);
  }
  if (app_proto && *app_proto) j += ",\"app_proto\":\"" + std::string(app_proto) + "\"";
  if (app_proto_orig && *app_proto_orig) j += ",\"app_proto_orig\":\"" + std::string(app_proto_orig) + "\"";
  j += vars;
  const uint64_t age = r.last_ts / 1'000'000'000ull - r.first_ts / 1'000'000'000ull;
  const FlowState st = r.state == uint8_t(FlowState::fresh) ? FlowState::new_ : FlowState(r.state);
  j += ",\"flow\":{\"pkts_toserver\":" + u(c.pkts) + ",\"pkts_toclient\":" + u(s.pkts) + ",\"bytes_toserver\":" +
       u(c.bytes) + ",\"bytes_toclient\":" + u(s.bytes) + ",\"start\":\"" + eve_timestamp(r.first_ts) +
       "\",\"end\":\"" + eve_timestamp(r.last_ts) + "\",\"age\":" + u(age) + ",\"state\":\"" + flow_state_name(st) +
       "\",\"reason\":\"" + flow_reason_name(FlowReason(o.reason)) + "\",\"alerted\":" + ((r.misc & kFlowAlerted) ? "true" : "false") +
       ((r.misc & kFlowDecidedDrop) ? ",\"action\":\"drop\"" : (r.misc & kFlowDecidedPass) ? ",\"action\":\"pass\"" : "") + "}";
  if (k.proto == 6) {
    const uint16_t all = c.flags | s.flags;
    j += ",\"tcp\":{\"tcp_flags\":\"" + hex_flags(all) + "\",\"tcp_flags_ts\":\"" + hex_flags(c.flags) +
         "\",\"tcp_flags_tc\":\"" + hex_flags(s.flags) + "\"";
    static const char* names[8] = {"fin", "syn", "rst", "psh", "ack", "urg", "ecn", "cwr"};
    for (int b = 0; b < 8; ++b)
      if (all & (1u << b)) j += ",\"" + std::string(names[b]) + "\":true";
    if (r.misc & kFlowNoSession) j += ",\"state\":\"none\"";
    else j += ",\"state\":\"" + std::string(tcp_session_name(r)) + "\"";
    // Suricata's ts_gap / tc_gap: the direction to the server / to the client lost data.
    if (r.stream[0].flags & kStreamGap) j += ",\"ts_gap\":true";
    if (r.stream[1].flags & kStreamGap) j += ",\"tc_gap\":true";
    j += "}";
  }
  j += "}";
  return j;
}

EveWriter::EveWriter(const std::string& dir) : f_(dir + "/eve.json", "w") {}

void EveWriter::write_line(const std::string& json) {
  f_.write(json);
  f_.write("\n", 1);
  ++events_;
}

void EveWriter::write_flows(const std::vector<FlowRecordOut>& v) {
  for (const auto& r : v) {
    const char* proto = app_proto_ ? app_proto_(r.rec.flow_id) : nullptr;
    const char* orig = app_proto_orig_ ? app_proto_orig_(r.rec.flow_id) : nullptr;
    const std::string vars = vars_ ? vars_(r.rec.flow_id) : std::string();
    // A decision the device made stands; the host's alerts add to the device's.
    uint8_t late = late_ ? late_(r.rec.flow_id) : 0;
    if (r.rec.misc & (kFlowDecidedDrop | kFlowDecidedPass)) late &= uint8_t(~(kFlowDecidedDrop | kFlowDecidedPass));
    if (late) {
      FlowRecordOut d = r;
      d.rec.misc |= late;
      write_line(eve_flow_json(d, proto, orig, vars));
    } else {
      write_line(eve_flow_json(r, proto, orig, vars));
    }
  }
}

// Suricata's stats names (the EVE schema's), for what gaspp counts; every counter of its own is in
// --stats-json. Suricata's decoder counts a packet under its link layer's name.
void EveWriter::write_stats(const RunReport& r, const nlohmann::ordered_json& extra) {
  const auto& t = r.totals.v;
  const uint64_t now_ns = uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                       std::chrono::system_clock::now().time_since_epoch()).count());
  const std::string& l = r.link;
  const char* link = l == "ethernet" ? "ethernet" : l == "linux_sll" ? "sll" : l == "linux_sll2" ? "sll2"
                     : l == "cisco_hdlc" ? "chdlc" : (l == "ppp" || l == "ppp_hdlc") ? "ppp"
                     : (l == "bsd_loopback" || l == "openbsd_loopback") ? "null"
                     : l.rfind("raw", 0) == 0 ? "raw" : nullptr;
  nlohmann::ordered_json st;
  st["uptime"] = uint64_t(r.seconds);
  if (r.live) st["capture"] = {{"kernel_packets", r.kernel_packets}, {"kernel_drops", r.kernel_drops}};  // Suricata's af-packet counters
  auto& dec = st["decoder"];
  dec = {{"pkts", t[c_packets]},
         {"bytes", t[c_wire_bytes]},
         {"invalid", t[c_malformed]},
         {"ipv4", t[c_l3_ipv4]},
         {"ipv6", t[c_l3_ipv6]},
         {"tcp", t[c_l4_tcp]},
         {"udp", t[c_l4_udp]},
         {"icmpv4", t[c_l4_icmp]},
         {"icmpv6", t[c_l4_icmpv6]},
         {"arp", t[c_l3_arp]},
         {"vlan", t[c_vlan_tagged]},
         {"unknown_ethertype", t[c_undecoded_reason0 + int(UndecodedReason::ethertype)]},
         {"avg_pkt_size", t[c_packets] ? t[c_wire_bytes] / t[c_packets] : 0}};
  if (link) dec[link] = t[c_packets];
  // decoder.event.<layer>.<name>, as Suricata's stats nest its decoder events (those raised only).
  for (int k = 1; k < kDecodeEvents; ++k) {
    if (!t[c_decode_event0 + k]) continue;
    const std::string name = decode_event_name(DecodeEvent(k));
    const size_t dot = name.find('.');
    dec["event"][name.substr(0, dot)][name.substr(dot + 1)] = t[c_decode_event0 + k];
  }
  if (r.defrag_config.enabled) {
    const DefragStats& d = r.defrag;
    st["defrag"] = {{"ipv4", {{"fragments", d.ipv4_fragments}, {"reassembled", d.ipv4_reassembled}}},
                    {"ipv6", {{"fragments", d.ipv6_fragments}, {"reassembled", d.ipv6_reassembled}}},
                    {"max_trackers_reached", d.max_trackers_reached},
                    {"max_frags_reached", d.max_frags_reached},
                    {"mgr", {{"tracker_timeout", d.timeouts}}}};
  }
  st["flow"] = {{"total", t[c_flow_created]},
                {"active", r.flows.live},
                {"emerg_mode_entered", t[c_flow_emergency]},
                {"tcp_reuse", t[c_flow_port_reuse]}};
  st["tcp"] = {{"midstream_pickups", t[c_tcp_midstream]},
               {"reassembly_gap", t[c_stream_gaps]},
               {"overlap", t[c_stream_overlap_same] + t[c_stream_overlap_conflict]},
               {"overlap_diff_data", t[c_stream_overlap_conflict]},
               {"invalid_checksum", t[c_csum_bad_tcp]},
               {"urgent_oob_data", t[c_stream_urgent_oob]}};
  for (const auto& [k, v] : extra.items()) st[k] = v;
  nlohmann::ordered_json j;
  j["timestamp"] = eve_timestamp(now_ns);
  j["event_type"] = "stats";
  j["stats"] = std::move(st);
  write_line(json_text(j));
}

}  // namespace gaspp
