#include "core/thread_pool.hpp"

#include <chrono>

namespace gaspp {

namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Waits until done() holds, spinning then yielding for up to ThreadPool::kSpinMicros; returns
// whether it holds (false: the caller goes to sleep).
template <class Done>
bool spin_until(Done done) {
  for (int i = 0; i < 256; ++i) {
    if (done()) return true;
    cpu_relax();
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(ThreadPool::kSpinMicros);
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      cpu_relax();
    }
    // Yielding lets a thread with work run where threads outnumber cores.
    std::this_thread::yield();
    if (std::chrono::steady_clock::now() > until) return done();
  }
}

}  // namespace

ThreadPool::ThreadPool(int threads) {
  if (threads < 1) threads = 1;
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_main(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  cv_start_.notify_all();
  for (auto& t : workers_) t.join();
}

static void range_of(uint64_t n, int parts, int i, uint64_t& b, uint64_t& e) {
  b = n * uint64_t(i) / uint64_t(parts);
  e = n * uint64_t(i + 1) / uint64_t(parts);
}

void ThreadPool::parallel_for(uint64_t n, const RangeFn& fn) {
  const int parts = size();
  if (parts == 1 || n < 2) {
    fn(0, n, 0);
    return;
  }
  job_ = &fn;
  n_ = n;
  pending_.store(parts - 1);
  generation_.fetch_add(1);  // seq_cst: ordered before the read of sleepers_ below
  // A worker counts itself a sleeper before it checks generation_ under mu_, so it either sees
  // the new job or is waiting when the notification comes.
  if (sleepers_.load() > 0) {
    std::lock_guard<std::mutex> g(mu_);
    cv_start_.notify_all();
  }
  uint64_t b, e;
  range_of(n, parts, 0, b, e);
  fn(b, e, 0);
  if (!spin_until([this] { return pending_.load(std::memory_order_acquire) == 0; })) {
    std::unique_lock<std::mutex> lk(mu_);
    caller_sleeps_ = true;
    cv_done_.wait(lk, [this] { return pending_.load() == 0; });
    caller_sleeps_ = false;
  }
  job_ = nullptr;
}

void ThreadPool::worker_main(int id) {
  uint64_t seen = 0;
  for (;;) {
    const auto fresh = [&] { return stop_.load(std::memory_order_acquire) || generation_.load(std::memory_order_acquire) != seen; };
    if (!spin_until(fresh)) {
      std::unique_lock<std::mutex> lk(mu_);
      sleepers_.fetch_add(1);
      cv_start_.wait(lk, [&] { return stop_.load() || generation_.load() != seen; });
      sleepers_.fetch_sub(1);
    }
    if (stop_.load()) return;
    seen = generation_.load(std::memory_order_acquire);
    const RangeFn* job = job_;
    const uint64_t n = n_;
    uint64_t b, e;
    range_of(n, size(), id, b, e);
    (*job)(b, e, id);
    // The last range done wakes the caller if it went to sleep; it checks pending_ under mu_.
    if (pending_.fetch_sub(1) == 1 && caller_sleeps_.load()) {
      std::lock_guard<std::mutex> g(mu_);
      cv_done_.notify_one();
    }
  }
}

}  // namespace gaspp
