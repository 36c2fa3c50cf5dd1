// backend/cuda/cuda_check.hpp — turns a failed CUDA runtime call into an exception naming the call
// and where it was made.
#pragma once
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#define GASPP_CUDA_CHECK(call)                                                                      \
  do {                                                                                              \
    const cudaError_t e_ = (call);                                                                  \
    if (e_ != cudaSuccess)                                                                          \
      throw std::runtime_error(std::string(#call) + " failed at " __FILE__ ":" + std::to_string(__LINE__) + \
                               ": " + cudaGetErrorString(e_));                                      \
  } while (0)
