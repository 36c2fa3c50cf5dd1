// backend/backend.hpp — where the per-packet work runs: the CPU thread pool or a CUDA device.
//
// A backend owns a ring of batch slots (at least three). The pipeline fills a slot's host half
// (PacketBatch: record offsets into a host span), calls submit(slot), which returns at once on
// CUDA (copies and kernels queued on the slot's stream) and does the work on the CPU, and later
// wait(slot), after which the slot's verdicts and counters (and, if asked, every decoded field)
// are in host memory. While slot k runs on the device the pipeline fills slot k+1 and finishes
// slot k-1, so reading, GPU work and output overlap.
//
// Configuration (BackendConfig, core/engine_config.hpp): batch capacity in packets and bytes, CPU threads, and for CUDA
// the occupancy under which a batch is compacted before the copy (GASPP §5.1; default 1/3, the
// paper's 512/1536 break-even), and the flow table (FlowConfig).
//
// After decoding, each batch goes through flow tracking (flow/): every packet is placed in the
// backend's one flow table, batches strictly in submission order (on CUDA the flow stage of a
// batch waits for the previous batch's), and records of flows that left the table during the
// batch come back sorted in PacketBatch::flow_records. TCP flows are reassembled in the same walk
// (stream/reassembly.hpp); with want_streams the batch's in-order data comes back in
// PacketBatch::stream_chunks / stream_bytes.
//
// Then the modules (core/modules.hpp) run, one stage per module in order, over every packet; then,
// with flow tracking, the verdict walk (core/module_stage.hpp) applies flow decisions in capture
// order. Verdict bits, module events and counters come back with the batch.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/engine_config.hpp"
#include "core/modules.hpp"
#include "core/packet_batch.hpp"
#include "flow/host_flow_table.hpp"

namespace gaspp {

// Where batches spent their time (BackendConfig::stage_times): for each stage, in the order the
// stages run, the summed time from the end of the stage before it to its own end, and how many
// batches ran it. With batches in flight on several streams a stage's time includes waiting for
// what it depends on (the previous batch's flow stage, the gather). On the CPU, busy_us is the time
// the backend's threads spent working in the stage, summed over `threads` threads: a stage that
// scales keeps busy_us near threads x total_us. max_us is the longest one batch spent in the stage:
// a stall (one slow batch among thousands of fast ones) shows there and not in the mean.
struct StageTime {
  std::string name;
  double total_us = 0;
  uint64_t batches = 0;
  double busy_us = 0;  // CPU only (0 elsewhere)
  int threads = 0;     // CPU only
  double max_us = 0;
  double mean_us() const { return batches ? total_us / double(batches) : 0.0; }
  // One batch's time in the stage.
  void add(double us) {
    total_us += us;
    ++batches;
    if (us > max_us) max_us = us;
  }
  // The share of the threads' time the stage kept busy (CPU; 0 when not known).
  double busy_share() const { return threads && total_us > 0 ? busy_us / (total_us * threads) : 0.0; }
};

// The entry of stage `name` in totals, added (zero, at the end: stages keep the order they first
// ran in) when there is none.
inline StageTime& stage_time_named(std::vector<StageTime>& totals, const std::string& name) {
  for (StageTime& t : totals)
    if (t.name == name) return t;
  totals.push_back(StageTime{name});
  return totals.back();
}

// What the summary reports about reassembly's out-of-order buffer.
struct StreamGauges {
  bool enabled = false;
  uint32_t held_cap = 0, held_bytes_cap = 0;  // the buffer's limits
  uint32_t peak_segs = 0, peak_bytes = 0;     // most it held between two batches
  uint32_t compactions = 0;                   // times waiting bytes moved to the other pool
  OverlapPolicy overlap = OverlapPolicy::first;
};

inline StreamGauges stream_gauges_of(const StreamCounts& c, const StreamConfig& cfg, uint32_t held_cap) {
  StreamGauges g;
  g.enabled = true;
  g.held_cap = held_cap;
  g.held_bytes_cap = cfg.held_bytes;
  g.peak_segs = c.peak_segs;
  g.peak_bytes = c.peak_bytes;
  g.compactions = c.compactions;
  g.overlap = cfg.overlap;
  return g;
}

// What stream modules raised while flush_streams delivered the data still held at the end of the
// run, which no packet delivered: their events (ModuleEvent::packet is kNoPacket; at most
// BackendConfig::event_capacity, the rest counted as events_lost) and their counters,
// kModuleCounters per pipeline module (empty without stream modules).
struct StreamFlushModules {
  std::vector<ModuleEvent> events;
  std::vector<uint64_t> module_counts;
  // The data flushed (the pipeline fills them for the FlushCallback: the application layer).
  std::vector<StreamChunk> chunks;
  std::vector<uint8_t> stream_bytes;
};

// How batches reached the device (CUDA): sent as a range of the registered source region (direct),
// packed first (compacted), or sliced (not copied, read through the mapping); bytes copied over the
// bus (sliced reads are not counted: the kernels' reads through the mapping are not observable
// from the host).
struct TransferStats {
  uint64_t batches_direct = 0, batches_compacted = 0, batches_sliced = 0;
  uint64_t bytes_h2d = 0, bytes_d2h = 0;
  // The source's regions registered for device access, and those left out (refused by the driver
  // or past the backend's limit: their batches are staged).
  uint64_t regions_registered = 0, regions_not_registered = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;         // "cpu" or "cuda"
  virtual std::string describe() const = 0;     // device / threads, memory reserved
  virtual int slots() const = 0;
  virtual PacketBatch& batch(int slot) = 0;
  // Tells the backend which host memory regions spans will come from (a mapped file, the rings of
  // a live capture), so it can register them for direct device access. The set replaces the one
  // attached before (the same set again: nothing to do). Optional; returns how many it registered
  // (CUDA: at most kMaxHostRegions; batches from the others are staged).
  virtual size_t attach_sources(const std::vector<MemoryRegion>& regions) { (void)regions; return 0; }
  bool attach_source(const uint8_t* base, uint64_t len) { return attach_sources({MemoryRegion{base, len}}) == 1; }
  virtual void detach_source() {}
  virtual void submit(int slot) = 0;            // asynchronous: queues the batch and returns
  virtual void wait(int slot) = 0;              // results of the slot are in host memory after this
  // Transfer statistics (CUDA; zero on the CPU).
  virtual TransferStats transfer_stats() const { return {}; }
  // Flow table: its size and occupancy now (call between batches, after wait()).
  virtual FlowGauges flow_gauges() = 0;
  // Ends the run for the flow table: every flow still in it is written out (reason shutdown),
  // sorted as batch records are. Waits for all slots first.
  virtual std::vector<FlowRecordOut> flush_flows() = 0;
  // Ends the run for reassembly: what still waits in the out-of-order buffer is delivered with its
  // gaps, and each of those directions ended (call before flush_flows). Waits for all slots first.
  // The counters this adds (gaps, bytes delivered) go to `added`; what stream modules raised on the
  // data delivered goes to `mods` (see StreamFlushModules).
  virtual void flush_streams(std::vector<StreamChunk>& chunks, std::vector<uint8_t>& bytes, Counters& added,
                             StreamFlushModules& mods) = 0;
  virtual StreamGauges stream_gauges() = 0;
  // Stage times so far (empty unless BackendConfig::stage_times and the backend keeps them).
  virtual std::vector<StageTime> stage_times() const { return {}; }
};

std::unique_ptr<Backend> make_cpu_backend(const BackendConfig& cfg);
// Throws std::runtime_error with the reason if CUDA was not built in or no device is usable.
std::unique_ptr<Backend> make_cuda_backend(const BackendConfig& cfg);
// Whether make_cuda_backend can succeed (built in and a device present); `why` says why not.
bool cuda_usable(std::string* why);
// CUDA devices present (0 without CUDA or without a device).
int cuda_device_count();

}  // namespace gaspp
