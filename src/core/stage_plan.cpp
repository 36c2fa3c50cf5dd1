#include "core/stage_plan.hpp"

#include <stdexcept>

namespace gaspp {

StagePlan::StagePlan(const BackendConfig& cfg)
    : modules_(cfg.modules), flows_(cfg.flow.enabled), streams_(cfg.flow.enabled && cfg.stream.enabled),
      sweep_interval_ns_(cfg.flow.sweep_interval_ns) {
  if (!modules_.empty()) {
    class_order_ = flat_class_orders(cfg);
    classes_ = uint16_t(cfg.class_orders.empty() ? 1 : cfg.class_orders.size());
    // automatic: off (see BackendConfig::schedule: with the pipeline bound by PCIe the sort costs
    // more than it saves unless modules are heavy and diverge).
    schedule_ = cfg.schedule == BackendConfig::Schedule::on;
    for (const ModuleInstance* m : modules_)
      if (m->has_stream_hook() && !streams_)
        throw std::invalid_argument("a module with on_stream needs flow tracking and reassembly");
  }
}

void StagePlan::run_batch(StageExecutor& ex, uint64_t max_ts_ns) {
  ex.decode();
  if (flows_) {
    ex.flow_lookup();
    ex.flow_tick();
    ex.flow_walk();
  }
  const uint16_t n = uint16_t(modules_.size());
  for (uint16_t st = 0; st < n; ++st) {
    // Each module some class runs at this stage, over the whole batch (packets of other classes
    // are skipped by module_stage_packet).
    for (uint16_t k = 0; k < n; ++k)
      if (stage_runs_module(class_order_, classes_, st, k)) ex.module_stage(st, k);
    if (schedule_ && st + 1 < n && regroup_after_stage(modules_, class_order_, classes_, st)) ex.regroup(uint16_t(st + 1));
  }
  if (flows_) {
    if (n) ex.verdict_walk();
    const bool due = max_ts_ns >= next_sweep_ns_;
    if (due) next_sweep_ns_ = max_ts_ns + sweep_interval_ns_;
    ex.sweep(max_ts_ns, due);
  }
  ex.results();
}

std::vector<FlowRecordOut> StagePlan::flush_flows(StageExecutor& ex) const {
  std::vector<FlowRecordOut> all;
  if (!flows_) return all;
  for (bool left = true; left;)
    if (ex.shutdown_sweep(all, left) == 0) break;
  sort_flow_records(all);
  return all;
}

}  // namespace gaspp
