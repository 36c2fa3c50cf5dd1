// core/config.hpp — the YAML configuration file (`gaspp -c FILE`): which modules run, in which
// order, with which options, the flow classes, scheduling and a few pipeline settings. Without a
// file the built-in defaults apply (no modules; `gaspp -r file` runs decode, flows, reassembly).
// Command-line flags given after -c override its settings and add modules after its modules.
//
//   backend: auto                # auto | cuda | cpu
//   batch: 65536                 # packets per batch (default 65536 on CUDA, 8192 on the CPU)
//   threads: 0                   # CPU backend threads (0: all)
//   schedule: auto               # on | off | auto: regroup packets between module stages
//   slice: auto                  # on | off | auto: header-only slicing on CUDA (docs/usage.md)
//   gather_sms: 0                # CUDA slicing: SMs of the gather's own (0: smallest; -1: none)
//   cuda_device: 0               # CUDA: the device to run on (its ordinal; with gpus, the first)
//   gpus: 1                      # CUDA: devices to shard the flows over (N or all; docs/multi-gpu.md)
//   shards: 0                    # backends the flows are sharded over (0: one per GPU; CPU: 1)
//   vars:                        # Suricata's names; given to the firewall
//     address-groups:
//       HOME_NET: "[10.0.0.0/8,192.168.0.0/16]"
//     port-groups:
//       HTTP_PORTS: "[80,8080]"
//   threshold-file: /etc/gaspp/threshold.config   # Suricata's; given to the firewall and detect
//   modules:                     # in pipeline order
//     - name: firewall
//       rules: [/etc/gaspp/drop.rules, /etc/gaspp/local.rules]
//     - name: probe
//       dport: 53
//       action: to_dump
//   classes:                     # optional: flow classes with their own module order
//     - [0, 1]
//     - [1, 0]
//   flow-timeouts:               # suricata.yaml's names and defaults (seconds; docs/flows.md)
//     tcp: {new: 60, established: 600, closed: 60, emergency-new: 5, ...}
//     udp: {new: 30, established: 300}
//     icmp: {...}
//     default: {...}             # every other IP protocol
//   exception-policy: auto       # suricata.yaml's master switch; flow.memcap-policy overrides it for
//   flow: {memcap-policy: ...}   # packets the flow table has no room for (backend/backend.hpp)
//   defrag:                      # suricata.yaml's (defrag/defrag.hpp); policy and enabled are gaspp's
//     {memcap: 32mb, trackers: 65535, max-frags: 65535, timeout: 60, policy: bsd, enabled: yes}
//   stream:                      # suricata.yaml's; only reassembly.urgent is read (stream/stream.hpp)
//     reassembly:
//       urgent: {policy: inline|oob|gap|drop, oob-limit-policy: inline|gap|drop}
//
// A real suricata.yaml is accepted: its sections gaspp does not use (outputs, af-packet,
// app-layer, ...) are returned in `ignored` for the caller to list once; any other unknown key is
// an error. `sets` are Suricata's `--set key=value` overrides (dots separate map keys, a number
// indexes a list), applied to the file's tree before it is read; with an empty path they make the
// whole configuration. Errors name the file, line and column (std::runtime_error).
#pragma once
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "applayer/detection_ports.hpp"
#include "defrag/defrag.hpp"
#include "flow/flow_record.hpp"
#include "gaspp/module.hpp"
#include "stream/stream.hpp"

namespace gaspp {

struct FileConfig {
  std::optional<std::string> backend;
  std::optional<uint32_t> batch;
  std::optional<int> threads;
  std::optional<std::string> schedule;
  std::optional<std::string> slice;
  std::optional<int> gather_sms;
  std::optional<int> cuda_device;
  std::optional<int> gpus;                     // gpus: N, or all (-1)
  std::optional<int> shards;
  std::vector<std::pair<std::string, ModuleOptions>> modules;
  std::vector<std::vector<uint16_t>> classes;
  ModuleOptions vars;                          // "address.NAME" / "port.NAME", "action-order", "threshold-file": given to every firewall and detect
  std::optional<FlowTimeouts> flow_timeouts;   // set when the file has flow-timeouts
  std::optional<bool> vlan_in_key;  // vlan: use-for-tracking (as --flow-vlan)
  std::optional<UrgentPolicy> urgent, urgent_oob_limit;  // stream.reassembly.urgent
  // Suricata's exception-policy master switch and flow.memcap-policy, as written (auto,
  // drop-packet, drop-flow, pass-packet, pass-flow, bypass, reject, ignore)
  std::optional<std::string> exception_policy, flow_memcap_policy;
  std::optional<DefragConfig> defrag;          // suricata.yaml's defrag section (defrag/defrag.hpp)
  std::optional<uint32_t> packet_alert_max;    // suricata.yaml's packet-alert-max: the signature engine's
  // app-layer.protocols.http.libhtp.default-config: request-body-limit, response-body-limit,
  // response-body-decompress-layer-limit (the HTTP parser's limits, applayer/http1.hpp)
  std::optional<uint32_t> http_request_body_limit, http_response_body_limit, http_decompress_layer_limit;
  // ... request-body-minimal-inspect-size, request-body-inspect-window, response-body-minimal-
  // inspect-size, response-body-inspect-window; http-body-inline (yes, no or auto)
  std::optional<uint32_t> http_request_inspect_min, http_request_inspect_window;
  std::optional<uint32_t> http_response_inspect_min, http_response_inspect_window;
  std::optional<std::string> http_body_inline;
  std::optional<uint32_t> ftp_max_tx;  // app-layer.protocols.ftp.max-tx
  std::optional<bool> ssh_hassh;       // app-layer.protocols.ssh.hassh (yes; auto and no: off)
  // app-layer.protocols.dns[.udp|.tcp].detection-ports.dp, sip[.udp].detection-ports.dp
  std::optional<PortRanges> dns_udp_ports, dns_tcp_ports, sip_udp_ports;
  std::optional<bool> http_lzma_enabled;        // lzma-enabled
  std::optional<uint64_t> http_lzma_memlimit;   // lzma-memlimit
  // outputs: eve-log: types: alert: payload / packet / verdict (yes or no), as gaspp's --eve-payload,
  // --eve-packet, --eve-verdict
  std::optional<bool> eve_payload, eve_packet, eve_verdict;
  std::optional<bool> eve_tagged_packets;  // types: alert: tagged-packets (--eve-tagged-packets)
  // types: alert: xff: the module options xff (extra-data, overwrite; absent: off), xff-deployment
  // (reverse, forward) and xff-header, as Suricata's HttpXFFGetCfg reads them
  std::map<std::string, std::string> eve_xff;
  std::optional<bool> eve_ethernet;  // eve-log's ethernet: yes (--eve-ethernet)
  std::optional<bool> eve_metadata;  // eve-log's top-level metadata (the flow's variables; default yes)
  std::optional<bool> eve_ipv6_compress;  // eve-log's ipv6-compress: yes (--eve-ipv6-compress)
  std::optional<bool> eve_anomaly_decode;    // eve-log types: anomaly (enabled, types: decode)
  std::optional<bool> eve_anomaly_applayer;  // eve-log types: anomaly (enabled, types: applayer, on unless no)
  // eve-log alert `metadata`: module options metadata.flow, metadata.app-layer,
  // metadata.rule.metadata, metadata.rule.raw ("on"/"off") for the firewall and detect.
  std::map<std::string, std::string> eve_alert_metadata;
  // outputs: eve-log: types: files: force-hash: [md5, sha1, sha256] (FileHash bits), as --force-hash
  std::optional<uint8_t> file_hashes;
  // outputs: eve-log: types: smtp: md5: [body, subject] (kMailMd5* bits): the email object's hashes
  std::optional<uint8_t> mail_md5_log;
  std::vector<std::string> ignored;            // Suricata sections present but not used by gaspp
  std::vector<std::string> warnings;           // values not taken, with why (the run goes on)
};

FileConfig load_config(const std::string& path, const std::vector<std::string>& sets = {});

}  // namespace gaspp
