// tools/options.hpp — everything `gaspp -r` is asked to do, in one struct that the command line and
// the YAML configuration both fill.
//
// parse_command_line() reads the options in the order given (CLI11) and applies each where it
// stands: -c FILE and --set KEY=VALUE read the configuration (core/config.hpp) and apply_file_config()
// writes it into the same Options, so a flag after -c overrides the file and one before it is
// overridden. What the options mean is in docs/usage.md; tools/gaspp.cpp runs what they say.
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.hpp"
#include "applayer/app_layer.hpp"
#include "core/config.hpp"
#include "capture/af_packet_source.hpp"
#include "pipeline/pipeline.hpp"

namespace gaspp {

struct Options {
  std::string input;                   // -r
  std::vector<std::string> ifaces;     // -i (each), or --inline's two
  AfPacketOptions live;                // the --af-packet-* options, for each interface
  bool inline_ips = false;             // --inline A:B: ifaces are A and B, passing packets cross over
  bool inline_fail_open = false;       // --inline-fail open: past --inline-fail-after, forward uninspected
  uint32_t inline_fail_after_ms = 100; // how far behind (capture time to now) counts as overload
  // suricata.yaml's http-body-inline (yes, no, auto): auto is yes with --inline (app_layer.http.body_inline)
  std::string http_body_inline = "auto";
  uint32_t rings = 1;                  // --af-packet-rings: sockets (rings) per interface, one fanout group
  bool reader_threads = true;          // --af-packet-readers: a reader thread per ring (ring) or none (one)
  std::string backend = "auto";        // --backend, backend:
  BackendConfig backend_config;        // batch, flow table, reassembly, transfers, device ...
  bool batch_given = false;            // --batch or batch: (else the backend's default size)
  int gpus = 1;                        // --gpus, gpus: CUDA devices the flows are sharded over (-1: all)
  int shards = 0;                      // --shards, shards: backends sharding the flows (0: one per GPU)
  RunOptions run;                      // batch policy, indexing, defragmentation ...
  // Modules in the order given: (name, options); --rules, -s, -S and --firewall-rules add to the one
  // firewall, -c's modules come where -c stands.
  std::vector<std::pair<std::string, ModuleOptions>> modules;
  ModuleOptions config_vars;           // the configuration's vars: every firewall gets them
  std::string exception_policy;        // the configuration's exception-policy (master switch)
  std::string memcap_policy;           // its flow.memcap-policy
  // Outputs (empty: not written).
  std::string stats_json, decode_out, eve_dir, dump_dir, write_path, dump_packets;
  std::string detect_prefilter;  // --detect-prefilter: the detect modules' prefilter option
  bool eve_payload = false;      // --eve-payload: alerts carry the payload
  bool eve_anomaly = false;      // --eve-anomaly: EVE anomaly events for decoder events
  bool eve_anomaly_applayer = false;  // --eve-anomaly-applayer: and for the application layer's events
  bool eve_packet = false;       // --eve-packet: alerts carry the packet (base64) and its link type
  bool eve_tagged_packets = false;  // --eve-tagged-packets: EVE packet events for tagged packets
  std::map<std::string, std::string> eve_xff;  // eve-log alert xff: the detect module's xff options
  bool eve_verdict = false;      // --eve-verdict: alerts carry the packet's final verdict
  bool eve_ethernet = false;     // --eve-ethernet: alerts carry the frame's MAC addresses (ether)
  bool eve_metadata = true;      // eve-log metadata: events carry the flow's variables (traffic, metadata)
  bool eve_ipv6_compress = false;  // --eve-ipv6-compress: IPv6 addresses in EVE as RFC 5952 writes them
  std::map<std::string, std::string> eve_alert_metadata;  // the configuration's alert metadata switches
  uint32_t packet_alert_max = 0; // the configuration's packet-alert-max (0: the engine's default)
  AppLayerConfig app_layer;      // the configuration's HTTP limits (app-layer section)
  bool app_layer_on = false;     // --app-layer: parse HTTP without HTTP rules too
  bool fast_log = false;         // --fast-log: fast.log beside eve.json
  bool quiet = false;                  // -q
  bool eve_drops = false;              // --eve-drops
  int progress = -1;                   // --progress 1, --no-progress 0; -1: when stderr is a terminal
};

// Fills o from the command line. Returns -1 to go on, else the exit status to end with: 0 after
// --help or --version, 1 after a usage error (it printed why).
int parse_command_line(int argc, char** argv, Options& o);

// Writes a configuration's settings into o (what -c and --set give).
void apply_file_config(const FileConfig& fc, Options& o);

}  // namespace gaspp
