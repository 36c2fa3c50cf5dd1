// capture/threaded_source.cpp — see capture/threaded_source.hpp.
#include "capture/threaded_source.hpp"

#include "defrag/defrag.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <ctime>
#include <system_error>

namespace gaspp {

namespace {

int make_eventfd() {
  const int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "capture reader thread: eventfd");
  return fd;
}

void signal_fd(int fd) {
  const uint64_t one = 1;
  // EAGAIN only when the counter is near overflow: it is readable then anyway.
  while (write(fd, &one, sizeof one) < 0 && errno == EINTR) {
  }
}

void drain_fd(int fd) {
  uint64_t v;
  while (read(fd, &v, sizeof v) < 0 && errno == EINTR) {
  }
}

uint64_t now_ns() {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count());
}

}  // namespace

ThreadedSource::ThreadedSource(std::unique_ptr<Source> inner)
    : inner_(std::move(inner)), regions_(inner_->regions()), q_(kQueueRecords) {
  static_assert((kQueueRecords & (kQueueRecords - 1)) == 0, "the queue's size is a power of two");
  ready_fd_ = make_eventfd();
  try {
    release_fd_ = make_eventfd();
  } catch (...) {
    close(ready_fd_);
    throw;
  }
  thread_ = std::thread([this] { run(); });
}

ThreadedSource::~ThreadedSource() {
  stop_reader();
  close(ready_fd_);
  close(release_fd_);
}

void ThreadedSource::run() {
  uint64_t applied = ~0ull;   // the release last handed to the inner source
  bool woke_by_ring = false;  // the last wait ended for the ring alone (a hint, see below)
  for (;;) {
    if (stop_.load(std::memory_order_acquire)) return;
    const uint64_t t = tail_.load(std::memory_order_relaxed);
    const uint64_t room = kQueueRecords - (t - head_.load(std::memory_order_acquire));
    uint32_t n = 0;
    SourceStatus st = SourceStatus::idle;
    {
      std::lock_guard<std::mutex> lk(inner_mu_);
      const uint64_t upto = release_upto_.load(std::memory_order_acquire);
      if (upto != applied) {
        inner_->release(upto);
        applied = upto;
      }
      while (n < room && n < kBurst) {
        SourceRecord& r = q_[(t + n) & (kQueueRecords - 1)];
        st = inner_->next(r, 0);
        if (st != SourceStatus::record) break;
        r.fragment = int8_t(may_be_fragment(r.rec + kRecordHeaderBytes, r.cap_len, r.link));
        ++n;
      }
    }
    if (n) {
      // seq_cst on both sides (pop()): either this load sees the pipeline's last take, or the
      // pipeline's next look at tail_ sees these records; so a pipeline that found the queue
      // empty and waits is always woken.
      tail_.store(t + n, std::memory_order_seq_cst);
      if (head_.load(std::memory_order_seq_cst) == t) {
        signal_fd(ready_fd_);
        signaled_.store(true, std::memory_order_release);  // after the write: a drain that sees it resets it
      }
      woke_by_ring = false;
    }
    if (st == SourceStatus::end) {
      ended_.store(true, std::memory_order_seq_cst);
      signal_fd(ready_fd_);
      signaled_.store(true, std::memory_order_release);
      return;
    }
    if (n) continue;
    if (room == 0) {  // the pipeline is behind: give it time (the ring holds what comes meanwhile)
      timespec ts{0, 20000};
      nanosleep(&ts, nullptr);
      continue;
    }
    // Nothing ready. Wait for the ring or for a release (which may hand blocks back, and is what
    // a ring whose every block is still ours waits for). The ring's descriptor is only a hint: it
    // stays readable while the block or slot it would hand over next is still ours, so after a
    // wake for the ring alone that brought nothing, the next wait is for a release or 200 us.
    const int ring_fd = inner_->wait_fd();
    const bool use_ring = ring_fd >= 0 && !woke_by_ring;
    pollfd p[2] = {{release_fd_, POLLIN, 0}, {ring_fd, POLLIN | POLLERR, 0}};
    timespec ts{0, use_ring ? 1000000 : 200000};
    (void)ppoll(p, use_ring ? 2 : 1, &ts, nullptr);
    if (p[0].revents & POLLIN) drain_fd(release_fd_);
    woke_by_ring = use_ring && p[1].revents && !(p[0].revents & POLLIN);
  }
}

void ThreadedSource::publish_head() { head_.store(taken_, std::memory_order_seq_cst); }

bool ThreadedSource::pop(SourceRecord& r) {
  if (taken_ == seen_tail_) {
    // The snapshot is used up: publish, then look again. seq_cst on both sides (run()): either
    // the reader's look at head_ after queueing sees this, or this load sees its records; so a
    // pipeline that found the queue empty and waits is always woken.
    publish_head();
    seen_tail_ = tail_.load(std::memory_order_seq_cst);
    if (taken_ == seen_tail_) return false;
  }
  r = q_[taken_ & (kQueueRecords - 1)];
  if ((++taken_ & (kPublish - 1)) == 0) head_.store(taken_, std::memory_order_release);  // room for the reader
  return true;
}

void ThreadedSource::drain_ready() {
  if (signaled_.exchange(false, std::memory_order_acq_rel)) drain_fd(ready_fd_);
}

SourceStatus ThreadedSource::next(SourceRecord& r, uint64_t wait_ns) {
  if (pop(r)) return SourceStatus::record;  // the usual case, without a look at the clock
  const uint64_t deadline = now_ns() + wait_ns;
  for (;;) {
    if (pop(r)) return SourceStatus::record;
    // Empty: reset the descriptor before looking again, so that a wait on it after this (here or
    // in MultiSource's poll) ends only for records queued after the look.
    drain_ready();
    if (pop(r)) return SourceStatus::record;
    if (ended_.load(std::memory_order_seq_cst)) return pop(r) ? SourceStatus::record : SourceStatus::end;
    const uint64_t now = now_ns();
    if (now >= deadline) return SourceStatus::idle;
    const uint64_t left = deadline - now;
    timespec ts{time_t(left / 1000000000ull), long(left % 1000000000ull)};
    if (left > 1000000) ts = timespec{0, 1000000};  // look again at least every millisecond
    pollfd p{ready_fd_, POLLIN, 0};
    (void)ppoll(&p, 1, &ts, nullptr);
  }
}

void ThreadedSource::release(uint64_t seq) {
  release_upto_.store(seq, std::memory_order_release);
  signal_fd(release_fd_);
}

void ThreadedSource::stop_reader() {
  if (!thread_.joinable()) return;
  stop_.store(true, std::memory_order_release);
  signal_fd(release_fd_);
  thread_.join();
  unprocessed_at_stop_ = tail_.load(std::memory_order_acquire) - taken_;
}

void ThreadedSource::finish() {
  stop_reader();
  std::lock_guard<std::mutex> lk(inner_mu_);
  inner_->finish();
}

void ThreadedSource::refresh_counts() {
  std::lock_guard<std::mutex> lk(inner_mu_);
  inner_->refresh_counts();
}

SourceReport ThreadedSource::report() const {
  std::lock_guard<std::mutex> lk(inner_mu_);
  SourceReport rep = inner_->report();
  rep.unprocessed_at_stop += unprocessed_at_stop_;
  return rep;
}

}  // namespace gaspp
