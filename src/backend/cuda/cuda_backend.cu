// backend/cuda/cuda_backend.cu — the CUDA backend: streams, pinned memory, device buffers, kernels.
//
// Each of the (at least three) slots has its own CUDA stream, pinned host arrays (record offsets,
// verdicts, counters), a pinned staging buffer and device buffers sized for one full batch. For a
// batch, submit() queues on the slot's stream: the H2D copy of the records, the decode kernel, and
// the D2H copy of verdicts and counters only (decoded fields stay on the device unless the caller
// asked for them). wait() synchronizes the slot's stream.
//
// Transfers (GASPP §5.1): the capture mapping is registered with cudaHostRegister (read-only), so
// a dense batch — a file range — is DMA'd to the device straight from the page cache. A sparse
// batch (record bytes / span bytes under `compact_below`) is first packed back to back, each
// record at a 16-byte boundary, into the slot's pinned staging buffer. If registration fails, every
// batch goes through staging. The counts of both kinds and the bytes moved are reported.
#include <cuda_runtime.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "decode/decoder.hpp"

namespace gaspp {
namespace {

#define GASPP_CUDA_CHECK(call)                                                                      \
  do {                                                                                              \
    const cudaError_t e_ = (call);                                                                  \
    if (e_ != cudaSuccess)                                                                          \
      throw std::runtime_error(std::string(#call) + " failed at " __FILE__ ":" + std::to_string(__LINE__) + \
                               ": " + cudaGetErrorString(e_));                                      \
  } while (0)

// Tuning of the decode launch, named rather than scattered.
struct DecodePolicy {
  static constexpr int kThreads = 256;
  static constexpr int kBlocksPerSm = 8;
};

struct SharedCounterSink {
  unsigned long long* s;
  __device__ void add(int i, uint64_t n) { atomicAdd(&s[i], static_cast<unsigned long long>(n)); }
};

__global__ void __launch_bounds__(DecodePolicy::kThreads) decode_kernel(BatchView b, unsigned long long* d_counters) {
  __shared__ unsigned long long s[c_count_];
  for (int k = threadIdx.x; k < c_count_; k += blockDim.x) s[k] = 0;
  __syncthreads();
  SharedCounterSink sink{s};
  DecodedPacket p;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < b.count; i += gridDim.x * blockDim.x) {
    decode_batch_packet(b, i, p);
    store(b.dec, i, p);
    b.verdict[i] = kVerdictPass;
    count_packet(sink, p);
  }
  __syncthreads();
  for (int k = threadIdx.x; k < c_count_; k += blockDim.x)
    if (s[k]) atomicAdd(&d_counters[k], s[k]);
}

// Device storage for the decoded fields of one slot: one allocation carved into aligned arrays.
class DeviceDecoded {
 public:
  void allocate(uint32_t packets) {
    size_t total = 0;
#define GASPP_X(type, name, n) total += align(sizeof(type) * size_t(packets) * (n));
    GASPP_DECODED_FIELDS(GASPP_X)
#undef GASPP_X
    GASPP_CUDA_CHECK(cudaMalloc(&base_, total));
    bytes_ = total;
    char* p = static_cast<char*>(base_);
#define GASPP_X(type, name, n)                          \
  view_.name = reinterpret_cast<type*>(p);              \
  p += align(sizeof(type) * size_t(packets) * (n));
    GASPP_DECODED_FIELDS(GASPP_X)
#undef GASPP_X
  }
  void release() {
    if (base_) cudaFree(base_);
    base_ = nullptr;
  }
  const DecodedView& view() const { return view_; }
  size_t bytes() const { return bytes_; }
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
  void* base_ = nullptr;
  size_t bytes_ = 0;
  DecodedView view_{};
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const BackendConfig& cfg) : cfg_(cfg), slots_(size_t(std::max(cfg.slots, 3))) {
    GASPP_CUDA_CHECK(cudaGetDevice(&device_));
    GASPP_CUDA_CHECK(cudaGetDeviceProperties(&prop_, device_));
    staging_bytes_ = cfg.batch_bytes + uint64_t(cfg.batch_packets) * 16;
    for (auto& s : slots_) {
      GASPP_CUDA_CHECK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
      GASPP_CUDA_CHECK(cudaMallocHost(&s.h_rec_off, sizeof(uint32_t) * cfg.batch_packets));
      GASPP_CUDA_CHECK(cudaMallocHost(&s.h_rec_off_staged, sizeof(uint32_t) * cfg.batch_packets));
      GASPP_CUDA_CHECK(cudaMallocHost(&s.h_verdict, cfg.batch_packets));
      GASPP_CUDA_CHECK(cudaMallocHost(&s.h_counters, sizeof(unsigned long long) * c_count_));
      GASPP_CUDA_CHECK(cudaMallocHost(&s.h_staging, staging_bytes_));
      GASPP_CUDA_CHECK(cudaMalloc(&s.d_data, staging_bytes_));
      GASPP_CUDA_CHECK(cudaMalloc(&s.d_rec_off, sizeof(uint32_t) * cfg.batch_packets));
      GASPP_CUDA_CHECK(cudaMalloc(&s.d_verdict, cfg.batch_packets));
      GASPP_CUDA_CHECK(cudaMalloc(&s.d_counters, sizeof(unsigned long long) * c_count_));
      s.dec.allocate(cfg.batch_packets);
      s.batch.capacity = cfg.batch_packets;
      s.batch.h_rec_off = s.h_rec_off;
      s.batch.h_verdict = s.h_verdict;
      device_bytes_ += staging_bytes_ + 5ull * cfg.batch_packets + 8 * c_count_ + s.dec.bytes();
    }
    blocks_cap_ = prop_.multiProcessorCount * DecodePolicy::kBlocksPerSm;
  }

  ~CudaBackend() override {
    detach_source();
    for (auto& s : slots_) {
      if (s.stream) cudaStreamSynchronize(s.stream);
      cudaStreamDestroy(s.stream);
      cudaFreeHost(s.h_rec_off);
      cudaFreeHost(s.h_rec_off_staged);
      cudaFreeHost(s.h_verdict);
      cudaFreeHost(s.h_counters);
      cudaFreeHost(s.h_staging);
      cudaFree(s.d_data);
      cudaFree(s.d_rec_off);
      cudaFree(s.d_verdict);
      cudaFree(s.d_counters);
      s.dec.release();
    }
  }

  std::string name() const override { return "cuda"; }
  std::string describe() const override {
    char b[256];
    std::snprintf(b, sizeof b, "cuda (%s, %d SMs, %zu batch slots of %u packets, %.1f MiB device memory reserved)",
                  prop_.name, prop_.multiProcessorCount, slots_.size(), cfg_.batch_packets, double(device_bytes_) / 1048576.0);
    return b;
  }
  int slots() const override { return int(slots_.size()); }
  PacketBatch& batch(int slot) override { return slots_[size_t(slot)].batch; }

  bool attach_source(const uint8_t* base, uint64_t len) override {
    if (registered_ && base == registered_ && len == registered_len_) return true;
    detach_source();
    if (!base || len == 0) return false;
    const cudaError_t e = cudaHostRegister(const_cast<uint8_t*>(base), len,
                                           cudaHostRegisterReadOnly | cudaHostRegisterPortable);
    if (e != cudaSuccess) {
      cudaGetLastError();  // clear it: staging works without registration
      return false;
    }
    registered_ = base;
    registered_len_ = len;
    return true;
  }
  void detach_source() override {
    if (registered_) {
      for (auto& s : slots_) cudaStreamSynchronize(s.stream);
      cudaHostUnregister(const_cast<uint8_t*>(registered_));
    }
    registered_ = nullptr;
    registered_len_ = 0;
  }

  void submit(int slot) override {
    Slot& s = slots_[size_t(slot)];
    PacketBatch& b = s.batch;
    const bool in_registered = registered_ && b.h_span >= registered_ && b.h_span + b.span_len <= registered_ + registered_len_;
    const double occupancy = b.span_len ? double(b.record_bytes) / double(b.span_len) : 1.0;
    const bool direct = in_registered && !cfg_.force_compact && occupancy >= cfg_.compact_below &&
                        b.span_len <= staging_bytes_;
    uint64_t data_len;
    const uint32_t* rec_off;
    if (direct) {
      GASPP_CUDA_CHECK(cudaMemcpyAsync(s.d_data, b.h_span, b.span_len, cudaMemcpyHostToDevice, s.stream));
      data_len = b.span_len;
      rec_off = b.h_rec_off;
      ++direct_;
    } else {
      // Pack records back to back at 16-byte boundaries into pinned staging.
      uint64_t o = 0;
      for (uint32_t i = 0; i < b.count; ++i) {
        const uint8_t* r = b.h_span + b.h_rec_off[i];
        const uint64_t n = kRecordHeaderBytes + read_record_header(r, b.fmt).cap_len;
        std::memcpy(s.h_staging + o, r, n);
        s.h_rec_off_staged[i] = uint32_t(o);
        o += (n + 15) & ~uint64_t(15);
      }
      GASPP_CUDA_CHECK(cudaMemcpyAsync(s.d_data, s.h_staging, o, cudaMemcpyHostToDevice, s.stream));
      data_len = o;
      rec_off = s.h_rec_off_staged;
      ++compacted_;
    }
    b.compacted = !direct;
    GASPP_CUDA_CHECK(cudaMemcpyAsync(s.d_rec_off, rec_off, sizeof(uint32_t) * b.count, cudaMemcpyHostToDevice, s.stream));
    GASPP_CUDA_CHECK(cudaMemsetAsync(s.d_counters, 0, sizeof(unsigned long long) * c_count_, s.stream));
    h2d_ += data_len + sizeof(uint32_t) * b.count;
    if (b.count > 0) {
      BatchView v{s.d_data, data_len, s.d_rec_off, b.count, b.fmt, b.link, b.source, s.dec.view(), s.d_verdict};
      int blocks = int((b.count + DecodePolicy::kThreads - 1) / DecodePolicy::kThreads);
      if (blocks > blocks_cap_) blocks = blocks_cap_;
      decode_kernel<<<blocks, DecodePolicy::kThreads, 0, s.stream>>>(v, s.d_counters);
      GASPP_CUDA_CHECK(cudaGetLastError());
    }
    GASPP_CUDA_CHECK(cudaMemcpyAsync(s.h_verdict, s.d_verdict, b.count, cudaMemcpyDeviceToHost, s.stream));
    GASPP_CUDA_CHECK(cudaMemcpyAsync(s.h_counters, s.d_counters, sizeof(unsigned long long) * c_count_,
                                     cudaMemcpyDeviceToHost, s.stream));
    d2h_ += b.count + sizeof(unsigned long long) * c_count_;
    if (b.want_decoded) {
      b.decoded.resize(b.capacity);
      s.dec.copy_to_host_async(b.decoded, b.count, s.stream);
      d2h_ += uint64_t(decoded_bytes_per_packet()) * b.count;
    }
  }

  void wait(int slot) override {
    Slot& s = slots_[size_t(slot)];
    GASPP_CUDA_CHECK(cudaStreamSynchronize(s.stream));
    for (int k = 0; k < c_count_; ++k) s.batch.counters.v[k] = s.h_counters[k];
  }

  uint64_t batches_direct() const override { return direct_; }
  uint64_t batches_compacted() const override { return compacted_; }
  uint64_t bytes_h2d() const override { return h2d_; }
  uint64_t bytes_d2h() const override { return d2h_; }

 private:
  struct Slot {
    cudaStream_t stream = nullptr;
    uint32_t* h_rec_off = nullptr;
    uint32_t* h_rec_off_staged = nullptr;
    uint8_t* h_verdict = nullptr;
    unsigned long long* h_counters = nullptr;
    uint8_t* h_staging = nullptr;
    uint8_t* d_data = nullptr;
    uint32_t* d_rec_off = nullptr;
    uint8_t* d_verdict = nullptr;
    unsigned long long* d_counters = nullptr;
    DeviceDecoded dec;
    PacketBatch batch;
  };
  BackendConfig cfg_;
  std::vector<Slot> slots_;
  int device_ = 0;
  cudaDeviceProp prop_{};
  uint64_t staging_bytes_ = 0;
  uint64_t device_bytes_ = 0;
  int blocks_cap_ = 1;
  const uint8_t* registered_ = nullptr;
  uint64_t registered_len_ = 0;
  uint64_t direct_ = 0, compacted_ = 0, h2d_ = 0, d2h_ = 0;
};

}  // namespace

bool cuda_usable(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    if (why) *why = e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device";
    cudaGetLastError();
    return false;
  }
  return true;
}

std::unique_ptr<Backend> make_cuda_backend(const BackendConfig& cfg) {
  std::string why;
  if (!cuda_usable(&why)) throw std::runtime_error("no usable CUDA device: " + why);
  return std::make_unique<CudaBackend>(cfg);
}

}  // namespace gaspp
