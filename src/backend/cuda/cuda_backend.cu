// backend/cuda/cuda_backend.cu — the CUDA backend: streams, pinned memory, device buffers, kernels.
//
// Each of the (at least three) slots has its own CUDA stream, pinned host arrays (record offsets,
// verdicts, counters), a pinned staging buffer and device buffers sized for one full batch. For a
// batch, submit() queues on the slot's stream: the H2D copy of the records, the decode kernel, and
// the D2H copy of verdicts and counters only (decoded fields stay on the device unless the caller
// asked for them). wait() synchronizes the slot's stream.
//
// Transfers (GASPP §5.1; the paths and their choice: transfer.hpp): a batch in the registered
// source region is DMA'd straight from it (direct), read through its device alias with only the
// record heads gathered (sliced: header-only slicing, when nothing reads payload), or packed into
// pinned staging first (compacted). The counts of each kind and the bytes moved are reported.
//
// The stages run in the order core/stage_plan.hpp gives (the backend is its StageExecutor), each
// queued on the slot's stream as kernels (decode_kernels, flow_kernels, module_kernels). The flow
// stage waits for the previous batch's (an event chain), so flow state sees batches in order while
// copies and decode of the next batch overlap. The flow walk sorts (slot, item) pairs with CUB's
// radix sort and walks each run on a thread of its own; the sweep kernel is queued every batch and
// sweeps when due or in emergency.
// Records leaving the table, and with want_streams the stream chunks and their bytes, are written
// by the kernels straight into the slot's pinned, mapped host buffers, so nothing extra is copied
// back. The out-of-order buffer (two sets of segment descriptions used in turn, two byte pools where
// held bytes stay; stream/stream.hpp) lives in device memory; the event chain orders the batches.
// Module tables are copied to device memory once, when the backend starts (DeviceTables); module
// events go to a mapped host buffer per slot, module counters come back with the verdicts.
#include <cuda_runtime.h>

#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "backend/backend.hpp"
#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/decode_kernels.cuh"
#include "backend/cuda/device_buffer.hpp"
#include "backend/cuda/device_flow_table.hpp"
#include "backend/cuda/device_memory.hpp"
#include "backend/cuda/device_stream_buffer.hpp"
#include "backend/cuda/flow_kernels.cuh"
#include "backend/cuda/kernel_util.cuh"
#include "backend/cuda/module_kernels.cuh"
#include "backend/cuda/sm_partition.hpp"
#include "backend/cuda/stage_marks.hpp"
#include "backend/cuda/transfer.hpp"
#include "core/module_stage.hpp"
#include "core/stage_plan.hpp"
#include "stream/stream.hpp"

namespace gaspp {
namespace {

class CudaBackend final : public Backend, private StageExecutor {
 public:
  explicit CudaBackend(const BackendConfig& cfg) : cfg_(cfg), plan_(cfg), device_(cfg.device) {
    int devices = 0;
    GASPP_CUDA_CHECK(cudaGetDeviceCount(&devices));
    if (device_ < 0 || device_ >= devices)
      throw std::invalid_argument("cuda device " + std::to_string(device_) + " does not exist (" +
                                  std::to_string(devices) + " found)");
    const DeviceScope on(device_);
    GASPP_CUDA_CHECK(cudaGetDeviceProperties(&prop_, device_));
    slice_ = slicing_applies(cfg);
    if (slice_ && cfg.gather_sms >= 0) {
      part_ = std::make_unique<SmPartition>(device_, unsigned(cfg.gather_sms));
      if (!part_->ok()) {
        part_note_ = part_->why();
        part_.reset();
      }
    }
    if (cfg.flow.enabled) {
      table_ = std::make_unique<DeviceFlowTable>(cfg.flow);
      device_bytes_ += table_->shape().bytes();
      streams_ = cfg.stream.enabled;
      // Application-layer alerts come after the batch, on the packet that delivered the data: the
      // verdict walk then keeps the flow's counters at every packet with payload (module_stage.hpp).
      payload_counts_ = std::any_of(cfg.modules.begin(), cfg.modules.end(), [](const ModuleInstance* m) { return m->wants_app_layer(); });
      flow_pos_ = std::any_of(cfg.modules.begin(), cfg.modules.end(), [](const ModuleInstance* m) { return m->wants_flow_positions(); });
      if (streams_) {
        sbuf_.allocate(cfg.stream, cfg.batch_packets);
        held_cap_ = sbuf_.held_cap();
        device_bytes_ += sbuf_.bytes();
      }
      const size_t n = size_t(cfg.batch_packets) + held_cap_;  // sorted items: held segments, then packets
      d_sort_.allocate(n * 5 + 1);
      d_keys_ = d_sort_.get();
      d_vals_ = d_keys_ + n;
      d_keys_sorted_ = d_keys_ + 2 * n;
      d_vals_sorted_ = d_keys_ + 3 * n;
      d_run_heads_ = d_keys_ + 4 * n;
      d_run_n_ = d_keys_ + 5 * n;
      d_failed_.allocate(cfg.batch_packets);
      size_t temp = 0;
      GASPP_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp, d_keys_, d_keys_sorted_, d_vals_, d_vals_sorted_,
                                                       int(n)));
      d_sort_temp_.allocate(temp);
      device_bytes_ += d_sort_.bytes() + d_failed_.bytes() + d_sort_temp_.bytes();
      record_capacity_ = flow_record_capacity(cfg);
      flow_done_ = CudaEvent::make(cudaEventDisableTiming);
      flush_stream_ = CudaStream::non_blocking();
    }
    staging_bytes_ = cfg.batch_bytes + uint64_t(cfg.batch_packets) * 16;
    slots_.resize(size_t(std::max(cfg.slots, 3)));
    for (auto& s : slots_) {
      if (part_) {
        s.stream = CudaStream(part_->stream(false));
        s.gather_stream = CudaStream(part_->stream(true));
        if (!s.stream.get() || !s.gather_stream.get()) throw std::runtime_error("cuda backend: " + part_->why());
        s.gathered = CudaEvent::make(cudaEventDisableTiming);
      } else {
        s.stream = CudaStream::non_blocking();
      }
      s.h_rec_off.allocate(cfg.batch_packets);
      s.h_rec_off_staged.allocate(cfg.batch_packets);
      s.h_verdict.allocate(cfg.batch_packets);
      s.h_counters.allocate(c_count_);
      s.h_staging.allocate(staging_bytes_);
      s.d_data.allocate(staging_bytes_);
      if (slice_) s.d_heads.allocate(size_t(cfg.batch_packets) * kSliceStride);
      s.d_rec_off.allocate(cfg.batch_packets);
      if (cfg.stage_times)
        s.marks.enable();
      s.d_verdict.allocate(cfg.batch_packets);
      s.d_counters.allocate(c_count_);
      s.dec.allocate(cfg.batch_packets);
      if (cfg.flow.enabled) {
        s.d_flow_slot.allocate(cfg.batch_packets);
        s.d_flow_flags.allocate(cfg.batch_packets);
        s.records.allocate(record_capacity_);
        s.record_count.allocate(1);
        *s.record_count.get() = 0;
      }
      s.batch.capacity = cfg.batch_packets;
      s.batch.h_rec_off = s.h_rec_off.get();
      s.batch.h_verdict = s.h_verdict.get();
      device_bytes_ += s.d_data.bytes() + s.d_heads.bytes() + s.d_rec_off.bytes() + s.d_verdict.bytes() +
                       s.d_counters.bytes() + s.dec.bytes() + s.d_flow_slot.bytes() + s.d_flow_flags.bytes();
    }
    const int sms = part_ ? int(part_->rest_sms()) : prop_.multiProcessorCount;  // where the slot streams run
    blocks_cap_ = sms * DecodePolicy::kBlocksPerSm;
    walk_blocks_cap_ = sms * FlowPolicy::kWalkBlocksPerSm;
    gather_blocks_cap_ = part_ ? int(part_->small_sms()) * DecodePolicy::kGatherBlocksPerOwnSm
                               : prop_.multiProcessorCount * DecodePolicy::kGatherBlocksPerSm;
    if (!cfg.modules.empty()) {
      for (ModuleInstance* m : cfg.modules) {
        m->upload(tables_);
        const auto* v = static_cast<const uint8_t*>(m->view());
        views_.emplace_back(v, v + m->view_bytes());  // this backend's copy (module_kernels.cuh)
      }
      event_cap_ = event_capacity_of(cfg);
      hooks_ = stream_hooks_of(cfg.modules, &tables_);
      if (hooks_.bulk_n && streams_) {
        // Every piece of every bulk module may ask for a retry: room for all (StreamHooks::retry).
        d_retry_.allocate(size_t(sbuf_.chunk_cap()) * hooks_.bulk_n + 1);
        hooks_.retry = d_retry_.get() + 1;
        hooks_.retry_n = d_retry_.get();
        hooks_.retry_cap = uint32_t(size_t(sbuf_.chunk_cap()) * hooks_.bulk_n);
      }
      const std::vector<uint16_t>& order = plan_.class_order();
      d_class_order_ = static_cast<const uint16_t*>(tables_.place(order.data(), order.size() * 2));
      size_t sched_temp = 0;
      if (plan_.schedule())
        GASPP_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, sched_temp, static_cast<uint32_t*>(nullptr),
                                                         static_cast<uint32_t*>(nullptr), static_cast<uint32_t*>(nullptr),
                                                         static_cast<uint32_t*>(nullptr), int(cfg.batch_packets)));
      const size_t nc = cfg.modules.size() * kModuleCounters;
      for (auto& s : slots_) {
        s.d_ctx.allocate(cfg.batch_packets);
        s.d_retry.allocate(size_t(cfg.batch_packets) + 1);  // [0] the count, then the packets
        s.d_module_counts.allocate(nc);
        s.h_module_counts.allocate(nc);
        s.events.allocate(event_cap_);
        s.event_n.allocate(1);
        *s.event_n.get() = 0;
        device_bytes_ += s.d_ctx.bytes() + s.d_module_counts.bytes();
        if (cfg.flow.enabled) {
          // The flow counters at each alerted packet: the verdict walk writes the few it needs
          // straight into host memory (mapped), so a batch without alerts moves nothing.
          s.pkt_counts.allocate(cfg.batch_packets);
          s.batch.h_pkt_counts = s.pkt_counts.get();
          if (flow_pos_) {
            s.d_flow_pos.allocate(cfg.batch_packets);
            device_bytes_ += s.d_flow_pos.bytes();
          }
          // Entries count only in their batch's epoch (FlowIdAt): zero once, never cleared.
          s.d_flow_id_at.allocate(cfg.batch_packets);
          GASPP_CUDA_CHECK(cudaMemset(s.d_flow_id_at.get(), 0, s.d_flow_id_at.bytes()));
          device_bytes_ += s.d_flow_id_at.bytes();
        }
        if (plan_.schedule()) {
          s.d_sched_keys.allocate(2 * size_t(cfg.batch_packets));
          s.d_sched_vals.allocate(2 * size_t(cfg.batch_packets));
          s.d_sched_temp.allocate(sched_temp);
          device_bytes_ += s.d_sched_keys.bytes() + s.d_sched_vals.bytes() + s.d_sched_temp.bytes();
        }
      }
      device_bytes_ += tables_.bytes();
    }
  }

  // The owners free everything; the work still queued must finish first.
  ~CudaBackend() override {
    const DeviceScope on(device_);
    detach_source();
    for (auto& s : slots_)
      if (s.stream.get()) cudaStreamSynchronize(s.stream);
    if (flush_stream_.get()) cudaStreamSynchronize(flush_stream_);
  }

  std::string name() const override { return "cuda"; }
  std::string describe() const override {
    char b[256];
    std::snprintf(b, sizeof b, "cuda (device %d: %s, %d SMs, %zu batch slots of %u packets, %.1f MiB device memory reserved",
                  device_, prop_.name, prop_.multiProcessorCount, slots_.size(), cfg_.batch_packets, double(device_bytes_) / 1048576.0);
    std::string d = b;
    if (part_) d += ", slice gather on " + std::to_string(part_->small_sms()) + " SMs of its own";
    else if (!part_note_.empty()) d += ", slice gather sharing every SM: " + part_note_;
    return d + ")";
  }
  int slots() const override { return int(slots_.size()); }
  PacketBatch& batch(int slot) override { return slots_[size_t(slot)].batch; }

  size_t attach_sources(const std::vector<MemoryRegion>& regions) override {
    const DeviceScope on(device_);
    if (reg_.is(regions)) return regions.empty() ? 0 : reg_.registered();
    detach_source();
    return reg_.attach(regions);
  }
  void detach_source() override {
    const DeviceScope on(device_);
    if (reg_.attached())
      for (auto& s : slots_) cudaStreamSynchronize(s.stream);  // nothing queued may still read it
    reg_.detach();
  }

  void submit(int slot) override {
    const DeviceScope on(device_);
    cur_ = &slots_[size_t(slot)];
    plan_.run_batch(*this, cur_->batch.max_ts_ns);
  }

  void wait(int slot) override {
    const DeviceScope on(device_);
    Slot& s = slots_[size_t(slot)];
    GASPP_CUDA_CHECK(cudaStreamSynchronize(s.stream));
    s.marks.add_to(stage_times_);
    // --stage-times: the host's copy of what the batch brought back, in parts (records, stream
    // chunks and bytes, events) and in all.
    auto last = std::chrono::steady_clock::now();
    const auto copied_from = last;
    auto part = [&](const char* name) {
      if (!cfg_.stage_times) return;
      const auto now = std::chrono::steady_clock::now();
      stage_time_named(stage_times_, name).add(std::chrono::duration<double, std::micro>(now - last).count());
      last = now;
    };
    for (int k = 0; k < c_count_; ++k) s.batch.counters.v[k] = s.h_counters.get()[k];
    s.batch.flow_records.clear();
    s.batch.stream_chunks.clear();
    s.batch.stream_bytes.clear();
    s.batch.stream_bytes_lent = {};
    if (table_) {
      const uint32_t n = std::min(*s.record_count.get(), record_capacity_);
      s.batch.flow_records.assign(s.records.get(), s.records.get() + n);
      sort_flow_records(s.batch.flow_records);
      part("host copy-back: flow records");
    }
    if (s.streams_back) {
      // The chunks sorted straight out of pinned memory; the bytes are not copied: the batch
      // points at the slot's pinned buffer, which the next submit of this slot overwrites only
      // after the batch's consumers are done (the pipeline finishes a slot before refilling it).
      const uint32_t n = std::min(s.h_stream_counts.get()[0], sbuf_.chunk_cap());
      const uint64_t nbytes = std::min<uint64_t>(s.h_stream_counts.get()[1], stream_bytes_cap());
      sort_stream_chunks_from(s.chunks.get(), n, s.batch.stream_chunks);
      s.batch.stream_bytes_lent = std::span<const uint8_t>(s.stream_bytes.get(), size_t(nbytes));
      part("host copy-back: stream chunks sorted");
    }
    s.batch.events.clear();
    s.batch.module_counts.clear();
    if (!cfg_.modules.empty()) {
      s.batch.events.assign(s.events.get(), s.events.get() + std::min(*s.event_n.get(), event_cap_));
      s.batch.module_counts.assign(s.h_module_counts.get(), s.h_module_counts.get() + cfg_.modules.size() * kModuleCounters);
      part("host copy-back: module events");
    }
    if (cfg_.stage_times) {
      stage_time_named(stage_times_, "host copy-back")
          .add(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - copied_from).count());
    }
  }

  void flush_streams(std::vector<StreamChunk>& chunks, std::vector<uint8_t>& bytes, Counters& added,
                     StreamFlushModules& mods) override {
    const DeviceScope on(device_);
    chunks.clear();
    bytes.clear();
    mods.events.clear();
    mods.module_counts.clear();
    if (!streams_) return;
    for (auto& s : slots_) GASPP_CUDA_CHECK(cudaStreamSynchronize(s.stream));
    Slot& s = slots_[0];  // idle now: its buffers (events and module counters too) are free to use
    ensure_stream_host_buffers(s);
    GASPP_CUDA_CHECK(cudaMemsetAsync(s.d_counters.get(), 0, sizeof(unsigned long long) * c_count_, flush_stream_));
    const size_t nc = cfg_.modules.size() * kModuleCounters;
    if (hooks_.n) {
      *s.event_n.get() = 0;
      GASPP_CUDA_CHECK(cudaMemsetAsync(s.d_module_counts.get(), 0, sizeof(unsigned long long) * nc, flush_stream_));
    }
    StreamRef sr = stream_ref(s, nullptr, nullptr, true);
    stream_walk_async(flush_stream_, sr, DecodedView{}, 0, FlowTrackParams{}, FlowRecordSink{}, s.d_flow_flags.get(), true,
                      s.d_counters.get());
    stream_finish_async(flush_stream_, s, sr, DecodedView{});
    GASPP_CUDA_CHECK(cudaMemcpyAsync(s.h_counters.get(), s.d_counters.get(), sizeof(unsigned long long) * c_count_,
                                     cudaMemcpyDeviceToHost, flush_stream_));
    if (hooks_.n)
      GASPP_CUDA_CHECK(cudaMemcpyAsync(s.h_module_counts.get(), s.d_module_counts.get(), sizeof(unsigned long long) * nc,
                                       cudaMemcpyDeviceToHost, flush_stream_));
    GASPP_CUDA_CHECK(cudaStreamSynchronize(flush_stream_));
    sbuf_.flip();  // the final walk held nothing; the set it wrote is empty
    for (int k = 0; k < c_count_; ++k) added.v[k] += s.h_counters.get()[k];
    collect_chunks(s, chunks, bytes);
    if (hooks_.n) {
      mods.events.assign(s.events.get(), s.events.get() + std::min(*s.event_n.get(), event_cap_));
      mods.module_counts.assign(s.h_module_counts.get(), s.h_module_counts.get() + nc);
    }
  }

  StreamGauges stream_gauges() override {
    const DeviceScope on(device_);
    if (!streams_) return StreamGauges{};
    for (auto& s : slots_) GASPP_CUDA_CHECK(cudaStreamSynchronize(s.stream));
    return stream_gauges_of(sbuf_.read_counts(), cfg_.stream, held_cap_);
  }


  FlowGauges flow_gauges() override {
    const DeviceScope on(device_);
    FlowGauges g;
    if (!table_) return g;
    for (auto& s : slots_) GASPP_CUDA_CHECK(cudaStreamSynchronize(s.stream));
    const FlowTableState st = table_->read_state();
    g.enabled = true;
    g.capacity = table_->shape().capacity;
    g.slots = table_->shape().slots();
    g.bytes = table_->shape().bytes();
    g.live = st.live;
    g.peak = st.peak_live;
    g.emergency = st.emergency != 0;
    return g;
  }

  std::vector<FlowRecordOut> flush_flows() override {
    const DeviceScope on(device_);
    if (!table_) return {};
    for (auto& s : slots_) GASPP_CUDA_CHECK(cudaStreamSynchronize(s.stream));
    return plan_.flush_flows(*this);
  }

  TransferStats transfer_stats() const override {
    return {direct_, compacted_, sliced_, h2d_, d2h_, reg_.registered(), reg_.not_registered()};
  }
  std::vector<StageTime> stage_times() const override { return stage_times_; }

 private:
  // One batch slot. Members are destroyed in reverse order: the streams, declared first, go last,
  // after every buffer their work used (the destructor waited for that work).
  struct Slot {
    CudaStream stream;
    CudaStream gather_stream;               // slicing on a partitioned device: the gather's SMs
    CudaEvent gathered;                     // the gather is done (the stream waits for it)
    PinnedBuffer<uint32_t> h_rec_off;
    PinnedBuffer<uint32_t> h_rec_off_staged;
    PinnedBuffer<uint8_t> h_verdict;
    PinnedBuffer<unsigned long long> h_counters;
    PinnedBuffer<uint8_t> h_staging;
    DeviceBuffer<uint8_t> d_data;           // the batch's records when copied
    const uint8_t* d_batch_data = nullptr;  // where the kernels read this batch: d_data or the mapping
    DeviceBuffer<uint8_t> d_heads;          // slicing: each record's first kSliceHeadBytes
    DeviceBuffer<uint32_t> d_rec_off;
    DeviceBuffer<uint8_t> d_verdict;
    DeviceBuffer<unsigned long long> d_counters;
    DeviceDecoded dec;
    DeviceBuffer<uint32_t> d_flow_slot;
    DeviceBuffer<uint8_t> d_flow_flags;
    MappedBuffer<FlowRecordOut> records;    // kernels write records leaving the table here directly
    MappedBuffer<uint32_t> record_count;
    // Stream data for the host (allocated on first use): chunks and bytes mapped, and the counts
    // (chunks, bytes) copied back after the walk.
    MappedBuffer<StreamChunk> chunks;
    MappedBuffer<uint8_t> stream_bytes;
    PinnedBuffer<uint32_t> h_stream_counts;
    bool streams_back = false;  // the batch in this slot sends its streams to the host
    // Modules: context keys, counters (device, and pinned for the copy back), events (mapped).
    DeviceBuffer<uint32_t> d_ctx;
    DeviceBuffer<uint32_t> d_retry;         // a stage's packets to run again (StageArgs::retry)
    DeviceBuffer<unsigned long long> d_module_counts;
    PinnedBuffer<unsigned long long> h_module_counts;
    MappedBuffer<ModuleEvent> events;
    MappedBuffer<uint32_t> event_n;
    // Modules with flows: the flow counters at alerted packets (mapped; the verdict walk writes them).
    MappedBuffer<FlowCountsAt> pkt_counts;
    DeviceBuffer<FlowPosAt> d_flow_pos;  // a module wants positions (flow_pos_): the walk writes each packet's
    DeviceBuffer<FlowIdAt> d_flow_id_at;  // modules with flows: ended connections' ids (FlowIdAt)
    // Scheduling: keys in and out, indices in and out (the out half is the next stage's order).
    DeviceBuffer<uint32_t> d_sched_keys;
    DeviceBuffer<uint32_t> d_sched_vals;
    DeviceBuffer<uint8_t> d_sched_temp;
    StageMarks marks;  // BackendConfig::stage_times
    PacketBatch batch;
  };

  void mark(Slot& s, cudaStream_t st, const char* name) { s.marks.mark(st, name); }
  std::vector<StageTime> stage_times_;

  // The stages (core/stage_plan.hpp), queued on the stream of the slot in cur_.
  void decode() override {
    Slot& s = *cur_;
    PacketBatch& b = s.batch;
    // Only heads are copied when sliced; the kernels read anything else through the mapping.
    const RecordsOnDevice r = send_records(b, cfg_, slice_, reg_, s.d_data.get(), staging_bytes_, s.h_staging.get(),
                                           s.h_rec_off_staged.get(), s.stream);
    const bool sliced = r.path == TransferPath::sliced, direct = r.path == TransferPath::direct;
    (sliced ? sliced_ : direct ? direct_ : compacted_) += 1;
    s.d_batch_data = r.data;
    const uint64_t data_len = r.len;
    const uint32_t* rec_off = r.rec_off;
    b.compacted = !direct && !sliced;
    // A sliced batch's offsets and gather go on the gather's stream (its own SMs, when partitioned);
    // the slot's stream waits for them.
    const cudaStream_t gs = sliced && s.gather_stream ? s.gather_stream : s.stream;
    s.marks.begin();
    mark(s, gs, "submitted");
    GASPP_CUDA_CHECK(cudaMemcpyAsync(s.d_rec_off.get(), rec_off, sizeof(uint32_t) * b.count, cudaMemcpyHostToDevice, gs));
    mark(s, gs, "offsets to device");
    GASPP_CUDA_CHECK(cudaMemsetAsync(s.d_counters.get(), 0, sizeof(unsigned long long) * c_count_, s.stream));
    h2d_ += (sliced ? 0 : data_len) + sizeof(uint32_t) * b.count;
    if (b.count > 0) {
      BatchView v{s.d_batch_data, data_len, s.d_rec_off.get(), b.count,       b.fmt,
                  b.link,         b.source, s.dec.view(), s.d_verdict.get(), cfg_.validate_checksums, cfg_.flow.defrag};
      if (sliced) {
        launch_slice_gather(v, r.alias_lo, s.d_heads.get(), gather_blocks_cap_, gs);
        mark(s, gs, "slice gather");
      }
      if (gs != s.stream) {
        GASPP_CUDA_CHECK(cudaEventRecord(s.gathered, gs));
        GASPP_CUDA_CHECK(cudaStreamWaitEvent(s.stream, s.gathered, 0));
      }
      launch_decode(v, sliced ? s.d_heads.get() : nullptr, s.d_counters.get(), blocks_cap_, s.stream);
      mark(s, s.stream, "decode");
    }
    a_ = stage_args(s);
    if (!cfg_.modules.empty()) {
      *s.event_n.get() = 0;  // the slot's previous batch was finished (wait) before the slot was refilled
      GASPP_CUDA_CHECK(cudaMemsetAsync(s.d_module_counts.get(), 0,
                                       sizeof(unsigned long long) * cfg_.modules.size() * kModuleCounters, s.stream));
    }
  }

  // Waits for the previous batch's flow stage (flow state sees batches in order), then lookup and
  // retry.
  void flow_lookup() override {
    Slot& s = *cur_;
    const FlowTableRef t = table_->ref();
    prm_ = FlowTrackParams{cfg_.flow.timeouts, ++epoch_, cfg_.flow.midstream, cfg_.flow.vlan_in_key,
                           cfg_.drop_invalid && cfg_.stream.urgent == UrgentPolicy::drop, cfg_.flow.defrag,
                           s.pkt_counts.device(), s.d_flow_pos.get(), s.d_flow_id_at.get()};
    a_.flow_epoch = prm_.epoch;
    const uint32_t n = s.batch.count;
    const uint32_t base = streams_ ? held_cap_ : 0;  // item number of packet 0
    *s.record_count.get() = 0;  // the slot's previous batch was finished (wait) before the slot was refilled
    if (flow_started_) GASPP_CUDA_CHECK(cudaStreamWaitEvent(s.stream, flow_done_, 0));
    flow_started_ = true;
    mark(s, s.stream, "wait for the previous flow stage");
    if (n == 0) return;
    const int blocks_n = grid_blocks(n, blocks_cap_, FlowPolicy::kThreads);
    launch_flow_lookup(blocks_n, s.stream, t, a_.dec, n, prm_, s.d_flow_slot.get(), s.d_flow_flags.get(), d_keys_, d_vals_,
                       base, d_failed_.get(), s.d_counters.get());
    launch_flow_retry(blocks_n, s.stream, t, a_.dec, prm_, d_failed_.get(), s.d_flow_slot.get(), d_keys_, base,
                      record_sink(s), cfg_.untracked_drop ? s.d_verdict.get() : nullptr, s.d_counters.get());
  }

  void flow_tick() override {
    Slot& s = *cur_;
    const FlowTableRef t = table_->ref();
    launch_flow_tick(s.stream, t.state, t.capacity, cfg_.flow.emergency_enter_pct, cfg_.flow.emergency_recover_pct,
                     s.d_counters.get());
    mark(s, s.stream, "flow lookup");
  }

  void flow_walk() override {
    Slot& s = *cur_;
    s.streams_back = streams_ && s.batch.want_streams;
    if (s.streams_back) ensure_stream_host_buffers(s);
    const StreamRef sr = streams_ ? stream_ref(s, s.d_batch_data, s.d_rec_off.get(), s.streams_back) : StreamRef{};
    stream_walk_async(s.stream, sr, a_.dec, s.batch.count, prm_, record_sink(s), s.d_flow_flags.get(), false,
                      s.d_counters.get(), &s);
    if (streams_) {
      stream_finish_async(s.stream, s, sr, a_.dec);
      sbuf_.flip();  // what this batch holds is what the next one reads
    }
  }

  void module_stage(uint16_t st, uint16_t k) override {
    Slot& s = *cur_;
    if (a_.count == 0) return;
    const ModuleInstance& m = *cfg_.modules[k];
    a_.stage = st;
    a_.first = st == 0;
    a_.module = k;
    a_.state_off = m.state_off;
    launch_module_stage(m, views_[k].data(), a_, grid_blocks(a_.count, blocks_cap_, ModulePolicy::kThreads), s.stream,
                        s.d_module_counts.get() + size_t(k) * kModuleCounters);
    mark(s, s.stream, m.name());
  }

  void regroup(uint16_t next_st) override {
    Slot& s = *cur_;
    if (a_.count == 0) return;
    uint32_t* keys = s.d_sched_keys.get();
    uint32_t* idx = s.d_sched_vals.get();
    launch_schedule_keys(grid_blocks(a_.count, blocks_cap_, ModulePolicy::kThreads), s.stream, a_, next_st, keys, idx);
    size_t temp = s.d_sched_temp.bytes();
    GASPP_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(s.d_sched_temp.get(), temp, keys, keys + cfg_.batch_packets, idx,
                                                     idx + cfg_.batch_packets, int(a_.count), 0,
                                                     plan_.classes() > 1 ? 32 : 24, s.stream));
    a_.order = idx + cfg_.batch_packets;
    mark(s, s.stream, "schedule");
  }

  // Over the sorted runs the flow walk used, still in d_keys_sorted_ / d_vals_sorted_.
  void verdict_walk() override {
    Slot& s = *cur_;
    if (a_.count == 0) return;
    const uint32_t base = streams_ ? held_cap_ : 0;
    const uint32_t items = base + a_.count;
    launch_verdict_walk(walk_blocks(items), s.stream, table_->ref(), d_keys_sorted_, d_vals_sorted_, items, d_run_heads_,
                        d_run_n_, base, s.d_flow_flags.get(), s.d_verdict.get(), cfg_.drop_invalid, a_.dec.cap_len,
                        s.pkt_counts.device(), payload_counts_ ? a_.dec.payload_len : nullptr, s.d_counters.get());
    mark(s, s.stream, "verdict walk");
  }

  // Queued every batch: the kernel sweeps when due or when the table is in emergency (which only the
  // device knows). Ends the flow stage the next batch's waits for.
  void sweep(uint64_t now, bool due) override {
    Slot& s = *cur_;
    launch_flow_sweep(blocks_cap_, s.stream, table_->ref(), now, due, false, cfg_.flow.timeouts, record_sink(s),
                      s.d_counters.get());
    mark(s, s.stream, "flow sweep");
    GASPP_CUDA_CHECK(cudaEventRecord(flow_done_, s.stream));
  }

  void results() override {
    Slot& s = *cur_;
    PacketBatch& b = s.batch;
    if (!cfg_.modules.empty()) {
      GASPP_CUDA_CHECK(cudaMemcpyAsync(s.h_module_counts.get(), s.d_module_counts.get(),
                                       sizeof(unsigned long long) * cfg_.modules.size() * kModuleCounters,
                                       cudaMemcpyDeviceToHost, s.stream));
      d2h_ += sizeof(unsigned long long) * cfg_.modules.size() * kModuleCounters;
    }
    GASPP_CUDA_CHECK(cudaMemcpyAsync(s.h_verdict.get(), s.d_verdict.get(), b.count, cudaMemcpyDeviceToHost, s.stream));
    GASPP_CUDA_CHECK(cudaMemcpyAsync(s.h_counters.get(), s.d_counters.get(), sizeof(unsigned long long) * c_count_,
                                     cudaMemcpyDeviceToHost, s.stream));
    d2h_ += b.count + sizeof(unsigned long long) * c_count_;
    mark(s, s.stream, "results to host");
    if (b.want_decoded) {
      b.decoded.resize(b.capacity);
      s.dec.copy_to_host_async(b.decoded, b.count, s.stream);
      d2h_ += uint64_t(decoded_bytes_per_packet()) * b.count;
      if (table_) {
        b.flow_slot.resize(b.count);
        b.flow_flags.resize(b.count);
        // Pageable destinations: these copies complete before the stream moves on.
        GASPP_CUDA_CHECK(cudaMemcpyAsync(b.flow_slot.data(), s.d_flow_slot.get(), sizeof(uint32_t) * b.count,
                                         cudaMemcpyDeviceToHost, s.stream));
        GASPP_CUDA_CHECK(cudaMemcpyAsync(b.flow_flags.data(), s.d_flow_flags.get(), b.count, cudaMemcpyDeviceToHost, s.stream));
        d2h_ += 5ull * b.count;
      }
    }
  }

  // Uses slot 0's record buffer and counters (flush_flows waited for every slot).
  uint32_t shutdown_sweep(std::vector<FlowRecordOut>& into, bool& flows_left) override {
    Slot& s = slots_[0];
    *s.record_count.get() = 0;
    launch_flow_sweep(blocks_cap_, flush_stream_, table_->ref(), 0, true, true, cfg_.flow.timeouts, record_sink(s),
                      s.d_counters.get());
    GASPP_CUDA_CHECK(cudaStreamSynchronize(flush_stream_));
    const uint32_t n = std::min(*s.record_count.get(), record_capacity_);
    into.insert(into.end(), s.records.get(), s.records.get() + n);
    flows_left = table_->read_state().live != 0;
    return n;
  }

  FlowRecordSink record_sink(Slot& s) const {
    return FlowRecordSink{s.records.device(), s.record_count.device(), record_capacity_};
  }

  StageArgs stage_args(Slot& s) {
    StageArgs a{};
    a.data = s.d_batch_data;
    a.rec_off = s.d_rec_off.get();
    a.count = s.batch.count;
    a.dec = s.dec.view();
    a.verdict = s.d_verdict.get();
    a.ctx = s.d_ctx.get();
    a.order = nullptr;
    a.flow_slot = table_ ? s.d_flow_slot.get() : nullptr;
    a.flow_flags = table_ ? s.d_flow_flags.get() : nullptr;
    a.flow_pos = s.d_flow_pos.get();
    a.flow_id_at = s.d_flow_id_at.get();
    if (table_) a.table = table_->ref();
    a.events = EventSinkRef{s.events.device(), s.event_n.device(), event_cap_};
    if (s.d_retry.get()) {
      a.retry = s.d_retry.get() + 1;
      a.retry_n = s.d_retry.get();
      a.retry_cap = s.batch.count;
    }
    a.has_flows = table_ != nullptr;
    a.class_order = d_class_order_;
    a.classes = plan_.classes();
    a.modules = uint16_t(cfg_.modules.size());
    return a;
  }

  void ensure_stream_host_buffers(Slot& s) {
    if (s.chunks.get()) return;
    s.chunks.allocate(sbuf_.chunk_cap());
    s.stream_bytes.allocate(stream_bytes_cap());
    s.h_stream_counts.allocate(2);
  }
  // Most chunk bytes one batch can deliver: its payload plus everything held.
  uint64_t stream_bytes_cap() const { return staging_bytes_ + cfg_.stream.held_bytes; }

  // A StreamRef over the device buffers, reading the held set and writing the other; chunks go to the
  // slot's mapped host buffer when the host wants them.
  StreamRef stream_ref(Slot& s, const uint8_t* data, const uint32_t* rec_off, bool to_host) {
    StreamRef sr = sbuf_.ref(data, rec_off, to_host ? s.chunks.device() : nullptr);
    sr.hooks = hooks_;
    if (hooks_.n) {
      sr.hooks.table = table_->ref();
      // The end-of-run flush (no data) has no packets to take verdicts; its events and counters go
      // to the slot's buffers all the same, which flush_streams reads back.
      sr.hooks.verdict = data == nullptr ? nullptr : s.d_verdict.get();
      sr.hooks.events = EventSinkRef{s.events.device(), s.event_n.device(), event_cap_};
      sr.hooks.counts = s.d_module_counts.get();
      sr.hooks.want_pos = flow_pos_ ? 1 : 0;
      sr.hooks.flow_pos = data == nullptr ? nullptr : s.d_flow_pos.get();
    }
    return sr;
  }

  // Queues the held keys, the sort of held segments and n packets (keys/values already written by
  // the lookup) and the walk.
  void stream_walk_async(cudaStream_t st, const StreamRef& sr, const DecodedView& dec, uint32_t n,
                         const FlowTrackParams& prm, const FlowRecordSink& out, uint8_t* flags, bool final,
                         unsigned long long* d_counters, Slot* traced = nullptr) {
    const FlowTableRef t = table_->ref();
    const uint32_t base = streams_ ? held_cap_ : 0;
    const uint32_t items = base + n;
    if (streams_) {
      launch_stream_begin(st, sbuf_.counts(), sbuf_.in(), held_cap_, cfg_.stream.held_bytes);
      launch_stream_held_keys(grid_blocks(held_cap_, blocks_cap_, FlowPolicy::kThreads), st, sbuf_.held_in(),
                              &sbuf_.counts()->held_n[sbuf_.in()], held_cap_, t.slots(), d_keys_, d_vals_);
    }
    if (items == 0) return;
    int end_bit = 1;
    while (end_bit < 32 && (uint64_t(1) << end_bit) <= t.slots()) ++end_bit;
    size_t temp = d_sort_temp_.bytes();
    GASPP_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(d_sort_temp_.get(), temp, d_keys_, d_keys_sorted_, d_vals_, d_vals_sorted_,
                                                     int(items), 0, end_bit, st));
    GASPP_CUDA_CHECK(cudaMemsetAsync(d_run_n_, 0, sizeof(uint32_t), st));
    launch_run_heads(grid_blocks(items, blocks_cap_, FlowPolicy::kThreads), st, d_keys_sorted_, items, t.slots(),
                     d_run_heads_, d_run_n_);
    if (traced) mark(*traced, st, "flow sort");
    launch_flow_walk(streams_, walk_blocks(items), st, t, dec, d_keys_sorted_, d_vals_sorted_, items, d_run_heads_, d_run_n_,
                     prm, out, flags, sr, final, d_counters);
    if (traced) mark(*traced, st, "flow walk");
    if (streams_ && sr.hooks.bulk_n) {
      // Enough threads for every chunk the walk may have emitted (the kernels read the count).
      GASPP_CUDA_CHECK(cudaMemsetAsync(sr.hooks.retry_n, 0, sizeof(uint32_t), st));
      launch_stream_bulk(grid_blocks(sbuf_.chunk_cap(), blocks_cap_, FlowPolicy::kThreads), st, sr, dec);
      if (traced) mark(*traced, st, "stream bulk");
    }
  }

  // After the walk: the chunk bytes to the host (when wanted) and the counts back.
  void stream_finish_async(cudaStream_t st, Slot& s, const StreamRef& sr, const DecodedView& dec) {
    if (!sr.gather) return;
    launch_stream_gather(blocks_cap_, st, sr, dec, sr.chunks, s.stream_bytes.device());
    GASPP_CUDA_CHECK(cudaMemcpyAsync(s.h_stream_counts.get(), &sbuf_.counts()->chunk_n, 2 * sizeof(uint32_t),
                                     cudaMemcpyDeviceToHost, st));
  }

  // The final flush's chunks and bytes, copied out of slot s's pinned buffers.
  void collect_chunks(Slot& s, std::vector<StreamChunk>& chunks, std::vector<uint8_t>& bytes) {
    const uint32_t n = std::min(s.h_stream_counts.get()[0], sbuf_.chunk_cap());
    const uint64_t nbytes = std::min<uint64_t>(s.h_stream_counts.get()[1], stream_bytes_cap());
    sort_stream_chunks_from(s.chunks.get(), n, chunks);
    bytes.assign(s.stream_bytes.get(), s.stream_bytes.get() + nbytes);
  }

  // Declared before what it outlives: the green contexts (part_) before the slots' streams made in
  // them, every owner before the slots whose streams last used it.
  BackendConfig cfg_;
  StagePlan plan_;
  int device_ = 0;
  cudaDeviceProp prop_{};
  bool slice_ = false;
  std::unique_ptr<SmPartition> part_;  // slicing: the gather's SMs and the rest (null: not partitioned)
  std::string part_note_;              // why not, when the driver refused
  std::unique_ptr<DeviceFlowTable> table_;
  bool streams_ = false;
  bool payload_counts_ = false;  // the verdict walk writes counters at packets with payload
  bool flow_pos_ = false;        // a module wants flow positions (ModuleInstance::wants_flow_positions)
  uint32_t held_cap_ = 0;
  DeviceStreamBuffer sbuf_;               // reassembly's state (with streams_)
  DeviceTables tables_;                   // module tables
  std::vector<std::vector<uint8_t>> views_;  // each module's View as uploaded to tables_
  uint32_t event_cap_ = 0;
  StreamHooks hooks_{};                   // modules with on_stream (views in device memory)
  const uint16_t* d_class_order_ = nullptr;
  // One allocation (d_sort_): keys, values, sorted keys, sorted values, the first item of each run
  // of the sorted keys (launch_run_heads) and how many runs there are.
  DeviceBuffer<uint32_t> d_sort_;
  DeviceBuffer<uint32_t> d_retry_;        // bulk stream pieces to run again: [0] the count, then entries
  uint32_t* d_keys_ = nullptr;
  uint32_t* d_vals_ = nullptr;
  uint32_t* d_keys_sorted_ = nullptr;
  uint32_t* d_vals_sorted_ = nullptr;
  uint32_t* d_run_heads_ = nullptr;
  uint32_t* d_run_n_ = nullptr;
  DeviceBuffer<uint32_t> d_failed_;
  DeviceBuffer<uint8_t> d_sort_temp_;
  uint32_t record_capacity_ = 0;
  uint32_t epoch_ = 0;
  // The batch being queued (submit) and what its stages share.
  Slot* cur_ = nullptr;
  StageArgs a_{};
  FlowTrackParams prm_{};
  bool flow_started_ = false;
  CudaEvent flow_done_;
  CudaStream flush_stream_;
  std::vector<Slot> slots_;
  uint64_t staging_bytes_ = 0;
  uint64_t device_bytes_ = 0;
  int blocks_cap_ = 1, walk_blocks_cap_ = 1, gather_blocks_cap_ = 1;
  int walk_blocks(uint64_t items) const { return grid_blocks(items, walk_blocks_cap_, FlowPolicy::kThreads); }
  HostRegistration reg_;  // the source regions batches come from (Backend::attach_sources)
  uint64_t direct_ = 0, compacted_ = 0, sliced_ = 0, h2d_ = 0, d2h_ = 0;
};

}  // namespace

bool cuda_usable(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    if (why) *why = e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device";
    cudaGetLastError();
    return false;
  }
  return true;
}

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

std::unique_ptr<Backend> make_cuda_backend(const BackendConfig& cfg) {
  std::string why;
  if (!cuda_usable(&why)) throw std::runtime_error("no usable CUDA device: " + why);
  return std::make_unique<CudaBackend>(cfg);
}

}  // namespace gaspp
