// backend/cuda/module_kernels.cuh — the module stages on CUDA: one kernel per module type
// (module_stage_kernel<M>, over core/module_stage.hpp's module_stage_packet), and the scheduling
// keys between stages, with their launch functions (module_kernels.cu).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "core/modules.hpp"
#include "gaspp/module.hpp"

namespace gaspp {

struct ModulePolicy {
  static constexpr int kThreads = 256;
};

// Launches the stage of module m over a.count packets (its type picks the kernel instantiation;
// std::logic_error for a type not built in); module counters go to d_counts. view: m's View as this
// backend placed it (the instance keeps only its latest upload, and backends on several devices
// each upload their own).
void launch_module_stage(const ModuleInstance& m, const void* view, const StageArgs& a, int blocks, cudaStream_t st,
                         unsigned long long* d_counts);
// Scheduling: each packet's key for stage next_stage (schedule_key) and its index.
void launch_schedule_keys(int blocks, cudaStream_t st, const StageArgs& a, uint16_t next_stage, uint32_t* keys,
                          uint32_t* vals);

}  // namespace gaspp
