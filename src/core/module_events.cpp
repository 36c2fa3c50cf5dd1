// core/module_events.cpp — ModuleSet's delivery of a batch's module events to the modules' host
// handlers in capture order, the counters they add, and the memory of dropped flows (see
// modules.hpp).
#include "core/modules.hpp"

#include "applayer/app_layer.hpp"
#include "core/app_eve.hpp"

#include <algorithm>
#include <cstring>
#include <ctime>
#include <stdexcept>

#include "core/eve_event.hpp"
#include "core/packet_batch.hpp"
#include "decode/decoder.hpp"
#include "flow/flow_table.hpp"

namespace gaspp {

namespace {

// Capture order (packet), then flow, module, kind, value, direction and seq: a total order, so
// both backends hand events over alike. Events with no packet (kNoPacket) come last, by flow.
void sort_events(std::vector<ModuleEvent>& ev) {
  std::sort(ev.begin(), ev.end(), [](const ModuleEvent& x, const ModuleEvent& y) {
    if (x.packet != y.packet) return x.packet < y.packet;
    if (x.flow_id != y.flow_id) return x.flow_id < y.flow_id;
    if (x.module != y.module) return x.module < y.module;
    if (x.kind != y.kind) return x.kind < y.kind;
    if (x.value != y.value) return x.value < y.value;
    if (x.to_client != y.to_client) return x.to_client < y.to_client;
    return x.seq < y.seq;
  });
}

uint64_t now_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return uint64_t(t.tv_sec) * 1000000000ull + uint64_t(t.tv_nsec);
}

}  // namespace

void ModuleSet::host_time(const char* name, uint64_t& since) {
  if (!host_times_on_) return;
  const uint64_t t = now_ns();
  HostTime* h = nullptr;
  for (HostTime& x : host_times_)
    if (std::strcmp(x.name, name) == 0) h = &x;
  if (!h) h = &host_times_.emplace_back(HostTime{name});
  h->ns += t - since;
  h->max_ns = std::max(h->max_ns, t - since);
  ++h->batches;
  since = t;
}

void ModuleSet::add_counts(const std::vector<uint64_t>& c) {
  for (size_t k = 0; k < mods_.size() && (k + 1) * kModuleCounters <= c.size(); ++k)
    for (int i = 0; i < kModuleCounters; ++i) counts_[k][size_t(i)] += c[k * kModuleCounters + size_t(i)];
}

void ModuleSet::hand_flow_only(std::vector<ModuleEvent>::const_iterator begin,
                               std::vector<ModuleEvent>::const_iterator end, const std::vector<FlowRecordOut>& flows,
                               ModuleOutput& out) {
  if (begin == end) return;
  std::unordered_map<uint64_t, const FlowRecord*> index;  // flow id → record
  for (const FlowRecordOut& f : prev_flows_) index.emplace(f.rec.flow_id, &f.rec);
  for (const FlowRecordOut& f : flows) index.emplace(f.rec.flow_id, &f.rec);
  for (auto e = begin; e != end; ++e) {
    if (late_ids_.count(e->flow_id) || (e->module != kAppLogModule && late_pass_.count(e->flow_id))) {
      ++suppressed_;  // a handler dropped the flow (nothing after is inspected) or passed it
      continue;
    }
    const auto it = index.find(e->flow_id);
    if (it == index.end() || (e->module >= mods_.size() && e->module != kAppLogModule)) {
      ++unattributed_;
      continue;
    }
    const FlowRecord& r = *it->second;
    if (e->module == kAppLogModule) {
      write_app_log(*e, r.last_ts, 0, out);
      continue;
    }
    HostPacket hp{0, r.last_ts, nullptr, 0, 0, nullptr, e->flow_id, e->to_client != 0, &r};
    hp.app_proto = app_proto_of(e->flow_id);
    hp.vars = this;
    ++flow_only_;
    mods_[e->module]->on_event(*e, hp, out);
  }
}

void ModuleSet::gather_datagrams(const PacketBatch& b) {
  datagrams_.clear();
  dgram_bytes_.clear();
  if (app_udp_ < 0) return;
  const uint16_t mod = uint16_t(app_udp_);
  DecodedPacket d;
  for (const ModuleEvent& e : sorted_) {
    if (e.module != mod || e.packet >= b.count) continue;
    if (b.h_verdict[e.packet] & kVerdictFlowDecided) continue;  // its flow's decision came first
    if (late_ids_.count(e.flow_id)) continue;                    // a handler dropped its flow
    decode_packet(b, e.packet, d);
    const uint64_t off = b.h_rec_off[e.packet];
    const RecordHeader rh = read_record_header(b.h_span + off, b.fmt);
    const uint8_t* frame = b.h_span + off + kRecordHeaderBytes;
    const uint32_t at = d.payload_off[0];
    if (at >= rh.cap_len) continue;
    const size_t len = std::min<size_t>(d.payload_len[0], rh.cap_len - at);
    AppDatagram g{e.flow_id, e.packet, e.to_client != 0, false, FlowKey{}, dgram_bytes_.size(), len};
    if (!dropped_flow_key(d, g.key, g.from_lo)) continue;
    dgram_bytes_.insert(dgram_bytes_.end(), frame + at, frame + at + len);
    datagrams_.push_back(g);
  }
  // Capture order (events come in any order).
  std::sort(datagrams_.begin(), datagrams_.end(), [](const AppDatagram& x, const AppDatagram& y) { return x.packet < y.packet; });
  std::erase_if(sorted_, [mod](const ModuleEvent& e) { return e.module == mod; });
}

namespace {
// The events a transaction raised (raised) not yet written (logged), marked written.
template <class Bits>
uint64_t take_fresh(Bits raised, Bits& logged) {
  const Bits fresh = Bits(raised & ~logged);
  logged |= fresh;
  return fresh;
}

// The app-layer events of an HTTP transaction (HttpEvent bits; Http2Event bits on HTTP/2's), a
// mail (SmtpEvent bits) or an SSH connection (SshEvent bits) the EVE anomaly log has not written
// yet, marked written; 0 for other protocols.
uint64_t take_unlogged_events(AppProto proto, AppTx& t) {
  switch (proto) {
    case AppProto::http2: {
      HttpTx& h = static_cast<HttpTx&>(t);
      return take_fresh(h.h2_events, h.h2_events_logged);
    }
    case AppProto::http: {
      HttpTx& h = static_cast<HttpTx&>(t);
      return take_fresh(h.events, h.events_logged);
    }
    case AppProto::smtp: {
      SmtpTx& m = static_cast<SmtpTx&>(t);
      return take_fresh(m.events, m.events_logged);
    }
    case AppProto::ssh: {
      SshTx& h = static_cast<SshTx&>(t);
      return take_fresh(h.events, h.events_logged);
    }
    default:
      return 0;
  }
}

}  // namespace

void ModuleSet::app_events(const std::vector<StreamChunk>& chunks, std::span<const uint8_t> bytes, const PacketBatch* b) {
  if (!app_ || (chunks.empty() && datagrams_.empty())) return;
  uint64_t clock = host_times_on_ ? now_ns() : 0;
  // A flow a handler dropped in an earlier batch is parsed no further (as Suricata's stream engine
  // skips a dropped flow); its chunks of this batch were reassembled before the decision reached
  // the device, if it ever does.
  const std::vector<StreamChunk>* in = &chunks;
  if (!late_ids_.empty() && std::any_of(chunks.begin(), chunks.end(), [&](const StreamChunk& c) { return late_ids_.count(c.flow_id) != 0; })) {
    late_chunks_.clear();
    for (const StreamChunk& c : chunks)
      if (!late_ids_.count(c.flow_id)) late_chunks_.push_back(c);
    in = &late_chunks_;
  }
  // Each shard's modules inspect its updates on the thread that parsed them.
  for (auto& ev : shard_events_) ev.clear();
  app_->process(*in, bytes, datagrams_, dgram_bytes_, [&](size_t shard, int worker, std::span<AppUpdate> updates) {
    std::vector<ModuleEvent>& ev = shard_events_[shard];
    if (b)
      for (AppUpdate& u : updates)
        if (u.packet < b->count) u.ts_ns = read_record_header(b->h_span + b->h_rec_off[u.packet], b->fmt).ts_ns;
    for (size_t k = 0; k < mods_.size(); ++k) {
      if (!mods_[k]->wants_app_layer()) continue;
      const size_t at = ev.size();
      mods_[k]->on_app(updates, ev, worker);
      for (size_t i = at; i < ev.size(); ++i) ev[i].module = uint16_t(k);
    }
  });
  datagrams_.clear();
  host_time("app layer: split, parse, inspect", clock);
  for (auto& m : mods_)
    if (m->wants_app_layer()) m->on_app_end();
  for (const auto& ev : shard_events_) sorted_.insert(sorted_.end(), ev.begin(), ev.end());
  if (!app_log_) {
    host_time("app layer: merge", clock);
    return;
  }
  for (size_t s = 0; s < AppShards::kShards; ++s)
    for (const AppUpdate& u : app_->updates(s)) {
      AppTx& t = *u.tx;
      // At the first update after which the transaction was complete (tx_complete).
      const bool done = u.complete;
      if (app_anomalies_) {
        // Anomalies at the packet whose data raised them, as Suricata's anomaly tx logger.
        const uint64_t fresh = take_unlogged_events(u.proto, t);
        if (fresh) {
          const bool src_lo = (u.client_lo != 0) == (u.dir == 0);
          sorted_.push_back(ModuleEvent{u.flow_id, u.packet, uint32_t(app_logs_.size()), kAppLogModule, 0, u.dir});
          app_logs_.push_back(AppLog{u.proto, &t, u.key, u.client_lo != 0, fresh, src_lo});
        }
      }
      if (t.logged || !done) continue;
      t.logged = true;
      sorted_.push_back(ModuleEvent{u.flow_id, u.packet, uint32_t(app_logs_.size()), kAppLogModule, 0, u.dir});
      app_logs_.push_back(AppLog{u.proto, &t, u.key, u.client_lo != 0});
    }
  host_time("app layer: merge", clock);
}

namespace {
// Passes EVE events on with the flow's variables (ModuleSet::flow_eve_json) added, as Suricata's
// EveAddCommonOptions adds them to every event of the flow.
struct WithFlowVars {
  ModuleOutput& to;
  const std::string& vars;
  void eve(std::string j) {
    if (!vars.empty() && !j.empty() && j.back() == '}') j.insert(j.size() - 1, vars);
    to.eve(j);
  }
};

std::string app_event(AppProto proto, uint64_t ts, uint64_t flow_id, uint64_t cnt, const FlowKey& key, bool client_lo,
                      const AppTx& t) {
  if (proto == AppProto::tls) return eve_tls_event(ts, flow_id, cnt, key, client_lo, static_cast<const TlsTx&>(t));
  if (proto == AppProto::dns) return eve_dns_event(ts, flow_id, cnt, key, client_lo, static_cast<const DnsTx&>(t));
  if (proto == AppProto::ssh) return eve_ssh_event(ts, flow_id, cnt, key, client_lo, static_cast<const SshTx&>(t));
  if (proto == AppProto::sip) return eve_sip_event(ts, flow_id, cnt, key, client_lo, static_cast<const SipTx&>(t));
  if (proto == AppProto::smtp) return eve_smtp_event(ts, flow_id, cnt, key, client_lo, static_cast<const SmtpTx&>(t));
  if (proto == AppProto::ftp) return eve_ftp_event(ts, flow_id, cnt, key, client_lo, static_cast<const FtpTx&>(t));
  if (proto == AppProto::ftp_data)
    return eve_ftp_data_event(ts, flow_id, cnt, key, client_lo, static_cast<const FtpDataTx&>(t));
  return eve_http_event(ts, flow_id, cnt, key, client_lo, static_cast<const HttpTx&>(t));
}

// A transaction's event, after its files' fileinfo events (a mail's attachments, an HTTP
// transaction's files: Suricata logs a file when it closes, before its transaction's event).
// `vars`: the flow's variables (ModuleSet::flow_eve_json), added to each event as Suricata's
// EveAddCommonOptions adds them to every event of the flow.
void app_events_of(AppProto proto, uint64_t ts, uint64_t flow_id, uint64_t cnt, const FlowKey& key, bool client_lo,
                   const AppTx& t, const std::string& vars, ModuleOutput& real_out) {
  WithFlowVars out{real_out, vars};
  if (proto == AppProto::smtp) {
    const SmtpTx& m = static_cast<const SmtpTx&>(t);
    if (m.mime)
      for (const MimeFile& f : m.mime->files()) out.eve(eve_fileinfo_event(ts, flow_id, cnt, key, client_lo, m, f));
  }
  if (proto == AppProto::ftp_data) {
    const FtpDataTx& d = static_cast<const FtpDataTx&>(t);
    for (const MimeFile& f : d.files[d.data_dir]) out.eve(eve_fileinfo_event(ts, flow_id, cnt, key, client_lo, d, d.data_dir, f));
  }
  if (proto == AppProto::http || proto == AppProto::http2) {
    const HttpTx& h = static_cast<const HttpTx&>(t);
    for (int side = 0; side < 2; ++side)
      for (const MimeFile& f : h.files(side)) out.eve(eve_fileinfo_event(ts, flow_id, cnt, key, client_lo, h, side, f));
  }
  out.eve(app_event(proto, ts, flow_id, cnt, key, client_lo, t));
}
}  // namespace

void ModuleSet::write_anomalies(AppProto proto, uint64_t ts_ns, uint64_t flow_id, uint64_t pcap_cnt, const FlowKey& key,
                                bool src_lo, const AppTx& t, uint64_t events, ModuleOutput& real_out) {
  // Each event with the flow's variables, as Suricata's anomaly logger adds them (EveAddCommonOptions).
  const std::string vars = flow_eve_json(flow_id);
  WithFlowVars out{real_out, vars};
  if (proto == AppProto::ssh) {
    for (const char* name : ssh_event_names(uint8_t(events)))
      out.eve(eve_applayer_anomaly_event(ts_ns, flow_id, pcap_cnt, key, src_lo, t.id, "ssh", name, false));
    return;
  }
  if (proto == AppProto::smtp) {
    for (const char* name : smtp_event_names(uint32_t(events)))
      out.eve(eve_applayer_anomaly_event(ts_ns, flow_id, pcap_cnt, key, src_lo, t.id, "smtp", name, false));
    return;
  }
  // HTTP/2's event names are Suricata's Rust parser's, lowercase; libhtp's are written uppercase.
  if (static_cast<const HttpTx&>(t).http2) {
    for (const char* name : http2_event_names(uint32_t(events)))
      out.eve(eve_applayer_anomaly_event(ts_ns, flow_id, pcap_cnt, key, src_lo, t.id, "http2", name, false));
    return;
  }
  for (const char* name : http_event_names(events))
    out.eve(eve_applayer_anomaly_event(ts_ns, flow_id, pcap_cnt, key, src_lo, t.id, "http", name));
}

void ModuleSet::write_app_log(const ModuleEvent& e, uint64_t ts_ns, uint64_t pcap_cnt, ModuleOutput& out) {
  if (e.value >= app_logs_.size()) return;
  const AppLog& l = app_logs_[e.value];
  if (l.anomalies) {
    write_anomalies(l.proto, ts_ns, e.flow_id, pcap_cnt, l.key, l.src_lo, *l.tx, l.anomalies, out);
    return;
  }
  app_events_of(l.proto, ts_ns, e.flow_id, pcap_cnt, l.key, l.client_lo, *l.tx, flow_eve_json(e.flow_id), out);
}

void ModuleSet::forget_app_flows(const std::vector<FlowRecordOut>& flows, ModuleOutput& out) {
  if (!app_) return;
  if (!app_log_) {
    app_->forget(flows);
    return;
  }
  std::unordered_map<uint64_t, uint64_t> last_ts;
  for (const FlowRecordOut& f : flows) last_ts[f.rec.flow_id] = f.rec.last_ts;
  app_->forget(flows, [&](uint64_t flow_id, const FlowKey& key, bool client_lo, AppProto proto, AppTx& t) {
    if (app_anomalies_) {
      // Events no update handed over (raised at the flow's end): from the client's side.
      const uint64_t fresh = take_unlogged_events(proto, t);
      if (fresh) write_anomalies(proto, last_ts[flow_id], flow_id, 0, key, client_lo, t, fresh, out);
    }
    if (t.logged) return;
    t.logged = true;
    app_events_of(proto, last_ts[flow_id], flow_id, 0, key, client_lo, t, flow_eve_json(flow_id), out);
  });
}

void ModuleSet::finish_batch(const PacketBatch& b, ModuleOutput& out) {
  uint64_t clock = host_times_on_ ? now_ns() : 0;
  // The flows that ended a batch ago are gone (their records were written after that batch): the
  // modules forget them before this batch's packets, which may start a flow of the same key.
  if (!gone_flows_.empty()) {
    for (const auto& m : mods_) m->on_flows_gone(gone_flows_);
    gone_flows_.clear();
  }
  add_counts(b.module_counts);
  late_packets_.clear();
  rejects_.clear();
  app_logs_.clear();
  sorted_.assign(b.events.begin(), b.events.end());
  if (!b.host_events.empty()) {
    DecodedPacket hd;
    for (size_t k = 0; k < b.host_events.size(); ++k) {
      const uint32_t i = b.host_events[k].first;
      if (k && b.host_events[k - 1].first == i) continue;  // one call a packet, with all its events
      if (i >= b.count) continue;
      decode_packet(b, i, hd);
      for (size_t m = 0; m < mods_.size(); ++m) mods_[m]->on_host_events(i, hd, uint16_t(m), sorted_);
    }
  }
  gather_datagrams(b);
  host_time("events in, datagrams", clock);
  app_events(b.stream_chunks, b.stream_data(), &b);
  if (host_times_on_) clock = now_ns();
  sort_events(sorted_);
  host_time("events sorted", clock);
  // Events with no packet sort last: stream pieces no packet of the batch delivered, data held
  // for a flow that left the table (expired, evicted) in this batch or the one before, whose walk
  // put the data back in the out-of-order buffer before the sweep removed the flow; this batch's
  // walk flushed it.
  const auto flow_only = std::find_if(sorted_.cbegin(), sorted_.cend(),
                                      [](const ModuleEvent& e) { return e.packet == kNoPacket; });
  DecodedPacket d;
  HostPacket hp{};
  uint32_t decoded_for = ~0u;
  for (auto it = sorted_.cbegin(); it != flow_only; ++it) {
    const ModuleEvent& e = *it;
    if (e.packet >= b.count || (e.module >= mods_.size() && e.module != kAppLogModule)) {
      ++unattributed_;
      continue;
    }
    if ((b.h_verdict[e.packet] & kVerdictFlowDecided) || late_void(e.flow_id, b.packet_number(e.packet), e.module != kAppLogModule)) {
      ++suppressed_;
      continue;
    }
    if (decoded_for != e.packet) {
      const uint64_t off = b.h_rec_off[e.packet];
      decode_packet(b, e.packet, d);
      const RecordHeader rh = read_record_header(b.h_span + off, b.fmt);
      hp = HostPacket{b.packet_number(e.packet), d.ts_ns[0], b.h_span + off + kRecordHeaderBytes, rh.cap_len,
                      rh.wire_len, &d, e.flow_id, e.to_client != 0};
      decoded_for = e.packet;
    }
    hp.flow_id = e.flow_id;
    hp.to_client = e.to_client != 0;
    hp.verdict = b.h_verdict[e.packet];
    hp.app_proto = app_proto_at(e.flow_id, e.packet);
    hp.vars = this;
    // The flow's counters at the packet, where the verdict walk worked them out: an alerted packet,
    // and with an application layer in use every packet with payload (the application layer's
    // alerts name the packet that delivered the data; the walk ran before they were raised).
    const FlowCountsAt* fc = b.h_pkt_counts ? &b.h_pkt_counts[e.packet] : nullptr;
    const bool counted = (b.h_verdict[e.packet] & kVerdictAlerted) || (payload_counts_ && d.payload_len[0]);
    hp.flow_counts = e.flow_id && fc && counted && fc->first_ts ? fc : nullptr;
    if (e.module == kAppLogModule) {
      write_app_log(e, hp.ts_ns, hp.number, out);
      continue;
    }
    hp.late = &late_;
    late_batch_ = &b;
    late_packet_ = e.packet;
    late_decoded_ = &d;
    mods_[e.module]->on_event(e, hp, out);
  }
  late_batch_ = nullptr;
  late_decoded_ = nullptr;
  apply_late_drops(b);
  hand_flow_only(flow_only, sorted_.cend(), b.flow_records, out);
  late_forget();
  late_ended(b.flow_records);
  forget_app_flows(b.flow_records, out);
  // This batch's ended flows stay until the next batch, for their records (written after it).
  for (const FlowRecordOut& f : b.flow_records) gone_flows_.push_back(f.rec.flow_id);
  host_time("events handled", clock);
  packets_to_modules(b, out);
  host_time("packets to modules", clock);
  account_verdicts(b, out);
  if (stream_modules_) prev_flows_.assign(b.flow_records.begin(), b.flow_records.end());
  host_time("verdicts counted", clock);
}

void ModuleSet::packets_to_modules(const PacketBatch& b, ModuleOutput& out) {
  std::vector<ModuleInstance*> want;
  for (const auto& m : mods_)
    if (m->wants_packets()) want.push_back(m.get());
  if (want.empty()) return;
  DecodedPacket d;
  for (uint32_t i = 0; i < b.count; ++i) {
    const uint64_t off = b.h_rec_off[i];
    decode_packet(b, i, d);
    const RecordHeader rh = read_record_header(b.h_span + off, b.fmt);
    HostPacket hp{b.packet_number(i), d.ts_ns[0], b.h_span + off + kRecordHeaderBytes, rh.cap_len, rh.wire_len, &d, 0,
                  false};
    hp.verdict = b.h_verdict[i];
    for (ModuleInstance* m : want) m->on_packet(hp, out);
  }
  for (ModuleInstance* m : want) m->on_packets_end();
}

void ModuleSet::finish_flush(const std::vector<ModuleEvent>& events, const std::vector<uint64_t>& module_counts,
                             const std::vector<FlowRecordOut>& flows, ModuleOutput& out,
                             const std::vector<StreamChunk>& chunks, std::span<const uint8_t> bytes) {
  add_counts(module_counts);
  app_logs_.clear();
  sorted_.assign(events.begin(), events.end());
  app_events(chunks, bytes);
  sort_events(sorted_);
  const auto flow_only = std::find_if(sorted_.cbegin(), sorted_.cend(),
                                      [](const ModuleEvent& e) { return e.packet == kNoPacket; });
  unattributed_ += uint64_t(flow_only - sorted_.cbegin());  // no batch for a packet index to point into
  hand_flow_only(flow_only, sorted_.cend(), flows, out);
  forget_app_flows(flows, out);
}

size_t ModuleSet::KeyHash::operator()(const FlowKey& k) const { return flow_key_hash(k); }
bool ModuleSet::KeyEq::operator()(const FlowKey& a, const FlowKey& b) const { return flow_key_eq(a, b); }

// The flow key of a decoded packet (false: it has none), and whether it came from endpoint 0.
bool ModuleSet::dropped_flow_key(DecodedPacket& d, FlowKey& k, bool& from_lo) const {
  DecodedView one;  // the packet as a one-packet view
#define GASPP_X(type, name, n) one.name = d.name;
  GASPP_DECODED_FIELDS(GASPP_X)
#undef GASPP_X
  return flow_key_of(one, 0, vlan_in_key_, defrag_, k, from_lo) == FlowSkip::none;
}

void ModuleSet::remember_dropped_flow(DecodedPacket& d, uint64_t flow_id, bool to_client) {
  FlowKey k{};
  bool from_lo = false;
  if (!dropped_flow_key(d, k, from_lo)) return;
  if (dropped_flows_.size() >= dropped_flows_max_ && !dropped_flows_.count(k)) {
    forgotten_ += dropped_flows_.size();
    dropped_flows_.clear();
  }
  dropped_flows_[k] = DroppedFlow{flow_id, from_lo != to_client};
}

void ModuleSet::recall_dropped_flow(DecodedPacket& d, uint64_t& flow_id, bool& to_client) {
  FlowKey k{};
  bool from_lo = false;
  if (!dropped_flow_key(d, k, from_lo)) return;
  const auto it = dropped_flows_.find(k);
  if (it == dropped_flows_.end()) return;
  flow_id = it->second.flow_id;
  to_client = from_lo != it->second.initiator_lo;
  ++recalled_;
}

void ModuleSet::Late::drop(const HostPacket& p, bool flow, Reason why) {
  ModuleSet& m = set_;
  if (!m.late_batch_ || !p.number) return;  // no packet of a batch to drop
  const PacketBatch& b = *m.late_batch_;
  const uint32_t i = m.late_packet_;
  if (!(b.h_verdict[i] & kVerdictDrop)) {
    b.h_verdict[i] |= kVerdictDrop;
    m.late_packets_.emplace_back(i, uint8_t(why));
    ++m.late_n_.packets;
  }
  if (!flow || !p.flow_id || m.late_ids_.count(p.flow_id)) return;
  FlowKey k{};
  bool from_lo = false;
  if (!m.late_decoded_ || !m.dropped_flow_key(*m.late_decoded_, k, from_lo)) return;
  if (m.late_ids_.size() >= kLateFlowsMax) {
    ++m.late_n_.flows_full;  // the packet is dropped; its flow's later packets are not
    return;
  }
  m.late_ids_.emplace(p.flow_id, LateDrop{p.number, k});
  m.late_keys_[k] = p.flow_id;
  ++m.late_n_.flows;
}

void ModuleSet::Late::reject(const HostPacket& p, uint8_t dirs) {
  ModuleSet& m = set_;
  if (!m.late_batch_ || !p.number || !dirs) return;
  const uint32_t i = m.late_packet_;
  // Events come by packet: a packet's second reject rule adds its directions to the first's.
  if (!m.rejects_.empty() && m.rejects_.back().first == i) m.rejects_.back().second |= dirs;
  else m.rejects_.emplace_back(i, dirs);
}

void ModuleSet::Late::pass_flow(const HostPacket& p) {
  ModuleSet& m = set_;
  if (!p.flow_id || !p.number || m.late_ids_.count(p.flow_id) || m.late_pass_.count(p.flow_id)) return;
  if (m.late_pass_.size() >= kLateFlowsMax) {
    ++m.late_n_.flows_full;
    return;
  }
  m.late_pass_.emplace(p.flow_id, p.number);
  ++m.late_n_.passed_flows;
}

void ModuleSet::Late::alerted(const HostPacket& p) {
  ModuleSet& m = set_;
  if (!p.flow_id || m.late_alerted_.count(p.flow_id)) return;
  if (m.late_alerted_.size() >= kLateFlowsMax) {
    ++m.late_n_.flows_full;  // its flow event may say alerted: false
    return;
  }
  m.late_alerted_.insert(p.flow_id);
}

void ModuleSet::apply_late_drops(const PacketBatch& b) {
  if (late_keys_.empty()) return;
  // A flow that left the table in this batch ends at its record's last packet: a later packet
  // with its key starts another flow.
  std::unordered_map<uint64_t, uint64_t> ended;  // flow id → last packet time
  for (const FlowRecordOut& f : b.flow_records)
    if (late_ids_.count(f.rec.flow_id)) ended.emplace(f.rec.flow_id, f.rec.last_ts);
  DecodedPacket d;
  for (uint32_t i = 0; i < b.count; ++i) {
    if (b.h_verdict[i] & kVerdictFlowDecided) continue;  // the device decided its flow already
    decode_packet(b, i, d);
    FlowKey k{};
    bool from_lo = false;
    if (!dropped_flow_key(d, k, from_lo)) continue;
    const auto it = late_keys_.find(k);
    if (it == late_keys_.end() || b.packet_number(i) <= late_ids_.at(it->second).number) continue;
    const auto end = ended.find(it->second);
    if (end != ended.end() && d.ts_ns[0] > end->second) continue;
    b.h_verdict[i] = uint8_t(kVerdictDrop | kVerdictFlowDecided);
    ++late_n_.followers;
  }
}

void ModuleSet::late_forget() {
  for (const uint64_t id : late_ended_) {
    const auto it = late_ids_.find(id);
    if (it == late_ids_.end()) continue;
    const auto k = late_keys_.find(it->second.key);
    if (k != late_keys_.end() && k->second == id) late_keys_.erase(k);
    late_ids_.erase(it);
  }
  for (const uint64_t id : late_ended_) late_pass_.erase(id), late_alerted_.erase(id);
  late_ended_.clear();
}

void ModuleSet::late_ended(const std::vector<FlowRecordOut>& ended) {
  for (const FlowRecordOut& f : ended)
    if (late_ids_.count(f.rec.flow_id) || late_pass_.count(f.rec.flow_id) || late_alerted_.count(f.rec.flow_id))
      late_ended_.push_back(f.rec.flow_id);
}

void ModuleSet::decode_packet(const PacketBatch& b, uint32_t i, DecodedPacket& d) const {
  decode_on_host(b, i, defrag_, d);  // as the backend decoded it, with the host's events
}

}  // namespace gaspp
