// flow/names.cpp — names of flow states, reasons and protocols as EVE JSON prints them.
#include <cstdio>

#include "flow/flow_track.hpp"

namespace gaspp {

const char* flow_state_name(FlowState s) {
  switch (s) {
    case FlowState::fresh:
    case FlowState::new_: return "new";
    case FlowState::established: return "established";
    case FlowState::closed: return "closed";
  }
  return "new";
}

const char* flow_reason_name(FlowReason r) {
  switch (r) {
    case FlowReason::timeout: return "timeout";
    case FlowReason::forced: return "forced";
    case FlowReason::shutdown: return "shutdown";
    case FlowReason::tcp_reuse: return "tcp_reuse";
  }
  return "timeout";
}

const char* flow_proto_name(uint8_t p) {
  switch (p) {
    case 6: return "TCP";
    case 17: return "UDP";
    case 1: return "ICMP";
    case 58: return "IPv6-ICMP";
    case 132: return "SCTP";
    case 4: return "IP-in-IP";  // Suricata's names (util-proto-name.c)
    case 41: return "IPv6";
    case 47: return "GRE";
    case 50: return "ESP";
    default: break;
  }
  static thread_local char buf[8];
  std::snprintf(buf, sizeof buf, "%u", unsigned(p));
  return buf;
}

const char* tcp_session_name(const FlowRecord& r) {
  const auto c = TcpSide(r.side[0].tcp), s = TcpSide(r.side[1].tcp);
  auto fin = [](TcpSide t) { return t == TcpSide::fin_sent || t == TcpSide::fin_acked; };
  if (c == TcpSide::reset || s == TcpSide::reset) return "closed";
  if (fin(c) && fin(s)) {
    if (c == TcpSide::fin_acked && s == TcpSide::fin_acked) return "closed";
    if (c == TcpSide::fin_acked || s == TcpSide::fin_acked) return "time_wait";
    return "closing";
  }
  if (fin(c) || fin(s)) {
    const TcpSide closer = fin(c) ? c : s;
    return closer == TcpSide::fin_acked ? "fin_wait2" : "fin_wait1";
  }
  if (c == TcpSide::established && s == TcpSide::established) return "established";
  if (s == TcpSide::syn_recv) return "syn_recv";
  if (c == TcpSide::syn_sent) return "syn_sent";
  return "none";
}

}  // namespace gaspp

#include <algorithm>

#include "stream/stream.hpp"

namespace gaspp {

void sort_flow_records(std::vector<FlowRecordOut>& v) {
  std::sort(v.begin(), v.end(), [](const FlowRecordOut& a, const FlowRecordOut& b) {
    if (a.rec.last_ts != b.rec.last_ts) return a.rec.last_ts < b.rec.last_ts;
    if (a.rec.first_ts != b.rec.first_ts) return a.rec.first_ts < b.rec.first_ts;
    return a.rec.flow_id < b.rec.flow_id;
  });
}

void sort_stream_chunks(std::vector<StreamChunk>& v) {
  // Sorted as (flow id, direction, position) keys, then moved once: a stable sort of the 104-byte
  // chunks themselves moved each one log n times, most of a batch's host time with the
  // application layer on (tens of thousands of chunks a batch).
  thread_local std::vector<std::pair<uint64_t, uint64_t>> keys;
  thread_local std::vector<StreamChunk> out;
  keys.resize(v.size());
  bool sorted = true;
  for (size_t i = 0; i < v.size(); ++i) {
    keys[i] = {v[i].flow_id, uint64_t(v[i].dir) << 32 | uint64_t(i)};
    sorted = sorted && (i == 0 || keys[i - 1] < keys[i]);
  }
  if (sorted) return;
  std::sort(keys.begin(), keys.end());
  out.resize(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = v[size_t(keys[i].second & 0xffffffffu)];
  v.swap(out);
}

const char* overlap_policy_name(OverlapPolicy p) { return p == OverlapPolicy::last ? "last" : "first"; }

const char* urgent_policy_name(UrgentPolicy p) {
  static const char* const names[] = {"inline", "oob", "gap", "drop"};
  return names[int(p) & 3];
}

}  // namespace gaspp
