// core/app_shards.hpp — the application layer split by flow over host threads.
//
// The parsers (applayer/app_layer.hpp) and the modules' transaction inspection (on_app: the
// signature engine's HTTP, TLS and DNS signatures) are per flow: nothing one flow does changes
// another's, but for an FTP control connection's data connections, which are between the same
// two addresses. AppShards keeps kShards independent AppLayers, a flow in the one its address
// pair hashes to (app_pair_hash), and runs a batch's shards on a thread pool, each shard's chunks and datagrams in capture
// order as one AppLayer would see them. Run on one thread, they held the whole pipeline to the
// speed of one core (with ET Open, a fraction of what the backends deliver).
//
// The shard count is fixed, not the thread count, so that which flows share a shard, and so
// every output, is the same on every machine and with any --threads. Each shard holds at most
// max_flows / kShards flows (rounded up; more are counted as app_flows_full), so the table as a
// whole may refuse a flow a little before max_flows when flows spread unevenly.
//
// Example (ModuleSet::app_events):
//   AppShards app(cfg, threads);
//   app.process(chunks, bytes, datagrams, dgram_bytes, [&](size_t shard, int worker, auto updates) {
//     module.on_app(updates, events[shard], worker);  // on the shard's thread
//   });
//   app.forget(flows, unlogged);  // in the flows' order, on the calling thread
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <span>
#include <unordered_map>
#include <vector>

#include "applayer/app_layer.hpp"
#include "core/thread_pool.hpp"

namespace gaspp {

class AppShards {
 public:
  static constexpr size_t kShards = 64;
  // threads: the pool's threads, 0 = all hardware threads.
  AppShards(const AppLayerConfig& cfg, int threads);
  int workers() const { return pool_.size(); }
  static size_t shard_of_key(const FlowKey& k) {
    return size_t((app_pair_hash(k) * 0x9E3779B97F4A7C15ull) >> 58);  // top 6 bits: kShards = 64
  }
  // The shard a flow's data went to (kShards: none yet, or forgotten before the last forget()).
  size_t shard_of(uint64_t flow_id) const {
    const auto it = flow_shard_.find(flow_id);
    return it == flow_shard_.end() ? kShards : it->second;
  }

  // The batch's chunks and datagrams (AppLayer::process) split by shard; each shard is parsed on
  // a pool thread, which calls then(shard, worker, updates) with its updates as they come
  // (AppLayer::process's step: each before its flow is parsed further; worker < workers(); a
  // worker runs one shard at a time). Returns when every shard is done (it waits).
  using ShardFn = std::function<void(size_t shard, int worker, std::span<AppUpdate> updates)>;
  void process(const std::vector<StreamChunk>& chunks, std::span<const uint8_t> bytes,
               const std::vector<AppDatagram>& datagrams, const std::vector<uint8_t>& dgram_bytes, const ShardFn& then);
  // The updates of shard s's last process() (valid until the next).
  const std::vector<AppUpdate>& updates(size_t s) const { return part_[s].updates; }
  // AppLayer::forget over the shards, the flows' unlogged transactions in the flows' order.
  void forget(const std::vector<FlowRecordOut>& flows, const AppLayer::Unlogged& unlogged = nullptr);
  AppProto proto(uint64_t flow_id) const {
    const size_t s = shard_of(flow_id);
    return s == kShards ? AppProto::unknown : shards_[s]->proto(flow_id);
  }
  AppProto proto_orig(uint64_t flow_id) const {
    const size_t s = shard_of(flow_id);
    return s == kShards ? AppProto::unknown : shards_[s]->proto_orig(flow_id);
  }
  AppProto proto_at(uint64_t flow_id, uint32_t packet) const {
    const size_t s = shard_of(flow_id);
    return s == kShards ? AppProto::unknown : shards_[s]->proto_at(flow_id, packet);
  }
  // The shards' counters, summed.
  void report(std::map<std::string, uint64_t>& r) const;

 private:
  struct Part {
    std::vector<StreamChunk> chunks;
    std::vector<AppDatagram> datagrams;
    std::vector<AppUpdate> updates;
  };
  std::vector<std::unique_ptr<AppLayer>> shards_;
  std::vector<Part> part_;
  // Each flow's shard, from its first chunk or datagram; a forgotten flow's stays until the next
  // forget() (its protocol is still asked for after it).
  std::unordered_map<uint64_t, uint8_t> flow_shard_;
  std::vector<uint64_t> forgotten_;
  ThreadPool pool_;
};

}  // namespace gaspp
