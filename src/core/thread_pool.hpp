// core/thread_pool.hpp — a fixed set of worker threads running one range job at a time.
//
// parallel_for(n, fn) splits [0, n) into one contiguous range per thread and calls
// fn(begin, end, worker) on each, the calling thread taking range 0; it returns when all ranges
// are done (it waits). No allocation per job.
//
// Workers wait for a job on the job counter itself (C++20 atomic wait: a futex on Linux) after a
// short spin, and the caller waits on the count of ranges left the same way. A CPU batch runs
// several jobs a few hundred microseconds apart; with a mutex and condition variable every woken
// worker took the mutex in turn to read the job, tens of microseconds a job with 16 threads, a
// share of the batch that grew with the threads. A longer spin helped on idle cores and cost a
// lot where threads outnumber cores (the waiting thread held the core the worker needed).
//
// With timing on (set_timing), each range's time is added to its thread's busy total, which
// take_busy_ns() sums and clears: a job whose threads are busy well under threads x its wall time
// waits on its slowest range or on waking the workers.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
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

  // Busy time (see the header); set_timing only between jobs.
  void set_timing(bool on) { timing_ = on; }
  uint64_t take_busy_ns();

  static constexpr int kSpin = 1000;  // pause instructions before a wait sleeps (~10-40 us)

 private:
  void worker_main(int id);
  void run_range(const RangeFn& fn, int id, uint64_t b, uint64_t e);
  struct alignas(64) Busy {
    uint64_t ns = 0;  // written by its own thread during a job, read by the caller between jobs
  };
  std::vector<std::thread> workers_;
  std::vector<Busy> busy_;
  bool timing_ = false;
  const RangeFn* job_ = nullptr;           // written before generation_ is bumped
  uint64_t n_ = 0;
  std::atomic<uint32_t> generation_{0};    // bumped for each job (and to stop)
  std::atomic<int> pending_{0};            // worker ranges of the current job not done yet
  std::atomic<bool> stop_{false};
};

}  // namespace gaspp
