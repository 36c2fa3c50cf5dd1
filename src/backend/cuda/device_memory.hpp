// backend/cuda/device_memory.hpp — the CUDA backend's owners of structured device memory: module
// tables (DeviceTables, the TableMemory modules upload into) and one slot's decoded fields
// (DeviceDecoded). Both hold DeviceBuffers (device_buffer.hpp), so they free themselves.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "backend/cuda/device_buffer.hpp"
#include "core/modules.hpp"
#include "core/packet_batch.hpp"

namespace gaspp {

// Module tables in device memory, owned here, freed with the backend.
class DeviceTables final : public TableMemory {
 public:
  const void* place(const void* host, size_t bytes) override {
    if (!bytes) return nullptr;
    DeviceBuffer<uint8_t> d(bytes);
    GASPP_CUDA_CHECK(cudaMemcpy(d.get(), host, bytes, cudaMemcpyHostToDevice));
    bytes_ += bytes;
    allocs_.push_back(std::move(d));
    return allocs_.back().get();
  }
  bool on_device() const override { return true; }
  uint64_t bytes() const { return bytes_; }

 private:
  std::vector<DeviceBuffer<uint8_t>> allocs_;
  uint64_t bytes_ = 0;
};

// Device storage for the decoded fields of one slot: one allocation carved into aligned arrays.
class DeviceDecoded {
 public:
  void allocate(uint32_t packets) {
    size_t total = 0;
#define GASPP_X(type, name, n) total += align(sizeof(type) * size_t(packets) * (n));
    GASPP_DECODED_FIELDS(GASPP_X)
#undef GASPP_X
    base_.allocate(total);
    char* p = reinterpret_cast<char*>(base_.get());
#define GASPP_X(type, name, n)                          \
  view_.name = reinterpret_cast<type*>(p);              \
  p += align(sizeof(type) * size_t(packets) * (n));
    GASPP_DECODED_FIELDS(GASPP_X)
#undef GASPP_X
  }
  const DecodedView& view() const { return view_; }
  size_t bytes() const { return base_.bytes(); }
  // Copies the first `count` packets of every field into host arrays (queued on `stream`).
  void copy_to_host_async(DecodedArrays& h, uint32_t count, cudaStream_t stream) const {
    DecodedView hv = h.view();
#define GASPP_X(type, name, n) \
  GASPP_CUDA_CHECK(cudaMemcpyAsync(hv.name, view_.name, sizeof(type) * size_t(count) * (n), cudaMemcpyDeviceToHost, stream));
    GASPP_DECODED_FIELDS(GASPP_X)
#undef GASPP_X
  }

 private:
  static size_t align(size_t n) { return (n + 255) & ~size_t(255); }
  DeviceBuffer<uint8_t> base_;
  DecodedView view_{};
};

}  // namespace gaspp
