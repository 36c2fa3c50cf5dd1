// core/engine_config.hpp — what a backend is asked to run: batch capacity, flow tracking,
// reassembly, the modules and their order, and the transfer choices of the CUDA backend.
// Backends (backend/backend.hpp) take it; the stage plan and the module registry read it, which is
// why it lives below the backends.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/modules.hpp"
#include "flow/flow_record.hpp"
#include "stream/stream.hpp"

namespace gaspp {

// The CPU backend's batch size when none is asked for: 8,192 packets' decoded fields (~100 bytes
// each) fit a core's L2, where the flow walk, visiting packets in flow order rather than capture
// order, finds them; at 65,536 the walk waited on memory for nearly half its time. Outputs do not
// depend on the batch size (tests/e2e/backend_equivalence.py runs several).
constexpr uint32_t kCpuBatchPackets = 8192;

struct BackendConfig {
  uint32_t batch_packets = 65536;
  uint64_t batch_bytes = 64ull << 20;
  int threads = 0;                  // CPU backend: workers (0 = all hardware threads); CUDA: unused
  int slots = 3;
  double compact_below = 1.0 / 3;   // CUDA: compact when record bytes / span bytes < this
  bool force_compact = false;       // CUDA: always compact (tests both transfer paths)
  FlowConfig flow;                  // flow tracking (flow/flow_record.hpp)
  StreamConfig stream;              // TCP reassembly (stream/stream.hpp); needs flow tracking
  // Modules, in pipeline order (owned by the caller's ModuleSet, which outlives the backend); the
  // backend uploads their tables when it starts. flow.module_state_bytes must cover their state.
  std::vector<ModuleInstance*> modules;
  // IPS/firewall mode: TCP segments invalid for their session (timestamps, window, handshake
  // sequence; URG segments under stream urgent policy drop) are dropped with reason stream_error
  // (core/module_stage.hpp, verdict_walk_run; the pipeline names urgent ones "stream urgent").
  // Takes effect where modules run (the verdict walk runs with them).
  bool drop_invalid = false;
  // Exception policy for a packet the flow table has no room for, even after eviction (Suricata's
  // flow.memcap-policy, or the exception-policy master switch): drop it (drop-packet; drop-flow
  // and reject fall back to it, as no flow exists) or let it through untracked. tools/gaspp.cpp
  // decides: auto, the default, drops in IPS (firewall) mode.
  bool untracked_drop = false;
  // -k all: decode recomputes IPv4/TCP/UDP/ICMP checksums (decode/checksum.hpp), counts the bad
  // ones, and flow tracking keeps bad TCP segments out of sessions and streams. Reads whole
  // records, so it turns header-only slicing off.
  bool validate_checksums = false;
  uint32_t event_capacity = 0;      // module events per batch (0: 4 per packet + 4096); beyond: events_lost
  // Flow classes (GASPP §7.3): class c (symmetric flow hash % classes) runs the modules in the order
  // class_orders[c], a permutation of 0..modules-1. Empty: one class, pipeline order.
  std::vector<std::vector<uint16_t>> class_orders;
  // Scheduling (GASPP §5.3): regroup packet indices between module stages (core/module_stage.hpp,
  // schedule_key), after a stage whose module may change context keys, or at every stage with flow
  // classes. automatic: off (bench_modules: with the pipeline bound by PCIe, the sort costs more
  // than it saves unless modules are heavy and diverge); on: always, both backends.
  enum class Schedule : uint8_t { off, on, automatic } schedule = Schedule::automatic;
  // Header-only slicing (CUDA, GASPP's "only the headers cross PCIe"): batches are not copied, the
  // kernels read what they need through the capture's mapping (backend/cuda/cuda_backend.cu).
  // automatic: on when nothing reads payload (slicing_applies), for batches of large packets (mean
  // record of 144 bytes or more: smaller ones are cheaper copied); on: always (payload readers still
  // get every byte, more slowly); off: never. The CPU backend ignores it.
  enum class Slice : uint8_t { off, on, automatic } slice = Slice::automatic;
  // Slicing on CUDA: the SMs the slice gather gets to itself (a green context; every other kernel
  // runs on the rest), since kernels sharing SMs with its PCIe reads wait behind them
  // (backend/cuda/sm_partition.hpp). 0: the device's smallest partition (8 SMs on an H100);
  // -1: no partition, the gather shares every SM. Ignored where the driver cannot partition.
  int gather_sms = 0;
  // Time every stage of every batch (Backend::stage_times): CUDA with events on its streams, the
  // CPU with the clock and its pool's busy time; a diagnostic for finding where a batch's time
  // goes, it costs a few microseconds a batch.
  bool stage_times = false;
  // CUDA: the device this backend runs on (its ordinal). A backend is bound to one device for its
  // life; several devices are several backends (docs/architecture.md, "Several devices").
  int device = 0;
};

// Whether a batch's payload is read by nobody: no module declares kLayerPayload or kLayerStream
// and reassembly is off. Decides Slice::automatic.
bool payload_unread(const BackendConfig& c);
inline bool slicing_applies(const BackendConfig& c) {
  return c.slice == BackendConfig::Slice::on || (c.slice == BackendConfig::Slice::automatic && payload_unread(c));
}

// The class orders flattened (classes x modules), one class in pipeline order when none are given;
// throws std::invalid_argument when an order is not a permutation of the modules.
std::vector<uint16_t> flat_class_orders(const BackendConfig& c);
inline uint32_t event_capacity_of(const BackendConfig& c) {
  return c.event_capacity ? c.event_capacity : 4 * c.batch_packets + 4096;
}

}  // namespace gaspp
