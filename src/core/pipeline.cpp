#include "core/pipeline.hpp"

#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include "core/thread_pool.hpp"
#include "defrag/defrag.hpp"

namespace gaspp {
namespace {

using Clock = std::chrono::steady_clock;

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
    std::fprintf(stderr, "gaspp: %llu packets, %.2f Mpps, %.1f%% of file%s\n", (unsigned long long)packets,
                 s > 0 ? double(packets) / s / 1e6 : 0.0, file_bytes ? 100.0 * double(pos) / double(file_bytes) : 100.0,
                 final ? " (done)" : "");
  }
};

}  // namespace

RunReport run_capture(const CaptureFile& cap, Backend& backend, const RunOptions& opt, const BatchCallback& on_batch,
                      const FlowRecordCallback& on_flows, const StreamCallback& on_streams,
                      const FlushCallback& on_flush) {
  RunReport rep;
  rep.path = cap.path();
  rep.container = cap.container();
  rep.raw_link = cap.raw_link_type();
  LinkType lt;
  rep.link = link_type_from_pcap(cap.raw_link_type(), lt) ? link_name(lt) : "unsupported";
  rep.backend = backend.describe();
  rep.file_bytes = cap.size();
  const auto t0 = Clock::now();
  Progress progress{opt.progress, cap.size()};

  // Registration is optional: without it the CUDA backend stages every batch through pinned memory.
  backend.attach_source(cap.data(), cap.size());
  const int nslots = backend.slots();
  std::vector<bool> busy(size_t(nslots), false);
  RecordWalker walker(cap);
  std::unique_ptr<ThreadPool> index_pool;
  const int index_threads = opt.index_threads > 0 ? opt.index_threads : int(std::max(1u, std::thread::hardware_concurrency()));
  if (index_threads > 1 && cap.size() >= 2 * opt.index_chunk_bytes) {
    index_pool = std::make_unique<ThreadPool>(index_threads);
    walker.enable_parallel(index_pool.get(), opt.index_chunk_bytes);
  }
  RecordInfo r{};
  bool have_pending = walker.next(r);
  uint64_t packet_index = 0;
  int slot = 0;
  Defragmenter defrag(opt.defrag);
  std::vector<uint8_t> datagram;  // a reassembled datagram's record, waiting for room when not empty

  auto finish = [&](int s) {
    backend.wait(s);
    PacketBatch& b = backend.batch(s);
    for (int k = 0; k < c_count_; ++k) rep.totals.v[k] += b.counters.v[k];
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
    uint64_t dropped = 0;
    for (uint32_t i = 0; i < b.count; ++i)
      if (!b.is_reassembled(i)) dropped += (b.record_verdict(i) & kVerdictDrop) != 0;
    rep.dropped += dropped;
    rep.passed += b.count - b.reassembled.size() - dropped;
    ++rep.batches;
    rep.flow_records += b.flow_records.size();
    // The batch's packets (module events: alerts) before the flows that ended in it.
    if (on_batch) on_batch(b);
    if (on_flows && !b.flow_records.empty()) on_flows(b.flow_records);
    if (on_streams && !b.stream_chunks.empty()) on_streams(b.stream_chunks, b.stream_bytes);
    busy[size_t(s)] = false;
  };

  const auto stopping = [&] { return opt.stop && opt.stop->load(std::memory_order_relaxed); };
  while ((have_pending && !stopping()) || !datagram.empty()) {
    if (busy[size_t(slot)]) finish(slot);
    PacketBatch& b = backend.batch(slot);
    const uint32_t cap_pk = std::min(b.capacity, opt.policy.max_packets);
    b.count = 0;
    b.first_index = packet_index;
    b.fmt = cap.format();
    b.link = cap.link();
    b.source = 0;
    b.want_decoded = opt.want_decoded;
    b.want_streams = opt.want_streams && on_streams;
    b.record_bytes = 0;
    b.max_ts_ns = 0;
    b.reassembled.clear();
    // A batch is a range of the capture until a reassembled datagram joins it: from then on its
    // records are copied into h_rebuilt, the datagram right after the fragment that completed it.
    std::vector<uint8_t>& rebuilt = b.h_rebuilt;
    rebuilt.clear();
    bool copied = false;
    const uint64_t span_start = r.offset;
    const uint64_t first_ts = r.ts_ns;
    const auto add_datagram = [&] {
      b.reassembled.push_back(b.count);
      b.h_rec_off[b.count++] = uint32_t(rebuilt.size());
      rebuilt.insert(rebuilt.end(), datagram.begin(), datagram.end());
      b.record_bytes += datagram.size();
      datagram.clear();
    };
    if (!datagram.empty()) {  // completed by the previous batch's last packet, which left no room
      copied = true;
      b.max_ts_ns = read_record_header(datagram.data(), cap.format()).ts_ns;
      add_datagram();
    }
    while (have_pending) {
      const uint64_t rec_bytes = kRecordHeaderBytes + r.cap_len;
      const uint64_t used = copied ? rebuilt.size() : r.offset - span_start;
      if (b.count > 0) {
        if (b.count >= cap_pk) break;
        if (used + rec_bytes > opt.policy.max_bytes) break;
        if (opt.policy.timeout_ns && r.ts_ns > first_ts && r.ts_ns - first_ts > opt.policy.timeout_ns) break;
        if (stopping()) break;
      }
      const uint8_t* rec = cap.data() + r.offset;
      if (copied) {
        b.h_rec_off[b.count++] = uint32_t(rebuilt.size());
        rebuilt.insert(rebuilt.end(), rec, rec + rec_bytes);
      } else {
        b.h_rec_off[b.count++] = uint32_t(r.offset - span_start);
      }
      b.record_bytes += rec_bytes;
      if (r.ts_ns > b.max_ts_ns) b.max_ts_ns = r.ts_ns;
      const bool completed = opt.defrag.enabled && may_be_fragment(rec + kRecordHeaderBytes, r.cap_len, cap.link()) &&
                             defrag.add(rec, cap.size() - r.offset, cap.format(), cap.link(), datagram);
      have_pending = walker.next(r);
      if (completed) {
        if (!copied) {
          rebuilt.assign(cap.data() + span_start, rec + rec_bytes);
          copied = true;
        }
        if (b.count >= b.capacity || rebuilt.size() + datagram.size() > opt.policy.max_bytes + opt.policy.datagram_room_bytes)
          break;  // no room (a backend not sized for it): the next batch
        add_datagram();
      }
    }
    if (copied) {
      b.h_span = rebuilt.data();
      b.span_len = rebuilt.size();
    } else {
      b.h_span = cap.data() + span_start;
      // The span ends where the last record ends (header + captured bytes).
      const uint8_t* last = b.h_span + b.h_rec_off[b.count - 1];
      b.span_len = uint64_t(last - b.h_span) + kRecordHeaderBytes + read_record_header(last, cap.format()).cap_len;
    }
    packet_index += b.count - b.reassembled.size();
    defrag.tick(b.max_ts_ns);  // datagrams whose fragments stopped coming time out with capture time
    backend.submit(slot);
    busy[size_t(slot)] = true;
    slot = (slot + 1) % nslots;
    progress.tick(packet_index, walker.position(), false);
  }
  for (int k = 0; k < nslots; ++k) {
    const int s = (slot + k) % nslots;  // oldest first, so batches finish in capture order
    if (busy[size_t(s)]) finish(s);
  }
  defrag.finish();
  rep.defrag_config = opt.defrag;
  rep.defrag = defrag.stats();
  walker.check_file();  // a frame read as zeros after the file shrank under decode (see capture_file.hpp)
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
    rep.streams = backend.stream_gauges();
    const std::vector<FlowRecordOut> rest = backend.flush_flows();
    rep.totals.v[c_flow_shutdown] += rest.size();
    rep.flow_records += rest.size();
    if (on_flush) on_flush(mods, rest);
    if (on_flows && !rest.empty()) on_flows(rest);
  }
  if (!opt.keep_source_attached) backend.detach_source();
  progress.tick(packet_index, walker.position(), true);

  rep.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  rep.issues = walker.issues();
  rep.capture_warnings = walker.warnings();
  rep.suppressed_issues = walker.suppressed_issues();
  rep.damaged = walker.stopped();
  rep.interrupted = have_pending && stopping();
  rep.index_windows_parallel = walker.windows_parallel();
  rep.index_windows_serial = walker.windows_serial();
  rep.batches_direct = backend.batches_direct();
  rep.batches_compacted = backend.batches_compacted();
  rep.batches_sliced = backend.batches_sliced();
  rep.bytes_h2d = backend.bytes_h2d();
  rep.bytes_d2h = backend.bytes_d2h();
  return rep;
}

}  // namespace gaspp
