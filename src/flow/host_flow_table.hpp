// flow/host_flow_table.hpp — the flow table in host memory (CPU backend), and the sizing rules
// both backends share.
//
// Sizing: `capacity` flows at most; the table has 5/4 as many slots, rounded up to whole buckets,
// so that buckets (32 slots, a flow can only live in its own) rarely fill before the table does.
// Memory is fixed at construction: slots × (240-byte record + 4-byte tag + module state) plus one
// lock word per bucket; reported by bytes().
#pragma once
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <type_traits>


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

// Host memory that reads as zeros and is not touched when allocated: calloc takes blocks this large
// straight from the kernel's zero-filled pages, so a page costs time and memory only once it is
// written. std::vector value-initializes every element instead, and zeroing the default flow table,
// out-of-order pools and record buffers (about 900 MiB) took most of a short run's time. For types
// whose all-zero bytes are their value-initialized state (no member initializers other than zero).
template <class T>
class ZeroFilledArray {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                "zero bytes must be a valid T and nothing may need destroying");

 public:
  ZeroFilledArray() = default;
  explicit ZeroFilledArray(size_t n) { reset(n); }
  // Replaces the contents with n zeroed elements; throws std::bad_alloc when memory is short.
  void reset(size_t n) {
    void* p = n ? std::calloc(n, sizeof(T)) : nullptr;
    if (n && !p) throw std::bad_alloc();
    p_.reset(static_cast<T*>(p));
    n_ = n;
  }
  T* data() { return p_.get(); }
  const T* data() const { return p_.get(); }
  size_t size() const { return n_; }
  T& operator[](size_t i) { return p_.get()[i]; }
  const T& operator[](size_t i) const { return p_.get()[i]; }
  T* begin() { return data(); }
  T* end() { return data() + n_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + n_; }

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> p_;
  size_t n_ = 0;
};

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
    static_assert(kTagEmpty == 0, "empty slots are zero-filled memory");
    tags_.reset(shape_.slots());
    recs_.reset(shape_.slots());
    locks_.reset(shape_.buckets);
    module_.reset(uint64_t(shape_.slots()) * shape_.module_state_bytes);
  }
  FlowTableRef ref() {
    return FlowTableRef{tags_.data(), recs_.data(), locks_.data(), module_.data(), &state_,
                        shape_.buckets, shape_.capacity, shape_.module_state_bytes};
  }
  const FlowTableShape& shape() const { return shape_; }
  const FlowTableState& state() const { return state_; }

 private:
  FlowTableShape shape_;
  ZeroFilledArray<uint32_t> tags_;
  ZeroFilledArray<FlowRecord> recs_;
  ZeroFilledArray<uint32_t> locks_;
  ZeroFilledArray<uint8_t> module_;
  FlowTableState state_{};
};

}  // namespace gaspp
