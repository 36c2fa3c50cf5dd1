// flow/host_lookup.hpp — the CPU backend's flow lookup, with prefetching.
//
// A table far larger than the caches costs two memory misses per lookup (the bucket's tags, then
// the record's key). GPU threads hide that latency by their number; a CPU core hides it by working
// on a group of packets at once: first every packet's key, hash and a prefetch of its bucket's
// tags, then a prefetch of the record its tag points at, then the lookups themselves
// (flow_find_or_claim, the same function the GPU runs), which now hit the cache.
//
// Two ways in: flow_lookup_range() over a range of packets, and flow_lookup_items() over a list of
// packets whose hashes are known (the CPU backend's per-shard lookup: each worker looks up the
// packets of the flows it walks, so the flows' records stay in that core's cache), which can also
// only find (claim nothing): the CPU backend finds every packet's flow first, and claims slots for
// the rest in parallel only where the table has room for all of them (see cpu_backend.cpp).
#pragma once
#include <algorithm>
#include <cstdint>

#include "flow/flow_track.hpp"

namespace gaspp {

namespace lookup_detail {

constexpr uint32_t kGroup = 16;

// The slot of the flow of key k (hash h), kNoFlow when it has none; marks it seen in this batch
// (`epoch`) as flow_find_or_claim does. Only while nothing claims slots (no tag is busy).
inline uint32_t flow_find(const FlowTableRef& t, const FlowKey& k, uint32_t h, uint32_t epoch) {
  const uint32_t tag = flow_tag(h), base = flow_bucket(t, h) * kFlowBucketSlots;
  for (uint32_t j = 0; j < kFlowBucketSlots; ++j)
    if (t.tags[base + j] == tag && flow_key_eq(t.recs[base + j].key, k)) {
      if (t.recs[base + j].epoch != epoch) t.recs[base + j].epoch = epoch;  // once per flow and batch, as there
      return base + j;
    }
  return kNoFlow;
}

// m packets of known key and hash (live[j] false: no flow, passed over): slot[j] gets the flow
// slot, kNoFlow when it has none (claim false) or there was no room.
inline void lookup_group(const FlowTableRef& t, const FlowKey* key, const uint32_t* hash, const bool* live, uint32_t m,
                         uint32_t epoch, bool claim, uint32_t* slot) {
  for (uint32_t j = 0; j < m; ++j) {
    if (!live[j]) continue;
    const uint32_t* tags = &t.tags[flow_bucket(t, hash[j]) * kFlowBucketSlots];
    __builtin_prefetch(tags);
    __builtin_prefetch(tags + 16);
  }
  for (uint32_t j = 0; j < m; ++j) {
    if (!live[j]) continue;
    const uint32_t base = flow_bucket(t, hash[j]) * kFlowBucketSlots, want = flow_tag(hash[j]);
    for (uint32_t k = 0; k < kFlowBucketSlots; ++k)
      if (atomic_load_acquire(&t.tags[base + k]) == want) {
        __builtin_prefetch(&t.recs[base + k]);
        break;
      }
  }
  for (uint32_t j = 0; j < m; ++j) {
    if (!live[j]) continue;
    bool created;
    slot[j] = claim ? flow_find_or_claim(t, key[j], hash[j], epoch, created) : flow_find(t, key[j], hash[j], epoch);
  }
}

}  // namespace lookup_detail

// Looks up packets [begin, end): slot[i] gets the flow slot (kNoFlow when the packet has no flow
// or found no room), flags[i] its direction (kPktFromLo) for the walk. on_skip(reason) is called
// for packets without a flow, on_full(i) for packets that found no room (to retry with
// flow_claim_or_evict).
template <class OnSkip, class OnFull>
inline void flow_lookup_range(const FlowTableRef& t, const DecodedView& dec, uint64_t begin, uint64_t end,
                              const FlowTrackParams& prm, uint32_t* slot, uint8_t* flags, OnSkip&& on_skip,
                              OnFull&& on_full) {
  using namespace lookup_detail;
  FlowKey key[kGroup];
  uint32_t hash[kGroup];
  FlowSkip skip[kGroup];
  bool live[kGroup];
  for (uint64_t g = begin; g < end; g += kGroup) {
    const uint32_t m = uint32_t(std::min<uint64_t>(kGroup, end - g));
    for (uint32_t j = 0; j < m; ++j) {
      bool from_lo = false;
      skip[j] = flow_key_of(dec, uint32_t(g + j), prm.vlan_in_key, prm.defrag, key[j], from_lo);
      flags[g + j] = from_lo ? kPktFromLo : 0;
      live[j] = skip[j] == FlowSkip::none;
      if (live[j]) hash[j] = flow_key_hash(key[j]);
    }
    lookup_group(t, key, hash, live, m, prm.epoch, true, slot + g);
    for (uint32_t j = 0; j < m; ++j) {
      const uint64_t i = g + j;
      if (!live[j]) {
        slot[i] = kNoFlow;
        on_skip(skip[j]);
      } else if (slot[i] == kNoFlow) {
        on_full(uint32_t(i));
      }
    }
  }
}

// Looks up the n packets items[0..n), each with a flow whose key hashes to hash[items[k]] (the
// caller computed it, flow_key_hash): slot_at[k] gets the flow slot, or kNoFlow and on_miss(k)
// when the flow has none (claim false) or there was no room.
template <class OnMiss>
inline void flow_lookup_items(const FlowTableRef& t, const DecodedView& dec, const uint32_t* items, uint32_t n,
                              const uint32_t* hash, const FlowTrackParams& prm, bool claim, uint32_t* slot_at,
                              OnMiss&& on_miss) {
  using namespace lookup_detail;
  FlowKey key[kGroup];
  uint32_t h[kGroup];
  bool live[kGroup];
  for (uint32_t g = 0; g < n; g += kGroup) {
    const uint32_t m = std::min(kGroup, n - g);
    for (uint32_t j = 0; j < m; ++j) {
      bool from_lo = false;
      const uint32_t i = items[g + j];
      live[j] = flow_key_of(dec, i, prm.vlan_in_key, prm.defrag, key[j], from_lo) == FlowSkip::none;
      h[j] = hash[i];
    }
    lookup_group(t, key, h, live, m, prm.epoch, claim, slot_at + g);
    for (uint32_t j = 0; j < m; ++j) {
      if (!live[j]) slot_at[g + j] = kNoFlow;  // not a packet the caller should list: no flow, no retry
      else if (slot_at[g + j] == kNoFlow) on_miss(g + j);
    }
  }
}

}  // namespace gaspp
