// core/stage_plan.hpp — the order of a batch's stages, written once for every backend.
//
// A backend runs a batch by handing itself, as a StageExecutor, to StagePlan::run_batch(). The plan
// decides which stages a configuration needs and in what order they run; the executor does (CPU)
// or queues (CUDA) each one for the batch in hand, with the per-packet and per-run functions of
// the engine (decode/, flow/, stream/) and core/module_stage.hpp. For one batch:
//
//   decode                       every packet: fields, verdict pass, counters
//   flow lookup                  with flow tracking: every packet finds or claims its slot; those
//                                that found no room retry in capture order (exception policy). On
//                                CUDA this first waits for the previous batch's flow stage.
//   flow tick                    the emergency decision
//   flow walk                    items (held segments, then packets) sorted by (slot, item), each
//                                flow's run walked: tracking, reassembly, on_stream hooks; the
//                                batch's streams to the host when it asked for them
//   module stages                stage st runs every module some flow class runs at position st,
//                                over every packet; with scheduling the packets are regrouped
//                                between stages (regroup_after_stage)
//   verdict walk                 with flow tracking and modules: flow decisions in capture order
//   sweep                        with flow tracking: flows that timed out leave the table, when due
//                                in capture time (every sweep_interval) or in emergency; after the
//                                modules, so that records leaving carry the flow's decision
//   results                      what the host reads back after wait()
//
// The end of the run is planned here too: flush_flows() sweeps the table empty (shutdown).
// docs/architecture.md ("Stage order") shows how each backend carries out each stage.
#pragma once
#include <cstdint>
#include <vector>

#include "core/engine_config.hpp"
#include "core/modules.hpp"
#include "flow/flow_record.hpp"

namespace gaspp {

class StageExecutor {
 public:
  virtual ~StageExecutor() = default;
  virtual void decode() = 0;
  virtual void flow_lookup() = 0;
  virtual void flow_tick() = 0;
  virtual void flow_walk() = 0;
  // Module k (pipeline position) at stage st, over every packet of the batch.
  virtual void module_stage(uint16_t st, uint16_t k) = 0;
  // Scheduling: the packet order for stage next_st.
  virtual void regroup(uint16_t next_st) = 0;
  virtual void verdict_walk() = 0;
  // The sweep at capture time now; due: the sweep interval has passed (the executor also sweeps
  // when the table is in emergency, which only it can see).
  virtual void sweep(uint64_t now, bool due) = 0;
  virtual void results() = 0;
  // End of run: one shutdown sweep, its records appended to `into`; returns how many it wrote and
  // whether flows are left in the table.
  virtual uint32_t shutdown_sweep(std::vector<FlowRecordOut>& into, bool& flows_left) = 0;
};

// Records one batch can hand over: a flow per packet (evictions, restarts) and a sweep's worth.
constexpr uint32_t kSweepRecords = 65536;
inline uint32_t flow_record_capacity(const BackendConfig& c) { return c.batch_packets + kSweepRecords; }

class StagePlan {
 public:
  // Throws std::invalid_argument when the class orders are not permutations of the modules, or
  // when a module with on_stream has no flow tracking and reassembly to run in.
  explicit StagePlan(const BackendConfig& cfg);
  // Runs (or queues) every stage of one batch whose latest capture time is max_ts_ns.
  void run_batch(StageExecutor& ex, uint64_t max_ts_ns);
  // Sweeps the table empty at the end of the run; the records sorted (sort_flow_records).
  std::vector<FlowRecordOut> flush_flows(StageExecutor& ex) const;

  bool flows() const { return flows_; }
  bool streams() const { return streams_; }
  bool schedule() const { return schedule_; }
  uint16_t classes() const { return classes_; }
  // classes x modules: the module class c runs at stage st is class_order()[c * modules + st].
  const std::vector<uint16_t>& class_order() const { return class_order_; }

 private:
  std::vector<ModuleInstance*> modules_;
  bool flows_ = false, streams_ = false, schedule_ = false;
  uint16_t classes_ = 1;
  std::vector<uint16_t> class_order_;
  uint64_t sweep_interval_ns_ = 0;
  uint64_t next_sweep_ns_ = 0;
};

}  // namespace gaspp
