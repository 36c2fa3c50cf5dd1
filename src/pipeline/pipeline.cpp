#include "pipeline/pipeline.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>

#include "capture/filtered_source.hpp"
#include "defrag/defrag.hpp"

namespace gaspp {
namespace {

using Clock = std::chrono::steady_clock;

// The wall clock, as live sources stamp records (the kernel's receive time).
uint64_t realtime_ns() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return uint64_t(now.tv_sec) * 1000000000ull + uint64_t(now.tv_nsec);
}

struct Progress {
  bool on;
  uint64_t file_bytes;
  Clock::time_point start = Clock::now(), last = start;
  void tick(uint64_t packets, uint64_t pos, bool final) {
    if (!on) return;
    const auto now = Clock::now();
    if (!final && now - last < std::chrono::seconds(1)) return;
    last = now;
    const double s = std::chrono::duration<double>(now - start).count();
    if (!file_bytes) {  // live: no file to measure against
      std::fprintf(stderr, "gaspp: %llu packets, %.2f Mpps%s\n", (unsigned long long)packets,
                   s > 0 ? double(packets) / s / 1e6 : 0.0, final ? " (done)" : "");
      return;
    }
    std::fprintf(stderr, "gaspp: %llu packets, %.2f Mpps, %.1f%% of file%s\n", (unsigned long long)packets,
                 s > 0 ? double(packets) / s / 1e6 : 0.0, 100.0 * double(pos) / double(file_bytes),
                 final ? " (done)" : "");
  }
};

// What the source's report says, into the run's.
void apply_source_report(RunReport& rep, SourceReport sr) {
  rep.path = std::move(sr.name);
  rep.container = std::move(sr.container);
  rep.link = std::move(sr.link);
  rep.raw_link = sr.raw_link;
  rep.file_bytes = sr.input_bytes;
  rep.issues = std::move(sr.issues);
  rep.capture_warnings = sr.warnings;
  rep.suppressed_issues = sr.suppressed_issues;
  rep.damaged = sr.damaged;
  rep.index_windows_parallel = sr.index_windows_parallel;
  rep.index_windows_serial = sr.index_windows_serial;
  rep.filter = std::move(sr.filter);
  rep.filtered = sr.filtered;
  rep.live = sr.live;
  rep.kernel_packets = sr.kernel_packets;
  rep.kernel_drops = sr.kernel_drops;
  rep.vlan_restored = sr.vlan_restored;
  rep.unprocessed_at_stop = sr.unprocessed_at_stop;
}

}  // namespace

RunReport run_source(Source& src, Backend& backend, const RunOptions& opt, const BatchCallback& on_batch,
                     const FlowRecordCallback& on_flows, const StreamCallback& on_streams, const FlushCallback& on_flush) {
  RunReport rep;
  rep.backend = backend.describe();
  const auto t0 = Clock::now();
  Progress progress{opt.progress, src.total()};

  // Registration is optional: without it the CUDA backend stages every batch through pinned memory.
  // Every region of the source (a live capture's rings) is offered; those the backend did not
  // register have their batches copied.
  const std::vector<MemoryRegion> regions = src.regions();
  if (!regions.empty()) backend.attach_sources(regions);
  const int nslots = backend.slots();
  std::vector<bool> busy(size_t(nslots), false);
  // A busy slot's last source record, released when it finishes; kNoRecord for a batch that holds
  // none (a reassembled datagram alone).
  constexpr uint64_t kNoRecord = ~0ull;
  std::vector<uint64_t> last_seq(size_t(nslots), kNoRecord);
  // measure_latency: each slot's packets' capture times, kept while the batch is assembled so that
  // finishing it does not read every record header again (cold by then, on a live source).
  std::vector<std::vector<uint64_t>> slot_ts(opt.measure_latency ? size_t(nslots) : 0);
  SourceRecord r{};
  const auto stopping = [&] { return opt.stop && opt.stop->load(std::memory_order_relaxed); };
  // The record read ahead (pending), or why there is none: idle (a live source with nothing now)
  // or end.
  SourceStatus st = src.next(r, opt.policy.idle_wait_ns);
  const auto have_pending = [&] { return st == SourceStatus::record; };
  uint64_t packet_index = 0;
  int slot = 0;
  AdaptiveBatchSize adaptive(opt.policy.adaptive_min_packets, opt.policy.max_packets);
  Defragmenter defrag(opt.defrag);
  // RunOptions::stage_times: a stage's start (no clock read when off), and the time since `from`
  // added to stage `name`.
  const auto stage_start = [&] { return opt.stage_times ? Clock::now() : Clock::time_point{}; };
  const auto timed = [&](const char* name, Clock::time_point from) {
    if (opt.stage_times)
      stage_time_named(rep.stage_times, name).add(std::chrono::duration<double, std::micro>(Clock::now() - from).count());
  };
  std::vector<uint8_t> datagram;  // a reassembled datagram's record, waiting for room when not empty

  auto finish = [&](int s) {
    auto t_stage = stage_start();
    backend.wait(s);
    timed("pipeline: wait for the batch's results", t_stage);
    t_stage = stage_start();
    PacketBatch& b = backend.batch(s);
    for (int k = 0; k < c_count_; ++k) rep.totals.v[k] += b.counters.v[k];
    // The events the defragmenter raised on the host count as the decoder's do.
    for (const auto& [i, e] : b.host_events) ++rep.totals.v[c_decode_event0 + e];
    // Reassembled datagrams are counted by protocol (l3, l4), as Suricata's decoder counts them, but
    // are not packets read: the link-level counts are the fragments'.
    for (const uint32_t j : b.reassembled) {
      const uint8_t* rec = b.h_span + b.h_rec_off[j];
      const uint32_t len = read_record_header(rec, b.fmt).cap_len;
      --rep.totals.v[c_packets];
      rep.totals.v[c_wire_bytes] -= len;
      rep.totals.v[c_captured_bytes] -= len;
      DecodedPacket d;
      decode_record(rec, b.span_len - b.h_rec_off[j], b.fmt, b.link, d);
      if (d.vlan_count[0]) --rep.totals.v[c_vlan_tagged];
    }
    ++rep.batches;
    rep.flow_records += b.flow_records.size();
    if (opt.measure_latency) {
      const uint64_t now_ns = realtime_ns();
      for (const uint64_t ts : slot_ts[size_t(s)]) rep.latency.add(now_ns > ts ? now_ns - ts : 0);
    }
    // The batch's packets (module events: alerts) before the flows that ended in it. The verdicts
    // are counted after: a host handler may add drops (LateVerdicts).
    if (on_batch) on_batch(b);
    uint64_t dropped = 0;
    for (uint32_t i = 0; i < b.count; ++i)
      if (!b.is_reassembled(i)) dropped += (b.record_verdict(i) & kVerdictDrop) != 0;
    rep.dropped += dropped;
    rep.passed += b.count - b.reassembled.size() - dropped;
    if (on_flows && !b.flow_records.empty()) on_flows(b.flow_records);
    if (on_streams && !b.stream_chunks.empty()) on_streams(b.stream_chunks, b.stream_data());
    timed("pipeline: outputs", t_stage);
    busy[size_t(s)] = false;
    if (last_seq[size_t(s)] != kNoRecord) src.release(last_seq[size_t(s)]);
  };

  const auto finish_all = [&] {
    for (int k = 0; k < nslots; ++k) {
      const int s = (slot + k) % nslots;  // oldest first, so batches finish in capture order
      if (busy[size_t(s)]) finish(s);
    }
  };
  // RunOptions::bypass_after_ns: the pipeline is that far behind. What is in flight finishes (its
  // packets go out first), then the stale records go out uninspected, in order.
  const auto bypass_stale = [&] {
    finish_all();
    ++rep.overload_episodes;
    std::vector<SourceRecord> run;
    run.reserve(256);
    const auto hand_over = [&] {  // the run out, then its records back to the source
      if (run.empty()) return;
      opt.on_bypass(run);
      rep.overload_bypassed += run.size();
      packet_index += run.size();
      src.release(run.back().seq);
      run.clear();
    };
    uint64_t now = realtime_ns();
    while (have_pending() && !stopping() && now > r.ts_ns + opt.bypass_after_ns) {
      run.push_back(r);
      st = src.next(r, 0);
      if (run.size() == 256) {
        hand_over();
        now = realtime_ns();
      }
    }
    hand_over();
  };
  auto last_stats = Clock::now();
  try {
    while ((st != SourceStatus::end && !stopping()) || !datagram.empty()) {
      if (opt.stats_interval_ns && opt.on_stats &&
          Clock::now() - last_stats >= std::chrono::nanoseconds(opt.stats_interval_ns)) {
        last_stats = Clock::now();
        RunReport partial = rep;
        partial.seconds = std::chrono::duration<double>(last_stats - t0).count();
        src.refresh_counts();
        apply_source_report(partial, src.report());
        opt.on_stats(partial);
      }
      if (st == SourceStatus::idle && datagram.empty()) {  // nothing in hand: wait on
        // A live source went quiet: the batches in flight finish now rather than when traffic
        // returns, so their results (alerts, flows, inline forwarding, stats) do not wait on it.
        finish_all();
        const auto t_idle = stage_start();
        st = src.next(r, opt.policy.idle_wait_ns);
        timed("pipeline: idle source", t_idle);
        continue;
      }
      if (opt.on_bypass && have_pending() && datagram.empty() &&
          realtime_ns() > r.ts_ns + opt.bypass_after_ns) {
        bypass_stale();
        continue;
      }
      if (busy[size_t(slot)]) finish(slot);
      const auto t_assembly = stage_start();
      PacketBatch& b = backend.batch(slot);
      const uint32_t cap_pk = std::min(b.capacity, opt.policy.adaptive ? adaptive.target : opt.policy.max_packets);
      b.count = 0;
      b.first_index = packet_index;
      b.fmt = have_pending() ? r.fmt : b.fmt;  // a datagram alone keeps the format it was made in
      b.link = have_pending() ? r.link : b.link;
      b.source = have_pending() ? r.interface : 0;
      b.want_decoded = opt.want_decoded;
      b.want_streams = opt.want_streams && on_streams;
      b.record_bytes = 0;
      b.max_ts_ns = 0;
      b.reassembled.clear();
      b.host_events.clear();
      last_seq[size_t(slot)] = kNoRecord;
      if (opt.measure_latency) slot_ts[size_t(slot)].clear();
      // A batch is a span of the source's memory while its records lie back to back, or follow one
      // another at rising addresses inside one of the source's regions (a span with gaps: a ring's
      // frame headers, records a filter refused; capture/source.hpp), and no reassembled datagram
      // joins it; from then on its records are copied into h_rebuilt (a datagram right after the
      // fragment that completed it). Offsets are 32-bit: a span ends before 4 GiB.
      std::vector<uint8_t>& rebuilt = b.h_rebuilt;
      rebuilt.clear();
      bool copied = false;
      const uint8_t* span_start = have_pending() ? r.rec : nullptr;
      const uint8_t* span_end = span_start;  // where the span's last record ends
      const uint8_t* region_end = nullptr;   // the end of the region holding the span (null: none)
      bool gapped = false;                   // the span has gaps
      if (span_start)
        for (const MemoryRegion& m : regions)
          if (span_start >= m.base && span_start < m.base + m.len) region_end = m.base + m.len;
      const uint64_t first_ts = r.ts_ns;
      const auto add_datagram = [&] {
        b.reassembled.push_back(b.count);
        b.h_rec_off[b.count++] = uint32_t(rebuilt.size());
        rebuilt.insert(rebuilt.end(), datagram.begin(), datagram.end());
        b.record_bytes += datagram.size();
        datagram.clear();
      };
      const auto copy_span = [&] {  // from here on the batch is copied
        if (copied) return;
        copied = true;
        if (!gapped) {
          rebuilt.assign(span_start, span_end);
          return;
        }
        // The records alone, packed, their offsets rewritten (every one so far is in the span).
        rebuilt.reserve(b.record_bytes);
        for (uint32_t i = 0; i < b.count; ++i) {
          const uint8_t* rec = span_start + b.h_rec_off[i];
          const uint64_t n = kRecordHeaderBytes + read_record_header(rec, b.fmt).cap_len;
          b.h_rec_off[i] = uint32_t(rebuilt.size());
          rebuilt.insert(rebuilt.end(), rec, rec + n);
        }
      };
      // r may join the span, leaving a gap before it.
      const auto joins_with_gap = [&] {
        return region_end && r.rec > span_end && r.rec + r.bytes() <= region_end &&
               uint64_t(r.rec + r.bytes() - span_start) <= uint64_t(UINT32_MAX);
      };
      if (!datagram.empty()) {  // completed by the previous batch's last packet, which left no room
        copied = true;
        b.max_ts_ns = read_record_header(datagram.data(), b.fmt).ts_ns;
        add_datagram();
      }
      while (have_pending()) {
        const uint64_t rec_bytes = r.bytes();
        // Gaps cost nothing on the CPU and are left behind by the CUDA backend when they would
        // cost (transfer.hpp): the batch's size is its records'.
        const uint64_t used = copied ? rebuilt.size() : b.record_bytes;
        if (b.count > 0) {
          if (b.count >= cap_pk) break;
          if (used + rec_bytes > opt.policy.max_bytes) break;
          if (opt.policy.timeout_ns && r.ts_ns > first_ts && r.ts_ns - first_ts > opt.policy.timeout_ns) break;
          if (r.fmt.swapped != b.fmt.swapped || r.fmt.nanos != b.fmt.nanos || r.link != b.link || r.interface != b.source)
            break;  // a batch has one format, link type and interface
          if (stopping()) break;
        }
        if (!copied && r.rec != span_end) {
          if (b.count > 0 && joins_with_gap()) gapped = true;
          else copy_span();  // neither back to back with the span nor after it in its region
        }
        if (copied) {
          b.h_rec_off[b.count++] = uint32_t(rebuilt.size());
          rebuilt.insert(rebuilt.end(), r.rec, r.rec + rec_bytes);
        } else {
          b.h_rec_off[b.count++] = uint32_t(r.rec - span_start);
          span_end = r.rec + rec_bytes;
        }
        b.record_bytes += rec_bytes;
        if (r.ts_ns > b.max_ts_ns) b.max_ts_ns = r.ts_ns;
        if (opt.measure_latency) slot_ts[size_t(slot)].push_back(r.ts_ns);
        last_seq[size_t(slot)] = r.seq;
        const bool fragment =
            opt.defrag.enabled && (r.fragment >= 0 ? r.fragment != 0 : may_be_fragment(r.rec + kRecordHeaderBytes, r.cap_len, r.link));
        const bool completed = fragment && defrag.add(r.rec, rec_bytes, r.fmt, r.link, datagram);
        if (fragment && defrag.last_event() != DecodeEvent::none)
          b.host_events.emplace_back(b.count - 1, uint8_t(defrag.last_event()));
        st = src.next(r, opt.policy.linger_ns);
        if (completed) {
          copy_span();
          if (b.count >= b.capacity || rebuilt.size() + datagram.size() > opt.policy.max_bytes + opt.policy.datagram_room_bytes)
            break;  // no room (a backend not sized for it): the next batch
          add_datagram();
        }
      }
      if (copied) {
        b.h_span = rebuilt.data();
        b.span_len = rebuilt.size();
      } else {
        b.h_span = span_start;
        b.span_len = uint64_t(span_end - span_start);
      }
      packet_index += b.count - b.reassembled.size();
      if (opt.policy.adaptive) adaptive.after_batch(b.count, b.count >= cap_pk);
      defrag.tick(b.max_ts_ns);  // datagrams whose fragments stopped coming time out with capture time
      timed("pipeline: batch assembly (reading the source)", t_assembly);
      const auto t_submit = stage_start();
      backend.submit(slot);
      timed("pipeline: submit", t_submit);
      busy[size_t(slot)] = true;
      slot = (slot + 1) % nslots;
      progress.tick(packet_index, src.position(), false);
    }
    finish_all();
  } catch (...) {
    // An output that failed (or any other error) ends the run, but the batches in flight still
    // read records and spans this function and the source own: they finish before those go.
    for (int s = 0; s < nslots; ++s)
      if (busy[size_t(s)]) {
        try {
          backend.wait(s);
        } catch (...) {
        }
      }
    throw;
  }
  rep.adaptive = opt.policy.adaptive;
  rep.batch_size = adaptive;
  defrag.finish();
  rep.defrag_config = opt.defrag;
  rep.defrag = defrag.stats();
  src.finish();  // a file: a frame read as zeros after it shrank under decode (see capture_file.hpp)
  rep.flows = backend.flow_gauges();
  {
    // Reassembly first: its flush needs the flows that still hold data. Then the flows: the stream
    // modules' events on the flushed data are handed over with them, before the flow records, as a
    // batch's events come before the flows that ended in it.
    std::vector<StreamChunk> chunks;
    std::vector<uint8_t> bytes;
    StreamFlushModules mods;
    backend.flush_streams(chunks, bytes, rep.totals, mods);
    if (on_streams && opt.want_streams && !chunks.empty()) on_streams(chunks, bytes);
    if (opt.want_streams) {
      mods.chunks.swap(chunks);
      mods.stream_bytes.swap(bytes);
    }
    rep.streams = backend.stream_gauges();
    const std::vector<FlowRecordOut> rest = backend.flush_flows();
    rep.totals.v[c_flow_shutdown] += rest.size();
    rep.flow_records += rest.size();
    if (on_flush) on_flush(mods, rest);
    if (on_flows && !rest.empty()) on_flows(rest);
  }
  if (!opt.keep_source_attached) backend.detach_source();
  progress.tick(packet_index, src.position(), true);

  rep.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  rep.interrupted = have_pending() && stopping();
  apply_source_report(rep, src.report());
  rep.transfer = backend.transfer_stats();
  return rep;
}

RunReport run_capture(const CaptureFile& cap, Backend& backend, const RunOptions& opt, const BatchCallback& on_batch,
                      const FlowRecordCallback& on_flows, const StreamCallback& on_streams,
                      const FlushCallback& on_flush) {
  FileSource src(cap, opt.file);
  if (opt.filter.empty()) return run_source(src, backend, opt, on_batch, on_flows, on_streams, on_flush);
  FilteredSource filtered(src, opt.filter);
  return run_source(filtered, backend, opt, on_batch, on_flows, on_streams, on_flush);
}

RunReport run_captures(const std::vector<const CaptureFile*>& caps, Backend& backend, const RunOptions& opt,
                       const BatchCallback& on_batch, const FlowRecordCallback& on_flows, const StreamCallback& on_streams,
                       const FlushCallback& on_flush) {
  if (caps.size() == 1) return run_capture(*caps[0], backend, opt, on_batch, on_flows, on_streams, on_flush);
  FileSequenceSource src(caps, opt.file);
  if (opt.filter.empty()) return run_source(src, backend, opt, on_batch, on_flows, on_streams, on_flush);
  FilteredSource filtered(src, opt.filter);
  return run_source(filtered, backend, opt, on_batch, on_flows, on_streams, on_flush);
}

}  // namespace gaspp
