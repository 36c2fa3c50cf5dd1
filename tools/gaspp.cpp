// tools/gaspp.cpp — the gaspp command line.
//
//   gaspp -r trace.pcap [--backend auto|cuda|cpu] [--batch N] [--batch-bytes B]
//         [--batch-timeout-ms T] [--threads N] [--index-threads N] [--stats-json PATH] [--decode-out PATH]
//         [--progress|--no-progress] [--compact-below F] [--force-compact] [-q]
//         [-l DIR] [--flow-capacity N] [--midstream on|off] [--no-flows] [--flow-sweep-ms T]
//         [--flow-vlan on|off] [--dump-streams DIR] [--overlap first|last] [--no-reassembly]
//         [--ooo-segments N] [--ooo-bytes B] [--flow-ooo-segments N] [--flow-ooo-bytes B]
//         [--rules FILE]... [--firewall-rules FILE]... [--eve-drops] [--address-var NAME=VALUE] [--port-var NAME=VALUE]
//         [--module NAME[:KEY=VALUE,...]]... [-w FILE] [--dump-packets FILE]
//         [--class-order I,J,...]... [--schedule on|off|auto] [--slice on|off|auto] [--gather-sms N] [--stage-times] [-c CONFIG.yaml]
//   gaspp gen -o out.pcap [--mode fixed|mix|http] [--size N] [--packets N] [--flows N] [--seed S]
//         [--reorder R] [--duplicate R] [--loss R] [--ipv6 R] [--vlan R] [--plant STR --plant-rate R]
//
// Exit status: 0 the capture was read to its end; 1 usage error, or the capture could not be
// opened at all; 2 the capture is damaged: packets up to the damage were processed and reported,
// and the message names the record and byte offset where reading stopped; 3 an output could not
// be written (the message names it); 130 / 143 stopped by SIGINT / SIGTERM: what was read is
// finished and every output written and closed. A second signal exits at once.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "backend/backend.hpp"
#include "capture/capture_file.hpp"
#include "capture/generator.hpp"
#include "core/config.hpp"
#include "core/pipeline.hpp"
#include "output/decode_rows.hpp"
#include "output/eve.hpp"
#include "output/out_file.hpp"
#include "output/pcap_writer.hpp"
#include "output/stream_dump.hpp"
#include "output/summary.hpp"

using namespace gaspp;

namespace {

// SIGINT / SIGTERM: the first asks the run to stop (pipeline.hpp: RunOptions::stop) so that
// everything read is finished and written; a second one exits at once.
// Lock-free atomics: signals may reach any thread, two at once.
std::atomic<bool> g_stop{false};
std::atomic<int> g_signal{0};

void on_signal(int sig) {
  int none = 0;
  if (!g_signal.compare_exchange_strong(none, sig)) _exit(128 + sig);
  g_stop.store(true);
  static const char msg[] = "gaspp: stopping: finishing what was read and writing the outputs (again to quit at once)\n";
  (void)!write(2, msg, sizeof msg - 1);
}

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

// An output that is the input (also through a link or another name) would destroy the capture
// while it is read: refused before anything is opened. Also refuses two outputs on one file.
bool outputs_clash(const std::string& input, const std::vector<std::pair<std::string, std::string>>& outputs) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const auto& [opt, path] = outputs[i];
    if (path.empty()) continue;
    if (fs::exists(path, ec) && fs::equivalent(path, input, ec)) {
      std::fprintf(stderr, "gaspp: %s %s: that is the input capture; refusing to overwrite it\n", opt.c_str(), path.c_str());
      return true;
    }
    for (size_t j = 0; j < i; ++j) {
      const auto& [o2, p2] = outputs[j];
      if (p2.empty()) continue;
      const bool same = fs::exists(path, ec) && fs::exists(p2, ec) ? fs::equivalent(path, p2, ec)
                                                                    : fs::weakly_canonical(path, ec) == fs::weakly_canonical(p2, ec);
      if (same) {
        std::fprintf(stderr, "gaspp: %s and %s both write %s\n", o2.c_str(), opt.c_str(), path.c_str());
        return true;
      }
    }
  }
  return false;
}

[[noreturn]] void usage(int rc) {
  std::FILE* o = rc ? stderr : stdout;
  std::fprintf(o,
               "usage: gaspp -r FILE [options]      process a capture file (pcap or pcapng)\n"
               "       gaspp gen -o FILE [options]  write a synthetic capture\n"
               "\n"
               "processing options:\n"
               "  --backend auto|cuda|cpu   where packets are processed (auto: CUDA if a device is present)\n"
               "  --batch N                 packets per batch (default 65536)\n"
               "  --batch-bytes B           record bytes per batch (default 67108864)\n"
               "  --batch-timeout-ms T      close a batch when its oldest packet is T ms (capture time)\n"
               "                            older than the newest (default 1000; 0 = never)\n"
               "  --threads N               CPU backend threads (default: all hardware threads)\n"
               "  --index-threads N         threads indexing capture records ahead (default: all; 1 = serial)\n"
               "  --stats-json PATH         write the summary as JSON\n"
               "  --decode-out PATH         write one tab-separated row of decoded fields per packet\n"
               "  --progress, --no-progress progress on stderr (default: when stderr is a terminal)\n"
               "  --compact-below F         CUDA: compact batches whose occupancy is below F (default 0.333)\n"
               "  --force-compact           CUDA: always compact batches before the copy\n"
               "  -q                        no summary on stdout\n"
               "\n"
               "flow tracking:\n"
               "  -l DIR                    write EVE JSON events (flow records) to DIR/eve.json\n"
               "  --flow-capacity N         most flows held at once (default 1048576); memory is fixed\n"
               "  --midstream on|off        pick up TCP sessions without a handshake (default on)\n"
               "  --flow-vlan on|off        VLAN ids are part of the flow key (default on)\n"
               "  --flow-sweep-ms T         expiry sweep period in packet time (default 1000)\n"
               "  --no-flows                decode only, no flow tracking (and no reassembly)\n"
               "\n"
               "TCP reassembly (docs/streams.md):\n"
               "  --dump-streams DIR        write each TCP direction's reassembled bytes to a file in DIR\n"
               "                            (tcpflow names) and gaps, conflicts and ends to DIR/index.tsv\n"
               "  --overlap first|last      which copy of a byte wins when copies differ (default first)\n"
               "  --ooo-segments N          out-of-order buffer: segments held (default 65536, whatever --batch)\n"
               "  --ooo-bytes B             out-of-order buffer: bytes per pool, two pools (default 67108864)\n"
               "  --flow-ooo-segments N     per direction: skip the hole when more waits (default 256)\n"
               "  --flow-ooo-bytes B        per direction: skip the hole when more waits (default 1048576)\n"
               "  --no-reassembly           track flows without reassembling TCP\n"
               "  -k none|all               checksum validation (default none): with all, bad IPv4/TCP/UDP/ICMP\n"
               "                            checksums are counted and bad TCP segments kept out of sessions and\n"
               "                            streams (dropped in firewall mode, reason stream error)\n"
               "\n"
               "modules (docs/writing-a-module.md; they run in the order given):\n"
               "  -c FILE                   YAML configuration: modules, their options and order, classes,\n"
               "                            variables, flow timeouts, schedule (docs/usage.md); later flags\n"
               "                            override it; a suricata.yaml is read for vars and flow-timeouts\n"
               "  --set KEY=VALUE           set a configuration value, e.g. flow-timeouts.tcp.established=3600\n"
               "  --rules FILE, -s FILE     firewall rules (Suricata syntax, docs/rules.md); repeat for more files\n"
               "  -S FILE                   only these rule files: the configuration's and earlier ones are dropped\n"
               "  --firewall-rules FILE     firewall-mode rules (accept:hook ..., default drop; docs/rules.md)\n"
               "  --eve-drops               an EVE `drop` event for every dropped packet (with -l)\n"
               "  --address-var NAME=VALUE  firewall address variable, e.g. HOME_NET=[10.0.0.0/8]\n"
               "  --port-var NAME=VALUE     firewall port variable, e.g. HTTP_PORTS=[80,8080]\n"
               "  --module NAME[:K=V,...]   add a module with options (firewall, pass, probe, stream_match)\n"
               "  -w FILE                   write the packets that passed (not dropped) to FILE, in capture order\n"
               "  --dump-packets FILE       write the packets modules sent to the dump (to_dump) to FILE\n"
               "  --class-order I,J,...     add a flow class that runs the modules in this order (module numbers\n"
               "                            from 0, as given); flows are split by a hash of their 5-tuple\n"
               "  --schedule on|off|auto    regroup packets between module stages (auto: off; see docs/usage.md)\n"
               "  --slice on|off|auto       CUDA: read batches through the capture's mapping instead of copying them,\n"
               "                            so only headers cross PCIe (auto: when nothing reads payload: no\n"
               "                            payload or stream module, --no-reassembly or --no-flows; batches of\n"
               "                            packets averaging 144 bytes or more)\n"
               "  --gather-sms N            CUDA slicing: SMs the head gather gets to itself, the other kernels\n"
               "                            running on the rest (0: the device's smallest partition, -1: none)\n"
               "  --stage-times             CUDA: time each stage of every batch and print the means on stderr\n"
               "                            at the end (a diagnostic: it costs a few microseconds a batch)\n"
               "\n"
               "generator options (gaspp gen):\n"
               "  -o FILE  --mode fixed|mix|http  --size N  --packets N  --flows N  --seed S\n"
               "  --reorder R  --duplicate R  --loss R  --ipv6 R  --vlan R  --plant STRING  --plant-rate R\n");
  std::exit(rc);
}

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

// Module output: EVE lines to the writer when -l is given (otherwise counted only).
class CliModuleOutput final : public ModuleOutput {
 public:
  explicit CliModuleOutput(EveWriter* eve) : eve_(eve) {}
  void eve(const std::string& line) override {
    if (eve_) eve_->write_line(line);
  }

 private:
  EveWriter* eve_;
};

int cmd_gen(int argc, char** argv) {
  GenConfig g;
  std::string out;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto val = [&]() -> const char* {
      if (i + 1 >= argc) { std::fprintf(stderr, "gaspp gen: %s needs a value\n", a.c_str()); std::exit(1); }
      return argv[++i];
    };
    if (a == "-o") out = val();
    else if (a == "--mode") {
      const std::string m = val();
      if (m == "fixed") g.mode = GenMode::fixed;
      else if (m == "mix") g.mode = GenMode::mix;
      else if (m == "http") g.mode = GenMode::http;
      else { std::fprintf(stderr, "gaspp gen: --mode: fixed, mix or http, not '%s'\n", m.c_str()); return 1; }
    } else if (a == "--size") { g.size = uint32_t(parse_bounded("--size", val(), 60, 1514)); g.mode = GenMode::fixed; }
    else if (a == "--packets") g.packets = parse_bounded("--packets", val(), 1, 1ull << 40);
    else if (a == "--flows") g.flows = uint32_t(parse_bounded("--flows", val(), 1, 1u << 24));
    else if (a == "--seed") g.seed = parse_u64("--seed", val());
    else if (a == "--reorder") g.reorder = parse_double("--reorder", val(), 0, 1);
    else if (a == "--duplicate") g.duplicate = parse_double("--duplicate", val(), 0, 1);
    else if (a == "--loss") g.loss = parse_double("--loss", val(), 0, 1);
    else if (a == "--ipv6") g.ipv6_share = parse_double("--ipv6", val(), 0, 1);
    else if (a == "--vlan") g.vlan_share = parse_double("--vlan", val(), 0, 1);
    else if (a == "--plant") g.plant = val();
    else if (a == "--plant-rate") g.plant_rate = parse_double("--plant-rate", val(), 0, 1);
    else if (a == "-h" || a == "--help") usage(0);
    else { std::fprintf(stderr, "gaspp gen: unknown option '%s'\n", a.c_str()); return 1; }
  }
  if (out.empty()) { std::fprintf(stderr, "gaspp gen: -o FILE is required\n"); return 1; }
  try {
    const uint64_t n = generate_pcap(g, out);
    std::fprintf(stderr, "gaspp gen: wrote %llu packets to %s\n", (unsigned long long)n, out.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gaspp gen: %s\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "gen") == 0) return cmd_gen(argc, argv);
  install_signal_handlers();  // from the start: a signal while the backend starts stops the run before it reads
  std::string input, stats_json, decode_out, eve_dir, dump_dir, backend_name = "auto", write_path, dump_packets;
  // Modules in command-line order: (name, options); --rules adds to the one firewall.
  std::vector<std::pair<std::string, ModuleOptions>> module_specs;
  auto firewall_spec = [&]() -> ModuleOptions& {
    for (auto& m : module_specs)
      if (m.first == "firewall") return m.second;
    module_specs.push_back({"firewall", {}});
    return module_specs.back().second;
  };
  BackendConfig bc;
  RunOptions ro;
  // --set KEY=VALUE (Suricata's): collected first, applied to the configuration file's tree.
  std::vector<std::string> sets;
  bool has_config_file = false, sets_applied = false;
  for (int i = 1; i + 1 < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--set") sets.push_back(argv[++i]);
    else if (a == "-c" || a == "--config") has_config_file = true;
  }
  ModuleOptions config_vars;  // the configuration's vars: every firewall gets them (flags override)
  std::string master_policy, memcap_policy;  // exception-policy and flow.memcap-policy from the configuration
  bool quiet = false;
  bool eve_drops = false;
  bool exclusive_rules = false;  // -S given
  int progress = -1;
  // Reads the configuration (path, or none: the --set values alone) with the --set values applied
  // to its tree; false after printing why it cannot be read.
  auto apply_config = [&](const std::string& path) -> bool {
    sets_applied = true;
    try {
      const FileConfig fc = load_config(path, sets);
      if (fc.backend) backend_name = *fc.backend;
      if (fc.batch) bc.batch_packets = ro.policy.max_packets = *fc.batch;
      if (fc.threads) bc.threads = *fc.threads;
      if (fc.schedule)
        bc.schedule = *fc.schedule == "on" ? BackendConfig::Schedule::on
                      : *fc.schedule == "off" ? BackendConfig::Schedule::off : BackendConfig::Schedule::automatic;
      if (fc.slice)
        bc.slice = *fc.slice == "on" ? BackendConfig::Slice::on
                   : *fc.slice == "off" ? BackendConfig::Slice::off : BackendConfig::Slice::automatic;
      if (fc.gather_sms) bc.gather_sms = *fc.gather_sms;
      if (fc.flow_timeouts) bc.flow.timeouts = *fc.flow_timeouts;
      if (fc.urgent) bc.stream.urgent = *fc.urgent;
      if (fc.defrag) {
        ro.defrag = *fc.defrag;
        bc.flow.defrag = fc.defrag->enabled;
      }
      if (fc.urgent_oob_limit) bc.stream.urgent_oob_limit = *fc.urgent_oob_limit;
      if (fc.exception_policy) master_policy = *fc.exception_policy;
      if (fc.flow_memcap_policy) memcap_policy = *fc.flow_memcap_policy;
      module_specs.insert(module_specs.end(), fc.modules.begin(), fc.modules.end());
      bc.class_orders.insert(bc.class_orders.end(), fc.classes.begin(), fc.classes.end());
      config_vars = fc.vars;
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
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto val = [&]() -> const char* {
      if (i + 1 >= argc) { std::fprintf(stderr, "gaspp: %s needs a value\n", a.c_str()); std::exit(1); }
      return argv[++i];
    };
    if (a == "-r") input = val();
    else if (a == "-c" || a == "--config") {
      if (!apply_config(val())) return 1;
    } else if (a == "--set") {
      // Applied with -c when there is one; otherwise the first --set reads a configuration made
      // of the --set values alone.
      (void)val();
      if (!has_config_file && !sets_applied && !apply_config(std::string())) return 1;
    }
    else if (a == "--backend") backend_name = val();
    else if (a == "--batch") {
      const uint64_t n = parse_u64("--batch", val());
      if (n < 1 || n > (1u << 24)) { std::fprintf(stderr, "gaspp: --batch must be 1..16777216\n"); return 1; }
      bc.batch_packets = ro.policy.max_packets = uint32_t(n);
    } else if (a == "--batch-bytes") {
      const uint64_t n = parse_u64("--batch-bytes", val());
      if (n < kMaxRecordBytes + kRecordHeaderBytes || n > (1ull << 32) - 1) {
        std::fprintf(stderr, "gaspp: --batch-bytes must be %llu..4294967295 (one largest record must fit)\n",
                     (unsigned long long)(kMaxRecordBytes + kRecordHeaderBytes));
        return 1;
      }
      bc.batch_bytes = ro.policy.max_bytes = n;
    } else if (a == "--batch-timeout-ms") ro.policy.timeout_ns = parse_bounded("--batch-timeout-ms", val(), 0, 86'400'000) * 1000000ull;
    else if (a == "--threads") bc.threads = int(parse_bounded("--threads", val(), 0, 1024));
    else if (a == "--index-threads") ro.index_threads = int(parse_bounded("--index-threads", val(), 0, 1024));
    else if (a == "--stats-json") stats_json = val();
    else if (a == "--decode-out") decode_out = val();
    else if (a == "--progress") progress = 1;
    else if (a == "--no-progress") progress = 0;
    else if (a == "--compact-below") bc.compact_below = parse_double("--compact-below", val(), 0, 1.01);
    else if (a == "--force-compact") bc.force_compact = true;
    else if (a == "-q") quiet = true;
    else if (a == "-l") eve_dir = val();
    else if (a == "--flow-capacity") {
      const uint64_t n = parse_u64("--flow-capacity", val());
      if (n < 1 || n > (1ull << 28)) { std::fprintf(stderr, "gaspp: --flow-capacity must be 1..268435456\n"); return 1; }
      bc.flow.capacity = uint32_t(n);
    } else if (a == "--midstream" || a == "--flow-vlan") {
      const std::string v = val();
      if (v != "on" && v != "off") { std::fprintf(stderr, "gaspp: %s: on or off, not '%s'\n", a.c_str(), v.c_str()); return 1; }
      (a == "--midstream" ? bc.flow.midstream : bc.flow.vlan_in_key) = v == "on";
    } else if (a == "--flow-sweep-ms") bc.flow.sweep_interval_ns = parse_bounded("--flow-sweep-ms", val(), 1, 86'400'000) * 1000000ull;
    else if (a == "--no-flows") bc.flow.enabled = false;
    else if (a == "--dump-streams") dump_dir = val();
    else if (a == "--overlap") {
      const std::string v = val();
      if (v != "first" && v != "last") { std::fprintf(stderr, "gaspp: --overlap: first or last, not '%s'\n", v.c_str()); return 1; }
      bc.stream.overlap = v == "first" ? OverlapPolicy::first : OverlapPolicy::last;
    } else if (a == "--ooo-segments" || a == "--ooo-bytes" || a == "--flow-ooo-segments" || a == "--flow-ooo-bytes") {
      const uint64_t n = parse_u64(a.c_str(), val());
      if (n < 1 || n > 0x7fffffffull) { std::fprintf(stderr, "gaspp: %s must be 1..2147483647\n", a.c_str()); return 1; }
      (a == "--ooo-segments" ? bc.stream.held_segments : a == "--ooo-bytes" ? bc.stream.held_bytes
       : a == "--flow-ooo-segments" ? bc.stream.flow_held_segments : bc.stream.flow_held_bytes) = uint32_t(n);
    } else if (a == "--no-reassembly") bc.stream.enabled = false;
    else if (a == "-k") {
      // Suricata's -k: checksum validation, none (the default for capture files) or all.
      const std::string v = val();
      if (v != "none" && v != "all") { std::fprintf(stderr, "gaspp: -k: none or all, not '%s'\n", v.c_str()); return 1; }
      bc.validate_checksums = v == "all";
    }
    else if (a == "--rules" || a == "-s" || a == "-S" || a == "--firewall-rules") {
      // -s adds a rule file, as Suricata's; -S uses only the rule files given with it, dropping
      // those of the configuration and earlier flags.
      ModuleOptions& fw = firewall_spec();
      std::string& files = fw[a == "--firewall-rules" ? "firewall-rules" : "rules"];
      if (a == "-S" && !exclusive_rules) {
        files.clear();
        exclusive_rules = true;
      }
      files += (files.empty() ? "" : ",") + std::string(val());
    } else if (a == "--eve-drops") {
      eve_drops = true;
    } else if (a == "--address-var" || a == "--port-var") {
      const std::string v = val();
      const size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0) { std::fprintf(stderr, "gaspp: %s: NAME=VALUE, not '%s'\n", a.c_str(), v.c_str()); return 1; }
      firewall_spec()[(a == "--address-var" ? "address." : "port.") + v.substr(0, eq)] = v.substr(eq + 1);
    } else if (a == "--module") {
      try {
        module_specs.push_back(parse_module_spec(val()));
      } catch (const std::exception& e) {
        std::fprintf(stderr, "gaspp: --module: %s\n", e.what());
        return 1;
      }
    } else if (a == "--class-order") {
      std::vector<uint16_t> order;
      const std::string v = val();
      size_t at = 0;
      while (at <= v.size()) {
        const size_t comma = std::min(v.find(',', at), v.size());
        order.push_back(uint16_t(parse_bounded("--class-order", v.substr(at, comma - at).c_str(), 0, 255)));
        at = comma + 1;
      }
      bc.class_orders.push_back(order);
    } else if (a == "--schedule") {
      const std::string v = val();
      if (v == "on") bc.schedule = BackendConfig::Schedule::on;
      else if (v == "off") bc.schedule = BackendConfig::Schedule::off;
      else if (v == "auto") bc.schedule = BackendConfig::Schedule::automatic;
      else { std::fprintf(stderr, "gaspp: --schedule: on, off or auto, not '%s'\n", v.c_str()); return 1; }
    } else if (a == "--slice") {
      const std::string v = val();
      if (v == "on") bc.slice = BackendConfig::Slice::on;
      else if (v == "off") bc.slice = BackendConfig::Slice::off;
      else if (v == "auto") bc.slice = BackendConfig::Slice::automatic;
      else { std::fprintf(stderr, "gaspp: --slice: on, off or auto, not '%s'\n", v.c_str()); return 1; }
    } else if (a == "--gather-sms") {
      const std::string v = val();
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end || n < -1 || n > 4096) {
        std::fprintf(stderr, "gaspp: --gather-sms: -1, 0 or a number of SMs, not '%s'\n", v.c_str());
        return 1;
      }
      bc.gather_sms = int(n);
    } else if (a == "--stage-times") {
      bc.stage_times = true;
    } else if (a == "-w") write_path = val();
    else if (a == "--dump-packets") dump_packets = val();
    else if (a == "-h" || a == "--help") usage(0);
    else if (a == "--version") { std::printf("gaspp 0.1\n"); return 0; }
    else { std::fprintf(stderr, "gaspp: unknown option '%s' (see --help)\n", a.c_str()); return 1; }
  }
  if (input.empty()) usage(1);
  if (outputs_clash(input, {{"-w", write_path},
                            {"--dump-packets", dump_packets},
                            {"--stats-json", stats_json},
                            {"--decode-out", decode_out},
                            {"-l", eve_dir.empty() ? std::string() : eve_dir + "/eve.json"}}))
    return 1;
  ro.progress = progress < 0 ? isatty(2) : progress == 1;
  ro.want_decoded = !decode_out.empty();
  ro.want_streams = !dump_dir.empty();
  if (ro.want_streams && (!bc.flow.enabled || !bc.stream.enabled)) {
    std::fprintf(stderr, "gaspp: --dump-streams needs flow tracking and reassembly (drop --no-flows / --no-reassembly)\n");
    return 1;
  }

  // The configuration's variables reach every firewall, however its rules were given (-c modules,
  // --rules, --firewall-rules, --module); --address-var and --port-var win over them.
  for (auto& [name, opt] : module_specs)
    if (name == "firewall")
      for (const auto& [k, v] : config_vars) opt.emplace(k, v);

  ModuleSet modules;
  try {
    for (auto& [name, opt] : module_specs) modules.add(make_module(name, opt));
    modules.set_drop_events(eve_drops, bc.flow.vlan_in_key, bc.flow.defrag);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gaspp: %s\n", e.what());
    return 1;
  }
  bc.drop_invalid = modules.firewall_mode();
  // Packets the flow table has no room for (Suricata's flow.memcap-policy, else its exception-policy
  // master switch, whose drop values Suricata ignores in IDS mode): auto, the default, drops them in
  // IPS (firewall) mode and lets them through otherwise; drop-flow, reject and rejectboth drop the
  // packet (there is no flow to drop, and offline nothing to reject); pass-*, bypass and ignore
  // let them through untracked.
  {
    std::string policy = memcap_policy;
    if (policy.empty() && !(!bc.drop_invalid && (master_policy == "drop-packet" || master_policy == "drop-flow")))
      policy = master_policy;
    if (policy.empty()) policy = "auto";
    bc.untracked_drop = policy == "auto" ? bc.drop_invalid
                        : policy == "drop-packet" || policy == "drop-flow" || policy == "reject" || policy == "rejectboth";
  }
  modules.set_urgent_drop(bc.drop_invalid && (bc.stream.urgent == UrgentPolicy::drop ||
                                              (bc.stream.urgent == UrgentPolicy::oob && bc.stream.urgent_oob_limit == UrgentPolicy::drop)));
  bc.modules = modules.pointers();
  bc.flow.module_state_bytes = modules.flow_state_bytes();
  try {
    (void)flat_class_orders(bc);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gaspp: --class-order: %s\n", e.what());
    return 1;
  }

  // Room for a reassembled datagram beside the fragment that completed it (pipeline.hpp).
  if (ro.defrag.enabled) size_backend_for_defrag(ro.policy, bc.batch_packets, bc.batch_bytes);
  std::unique_ptr<Backend> backend;
  try {
    std::string why;
    if (backend_name == "cpu" || (backend_name == "auto" && !cuda_usable(&why))) backend = make_cpu_backend(bc);
    else if (backend_name == "cuda" || backend_name == "auto") backend = make_cuda_backend(bc);
    else { std::fprintf(stderr, "gaspp: --backend: auto, cuda or cpu, not '%s'\n", backend_name.c_str()); return 1; }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gaspp: cannot start the %s backend: %s\n", backend_name.c_str(), e.what());
    return 1;
  }

  // The memory reserved (batch buffers, flow table) is fixed from here on; say how much up front.
  if (!quiet) std::fprintf(stderr, "gaspp: %s\n", backend->describe().c_str());
  OutFile rows;
  std::unique_ptr<EveWriter> eve;
  try {
    if (!decode_out.empty()) {
      rows = OutFile(decode_out, "w");
      rows.write(std::string(decode_rows_header()));
    }
    if (!eve_dir.empty()) eve = std::make_unique<EveWriter>(eve_dir);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gaspp: %s\n", e.what());
    return 1;
  }
  std::unique_ptr<StreamDumpWriter> dump;
  if (!dump_dir.empty()) {
    try {
      dump = std::make_unique<StreamDumpWriter>(dump_dir);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gaspp: --dump-streams: %s\n", e.what());
      return 1;
    }
  }
  RunReport rep;
  CliModuleOutput mod_out(eve.get());
  ro.stop = &g_stop;
  try {
    const CaptureFile cap = CaptureFile::open(input);
    std::unique_ptr<PcapWriter> passed, dumped;
    if (!write_path.empty()) passed = std::make_unique<PcapWriter>(write_path, cap);
    if (!dump_packets.empty()) dumped = std::make_unique<PcapWriter>(dump_packets, cap);
    std::string line;
    DecodedPacket p;
    rep = run_capture(cap, *backend, ro, [&](const PacketBatch& b) {
      if (!modules.empty()) modules.finish_batch(b, mod_out);
      if (passed) passed->write(b, 0, kVerdictDrop);
      // to_dump counts unless the packet took its flow's earlier decision (its module output is void).
      if (dumped) dumped->write(b, kVerdictToDump, kVerdictFlowDecided);
      if (!rows.is_open()) return;
      DecodedView v = const_cast<PacketBatch&>(b).decoded.view();
      for (uint32_t i = 0; i < b.count; ++i) {
        if (b.is_reassembled(i)) continue;  // rows are the capture's packets
        line.clear();
        load(v, i, p);
        format_decode_row(b.packet_number(i), p, line);
        rows.write(line);
      }
    }, [&](const std::vector<FlowRecordOut>& recs) {
      if (eve) eve->write_flows(recs);
    }, [&](const std::vector<StreamChunk>& chunks, const std::vector<uint8_t>& bytes) {
      if (dump) dump->write(chunks, bytes);
    }, [&](const StreamFlushModules& m, const std::vector<FlowRecordOut>& flows) {
      if (!modules.empty()) modules.finish_flush(m.events, m.module_counts, flows, mod_out);
    });
    if (eve) {
      eve->write_stats(rep, modules.empty() ? nlohmann::ordered_json::object() : modules.verdict_stats_json());
      eve->close();
    }
    if (passed) passed->close();
    if (dumped) dumped->close();
    if (dump) dump->close();
    rows.close();
  } catch (const OutputError& e) {
    std::fprintf(stderr, "gaspp: %s\n", e.what());
    return 3;
  } catch (const CaptureError& e) {
    std::fprintf(stderr, "gaspp: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gaspp: %s: %s\n", input.c_str(), e.what());
    return 1;
  }
  for (const auto& is : rep.issues) std::fprintf(stderr, "gaspp: %s: %s\n", is.fatal ? "error" : "warning", is.message.c_str());
  if (rep.suppressed_issues)
    std::fprintf(stderr, "gaspp: %llu more warnings not shown\n", (unsigned long long)rep.suppressed_issues);
  for (const StageTime& st : backend->stage_times())
    std::fprintf(stderr, "gaspp: stage %-34s %9.1f us a batch, %llu batches\n", st.name.c_str(), st.mean_us(),
                 (unsigned long long)st.batches);
  try {
    if (!quiet) {
      print_summary(stdout, rep);
      if (!modules.empty()) std::fputs(modules.summary_text().c_str(), stdout);
      flush_stdout_checked();
    }
    if (!stats_json.empty()) {
      nlohmann::ordered_json js = summary_json(rep);
      if (!modules.empty()) js["modules"] = modules.summary_json();
      OutFile j(stats_json, "w");
      j.write(json_text(js) + "\n");
      j.close();
    }
  } catch (const OutputError& e) {
    std::fprintf(stderr, "gaspp: %s\n", e.what());
    return 3;
  }
  if (rep.interrupted) {
    std::fprintf(stderr, "gaspp: stopped by %s after %llu packets; outputs are complete up to there\n",
                 g_signal.load() == SIGTERM ? "SIGTERM" : "SIGINT", (unsigned long long)rep.totals.v[c_packets]);
    return 128 + (g_signal.load() ? g_signal.load() : SIGINT);
  }
  return rep.damaged ? 2 : 0;
}
