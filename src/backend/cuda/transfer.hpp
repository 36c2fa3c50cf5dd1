// backend/cuda/transfer.hpp — how a batch reaches the device (GASPP §5.1): the registered source
// region (HostRegistration), the choice of path for each batch (choose_transfer) and the packing of
// a sparse batch into staging (compact_records). cuda_backend.cu queues the copies.
//
// Paths, in the order they are tried:
//   sliced     slicing applies, the batch lies in a registered region and the device has an alias
//              of it, and (under Slice::automatic) its records average kSliceMinMeanRecord bytes or
//              more: nothing is copied, the kernels read the heads gathered through the alias;
//   direct     the batch lies in a registered region and its records fill at least compact_below
//              of its span: one DMA straight from the region;
//   compacted  otherwise: records packed back to back at 16-byte boundaries into pinned staging,
//              their offsets rewritten, and one DMA from there.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "backend/backend.hpp"
#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/decode_kernels.cuh"

namespace gaspp {

// The host regions registered for device access (cudaHostRegister, read-only, mapped): a mapped
// capture file, or each ring of a live capture. At most kMaxHostRegions; batches from a region
// beyond them are staged (counted: regions_not_registered). Unregistered by detach() or the
// destructor. The caller makes sure no queued work still reads them.
constexpr size_t kMaxHostRegions = 16;

class HostRegistration {
 public:
  // One registered region and its device alias (null: none, no slicing from it).
  struct Region {
    const uint8_t* base = nullptr;
    const uint8_t* alias = nullptr;
    uint64_t len = 0;
    bool owned = false;  // this object registered it (else another backend did)
    bool contains(const uint8_t* p, uint64_t n) const { return p >= base && p + n <= base + len; }
    const uint8_t* alias_of(const uint8_t* p) const { return alias + (p - base); }
  };

  HostRegistration() = default;
  HostRegistration(const HostRegistration&) = delete;
  HostRegistration& operator=(const HostRegistration&) = delete;
  ~HostRegistration() { detach(); }
  // Whether the registered set is exactly this one (in order), so attaching it again is a no-op.
  bool is(const std::vector<MemoryRegion>& want) const {
    // Compare against the regions offered last time (registered or not).
    if (want.size() != offered_.size()) return false;
    for (size_t k = 0; k < want.size(); ++k)
      if (offered_[k].base != want[k].base || offered_[k].len != want[k].len) return false;
    return true;
  }
  // Registers each region (up to kMaxHostRegions); returns how many are registered. A region the
  // driver refuses is left out (its batches are staged). A region another backend of the process
  // registered already (several backends sharding the flows: the registration is portable, valid
  // for every device) is used as it is and left registered at detach: its owner unregisters it,
  // after the others have detached.
  size_t attach(const std::vector<MemoryRegion>& regions) {
    detach();
    offered_ = regions;
    for (const MemoryRegion& r : regions)
      if (n_ < kMaxHostRegions) add(r.base, r.len);  // refused: left out
    last_registered_ = n_;
    last_not_registered_ = regions.size() - n_;  // refused, or past the limit
    return n_;
  }
  void detach() {
    for (size_t k = 0; k < n_; ++k)
      if (regs_[k].owned) cudaHostUnregister(const_cast<uint8_t*>(regs_[k].base));
    n_ = 0;
    offered_.clear();
  }
  bool attached() const { return n_ != 0; }
  // What the last attach registered and left out: kept after detach (a run's report reads them
  // once the source has gone).
  size_t registered() const { return last_registered_; }
  size_t not_registered() const { return last_not_registered_; }
  // The registered region holding [p, p + n), or null.
  const Region* find(const uint8_t* p, uint64_t n) const {
    for (size_t k = 0; k < n_; ++k)
      if (regs_[k].contains(p, n)) return &regs_[k];
    return nullptr;
  }

 private:
  bool add(const uint8_t* base, uint64_t len) {
    if (!base || len == 0) return false;
    // Ask first whether another backend registered it: registering again fails with an error the
    // runtime records (and the sanitizer reports), though nothing is wrong.
    cudaPointerAttributes attr{};
    const bool registered = cudaPointerGetAttributes(&attr, base) == cudaSuccess && attr.type == cudaMemoryTypeHost;
    if (!registered) cudaGetLastError();
    const cudaError_t e = registered ? cudaErrorHostMemoryAlreadyRegistered
                                     : cudaHostRegister(const_cast<uint8_t*>(base), len,
                                                        cudaHostRegisterReadOnly | cudaHostRegisterPortable |
                                                            cudaHostRegisterMapped);
    if (e == cudaErrorHostMemoryAlreadyRegistered) {
      cudaGetLastError();
    } else if (e != cudaSuccess) {
      cudaGetLastError();  // clear it: staging works without registration
      return false;
    }
    Region& r = regs_[n_++];
    r.base = base;
    r.len = len;
    r.owned = e == cudaSuccess;
    // The device alias of the region, for slicing; without one its batches are copied.
    void* alias = nullptr;
    if (cudaHostGetDevicePointer(&alias, const_cast<uint8_t*>(base), 0) != cudaSuccess) {
      cudaGetLastError();
      alias = nullptr;
    }
    r.alias = static_cast<const uint8_t*>(alias);
    return true;
  }

  Region regs_[kMaxHostRegions];
  size_t n_ = 0;
  size_t last_registered_ = 0, last_not_registered_ = 0;
  std::vector<MemoryRegion> offered_;    // the set last attached, as offered
};

enum class TransferPath : uint8_t { sliced, direct, compacted };

// The path of batch b (see the top). slice: slicing applies to this backend's configuration;
// staging_bytes: what one DMA from the region may move (the device buffer's size).
inline TransferPath choose_transfer(const PacketBatch& b, const BackendConfig& cfg, bool slice,
                                    const HostRegistration::Region* region, uint64_t staging_bytes) {
  const bool in_region = region != nullptr;
  // Automatic slicing only pays for batches of large packets (kSliceMinMeanRecord): a head is read
  // through the mapping, a small record is cheaper copied whole.
  const bool big_enough = cfg.slice == BackendConfig::Slice::on ||
                          (b.count && b.record_bytes >= uint64_t(kSliceMinMeanRecord) * b.count);
  if (slice && big_enough && in_region && region->alias && !cfg.force_compact) return TransferPath::sliced;
  const double occupancy = b.span_len ? double(b.record_bytes) / double(b.span_len) : 1.0;
  if (in_region && !cfg.force_compact && occupancy >= cfg.compact_below && b.span_len <= staging_bytes)
    return TransferPath::direct;
  return TransferPath::compacted;
}

// Packs batch b's records back to back at 16-byte boundaries into staging, writing their new
// offsets; returns the bytes used.
inline uint64_t compact_records(const PacketBatch& b, uint8_t* staging, uint32_t* offsets) {
  uint64_t o = 0;
  for (uint32_t i = 0; i < b.count; ++i) {
    const uint8_t* r = b.h_span + b.h_rec_off[i];
    const uint64_t n = kRecordHeaderBytes + read_record_header(r, b.fmt).cap_len;
    std::memcpy(staging + o, r, n);
    offsets[i] = uint32_t(o);
    o += (n + 15) & ~uint64_t(15);
  }
  return o;
}

// Where a batch's records are for the kernels once send_records() has queued them.
struct RecordsOnDevice {
  TransferPath path;
  const uint8_t* data;     // the device buffer, or the region's alias (sliced)
  const uint8_t* alias_lo; // sliced: the alias of the region's start (what the gather may read from)
  uint64_t len;            // bytes valid at data
  const uint32_t* rec_off; // host offsets to copy to the device: the batch's, or the packed ones
};

// Queues batch b's records to d_data on stream st by the path choose_transfer() picks (sliced: no
// copy); compacting packs them into h_staging and writes their offsets to h_offsets.
inline RecordsOnDevice send_records(const PacketBatch& b, const BackendConfig& cfg, bool slice,
                                    const HostRegistration& reg, uint8_t* d_data, uint64_t staging_bytes,
                                    uint8_t* h_staging, uint32_t* h_offsets, cudaStream_t st) {
  const HostRegistration::Region* region = reg.find(b.h_span, b.span_len);
  const TransferPath path = choose_transfer(b, cfg, slice, region, staging_bytes);
  if (path == TransferPath::sliced) return {path, region->alias_of(b.h_span), region->alias, b.span_len, b.h_rec_off};
  if (path == TransferPath::direct) {
    GASPP_CUDA_CHECK(cudaMemcpyAsync(d_data, b.h_span, b.span_len, cudaMemcpyHostToDevice, st));
    return {path, d_data, nullptr, b.span_len, b.h_rec_off};
  }
  const uint64_t len = compact_records(b, h_staging, h_offsets);
  GASPP_CUDA_CHECK(cudaMemcpyAsync(d_data, h_staging, len, cudaMemcpyHostToDevice, st));
  return {path, d_data, nullptr, len, h_offsets};
}

}  // namespace gaspp
