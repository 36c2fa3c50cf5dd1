#include "core/thread_pool.hpp"

namespace gaspp {

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
  {
    std::lock_guard<std::mutex> g(mu_);
    job_ = &fn;
    n_ = n;
    pending_ = parts - 1;
    ++generation_;
  }
  cv_start_.notify_all();
  uint64_t b, e;
  range_of(n, parts, 0, b, e);
  fn(b, e, 0);
  std::unique_lock<std::mutex> lk(mu_);
  cv_done_.wait(lk, [this] { return pending_ == 0; });
  job_ = nullptr;
}

void ThreadPool::worker_main(int id) {
  uint64_t seen = 0;
  for (;;) {
    const RangeFn* job;
    uint64_t n;
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_start_.wait(lk, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
      n = n_;
    }
    uint64_t b, e;
    range_of(n, size(), id, b, e);
    (*job)(b, e, id);
    {
      std::lock_guard<std::mutex> g(mu_);
      if (--pending_ == 0) cv_done_.notify_one();
    }
  }
}

}  // namespace gaspp
