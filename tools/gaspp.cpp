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
//         [--class-order I,J,...]... [--schedule on|off|auto] [--slice on|off|auto] [--gather-sms N] [--cuda-device N] [--stage-times] [-c CONFIG.yaml]
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
#include <functional>
#include <map>
#include <stdexcept>
#include <string>

#include <CLI/CLI.hpp>

#include "backend/backend.hpp"
#include "capture/capture_file.hpp"
#include "tools/gen/generator.hpp"
#include "core/config.hpp"
#include "pipeline/pipeline.hpp"
#include "output/decode_rows.hpp"
#include "output/eve.hpp"
#include "output/out_file.hpp"
#include "output/pcap_writer.hpp"
#include "output/stream_dump.hpp"
#include "output/summary.hpp"
#include "tools/cli.hpp"

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
      if (fc.cuda_device) bc.device = *fc.cuda_device;
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
  app.add_option("-r", input, "the capture to process (pcap or pcapng)")->type_name("FILE")->group(kRun);
  opt("--backend", "auto|cuda|cpu", "where packets are processed (auto: CUDA if a device is present)", kRun,
      [&](const std::string& v) { backend_name = v; return true; });
  opt("--batch", "N", "packets per batch (default 65536)", kRun, [&](const std::string& v) {
    const uint64_t n = parse_u64("--batch", v.c_str());
    if (n < 1 || n > (1u << 24)) return fail("--batch must be 1..16777216");
    bc.batch_packets = ro.policy.max_packets = uint32_t(n);
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
  opt("--rules,-s", "FILE", "firewall rules (Suricata syntax, docs/rules.md); repeat for more files", kMods,
      rules("--rules"));
  opt("-S", "FILE", "only these rule files: the configuration's and earlier ones are dropped", kMods, rules("-S"));
  opt("--firewall-rules", "FILE", "firewall-mode rules (accept:hook ..., default drop; docs/rules.md)", kMods,
      rules("--firewall-rules"));
  flag("--eve-drops", "an EVE `drop` event for every dropped packet (with -l)", kMods, [&] { eve_drops = true; });
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
  opt("--module", "NAME[:K=V,...]", "add a module with options (firewall, pass, probe, stream_match)", kMods,
      [&](const std::string& v) {
        try {
          module_specs.push_back(parse_module_spec(v));
        } catch (const std::exception& e) {
          return fail(std::string("--module: ") + e.what());
        }
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
  flag("--stage-times",
       "CUDA: time each stage of every batch and print the means on stderr at the end (a diagnostic: it costs a "
       "few microseconds a batch)", kMods, [&] { bc.stage_times = true; });
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
  if (input.empty()) {
    std::fputs(app.help().c_str(), stderr);
    return 1;
  }
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
