// backend/cpu/cpu_backend.cpp — the CPU backend: the same per-packet functions on a thread pool.
//
// Each slot owns host arrays for the decoded fields and verdicts. submit() decodes the batch in
// place (reading the records straight from the source span) across all pool threads, each with
// its own counters, merged at the end; wait() has nothing left to do.
#include <thread>
#include <vector>

#include "backend/backend.hpp"
#include "core/thread_pool.hpp"
#include "decode/decoder.hpp"

namespace gaspp {
namespace {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const BackendConfig& cfg)
      : cfg_(cfg), pool_(cfg.threads > 0 ? cfg.threads : int(std::max(1u, std::thread::hardware_concurrency()))),
        slots_(size_t(std::max(cfg.slots, 3))), per_thread_(size_t(pool_.size())) {
    for (auto& s : slots_) {
      s.rec_off.resize(cfg.batch_packets);
      s.verdict.resize(cfg.batch_packets);
      s.decoded.resize(cfg.batch_packets);
      s.batch.capacity = cfg.batch_packets;
      s.batch.h_rec_off = s.rec_off.data();
      s.batch.h_verdict = s.verdict.data();
    }
  }

  std::string name() const override { return "cpu"; }
  std::string describe() const override {
    return "cpu (" + std::to_string(pool_.size()) + " threads, " + std::to_string(slots_.size()) + " batch slots of " +
           std::to_string(cfg_.batch_packets) + " packets)";
  }
  int slots() const override { return int(slots_.size()); }
  PacketBatch& batch(int slot) override { return slots_[size_t(slot)].batch; }

  void submit(int slot) override {
    Slot& s = slots_[size_t(slot)];
    PacketBatch& b = s.batch;
    BatchView v{b.h_span, b.span_len, b.h_rec_off, b.count, b.fmt, b.link, b.source, s.decoded.view(), b.h_verdict};
    for (auto& c : per_thread_) c = Counters{};
    pool_.parallel_for(b.count, [&](uint64_t begin, uint64_t end, int w) {
      HostCounterSink sink{per_thread_[size_t(w)]};
      DecodedPacket p;
      for (uint64_t i = begin; i < end; ++i) {
        decode_batch_packet(v, uint32_t(i), p);
        store(v.dec, uint32_t(i), p);
        v.verdict[i] = kVerdictPass;
        count_packet(sink, p);
      }
    });
    b.counters = Counters{};
    for (auto& c : per_thread_)
      for (int k = 0; k < c_count_; ++k) b.counters.v[k] += c.v[k];
    if (b.want_decoded) {
      // The decoded arrays are already host memory: hand them over by swapping storage.
      b.decoded.resize(b.capacity);
      std::swap(b.decoded, s.decoded);
    }
  }
  void wait(int) override {}

 private:
  struct Slot {
    std::vector<uint32_t> rec_off;
    std::vector<uint8_t> verdict;
    DecodedArrays decoded;
    PacketBatch batch;
  };
  BackendConfig cfg_;
  ThreadPool pool_;
  std::vector<Slot> slots_;
  std::vector<Counters> per_thread_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(const BackendConfig& cfg) { return std::make_unique<CpuBackend>(cfg); }

}  // namespace gaspp
