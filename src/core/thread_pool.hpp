// core/thread_pool.hpp — a fixed set of worker threads running one range job at a time.
//
// parallel_for(n, fn) splits [0, n) into one contiguous range per thread and calls
// fn(begin, end, worker) on each, the calling thread taking range 0; it returns when all ranges
// are done (it waits). Workers sleep between jobs. No allocation per job.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace gaspp {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  int size() const { return int(workers_.size()) + 1; }
  using RangeFn = std::function<void(uint64_t begin, uint64_t end, int worker)>;
  void parallel_for(uint64_t n, const RangeFn& fn);

 private:
  void worker_main(int id);
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_start_, cv_done_;
  const RangeFn* job_ = nullptr;
  uint64_t n_ = 0;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

}  // namespace gaspp
