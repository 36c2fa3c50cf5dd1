// backend/cuda/device_flow_table.hpp — the flow table in device memory: owns the allocations and
// hands kernels a FlowTableRef (see flow/flow_table.hpp for the layout, flow/host_flow_table.hpp
// for the sizing). Fixed size, allocated once and zeroed; clear() empties it again (waits).
#pragma once
#include <cuda_runtime.h>

#include "backend/cuda/cuda_check.hpp"
#include "flow/host_flow_table.hpp"

namespace gaspp {

class DeviceFlowTable {
 public:
  explicit DeviceFlowTable(const FlowTableShape& shape) : shape_(shape) {
    const size_t slots = shape_.slots();
    GASPP_CUDA_CHECK(cudaMalloc(&tags_, sizeof(uint32_t) * slots));
    GASPP_CUDA_CHECK(cudaMalloc(&recs_, sizeof(FlowRecord) * slots));
    GASPP_CUDA_CHECK(cudaMalloc(&locks_, sizeof(uint32_t) * shape_.buckets));
    GASPP_CUDA_CHECK(cudaMalloc(&state_, sizeof(FlowTableState)));
    if (shape_.module_state_bytes) GASPP_CUDA_CHECK(cudaMalloc(&module_, size_t(shape_.module_state_bytes) * slots));
    GASPP_CUDA_CHECK(cudaMemset(recs_, 0, sizeof(FlowRecord) * slots));
    clear();
  }
  explicit DeviceFlowTable(const FlowConfig& cfg) : DeviceFlowTable(flow_table_shape(cfg)) {}
  ~DeviceFlowTable() {
    cudaFree(tags_);
    cudaFree(recs_);
    cudaFree(locks_);
    cudaFree(state_);
    if (module_) cudaFree(module_);
  }
  DeviceFlowTable(const DeviceFlowTable&) = delete;
  DeviceFlowTable& operator=(const DeviceFlowTable&) = delete;

  // Every slot empty, gauges zero. Records need no clearing: a slot is initialised when claimed.
  void clear() {
    GASPP_CUDA_CHECK(cudaMemset(tags_, 0, sizeof(uint32_t) * shape_.slots()));
    GASPP_CUDA_CHECK(cudaMemset(locks_, 0, sizeof(uint32_t) * shape_.buckets));
    GASPP_CUDA_CHECK(cudaMemset(state_, 0, sizeof(FlowTableState)));
  }
  FlowTableRef ref() const {
    return FlowTableRef{tags_, recs_, locks_, module_, state_, shape_.buckets, shape_.capacity, shape_.module_state_bytes};
  }
  const FlowTableShape& shape() const { return shape_; }
  FlowTableState read_state() const {  // waits
    FlowTableState st;
    GASPP_CUDA_CHECK(cudaMemcpy(&st, state_, sizeof st, cudaMemcpyDeviceToHost));
    return st;
  }

 private:
  FlowTableShape shape_;
  uint32_t* tags_ = nullptr;
  FlowRecord* recs_ = nullptr;
  uint32_t* locks_ = nullptr;
  uint8_t* module_ = nullptr;
  FlowTableState* state_ = nullptr;
};

}  // namespace gaspp
