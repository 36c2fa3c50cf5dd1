// pipeline/pipeline.hpp — source → batches → backend → per-batch results, with slots in rotation.
//
// run_source() takes a Source's records (capture/source.hpp) in order, closes a batch when it holds
// `max_packets` packets or `max_bytes` record bytes, when the next packet is more than `timeout_ns`
// (capture time) newer than the batch's oldest, when the record format or link type changes, or
// when the source is idle (a live source with nothing for `linger_ns` while a batch is open), and
// hands batches to the backend's slots in turn. Records that lie back to back are batched as one span of the
// source's memory; others are copied together first. A batch's records are released to the
// source once the backend has finished it. run_capture() is run_source() over a FileSource. With three slots,
// filling batch N+1, the device working on batch N and the host finishing batch N-1 overlap.
// Each finished batch is passed to `on_batch` (in capture order) before its slot is reused; at the
// end, what the flush of reassembly and of the flow table produced goes to on_streams, on_flush
// and on_flows.
//
// Every record read ends in the totals: decoded (passed or dropped by verdict) or, for records the
// source rejects, in its issues (a file source stops at a fatal one; see capture_file.hpp).
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <span>
#include <vector>

#include "backend/backend.hpp"
#include "capture/capture_file.hpp"
#include "capture/file_source.hpp"
#include "capture/source.hpp"
#include "defrag/defrag.hpp"

namespace gaspp {

struct BatchPolicy {
  uint32_t max_packets = 65536;
  uint64_t max_bytes = 64ull << 20;
  uint64_t timeout_ns = 1'000'000'000ull;  // 0 = no time limit
  // How long the batcher waits for a live source's next record (Source::next) with no batch open,
  // before it looks at the time again (stats, the stop flag) ...
  uint64_t idle_wait_ns = 100'000'000ull;
  // ... and with a batch open, before the batch goes out as it is. 0: a batch goes out as soon as
  // the source has nothing more ready (an AF_PACKET ring: no further block retired), so packets do
  // not wait on a quiet link; under load the ring always has more and batches fill up.
  uint64_t linger_ns = 100'000'000ull;
  // Room beyond max_bytes for reassembled datagrams (defrag/defrag.hpp), which join the batch of
  // the fragment that completed them; the backend must hold max_bytes + datagram_room_bytes, and
  // max_packets + 1 packets (size_backend_for_defrag does both). Without that room a datagram that
  // does not fit goes to the next batch, and the fragment does not share its verdict.
  uint64_t datagram_room_bytes = 0;
  // Adaptive batch size (live traffic; FlowShader §IV): batches close at a target size that
  // AdaptiveBatchSize moves between adaptive_min_packets and max_packets with the load, so that a
  // quiet link's packets are not held for a large batch to fill. Off: every batch may take
  // max_packets.
  bool adaptive = false;
  uint32_t adaptive_min_packets = 256;
};

// The adaptive target: it starts at the minimum; a batch that filled it doubles it (the link
// delivers at least that much between batches: larger batches keep the device busy), and a batch
// closed by the source's idleness or the timeout at less than half of it halves it (a quiet link:
// smaller batches go out sooner). Always within [min, max].
struct AdaptiveBatchSize {
  uint32_t min = 256, max = 65536, target = 256;
  uint64_t grown = 0, shrunk = 0;  // times it doubled, halved
  uint32_t peak = 256;             // largest target reached
  AdaptiveBatchSize() = default;
  AdaptiveBatchSize(uint32_t lo, uint32_t hi) : min(lo < 1 ? 1 : (lo > hi ? hi : lo)), max(hi), target(min), peak(min) {}
  // After a batch of `count` packets; full: it closed because it held `target`.
  void after_batch(uint32_t count, bool full) {
    if (full && target < max) {
      target = target > max / 2 ? max : target * 2;
      ++grown;
      if (target > peak) peak = target;
    } else if (!full && count < target / 2 && target > min) {
      target = target / 2 < min ? min : target / 2;
      ++shrunk;
    }
  }
};

// The largest record a reassembled datagram makes: a 65,535-byte IP datagram behind headers of
// at most 64 KiB (the link and tunnel layers, IPv6 extension headers), and its record header.
constexpr uint64_t kDatagramRecordBytes = 16 + 65535 + 65536;

// Sizes a backend for run_capture with reassembly: one packet and kDatagramRecordBytes more than
// the policy's batches hold.
inline void size_backend_for_defrag(BatchPolicy& policy, uint32_t& backend_packets, uint64_t& backend_bytes) {
  policy.datagram_room_bytes = kDatagramRecordBytes;
  backend_packets = policy.max_packets + 1;
  backend_bytes = policy.max_bytes + kDatagramRecordBytes;
}

// Latency of live packets, from the kernel's receive timestamp (the record's time, CLOCK_REALTIME)
// to the moment the pipeline has the batch's verdicts (before on_batch: outputs, inline forwarding).
// Log-linear buckets: exact below 8 ns, then 8 per power of two (within 12.5%); quantiles are the
// upper edge of their bucket, so they never understate.
struct LatencyHistogram {
  static constexpr int kSub = 8;
  static constexpr int kBuckets = 62 * kSub;
  uint64_t n[kBuckets] = {};
  uint64_t count = 0, max_ns = 0;
  static int bucket(uint64_t ns) {
    if (ns < kSub) return int(ns);
    const int k = 63 - __builtin_clzll(ns);  // >= 3
    return (k - 2) * kSub + int((ns >> (k - 3)) & (kSub - 1));
  }
  static uint64_t upper_edge(int b) {
    if (b < kSub) return uint64_t(b);
    const int k = b / kSub + 2, sub = b % kSub;
    return ((uint64_t(kSub + sub) << (k - 3)) + (uint64_t(1) << (k - 3))) - 1;
  }
  void add(uint64_t ns) {
    const int b = bucket(ns);
    ++n[b < kBuckets ? b : kBuckets - 1];
    ++count;
    if (ns > max_ns) max_ns = ns;
  }
  // The q-quantile (0 < q <= 1), 0 when empty.
  uint64_t quantile_ns(double q) const {
    if (!count) return 0;
    const uint64_t want = uint64_t(q * double(count) + 0.999999);
    uint64_t seen = 0;
    for (int b = 0; b < kBuckets; ++b)
      if ((seen += n[b]) >= want) return upper_edge(b) < max_ns ? upper_edge(b) : max_ns;
    return max_ns;
  }
};

struct RunReport {
  std::string path, container, link, backend;
  uint32_t raw_link = 0;
  uint64_t file_bytes = 0;
  Counters totals{};
  uint64_t passed = 0, dropped = 0;
  uint64_t batches = 0;
  TransferStats transfer;           // how batches reached the device (Backend::transfer_stats)
  double seconds = 0;
  std::vector<CaptureIssue> issues;
  uint64_t capture_warnings = 0, suppressed_issues = 0;
  bool damaged = false;  // reading stopped at a fatal issue
  bool interrupted = false;  // reading stopped early because RunOptions::stop was set
  uint64_t index_windows_parallel = 0, index_windows_serial = 0;
  std::string filter;               // the BPF filter expression, if any
  uint64_t filtered = 0;            // records it refused (read and counted, not processed)
  bool live = false;                // a live source: the kernel's counts below apply
  uint64_t kernel_packets = 0, kernel_drops = 0, vlan_restored = 0;
  uint64_t unprocessed_at_stop = 0;  // read from a ring by a reader thread, not taken before the stop
  uint64_t overload_bypassed = 0;    // handed to RunOptions::on_bypass uninspected (fail-open)
  uint64_t overload_episodes = 0;    // times the pipeline fell that far behind
  FlowGauges flows;                 // the flow table at the end of the run, before the final flush
  StreamGauges streams;             // reassembly's out-of-order buffer
  uint64_t flow_records = 0;        // flow records delivered (expired, evicted, and at shutdown)
  DefragConfig defrag_config;       // IP fragment reassembly (defrag/defrag.hpp): as run ...
  DefragStats defrag;               // ... and what it did
  bool adaptive = false;            // BatchPolicy::adaptive: the target at the end, its peak, its moves
  AdaptiveBatchSize batch_size;
  LatencyHistogram latency;         // with RunOptions::measure_latency
  // With RunOptions::stage_times, the pipeline thread's own stages (the backend's are
  // Backend::stage_times): assembling a batch (reading the source), submitting it, waiting for
  // its results, handing them to the outputs, and waiting on an idle live source.
  std::vector<StageTime> stage_times;
};

struct RunOptions {
  BatchPolicy policy;
  bool want_decoded = false;
  bool want_streams = false;  // hand reassembled TCP data to on_streams
  bool progress = false;
  // Leave the source registered with the backend after the run (benchmarks repeat runs over one
  // capture; registering a large buffer costs more than a run). The caller then detaches it.
  bool keep_source_attached = false;
  // run_capture(): the FileSource's record indexing (capture/file_source.hpp).
  FileSourceOptions file;
  // When set (a signal handler sets it), reading stops after the current batch's packet: what was
  // read is finished as at the end of the capture (flows and streams flushed, outputs written).
  const std::atomic<bool>* stop = nullptr;
  // run_capture(): a BPF filter expression (capture/filtered_source.hpp); "" keeps every record.
  std::string filter;
  // Every stats_interval_ns of wall time (0: never), on_stats gets the report so far: totals of the
  // batches finished, the source's counts (a live source's kernel counters), seconds since the
  // start; the flows and streams still in the tables are not in it (--stats-interval: EVE stats).
  uint64_t stats_interval_ns = 0;
  std::function<void(const RunReport&)> on_stats;
  // Fill RunReport::latency (live sources: record times are the kernel's receive times).
  bool measure_latency = false;
  // Time the pipeline thread's stages (RunReport::stage_times; --stage-times).
  bool stage_times = false;
  // Fail-open on overload (inline IPS, --inline-fail open): when the record the batcher takes next
  // is older than bypass_after_ns (capture time against the wall clock: live sources), the
  // batches in flight are finished, and then every record still that old goes to on_bypass,
  // uninspected and in capture order, in runs of up to 256, released after each run; batching
  // resumes at the first record younger than that. The backend never sees those packets (flows,
  // streams and counters miss them); RunReport::overload_bypassed counts them. Without on_bypass:
  // off (fail-closed: every packet is inspected, and what the ring cannot hold meanwhile the kernel
  // drops).
  uint64_t bypass_after_ns = 0;
  std::function<void(const std::vector<SourceRecord>&)> on_bypass;
  // IP fragments reassembled before the backend (defrag/defrag.hpp); the backend's
  // FlowConfig::defrag must say the same, so that the fragments themselves key no flow.
  DefragConfig defrag;
};

using BatchCallback = std::function<void(const PacketBatch&)>;
// Receives flow records in the order they leave the table: each batch's, then at the end of the
// run those still open (reason shutdown).
using FlowRecordCallback = std::function<void(const std::vector<FlowRecordOut>&)>;

// Receives reassembled TCP data (with want_streams): each batch's chunks, then at the end of the
// run what the out-of-order buffer still held. Chunk bytes are at bytes + chunk.data.
using StreamCallback = std::function<void(const std::vector<StreamChunk>& chunks, std::span<const uint8_t> bytes)>;

// Receives, at the end of the run, what stream modules raised on the data the out-of-order buffer
// still held (Backend::flush_streams), with the flows still open then (those handed to on_flows
// with reason shutdown, right after this call): ModuleSet::finish_flush takes both.
using FlushCallback = std::function<void(const StreamFlushModules& mods, const std::vector<FlowRecordOut>& flows)>;

RunReport run_source(Source& src, Backend& backend, const RunOptions& opt, const BatchCallback& on_batch = nullptr,
                     const FlowRecordCallback& on_flows = nullptr, const StreamCallback& on_streams = nullptr,
                     const FlushCallback& on_flush = nullptr);

// run_source() over a FileSource of cap (with opt.file).
RunReport run_capture(const CaptureFile& cap, Backend& backend, const RunOptions& opt,
                      const BatchCallback& on_batch = nullptr, const FlowRecordCallback& on_flows = nullptr,
                      const StreamCallback& on_streams = nullptr, const FlushCallback& on_flush = nullptr);
// The same over several captures read one after the other with one flow state (FileSequenceSource).
RunReport run_captures(const std::vector<const CaptureFile*>& caps, Backend& backend, const RunOptions& opt,
                       const BatchCallback& on_batch = nullptr, const FlowRecordCallback& on_flows = nullptr,
                       const StreamCallback& on_streams = nullptr, const FlushCallback& on_flush = nullptr);

}  // namespace gaspp
