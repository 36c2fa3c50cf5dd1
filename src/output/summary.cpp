#include "output/summary.hpp"

#include "output/eve.hpp"

#include <string>

namespace gaspp {
namespace {

struct Rate {
  double pps, gbps;
};
Rate rate(const RunReport& r) {
  if (r.seconds <= 0) return {0, 0};
  return {double(r.totals.v[c_packets]) / r.seconds, double(r.totals.v[c_wire_bytes]) * 8 / r.seconds / 1e9};
}

}  // namespace

void print_summary(std::FILE* o, const RunReport& r) {
  const auto& t = r.totals.v;
  std::fprintf(o, "capture      %s (%s, link %s, %llu bytes)\n", r.path.c_str(), r.container.c_str(), r.link.c_str(),
               (unsigned long long)r.file_bytes);
  std::fprintf(o, "backend      %s\n", r.backend.c_str());
  std::fprintf(o, "packets      %llu  bytes %llu  captured bytes %llu  cut by snap length %llu\n",
               (unsigned long long)t[c_packets], (unsigned long long)t[c_wire_bytes],
               (unsigned long long)t[c_captured_bytes], (unsigned long long)t[c_truncated_by_snaplen]);
  std::fprintf(o, "outcome      passed %llu  dropped %llu  (by an earlier decision of their flow: dropped %llu, passed %llu)\n",
               (unsigned long long)r.passed, (unsigned long long)r.dropped,
               (unsigned long long)r.totals.v[c_verdict_flow_dropped], (unsigned long long)r.totals.v[c_verdict_flow_passed]);
  std::fprintf(o, "link         %s %llu  vlan-tagged %llu\n", r.link.c_str(), (unsigned long long)t[c_packets],
               (unsigned long long)t[c_vlan_tagged]);
  std::fprintf(o, "l3           ipv4 %llu  ipv6 %llu  arp %llu  other %llu  none %llu  fragments %llu\n",
               (unsigned long long)t[c_l3_ipv4], (unsigned long long)t[c_l3_ipv6], (unsigned long long)t[c_l3_arp],
               (unsigned long long)t[c_l3_other], (unsigned long long)t[c_l3_none], (unsigned long long)t[c_ip_fragments]);
  std::fprintf(o, "l4           tcp %llu  udp %llu  icmp %llu  icmpv6 %llu  other %llu  none %llu\n",
               (unsigned long long)t[c_l4_tcp], (unsigned long long)t[c_l4_udp], (unsigned long long)t[c_l4_icmp],
               (unsigned long long)t[c_l4_icmpv6], (unsigned long long)t[c_l4_other], (unsigned long long)t[c_l4_none]);
  std::fprintf(o, "tunnels      decoded inside a tunnel %llu\n", (unsigned long long)t[c_tunneled]);
  if (t[c_csum_bad_ipv4] + t[c_csum_bad_tcp] + t[c_csum_bad_udp] + t[c_csum_bad_icmp])
    std::fprintf(o, "checksums    bad: ipv4 %llu  tcp %llu  udp %llu  icmp %llu\n", (unsigned long long)t[c_csum_bad_ipv4],
                 (unsigned long long)t[c_csum_bad_tcp], (unsigned long long)t[c_csum_bad_udp],
                 (unsigned long long)t[c_csum_bad_icmp]);
  std::fprintf(o, "undecoded    %llu", (unsigned long long)t[c_undecoded]);
  for (int k = 1; k < kUndecodedReasons; ++k)
    if (t[c_undecoded_reason0 + k])
      std::fprintf(o, "  %s %llu", undecoded_reason_name(UndecodedReason(k)), (unsigned long long)t[c_undecoded_reason0 + k]);
  std::fprintf(o, "\n");
  std::fprintf(o, "malformed    %llu", (unsigned long long)t[c_malformed]);
  for (int k = 1; k < kMalformedReasons; ++k)
    if (t[c_malformed_reason0 + k])
      std::fprintf(o, "  %s %llu", malformed_reason_name(MalformedReason(k)), (unsigned long long)t[c_malformed_reason0 + k]);
  std::fprintf(o, "\n");
  bool any_event = t[c_decode_events_dropped] != 0;
  for (int k = 1; k < kDecodeEvents; ++k) any_event |= t[c_decode_event0 + k] != 0;
  if (any_event) {
    std::fprintf(o, "events       ");
    for (int k = 1; k < kDecodeEvents; ++k)
      if (t[c_decode_event0 + k])
        std::fprintf(o, " %s %llu", decode_event_name(DecodeEvent(k)), (unsigned long long)t[c_decode_event0 + k]);
    if (t[c_decode_events_dropped])
      std::fprintf(o, "  (packets with more than %d: %llu, the rest not kept)", kDecodeEventSlots,
                   (unsigned long long)t[c_decode_events_dropped]);
    std::fprintf(o, "\n");
  }
  std::fprintf(o, "capture      %s; %llu warnings%s\n",
               r.damaged ? "DAMAGED: reading stopped early" : r.interrupted ? "INTERRUPTED: reading stopped by a signal" : r.live ? "live, stopped" : "read to the end",
               (unsigned long long)r.capture_warnings,
               r.suppressed_issues ? (" (" + std::to_string(r.suppressed_issues) + " not shown)").c_str() : "");
  if (!r.filter.empty() && r.live)
    std::fprintf(o, "filter       '%s': attached in the kernel (what it refuses is not counted)\n", r.filter.c_str());
  else if (!r.filter.empty())
    std::fprintf(o, "filter       '%s': %llu packets refused (read, not processed)\n", r.filter.c_str(),
                 (unsigned long long)r.filtered);
  if (r.live)
    std::fprintf(o, "kernel       received %llu  dropped %llu (ring full)  vlan tags restored %llu%s\n",
                 (unsigned long long)r.kernel_packets, (unsigned long long)r.kernel_drops,
                 (unsigned long long)r.vlan_restored,
                 r.unprocessed_at_stop
                     ? ("  read at the stop, not processed " + std::to_string(r.unprocessed_at_stop)).c_str()
                     : "");
  if (r.overload_bypassed)
    std::fprintf(o, "overload     %llu packets forwarded uninspected (fail-open) in %llu episodes\n",
                 (unsigned long long)r.overload_bypassed, (unsigned long long)r.overload_episodes);
  if (r.index_windows_parallel + r.index_windows_serial)
    std::fprintf(o, "indexing     %llu windows in parallel, %llu serially\n", (unsigned long long)r.index_windows_parallel,
                 (unsigned long long)r.index_windows_serial);
  std::fprintf(o, "batches      %llu (direct %llu, compacted %llu, sliced %llu; %.1f MB copied to device, %.1f MB back)\n",
               (unsigned long long)r.batches, (unsigned long long)r.transfer.batches_direct,
               (unsigned long long)r.transfer.batches_compacted, (unsigned long long)r.transfer.batches_sliced,
               double(r.transfer.bytes_h2d) / 1e6, double(r.transfer.bytes_d2h) / 1e6);
  if (r.transfer.regions_registered + r.transfer.regions_not_registered > 1)
    std::fprintf(o, "regions      %llu of the source's registered for device access, %llu staged\n",
                 (unsigned long long)r.transfer.regions_registered, (unsigned long long)r.transfer.regions_not_registered);
  if (r.adaptive)
    std::fprintf(o, "batch size   adaptive %u..%u: %u at the end, peak %u; doubled %llu times, halved %llu\n",
                 r.batch_size.min, r.batch_size.max, r.batch_size.target, r.batch_size.peak,
                 (unsigned long long)r.batch_size.grown, (unsigned long long)r.batch_size.shrunk);
  if (r.latency.count) {
    const LatencyHistogram& h = r.latency;
    std::fprintf(o, "latency      capture to verdict: median %.3f ms  p99 %.3f ms  max %.3f ms  (%llu packets)\n",
                 double(h.quantile_ns(0.5)) / 1e6, double(h.quantile_ns(0.99)) / 1e6, double(h.max_ns) / 1e6,
                 (unsigned long long)h.count);
  }
  if (r.defrag_config.enabled) {
    const DefragStats& d = r.defrag;
    std::fprintf(o, "defrag       ipv4 %llu fragments, %llu reassembled  ipv6 %llu fragments, %llu reassembled  "
                    "overlaps %llu  timeouts %llu  incomplete at end %llu  too large %llu  truncated %llu  "
                    "in tunnel %llu  limits hit: trackers %llu, fragments %llu, memcap %llu  policy %s\n",
                 (unsigned long long)d.ipv4_fragments, (unsigned long long)d.ipv4_reassembled,
                 (unsigned long long)d.ipv6_fragments, (unsigned long long)d.ipv6_reassembled,
                 (unsigned long long)d.overlaps, (unsigned long long)d.timeouts, (unsigned long long)d.incomplete_at_end,
                 (unsigned long long)d.too_large, (unsigned long long)d.truncated, (unsigned long long)d.in_tunnel,
                 (unsigned long long)d.max_trackers_reached, (unsigned long long)d.max_frags_reached,
                 (unsigned long long)d.memcap_reached, defrag_policy_name(r.defrag_config.policy));
  }
  if (r.flows.enabled) {
    const auto& g = r.flows;
    std::fprintf(o, "flows        created %llu  active at end %u  timed out %llu  evicted %llu  port reuse %llu  "
                    "ended at shutdown %llu\n",
                 (unsigned long long)t[c_flow_created], g.live, (unsigned long long)t[c_flow_timed_out],
                 (unsigned long long)t[c_flow_evicted], (unsigned long long)t[c_flow_port_reuse],
                 (unsigned long long)t[c_flow_shutdown]);
    std::fprintf(o, "flow table   capacity %u (%u slots, %.1f MiB)  occupancy at end %.2f%%  peak %u  emergency entered %llu\n",
                 g.capacity, g.slots, double(g.bytes) / 1048576.0, g.capacity ? 100.0 * g.live / g.capacity : 0.0, g.peak,
                 (unsigned long long)t[c_flow_emergency]);
    std::fprintf(o, "flow packets tracked %llu  untracked: not ip %llu  malformed %llu  fragment %llu  table full %llu\n",
                 (unsigned long long)t[c_flow_packets], (unsigned long long)t[c_flow_skip_not_ip],
                 (unsigned long long)t[c_flow_skip_malformed], (unsigned long long)t[c_flow_skip_fragment],
                 (unsigned long long)t[c_flow_untracked]);
    std::fprintf(o, "tcp          established %llu  midstream %llu  no session %llu  syn retransmitted %llu  "
                    "bad syn-ack %llu  bad handshake seq %llu  unexpected syn %llu  invalid rst %llu  bad timestamp %llu  "
                    "out of window %llu  bad checksum %llu\n",
                 (unsigned long long)t[c_tcp_established], (unsigned long long)t[c_tcp_midstream],
                 (unsigned long long)t[c_tcp_no_session], (unsigned long long)t[c_tcp_syn_retransmit],
                 (unsigned long long)t[c_tcp_synack_bad_ack], (unsigned long long)t[c_tcp_handshake_bad_seq],
                 (unsigned long long)t[c_tcp_syn_unexpected],
                 (unsigned long long)t[c_tcp_rst_invalid], (unsigned long long)t[c_tcp_bad_timestamp],
                 (unsigned long long)t[c_tcp_out_of_window], (unsigned long long)t[c_tcp_bad_checksum]);
  }
  if (r.streams.enabled) {
    const auto& g = r.streams;
    std::fprintf(o, "streams      segments %llu  in order %llu  out of order buffered %llu  released %llu  "
                    "retransmissions %llu  straddling %llu\n",
                 (unsigned long long)t[c_stream_segments], (unsigned long long)t[c_stream_in_order],
                 (unsigned long long)t[c_stream_ooo_buffered], (unsigned long long)t[c_stream_ooo_released],
                 (unsigned long long)t[c_stream_retransmit], (unsigned long long)t[c_stream_straddle]);
    std::fprintf(o, "stream data  delivered %llu bytes in %llu chunks  overlaps same %llu  different %llu  "
                    "gaps %llu (%llu bytes)  acked skips %llu  flow-limit skips %llu  after end %llu  truncated %llu\n",
                 (unsigned long long)t[c_stream_bytes], (unsigned long long)t[c_stream_chunks],
                 (unsigned long long)t[c_stream_overlap_same], (unsigned long long)t[c_stream_overlap_conflict],
                 (unsigned long long)t[c_stream_gaps], (unsigned long long)t[c_stream_gap_bytes],
                 (unsigned long long)t[c_stream_ack_skips], (unsigned long long)t[c_stream_flow_limit], (unsigned long long)t[c_stream_after_end],
                 (unsigned long long)t[c_stream_truncated]);
    std::fprintf(o, "ooo buffer   %u segments / %.1f MiB  peak %u segments, %u bytes  compactions %u  dropped %llu "
                    "(%llu bytes)  chunk overflow %llu  overlap policy %s\n",
                 g.held_cap, double(g.held_bytes_cap) / 1048576.0, g.peak_segs, g.peak_bytes, g.compactions,
                 (unsigned long long)t[c_stream_ooo_dropped], (unsigned long long)t[c_stream_ooo_dropped_bytes],
                 (unsigned long long)t[c_stream_chunk_overflow], overlap_policy_name(g.overlap));
  }
  const Rate rt = rate(r);
  std::fprintf(o, "elapsed      %.6f s  %.3f Mpps  %.3f Gbit/s\n", r.seconds, rt.pps / 1e6, rt.gbps);
}

std::string json_text(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

nlohmann::ordered_json summary_json(const RunReport& r) {
  const auto& t = r.totals.v;
  nlohmann::ordered_json j;
  auto& cap = j["capture"];
  cap = {{"path", r.path},
         {"format", r.container},
         {"link", r.link},
         {"linktype", r.raw_link},
         {"file_bytes", r.file_bytes},
         {"damaged", r.damaged},
         {"interrupted", r.interrupted},
         {"warnings", r.capture_warnings},
         {"index_windows_parallel", r.index_windows_parallel},
         {"index_windows_serial", r.index_windows_serial},
         {"filter", r.filter},
         {"filtered", r.filtered}};
  if (r.live) {
    cap["kernel_packets"] = r.kernel_packets;
    cap["kernel_drops"] = r.kernel_drops;
    cap["vlan_restored"] = r.vlan_restored;
    cap["unprocessed_at_stop"] = r.unprocessed_at_stop;
    cap["overload_bypassed"] = r.overload_bypassed;  // --inline-fail open
    cap["overload_episodes"] = r.overload_episodes;
  }
  cap["issues"] = nlohmann::ordered_json::array();
  for (const auto& is : r.issues)
    cap["issues"].push_back({{"fatal", is.fatal}, {"record", is.record}, {"offset", is.offset}, {"message", is.message}});
  j["backend"] = r.backend;
  j["packets"] = t[c_packets];
  j["bytes"] = t[c_wire_bytes];
  j["captured_bytes"] = t[c_captured_bytes];
  j["truncated_by_snaplen"] = t[c_truncated_by_snaplen];
  auto& out = j["outcome"];
  out = {{"passed", r.passed}, {"dropped", r.dropped}};
#define GASPP_X(id, name) out[name] = t[c_##id];
  GASPP_VERDICT_COUNTERS(GASPP_X)
#undef GASPP_X
  j["link"] = {{r.link, t[c_packets]}, {"vlan_tagged", t[c_vlan_tagged]}};
  j["l3"] = {{"ipv4", t[c_l3_ipv4]}, {"ipv6", t[c_l3_ipv6]}, {"arp", t[c_l3_arp]},
             {"other", t[c_l3_other]}, {"none", t[c_l3_none]}, {"ip_fragments", t[c_ip_fragments]}};
  j["l4"] = {{"tcp", t[c_l4_tcp]}, {"udp", t[c_l4_udp]}, {"icmp", t[c_l4_icmp]},
             {"icmpv6", t[c_l4_icmpv6]}, {"other", t[c_l4_other]}, {"none", t[c_l4_none]}};
  j["tunneled"] = t[c_tunneled];
  j["bad_checksums"] = {{"ipv4", t[c_csum_bad_ipv4]}, {"tcp", t[c_csum_bad_tcp]}, {"udp", t[c_csum_bad_udp]},
                        {"icmp", t[c_csum_bad_icmp]}};
  auto& und = j["undecoded"];
  und["total"] = t[c_undecoded];
  for (int k = 1; k < kUndecodedReasons; ++k) und[undecoded_reason_name(UndecodedReason(k))] = t[c_undecoded_reason0 + k];
  auto& mal = j["malformed"];
  mal["total"] = t[c_malformed];
  for (int k = 1; k < kMalformedReasons; ++k) mal[malformed_reason_name(MalformedReason(k))] = t[c_malformed_reason0 + k];
  auto& ev = j["decoder_events"];
  ev = nlohmann::ordered_json::object();
  for (int k = 1; k < kDecodeEvents; ++k)
    if (t[c_decode_event0 + k]) ev[decode_event_name(DecodeEvent(k))] = t[c_decode_event0 + k];
  if (t[c_decode_events_dropped]) ev["dropped"] = t[c_decode_events_dropped];
  const TransferStats& tr = r.transfer;
  j["batches"] = {{"count", r.batches},         {"direct", tr.batches_direct}, {"compacted", tr.batches_compacted},
                  {"sliced", tr.batches_sliced}, {"bytes_h2d", tr.bytes_h2d},   {"bytes_d2h", tr.bytes_d2h},
                  {"regions_registered", tr.regions_registered}, {"regions_not_registered", tr.regions_not_registered}};
  if (r.adaptive)
    j["batches"]["adaptive"] = {{"min", r.batch_size.min},       {"max", r.batch_size.max},
                                {"target", r.batch_size.target}, {"peak", r.batch_size.peak},
                                {"doubled", r.batch_size.grown}, {"halved", r.batch_size.shrunk}};
  if (r.latency.count)
    j["latency"] = {{"packets", r.latency.count},
                    {"median_us", double(r.latency.quantile_ns(0.5)) / 1e3},
                    {"p99_us", double(r.latency.quantile_ns(0.99)) / 1e3},
                    {"max_us", double(r.latency.max_ns) / 1e3}};
  if (r.defrag_config.enabled) {
    const DefragStats& d = r.defrag;
    auto& df = j["defrag"];
    df["policy"] = defrag_policy_name(r.defrag_config.policy);
#define GASPP_X(name, text) df[text] = d.name;
    GASPP_DEFRAG_COUNTERS(GASPP_X)
#undef GASPP_X
    df["incomplete_at_end"] = d.incomplete_at_end;
    df["peak_trackers"] = d.peak_trackers;
  }
  if (r.flows.enabled) {
    const auto& g = r.flows;
    auto& fl = j["flows"];
    fl = {{"capacity", g.capacity}, {"slots", g.slots}, {"table_bytes", g.bytes},
          {"active", g.live},       {"peak", g.peak},   {"records", r.flow_records}};
#define GASPP_X(id, name) fl[name] = t[c_##id];
    GASPP_FLOW_COUNTERS(GASPP_X)
#undef GASPP_X
  }
  if (r.streams.enabled) {
    const auto& g = r.streams;
    auto& st = j["streams"];
    st = {{"ooo_segments_capacity", g.held_cap}, {"ooo_bytes_capacity", g.held_bytes_cap},
          {"ooo_peak_segments", g.peak_segs},    {"ooo_peak_bytes", g.peak_bytes},
          {"ooo_compactions", g.compactions},    {"overlap_policy", overlap_policy_name(g.overlap)}};
#define GASPP_X(id, name) st[name] = t[c_##id];
    GASPP_STREAM_COUNTERS(GASPP_X)
#undef GASPP_X
  }
  const Rate rt = rate(r);
  j["elapsed_s"] = r.seconds;
  j["pps"] = rt.pps;
  j["gbps"] = rt.gbps;
  return j;
}

}  // namespace gaspp
