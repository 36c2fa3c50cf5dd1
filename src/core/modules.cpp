// core/modules.cpp — ModuleOf<M>, the registry lookup and ModuleSet (see modules.hpp).
#include "core/modules.hpp"

#include <algorithm>
#include <stdexcept>

#include "core/engine_config.hpp"
#include "core/module_stage.hpp"
#include "gaspp/stream_hook.hpp"
#include "core/packet_batch.hpp"
#include "decode/decoder.hpp"
#include "flow/flow_table.hpp"
#include "modules/registry.hpp"
#include "core/eve_event.hpp"

namespace gaspp {
namespace {

template <class M>
class ModuleOf final : public ModuleInstance {
 public:
  ModuleOf(int type, const ModuleOptions& opt) : type_(type), host_(opt) {}
  const char* name() const override { return M::kName; }
  int type() const override { return type_; }
  // The host may narrow what the type declares (a firewall without http1 hooks reads no stream and
  // keeps no state): M::Host::layers() within M::kLayers, M::Host::flow_state_bytes() 0 or all.
  uint32_t layers() const override {
    if constexpr (requires { host_.layers(); }) return host_.layers() & M::kLayers;
    else return M::kLayers;
  }
  uint32_t flow_state_bytes() const override {
    if constexpr (requires { host_.flow_state_bytes(); })
      return host_.flow_state_bytes() ? module_flow_state_bytes<M>() : 0u;
    else return module_flow_state_bytes<M>();
  }
  bool default_drop() const override {
    if constexpr (requires { host_.default_drop(); }) return host_.default_drop();
    else return false;
  }
  bool changes_context() const override {
    if constexpr (requires { host_.changes_context(); }) return host_.changes_context();
    else if constexpr (requires { M::kChangesContext; }) return M::kChangesContext;
    else return true;
  }
  void upload(TableMemory& mem) override { view_ = host_.upload(mem); }
  const void* view() const override { return &view_; }
  size_t view_bytes() const override { return sizeof(view_); }
  bool has_stream_hook() const override { return HasOnStream<M> && (layers() & kLayerStream); }
  void run_cpu(const StageArgs& a, uint32_t begin, uint32_t end, unsigned long long* counts) const override {
    for (uint32_t k = begin; k < end; ++k) module_stage_packet<M>(a, view_, k, counts);
  }
  void on_event(const ModuleEvent& e, const HostPacket& p, ModuleOutput& out) override { host_.on_event(e, p, out); }
  void report(std::map<std::string, uint64_t>& r) const override { host_.report(r); }

 private:
  int type_;
  typename M::Host host_;
  typename M::View view_{};
};

}  // namespace

const char* module_counter_name(int c) {
  static const char* const names[] = {
#define GASPP_X(id, name) name,
      GASPP_MODULE_COUNTERS(GASPP_X)
#undef GASPP_X
  };
  return c >= 0 && c < kModuleCounters ? names[c] : "?";
}

std::unique_ptr<ModuleInstance> make_module(const std::string& name, const ModuleOptions& opt) {
  int type = 0;
  std::unique_ptr<ModuleInstance> m;
#define GASPP_X(M)                                                   \
  if (!m && name == M::kName) m = std::make_unique<ModuleOf<M>>(type, opt); \
  ++type;
  GASPP_MODULE_TYPES(GASPP_X)
#undef GASPP_X
  if (!m) {
    std::string all;
    for (auto& n : module_names()) all += (all.empty() ? "" : ", ") + n;
    throw std::invalid_argument("unknown module '" + name + "' (modules: " + all + ")");
  }
  return m;
}

std::vector<std::string> module_names() {
  std::vector<std::string> v;
#define GASPP_X(M) v.push_back(M::kName);
  GASPP_MODULE_TYPES(GASPP_X)
#undef GASPP_X
  return v;
}

void ModuleSet::add(std::unique_ptr<ModuleInstance> m) {
  m->index = uint16_t(mods_.size());
  m->state_off = state_bytes_;
  state_bytes_ += (m->flow_state_bytes() + 15) & ~15u;
  stream_modules_ = stream_modules_ || m->has_stream_hook();
  mods_.push_back(std::move(m));
  counts_.push_back(Counts{});
}

std::vector<ModuleInstance*> ModuleSet::pointers() const {
  std::vector<ModuleInstance*> v;
  for (auto& m : mods_) v.push_back(m.get());
  return v;
}

bool ModuleSet::firewall_mode() const {
  for (const auto& m : mods_)
    if (m->default_drop()) return true;
  return false;
}

namespace {

const char* drop_reason_name(uint32_t r) {
  switch (r) {
    case kDropReasonRules: return "rules";
    case kDropReasonDefaultPacketPolicy: return "default_packet_policy";
    case kDropReasonDefaultAppPolicy: return "default_app_policy";
    default: return "flow_drop";
  }
}

// A drop event's `reason` as Suricata writes it (PacketDropReasonToString: words, not the stats'
// key): "rules", "flow drop", "stream error", "default packet policy", ...
std::string drop_event_reason(const char* stats_key) {
  std::string s = stats_key;
  for (char& ch : s)
    if (ch == '_') ch = ' ';
  return s;
}

// An EVE `drop` event for a dropped packet, with the fields Suricata's drop log writes: from the IP
// header (IPv4: total length, tos, ttl, id; IPv6: payload length, traffic class, hop limit, flow
// label) and the transport (TCP: sequence, ack, window, flags, reserved bits, urgent pointer; UDP:
// length; ICMP/ICMPv6 echo: id and sequence), read from the frame where it holds them.
std::string drop_event_json(const HostPacket& hp, const std::string& reason) {
  const DecodedPacket& d = *static_cast<const DecodedPacket*>(hp.decoded);
  auto u = [](uint64_t v) { return std::to_string(v); };
  const uint8_t* f = hp.frame;
  const uint32_t cap = hp.cap_len;
  auto have = [&](uint32_t off, uint32_t n) { return off != kNoOffset && off + n <= cap; };
  auto be16 = [&](uint32_t off) { return uint32_t(f[off]) << 8 | f[off + 1]; };
  std::string j = eve_packet_head(hp, "drop");
  j += ",\"drop\":{";
  const uint32_t l3 = d.l3_off[0], l4 = d.l4_off[0];
  if (d.l3[0] == uint8_t(L3::ipv4) && have(l3, 20)) {
    j += "\"len\":" + u(be16(l3 + 2)) + ",\"tos\":" + u(f[l3 + 1]) + ",\"ttl\":" + u(f[l3 + 8]) + ",\"ipid\":" + u(be16(l3 + 4)) + ",";
  } else if (d.l3[0] == uint8_t(L3::ipv6) && have(l3, 40)) {
    j += "\"len\":" + u(be16(l3 + 4)) + ",\"tc\":" + u(uint32_t(f[l3] & 0x0f) << 4 | f[l3 + 1] >> 4) +
         ",\"hoplimit\":" + u(f[l3 + 7]) + ",\"flowlbl\":" + u(uint32_t(f[l3 + 1] & 0x0f) << 16 | be16(l3 + 2)) + ",";
  }
  if (d.l4[0] == uint8_t(L4::tcp) && have(l4, 20)) {
    const uint16_t fl = d.tcp_flags[0];
    auto b = [](bool x) { return x ? "true" : "false"; };
    j += "\"tcpseq\":" + u(d.tcp_seq[0]) + ",\"tcpack\":" + u(d.tcp_ack[0]) + ",\"tcpwin\":" + u(d.tcp_win[0]) +
         ",\"syn\":" + b(fl & kTcpSyn) + ",\"ack\":" + b(fl & kTcpAck) + ",\"psh\":" + b(fl & kTcpPsh) +
         ",\"rst\":" + b(fl & kTcpRst) + ",\"urg\":" + b(fl & kTcpUrg) + ",\"fin\":" + b(fl & kTcpFin) +
         ",\"tcpres\":" + u(f[l4 + 12] & 0x0f) + ",\"tcpurgp\":" + u(be16(l4 + 18)) + ",";
  } else if (d.l4[0] == uint8_t(L4::udp) && have(l4, 8)) {
    j += "\"udplen\":" + u(be16(l4 + 4)) + ",";
  } else if ((d.l4[0] == uint8_t(L4::icmp) || d.l4[0] == uint8_t(L4::icmpv6)) && have(l4, 8)) {
    const uint8_t t = d.icmp_type[0];
    const bool echo = t == 0 || t == 8 || t == 128 || t == 129;
    j += "\"icmp_id\":" + u(echo ? be16(l4 + 4) : 0) + ",\"icmp_seq\":" + u(echo ? be16(l4 + 6) : 0) + ",";
  }
  j += std::string("\"reason\":\"") + reason + "\"}}";
  return j;
}

}  // namespace

nlohmann::ordered_json ModuleSet::verdict_stats_json() const {
  nlohmann::ordered_json j;
  j["ips"] = {{"accepted", vs_.ips_accepted},
              {"blocked", vs_.ips_blocked},
              {"drop_reason",
               {{"rules", vs_.ips_rules},
                {"flow_drop", vs_.ips_flow_drop},
                {"stream_error", vs_.ips_stream_error},
                {"stream_urgent", vs_.ips_stream_urgent},
                {"flow_memcap", vs_.ips_flow_memcap}}}};
  if (!firewall_mode()) return j;
  auto& fw = j["firewall"];
  fw = {{"accepted", vs_.fw_accepted}, {"blocked", vs_.fw_blocked}};
  for (uint32_t r = 1; r <= VerdictStats::kFlowDrop; ++r) fw["drop_reason"][drop_reason_name(r)] = vs_.reason[r];
  return j;
}

namespace {

// Capture order (packet), then flow, module, kind, value and direction: a total order, so both
// backends hand events over alike. Events with no packet (kNoPacket) come last, by flow.
void sort_events(std::vector<ModuleEvent>& ev) {
  std::sort(ev.begin(), ev.end(), [](const ModuleEvent& x, const ModuleEvent& y) {
    if (x.packet != y.packet) return x.packet < y.packet;
    if (x.flow_id != y.flow_id) return x.flow_id < y.flow_id;
    if (x.module != y.module) return x.module < y.module;
    if (x.kind != y.kind) return x.kind < y.kind;
    if (x.value != y.value) return x.value < y.value;
    return x.to_client < y.to_client;
  });
}

}  // namespace

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
    const auto it = index.find(e->flow_id);
    if (it == index.end() || e->module >= mods_.size()) {
      ++unattributed_;
      continue;
    }
    const FlowRecord& r = *it->second;
    const HostPacket hp{0, r.last_ts, nullptr, 0, 0, nullptr, e->flow_id, e->to_client != 0, &r};
    ++flow_only_;
    mods_[e->module]->on_event(*e, hp, out);
  }
}

void ModuleSet::finish_batch(const PacketBatch& b, ModuleOutput& out) {
  add_counts(b.module_counts);
  sorted_.assign(b.events.begin(), b.events.end());
  sort_events(sorted_);
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
    if (e.packet >= b.count || e.module >= mods_.size()) {
      ++unattributed_;
      continue;
    }
    if (b.h_verdict[e.packet] & kVerdictFlowDecided) {
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
    // The flow's counters at an alerted packet, when the verdict walk worked them out.
    const FlowCountsAt* fc = b.h_pkt_counts ? &b.h_pkt_counts[e.packet] : nullptr;
    hp.flow_counts = e.flow_id && fc && (b.h_verdict[e.packet] & kVerdictAlerted) && fc->first_ts ? fc : nullptr;
    mods_[e.module]->on_event(e, hp, out);
  }
  hand_flow_only(flow_only, sorted_.cend(), b.flow_records, out);
  account_verdicts(b, out);
  if (stream_modules_) prev_flows_.assign(b.flow_records.begin(), b.flow_records.end());
}

void ModuleSet::finish_flush(const std::vector<ModuleEvent>& events, const std::vector<uint64_t>& module_counts,
                             const std::vector<FlowRecordOut>& flows, ModuleOutput& out) {
  add_counts(module_counts);
  sorted_.assign(events.begin(), events.end());
  sort_events(sorted_);
  const auto flow_only = std::find_if(sorted_.cbegin(), sorted_.cend(),
                                      [](const ModuleEvent& e) { return e.packet == kNoPacket; });
  unattributed_ += uint64_t(flow_only - sorted_.cbegin());  // no batch for a packet index to point into
  hand_flow_only(flow_only, sorted_.cend(), flows, out);
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

void ModuleSet::decode_packet(const PacketBatch& b, uint32_t i, DecodedPacket& d) const {
  const uint64_t off = b.h_rec_off[i];
  decode_record(b.h_span + off, b.span_len - off, b.fmt, b.link, d);
  if (defrag_) fragment_to_l3(d);  // as the backend decoded it
}

void ModuleSet::account_verdicts(const PacketBatch& b, ModuleOutput& out) {
  const bool fw = firewall_mode();
  size_t ev = 0;  // sorted_ is in packet order
  DecodedPacket d;
  // The verdict counters count the capture's records. A fragment and the datagram it completed
  // (PacketBatch::reassembled, right after it) are counted once, at the datagram: dropped when
  // either was, for the reason of the one that was (the fragment's first).
  struct Outcome {
    bool drop, stream_error, stream_urgent, memcap, by_flow, fw_event;
    uint32_t reason;
  };
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
      ++(o.by_flow ? vs_.ips_flow_drop : vs_.ips_rules);
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
    const Outcome o{drop, stream_error, stream_urgent, memcap, by_flow, fw_event, reason};
    if (i + 1 < b.count && b.is_reassembled(i + 1)) fragment = o;  // counted with its datagram
    else if (b.is_reassembled(i)) count(fragment.drop || !drop ? fragment : o);
    else count(o);
    if (drop && drop_events_) {
      const RecordHeader rh = read_record_header(b.h_span + off, b.fmt);
      if (flow_id) remember_dropped_flow(d, flow_id, to_client);
      else if (by_flow) recall_dropped_flow(d, flow_id, to_client);
      const HostPacket hp{b.packet_number(i), d.ts_ns[0], b.h_span + off + kRecordHeaderBytes, rh.cap_len,
                          rh.wire_len, &d, flow_id, to_client};
      out.eve(drop_event_json(hp, drop_event_reason(memcap ? "flow_memcap" : stream_error ? "stream_error"
                                                           : stream_urgent ? "stream_urgent" : drop_reason_name(reason))));
    }
  }
}

std::string ModuleSet::summary_text() const {
  std::string s;
  for (size_t k = 0; k < mods_.size(); ++k) {
    s += "module " + std::to_string(k) + " " + mods_[k]->name() + ":";
    for (int c = 0; c < kModuleCounters; ++c)
      if (counts_[k][size_t(c)] || c == mc_packets) s += std::string(" ") + module_counter_name(c) + "=" + std::to_string(counts_[k][size_t(c)]);
    std::map<std::string, uint64_t> r;
    mods_[k]->report(r);
    for (auto& [n, v] : r) s += " " + n + "=" + std::to_string(v);
    s += "\n";
  }
  if (suppressed_) s += "module events discarded (flow already decided): " + std::to_string(suppressed_) + "\n";
  if (flow_only_) s += "module events with no packet, handed over with their flow: " + std::to_string(flow_only_) + "\n";
  if (unattributed_) s += "module events whose packet or flow was not found (not handed over): " + std::to_string(unattributed_) + "\n";
  if (recalled_ || forgotten_)
    s += "drop events given their flow's id: " + std::to_string(recalled_) + " (dropped flows forgotten, memory full: " +
         std::to_string(forgotten_) + ")\n";
  return s;
}

nlohmann::ordered_json ModuleSet::summary_json() const {
  nlohmann::ordered_json j = verdict_stats_json();
  j["events_suppressed"] = suppressed_;
  j["events_flow_only"] = flow_only_;
  j["events_unattributed"] = unattributed_;
  j["drop_flow_ids_recalled"] = recalled_;
  j["dropped_flows_forgotten"] = forgotten_;
  auto& list = j["modules"];
  list = nlohmann::ordered_json::array();
  for (size_t k = 0; k < mods_.size(); ++k) {
    nlohmann::ordered_json m;
    m["name"] = mods_[k]->name();
    for (int c = 0; c < kModuleCounters; ++c) m[module_counter_name(c)] = counts_[k][size_t(c)];
    std::map<std::string, uint64_t> r;
    mods_[k]->report(r);
    for (auto& [n, v] : r) m[n] = v;
    list.push_back(std::move(m));
  }
  return j;
}

StreamHooks stream_hooks_of(const std::vector<ModuleInstance*>& mods, TableMemory* mem) {
  StreamHooks h{};
  for (size_t k = 0; k < mods.size(); ++k) {
    const ModuleInstance& m = *mods[k];
    if (!m.has_stream_hook()) continue;
    if (h.n == kMaxStreamModules)
      throw std::invalid_argument("more than " + std::to_string(kMaxStreamModules) + " modules with on_stream");
    h.type[h.n] = uint16_t(m.type());
    h.module[h.n] = uint16_t(k);
    h.state_off[h.n] = m.state_off;
    h.view[h.n] = mem ? mem->place(m.view(), m.view_bytes()) : m.view();
    ++h.n;
  }
  return h;
}

std::vector<uint16_t> flat_class_orders(const BackendConfig& c) {
  const size_t m = c.modules.size();
  std::vector<uint16_t> flat;
  if (c.class_orders.empty()) {
    for (size_t k = 0; k < m; ++k) flat.push_back(uint16_t(k));
    return flat;
  }
  if (m == 0) throw std::invalid_argument("classes need modules to order");
  for (const auto& order : c.class_orders) {
    std::vector<uint16_t> sorted(order);
    std::sort(sorted.begin(), sorted.end());
    for (size_t k = 0; k < sorted.size(); ++k)
      if (sorted.size() != m || sorted[k] != k)
        throw std::invalid_argument("a class order must name every module once (0.." + std::to_string(m - 1) + ")");
    flat.insert(flat.end(), order.begin(), order.end());
  }
  return flat;
}

bool stage_runs_module(const std::vector<uint16_t>& class_order, uint16_t classes, uint16_t st, uint16_t k) {
  const size_t modules = classes ? class_order.size() / classes : 0;
  for (uint16_t c = 0; c < classes; ++c)
    if (class_order[size_t(c) * modules + st] == k) return true;
  return false;
}

bool regroup_after_stage(const std::vector<ModuleInstance*>& mods, const std::vector<uint16_t>& class_order,
                         uint16_t classes, uint16_t st) {
  return classes > 1 || mods[class_order[st]]->changes_context();
}

bool payload_unread(const BackendConfig& c) {
  if (c.flow.enabled && c.stream.enabled) return false;
  if (c.validate_checksums) return false;
  for (const ModuleInstance* m : c.modules)
    if (m->layers() & (kLayerPayload | kLayerStream)) return false;
  return true;
}

}  // namespace gaspp
