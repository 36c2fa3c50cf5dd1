// capture/threaded_source.hpp — a live Source read by a thread of its own (`gaspp -i`: one reader
// thread per ring, as Suricata's af-packet capture threads): the thread walks the ring and writes
// the record headers, and the pipeline's thread takes finished records from a queue.
//
// Why: reading a ring touches every frame's first cache line (the kernel's frame header, the record
// header written in front of the frame), lines the kernel just wrote from another CPU. Done on the
// pipeline's thread for every ring, that was a memory wait per packet on the thread that also
// builds the batches and writes the outputs; a reader thread per ring spreads it over the rings'
// threads, and the pipeline's thread reads only the queue, which stays in cache.
//
// The contract is Source's (capture/source.hpp), with the inner source's sequence numbers,
// records, regions and report passed through:
//  * The reader thread is the only caller of the inner source's next() and release(): release()
//    here records how far the pipeline released and wakes the thread, which applies it before it
//    reads on (so the inner source needs no locking). refresh_counts() and report() lock the inner
//    source against the thread for the time of the call.
//  * Limit: the queue holds kQueueRecords records. When it is full the thread stops reading the
//    ring until the pipeline takes some; the ring then fills, and the kernel drops and counts what
//    it cannot place (the summary's `kernel` line), as it does when a single reader falls behind.
//  * Wake-ups: the thread reads the ring in bursts of up to kBurst records without waiting; after a
//    burst that found the queue empty (the pipeline may be asleep) it signals wait_fd(), an eventfd.
//    next() with a wait polls that descriptor, as MultiSource polls every input's.
//  * Cost on the pipeline's thread, which every packet crosses: it takes records from a snapshot of
//    tail_ and publishes how far it took (head_) every kPublish records, or at once when it finds
//    the snapshot used up (always before it waits), rather than at each record: each publication
//    moves head_'s cache line to the reader's CPU. The reader only reads head_ for the room left
//    (a late head_ leaves it less) and to know whether the pipeline may be waiting (which it only
//    does after publishing). The reader also works out each record's `fragment` hint, so the
//    batcher need not read the frame's bytes.
//  * When the run stops (finish(), or the destructor) the thread is stopped and joined. Records it
//    read that the pipeline never took are counted in the report (`unprocessed_at_stop`): read from
//    the ring, not processed, as frames still in a ring at the stop are.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "capture/source.hpp"

namespace gaspp {

class ThreadedSource final : public Source {
 public:
  static constexpr uint32_t kQueueRecords = 1u << 15;  // a power of two
  static constexpr uint32_t kBurst = 256;
  static constexpr uint32_t kPublish = 64;  // records the pipeline takes between publications of head_
  // Starts the reader thread. Throws std::system_error when the eventfds cannot be made.
  explicit ThreadedSource(std::unique_ptr<Source> inner);
  ~ThreadedSource() override;
  ThreadedSource(const ThreadedSource&) = delete;
  ThreadedSource& operator=(const ThreadedSource&) = delete;

  SourceStatus next(SourceRecord& r, uint64_t wait_ns) override;
  void release(uint64_t seq) override;
  std::vector<MemoryRegion> regions() const override { return regions_; }
  void finish() override;
  SourceReport report() const override;
  int wait_fd() const override { return ready_fd_; }
  void refresh_counts() override;

 private:
  void run();                 // the reader thread
  void stop_reader();         // stops and joins it (idempotent)
  bool pop(SourceRecord& r);  // the pipeline's side of the queue
  void publish_head();        // head_ = taken_, for the reader
  void drain_ready();         // resets the ready eventfd once a signal was seen

  std::unique_ptr<Source> inner_;
  std::vector<MemoryRegion> regions_;  // the inner source's, fixed at construction
  std::vector<SourceRecord> q_;
  // Queue indices: head_ is the pipeline's (next to take), tail_ the thread's (next to fill); both
  // only grow. Each on its own cache line, as each is written by one thread and read by the other.
  alignas(64) std::atomic<uint64_t> head_{0};
  alignas(64) std::atomic<uint64_t> tail_{0};
  // The pipeline's own: how far it took (head_ lags it by less than kPublish) and the tail_ it
  // last saw. Its own cache line, next to nothing the reader writes.
  alignas(64) uint64_t taken_ = 0;
  uint64_t seen_tail_ = 0;
  alignas(64) std::atomic<uint64_t> release_upto_{~0ull};  // ~0: nothing released yet
  std::atomic<bool> ended_{false};     // the inner source said end; nothing more is queued
  std::atomic<bool> signaled_{false};  // ready_fd_ was written since the pipeline last drained it
  std::atomic<bool> stop_{false};
  int ready_fd_ = -1;    // eventfd: records were queued while the queue was empty (the pipeline waits on it)
  int release_fd_ = -1;  // eventfd: the pipeline released records, or the thread should stop
  mutable std::mutex inner_mu_;  // the inner source against the thread, for report() and refresh_counts()
  uint64_t unprocessed_at_stop_ = 0;
  std::thread thread_;
};

}  // namespace gaspp
