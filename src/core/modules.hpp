// core/modules.hpp — the modules of a pipeline on the host: creation by name, their order, their
// per-flow state layout, and what happens after each batch (host handlers, counters).
//
// ModuleInstance is a module type behind a virtual interface (ModuleOf<M> in modules.cpp): the
// backends ask it for its View (after upload) and run its stage: the CPU backend through
// run_cpu(), the CUDA backend by launching module_stage_kernel<M> for the instance's type()
// (backend/cuda). ModuleSet owns the instances of one pipeline, in order, and gives each its
// position and its 16-byte-aligned slice of the per-flow module state.
//
// After a batch, ModuleSet::finish_batch() hands each module its events and to_host packets in
// capture order (then module order, then value), re-decoding the packet on the host. Events of
// packets whose verdict came from their flow's earlier decision are discarded and counted
// (events_suppressed). Events with no packet (stream pieces of a flow that left the table, flushed
// by the next walk) are handed over flow-only (HostPacket::flow, see kNoPacket) after the batch's
// packet events, and so are, through finish_flush(), those raised on the data flushed at the end
// of the run; both are counted (events_flow_only), and an event whose packet or flow is not found
// is counted (events_unattributed) and not handed over. Per-module counters are summed over the
// run.
//
// Example:
//   ModuleSet mods;
//   mods.add(make_module("firewall", {{"rules", "drop.rules"}}));
//   cfg.flow.module_state_bytes = mods.flow_state_bytes();
//   cfg.modules = mods.pointers();
//   ... run_capture(..., [&](const PacketBatch& b) { mods.finish_batch(b, out); });
#pragma once
#include <nlohmann/json.hpp>
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <span>
#include <vector>

#include "applayer/app_layer.hpp"
#include "core/app_shards.hpp"
#include "flow/flow_record.hpp"
#include "gaspp/module.hpp"
#include "gaspp/stream_chunk.hpp"

namespace gaspp {

struct PacketBatch;
struct DecodedPacket;

class ModuleInstance {
 public:
  virtual ~ModuleInstance() = default;
  virtual const char* name() const = 0;
  virtual int type() const = 0;                // position of its type in GASPP_MODULE_TYPES
  virtual uint32_t layers() const = 0;
  virtual uint32_t flow_state_bytes() const = 0;
  // Whether its hooks may return another context key than they got (M::Host::changes_context(), or
  // M::kChangesContext, else true). Scheduling regroups packets only after a stage that may.
  virtual bool changes_context() const = 0;
  virtual void upload(TableMemory& mem) = 0;   // builds the View where the backend runs
  virtual const void* view() const = 0;        // the M::View (valid after upload)
  virtual size_t view_bytes() const = 0;
  virtual bool has_stream_hook() const = 0;    // M::on_stream or on_stream_bulk exists and layers() has kLayerStream
  virtual bool stream_bulk() const = 0;        // it is on_stream_bulk
  // Firewall mode: packets no rule accepts are dropped (M::Host::default_drop()). Its drops carry a
  // kEventDropReason; with one such module the stats gain a `firewall` section.
  virtual bool default_drop() const = 0;
  virtual void run_cpu(const StageArgs& a, uint32_t begin, uint32_t end, unsigned long long* counts) const = 0;
  virtual bool has_ip_retry() const = 0;      // M::on_ip_retry exists (Packet::retry)
  // The retry pass over entries [begin, end) of a.retry.
  virtual void run_cpu_retry(const StageArgs& a, uint32_t begin, uint32_t end, unsigned long long* counts) const = 0;
  virtual void on_event(const ModuleEvent& e, const HostPacket& p, ModuleOutput& out) = 0;
  virtual void report(std::map<std::string, uint64_t>& r) const = 0;
  // The application layer (applayer/app_layer.hpp): M::Host::wants_app_layer() and
  // on_app(updates, events, worker) — the module's host side inspects transactions and raises
  // events (their module field is set by ModuleSet), handled with the batch's others. Each
  // update's transaction is as it was after the update's packet (a flow's later chunks are parsed
  // after the call). on_app runs on several threads at once (core/app_shards.hpp), each call with
  // the updates of flows no other call has, worker < the n of set_app_workers(n) (called before the run) telling the
  // calls of one batch apart; after a batch's calls, on_app_end() runs on the calling thread
  // (to merge what the workers kept apart).
  virtual bool wants_app_layer() const = 0;
  // Whether the module reads the flow as each packet left it (Packet::flow_pos,
  // StreamPiece::flow_pos; M::Host::wants_flow_positions()): the walk then writes a FlowPosAt per
  // packet, which costs it a store a packet.
  virtual bool wants_flow_positions() const = 0;
  // What the module needs of the parsers beyond their defaults (M::Host::amend_app_layer(c), as
  // the email.body_md5 signatures need each mail's body hashed); applied wherever the application
  // layer starts.
  virtual void amend_app_layer(AppLayerConfig& c) const = 0;
  virtual void set_app_workers(int n) = 0;
  virtual void on_app(std::span<const AppUpdate> updates, std::vector<ModuleEvent>& out, int worker) = 0;
  virtual void on_app_end() = 0;
  // Packet `packet` of the batch raised decoder events on the host (PacketBatch::host_events; d is
  // the packet decoded, those events in d.events), which its device pass did not see: the module
  // adds the events of what they match to `out` (its position in the pipeline: `module`).
  virtual void on_host_events(uint32_t packet, const DecodedPacket& d, uint16_t module, std::vector<ModuleEvent>& out) = 0;
  // Every packet of the batch on the host, in capture order, after its events were handled
  // (M::Host::wants_packets(), on_packet(), on_packets_end()): for state that follows packets the
  // module raised no event on (the detect module's tags). Asked again each batch; while it says
  // no, nothing is decoded for it. p.flow_id is 0: the host does not know a packet's flow.
  virtual bool wants_packets() const = 0;
  virtual void on_packet(const HostPacket& p, ModuleOutput& out) = 0;
  virtual void on_packets_end() = 0;
  // Flows that left the flow table a batch ago (their records written since): the module drops
  // what it kept of them (M::Host::on_flows_gone(ids)).
  virtual void on_flows_gone(const std::vector<uint64_t>& flow_ids) = 0;
  // What the module keeps of a flow for EVE, as members to append to an event of the flow
  // (M::Host::flow_eve_json(id): `,"metadata":{...}`, `,"traffic":{...}`), empty for none.
  virtual std::string flow_eve_json(uint64_t flow_id) const = 0;
  uint16_t index = 0;       // position in the pipeline
  uint32_t state_off = 0;   // its slice of the per-flow module state
};

// The stream modules of a pipeline for the flow walk (gaspp/stream_hook.hpp): their types,
// positions, state slices and views; with `mem`, each View is copied there (device memory for
// CUDA), else the walk reads the instance's own. The per-batch fields (verdict, events, counts,
// table) are left for the backend. Throws std::invalid_argument beyond kMaxStreamModules.
StreamHooks stream_hooks_of(const std::vector<ModuleInstance*>& mods, TableMemory* mem);

// Stage planning, the same on both backends. class_order is classes x modules (flat_class_orders).
// Whether some class runs module k at stage st:
bool stage_runs_module(const std::vector<uint16_t>& class_order, uint16_t classes, uint16_t st, uint16_t k);
// Whether scheduling regroups packets after stage st: with classes always (the next module differs
// by class), else when the stage's module may change context keys (see BackendConfig::schedule).
bool regroup_after_stage(const std::vector<ModuleInstance*>& mods, const std::vector<uint16_t>& class_order,
                         uint16_t classes, uint16_t st);

// Creates a module by name with its options; throws std::invalid_argument (unknown name, bad option).
std::unique_ptr<ModuleInstance> make_module(const std::string& name, const ModuleOptions& opt);
std::vector<std::string> module_names();

class ModuleSet : public FlowEveVars {
 public:
  void add(std::unique_ptr<ModuleInstance> m);
  bool empty() const { return mods_.empty(); }
  size_t size() const { return mods_.size(); }
  uint32_t flow_state_bytes() const { return state_bytes_; }
  std::vector<ModuleInstance*> pointers() const;
  ModuleInstance& at(size_t k) { return *mods_[k]; }

  // Hands the batch's events to the modules (capture order), counts every packet's final verdict
  // (verdict_stats) and, with drop events on, writes an EVE `drop` event per dropped packet.
  void finish_batch(const PacketBatch& b, ModuleOutput& out);
  // At the end of the run: hands over what stream modules raised on the data flushed then
  // (StreamFlushModules: events, counters), flow-only, with the flows still open then (`flows`,
  // Backend::flush_flows), and adds the counters. See pipeline.hpp's FlushCallback.
  // chunks, bytes: the reassembled data flushed then, for the application layer.
  void finish_flush(const std::vector<ModuleEvent>& events, const std::vector<uint64_t>& module_counts,
                    const std::vector<FlowRecordOut>& flows, ModuleOutput& out,
                    const std::vector<StreamChunk>& chunks = {}, std::span<const uint8_t> bytes = {});
  // Some module inspects application-layer transactions: the pipeline must gather stream data
  // (RunOptions::want_streams) and the batch's chunks go through the application layer.
  bool wants_app_layer() const { return app_ != nullptr; }
  // The application layer's limits (before the run, after the modules are added).
  // on: run it even when no module asks for it (gaspp --app-layer). When it runs, the app-udp
  // module (modules/app_udp) is put first, to bring its UDP datagrams to the host.
  // threads: the host threads it and the modules' on_app run on (core/app_shards.hpp), 0 = all.
  void set_app_layer_config(const AppLayerConfig& c, bool on = false, int threads = 0);
  // Write an EVE `http` event per transaction (core/app_eve.hpp) through the module output.
  void set_app_log(bool on) { app_log_ = on; }
  // With the app log on: EVE anomaly events of type applayer for the transactions' app-layer events.
  void set_app_anomalies(bool on) { app_anomalies_ = on; }
  // Time the host's share of each batch (gaspp --stage-times): each phase of finish_batch and
  // finish_flush, summed over the batches that ran it, in the order the phases first ran.
  struct HostTime {
    const char* name;
    uint64_t ns = 0, batches = 0, max_ns = 0;  // max_ns: the slowest batch's
  };
  // The last finished batch's packets that reject rules decided: (packet, RejectDirs), by packet;
  // the inline forwarder answers them (output/reject_packet.hpp).
  const std::vector<std::pair<uint32_t, uint8_t>>& rejects() const { return rejects_; }
  void set_host_times(bool on) { host_times_on_ = on; }
  const std::vector<HostTime>& host_times() const { return host_times_; }
  // The flow's app_proto for its EVE flow record (eve.hpp), null when the application layer is off
  // or saw no data of the flow.
  const char* app_proto_of(uint64_t flow_id) const {
    if (!app_) return nullptr;
    const AppProto p = app_->proto(flow_id);
    return p == AppProto::unknown ? nullptr : app_proto_name(p);
  }
  // The protocol a CONNECT tunnel's flow began with (its EVE flow record's app_proto_orig), null
  // without one.
  // What the modules keep of a flow for its EVE events (ModuleInstance::flow_eve_json), in their order.
  std::string flow_eve_json(uint64_t flow_id) const override {
    std::string j;
    for (const auto& m : mods_) j += m->flow_eve_json(flow_id);
    return j;
  }
  const char* app_proto_orig_of(uint64_t flow_id) const {
    if (!app_) return nullptr;
    const AppProto p = app_->proto_orig(flow_id);
    return p == AppProto::unknown ? nullptr : app_proto_name(p);
  }
  // As of the batch's packet (HostPacket::app_proto of an event's packet).
  const char* app_proto_at(uint64_t flow_id, uint32_t packet) const {
    if (!app_ || !flow_id) return nullptr;
    const AppProto p = app_->proto_at(flow_id, packet);
    return p == AppProto::unknown ? nullptr : app_proto_name(p);
  }
  // vlan_in_key, defrag: as the flow table's (FlowConfig), so that a drop event of a packet its
  // flow's earlier decision dropped finds the flow (see dropped_flows_).
  void set_drop_events(bool on, bool vlan_in_key = true, bool defrag = true, bool ether = false) {
    drop_events_ = on;
    drop_ether_ = ether;
    vlan_in_key_ = vlan_in_key;
    defrag_ = defrag;
  }
  // Drop events whose flow id was recalled, and flows forgotten when the memory was full.
  uint64_t drop_flow_ids_recalled() const { return recalled_; }
  uint64_t dropped_flows_forgotten() const { return forgotten_; }
  // How many dropped flows the memory below holds (default kDroppedFlowsDefault); at least 1.
  static constexpr size_t kDroppedFlowsDefault = 1u << 20;
  void set_dropped_flows_max(size_t n) { dropped_flows_max_ = n ? n : 1; }
  // The stream urgent policy (or its out-of-band limit policy) is drop: a stream-error drop of a
  // segment with URG set is Suricata's "stream urgent" (ips.drop_reason.stream_urgent).
  void set_urgent_drop(bool on) { urgent_drop_ = on; }
  // A module runs in firewall mode (default drop): drops then count under `firewall`.
  bool firewall_mode() const;

  // Final verdicts, Suricata's IPS/firewall accounting: in firewall mode a packet the firewall
  // dropped (a kEventDropReason drop, or a drop by its flow's earlier decision: flow_drop) counts
  // under firewall.blocked with its reason, any other packet under firewall.accepted and then
  // ips.accepted or ips.blocked; without firewall mode every packet counts under ips.
  struct VerdictStats {
    uint64_t ips_accepted = 0, ips_blocked = 0, fw_accepted = 0, fw_blocked = 0;
    static constexpr uint32_t kFlowDrop = 4;  // reason[] slot past the DropReasons: the flow's decision
    uint64_t reason[kFlowDrop + 1] = {};      // DropReason 1..3, and flow_drop (firewall mode); ips: ips_*
    uint64_t ips_flow_drop = 0, ips_rules = 0, ips_stream_error = 0, ips_stream_urgent = 0, ips_flow_memcap = 0;
    uint64_t ips_threshold = 0;  // a rate_filter's new_action dropped it (late, on the host)
  };
  const VerdictStats& verdict_stats() const { return vs_; }
  // The stats as EVE/JSON members: "ips":{...}[,"firewall":{...}] (no braces around the two).
  nlohmann::ordered_json verdict_stats_json() const;

  // Late drops (LateVerdicts): a flow a host handler dropped, for its EVE flow record's action.
  // Counters: packets a handler dropped, flows it dropped, later packets of those flows dropped
  // here, flows not remembered (more than kLateFlowsMax at once: their later packets pass).
  bool late_dropped(uint64_t flow_id) const { return late_ids_.count(flow_id) != 0; }
  bool late_passed(uint64_t flow_id) const { return late_pass_.count(flow_id) != 0; }
  // A handler alerted on the flow (LateVerdicts::alerted); remembered as the late decisions are.
  bool late_alerted(uint64_t flow_id) const { return late_alerted_.count(flow_id) != 0; }
  struct LateCounts {
    uint64_t packets = 0, flows = 0, followers = 0, flows_full = 0;
    uint64_t passed_flows = 0;  // flows a handler passed (their later module events void)
  };
  const LateCounts& late_counts() const { return late_n_; }
  static constexpr size_t kLateFlowsMax = 1u << 20;  // the flow table's default capacity

  using Counts = std::array<uint64_t, kModuleCounters>;
  const std::vector<Counts>& counts() const { return counts_; }
  uint64_t events_suppressed() const { return suppressed_; }
  uint64_t events_flow_only() const { return flow_only_; }
  uint64_t events_unattributed() const { return unattributed_; }
  // Summary lines (text) and a JSON object: per module, its counters and report().
  std::string summary_text() const;
  nlohmann::ordered_json summary_json() const;

 private:
  void account_verdicts(const PacketBatch& b, ModuleOutput& out);
  // Runs the chunks through the application layer and appends the modules' events on them; b:
  // the batch whose packets delivered them (gives each update its packet's time), or null.
  void app_events(const std::vector<StreamChunk>& chunks, std::span<const uint8_t> bytes, const PacketBatch* b = nullptr);
  // Starts the application layer (threads: AppShards') with c as the modules amend it, and
  // tells the modules its workers.
  void start_app_layer(const AppLayerConfig& c, int threads);
  std::shared_ptr<AppShards> app_;
  AppLayerConfig app_cfg_;  // the configuration it started with, before the modules' amendments
  int app_threads_ = 0;
  std::vector<std::vector<ModuleEvent>> shard_events_;  // per shard: its modules' events of the batch
  int app_udp_ = -1;  // the app-udp module's position
  std::vector<AppDatagram> datagrams_;
  std::vector<uint8_t> dgram_bytes_;
  // The batch's app-udp events become datagrams (payloads re-decoded on the host); they leave sorted_.
  void gather_datagrams(const PacketBatch& b);
  // EVE http events: finished transactions of the batch, handed out in capture order as events
  // of the pseudo-module kAppLogModule (value: index here).
  static constexpr uint16_t kAppLogModule = 0xfffe;
  // An EVE event of a transaction: its own (anomalies 0), or anomaly events for the app-layer
  // events `anomalies` (HTTP's HttpEvent bits), raised by a packet that src_lo's endpoint sent.
  struct AppLog {
    AppProto proto;
    const AppTx* tx;
    FlowKey key;
    bool client_lo;
    uint64_t anomalies = 0;
    bool src_lo = false;
  };
  bool app_log_ = false;
  bool app_anomalies_ = false;
  void write_anomalies(AppProto proto, uint64_t ts_ns, uint64_t flow_id, uint64_t pcap_cnt, const FlowKey& key, bool src_lo, const AppTx& t,
                       uint64_t events, ModuleOutput& out);
  // A module reads the application layer: the backends' verdict walk keeps the flow's counters at
  // every packet with payload (core/module_stage.hpp), for the alerts raised after the batch.
  bool payload_counts_ = false;
  bool host_times_on_ = false;
  std::vector<HostTime> host_times_;
  // With host times on: adds the time since `since` to phase `name` and restarts `since`.
  void host_time(const char* name, uint64_t& since);
  // The batch's packets, decoded, to the modules that want them (ModuleInstance::wants_packets).
  void packets_to_modules(const PacketBatch& b, ModuleOutput& out);
  std::vector<AppLog> app_logs_;
  void write_app_log(const ModuleEvent& e, uint64_t ts_ns, uint64_t pcap_cnt, ModuleOutput& out);
  // A batch's (or the end's) flows left the table: their unlogged transactions are written.
  void forget_app_flows(const std::vector<FlowRecordOut>& flows, ModuleOutput& out);
  void add_counts(const std::vector<uint64_t>& c);  // kModuleCounters per module, pipeline order
  // Hands events with no packet to their modules, each with its flow's record from prev_flows_ or
  // `flows`; counts those whose flow is in neither as unattributed.
  void hand_flow_only(std::vector<ModuleEvent>::const_iterator begin, std::vector<ModuleEvent>::const_iterator end,
                      const std::vector<FlowRecordOut>& flows, ModuleOutput& out);
  // Packet i of the batch decoded on the host, as the backend decoded it.
  void decode_packet(const PacketBatch& b, uint32_t i, DecodedPacket& d) const;
  bool dropped_flow_key(DecodedPacket& d, FlowKey& k, bool& from_lo) const;
  void remember_dropped_flow(DecodedPacket& d, uint64_t flow_id, bool to_client);
  void recall_dropped_flow(DecodedPacket& d, uint64_t& flow_id, bool& to_client);
  std::vector<std::unique_ptr<ModuleInstance>> mods_;
  std::vector<Counts> counts_;
  uint32_t state_bytes_ = 0;
  uint64_t suppressed_ = 0, unattributed_ = 0, flow_only_ = 0;
  // Flow-only events: their flow's record is among the current batch's, the previous batch's (a
  // flow swept after its walk held data, flushed by the next walk) or, at the end, the flows still
  // open. prev_flows_ (the previous batch's) is kept only with stream modules.
  bool stream_modules_ = false;
  std::vector<FlowRecordOut> prev_flows_;
  std::vector<ModuleEvent> sorted_;
  bool drop_events_ = false, vlan_in_key_ = true, defrag_ = true, urgent_drop_ = false;
  bool drop_ether_ = false;  // drop events carry `ether` (eve-log's ethernet: yes)
  VerdictStats vs_;
  // With drop events on: a packet its flow's earlier decision dropped has no module event, so no
  // flow id. The flow id and which endpoint started the flow are remembered, by flow key, from
  // every dropped packet that has them (the one whose drop decided the flow comes first), and
  // recalled for those packets, as Suricata's drop events carry them. At most dropped_flows_max_
  // flows: when a new one would not fit, the memory is cleared first (forgotten_ counts the flows
  // it held); a packet of a forgotten flow then has a drop event without a flow id.
  struct KeyHash {
    size_t operator()(const FlowKey& k) const;
  };
  struct KeyEq {
    bool operator()(const FlowKey& a, const FlowKey& b) const;
  };
  struct DroppedFlow {
    uint64_t flow_id;
    bool initiator_lo;  // the flow's first packet came from endpoint 0 (the lower address, port)
  };
  std::unordered_map<FlowKey, DroppedFlow, KeyHash, KeyEq> dropped_flows_;
  // Late drops: the flows handlers dropped, by flow id (the capture number of the deciding packet:
  // its flow's events after it are void) and by flow key (the batch's later packets, which have no
  // event to carry a flow id, are found by decoding them). A flow is forgotten once its record
  // has been written (the batch after the one it left the table in: late_ended_).
  class Late final : public LateVerdicts {
   public:
    explicit Late(ModuleSet& s) : set_(s) {}
    void drop(const HostPacket& p, bool flow, Reason why) override;
    void pass_flow(const HostPacket& p) override;
    void alerted(const HostPacket& p) override;
    void reject(const HostPacket& p, uint8_t dirs) override;

   private:
    ModuleSet& set_;
  };
  Late late_{*this};
  // A late-dropped flow: the deciding packet's number and the flow's key, found by id
  // (late_ids_) and by key (late_keys_: the key's current late-dropped flow, for apply_late_drops).
  struct LateDrop {
    uint64_t number;
    FlowKey key;
  };
  std::unordered_map<uint64_t, LateDrop> late_ids_;
  std::unordered_map<FlowKey, uint64_t, KeyHash, KeyEq> late_keys_;
  std::unordered_map<uint64_t, uint64_t> late_pass_;  // passed flows: id → the deciding packet's number
  std::unordered_set<uint64_t> late_alerted_;  // flows a handler alerted on
  std::vector<uint64_t> late_ended_;
  // The packet the event loop is at (for Late::drop), and the batch's late-dropped packets with
  // their reasons (account_verdicts names them).
  const PacketBatch* late_batch_ = nullptr;
  uint32_t late_packet_ = 0;
  DecodedPacket* late_decoded_ = nullptr;
  std::vector<std::pair<uint32_t, uint8_t>> late_packets_;
  std::vector<std::pair<uint32_t, uint8_t>> rejects_;  // this batch's: packet, RejectDirs (one entry a packet)
  std::vector<StreamChunk> late_chunks_;  // a batch's chunks less those of late-dropped flows
  LateCounts late_n_;
  // After the event loop: the batch's later packets of late-dropped flows get the flow's drop.
  void apply_late_drops(const PacketBatch& b);
  // Whether an event on capture packet `number` of flow `flow_id` is void: its flow was dropped
  // late at an earlier packet, or passed (a module's event; the application layer's logs stay).
  bool late_void(uint64_t flow_id, uint64_t number, bool module_event) const {
    if (!flow_id) return false;
    if (!late_ids_.empty()) {
      const auto it = late_ids_.find(flow_id);
      if (it != late_ids_.end() && number > it->second.number) return true;
    }
    if (!module_event || late_pass_.empty()) return false;
    const auto it = late_pass_.find(flow_id);
    return it != late_pass_.end() && number > it->second;
  }
  // Forgets the flows whose records the last batch wrote (late_ended_).
  void late_forget();
  std::vector<uint64_t> gone_flows_;  // the last batch's flow records: the modules forget them next batch
  // Notes the late-dropped flows among a batch's records, forgotten at the next batch (after the
  // records were written with their action).
  void late_ended(const std::vector<FlowRecordOut>& ended);
  size_t dropped_flows_max_ = kDroppedFlowsDefault;
  uint64_t recalled_ = 0, forgotten_ = 0;
};

}  // namespace gaspp
