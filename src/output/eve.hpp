// output/eve.hpp — Suricata-compatible EVE JSON (`-l DIR` writes DIR/eve.json, one event a line).
//
// Flow events carry Suricata's field names: timestamp (the flow's last packet), flow_id,
// event_type "flow", src_ip/src_port (the client), dest_ip/dest_port, proto, vlan (when tagged),
// icmp_type/icmp_code for ICMP, app_proto (with the application layer on: what it detected), and
//   flow: pkts_toserver, pkts_toclient, bytes_toserver, bytes_toclient, start, end, age, state
//         (new/established/closed), reason (timeout/forced/shutdown), alerted
//   tcp:  tcp_flags, tcp_flags_ts, tcp_flags_tc (hex, as Suricata), syn/fin/rst/psh/ack/urg/ecn/cwr
//         when seen, state (the session state in Suricata's words)
// Times are UTC, printed as Suricata does: 2024-04-01T12:00:00.123456+0000.
//
// At the end of the run one `stats` event under Suricata's names (the EVE schema's): uptime,
// decoder (pkts, bytes, invalid, per protocol, the link layer's name), flow (total, active,
// emerg_mode_entered, tcp_reuse), tcp (midstream_pickups, reassembly_gap, overlap,
// overlap_diff_data), and the modules' ips / firewall accounting. gaspp's other counters are in
// the summary and --stats-json. Packet events carry pkt_src "wire/pcap"; their common head, the
// alert flow object, timestamps, addresses and escaping are in core/eve_event.hpp.
#pragma once
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/eve_event.hpp"
#include "pipeline/pipeline.hpp"
#include "flow/flow_record.hpp"
#include "gaspp/module.hpp"
#include "output/out_file.hpp"

namespace gaspp {

// app_proto: the flow's application protocol as Suricata names it ("http", "tls", "dns", "failed"),
// written before the flow object as Suricata does; null or "": none (no application layer ran on
// the flow, or it had no data to detect).
std::string eve_flow_json(const FlowRecordOut& r, const char* app_proto = nullptr, const char* app_proto_orig = nullptr,
                          const std::string& vars = {});

class EveWriter {
 public:
  // Opens DIR/eve.json for writing (truncates); throws OutputError naming the path on failure, as
  // does every write that fails (out_file.hpp).
  explicit EveWriter(const std::string& dir);
  EveWriter(const EveWriter&) = delete;
  EveWriter& operator=(const EveWriter&) = delete;
  void write_flows(const std::vector<FlowRecordOut>& v);
  // Where write_flows() finds a flow's app_proto (the application layer, ModuleSet::app_proto_of).
  void set_app_proto_lookup(std::function<const char*(uint64_t flow_id)> f) { app_proto_ = std::move(f); }
  // ... and its app_proto_orig (ModuleSet::app_proto_orig_of: a CONNECT tunnel's first protocol).
  void set_app_proto_orig_lookup(std::function<const char*(uint64_t flow_id)> f) { app_proto_orig_ = std::move(f); }
  // What a host handler decided for the flow after the engine's verdicts (ModuleSet::late_dropped,
  // late_passed, late_alerted): kFlowDecidedDrop or kFlowDecidedPass, the record's action unless the
  // engine had decided the flow, and kFlowAlerted when a handler alerted on it.
  void set_late_decision_lookup(std::function<uint8_t(uint64_t flow_id)> f) { late_ = std::move(f); }
  // The flow's variables for its record (ModuleSet::flow_eve_json: `,"traffic":{...},"metadata":{...}`).
  void set_flow_vars_lookup(std::function<std::string(uint64_t flow_id)> f) { vars_ = std::move(f); }
  // extra: more members of the stats object (the modules' verdict accounting), or "".
  // `extra`: members added to the stats object (the modules' ips / firewall accounting).
  void write_stats(const RunReport& r, const nlohmann::ordered_json& extra = nlohmann::ordered_json::object());
  void write_line(const std::string& json);
  // Flushes and closes; throws OutputError if anything could not be written.
  void close() { f_.close(); }
  uint64_t events() const { return events_; }
  const std::string& path() const { return f_.path(); }

 private:
  OutFile f_;
  uint64_t events_ = 0;
  std::function<const char*(uint64_t)> app_proto_;
  std::function<const char*(uint64_t)> app_proto_orig_;
  std::function<uint8_t(uint64_t)> late_;
  std::function<std::string(uint64_t)> vars_;
};

}  // namespace gaspp
