// backend/cuda/stage_marks.hpp — where a batch's time goes on the device (BackendConfig::stage_times,
// `--stage-times`): an event recorded on the stream at the end of each stage, and after the batch
// the time between consecutive events added to that stage's total. A diagnostic: a few
// microseconds a batch, nothing when off.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "backend/cuda/device_buffer.hpp"

namespace gaspp {

class StageMarks {
 public:
  static constexpr int kMax = 32;  // stage-time events a batch; stages beyond are not timed
  void enable() {
    for (auto& e : events_) e = CudaEvent::make();
    on_ = true;
  }
  void begin() { n_ = 0; }
  // The end of stage `name` on stream st (name must outlive the batch: a literal or a module's name).
  void mark(cudaStream_t st, const char* name) {
    if (!on_ || n_ >= kMax) return;
    GASPP_CUDA_CHECK(cudaEventRecord(events_[size_t(n_)], st));
    names_[size_t(n_++)] = name;
  }
  // Adds the finished batch's stages to totals (call after the streams marked were synchronized);
  // counted once, whatever calls it again.
  void add_to(std::vector<StageTime>& totals) {
    for (int k = 1; k < n_; ++k) {
      float ms = 0;
      GASPP_CUDA_CHECK(cudaEventElapsedTime(&ms, events_[size_t(k - 1)], events_[size_t(k)]));
      const std::string name = names_[size_t(k)];
      auto it = std::find_if(totals.begin(), totals.end(), [&](const StageTime& t) { return t.name == name; });
      if (it == totals.end()) it = totals.insert(totals.end(), StageTime{name});
      it->add(1000.0 * double(ms));
    }
    n_ = 0;
  }

 private:
  bool on_ = false;
  std::array<CudaEvent, kMax> events_{};
  std::array<const char*, kMax> names_{};
  int n_ = 0;
};

}  // namespace gaspp
