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
// lot where threads outnumber cores (the waiting thread held the core the worker needed). So after
// the spin a waiting thread yields its core (sched_yield: another runnable thread gets it, an idle
// core comes straight back) for up to kYieldNs before it sleeps (when the pool has no more
// threads than the host has cores; beyond, it sleeps after the spin): a job that follows a serial
// phase of the batch (tens of microseconds) found its workers asleep, and waking them cost 15-30
// microseconds a job on 16 cores.
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
  // Serial mode (only between jobs): every job runs on the calling thread as one range, worker 0,
  // as in a pool of one thread; the workers are not woken. For jobs too small to repay waking them
  // (a few packets: each wake costs microseconds, and a worker whose core is busy elsewhere can
  // take far longer to come), so that a quiet link's batches are not held up by it.
  void set_serial(bool on) { serial_ = on; }
  uint64_t take_busy_ns();

  static constexpr int kSpin = 1000;  // pause instructions before a wait yields (~10-40 us)
  static constexpr long kYieldNs = 300'000;  // then yielding the core, before the wait sleeps

 private:
  void worker_main(int id);
  void run_range(const RangeFn& fn, int id, uint64_t b, uint64_t e);
  struct alignas(64) Busy {
    uint64_t ns = 0;  // written by its own thread during a job, read by the caller between jobs
  };
  std::vector<std::thread> workers_;
  std::vector<Busy> busy_;
  bool timing_ = false;
  bool serial_ = false;
  long yield_ns_ = 0;  // kYieldNs, or 0 where threads outnumber cores
  const RangeFn* job_ = nullptr;           // written before generation_ is bumped
  uint64_t n_ = 0;
  std::atomic<uint32_t> generation_{0};    // bumped for each job (and to stop)
  std::atomic<int> pending_{0};            // worker ranges of the current job not done yet
  std::atomic<bool> stop_{false};
};

}  // namespace gaspp
