// backend/cuda/sm_partition.hpp — splits the GPU's SMs into two green contexts: a small partition
// for the slice gather and the rest for every other kernel.
//
// Why: the slice gather (cuda_backend.cu) reads each record's head through PCIe with many reads
// in flight, each for a microsecond or more. Kernels sharing an SM with it wait behind those reads:
// on an H100 the flow stage took 850 µs per 262144-packet batch beside the gather against 350 µs
// alone. With the gather on 8 SMs of its own it took about 600 µs, and the gather itself went
// faster (bench_firewall, mix sliced, same run: 269 -> 392 Mpps decode+flow).
//
// State: the two green contexts (cuGreenCtxCreate), created once; streams made in either with
// stream(); the caller destroys its streams before the partition. The driver functions are looked
// up at run time (cudaGetDriverEntryPointByVersion), so nothing links against libcuda and a driver
// without green contexts (before CUDA 12.4), a MIG slice or any other refusal leaves ok() false,
// why() saying why, and the caller on ordinary streams.
//
// Example:
//   SmPartition p(device, 8);
//   if (p.ok()) { cudaStream_t g = p.stream(true), w = p.stream(false); ... }
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include <string>

namespace gaspp {

class SmPartition {
 public:
  // Splits off `want` SMs (0: the device's smallest partition), rounded up as the device requires.
  SmPartition(int device, unsigned want) {
    if (!load(why_)) return;
    CUdevResource all{}, part{}, rest{};
    if (!ok_call(get_resource_(CUdevice(device), &all, CU_DEV_RESOURCE_TYPE_SM), "cuDeviceGetDevResource")) return;
    unsigned groups = 1;
    const unsigned min = all.sm.minSmPartitionSize ? all.sm.minSmPartitionSize : 1;
    if (!ok_call(split_(&part, &groups, &all, &rest, 0, want > min ? want : min), "cuDevSmResourceSplitByCount")) return;
    if (groups != 1 || rest.sm.smCount == 0) {
      why_ = "the device has too few SMs to split";
      return;
    }
    CUdevResourceDesc dp{}, dr{};
    if (!ok_call(generate_(&dp, &part, 1), "cuDevResourceGenerateDesc") ||
        !ok_call(generate_(&dr, &rest, 1), "cuDevResourceGenerateDesc"))
      return;
    if (!ok_call(create_(&small_, dp, CUdevice(device), CU_GREEN_CTX_DEFAULT_STREAM), "cuGreenCtxCreate")) return;
    if (!ok_call(create_(&rest_, dr, CUdevice(device), CU_GREEN_CTX_DEFAULT_STREAM), "cuGreenCtxCreate")) return;
    small_sms_ = part.sm.smCount;
    rest_sms_ = rest.sm.smCount;
    ok_ = true;
  }
  ~SmPartition() {
    if (rest_) destroy_(rest_);
    if (small_) destroy_(small_);
  }
  SmPartition(const SmPartition&) = delete;
  SmPartition& operator=(const SmPartition&) = delete;

  bool ok() const { return ok_; }
  const std::string& why() const { return why_; }
  unsigned small_sms() const { return small_sms_; }
  unsigned rest_sms() const { return rest_sms_; }

  // A new non-blocking stream whose kernels run on the small partition or on the rest; null if
  // the driver refuses (why() says why). The caller destroys it (cudaStreamDestroy) before this.
  cudaStream_t stream(bool small) {
    CUstream s = nullptr;
    if (!ok_ || !ok_call(stream_create_(&s, small ? small_ : rest_, CU_STREAM_NON_BLOCKING, 0), "cuGreenCtxStreamCreate"))
      return nullptr;
    return s;
  }

 private:
  template <class F>
  static bool entry(const char* name, F& fn, std::string& why) {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion(name, &p, CUDART_VERSION, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess || !p) {
      cudaGetLastError();  // not sticky, but keep the runtime's last error clean for the caller
      why = std::string("the driver has no ") + name;
      return false;
    }
    fn = reinterpret_cast<F>(p);
    return true;
  }
  bool load(std::string& why) {
    return entry("cuDeviceGetDevResource", get_resource_, why) && entry("cuDevSmResourceSplitByCount", split_, why) &&
           entry("cuDevResourceGenerateDesc", generate_, why) && entry("cuGreenCtxCreate", create_, why) &&
           entry("cuGreenCtxDestroy", destroy_, why) && entry("cuGreenCtxStreamCreate", stream_create_, why);
  }
  bool ok_call(CUresult r, const char* what) {
    if (r == CUDA_SUCCESS) return true;
    why_ = std::string(what) + " failed (CUresult " + std::to_string(int(r)) + ")";
    return false;
  }

  CUresult (*get_resource_)(CUdevice, CUdevResource*, CUdevResourceType) = nullptr;
  CUresult (*split_)(CUdevResource*, unsigned*, const CUdevResource*, CUdevResource*, unsigned, unsigned) = nullptr;
  CUresult (*generate_)(CUdevResourceDesc*, CUdevResource*, unsigned) = nullptr;
  CUresult (*create_)(CUgreenCtx*, CUdevResourceDesc, CUdevice, unsigned) = nullptr;
  CUresult (*destroy_)(CUgreenCtx) = nullptr;
  CUresult (*stream_create_)(CUstream*, CUgreenCtx, unsigned, int) = nullptr;
  CUgreenCtx small_ = nullptr, rest_ = nullptr;
  unsigned small_sms_ = 0, rest_sms_ = 0;
  bool ok_ = false;
  std::string why_;
};

}  // namespace gaspp
