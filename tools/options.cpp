// tools/options.cpp — the command line and the configuration file into one Options (options.hpp).
#include "tools/options.hpp"

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>

#include <CLI/CLI.hpp>

#include "capture/capture_file.hpp"
#include "tools/cli.hpp"

namespace gaspp {
namespace {

uint64_t parse_u64(const char* opt, const char* v) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long x = std::strtoull(v, &end, 0);
  if (!v[0] || *end || errno || v[0] == '-') {
    std::fprintf(stderr, "gaspp: %s: not a non-negative integer: '%s'\n", opt, v);
    std::exit(1);
  }
  return x;
}

// A number in [lo, hi], or exit 1 naming the option and its range.
uint64_t parse_bounded(const char* opt, const char* v, uint64_t lo, uint64_t hi) {
  const uint64_t x = parse_u64(opt, v);
  if (x < lo || x > hi) {
    std::fprintf(stderr, "gaspp: %s must be %llu..%llu, not %s\n", opt, (unsigned long long)lo, (unsigned long long)hi, v);
    std::exit(1);
  }
  return x;
}

double parse_double(const char* opt, const char* v, double lo, double hi) {
  char* end = nullptr;
  const double x = std::strtod(v, &end);
  if (!v[0] || *end || !(x >= lo && x <= hi)) {
    std::fprintf(stderr, "gaspp: %s: expected a number in [%g, %g], got '%s'\n", opt, lo, hi, v);
    std::exit(1);
  }
  return x;
}

// "name:k=v,k=v" → name and options; commas inside [...] belong to the value.
std::pair<std::string, ModuleOptions> parse_module_spec(const std::string& spec) {
  const size_t colon = spec.find(':');
  std::pair<std::string, ModuleOptions> out{spec.substr(0, colon), {}};
  if (colon == std::string::npos) return out;
  std::string item;
  int depth = 0;
  auto flush = [&]() {
    if (item.empty()) return;
    const size_t eq = item.find('=');
    if (eq == std::string::npos) throw std::invalid_argument("module option '" + item + "' is not KEY=VALUE");
    out.second[item.substr(0, eq)] = item.substr(eq + 1);
    item.clear();
  };
  for (char c : spec.substr(colon + 1)) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) flush();
    else item += c;
  }
  flush();
  return out;
}

}  // namespace

void apply_file_config(const FileConfig& fc, Options& o) {
  BackendConfig& bc = o.backend_config;
  RunOptions& ro = o.run;
  if (fc.backend) o.backend = *fc.backend;
  if (fc.batch) {
    bc.batch_packets = ro.policy.max_packets = *fc.batch;
    o.batch_given = true;
  }
  if (fc.threads) bc.threads = *fc.threads;
  if (fc.schedule)
    bc.schedule = *fc.schedule == "on" ? BackendConfig::Schedule::on
                  : *fc.schedule == "off" ? BackendConfig::Schedule::off : BackendConfig::Schedule::automatic;
  if (fc.slice)
    bc.slice = *fc.slice == "on" ? BackendConfig::Slice::on
               : *fc.slice == "off" ? BackendConfig::Slice::off : BackendConfig::Slice::automatic;
  if (fc.gather_sms) bc.gather_sms = *fc.gather_sms;
  if (fc.cuda_device) bc.device = *fc.cuda_device;
  if (fc.gpus) o.gpus = *fc.gpus;
  if (fc.shards) o.shards = *fc.shards;
  if (fc.flow_timeouts) bc.flow.timeouts = *fc.flow_timeouts;
  if (fc.vlan_in_key) bc.flow.vlan_in_key = *fc.vlan_in_key;
  if (fc.urgent) bc.stream.urgent = *fc.urgent;
  if (fc.defrag) {
    ro.defrag = *fc.defrag;
    bc.flow.defrag = fc.defrag->enabled;
  }
  if (fc.urgent_oob_limit) bc.stream.urgent_oob_limit = *fc.urgent_oob_limit;
  if (fc.exception_policy) o.exception_policy = *fc.exception_policy;
  if (fc.flow_memcap_policy) o.memcap_policy = *fc.flow_memcap_policy;
  o.modules.insert(o.modules.end(), fc.modules.begin(), fc.modules.end());
  bc.class_orders.insert(bc.class_orders.end(), fc.classes.begin(), fc.classes.end());
  o.config_vars = fc.vars;
  if (fc.eve_payload) o.eve_payload = *fc.eve_payload;
  if (fc.eve_anomaly_decode) o.eve_anomaly = *fc.eve_anomaly_decode;
  if (fc.eve_anomaly_applayer) o.eve_anomaly_applayer = *fc.eve_anomaly_applayer;
  if (fc.eve_packet) o.eve_packet = *fc.eve_packet;
  if (fc.eve_verdict) o.eve_verdict = *fc.eve_verdict;
  if (fc.eve_tagged_packets) o.eve_tagged_packets = *fc.eve_tagged_packets;
  if (!fc.eve_xff.empty()) o.eve_xff = fc.eve_xff;
  if (fc.eve_ethernet) o.eve_ethernet = *fc.eve_ethernet;
  if (fc.eve_metadata) o.eve_metadata = *fc.eve_metadata;
  if (fc.eve_ipv6_compress) o.eve_ipv6_compress = *fc.eve_ipv6_compress;
  o.eve_alert_metadata = fc.eve_alert_metadata;
  if (fc.packet_alert_max) o.packet_alert_max = *fc.packet_alert_max;
  if (fc.http_request_body_limit) o.app_layer.http.request_body_limit = *fc.http_request_body_limit;
  if (fc.http_response_body_limit) o.app_layer.http.response_body_limit = *fc.http_response_body_limit;
  if (fc.http_decompress_layer_limit) o.app_layer.http.decompress_layer_limit = *fc.http_decompress_layer_limit;
  if (fc.http_lzma_enabled) o.app_layer.http.lzma_enabled = *fc.http_lzma_enabled;
  if (fc.http_request_inspect_min) o.app_layer.http.request_inspect_min = *fc.http_request_inspect_min;
  if (fc.http_request_inspect_window) o.app_layer.http.request_inspect_window = *fc.http_request_inspect_window;
  if (fc.http_response_inspect_min) o.app_layer.http.response_inspect_min = *fc.http_response_inspect_min;
  if (fc.http_response_inspect_window) o.app_layer.http.response_inspect_window = *fc.http_response_inspect_window;
  if (fc.http_body_inline) o.http_body_inline = *fc.http_body_inline;
  if (fc.http_lzma_memlimit) o.app_layer.http.lzma_memlimit = *fc.http_lzma_memlimit;
  if (fc.file_hashes) o.app_layer.file_hashes = *fc.file_hashes;
  if (fc.ftp_max_tx) o.app_layer.ftp_max_txs = *fc.ftp_max_tx;
  if (fc.ssh_hassh) o.app_layer.ssh_hassh_log = *fc.ssh_hassh;
  if (fc.dns_udp_ports) o.app_layer.dns_udp_ports = *fc.dns_udp_ports;
  if (fc.dns_tcp_ports) o.app_layer.dns_tcp_ports = *fc.dns_tcp_ports;
  if (fc.sip_udp_ports) o.app_layer.sip_udp_ports = *fc.sip_udp_ports;
  if (fc.mail_md5_log) o.app_layer.mail_md5_log = *fc.mail_md5_log;
}

int parse_command_line(int argc, char** argv, Options& o) {
  // The settings the options write, by the names the handlers below use.
  std::string &input = o.input, &stats_json = o.stats_json, &decode_out = o.decode_out, &eve_dir = o.eve_dir,
              &dump_dir = o.dump_dir, &backend_name = o.backend, &write_path = o.write_path,
              &dump_packets = o.dump_packets;
  std::vector<std::pair<std::string, ModuleOptions>>& module_specs = o.modules;
  BackendConfig& bc = o.backend_config;
  RunOptions& ro = o.run;
  bool &quiet = o.quiet, &eve_drops = o.eve_drops;
  int& progress = o.progress;
  // Modules in command-line order: (name, options); --rules adds to the one firewall.
  auto firewall_spec = [&]() -> ModuleOptions& {
    for (auto& m : module_specs)
      if (m.first == "firewall") return m.second;
    module_specs.push_back({"firewall", {}});
    return module_specs.back().second;
  };
  // --set KEY=VALUE (Suricata's): collected first, applied to the configuration file's tree.
  std::vector<std::string> sets;
  bool has_config_file = false, sets_applied = false;
  bool exclusive_rules = false;  // -S given
  // Reads the configuration (path, or none: the --set values alone) with the --set values applied
  // to its tree; false after printing why it cannot be read.
  auto apply_config = [&](const std::string& path) -> bool {
    sets_applied = true;
    try {
      const FileConfig fc = load_config(path, sets);
      apply_file_config(fc, o);
      for (const std::string& w : fc.warnings) std::fprintf(stderr, "gaspp: %s\n", w.c_str());
      if (!fc.ignored.empty()) {
        std::string list;
        for (const auto& k : fc.ignored) list += (list.empty() ? "" : ", ") + k;
        std::fprintf(stderr, "gaspp: configuration: ignoring sections gaspp does not use: %s\n", list.c_str());
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gaspp: %s\n", e.what());
      return false;
    }
    return true;
  };
  // The command line (CLI11). Options are read in the order given and applied in that order: -c
  // applies a configuration where it stands (later flags override it), -S drops the rule files
  // given before it, modules run in the order given. Each option a user may repeat takes every
  // occurrence; one that makes sense once (-r) is an error when repeated.
  CLI::App app{"gaspp -r FILE [options] processes a capture file (pcap or pcapng): decode, flow tracking, TCP\n"
               "reassembly and modules, on the GPU or the CPU (docs/usage.md). gaspp gen -o FILE [options] writes\n"
               "a synthetic capture (gaspp gen --help).",
               "gaspp"};
  app.get_formatter()->column_width(34);
  using Handler = std::function<bool(const std::string&)>;  // false: stop with exit 1 (it said why)
  std::vector<std::pair<CLI::Option*, Handler>> handlers;
  int early_exit = -1;  // --version
  auto opt = [&](const char* names, const char* type, const char* help, const char* group, Handler h) {
    CLI::Option* o = app.add_option(names)->description(help)->type_name(type)->group(group)->multi_option_policy(
        CLI::MultiOptionPolicy::TakeAll);
    handlers.push_back({o, std::move(h)});
    return o;
  };
  auto flag = [&](const char* names, const char* help, const char* group, std::function<void()> f) {
    CLI::Option* o = app.add_flag(names)->description(help)->group(group)->multi_option_policy(
        CLI::MultiOptionPolicy::TakeAll);
    handlers.push_back({o, [f](const std::string&) { f(); return true; }});
    return o;
  };
  auto fail = [](const std::string& msg) {
    std::fprintf(stderr, "gaspp: %s\n", msg.c_str());
    return false;
  };
  auto on_off = [&](const char* name, bool& out) {
    return [&out, name, fail](const std::string& v) {
      if (v != "on" && v != "off") return fail(std::string(name) + ": on or off, not '" + v + "'");
      out = v == "on";
      return true;
    };
  };
  // on|off|auto into one of BackendConfig's switches (Schedule, Slice).
  auto on_off_auto = [&](const char* name, auto& out) {
    return [&out, name, fail](const std::string& v) {
      using E = std::remove_reference_t<decltype(out)>;
      if (v == "on") out = E::on;
      else if (v == "off") out = E::off;
      else if (v == "auto") out = E::automatic;
      else return fail(std::string(name) + ": on, off or auto, not '" + v + "'");
      return true;
    };
  };
  const char* kRun = "Processing";
  const char* kFlows = "Flow tracking";
  const char* kStreams = "TCP reassembly (docs/streams.md)";
  const char* kMods = "Modules (docs/writing-a-module.md; they run in the order given)";
  app.add_option("-r", input, "the capture to process (pcap or pcapng; a directory: its captures in name order; -: standard input)")->type_name("FILE")->group(kRun);
  std::vector<std::string> inline_pair;
  app.add_option("-i", o.ifaces,
                 "capture live from this network interface (Linux AF_PACKET, TPACKET_V3 ring) until SIGINT or SIGTERM; "
                 "repeatable")
      ->type_name("IFACE")->group(kRun);
  opt("--inline", "A:B",
      "inline IPS: capture A and B; what passes goes out of the other interface, what is dropped does not "
      "(Suricata's af-packet copy-mode ips)", kRun, [&](const std::string& v) {
        const size_t colon = v.find(':');
        if (colon == std::string::npos || colon == 0 || colon + 1 == v.size() || v.substr(0, colon) == v.substr(colon + 1))
          return fail("--inline: two different interfaces as A:B, not '" + v + "'");
        inline_pair = {v.substr(0, colon), v.substr(colon + 1)};
        return true;
      });
  opt("--inline-fail", "open|closed",
      "inline IPS on overload: closed (default) inspects every packet and loses what the ring cannot hold; "
      "open forwards packets uninspected while the pipeline is more than --inline-fail-after behind",
      kRun, [&](const std::string& v) {
        if (v != "open" && v != "closed") return fail("--inline-fail: open or closed, not '" + v + "'");
        o.inline_fail_open = v == "open";
        return true;
      });
  opt("--inline-fail-after", "MS",
      "--inline-fail open: how far behind the pipeline must be (a packet's capture time to now) for its "
      "packets to go out uninspected (default 100)",
      kRun, [&](const std::string& v) {
        o.inline_fail_after_ms = uint32_t(parse_bounded("--inline-fail-after", v.c_str(), 0, 3600000));
        return true;
      });
  opt("--af-packet-block-size", "BYTES", "-i: ring block size, a power of two (default 1 MiB; suricata.yaml af-packet block-size)",
      kRun, [&](const std::string& v) {
        o.live.block_size = uint32_t(parse_bounded("--af-packet-block-size", v.c_str(), 4096, 1u << 30));
        return true;
      });
  opt("--af-packet-blocks", "N", "-i: blocks in the ring (default 128)", kRun, [&](const std::string& v) {
    o.live.block_count = uint32_t(parse_bounded("--af-packet-blocks", v.c_str(), 1, 1u << 20));
    return true;
  });
  opt("--af-packet-block-timeout", "MS",
      "-i: a block not yet full goes to the batcher after this many milliseconds (default 10; af-packet block-timeout)",
      kRun, [&](const std::string& v) {
        o.live.block_timeout_ms = uint32_t(parse_bounded("--af-packet-block-timeout", v.c_str(), 1, 60000));
        return true;
      });
  opt("--af-packet-version", "2|3",
      "-i: TPACKET_V3 (blocks of frames, the default: a busy link) or TPACKET_V2 (a slot per frame, read as soon as "
      "it arrives: a quiet link's latency, an IPS; af-packet tpacket-v3: no)",
      kRun, [&](const std::string& v) {
        if (v != "2" && v != "3") return fail("--af-packet-version: 2 or 3, not '" + v + "'");
        o.live.version = v == "2" ? 2 : 3;
        return true;
      });
  opt("--af-packet-snaplen", "BYTES", "-i: bytes kept of each frame, the rest cut as tcpdump -s does (default 262144)",
      kRun, [&](const std::string& v) {
        o.live.snaplen = uint32_t(parse_bounded("--af-packet-snaplen", v.c_str(), 64, 262144));
        return true;
      });
  opt("--af-packet-rings", "N",
      "-i: N sockets on each interface in one PACKET_FANOUT group (--af-packet-cluster's type, default cluster_flow), "
      "so the kernel spreads the traffic over N rings by flow (default 1)", kRun, [&](const std::string& v) {
        o.rings = uint32_t(parse_bounded("--af-packet-rings", v.c_str(), 1, 64));
        return true;
      });
  opt("--af-packet-readers", "ring|one",
      "-i: a reader thread for each ring, which walks it and hands records to the batcher (ring, the default; "
      "Suricata's af-packet capture threads), or the batcher's own thread reads every ring (one)",
      kRun, [&](const std::string& v) {
        if (v != "ring" && v != "one") return fail("--af-packet-readers: ring or one, not '" + v + "'");
        o.reader_threads = v == "ring";
        return true;
      });
  opt("--af-packet-cluster", "ID[:TYPE]",
      "-i: join PACKET_FANOUT group ID, sharing the interface with the other sockets of the group by "
      "cluster_flow (default), cluster_cpu or cluster_qm", kRun, [&](const std::string& v) {
        const size_t colon = v.find(':');
        o.live.fanout_group = int(parse_bounded("--af-packet-cluster", v.substr(0, colon).c_str(), 0, 65535));
        if (colon != std::string::npos) o.live.cluster_type = v.substr(colon + 1);
        if (o.live.cluster_type != "cluster_flow" && o.live.cluster_type != "cluster_cpu" && o.live.cluster_type != "cluster_qm")
          return fail("--af-packet-cluster: cluster_flow, cluster_cpu or cluster_qm, not '" + o.live.cluster_type + "'");
        return true;
      });
  // A BPF filter as tcpdump takes it: -f EXPR, or the words after the options.
  std::string adaptive_flag;  // --batch-adaptive as given ("": the default for the input)
  int64_t linger_us = 0;      // --batch-linger-us
  std::string filter_flag;
  std::vector<std::string> filter_words;
  app.add_option("-f", filter_flag, "BPF filter (tcpdump syntax): only the packets it accepts are processed")
      ->type_name("EXPR")
      ->group(kRun);
  app.add_option("filter", filter_words, "BPF filter expression, as tcpdump's trailing words (or -f)")
      ->type_name("EXPR")
      ->group(kRun);
  opt("--backend", "auto|cuda|cpu", "where packets are processed (auto: CUDA if a device is present)", kRun,
      [&](const std::string& v) { backend_name = v; return true; });
  opt("--batch", "N", "packets per batch (default 65536 on CUDA, 8192 on the CPU)", kRun, [&](const std::string& v) {
    const uint64_t n = parse_u64("--batch", v.c_str());
    if (n < 1 || n > (1u << 24)) return fail("--batch must be 1..16777216");
    bc.batch_packets = ro.policy.max_packets = uint32_t(n);
    o.batch_given = true;
    return true;
  });
  opt("--batch-bytes", "B", "record bytes per batch (default 67108864)", kRun, [&](const std::string& v) {
    const uint64_t n = parse_u64("--batch-bytes", v.c_str());
    if (n < kMaxRecordBytes + kRecordHeaderBytes || n > (1ull << 32) - 1)
      return fail("--batch-bytes must be " + std::to_string(kMaxRecordBytes + kRecordHeaderBytes) +
                  "..4294967295 (one largest record must fit)");
    bc.batch_bytes = ro.policy.max_bytes = n;
    return true;
  });
  opt("--batch-timeout-ms", "T",
      "close a batch when its oldest packet is T ms (capture time) older than the newest (default 1000; 0 = never)", kRun,
      [&](const std::string& v) {
        ro.policy.timeout_ns = parse_bounded("--batch-timeout-ms", v.c_str(), 0, 86'400'000) * 1000000ull;
        return true;
      });
  opt("--batch-adaptive", "on|off",
      "live traffic: batches close at a size that doubles under load and halves when the link is quiet, "
      "between --batch-min and --batch (default on with -i and --inline, off for files)", kRun,
      [&](const std::string& v) {
        if (v != "on" && v != "off") return fail("--batch-adaptive: on or off, not '" + v + "'");
        adaptive_flag = v;
        return true;
      });
  opt("--batch-linger-us", "US",
      "live traffic: how long an open batch waits for the next packet once the ring has none ready, before it "
      "goes out as it is (default 0: at once; under load the ring always has more)", kRun,
      [&](const std::string& v) {
        linger_us = int64_t(parse_bounded("--batch-linger-us", v.c_str(), 0, 10'000'000));
        return true;
      });
  opt("--batch-min", "N", "the adaptive batch size's smallest value (default 256)", kRun, [&](const std::string& v) {
    ro.policy.adaptive_min_packets = uint32_t(parse_bounded("--batch-min", v.c_str(), 1, 1u << 24));
    return true;
  });
  opt("--threads", "N", "CPU backend threads (default: all hardware threads)", kRun, [&](const std::string& v) {
    bc.threads = int(parse_bounded("--threads", v.c_str(), 0, 1024));
    return true;
  });
  opt("--index-threads", "N", "threads indexing capture records ahead (default: all; 1 = serial)", kRun,
      [&](const std::string& v) {
        ro.file.index_threads = int(parse_bounded("--index-threads", v.c_str(), 0, 1024));
        return true;
      });
  opt("--stats-json", "PATH", "write the summary as JSON", kRun, [&](const std::string& v) { stats_json = v; return true; });
  opt("--decode-out", "PATH", "write one tab-separated row of decoded fields per packet", kRun,
      [&](const std::string& v) { decode_out = v; return true; });
  flag("--progress", "progress on stderr (default: when stderr is a terminal)", kRun, [&] { progress = 1; });
  opt("--stats-interval", "SECONDS",
      "write an EVE stats event every SECONDS of wall time during the run (totals so far; Suricata's stats "
      "interval), and with -i a line of rates on stderr", kRun, [&](const std::string& v) {
        ro.stats_interval_ns = parse_bounded("--stats-interval", v.c_str(), 1, 86400) * 1000000000ull;
        return true;
      });
  flag("--no-progress", "no progress on stderr", kRun, [&] { progress = 0; });
  opt("--compact-below", "F", "CUDA: compact batches whose occupancy is below F (default 0.333)", kRun,
      [&](const std::string& v) {
        bc.compact_below = parse_double("--compact-below", v.c_str(), 0, 1.01);
        return true;
      });
  flag("--force-compact", "CUDA: always compact batches before the copy", kRun, [&] { bc.force_compact = true; });
  flag("-q", "no summary on stdout", kRun, [&] { quiet = true; });
  flag("--version", "print the version and exit", kRun, [&] { early_exit = 0; });
  opt("-l", "DIR", "write EVE JSON events (flow records, alerts, stats) to DIR/eve.json", kFlows,
      [&](const std::string& v) { eve_dir = v; return true; });
  opt("--flow-capacity", "N", "most flows held at once (default 1048576); memory is fixed", kFlows,
      [&](const std::string& v) {
        const uint64_t n = parse_u64("--flow-capacity", v.c_str());
        if (n < 1 || n > (1ull << 28)) return fail("--flow-capacity must be 1..268435456");
        bc.flow.capacity = uint32_t(n);
        return true;
      });
  opt("--midstream", "on|off", "pick up TCP sessions without a handshake (default on)", kFlows,
      on_off("--midstream", bc.flow.midstream));
  opt("--flow-vlan", "on|off", "VLAN ids are part of the flow key (default on)", kFlows,
      on_off("--flow-vlan", bc.flow.vlan_in_key));
  opt("--flow-sweep-ms", "T", "expiry sweep period in packet time (default 1000)", kFlows, [&](const std::string& v) {
    bc.flow.sweep_interval_ns = parse_bounded("--flow-sweep-ms", v.c_str(), 1, 86'400'000) * 1000000ull;
    return true;
  });
  flag("--no-flows", "decode only, no flow tracking (and no reassembly)", kFlows, [&] { bc.flow.enabled = false; });
  opt("--dump-streams", "DIR",
      "write each TCP direction's reassembled bytes to a file in DIR (tcpflow names) and gaps, conflicts and ends "
      "to DIR/index.tsv", kStreams, [&](const std::string& v) { dump_dir = v; return true; });
  opt("--overlap", "first|last", "which copy of a byte wins when copies differ (default first)", kStreams,
      [&](const std::string& v) {
        if (v != "first" && v != "last") return fail("--overlap: first or last, not '" + v + "'");
        bc.stream.overlap = v == "first" ? OverlapPolicy::first : OverlapPolicy::last;
        return true;
      });
  auto held = [&](const char* name, uint32_t& out) {
    return [&out, name, fail](const std::string& v) {
      const uint64_t n = parse_u64(name, v.c_str());
      if (n < 1 || n > 0x7fffffffull) return fail(std::string(name) + " must be 1..2147483647");
      out = uint32_t(n);
      return true;
    };
  };
  opt("--ooo-segments", "N", "out-of-order buffer: segments held (default 65536, whatever --batch)", kStreams,
      held("--ooo-segments", bc.stream.held_segments));
  opt("--ooo-bytes", "B", "out-of-order buffer: bytes per pool, two pools (default 67108864)", kStreams,
      held("--ooo-bytes", bc.stream.held_bytes));
  opt("--flow-ooo-segments", "N", "per direction: skip the hole when more waits (default 256)", kStreams,
      held("--flow-ooo-segments", bc.stream.flow_held_segments));
  opt("--flow-ooo-bytes", "B", "per direction: skip the hole when more waits (default 1048576)", kStreams,
      held("--flow-ooo-bytes", bc.stream.flow_held_bytes));
  flag("--no-reassembly", "track flows without reassembling TCP", kStreams, [&] { bc.stream.enabled = false; });
  opt("-k", "none|all",
      "checksum validation (default none): with all, bad IPv4/TCP/UDP/ICMP checksums are counted and bad TCP "
      "segments kept out of sessions and streams (dropped in firewall mode, reason stream error)", kStreams,
      [&](const std::string& v) {
        // Suricata's -k: checksum validation, none (the default for capture files) or all.
        if (v != "none" && v != "all") return fail("-k: none or all, not '" + v + "'");
        bc.validate_checksums = v == "all";
        return true;
      });
  opt("-c,--config", "FILE",
      "YAML configuration: modules, their options and order, classes, variables, flow timeouts, schedule "
      "(docs/usage.md); later flags override it; a suricata.yaml is read for vars, flow-timeouts, defrag and "
      "stream settings", kMods, [&](const std::string& v) { return apply_config(v); });
  CLI::Option* set_opt = opt("--set", "KEY=VALUE", "set a configuration value, e.g. flow-timeouts.tcp.established=3600",
                             kMods, [&](const std::string&) {
                               // Applied with -c when there is one; otherwise the first --set reads a
                               // configuration made of the --set values alone.
                               return has_config_file || sets_applied || apply_config(std::string());
                             });
  auto rules = [&](const char* which) {
    return [&, which](const std::string& v) {
      // -s adds a rule file, as Suricata's; -S uses only the rule files given with it, dropping
      // those of the configuration and earlier flags.
      const std::string a = which;
      ModuleOptions& fw = firewall_spec();
      std::string& files = fw[a == "--firewall-rules" ? "firewall-rules" : "rules"];
      if (a == "-S" && !exclusive_rules) {
        files.clear();
        exclusive_rules = true;
      }
      files += (files.empty() ? "" : ",") + v;
      return true;
    };
  };
  opt("--rules,-s", "FILE", "detection rules (Suricata syntax, docs/rules.md): headers to the firewall, payload rules to the signature engine; repeat for more files", kMods,
      rules("--rules"));
  opt("-S", "FILE", "only these rule files: the configuration's and earlier ones are dropped", kMods, rules("-S"));
  opt("--firewall-rules", "FILE", "firewall-mode rules (accept:hook ..., default drop; docs/rules.md)", kMods,
      rules("--firewall-rules"));
  // Suricata reads a capture as an IDS unless told --simulate-ips; gaspp always applies drops (a
  // dropped packet is left out of -w and the flow's later packets are not inspected), so the flag
  // is accepted for Suricata's command lines and changes nothing.
  flag("--simulate-ips", "accepted as Suricata's: gaspp always processes a capture as an IPS (drop rules drop)", kMods,
       [] {});
  flag("--eve-drops", "an EVE `drop` event for every dropped packet (with -l)", kMods, [&] { eve_drops = true; });
  flag("--eve-anomaly", "an EVE `anomaly` event (type decode) for every decoder event a packet raised (with -l)", kMods,
       [&] { o.eve_anomaly = true; });
  flag("--eve-anomaly-applayer",
       "an EVE `anomaly` event (type applayer) for every application-layer event a transaction raised (with -l and the "
       "application layer on)",
       kMods, [&] { o.eve_anomaly_applayer = true; });
  flag("--eve-payload", "alerts carry payload (base64), payload_printable and stream, as Suricata's eve-log payload options",
       kMods, [&] { o.eve_payload = true; });
  flag("--eve-packet", "alerts carry the packet (base64) and packet_info.linktype, as Suricata's eve-log packet option",
       kMods, [&] { o.eve_packet = true; });
  flag("--eve-tagged-packets", "an EVE `packet` event for every packet a `tag` keyword tagged after its alert, as Suricata's eve-log tagged-packets option",
       kMods, [&] { o.eve_tagged_packets = true; });
  flag("--eve-verdict", "alerts carry the packet's final verdict (verdict.action: alert, drop or pass), as Suricata's",
       kMods, [&] { o.eve_verdict = true; });
  flag("--eve-ethernet", "alerts, drop and anomaly events carry the frame's MAC addresses (ether.src_mac, ether.dest_mac), as Suricata's eve-log ethernet option",
       kMods, [&] { o.eve_ethernet = true; });
  flag("--eve-ipv6-compress", "IPv6 addresses in EVE in RFC 5952's compressed form (2001:db8::1), as Suricata's eve-log ipv6-compress option",
       kMods, [&] { o.eve_ipv6_compress = true; });
  flag("--app-layer", "run the application layer (HTTP/1, TLS, DNS) even without rules that need it, and write EVE http, tls and dns events and flows' app_proto (with -l)",
       kMods, [&] { o.app_layer_on = true; });
  opt("--force-hash", "LIST",
      "hashes of each extracted file (a mail's attachments) in its EVE fileinfo event: md5, sha1, sha256, comma-separated, as Suricata's files.force-hash",
      kMods, [&](const std::string& v) {
        o.app_layer.file_hashes = 0;
        size_t a = 0;
        while (a <= v.size()) {
          size_t e = v.find(',', a);
          if (e == std::string::npos) e = v.size();
          const uint8_t bit = file_hash_bit(std::string_view(v).substr(a, e - a));
          if (!bit) return fail("--force-hash: md5, sha1 or sha256, not '" + v.substr(a, e - a) + "'");
          o.app_layer.file_hashes |= bit;
          a = e + 1;
        }
        return true;
      });
  flag("--fast-log", "write Suricata's fast.log (one line per alert) beside eve.json (with -l)", kMods,
       [&] { o.fast_log = true; });
  auto var = [&](const char* name, const char* prefix) {
    return [&, name, prefix](const std::string& v) {
      const size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0) return fail(std::string(name) + ": NAME=VALUE, not '" + v + "'");
      firewall_spec()[prefix + v.substr(0, eq)] = v.substr(eq + 1);
      return true;
    };
  };
  opt("--address-var", "NAME=VALUE", "firewall address variable, e.g. HOME_NET=[10.0.0.0/8]", kMods,
      var("--address-var", "address."));
  opt("--port-var", "NAME=VALUE", "firewall port variable, e.g. HTTP_PORTS=[80,8080]", kMods, var("--port-var", "port."));
  opt("--module", "NAME[:K=V,...]", "add a module with options (firewall, detect, pass, probe, stream_match)", kMods,
      [&](const std::string& v) {
        try {
          module_specs.push_back(parse_module_spec(v));
        } catch (const std::exception& e) {
          return fail(std::string("--module: ") + e.what());
        }
        return true;
      });
  opt("--detect-prefilter", "hyperscan|hash|device",
      "the signature engine's prefilter on the CPU backend (default hyperscan; device: the GPU's whole path, run on the CPU)",
      kMods, [&](const std::string& v) {
        if (v != "hyperscan" && v != "hash" && v != "device") return fail("--detect-prefilter: hyperscan, hash or device, not '" + v + "'");
        o.detect_prefilter = v;
        return true;
      });
  opt("-w", "FILE", "write the packets that passed (not dropped) to FILE, in capture order", kMods,
      [&](const std::string& v) { write_path = v; return true; });
  opt("--dump-packets", "FILE", "write the packets modules sent to the dump (to_dump) to FILE", kMods,
      [&](const std::string& v) { dump_packets = v; return true; });
  opt("--class-order", "I,J,...",
      "add a flow class that runs the modules in this order (module numbers from 0, as given); flows are split by "
      "a hash of their 5-tuple", kMods, [&](const std::string& v) {
        std::vector<uint16_t> order;
        size_t at = 0;
        while (at <= v.size()) {
          const size_t comma = std::min(v.find(',', at), v.size());
          order.push_back(uint16_t(parse_bounded("--class-order", v.substr(at, comma - at).c_str(), 0, 255)));
          at = comma + 1;
        }
        bc.class_orders.push_back(order);
        return true;
      });
  opt("--schedule", "on|off|auto", "regroup packets between module stages (auto: off; see docs/usage.md)", kMods,
      on_off_auto("--schedule", bc.schedule));
  opt("--slice", "on|off|auto",
      "CUDA: read batches through the capture's mapping instead of copying them, so only headers cross PCIe "
      "(auto: when nothing reads payload, for batches of packets averaging 144 bytes or more)", kMods,
      on_off_auto("--slice", bc.slice));
  opt("--gather-sms", "N",
      "CUDA slicing: SMs the head gather gets to itself, the other kernels running on the rest (0: the device's "
      "smallest partition, -1: none)", kMods, [&](const std::string& v) {
        char* end = nullptr;
        const long n = std::strtol(v.c_str(), &end, 10);
        if (v.empty() || *end || n < -1 || n > 4096) return fail("--gather-sms: -1, 0 or a number of SMs, not '" + v + "'");
        bc.gather_sms = int(n);
        return true;
      });
  opt("--cuda-device", "N", "CUDA: the device to run on, by ordinal (0: the first; nvidia-smi lists them)", kMods,
      [&](const std::string& v) {
        char* end = nullptr;
        const long n = std::strtol(v.c_str(), &end, 10);
        if (v.empty() || *end || n < 0 || n > 1023) return fail("--cuda-device: a device ordinal, not '" + v + "'");
        bc.device = int(n);
        return true;
      });
  opt("--gpus", "N|all",
      "CUDA: shard the flows over N devices (from --cuda-device on), each with its own flow table; outputs "
      "as with one (docs/multi-gpu.md)", kMods, [&](const std::string& v) {
        if (v == "all") {
          o.gpus = -1;
          return true;
        }
        char* end = nullptr;
        const long n = std::strtol(v.c_str(), &end, 10);
        if (v.empty() || *end || n < 1 || n > 1024) return fail("--gpus: a number of devices or all, not '" + v + "'");
        o.gpus = int(n);
        return true;
      });
  opt("--shards", "N",
      "backends the flows are sharded over (default: one per GPU; on the CPU each gets --threads / N threads; "
      "on CUDA shard k runs on GPU k mod --gpus)", kMods, [&](const std::string& v) {
        char* end = nullptr;
        const long n = std::strtol(v.c_str(), &end, 10);
        if (v.empty() || *end || n < 1 || n > 1024) return fail("--shards: a number of shards (1 or more), not '" + v + "'");
        o.shards = int(n);
        return true;
      });
  flag("--stage-times",
       "Time each stage of every batch and print the means on stderr at the end, with how busy the CPU "
       "backend's threads kept in each, then the host's phases after the backend (application layer, "
       "events) and the pipeline thread's own (reading, waiting, outputs), each with its slowest batch; "
       "also in --stats-json (a diagnostic: it costs a few microseconds a batch)",
       kMods, [&] {
         bc.stage_times = true;
         ro.stage_times = true;
       });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cli_error(app, e, "gaspp");
  }
  // --set values go into the configuration's tree wherever they stand; whether there is a -c decides
  // where they are applied.
  for (const std::string& v : set_opt->results()) sets.push_back(v);
  has_config_file = app.get_option("-c")->count() > 0;
  // The options in command-line order, each occurrence with its own value.
  std::map<const CLI::Option*, size_t> taken;
  for (const CLI::Option* o : app.parse_order()) {
    for (auto& [h_opt, h] : handlers) {
      if (h_opt != o) continue;
      const size_t k = taken[o]++;
      const auto& res = o->results();
      if (!h(k < res.size() ? res[k] : std::string())) return 1;
      break;
    }
    if (early_exit >= 0) {
      std::printf("gaspp 0.1\n");
      return early_exit;
    }
  }
  if (!inline_pair.empty()) {
    if (!o.ifaces.empty()) {
      std::fprintf(stderr, "gaspp: --inline names its two interfaces: no -i with it\n");
      return 1;
    }
    o.ifaces = inline_pair;
    o.inline_ips = true;
    if (o.inline_fail_open) ro.bypass_after_ns = uint64_t(o.inline_fail_after_ms) * 1000000ull;
    o.live.ignore_outgoing = true;  // what gaspp forwards is not captured again
  }
  if (o.inline_fail_open && !o.inline_ips) {
    std::fprintf(stderr, "gaspp: --inline-fail open applies to --inline A:B only\n");
    return 1;
  }
  o.app_layer.http.body_inline = o.http_body_inline == "yes" || (o.http_body_inline == "auto" && o.inline_ips);
  ro.policy.adaptive = adaptive_flag.empty() ? !o.ifaces.empty() : adaptive_flag == "on";
  if (!o.ifaces.empty()) {  // live: batches go out when the ring runs dry; latency is measured
    ro.policy.linger_ns = uint64_t(linger_us) * 1000ull;
    ro.measure_latency = true;
  }
  if (input.empty() && o.ifaces.empty()) {
    std::fputs(app.help().c_str(), stderr);
    return 1;
  }
  if (!input.empty() && !o.ifaces.empty()) {
    std::fprintf(stderr, "gaspp: -r and -i/--inline both given: read a capture or interfaces, not both\n");
    return 1;
  }
  if (!filter_flag.empty() && !filter_words.empty()) {
    std::fprintf(stderr, "gaspp: a filter both with -f and as trailing words: give one\n");
    return 1;
  }
  ro.filter = filter_flag;
  for (const std::string& w : filter_words) ro.filter += (ro.filter.empty() ? "" : " ") + w;
  o.live.filter = ro.filter;  // -i: attached in the kernel
  return -1;
}

}  // namespace gaspp
