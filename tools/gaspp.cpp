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

#include <algorithm>
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
#include "backend/sharded/sharded_backend.hpp"
#include "core/anomaly_event.hpp"
#include "capture/capture_file.hpp"
#include "capture/af_packet_source.hpp"
#include "capture/filtered_source.hpp"
#include "capture/multi_source.hpp"
#include "capture/threaded_source.hpp"
#include "output/inline_forwarder.hpp"
#include "tools/gen/generator.hpp"
#include "core/config.hpp"
#include "core/eve_event.hpp"
#include "pipeline/pipeline.hpp"
#include "output/decode_rows.hpp"
#include "output/eve.hpp"
#include "output/out_file.hpp"
#include "output/pcap_writer.hpp"
#include "output/stream_dump.hpp"
#include "output/summary.hpp"
#include "tools/cli.hpp"
#include "tools/options.hpp"

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

// Module output: EVE lines to the writer when -l is given (otherwise counted only).
class CliModuleOutput final : public ModuleOutput {
 public:
  explicit CliModuleOutput(EveWriter* eve, OutFile* fast = nullptr) : eve_(eve), fast_(fast) {}
  void eve(const std::string& line) override {
    if (eve_) eve_->write_line(line);
  }
  void fast_log(const std::string& line) override {
    if (fast_ && fast_->is_open()) {
      fast_->write(line);
      fast_->write("\n", 1);
    }
  }

 private:
  EveWriter* eve_;
  OutFile* fast_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "gen") == 0) return cmd_gen(argc, argv);
  install_signal_handlers();  // from the start: a signal while the backend starts stops the run before it reads
  Options o;
  if (const int exit_status = parse_command_line(argc, argv, o); exit_status >= 0) return exit_status;
  const std::string &input = o.input, &stats_json = o.stats_json, &decode_out = o.decode_out, &eve_dir = o.eve_dir,
                    &dump_dir = o.dump_dir, &backend_name = o.backend, &write_path = o.write_path,
                    &dump_packets = o.dump_packets;
  std::vector<std::pair<std::string, ModuleOptions>>& module_specs = o.modules;
  BackendConfig& bc = o.backend_config;
  RunOptions& ro = o.run;
  const ModuleOptions& config_vars = o.config_vars;
  const std::string &master_policy = o.exception_policy, &memcap_policy = o.memcap_policy;
  const bool quiet = o.quiet, eve_drops = o.eve_drops;
  const int progress = o.progress;
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

  // The configuration's variables and action order reach every firewall and signature engine,
  // however its rules were given (-c modules, --rules, --firewall-rules, --module); --address-var
  // and --port-var win over them.
  for (auto& [name, opt] : module_specs)
    if (name == "firewall" || name == "detect")
      for (const auto& [k, v] : config_vars) opt.emplace(k, v);

  // Detection rules (--rules, -S, a firewall's `rules`) go to the firewall, which matches headers,
  // and to the signature engine right after it, which takes every rule that needs more.
  for (size_t k = 0; k < module_specs.size(); ++k) {
    if (module_specs[k].first != "firewall" || !module_specs[k].second.count("rules")) continue;
    ModuleOptions& fw = module_specs[k].second;
    if (fw.count("detect")) continue;
    fw["detect"] = "on";
    ModuleOptions det;
    for (const auto& [key, v] : fw)
      if (key == "rules" || key == "classification-file" || key == "action-order" || key == "threshold-file" ||
          key.rfind("iprep-", 0) == 0 || key == "datasets-allow-absolute" || key.rfind("address.", 0) == 0 ||
          key.rfind("port.", 0) == 0)
        det[key] = v;
    det["firewall"] = "on";
    det["auto"] = "on";
    module_specs.insert(module_specs.begin() + std::ptrdiff_t(k) + 1, {"detect", det});
    ++k;
  }
  for (auto& [name, opt] : module_specs) {
    if (name == "detect" && !o.detect_prefilter.empty()) opt["prefilter"] = o.detect_prefilter;
    if ((name == "detect" || name == "firewall") && o.eve_payload) opt["payload"] = "on";
    if ((name == "detect" || name == "firewall") && o.eve_packet) opt["packet"] = "on";
    if ((name == "detect" || name == "firewall") && o.eve_verdict) opt["verdict"] = "on";
    if (name == "detect" && o.eve_tagged_packets) opt["tagged-packets"] = "on";
    if (name == "detect")
      for (const auto& [k, v] : o.eve_xff) opt.emplace(k, v);
    if ((name == "detect" || name == "firewall") && o.eve_ethernet) opt["ethernet"] = "on";
    if (name == "detect" && !o.eve_metadata) opt["flow-vars"] = "off";
    if (name == "detect" || name == "firewall")
      for (const auto& [k, v] : o.eve_alert_metadata) opt.emplace(k, v);
    if (name == "detect" && o.packet_alert_max && !opt.count("packet-alert-max"))
      opt["packet-alert-max"] = std::to_string(o.packet_alert_max);
  }
  if (o.fast_log && eve_dir.empty()) {
    std::fprintf(stderr, "gaspp: --fast-log needs -l DIR\n");
    return 1;
  }
  ModuleSet modules;
  try {
    for (auto& [name, opt] : module_specs) {
      // The signature engine added for --rules is left out when every rule went to the firewall
      // (no signature: it has no hook to run).
      const bool added = name == "detect" && opt.erase("auto");
      std::unique_ptr<ModuleInstance> m = make_module(name, opt);
      if (added && m->layers() == 0) continue;
      modules.add(std::move(m));
    }
    modules.set_drop_events(eve_drops, bc.flow.vlan_in_key, bc.flow.defrag, o.eve_ethernet);
    set_eve_ipv6_compress(o.eve_ipv6_compress);  // before any event is written
    // The application layer runs for HTTP rules or --app-layer; with -l its transactions are EVE
    // http events.
    modules.set_app_layer_config(o.app_layer, o.app_layer_on, bc.threads);
    modules.set_app_log(!eve_dir.empty());
    modules.set_app_anomalies(!eve_dir.empty() && o.eve_anomaly_applayer);
    modules.set_host_times(bc.stage_times);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gaspp: %s\n", e.what());
    return 1;
  }
  if (modules.wants_app_layer()) {
    // Application-layer signatures read transactions: the application layer parses the reassembled
    // streams (HTTP, TLS, DNS over TCP) and the flows' datagrams (DNS over UDP).
    if (!bc.flow.enabled)
      std::fprintf(stderr, "gaspp: warning: the application layer needs flow tracking; without it, it sees nothing\n");
    else if (!bc.stream.enabled)
      std::fprintf(stderr, "gaspp: warning: without reassembly the application layer sees UDP only (HTTP, TLS and DNS over TCP need streams)\n");
    else ro.want_streams = true;
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

  std::string why;
  const bool on_cpu = backend_name == "cpu" || (backend_name == "auto" && !cuda_usable(&why));
  // The CPU's batches are cache-sized: a batch's decoded fields (about 100 bytes a packet) stay in
  // a core's L2 while the flow walk visits them in flow order (engine_config.hpp).
  if (on_cpu && !o.batch_given) bc.batch_packets = ro.policy.max_packets = kCpuBatchPackets;
  // Room for a reassembled datagram beside the fragment that completed it (pipeline.hpp).
  if (ro.defrag.enabled) size_backend_for_defrag(ro.policy, bc.batch_packets, bc.batch_bytes);
  std::unique_ptr<Backend> backend;
  try {
    if (!on_cpu && backend_name != "cuda" && backend_name != "auto") {
      std::fprintf(stderr, "gaspp: --backend: auto, cuda or cpu, not '%s'\n", backend_name.c_str());
      return 1;
    }
    // Several GPUs, or several shards: one backend each, the flows sharded over them
    // (backend/sharded/sharded_backend.hpp).
    int gpus = o.gpus;
    if (on_cpu && gpus != 1) {
      std::fprintf(stderr, "gaspp: --gpus: the CPU backend runs no GPU (--shards N shards it)\n");
      return 1;
    }
    if (!on_cpu && gpus != 1) {  // one GPU: make_cuda_backend says what is wrong with the device
      const int present = cuda_device_count() - bc.device;
      if (gpus == -1) gpus = std::max(present, 1);
      if (present <= 0) {
        std::fprintf(stderr, "gaspp: --gpus: no CUDA device from device %d on\n", bc.device);
        return 1;
      }
      if (gpus > present) {
        std::fprintf(stderr, "gaspp: --gpus %d: only %d CUDA device(s) from device %d on\n", gpus, present, bc.device);
        return 1;
      }
    }
    const int shards = o.shards > 0 ? o.shards : on_cpu ? 1 : gpus;
    if (shards == 1) {
      backend = on_cpu ? make_cpu_backend(bc) : make_cuda_backend(bc);
    } else {
      std::vector<std::unique_ptr<Backend>> parts;
      for (int k = 0; k < shards; ++k) {
        const BackendConfig sc = shard_config(bc, k, shards, !on_cpu, gpus);
        parts.push_back(on_cpu ? make_cpu_backend(sc) : make_cuda_backend(sc));
      }
      backend = make_sharded_backend(std::move(parts), bc, bc.threads);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gaspp: cannot start the %s backend: %s\n", backend_name.c_str(), e.what());
    return 1;
  }

  // The memory reserved (batch buffers, flow table) is fixed from here on; say how much up front.
  if (!quiet) std::fprintf(stderr, "gaspp: %s\n", backend->describe().c_str());
  OutFile rows, fast;
  std::unique_ptr<EveWriter> eve;
  try {
    if (!decode_out.empty()) {
      rows = OutFile(decode_out, "w");
      rows.write(std::string(decode_rows_header()));
    }
    if (!eve_dir.empty()) {
      eve = std::make_unique<EveWriter>(eve_dir);
      if (modules.wants_app_layer()) {
        eve->set_app_proto_lookup([&modules](uint64_t id) { return modules.app_proto_of(id); });
        eve->set_app_proto_orig_lookup([&modules](uint64_t id) { return modules.app_proto_orig_of(id); });
      }
      if (!modules.empty() && o.eve_metadata)
        eve->set_flow_vars_lookup([&modules](uint64_t id) { return modules.flow_eve_json(id); });
      eve->set_late_decision_lookup([&modules](uint64_t id) -> uint8_t {
        const uint8_t decided = modules.late_dropped(id) ? kFlowDecidedDrop : modules.late_passed(id) ? kFlowDecidedPass : 0;
        return uint8_t(decided | (modules.late_alerted(id) ? kFlowAlerted : 0));
      });
    }
    if (o.fast_log) fast = OutFile(eve_dir + "/fast.log", "w");
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
  bool unreadable_inputs = false;  // -r DIR: a file in it that is not a capture
  CliModuleOutput mod_out(eve.get(), &fast);
  ro.stop = &g_stop;
  try {
    // -r DIR: every regular file in it, by name, one after the other with one flow state (as
    // Suricata's pcap-file mode reads a directory). A file that is not a capture is reported and
    // left out; the run then ends with exit status 2, as for a damaged capture.
    std::vector<CaptureFile> caps;
    std::unique_ptr<Source> live;
    std::unique_ptr<InlineForwarder> forwarder;
    if (!o.ifaces.empty()) {
      std::vector<std::unique_ptr<Source>> rings;
      if (o.inline_ips) forwarder = std::make_unique<InlineForwarder>(o.ifaces, o.rings);  // before saying it captures
      for (size_t k = 0; k < o.ifaces.size(); ++k) {
        AfPacketOptions one = o.live;
        one.iface = o.ifaces[k];
        // Several rings on an interface share it through a fanout group; a group spans one device,
        // so each interface gets its own: --af-packet-cluster's id (or one from the pid) plus k.
        if (o.rings > 1 || one.fanout_group >= 0) {
          const uint32_t base = one.fanout_group >= 0 ? uint32_t(one.fanout_group) : uint32_t(getpid()) * 8;
          one.fanout_group = int((base + k) & 0xffff);
        }
        for (uint32_t n = 0; n < o.rings; ++n) {
          auto ring = std::make_unique<AfPacketSource>(one);
          if (o.reader_threads) rings.push_back(std::make_unique<ThreadedSource>(std::move(ring)));
          else rings.push_back(std::move(ring));
        }
        std::fprintf(stderr, "gaspp: capturing on %s (AF_PACKET, %u ring%s of %u blocks of %u bytes, %s%s%s)\n",
                     one.iface.c_str(), o.rings, o.rings > 1 ? "s" : "", one.block_count, one.block_size,
                     o.reader_threads ? (o.rings > 1 ? "a reader thread each" : "a reader thread") : "read by the batcher",
                     ro.filter.empty() ? "" : ", filter ", ro.filter.c_str());
      }
      if (rings.size() == 1) live = std::move(rings.front());
      else live = std::make_unique<MultiSource>(std::move(rings));
    } else if (std::filesystem::is_directory(input)) {
      std::vector<std::string> names;
      for (const auto& e : std::filesystem::directory_iterator(input))
        if (e.is_regular_file()) names.push_back(e.path().string());
      std::sort(names.begin(), names.end());
      for (const std::string& n : names) {
        try {
          caps.push_back(CaptureFile::open(n));
        } catch (const CaptureError& e) {
          std::fprintf(stderr, "gaspp: %s (left out)\n", e.what());
          unreadable_inputs = true;
        }
      }
      if (caps.empty()) {
        std::fprintf(stderr, "gaspp: %s: no capture file in the directory\n", input.c_str());
        return 1;
      }
    } else {
      caps.push_back(CaptureFile::open(input));
    }
    for (const CaptureFile& c : caps) {
      if (!ro.filter.empty()) {
        const std::string why = check_filter(ro.filter, c.link());
        if (!why.empty()) {
          std::fprintf(stderr, "gaspp: filter '%s' on %s: %s\n", ro.filter.c_str(), c.path().c_str(), why.c_str());
          return 1;
        }
      }
      if ((!write_path.empty() || !dump_packets.empty()) && c.raw_link_type() != caps.front().raw_link_type()) {
        std::fprintf(stderr, "gaspp: %s and %s have different link types: their packets cannot go to one -w / --dump-packets file\n",
                     caps.front().path().c_str(), c.path().c_str());
        return 1;
      }
    }
    std::vector<const CaptureFile*> cap_list;
    for (const CaptureFile& c : caps) cap_list.push_back(&c);
    const auto pcap_writer = [&](const std::string& path) {
      if (live) return std::make_unique<PcapWriter>(path, AfPacketSource::kFormat, o.live.snaplen, 1u);  // Ethernet
      return std::make_unique<PcapWriter>(path, caps.front());
    };
    std::unique_ptr<PcapWriter> passed, dumped;
    if (!write_path.empty()) passed = pcap_writer(write_path);
    if (!dump_packets.empty()) dumped = pcap_writer(dump_packets);
    std::string line;
    DecodedPacket p;
    const auto run = [&](auto&&... callbacks) {
      if (live) return run_source(*live, *backend, ro, callbacks...);
      return run_captures(cap_list, *backend, ro, callbacks...);
    };
    uint64_t stats_packets = 0;
    double stats_seconds = 0;
    ro.on_stats = [&](const RunReport& now) {
      if (eve) eve->write_stats(now, modules.empty() ? nlohmann::ordered_json::object() : modules.verdict_stats_json());
      if (!live) return;
      const uint64_t pk = now.totals.v[c_packets];
      const double dt = now.seconds - stats_seconds;
      std::fprintf(stderr, "gaspp: %.0f s: %llu packets (%.0f pps), %llu dropped by the kernel\n", now.seconds,
                   (unsigned long long)pk, dt > 0 ? double(pk - stats_packets) / dt : 0.0,
                   (unsigned long long)now.kernel_drops);
      stats_packets = pk;
      stats_seconds = now.seconds;
    };
    if (forwarder && o.inline_fail_open)
      ro.on_bypass = [&](const std::vector<SourceRecord>& recs) { forwarder->forward_uninspected(recs); };
    rep = run([&](const PacketBatch& b) {
      if (!modules.empty() || modules.wants_app_layer()) modules.finish_batch(b, mod_out);
      if (o.eve_anomaly && eve) write_decode_anomalies(b, ro.defrag.enabled, [&](const std::string& j) { mod_out.eve(j); }, o.eve_ethernet);
      if (forwarder) {
        forwarder->forward(b);
        forwarder->reject(b, modules.rejects());  // the answers to what reject rules dropped
      }
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
    }, [&](const std::vector<StreamChunk>& chunks, std::span<const uint8_t> bytes) {
      if (dump) dump->write(chunks, bytes);
    }, [&](const StreamFlushModules& m, const std::vector<FlowRecordOut>& flows) {
      if (!modules.empty() || modules.wants_app_layer())
        modules.finish_flush(m.events, m.module_counts, flows, mod_out, m.chunks, m.stream_bytes);
    });
    if (forwarder)
      std::fprintf(stderr,
                   "gaspp: inline %s:%s: %llu packets forwarded (%llu of them uninspected: overload, fail-open), "
                   "%llu dropped, %llu lost to send errors; %llu rejects answered, %llu could not be\n",
                   o.ifaces[0].c_str(), o.ifaces[1].c_str(), (unsigned long long)forwarder->forwarded(),
                   (unsigned long long)forwarder->bypassed(), (unsigned long long)forwarder->dropped(),
                   (unsigned long long)forwarder->send_errors(), (unsigned long long)forwarder->rejects_sent(),
                   (unsigned long long)forwarder->rejects_unanswerable());
    if (eve) {
      eve->write_stats(rep, modules.empty() ? nlohmann::ordered_json::object() : modules.verdict_stats_json());
      eve->close();
    }
    if (passed) passed->close();
    if (dumped) dumped->close();
    if (dump) dump->close();
    rows.close();
    fast.close();
  } catch (const OutputError& e) {
    std::fprintf(stderr, "gaspp: %s\n", e.what());
    return 3;
  } catch (const CaptureError& e) {
    std::fprintf(stderr, "gaspp: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gaspp: %s: %s\n", input.empty() ? o.ifaces.front().c_str() : input.c_str(), e.what());
    return 1;
  }
  for (const auto& is : rep.issues) std::fprintf(stderr, "gaspp: %s: %s\n", is.fatal ? "error" : "warning", is.message.c_str());
  if (rep.suppressed_issues)
    std::fprintf(stderr, "gaspp: %llu more warnings not shown\n", (unsigned long long)rep.suppressed_issues);
  std::vector<StageTime> stages = backend->stage_times();
  stages.insert(stages.end(), rep.stage_times.begin(), rep.stage_times.end());
  for (const StageTime& st : stages) {
    std::fprintf(stderr, "gaspp: stage %-46s %9.1f us a batch, slowest %9.1f us, %llu batches", st.name.c_str(),
                 st.mean_us(), st.max_us, (unsigned long long)st.batches);
    if (st.threads) std::fprintf(stderr, ", threads %3.0f%% busy", 100.0 * st.busy_share());
    std::fprintf(stderr, "\n");
  }
  for (const ModuleSet::HostTime& h : modules.host_times())
    std::fprintf(stderr, "gaspp: host  %-46s %9.1f us a batch, slowest %9.1f us, %llu batches\n", h.name,
                 h.batches ? double(h.ns) / 1e3 / double(h.batches) : 0.0, double(h.max_ns) / 1e3,
                 (unsigned long long)h.batches);
  try {
    if (!quiet) {
      print_summary(stdout, rep);
      if (!modules.empty() || modules.wants_app_layer()) std::fputs(modules.summary_text().c_str(), stdout);
      flush_stdout_checked();
    }
    if (!stats_json.empty()) {
      nlohmann::ordered_json js = summary_json(rep);
      if (!modules.empty() || modules.wants_app_layer()) js["modules"] = modules.summary_json();
      for (const StageTime& st : stages) {  // --stage-times
        nlohmann::ordered_json t = {{"stage", st.name},
                                    {"batches", st.batches},
                                    {"mean_us", st.mean_us()},
                                    {"max_us", st.max_us}};
        if (st.threads) t["threads_busy"] = st.busy_share();
        js["stage_times"].push_back(t);
      }
      for (const ModuleSet::HostTime& h : modules.host_times())
        js["stage_times"].push_back({{"stage", std::string("host: ") + h.name},
                                     {"batches", h.batches},
                                     {"mean_us", h.batches ? double(h.ns) / 1e3 / double(h.batches) : 0.0},
                                     {"max_us", double(h.max_ns) / 1e3}});
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
  return rep.damaged || unreadable_inputs ? 2 : 0;
}
