// core/app_shards.cpp — see app_shards.hpp.
#include "core/app_shards.hpp"

#include <thread>

#include "flow/flow_record.hpp"

namespace gaspp {

AppShards::AppShards(const AppLayerConfig& cfg, int threads)
    : part_(kShards), pool_(threads > 0 ? threads : int(std::max(1u, std::thread::hardware_concurrency()))) {
  AppLayerConfig c = cfg;
  c.max_flows = (cfg.max_flows + kShards - 1) / kShards;
  for (size_t s = 0; s < kShards; ++s) shards_.push_back(std::make_unique<AppLayer>(c));
}

void AppShards::process(const std::vector<StreamChunk>& chunks, std::span<const uint8_t> bytes,
                        const std::vector<AppDatagram>& datagrams, const std::vector<uint8_t>& dgram_bytes,
                        const ShardFn& then) {
  for (Part& p : part_) {
    p.chunks.clear();
    p.datagrams.clear();
  }
  for (const StreamChunk& c : chunks) {
    const size_t s = shard_of_key(c.key);
    flow_shard_.emplace(c.flow_id, uint8_t(s));
    part_[s].chunks.push_back(c);
  }
  for (const AppDatagram& d : datagrams) {
    const size_t s = shard_of_key(d.key);
    flow_shard_.emplace(d.flow_id, uint8_t(s));
    part_[s].datagrams.push_back(d);
  }
  // Every shard runs, with nothing too: process() releases what the last one handed out.
  pool_.parallel_for(kShards, [&](uint64_t begin, uint64_t end, int worker) {
    for (uint64_t s = begin; s < end; ++s) {
      Part& p = part_[s];
      p.updates.clear();
      AppLayer::Step step;
      if (then) step = [&](std::span<AppUpdate> u) { then(size_t(s), worker, u); };
      shards_[s]->process(p.chunks, bytes, p.updates, p.datagrams, dgram_bytes, step);
    }
  });
}

void AppShards::forget(const std::vector<FlowRecordOut>& flows, const AppLayer::Unlogged& unlogged) {
  for (auto& s : shards_) s->forget_begin();
  for (const uint64_t id : forgotten_) {
    // A flow seen again since (the same key after its record went) keeps its shard.
    const auto it = flow_shard_.find(id);
    if (it != flow_shard_.end() && !shards_[it->second]->holds(id)) flow_shard_.erase(it);
  }
  forgotten_.clear();
  for (const FlowRecordOut& r : flows) {
    const size_t s = shard_of(r.rec.flow_id);
    if (s == kShards) continue;  // no data of it reached the application layer
    shards_[s]->forget_flow(r.rec.flow_id, unlogged);
    forgotten_.push_back(r.rec.flow_id);
  }
}

void AppShards::report(std::map<std::string, uint64_t>& r) const {
  for (const auto& s : shards_) {
    std::map<std::string, uint64_t> one;
    s->report(one);
    for (const auto& [k, v] : one) r[k] += v;
  }
}

}  // namespace gaspp
