// backend/cuda/device_flow_table.hpp — the flow table in device memory: owns the allocations and
// hands kernels a FlowTableRef (see flow/flow_table.hpp for the layout, flow/host_flow_table.hpp
// for the sizing). Fixed size, allocated once and zeroed; clear() empties it again (waits).
#pragma once
#include <cuda_runtime.h>

#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/device_buffer.hpp"
#include "flow/host_flow_table.hpp"

namespace gaspp {

class DeviceFlowTable {
 public:
  explicit DeviceFlowTable(const FlowTableShape& shape)
      : shape_(shape), tags_(shape.slots()), recs_(shape.slots()), locks_(shape.buckets), state_(1),
        module_(size_t(shape.module_state_bytes) * shape.slots()) {
    GASPP_CUDA_CHECK(cudaMemset(recs_.get(), 0, recs_.bytes()));
    clear();
  }
  explicit DeviceFlowTable(const FlowConfig& cfg) : DeviceFlowTable(flow_table_shape(cfg)) {}

  // Every slot empty, gauges zero. Records need no clearing: a slot is initialised when claimed.
  void clear() {
    GASPP_CUDA_CHECK(cudaMemset(tags_.get(), 0, tags_.bytes()));
    GASPP_CUDA_CHECK(cudaMemset(locks_.get(), 0, locks_.bytes()));
    GASPP_CUDA_CHECK(cudaMemset(state_.get(), 0, state_.bytes()));
  }
  FlowTableRef ref() const {
    return FlowTableRef{tags_.get(),   recs_.get(),    locks_.get(),    module_.get(),
                        state_.get(),  shape_.buckets, shape_.capacity, shape_.module_state_bytes};
  }
  const FlowTableShape& shape() const { return shape_; }
  FlowTableState read_state() const {  // waits
    FlowTableState st;
    GASPP_CUDA_CHECK(cudaMemcpy(&st, state_.get(), sizeof st, cudaMemcpyDeviceToHost));
    return st;
  }

 private:
  FlowTableShape shape_;
  DeviceBuffer<uint32_t> tags_;
  DeviceBuffer<FlowRecord> recs_;
  DeviceBuffer<uint32_t> locks_;
  DeviceBuffer<FlowTableState> state_;
  DeviceBuffer<uint8_t> module_;  // empty without module state
};

}  // namespace gaspp
