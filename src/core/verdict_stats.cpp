// core/verdict_stats.cpp — ModuleSet's accounting of every packet's final verdict (counted by
// reason, firewall-mode drops, EVE drop events) and its JSON (see modules.hpp).
#include "core/modules.hpp"

#include <algorithm>
#include <stdexcept>

#include "core/eve_event.hpp"
#include "core/packet_batch.hpp"
#include "decode/decoder.hpp"
#include "flow/flow_track.hpp"

#include "core/drop_event.hpp"

namespace gaspp {

void ModuleSet::account_verdicts(const PacketBatch& b, ModuleOutput& out) {
  const bool fw = firewall_mode();
  size_t ev = 0;  // sorted_ is in packet order
  DecodedPacket d;
  // The verdict counters count the capture's records. A fragment and the datagram it completed
  // (PacketBatch::reassembled, right after it) are counted once, at the datagram: dropped when
  // either was, for the reason of the one that was (the fragment's first).
  struct Outcome {
    bool drop, stream_error, stream_urgent, memcap, by_flow, fw_event, threshold;
    uint32_t reason;
  };
  size_t late = 0;  // late_packets_ is in packet order
  const auto count = [&](const Outcome& o) {
    if (!o.drop) {
      ++vs_.ips_accepted;
      vs_.fw_accepted += fw;
    } else if (o.stream_error || o.stream_urgent || o.memcap) {
      vs_.fw_accepted += fw;  // the pipeline dropped it, whatever the firewall said
      ++vs_.ips_blocked;
      ++(o.memcap ? vs_.ips_flow_memcap : o.stream_urgent ? vs_.ips_stream_urgent : vs_.ips_stream_error);
    } else if (fw && (o.by_flow || o.fw_event)) {
      ++vs_.fw_blocked;
      ++vs_.reason[o.reason];
    } else {
      vs_.fw_accepted += fw;  // the firewall let it through; detection dropped it
      ++vs_.ips_blocked;
      ++(o.by_flow ? vs_.ips_flow_drop : o.threshold ? vs_.ips_threshold : vs_.ips_rules);
    }
  };
  Outcome fragment{};  // the record before a reassembled datagram, counted with it
  for (uint32_t i = 0; i < b.count; ++i) {
    uint32_t reason = kDropReasonRules;
    bool fw_event = false;  // the firewall said why it dropped this packet
    uint64_t flow_id = 0;
    bool to_client = false;
    for (; ev < sorted_.size() && sorted_[ev].packet <= i; ++ev) {
      const ModuleEvent& e = sorted_[ev];
      if (e.packet != i) continue;
      if (!flow_id) flow_id = e.flow_id, to_client = e.to_client != 0;
      if (e.kind == kEventDropReason && !fw_event && e.value >= 1 && e.value <= 3) reason = e.value, fw_event = true;
    }
    const uint8_t v = b.h_verdict[i];
    const bool memcap = v == kVerdictUntrackedDrop;  // no room in the flow table: exception policy
    const bool drop = v & kVerdictDrop, by_flow = drop && !memcap && (v & kVerdictFlowDecided);
    bool stream_error = drop && !memcap && (v & kVerdictStreamError), stream_urgent = false;
    // The packet is decoded again on the host (once) when its drop needs its fields.
    const uint64_t off = b.h_rec_off[i];
    if ((stream_error && urgent_drop_) || (drop && drop_events_)) decode_packet(b, i, d);
    if (stream_error && urgent_drop_) {
      // Suricata drops a URG segment under urgent policy drop before validating it: its reason.
      stream_urgent = d.l4[0] == uint8_t(L4::tcp) && (d.tcp_flags[0] & kTcpUrg);
      stream_error = !stream_urgent;
    }
    if (by_flow) reason = VerdictStats::kFlowDrop;
    // A handler's late drop (LateVerdicts) because a rate_filter's new_action made it one.
    for (; late < late_packets_.size() && late_packets_[late].first < i; ++late) {}
    const bool threshold = drop && !by_flow && late < late_packets_.size() && late_packets_[late].first == i &&
                           late_packets_[late].second == LateVerdicts::threshold;
    const Outcome o{drop, stream_error, stream_urgent, memcap, by_flow, fw_event, threshold, reason};
    if (i + 1 < b.count && b.is_reassembled(i + 1)) fragment = o;  // counted with its datagram
    else if (b.is_reassembled(i)) count(fragment.drop || !drop ? fragment : o);
    else count(o);
    if (drop && drop_events_) {
      const RecordHeader rh = read_record_header(b.h_span + off, b.fmt);
      if (flow_id) remember_dropped_flow(d, flow_id, to_client);
      else if (by_flow) recall_dropped_flow(d, flow_id, to_client);
      const HostPacket hp{b.packet_number(i), d.ts_ns[0], b.h_span + off + kRecordHeaderBytes, rh.cap_len,
                          rh.wire_len, &d, flow_id, to_client};
      // Suricata's words for the threshold reason keep their underscore.
      std::string j = drop_event_json(hp, threshold ? std::string("threshold detection_filter")
                                                    : drop_event_reason(memcap ? "flow_memcap" : stream_error ? "stream_error"
                                                                        : stream_urgent ? "stream_urgent" : drop_reason_name(reason)),
                                      drop_ether_);
      // The flow's variables, as Suricata adds them to its drop events too (EveAddCommonOptions).
      const std::string vars = flow_id ? flow_eve_json(flow_id) : std::string();
      if (!vars.empty() && !j.empty() && j.back() == '}') j.insert(j.size() - 1, vars);
      out.eve(j);
    }
  }
}

nlohmann::ordered_json ModuleSet::verdict_stats_json() const {
  nlohmann::ordered_json j;
  j["ips"] = {{"accepted", vs_.ips_accepted},
              {"blocked", vs_.ips_blocked},
              {"drop_reason",
               {{"rules", vs_.ips_rules},
                {"flow_drop", vs_.ips_flow_drop},
                {"threshold_detection_filter", vs_.ips_threshold},
                {"stream_error", vs_.ips_stream_error},
                {"stream_urgent", vs_.ips_stream_urgent},
                {"flow_memcap", vs_.ips_flow_memcap}}}};
  if (!firewall_mode()) return j;
  auto& fw = j["firewall"];
  fw = {{"accepted", vs_.fw_accepted}, {"blocked", vs_.fw_blocked}};
  for (uint32_t r = 1; r <= VerdictStats::kFlowDrop; ++r) fw["drop_reason"][drop_reason_name(r)] = vs_.reason[r];
  return j;
}

}  // namespace gaspp
