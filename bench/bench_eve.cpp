// bench/bench_eve.cpp — EVE flow lines: the streaming writer gaspp ships (eve_flow_json, strings
// appended in order) against the same document built with nlohmann::ordered_json and dumped.
//
// Why it exists: JSON documents in gaspp are built with nlohmann-json, except EVE's per-event lines,
// which are written by hand for speed; this measures whether they are faster, on realistic records:
// the flows of a generated mix capture (TCP, UDP, ICMP; IPv4 and IPv6; VLAN tags) tracked by the
// CPU backend, written again and again. It is also a check: every line of the streaming writer must
// parse and equal the library's document (exit 1 on any difference), so the faster writer is the
// same output.
//
// Prints lines per second of each (median of --reps runs after a warm-up) and writes JSON (--json).
//
// usage: bench_eve [--json PATH] [--reps N] [--packets N] [--lines N] [--tmp DIR]
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "bench_util.hpp"
#include "core/eve_event.hpp"
#include "output/eve.hpp"
#include "pipeline/pipeline.hpp"
#include "tools/gen/generator.hpp"

using namespace gaspp;
using Clock = std::chrono::steady_clock;

namespace {

// The flow event as eve_flow_json writes it, built with the library.
nlohmann::ordered_json flow_doc(const FlowRecordOut& o) {
  const FlowRecord& r = o.rec;
  const FlowKey& k = r.key;
  const int ci = r.client_lo ? 0 : 1;
  const bool v6 = k.family == 6, ports = k.proto == 6 || k.proto == 17 || k.proto == 132;
  nlohmann::ordered_json j;
  j["timestamp"] = eve_timestamp(r.last_ts);
  j["flow_id"] = r.flow_id;
  j["event_type"] = "flow";
  j["src_ip"] = eve_address(k.addr[ci], v6);
  if (ports) j["src_port"] = k.port[ci];
  j["dest_ip"] = eve_address(k.addr[ci ^ 1], v6);
  if (ports) j["dest_port"] = k.port[ci ^ 1];
  j["ip_v"] = v6 ? 6 : 4;  // Suricata 8 writes the IP version of every event
  j["proto"] = flow_proto_name(k.proto);
  if (k.vlan_n) {
    nlohmann::ordered_json v = nlohmann::ordered_json::array();
    for (int t = 0; t < k.vlan_n && t < 3; ++t) v.push_back(k.vlan[t]);
    j["vlan"] = v;
  }
  const FlowSide& c = r.side[0];
  const FlowSide& s = r.side[1];
  if (k.proto == 1 || k.proto == 58) {
    const uint32_t ct = (c.isn & kIcmpSeen) ? c.isn : (uint32_t(k.icmp_type) << 8 | k.icmp_code);
    j["icmp_type"] = (ct >> 8) & 0xff;
    j["icmp_code"] = ct & 0xff;
    if (s.isn & kIcmpSeen) {
      j["response_icmp_type"] = (s.isn >> 8) & 0xff;
      j["response_icmp_code"] = s.isn & 0xff;
    }
  }
  const FlowState st = r.state == uint8_t(FlowState::fresh) ? FlowState::new_ : FlowState(r.state);
  nlohmann::ordered_json f;
  f["pkts_toserver"] = c.pkts;
  f["pkts_toclient"] = s.pkts;
  f["bytes_toserver"] = c.bytes;
  f["bytes_toclient"] = s.bytes;
  f["start"] = eve_timestamp(r.first_ts);
  f["end"] = eve_timestamp(r.last_ts);
  f["age"] = r.last_ts / 1'000'000'000ull - r.first_ts / 1'000'000'000ull;
  f["state"] = flow_state_name(st);
  f["reason"] = flow_reason_name(FlowReason(o.reason));
  f["alerted"] = (r.misc & kFlowAlerted) != 0;
  if (r.misc & kFlowDecidedDrop) f["action"] = "drop";
  else if (r.misc & kFlowDecidedPass) f["action"] = "pass";
  j["flow"] = f;
  if (k.proto == 6) {
    const uint16_t all = c.flags | s.flags;
    auto hex = [](uint16_t v) {
      char b[8];
      std::snprintf(b, sizeof b, "%02x", unsigned(v & 0xff));
      return std::string(b);
    };
    nlohmann::ordered_json t;
    t["tcp_flags"] = hex(all);
    t["tcp_flags_ts"] = hex(c.flags);
    t["tcp_flags_tc"] = hex(s.flags);
    static const char* names[8] = {"fin", "syn", "rst", "psh", "ack", "urg", "ecn", "cwr"};
    for (int b = 0; b < 8; ++b)
      if (all & (1u << b)) t[names[b]] = true;
    t["state"] = (r.misc & kFlowNoSession) ? "none" : tcp_session_name(r);
    if (r.stream[0].flags & kStreamGap) t["ts_gap"] = true;
    if (r.stream[1].flags & kStreamGap) t["tc_gap"] = true;
    j["tcp"] = t;
  }
  return j;
}

}  // namespace

int main(int argc, char** argv) {
  std::string json_path;
  int reps = 5;
  uint64_t packets = 2'000'000, lines = 2'000'000;
  std::string tmp_dir = "/tmp";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--json") json_path = next();
    else if (a == "--reps") reps = std::max(1, std::atoi(next().c_str()));
    else if (a == "--packets") packets = std::strtoull(next().c_str(), nullptr, 10);
    else if (a == "--lines") lines = std::strtoull(next().c_str(), nullptr, 10);
    else if (a == "--tmp") tmp_dir = next();
    else {
      std::fprintf(stderr, "usage: bench_eve [--json PATH] [--reps N] [--packets N] [--lines N] [--tmp DIR]\n");
      return 2;
    }
  }
  // Realistic records: the flows of a generated mix capture, tracked by the CPU backend.
  GenConfig g;
  g.mode = GenMode::mix;
  g.packets = packets;
  g.flows = 100'000;
  g.ipv6_share = 0.2;
  g.vlan_share = 0.2;
  g.seed = 5;
  const std::string path = tmp_dir + "/gaspp-bench-eve.pcap";
  generate_pcap(g, path);
  const CaptureFile cap = CaptureFile::open(path);
  std::remove(path.c_str());  // the mapping stays
  BackendConfig bc;
  auto be = make_cpu_backend(bc);
  std::vector<FlowRecordOut> recs;
  run_capture(cap, *be, RunOptions{}, nullptr,
              [&](const std::vector<FlowRecordOut>& v) { recs.insert(recs.end(), v.begin(), v.end()); });
  if (recs.empty()) {
    std::fprintf(stderr, "bench_eve: no flow records\n");
    return 1;
  }
  // The check: every streaming line parses and equals the library's document.
  uint64_t differ = 0;
  for (const FlowRecordOut& r : recs) {
    const nlohmann::json mine = nlohmann::json::parse(eve_flow_json(r));
    if (mine != nlohmann::json(flow_doc(r))) {
      if (differ++ < 3) std::fprintf(stderr, "differs: %s\n   vs    %s\n", eve_flow_json(r).c_str(), flow_doc(r).dump().c_str());
    }
  }
  // The timing: `lines` lines of each, cycling through the records; the bytes are summed so the
  // work cannot be dropped.
  auto time_writer = [&](auto&& write) {
    std::vector<double> rates;
    for (int rep = 0; rep <= reps; ++rep) {
      uint64_t sum = 0;
      const auto t0 = Clock::now();
      for (uint64_t i = 0; i < lines; ++i) sum += write(recs[i % recs.size()]).size();
      const double s = std::chrono::duration<double>(Clock::now() - t0).count();
      if (sum == 0) std::abort();
      if (rep) rates.push_back(double(lines) / s);
    }
    return bench::median(rates);
  };
  const double streaming = time_writer([](const FlowRecordOut& r) { return eve_flow_json(r); });
  const double library = time_writer([](const FlowRecordOut& r) { return flow_doc(r).dump(); });
  std::printf("EVE flow lines, %zu distinct records (%llu packets of mix), one thread:\n", recs.size(),
              (unsigned long long)packets);
  std::printf("  streaming writer (eve_flow_json)  %8.2f M lines/s\n", streaming / 1e6);
  std::printf("  nlohmann::ordered_json + dump()   %8.2f M lines/s\n", library / 1e6);
  std::printf("  streaming / library               %8.2fx\n", streaming / library);
  std::printf("  lines that differ                 %8llu\n", (unsigned long long)differ);
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "{\"records\":%zu,\"lines\":%llu,\"reps\":%d,\"streaming_lines_per_s\":%.0f,"
                "\"library_lines_per_s\":%.0f,\"speedup\":%.3f,\"differ\":%llu}\n",
                recs.size(), (unsigned long long)lines, reps, streaming, library, streaming / library,
                (unsigned long long)differ);
  if (!bench::write_file(json_path, buf)) return 1;
  return differ ? 1 : 0;
}
