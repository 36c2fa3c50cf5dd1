// flow/host_lookup.hpp — the CPU backend's flow lookup over a range of packets, with prefetching.
//
// A table far larger than the caches costs two memory misses per lookup (the bucket's tags, then
// the record's key). GPU threads hide that latency by their number; a CPU core hides it by working
// on a group of packets at once: first every packet's key, hash and a prefetch of its bucket's
// tags, then a prefetch of the record its tag points at, then the lookups themselves
// (flow_find_or_claim, the same function the GPU runs), which now hit the cache.
#pragma once
#include <algorithm>
#include <cstdint>

#include "flow/flow_track.hpp"

namespace gaspp {

// Looks up packets [begin, end): slot[i] gets the flow slot (kNoFlow when the packet has no flow
// or found no room), flags[i] its direction (kPktFromLo) for the walk. on_skip(reason) is called
// for packets without a flow, on_full(i) for packets that found no room (to retry with
// flow_claim_or_evict).
template <class OnSkip, class OnFull>
inline void flow_lookup_range(const FlowTableRef& t, const DecodedView& dec, uint64_t begin, uint64_t end,
                              const FlowTrackParams& prm, uint32_t* slot, uint8_t* flags, OnSkip&& on_skip,
                              OnFull&& on_full) {
  constexpr uint32_t kGroup = 16;
  FlowKey key[kGroup];
  uint32_t hash[kGroup];
  FlowSkip skip[kGroup];
  for (uint64_t g = begin; g < end; g += kGroup) {
    const uint32_t m = uint32_t(std::min<uint64_t>(kGroup, end - g));
    for (uint32_t j = 0; j < m; ++j) {
      bool from_lo = false;
      skip[j] = flow_key_of(dec, uint32_t(g + j), prm.vlan_in_key, prm.defrag, key[j], from_lo);
      flags[g + j] = from_lo ? kPktFromLo : 0;
      if (skip[j] != FlowSkip::none) continue;
      hash[j] = flow_key_hash(key[j]);
      const uint32_t* tags = &t.tags[flow_bucket(t, hash[j]) * kFlowBucketSlots];
      __builtin_prefetch(tags);
      __builtin_prefetch(tags + 16);
    }
    for (uint32_t j = 0; j < m; ++j) {
      if (skip[j] != FlowSkip::none) continue;
      const uint32_t base = flow_bucket(t, hash[j]) * kFlowBucketSlots, want = flow_tag(hash[j]);
      for (uint32_t k = 0; k < kFlowBucketSlots; ++k)
        if (atomic_load_acquire(&t.tags[base + k]) == want) {
          __builtin_prefetch(&t.recs[base + k]);
          break;
        }
    }
    for (uint32_t j = 0; j < m; ++j) {
      const uint64_t i = g + j;
      if (skip[j] != FlowSkip::none) {
        slot[i] = kNoFlow;
        on_skip(skip[j]);
        continue;
      }
      bool created;
      slot[i] = flow_find_or_claim(t, key[j], hash[j], prm.epoch, created);
      if (slot[i] == kNoFlow) on_full(uint32_t(i));
    }
  }
}

}  // namespace gaspp
