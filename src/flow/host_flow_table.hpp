// flow/host_flow_table.hpp — the flow table in host memory (CPU backend), and the sizing rules
// both backends share.
//
// Sizing: `capacity` flows at most; the table has 5/4 as many slots, rounded up to whole buckets,
// so that buckets (32 slots, a flow can only live in its own) rarely fill before the table does.
// Memory is fixed at construction: slots × (240-byte record + 4-byte tag + module state) plus one
// lock word per bucket; reported by bytes().
#pragma once
#include <cstdint>
#include <vector>

#include "flow/flow_table.hpp"

namespace gaspp {

struct FlowTableShape {
  uint32_t capacity = 0, buckets = 0, module_state_bytes = 0;
  uint32_t slots() const { return buckets * kFlowBucketSlots; }
  uint64_t bytes() const {
    return uint64_t(slots()) * (sizeof(FlowRecord) + sizeof(uint32_t) + module_state_bytes) +
           uint64_t(buckets) * sizeof(uint32_t) + sizeof(FlowTableState);
  }
};

inline FlowTableShape flow_table_shape(const FlowConfig& cfg) {
  FlowTableShape s;
  s.capacity = cfg.capacity ? cfg.capacity : 1;
  const uint64_t want = (uint64_t(s.capacity) * 5 + 3) / 4;
  s.buckets = uint32_t((want + kFlowBucketSlots - 1) / kFlowBucketSlots);
  s.module_state_bytes = (cfg.module_state_bytes + 15) & ~15u;
  return s;
}

// What the summary reports about the table.
struct FlowGauges {
  bool enabled = false;
  uint32_t capacity = 0, slots = 0;
  uint64_t bytes = 0;
  uint32_t live = 0, peak = 0;
  bool emergency = false;
};

class HostFlowTable {
 public:
  explicit HostFlowTable(const FlowConfig& cfg) : shape_(flow_table_shape(cfg)) {
    tags_.assign(shape_.slots(), kTagEmpty);
    recs_.resize(shape_.slots());
    locks_.assign(shape_.buckets, 0);
    module_.assign(uint64_t(shape_.slots()) * shape_.module_state_bytes, 0);
  }
  FlowTableRef ref() {
    return FlowTableRef{tags_.data(), recs_.data(), locks_.data(), module_.data(), &state_,
                        shape_.buckets, shape_.capacity, shape_.module_state_bytes};
  }
  const FlowTableShape& shape() const { return shape_; }
  const FlowTableState& state() const { return state_; }

 private:
  FlowTableShape shape_;
  std::vector<uint32_t> tags_;
  std::vector<FlowRecord> recs_;
  std::vector<uint32_t> locks_;
  std::vector<uint8_t> module_;
  FlowTableState state_{};
};

}  // namespace gaspp
