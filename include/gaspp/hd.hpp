// gaspp/hd.hpp — host+device building blocks shared by every per-item function.
//
// GASPP_HD marks a function that is compiled for both the CPU backend and the CUDA backend: under
// nvcc it expands to `__host__ __device__`, under a plain C++ compiler to nothing. Per-packet
// logic (decoding, counting) is written once with it and called from a thread pool on the CPU and
// from thin grid-stride kernels on the GPU.
//
// Packet headers sit at arbitrary byte offsets in a batch buffer; a plain multi-byte load of an
// unaligned field faults on the GPU, so every multi-byte field is assembled from single bytes
// (load_be16/32, load_le32...). The compiler merges these where the target allows.
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define GASPP_HD __host__ __device__
#define GASPP_FORCEINLINE __forceinline__
#else
#define GASPP_HD
#define GASPP_FORCEINLINE inline __attribute__((always_inline))
#endif

namespace gaspp {

GASPP_HD GASPP_FORCEINLINE uint16_t load_be16(const uint8_t* p) {
  return static_cast<uint16_t>((p[0] << 8) | p[1]);
}
GASPP_HD GASPP_FORCEINLINE uint32_t load_be32(const uint8_t* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}
GASPP_HD GASPP_FORCEINLINE uint16_t load_le16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
}
GASPP_HD GASPP_FORCEINLINE uint32_t load_le32(const uint8_t* p) {
  return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}
// Four bytes in memory order packed into a word (p[0] in the low byte): addresses are kept this
// way so that printing them byte by byte gives network order on any host.
GASPP_HD GASPP_FORCEINLINE uint32_t load_bytes32(const uint8_t* p) { return load_le32(p); }

GASPP_HD GASPP_FORCEINLINE uint32_t mix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x7feb352dU;
  h ^= h >> 15;
  h *= 0x846ca68bU;
  h ^= h >> 16;
  return h;
}

}  // namespace gaspp

// ---- Atomics shared by host and device code -------------------------------------------------
// Tables that many threads update at once (the flow table) use these, so the same function runs
// on the CPU backend (std::atomic_ref) and on the GPU (device-scope atomics). Loads that publish
// a record (tag then body) use acquire/release order on both.
#if defined(__CUDACC__)
#include <cuda/atomic>
#endif
#include <atomic>
#include <thread>

namespace gaspp {

GASPP_HD GASPP_FORCEINLINE uint32_t atomic_load_acquire(uint32_t* p) {
#if defined(__CUDA_ARCH__)
  return cuda::atomic_ref<uint32_t, cuda::thread_scope_device>(*p).load(cuda::memory_order_acquire);
#else
  return std::atomic_ref<uint32_t>(*p).load(std::memory_order_acquire);
#endif
}
GASPP_HD GASPP_FORCEINLINE void atomic_store_release(uint32_t* p, uint32_t v) {
#if defined(__CUDA_ARCH__)
  cuda::atomic_ref<uint32_t, cuda::thread_scope_device>(*p).store(v, cuda::memory_order_release);
#else
  std::atomic_ref<uint32_t>(*p).store(v, std::memory_order_release);
#endif
}
// Compare-and-swap with acquire-release order; returns whether *p was `expected` and is now `desired`.
GASPP_HD GASPP_FORCEINLINE bool atomic_cas(uint32_t* p, uint32_t expected, uint32_t desired) {
#if defined(__CUDA_ARCH__)
  return cuda::atomic_ref<uint32_t, cuda::thread_scope_device>(*p).compare_exchange_strong(
      expected, desired, cuda::memory_order_acq_rel, cuda::memory_order_acquire);
#else
  return std::atomic_ref<uint32_t>(*p).compare_exchange_strong(expected, desired, std::memory_order_acq_rel,
                                                               std::memory_order_acquire);
#endif
}
GASPP_HD GASPP_FORCEINLINE uint32_t atomic_add(uint32_t* p, uint32_t v) {
#if defined(__CUDA_ARCH__)
  return atomicAdd(p, v);
#else
  return std::atomic_ref<uint32_t>(*p).fetch_add(v, std::memory_order_relaxed);
#endif
}
GASPP_HD GASPP_FORCEINLINE uint32_t atomic_sub(uint32_t* p, uint32_t v) {
#if defined(__CUDA_ARCH__)
  return atomicSub(p, v);
#else
  return std::atomic_ref<uint32_t>(*p).fetch_sub(v, std::memory_order_relaxed);
#endif
}
GASPP_HD GASPP_FORCEINLINE uint32_t atomic_max(uint32_t* p, uint32_t v) {
#if defined(__CUDA_ARCH__)
  return atomicMax(p, v);
#else
  std::atomic_ref<uint32_t> a(*p);
  uint32_t cur = a.load(std::memory_order_relaxed);
  while (cur < v && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {}
  return cur;
#endif
}
// Called while spinning on another thread's short critical section.
GASPP_HD GASPP_FORCEINLINE void spin_pause() {
#if defined(__CUDA_ARCH__)
  __nanosleep(32);
#else
  std::this_thread::yield();
#endif
}

GASPP_HD GASPP_FORCEINLINE uint64_t mix64(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

}  // namespace gaspp
