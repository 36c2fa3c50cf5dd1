// gaspp/module.hpp — what a module writer needs: the hook contract, the packet a hook sees, the
// actions it can take, and the host-side lifecycle. docs/writing-a-module.md walks through an
// example; src/modules/ holds the modules gaspp ships.
//
// A module is a type with static host+device hooks (GASPP §3). Each packet of a batch passes the
// modules of the pipeline in order, one stage per module; the CPU backend runs a stage on its
// thread pool and the CUDA backend as one grid-stride kernel, calling the same hooks:
//
//   struct CountTcp {
//     static constexpr const char* kName = "count_tcp";
//     static constexpr uint32_t kLayers = kLayerTcp;       // which hooks the pipeline calls
//     struct FlowState { uint32_t seen; };                 // per-flow slice, zeroed for a new flow
//     struct View {};                                      // the module's tables (device views)
//     GASPP_HD static uint32_t on_tcp(Packet& p, FlowState* st, const View&, uint32_t ctx) {
//       if (st) atomic_add(&st->seen, 1);                  // packets of a flow run in parallel
//       return ctx;                                        // the context key for the next module
//     }
//     struct Host : ModuleHost<CountTcp> { using ModuleHost::ModuleHost; };
//   };
//
// Hooks (each optional, called in this order for a packet, the key each returns passed on):
//   on_eth(Packet&, FlowState*, const View&, uint32_t ctx)   every decoded frame
//   on_ip  (...)                                             IPv4 and IPv6 packets
//   on_tcp (...), on_udp (...)                               after on_ip, by transport
//   on_stream(StreamPiece&, ...)                             in-order TCP data (gaspp/stream_hook.hpp)
//   on_ip_retry(...)                                         a second pass over the packets whose
//                                                            on_ip called retry() (below)
// FlowState* is null for a packet without a flow (flow tracking off, not IP, a fragment). Packets
// of one flow run in parallel: a hook that writes its slice uses the atomics of gaspp/hd.hpp.
//
// Actions (Packet methods), counted per module:
//   drop()        the packet is dropped (not written by -w); later modules do not see it
//   drop_flow()   drop, and every later packet of the flow is dropped without running modules
//   pass_flow()   every later packet of the flow passes without running modules (Suricata's pass)
//   ignore()      later modules do not see this packet
//   to_host(v)    the packet and its metadata go to the module's host handler, with value v
//   to_dump()     the packet is written to the dump file (--dump-packets)
//   emit(k, v)    an event (kind k, value v) for the module's host handler (alerts, logs)
//   retry()       run on_ip_retry for this packet after the stage, instead of what on_ip would
//                 have done: for work too rare to carry in the stage's kernel (on the GPU the retry
//                 is a kernel of its own, so its code costs the stage nothing in registers or
//                 instruction cache). An on_ip that retries takes no action, raises no event and
//                 returns the context it was given; on_ip_retry gets the packet, its flow state
//                 and that context. Only for modules whose one packet hook is on_ip.
// A flow's decision (drop_flow/pass_flow) takes effect in capture order: packets before the deciding
// one keep their own results, packets after it get the decision, and whatever modules produced for
// them (events, to_host, to_dump) is discarded. Decisions stick across batches.
//
// Host lifecycle (M::Host, see ModuleHost below): constructed from the module's options (throws
// std::invalid_argument with the reason), upload() builds the tables and places them where the
// backend runs (host memory for CPU, device memory for CUDA) and returns the View, on_event()
// handles events and to_host packets after the batch (and a stream module's events on data no
// packet delivered, flow-only: see kNoPacket), report() adds the module's statistics to the
// summary, and the destructor shuts it down. A module is listed once in src/modules/registry.hpp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "gaspp/fields.hpp"
#include "gaspp/flow.hpp"
#include "gaspp/hd.hpp"

namespace gaspp {

// Which hooks a module has; also what it reads (a module that needs no payload leaves it out).
enum Layer : uint32_t {
  kLayerEth = 1,
  kLayerIp = 2,
  kLayerTcp = 4,
  kLayerUdp = 8,
  kLayerPayload = 16,  // reads packet payload bytes (beyond the headers)
  kLayerStream = 32,   // has on_stream (gaspp/stream_hook.hpp): reassembled TCP data
};

// The per-packet verdict byte: what the modules decided. Pass is 0.
enum VerdictBits : uint8_t {
  kVerdictDrop = 1,
  kVerdictIgnore = 2,       // later modules skip the packet
  kVerdictToDump = 4,
  kVerdictDropFlow = 8,     // this packet decided: drop the rest of the flow
  kVerdictPassFlow = 16,    // this packet decided: pass the rest of the flow
  kVerdictAlerted = 32,     // a module raised an alert on it (flow event `alerted`)
  kVerdictFlowDecided = 64, // the verdict came from the flow's earlier decision; module output void
  kVerdictStreamError = 128,// dropped by the pipeline (IPS mode): a TCP segment invalid for its session
};
constexpr uint8_t kVerdictPass = 0;
// A packet the flow table had no room for, dropped by the exception policy (Suricata's
// flow.memcap-policy; BackendConfig::untracked_drop): a combination nothing else writes, which the
// pipeline reports as "flow memcap". Modules skip it.
constexpr uint8_t kVerdictUntrackedDrop = kVerdictDrop | kVerdictStreamError | kVerdictFlowDecided;
constexpr uint8_t kVerdictStop = kVerdictDrop | kVerdictIgnore | kVerdictFlowDecided;

// What a module raised for a packet, handed to its host handler after the batch.
struct ModuleEvent {
  uint64_t flow_id;   // 0 when the packet has no flow
  uint32_t packet;    // index in the batch; kNoPacket: raised on a stream piece no packet delivered
  uint32_t value;
  uint16_t module;    // position in the pipeline
  uint16_t kind;      // the module's own numbering; kEventToHost for to_host()
  uint8_t to_client;  // direction within the flow
  // Which of the module's events of this value on this packet it is, from 0 (several
  // application-layer transactions one signature matched on one packet: one alert each).
  uint8_t seq = 0;
  uint8_t pad_[2] = {};
};
static_assert(sizeof(ModuleEvent) == 24, "ModuleEvent layout");
constexpr uint16_t kEventToHost = 0xffff;
// ModuleEvent::packet of an event raised on a stream piece that no packet of the batch delivered:
// data released when its flow expired, or at the end of the run. Such an event reaches the host
// handler flow-only (HostPacket::flow set, no frame), as Suricata inspects data left at a flow's
// timeout through a pseudo-packet.
constexpr uint32_t kNoPacket = 0xffffffffu;
// An event of this kind says why the module dropped the packet it is raised on (value: a
// DropReason). A drop with such a reason is a firewall-policy drop: the pipeline counts it under
// `firewall` in the stats (core/modules.hpp, ModuleSet); other drops count under `ips`.
constexpr uint16_t kEventDropReason = 0xfffe;
enum DropReason : uint32_t {
  kDropReasonRules = 1,                // a rule's drop action
  kDropReasonDefaultPacketPolicy = 2,  // no rule accepted the packet
  kDropReasonDefaultAppPolicy = 3,     // no rule accepted an application-layer hook
};

// Per-module counters: how many packets reached it and what it did with them.
#define GASPP_MODULE_COUNTERS(X)                                              \
  X(mc_packets, "packets")          /* packets the module ran on */           \
  X(mc_drop, "drop")                /* drop() and drop_flow() */              \
  X(mc_drop_flow, "drop_flow")                                                \
  X(mc_pass_flow, "pass_flow")                                                \
  X(mc_ignore, "ignore")                                                      \
  X(mc_to_host, "to_host")                                                    \
  X(mc_to_dump, "to_dump")                                                    \
  X(mc_events, "events")                                                      \
  X(mc_events_lost, "events_lost")  /* the batch's event buffer was full */ \
  X(mc_stream_pieces, "stream_pieces") /* on_stream calls */

enum ModuleCounter : int {
#define GASPP_X(id, name) id,
  GASPP_MODULE_COUNTERS(GASPP_X)
#undef GASPP_X
  kModuleCounters
};
const char* module_counter_name(int c);

// Where events go during a stage: a bounded buffer (limit: BackendConfig::event_capacity; what does
// not fit is counted as events_lost).
struct EventSinkRef {
  ModuleEvent* ev;
  uint32_t* count;
  uint32_t cap;
};

// Appends an event; false (nothing written) when the buffer is full.
GASPP_HD GASPP_FORCEINLINE bool push_event(const EventSinkRef& s, const ModuleEvent& e) {
  const uint32_t at = atomic_add(s.count, 1);
  if (at >= s.cap) return false;
  s.ev[at] = e;
  return true;
}

// Everything a stage needs about the batch: views only, trivially copyable (a kernel argument).
struct StageArgs {
  const uint8_t* data;        // record headers + frames
  const uint32_t* rec_off;
  uint32_t count;
  DecodedView dec;
  uint8_t* verdict;
  uint32_t* ctx;              // context key per packet (0 before the first module)
  const uint32_t* order;      // the order packets are visited in (scheduling), or null: 0..count-1
  const uint32_t* flow_slot;  // null without flow tracking
  const uint8_t* flow_flags;
  // The flow as each packet left it (FlowPosAt), when a module wants it (wants_flow_positions); null otherwise.
  const FlowPosAt* flow_pos;
  // Packets before a restart of their flow's slot in this batch: their connection's id (FlowIdAt),
  // valid where the entry's epoch is this batch's flow epoch; null without flows.
  const FlowIdAt* flow_id_at;
  uint32_t flow_epoch;
  FlowTableRef table;
  EventSinkRef events;
  // Packets whose on_ip asked for a retry in this stage (Packet::retry): *retry_n entries (zero
  // before the stage), room for the whole batch (retry_cap), so none is refused.
  uint32_t* retry;
  uint32_t* retry_n;
  uint32_t retry_cap;
  uint32_t state_off;         // this module's slice in the per-flow module state
  uint16_t module;            // this module's position in the pipeline
  uint8_t first;              // this is the first stage: contexts start at 0
  uint8_t has_flows;
  // Flow classes (GASPP §7.3): a packet's class is its symmetric flow hash % classes; class c runs
  // the modules in the order class_order[c * modules + stage]. One class: pipeline order.
  const uint16_t* class_order;
  uint16_t classes, modules, stage;
};
static_assert(std::is_trivially_copyable_v<StageArgs>, "StageArgs is passed to kernels by value");

constexpr uint32_t kMaxStreamModules = 8;

// What the flow walk needs to call the stream modules (gaspp/stream_hook.hpp): views only, carried
// inside StreamRef to the walk. n = 0: no stream module.
struct StreamHooks {
  uint32_t n;                                 // stream modules, in pipeline order
  uint16_t type[kMaxStreamModules];           // position of the type in GASPP_MODULE_TYPES
  uint16_t module[kMaxStreamModules];         // position in the pipeline
  uint32_t state_off[kMaxStreamModules];
  const void* view[kMaxStreamModules];        // M::View where the walk runs
  uint8_t bulk[kMaxStreamModules];            // 1: the module has on_stream_bulk (the walk skips it)
  uint32_t bulk_n;                            // how many have
  uint8_t* verdict;                           // the batch's verdict bytes (null at the final flush)
  const FlowPosAt* flow_pos;                  // per packet, when a module wants it (StageArgs::flow_pos)
  uint8_t want_pos;                           // a module wants positions (null flow_pos: no batch, the final flush)
  EventSinkRef events;
  unsigned long long* counts;                 // module counters, kModuleCounters per pipeline module
  FlowTableRef table;
  // The bulk pieces asked to run again (StreamPiece::retry, gaspp/stream_hook.hpp): entries
  // chunk * kMaxStreamModules + hook, *retry_n of them (zero before the bulk pass). retry_cap is
  // the batch's chunk capacity times the bulk modules, so that every piece of every bulk module
  // fits: a push past it is refused (the module then decides what to do, and counts it).
  uint32_t* retry;
  uint32_t* retry_n;
  uint32_t retry_cap;
};
static_assert(std::is_trivially_copyable_v<StreamHooks>, "StreamHooks travels inside StreamRef");

GASPP_HD GASPP_FORCEINLINE void atomic_add_u64(unsigned long long* p, unsigned long long v) {
#if defined(__CUDA_ARCH__)
  atomicAdd(p, v);
#else
  std::atomic_ref<unsigned long long>(*p).fetch_add(v, std::memory_order_relaxed);
#endif
}

// Appends v to a retry queue (StageArgs::retry, StreamHooks::retry) of cap entries, *n filled by
// concurrent callers; false when it is full (*n still grows: readers take min(*n, cap)).
GASPP_HD GASPP_FORCEINLINE bool retry_queue_push(uint32_t* q, uint32_t* n, uint32_t cap, uint32_t v) {
#if defined(__CUDA_ARCH__)
  const uint32_t at = atomicAdd(n, 1u);
#else
  const uint32_t at = std::atomic_ref<uint32_t>(*n).fetch_add(1, std::memory_order_relaxed);
#endif
  if (at >= cap) return false;
  q[at] = v;
  return true;
}

// The packet a hook sees.
class Packet {
 public:
  GASPP_HD Packet(const StageArgs& a, uint32_t i, unsigned long long* counts)
      : a_(a), i_(i), counts_(counts) {}
  GASPP_HD uint32_t index() const { return i_; }
  GASPP_HD const DecodedView& dec() const { return a_.dec; }
  // Frame bytes (device memory on CUDA) and their captured length.
  GASPP_HD const uint8_t* frame() const { return a_.data + a_.rec_off[i_] + 16; }
  GASPP_HD uint32_t cap_len() const { return a_.dec.cap_len[i_]; }
  GASPP_HD uint8_t family() const { return a_.dec.l3[i_] == 2 ? 6 : 4; }  // for IP packets
  GASPP_HD const uint32_t* src_ip() const { return a_.dec.src_ip + size_t(i_) * 4; }
  GASPP_HD const uint32_t* dst_ip() const { return a_.dec.dst_ip + size_t(i_) * 4; }
  GASPP_HD uint8_t ip_proto() const { return a_.dec.ip_proto[i_]; }
  GASPP_HD uint16_t sport() const { return a_.dec.sport[i_]; }
  GASPP_HD uint16_t dport() const { return a_.dec.dport[i_]; }
  GASPP_HD bool has_flow() const { return a_.flow_slot && a_.flow_slot[i_] != kNoFlow; }
  GASPP_HD bool to_client() const { return a_.flow_flags && (a_.flow_flags[i_] & kPktToClient); }
  // flow:established as Suricata sets it (kPktEstablished, flow/flow_table.hpp), and whether the
  // packet left its TCP session closing (kPktClosing); false without a flow.
  GASPP_HD bool flow_established() const { return a_.flow_flags && (a_.flow_flags[i_] & kPktEstablished); }
  GASPP_HD bool tcp_closing() const { return a_.flow_flags && (a_.flow_flags[i_] & kPktClosing); }
  // The first packet of its direction in its flow (what Suricata's flow_start hook sees).
  GASPP_HD bool first_in_direction() const { return a_.flow_flags && (a_.flow_flags[i_] & kPktDirFirst); }
  // The id of the packet's connection: the slot's record, unless a new connection on the same key
  // restarted the slot later in the batch (FlowIdAt).
  GASPP_HD uint64_t flow_id() const {
    if (!has_flow()) return 0;
    if (a_.flow_id_at && a_.flow_id_at[i_].epoch == a_.flow_epoch) return a_.flow_id_at[i_].flow_id;
    return a_.table.recs[a_.flow_slot[i_]].flow_id;
  }
  // The flow as this packet left it (counters, TCP stream sizes); null without a flow, or when no
  // module asked for positions (ModuleInstance::wants_flow_positions).
  GASPP_HD const FlowPosAt* flow_pos() const { return has_flow() && a_.flow_pos ? &a_.flow_pos[i_] : nullptr; }
  // Whether the TCP session could take this segment's data into its stream: a flow with a session
  // (not kFlowNoSession: midstream off and no handshake seen) and a segment not ignored
  // (kPktTcpIgnored: invalid, or its flow dropped). Data it repeats or that lies outside the
  // window is still counted as taken. False without a flow.
  GASPP_HD bool tcp_stream_taken() const {
    return has_flow() && !(a_.flow_flags[i_] & kPktTcpIgnored) && !(a_.table.recs[a_.flow_slot[i_]].misc & kFlowNoSession);
  }

  GASPP_HD void drop() { set(kVerdictDrop, mc_drop); }
  GASPP_HD void drop_flow() { set(kVerdictDrop, mc_drop); set(kVerdictDropFlow, mc_drop_flow); }
  GASPP_HD void pass_flow() { set(kVerdictPassFlow, mc_pass_flow); }
  GASPP_HD void ignore() { set(kVerdictIgnore, mc_ignore); }
  GASPP_HD void to_dump() { set(kVerdictToDump, mc_to_dump); }
  GASPP_HD void alerted() { a_.verdict[i_] |= kVerdictAlerted; }
  GASPP_HD void to_host(uint32_t value) {
    count(mc_to_host);
    push(kEventToHost, value);
  }
  GASPP_HD void emit(uint16_t kind, uint32_t value) { push(kind, value); }
  // Asks for on_ip_retry on this packet after the stage (see above); false when refused (no queue).
  GASPP_HD bool retry() { return a_.retry && retry_queue_push(a_.retry, a_.retry_n, a_.retry_cap, i_); }

  // Adds one to a module counter (ModuleCounter).
  GASPP_HD void count(int c) {
#if defined(__CUDA_ARCH__)
    atomicAdd(&counts_[c], 1ull);  // the block's counters, in shared memory
#else
    ++counts_[c];                  // the thread's own
#endif
  }

 private:
  GASPP_HD void set(uint8_t bit, int counter) {
    if (!(a_.verdict[i_] & bit)) count(counter);
    a_.verdict[i_] |= bit;
  }
  GASPP_HD void push(uint16_t kind, uint32_t value) {
    count(push_event(a_.events, ModuleEvent{flow_id(), i_, value, a_.module, kind, uint8_t(to_client() ? 1 : 0)})
              ? mc_events : mc_events_lost);
  }
  const StageArgs& a_;
  uint32_t i_;
  unsigned long long* counts_;  // module counters: the block's (CUDA) or the thread's (CPU)
};

// Places a module's tables where the backend runs: host memory (CPU backend, the vector's own
// storage, which must outlive the backend) or a device copy owned by the backend (CUDA).
class TableMemory {
 public:
  virtual ~TableMemory() = default;
  virtual const void* place(const void* host, size_t bytes) = 0;
  // Whether placed tables live in device memory (the CUDA backend): host-only helpers a View
  // carries (a CPU library's handle) cannot be used there.
  virtual bool on_device() const { return false; }
  template <class T>
  const T* place(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>, "tables hold trivially copyable items");
    return v.empty() ? nullptr : static_cast<const T*>(place(v.data(), sizeof(T) * v.size()));
  }
};

struct HostPacket;

// Decisions a host handler makes after the engine fixed the packet's verdict (the device decides
// verdicts in its stages; a handler sees the match after the batch): a signature whose match only
// the host can decide (an application-layer transaction, flowbits, a rate_filter's new_action).
// ModuleSet applies them to the batch before its outputs (-w, inline forwarding, verdict counters)
// see it: the packet is dropped and, with `flow`, every later packet of its flow too, whose module
// events are then void, as a flow the device decided. A late decision can only add a drop: a
// late pass of the flow voids the module events of its later packets (no alerts; its application
// layer still parsed and logged, as Suricata's pass), but a drop the engine already decided on
// one of them stays.
// Where a reject rule's answer goes (LateVerdicts::reject; Suricata's rejectsrc, rejectdst, rejectboth).
enum RejectDirs : uint8_t { kRejectToSource = 1, kRejectToDest = 2 };

class LateVerdicts {
 public:
  enum Reason : uint8_t { rules = 0, threshold = 1 };  // the drop event's reason for the packet
  virtual void drop(const HostPacket& p, bool flow, Reason why) = 0;
  virtual void pass_flow(const HostPacket& p) = 0;
  // The handler alerted on the packet: its flow's EVE flow event says alerted (Suricata's
  // FLOW_HAS_ALERTS), as for an alert the device decided.
  virtual void alerted(const HostPacket&) {}
  // A reject rule decided the (dropped) packet: besides the drop, the engine answers it (a TCP
  // reset, or an ICMP unreachable for other protocols) towards its source, its destination or
  // both (kRejectToSource | kRejectToDest), where it can send (inline IPS).
  virtual void reject(const HostPacket&, uint8_t /*dirs*/) {}

 protected:
  ~LateVerdicts() = default;
};

// What the pipeline's modules keep of a flow for its EVE events (the signature engine's flowbits,
// flowints and flow variables): members to append to an event of the flow, as Suricata's
// EveAddMetadata adds them to every event (`,"traffic":{...},"metadata":{...}`); empty for none.
class FlowEveVars {
 public:
  virtual std::string flow_eve_json(uint64_t flow_id) const = 0;

 protected:
  ~FlowEveVars() = default;
};

// A packet as the host handler sees it (re-decoded on the host from the batch's records). For an
// event with no packet (kNoPacket) it is flow-only: number 0, no frame (null, lengths 0), decoded
// null, ts_ns the flow's last packet time and `flow` its record (key, times, counters), the flow as
// it was when it left the table.
struct HostPacket {
  uint64_t number;        // 1-based position in the capture (Suricata's pcap_cnt); 0: flow-only
  uint64_t ts_ns;
  const uint8_t* frame;
  uint32_t cap_len, wire_len;
  const void* decoded;    // const DecodedPacket* (decode/decoder.hpp); null: flow-only
  uint64_t flow_id;
  bool to_client;
  const FlowRecord* flow = nullptr;  // set for flow-only events only
  // The flow's counters right after this packet (Suricata's alert `flow` object), for a packet a
  // module alerted on (kVerdictAlerted); null otherwise, or without flow tracking.
  const FlowCountsAt* flow_counts = nullptr;
  uint8_t verdict = 0;  // the packet's final verdict (kVerdict* bits), when the handler sees a packet
  // The flow's application protocol as of this packet ("http", "tls", "dns", "failed"), when the
  // application layer runs and had decided it by then; null otherwise (alerts write it).
  const char* app_proto = nullptr;
  // Where a handler's late drop goes (LateVerdicts); null for a flow-only event (no packet).
  LateVerdicts* late = nullptr;
  // The flow's variables for the handler's EVE events (null: none kept, or EVE metadata off).
  const FlowEveVars* vars = nullptr;
};

// Where host handlers write what they produce.
class ModuleOutput {
 public:
  virtual ~ModuleOutput() = default;
  virtual void eve(const std::string& json_line) = 0;  // one EVE event (no newline)
  // One line of Suricata's fast.log (no newline): written when the run keeps one (--fast-log).
  virtual void fast_log(const std::string&) {}
};

// Options of one module: key → value text, from the configuration or the command line.
using ModuleOptions = std::map<std::string, std::string>;

// Defaults for M::Host: no options, empty tables, nothing to handle or report.
template <class M>
class ModuleHost {
 public:
  explicit ModuleHost(const ModuleOptions& opt) {
    for (auto& [k, v] : opt) throw std::invalid_argument(std::string(M::kName) + ": unknown option '" + k + "'");
  }
  typename M::View upload(TableMemory&) { return typename M::View{}; }
  void on_event(const ModuleEvent&, const HostPacket&, ModuleOutput&) {}
  void report(std::map<std::string, uint64_t>&) const {}
};

}  // namespace gaspp
