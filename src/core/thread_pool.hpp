// core/thread_pool.hpp — a fixed set of worker threads running one range job at a time.
//
// parallel_for(n, fn) splits [0, n) into one contiguous range per thread and calls
// fn(begin, end, worker) on each, the calling thread taking range 0; it returns when all ranges
// are done (it waits). No allocation per job.
//
// Between jobs a worker spins on the job counter for up to kSpin (then yields, then sleeps on a
// condition variable), and the caller spins on the count of ranges left the same way. A CPU batch
// runs several jobs a few hundred microseconds apart: waking sleeping workers through the mutex
// and condition variable, one after another, took tens of microseconds a job with 16 threads, a
// share of the batch that grew with the threads. Spinning costs idle cores only while jobs come
// close together; past kSpin a quiet pool sleeps.
#pragma once
#include <atomic>
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

  static constexpr int kSpinMicros = 200;  // busy-waiting, then yielding, before sleeping

 private:
  void worker_main(int id);
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_start_, cv_done_;
  const RangeFn* job_ = nullptr;          // written before generation_ is bumped
  uint64_t n_ = 0;
  std::atomic<uint64_t> generation_{0};   // bumped for each job
  std::atomic<int> pending_{0};           // worker ranges of the current job not done yet
  std::atomic<int> sleepers_{0};          // workers waiting on cv_start_
  std::atomic<bool> caller_sleeps_{false};
  std::atomic<bool> stop_{false};
};

}  // namespace gaspp
