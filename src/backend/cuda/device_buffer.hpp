// backend/cuda/device_buffer.hpp — owners of device and pinned host memory, streams and events.
//
// Every allocation of the CUDA backend is one of these: the owner frees what it holds when it is
// destroyed (also when a constructor throws half-way, since members already built are destroyed),
// cannot be copied, and hands kernels a plain pointer (get(), or the views built from it), which
// is what kernels take: trivially copyable views, never owners.
//
//   DeviceBuffer<T>  cudaMalloc:  n elements of device memory
//   PinnedBuffer<T>  cudaMallocHost: page-locked host memory, for asynchronous copies
//   MappedBuffer<T>  cudaHostAlloc(mapped): page-locked host memory kernels write into directly
//                    (device() is its device alias): records, events, chunks for the host
//   CudaStream, CudaEvent  a stream (optionally created by a green context's maker) and an event
//
// Allocation failures throw std::runtime_error naming the call (GASPP_CUDA_CHECK). Frees in
// destructors ignore errors: a destructor must not throw, and a failed free leaves nothing to do.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "backend/cuda/cuda_check.hpp"

namespace gaspp {

namespace detail {
// An owning pointer with a free function; move-only.
template <class T, cudaError_t (*Free)(void*)>
class CudaOwned {
 public:
  CudaOwned() = default;
  CudaOwned(CudaOwned&& o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  CudaOwned& operator=(CudaOwned&& o) noexcept {
    if (this != &o) {
      reset();
      p_ = std::exchange(o.p_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  CudaOwned(const CudaOwned&) = delete;
  CudaOwned& operator=(const CudaOwned&) = delete;
  ~CudaOwned() { reset(); }
  void reset() {
    if (p_) Free(p_);
    p_ = nullptr;
    n_ = 0;
  }
  T* get() const { return p_; }
  size_t size() const { return n_; }
  size_t bytes() const { return n_ * sizeof(T); }
  explicit operator bool() const { return p_ != nullptr; }
  T& operator[](size_t i) const { return p_[i]; }

 protected:
  void adopt(void* p, size_t n) {
    p_ = static_cast<T*>(p);
    n_ = n;
  }
  T* p_ = nullptr;
  size_t n_ = 0;
};
inline cudaError_t free_host(void* p) { return cudaFreeHost(p); }
}  // namespace detail

template <class T>
class DeviceBuffer : public detail::CudaOwned<T, cudaFree> {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t n) { allocate(n); }
  void allocate(size_t n) {
    this->reset();
    void* p = nullptr;
    if (n) GASPP_CUDA_CHECK(cudaMalloc(&p, n * sizeof(T)));
    this->adopt(p, n);
  }
};

template <class T>
class PinnedBuffer : public detail::CudaOwned<T, detail::free_host> {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(size_t n) { allocate(n); }
  void allocate(size_t n) {
    this->reset();
    void* p = nullptr;
    if (n) GASPP_CUDA_CHECK(cudaMallocHost(&p, n * sizeof(T)));
    this->adopt(p, n);
  }
};

template <class T>
class MappedBuffer : public detail::CudaOwned<T, detail::free_host> {
 public:
  MappedBuffer() = default;
  explicit MappedBuffer(size_t n) { allocate(n); }
  void allocate(size_t n) {
    this->reset();
    d_ = nullptr;
    void* p = nullptr;
    if (!n) return;
    GASPP_CUDA_CHECK(cudaHostAlloc(&p, n * sizeof(T), cudaHostAllocMapped));
    this->adopt(p, n);
    void* d = nullptr;
    GASPP_CUDA_CHECK(cudaHostGetDevicePointer(&d, p, 0));
    d_ = static_cast<T*>(d);
  }
  T* device() const { return d_; }  // the device alias kernels write through

 private:
  T* d_ = nullptr;
};

namespace detail {
// An owned CUDA handle (stream, event) with its destroy function; move-only.
template <class H, cudaError_t (*Destroy)(H)>
class CudaHandle {
 public:
  CudaHandle() = default;
  explicit CudaHandle(H h) : h_(h) {}  // adopts h
  CudaHandle(CudaHandle&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  CudaHandle& operator=(CudaHandle&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, nullptr);
    }
    return *this;
  }
  CudaHandle(const CudaHandle&) = delete;
  CudaHandle& operator=(const CudaHandle&) = delete;
  ~CudaHandle() { reset(); }
  void reset() {
    if (h_) Destroy(h_);
    h_ = nullptr;
  }
  H get() const { return h_; }
  operator H() const { return h_; }

 private:
  H h_ = nullptr;
};
}  // namespace detail

class CudaStream : public detail::CudaHandle<cudaStream_t, cudaStreamDestroy> {
 public:
  using CudaHandle::CudaHandle;  // CudaStream(s) adopts a stream made elsewhere (a green context's)
  static CudaStream non_blocking() {
    cudaStream_t s = nullptr;
    GASPP_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    return CudaStream(s);
  }
};

class CudaEvent : public detail::CudaHandle<cudaEvent_t, cudaEventDestroy> {
 public:
  using CudaHandle::CudaHandle;
  static CudaEvent make(unsigned flags = cudaEventDefault) {
    cudaEvent_t e = nullptr;
    GASPP_CUDA_CHECK(cudaEventCreateWithFlags(&e, flags));
    return CudaEvent(e);
  }
};

// Makes `device` current for the calling thread while it lives, and restores the one before: every
// entry of a backend bound to one device (BackendConfig::device) opens one, so backends on different
// devices can be driven from one thread.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    GASPP_CUDA_CHECK(cudaGetDevice(&before_));
    if (before_ != device) GASPP_CUDA_CHECK(cudaSetDevice(device));
    changed_ = before_ != device;
  }
  ~DeviceScope() {
    if (changed_) cudaSetDevice(before_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int before_ = 0;
  bool changed_ = false;
};

}  // namespace gaspp
