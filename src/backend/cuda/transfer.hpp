// backend/cuda/transfer.hpp — how a batch reaches the device (GASPP §5.1): the registered source
// region (HostRegistration), the choice of path for each batch (choose_transfer) and the packing of
// a sparse batch into staging (compact_records). cuda_backend.cu queues the copies.
//
// Paths, in the order they are tried:
//   sliced     slicing applies, the batch lies in the registered region and the device has an alias
//              of it, and (under Slice::automatic) its records average kSliceMinMeanRecord bytes or
//              more: nothing is copied, the kernels read the heads gathered through the alias;
//   direct     the batch lies in the registered region and its records fill at least compact_below
//              of its span: one DMA straight from the region;
//   compacted  otherwise: records packed back to back at 16-byte boundaries into pinned staging,
//              their offsets rewritten, and one DMA from there.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "backend/backend.hpp"
#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/decode_kernels.cuh"

namespace gaspp {

// One host region registered for device access (cudaHostRegister, read-only, mapped); unregistered
// by detach() or the destructor. The caller makes sure no queued work still reads it.
class HostRegistration {
 public:
  HostRegistration() = default;
  HostRegistration(const HostRegistration&) = delete;
  HostRegistration& operator=(const HostRegistration&) = delete;
  ~HostRegistration() { detach(); }
  // Registers [base, base + len); false (and nothing registered) when the driver refuses, in which
  // case every batch is staged. Registering the same region again is a no-op. A region another
  // backend of the process registered already (several backends sharding the flows: the
  // registration is portable, valid for every device) is used as it is and left registered at
  // detach: its owner unregisters it, after the others have detached.
  bool attach(const uint8_t* base, uint64_t len) {
    if (base_ && base == base_ && len == len_) return true;
    detach();
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
    owned_ = e == cudaSuccess;
    if (e == cudaErrorHostMemoryAlreadyRegistered) {
      cudaGetLastError();
    } else if (e != cudaSuccess) {
      cudaGetLastError();  // clear it: staging works without registration
      return false;
    }
    base_ = base;
    len_ = len;
    // The device alias of the region, for slicing; without one every batch is copied.
    void* alias = nullptr;
    if (cudaHostGetDevicePointer(&alias, const_cast<uint8_t*>(base), 0) != cudaSuccess) {
      cudaGetLastError();
      alias = nullptr;
    }
    alias_ = static_cast<const uint8_t*>(alias);
    return true;
  }
  void detach() {
    if (base_ && owned_) cudaHostUnregister(const_cast<uint8_t*>(base_));
    owned_ = false;
    base_ = alias_ = nullptr;
    len_ = 0;
  }
  bool attached() const { return base_ != nullptr; }
  bool is(const uint8_t* base, uint64_t len) const { return base_ && base == base_ && len == len_; }
  bool contains(const uint8_t* p, uint64_t n) const { return base_ && p >= base_ && p + n <= base_ + len_; }
  // The device alias of the region's start (null: none) and of a host address inside it.
  const uint8_t* alias() const { return alias_; }
  const uint8_t* alias_of(const uint8_t* p) const { return alias_ + (p - base_); }

 private:
  const uint8_t* base_ = nullptr;
  const uint8_t* alias_ = nullptr;
  uint64_t len_ = 0;
  bool owned_ = false;  // this object registered it (else another backend did)
};

enum class TransferPath : uint8_t { sliced, direct, compacted };

// The path of batch b (see the top). slice: slicing applies to this backend's configuration;
// staging_bytes: what one DMA from the region may move (the device buffer's size).
inline TransferPath choose_transfer(const PacketBatch& b, const BackendConfig& cfg, bool slice,
                                    const HostRegistration& reg, uint64_t staging_bytes) {
  const bool in_region = reg.contains(b.h_span, b.span_len);
  // Automatic slicing only pays for batches of large packets (kSliceMinMeanRecord): a head is read
  // through the mapping, a small record is cheaper copied whole.
  const bool big_enough = cfg.slice == BackendConfig::Slice::on ||
                          (b.count && b.record_bytes >= uint64_t(kSliceMinMeanRecord) * b.count);
  if (slice && big_enough && in_region && reg.alias() && !cfg.force_compact) return TransferPath::sliced;
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
  uint64_t len;            // bytes valid at data
  const uint32_t* rec_off; // host offsets to copy to the device: the batch's, or the packed ones
};

// Queues batch b's records to d_data on stream st by the path choose_transfer() picks (sliced: no
// copy); compacting packs them into h_staging and writes their offsets to h_offsets.
inline RecordsOnDevice send_records(const PacketBatch& b, const BackendConfig& cfg, bool slice,
                                    const HostRegistration& reg, uint8_t* d_data, uint64_t staging_bytes,
                                    uint8_t* h_staging, uint32_t* h_offsets, cudaStream_t st) {
  const TransferPath path = choose_transfer(b, cfg, slice, reg, staging_bytes);
  if (path == TransferPath::sliced) return {path, reg.alias_of(b.h_span), b.span_len, b.h_rec_off};
  if (path == TransferPath::direct) {
    GASPP_CUDA_CHECK(cudaMemcpyAsync(d_data, b.h_span, b.span_len, cudaMemcpyHostToDevice, st));
    return {path, d_data, b.span_len, b.h_rec_off};
  }
  const uint64_t len = compact_records(b, h_staging, h_offsets);
  GASPP_CUDA_CHECK(cudaMemcpyAsync(d_data, h_staging, len, cudaMemcpyHostToDevice, st));
  return {path, d_data, len, h_offsets};
}

}  // namespace gaspp
