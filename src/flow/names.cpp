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

void sort_stream_chunks_from(const StreamChunk* src, size_t n, std::vector<StreamChunk>& out) {
  // A stable LSD radix sort of (flow id, direction) keys, 11 bits a pass, then each chunk moved
  // once: std::sort of the keys took most of the CUDA backend's copy-back of a batch with the
  // application layer on (tens of thousands of chunks), the radix passes a fraction of it. Stable,
  // so a flow and direction's chunks keep the order they came in (their stream order).
  struct Entry {
    uint64_t key;
    uint32_t idx;
  };
  thread_local std::vector<Entry> a, b;
  a.resize(n);
  b.resize(n);
  bool sorted = true;
  uint64_t all_bits = 0, prev = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t k = src[i].flow_id << 1 | (src[i].dir & 1);
    a[i] = {k, uint32_t(i)};
    sorted = sorted && (i == 0 || prev <= k);
    prev = k;
    all_bits |= k;
  }
  out.resize(n);
  if (sorted) {
    std::copy(src, src + n, out.begin());
    return;
  }
  constexpr int kBits = 11;
  constexpr size_t kBuckets = size_t(1) << kBits;
  uint32_t count[kBuckets];
  for (int shift = 0; shift < 64 && (all_bits >> shift) != 0; shift += kBits) {
    std::fill(count, count + kBuckets, 0u);
    for (size_t i = 0; i < n; ++i) ++count[(a[i].key >> shift) & (kBuckets - 1)];
    uint32_t sum = 0;
    for (size_t d = 0; d < kBuckets; ++d) {
      const uint32_t c = count[d];
      count[d] = sum;
      sum += c;
    }
    for (size_t i = 0; i < n; ++i) b[count[(a[i].key >> shift) & (kBuckets - 1)]++] = a[i];
    a.swap(b);
  }
  for (size_t i = 0; i < n; ++i) out[i] = src[a[i].idx];
}

void sort_stream_chunks(std::vector<StreamChunk>& v) {
  thread_local std::vector<StreamChunk> out;
  sort_stream_chunks_from(v.data(), v.size(), out);
  v.swap(out);
}

const char* overlap_policy_name(OverlapPolicy p) { return p == OverlapPolicy::last ? "last" : "first"; }

const char* urgent_policy_name(UrgentPolicy p) {
  static const char* const names[] = {"inline", "oob", "gap", "drop"};
  return names[int(p) & 3];
}

}  // namespace gaspp
