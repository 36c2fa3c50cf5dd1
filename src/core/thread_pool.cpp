#include "core/thread_pool.hpp"

#include <algorithm>
#include <chrono>

namespace gaspp {

namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Waits until a no longer holds `old`: a short spin, then yielding the core for up to kYieldNs,
// then the futex (atomic wait).
template <class T>
void wait_change(const std::atomic<T>& a, T old, long yield_ns) {
  for (int i = 0; i < ThreadPool::kSpin; ++i) {
    if (a.load(std::memory_order_acquire) != old) return;
    cpu_relax();
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(yield_ns);
  for (int i = 0; yield_ns > 0 && a.load(std::memory_order_acquire) == old; ++i) {
    if ((i & 15) == 15 && std::chrono::steady_clock::now() >= until) break;
    std::this_thread::yield();
  }
  while (a.load(std::memory_order_acquire) == old) a.wait(old, std::memory_order_acquire);
}

}  // namespace

ThreadPool::ThreadPool(int threads) {
  if (threads < 1) threads = 1;
  busy_.resize(size_t(threads));
  // More threads than cores: a yielding waiter takes turns with the worker it waits for.
  yield_ns_ = unsigned(threads) <= std::max(1u, std::thread::hardware_concurrency()) ? kYieldNs : 0;
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_main(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  generation_.fetch_add(1);
  generation_.notify_all();
  for (auto& t : workers_) t.join();
}

static void range_of(uint64_t n, int parts, int i, uint64_t& b, uint64_t& e) {
  b = n * uint64_t(i) / uint64_t(parts);
  e = n * uint64_t(i + 1) / uint64_t(parts);
}

void ThreadPool::run_range(const RangeFn& fn, int id, uint64_t b, uint64_t e) {
  if (!timing_) {
    fn(b, e, id);
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  fn(b, e, id);
  busy_[size_t(id)].ns += uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
}

uint64_t ThreadPool::take_busy_ns() {
  uint64_t sum = 0;
  for (Busy& b : busy_) {
    sum += b.ns;
    b.ns = 0;
  }
  return sum;
}

void ThreadPool::parallel_for(uint64_t n, const RangeFn& fn) {
  const int parts = size();
  if (parts == 1 || n < 2 || serial_) {
    run_range(fn, 0, 0, n);
    return;
  }
  job_ = &fn;
  n_ = n;
  pending_.store(parts - 1, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);  // publishes job_, n_ and pending_
  generation_.notify_all();
  uint64_t b, e;
  range_of(n, parts, 0, b, e);
  run_range(fn, 0, b, e);
  for (int left; (left = pending_.load(std::memory_order_acquire)) != 0;) wait_change(pending_, left, yield_ns_);
  job_ = nullptr;
}

void ThreadPool::worker_main(int id) {
  uint32_t seen = 0;
  for (;;) {
    wait_change(generation_, seen, yield_ns_);
    seen = generation_.load(std::memory_order_acquire);
    if (stop_.load()) return;
    uint64_t b, e;
    range_of(n_, size(), id, b, e);
    run_range(*job_, id, b, e);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
  }
}

}  // namespace gaspp
