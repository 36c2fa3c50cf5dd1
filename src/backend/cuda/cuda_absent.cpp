// backend/cuda/cuda_absent.cpp — stands in for the CUDA backend in builds without CUDA.
#include <stdexcept>

#include "backend/backend.hpp"

namespace gaspp {

bool cuda_usable(std::string* why) {
  if (why) *why = "this build has no CUDA backend (configured with GASPP_CUDA=OFF or no nvcc)";
  return false;
}

int cuda_device_count() { return 0; }

std::unique_ptr<Backend> make_cuda_backend(const BackendConfig&) {
  throw std::runtime_error("this build has no CUDA backend (configured with GASPP_CUDA=OFF or no nvcc)");
}

}  // namespace gaspp
