#include "core/stage_plan.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

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
