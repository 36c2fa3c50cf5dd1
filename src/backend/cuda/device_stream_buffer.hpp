// backend/cuda/device_stream_buffer.hpp — reassembly's state in device memory: the out-of-order
// buffer (two sets of segment descriptions used in turn, two byte pools where held bytes stay; see
// stream/stream.hpp), its counts, the walk's scratch and the chunk list of a batch whose streams the
// host does not want. A walk reads set in() and writes the other; flip() after queueing it makes
// what it wrote the next walk's input (batches are ordered by the flow stage's event chain).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/device_buffer.hpp"
#include "stream/stream.hpp"

namespace gaspp {

class DeviceStreamBuffer {
 public:
  void allocate(const StreamConfig& cfg, uint32_t batch_packets) {
    cfg_ = cfg;
    held_cap_ = stream_held_cap(cfg, batch_packets);
    chunk_cap_ = stream_chunk_cap(batch_packets, held_cap_);
    for (int k = 0; k < 2; ++k) {
      held_[k].allocate(held_cap_);
      pool_[k].allocate(cfg.held_bytes);
    }
    counts_.allocate(1);
    GASPP_CUDA_CHECK(cudaMemset(counts_.get(), 0, sizeof(StreamCounts)));
    pend_.allocate(size_t(held_cap_) + batch_packets);
    chunks_.allocate(chunk_cap_);
  }
  uint32_t held_cap() const { return held_cap_; }
  uint32_t chunk_cap() const { return chunk_cap_; }
  int in() const { return in_; }
  void flip() { in_ ^= 1; }
  StreamCounts* counts() const { return counts_.get(); }
  const StreamHeld* held_in() const { return held_[in_].get(); }
  uint64_t bytes() const {
    return held_[0].bytes() + held_[1].bytes() + pool_[0].bytes() + pool_[1].bytes() + counts_.bytes() + pend_.bytes() +
           chunks_.bytes();
  }
  // The view a walk gets (hooks left empty): records at data / rec_off (null at the final flush);
  // chunks to `host_chunks` (a mapped buffer's device alias, gathered for the host) or, when null,
  // to the buffer's own list.
  StreamRef ref(const uint8_t* data, const uint32_t* rec_off, StreamChunk* host_chunks) const {
    StreamCounts* c = counts_.get();
    StreamRef sr{};
    sr.cfg = cfg_;
    sr.data = data;
    sr.rec_off = rec_off;
    sr.held_in = held_[in_].get();
    sr.held_in_n = &c->held_n[in_];
    sr.held_out = held_[in_ ^ 1].get();
    sr.held_out_n = &c->held_n[in_ ^ 1];
    sr.held_out_bytes = &c->live_bytes[in_ ^ 1];
    sr.pool[0] = pool_[0].get();
    sr.pool[1] = pool_[1].get();
    sr.counts = c;
    sr.held_cap = held_cap_;
    sr.pend = pend_.get();
    sr.chunks = host_chunks ? host_chunks : chunks_.get();
    sr.chunk_n = &c->chunk_n;
    sr.chunk_cap = chunk_cap_;
    sr.bytes_used = &c->bytes_used;
    sr.gather = host_chunks != nullptr;
    return sr;
  }
  StreamCounts read_counts() const {  // waits
    StreamCounts c;
    GASPP_CUDA_CHECK(cudaMemcpy(&c, counts_.get(), sizeof c, cudaMemcpyDeviceToHost));
    return c;
  }

 private:
  StreamConfig cfg_{};
  uint32_t held_cap_ = 0, chunk_cap_ = 0;
  DeviceBuffer<StreamHeld> held_[2];
  DeviceBuffer<uint8_t> pool_[2];
  DeviceBuffer<StreamCounts> counts_;
  DeviceBuffer<StreamPending> pend_;  // the walk's scratch, one entry per sorted item
  DeviceBuffer<StreamChunk> chunks_;  // chunks when the host does not want them
  int in_ = 0;                        // the set the next walk reads
};

}  // namespace gaspp
