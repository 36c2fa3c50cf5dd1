// flow/flow_table.hpp — the connection table as kernels and CPU workers see it (FlowTableRef),
// and the per-packet steps that find or create a packet's flow.
//
// Layout: `slots` records in buckets of kFlowBucketSlots (32). A flow lives in the bucket its key
// hashes to; one 32-bit tag per slot says whether the slot is empty, being filled, or holds a flow
// (with 30 bits of the key's hash, so most mismatches are rejected without reading the record).
// All 32 tags of a bucket are one 128-byte line.
//
// Concurrency (thousands of packets looked up at once, several of them from one new flow):
//   * flow_find_or_claim() scans the bucket; if the key is absent it claims the first empty slot
//     with a compare-and-swap (empty → busy), writes the key, then publishes the tag (release).
//     A thread that meets a busy slot waits for it to be published before comparing. Since slots
//     only go from empty to full while lookups run, two packets of one new flow always meet at the
//     same slot: exactly one record is created. A claim also reserves one unit of `live`, which
//     never exceeds the capacity.
//   * Packets that found no room (bucket full, or the table at capacity) are retried afterwards by
//     flow_claim_or_evict(), one bucket at a time under a per-bucket lock: the flow may have been
//     created meanwhile; else a free slot is taken; else the bucket's victim is evicted (below).
//   * Expiry (flow/expiry.hpp) and the retry never run at the same time as lookups.
//
// Full-table policy: a flow that cannot get a slot (its bucket is full, or the table holds
// `capacity` flows) evicts one flow of its bucket that the current batch has not touched: closed
// flows first, then flows still in the `new` state, then established ones, the longest idle first
// within each class. The victim is written as a flow record with reason `forced`. If every flow of
// the bucket is in use by the batch, the packet stays untracked (counted). Memory never grows.
// A flow a module decided to drop is never evicted: it leaves by its timeout, so its later packets
// keep meeting its drop (fail closed) however full the table gets. When no flow can be evicted,
// the packet is untracked and follows the exception policy (flow_retry_packet: Suricata's
// flow.memcap-policy; with drop, the packet is dropped).
#pragma once
#include <cstdint>
#include <type_traits>

#include "flow/flow_record.hpp"
#include "gaspp/fields.hpp"
#include "gaspp/flow.hpp"

namespace gaspp {

enum : uint32_t { kTagEmpty = 0, kTagBusy = 1 };  // otherwise: (hash & ~3) | 2
GASPP_HD GASPP_FORCEINLINE uint32_t flow_tag(uint32_t hash) { return (hash & ~3u) | 2u; }

// The flow fields of one decoded packet, and whether it has a flow at all.
enum class FlowSkip : uint8_t { none = 0, not_ip, malformed, fragment };

GASPP_HD GASPP_FORCEINLINE uint8_t icmp_query_type(uint8_t ip_proto, uint8_t type) {
  if (ip_proto == 1) {  // replies folded onto their request: echo, timestamp, info, address mask
    if (type == 0) return 8;
    if (type == 14 || type == 16 || type == 18) return uint8_t(type - 1);
  } else if (type == 129) {
    return 128;
  }
  return type;
}

// Builds the canonical key of packet i. Returns the skip reason (none: `k` and `from_lo` are set).
// With `defrag` (FlowConfig::defrag) no IP fragment outside a tunnel keys a flow, the first one
// included: the datagram reassembled from them does (defrag/defrag.hpp).
GASPP_HD inline FlowSkip flow_key_of(const DecodedView& d, uint32_t i, bool vlan_in_key, bool defrag, FlowKey& k,
                                     bool& from_lo) {
  const uint8_t l3 = d.l3[i];
  if (l3 != uint8_t(L3::ipv4) && l3 != uint8_t(L3::ipv6)) return FlowSkip::not_ip;
  if (d.malformed[i]) return FlowSkip::malformed;
  const uint8_t frag = d.ip_frag[i];
  if ((frag & kFragIsFragment) && (!(frag & kFragFirst) || (defrag && d.tunnel_depth[i] == 0))) return FlowSkip::fragment;
  const uint8_t l4 = d.l4[i];
  uint16_t ps = 0, pd = 0;
  k.icmp_type = k.icmp_code = 0;
  if (l4 == uint8_t(L4::tcp) || l4 == uint8_t(L4::udp)) {
    ps = d.sport[i];
    pd = d.dport[i];
  } else if (l4 == uint8_t(L4::icmp) || l4 == uint8_t(L4::icmpv6)) {
    ps = pd = d.icmp_id[i];
    k.icmp_type = icmp_query_type(d.ip_proto[i], d.icmp_type[i]);
    k.icmp_code = d.icmp_code[i];
  }
  const uint32_t* a = d.src_ip + uint64_t(i) * 4;
  const uint32_t* b = d.dst_ip + uint64_t(i) * 4;
  // Compare endpoints as (address bytes, port): the lower one becomes endpoint 0.
  int cmp = 0;
  for (int w = 0; w < 4 && cmp == 0; ++w)
    if (a[w] != b[w]) cmp = a[w] < b[w] ? -1 : 1;
  if (cmp == 0 && ps != pd) cmp = ps < pd ? -1 : 1;
  from_lo = cmp <= 0;
  const uint32_t* lo = from_lo ? a : b;
  const uint32_t* hi = from_lo ? b : a;
  for (int w = 0; w < 4; ++w) { k.addr[0][w] = lo[w]; k.addr[1][w] = hi[w]; }
  k.port[0] = from_lo ? ps : pd;
  k.port[1] = from_lo ? pd : ps;
  k.vlan_n = vlan_in_key ? d.vlan_count[i] : 0;
  for (int v = 0; v < 3; ++v) k.vlan[v] = v < k.vlan_n ? d.vlan_id[uint64_t(i) * 3 + v] : 0;
  k.proto = d.ip_proto[i];
  k.family = l3 == uint8_t(L3::ipv4) ? 4 : 6;
  k.pad_ = 0;
  return FlowSkip::none;
}

GASPP_HD GASPP_FORCEINLINE uint32_t flow_key_hash(const FlowKey& k) {
  const uint32_t* w = reinterpret_cast<const uint32_t*>(&k);
  uint32_t h = 0x2545f491u;
  for (int j = 0; j < int(sizeof(FlowKey) / 4); ++j) h = mix32(h ^ w[j]) + 0x9e3779b9u;
  return mix32(h);
}

GASPP_HD GASPP_FORCEINLINE bool flow_key_eq(const FlowKey& a, const FlowKey& b) {
  const uint32_t* x = reinterpret_cast<const uint32_t*>(&a);
  const uint32_t* y = reinterpret_cast<const uint32_t*>(&b);
  uint32_t diff = 0;
  for (int j = 0; j < int(sizeof(FlowKey) / 4); ++j) diff |= x[j] ^ y[j];
  return diff == 0;
}

GASPP_HD GASPP_FORCEINLINE uint32_t flow_bucket(const FlowTableRef& t, uint32_t hash) {
  return uint32_t((uint64_t(mix32(hash ^ 0x5bd1e995u)) * t.buckets) >> 32);
}

// A fresh flow with key k in record r (k by value: it may be r's own key); the first packet
// initialises the rest in order.
GASPP_HD GASPP_FORCEINLINE void flow_init_record(FlowRecord& r, const FlowKey k, uint32_t epoch) {
  r = FlowRecord{};
  r.key = k;
  r.epoch = epoch;
  r.state = uint8_t(FlowState::fresh);
}
// Zeroes slot s's module state slices.
GASPP_HD GASPP_FORCEINLINE void flow_clear_module_state(const FlowTableRef& t, uint32_t s) {
  for (uint32_t j = 0; j < t.module_state_bytes; ++j) t.module_state[uint64_t(s) * t.module_state_bytes + j] = 0;
}
// Resets slot s to a fresh flow with key k.
GASPP_HD GASPP_FORCEINLINE void flow_init_slot(const FlowTableRef& t, uint32_t s, const FlowKey& k, uint32_t epoch) {
  flow_init_record(t.recs[s], k, epoch);
  flow_clear_module_state(t, s);
}

GASPP_HD GASPP_FORCEINLINE bool flow_reserve_live(const FlowTableRef& t) {
  const uint32_t before = atomic_add(&t.state->live, 1);
  if (before >= t.capacity) {
    atomic_sub(&t.state->live, 1);
    return false;
  }
  atomic_max(&t.state->peak_live, before + 1);
  return true;
}

// Finds the flow of key k (hash h) or creates it. Returns its slot and sets `created`, or kNoFlow
// when there is no room (the caller retries with flow_claim_or_evict). Lock-free; see the header.
GASPP_HD inline uint32_t flow_find_or_claim(const FlowTableRef& t, const FlowKey& k, uint32_t h, uint32_t epoch,
                                            bool& created) {
  created = false;
  const uint32_t tag = flow_tag(h);
  const uint32_t base = flow_bucket(t, h) * kFlowBucketSlots;
  for (;;) {
    uint32_t first_free = kNoFlow;
    for (uint32_t j = 0; j < kFlowBucketSlots; ++j) {
      uint32_t* tp = &t.tags[base + j];
      uint32_t v = atomic_load_acquire(tp);
      while (v == kTagBusy) {
        spin_pause();
        v = atomic_load_acquire(tp);
      }
      if (v == kTagEmpty) {
        if (first_free == kNoFlow) first_free = base + j;
      } else if (v == tag && flow_key_eq(t.recs[base + j].key, k)) {
        // Written once per flow and batch: unconditional stores from every packet of a busy flow
        // would bounce its cache line between CPU cores.
        if (atomic_load_acquire(&t.recs[base + j].epoch) != epoch) atomic_store_release(&t.recs[base + j].epoch, epoch);
        return base + j;
      }
    }
    if (first_free == kNoFlow) return kNoFlow;
    if (!atomic_cas(&t.tags[first_free], kTagEmpty, kTagBusy)) continue;  // lost the slot: look again
    if (!flow_reserve_live(t)) {
      atomic_store_release(&t.tags[first_free], kTagEmpty);
      return kNoFlow;
    }
    flow_init_slot(t, first_free, k, epoch);
    atomic_store_release(&t.tags[first_free], tag);
    created = true;
    return first_free;
  }
}

// Eviction preference: lower is evicted first (closed, then new, then established), then idlest.
GASPP_HD GASPP_FORCEINLINE int flow_evict_class(const FlowRecord& r) {
  return r.state == uint8_t(FlowState::closed) ? 0 : r.state == uint8_t(FlowState::established) ? 2 : 1;
}

// Retry for a packet flow_find_or_claim() could not place: under the bucket's lock, find the flow
// (another retry may have created it), take a free slot, or evict the bucket's victim into `out`
// (FlowRecordOut, reason forced; `evicted` set). Returns the slot, or kNoFlow if every flow of
// the bucket is in use by this batch. Runs after all lookups of the batch have finished.
template <class EmitFn>
GASPP_HD inline uint32_t flow_claim_or_evict(const FlowTableRef& t, const FlowKey& k, uint32_t h, uint32_t epoch,
                                             bool& created, bool& evicted, EmitFn&& emit) {
  created = evicted = false;
  const uint32_t tag = flow_tag(h);
  const uint32_t b = flow_bucket(t, h);
  const uint32_t base = b * kFlowBucketSlots;
  while (!atomic_cas(&t.bucket_locks[b], 0, 1)) spin_pause();
  uint32_t result = kNoFlow, free_slot = kNoFlow, victim = kNoFlow;
  for (uint32_t j = 0; j < kFlowBucketSlots && result == kNoFlow; ++j) {
    const uint32_t s = base + j;
    const uint32_t v = atomic_load_acquire(&t.tags[s]);
    if (v == kTagEmpty) {
      if (free_slot == kNoFlow) free_slot = s;
    } else if (v == tag && flow_key_eq(t.recs[s].key, k)) {
      result = s;
    } else if (t.recs[s].epoch != epoch && !(t.recs[s].misc & kFlowDecidedDrop)) {
      if (victim == kNoFlow) {
        victim = s;
      } else {
        const FlowRecord& a = t.recs[s];
        const FlowRecord& c = t.recs[victim];
        const int ca = flow_evict_class(a), cc = flow_evict_class(c);
        if (ca < cc || (ca == cc && a.last_ts < c.last_ts)) victim = s;
      }
    }
  }
  if (result != kNoFlow) {
    atomic_store_release(&t.recs[result].epoch, epoch);
  } else if (free_slot != kNoFlow && flow_reserve_live(t)) {
    flow_init_slot(t, free_slot, k, epoch);
    atomic_store_release(&t.tags[free_slot], tag);
    result = free_slot;
    created = true;
  } else if (victim != kNoFlow) {
    emit(t.recs[victim], FlowReason::forced);
    flow_init_slot(t, victim, k, epoch);
    atomic_store_release(&t.tags[victim], tag);
    result = victim;
    created = evicted = true;
  }
  atomic_store_release(&t.bucket_locks[b], 0);
  return result;
}

}  // namespace gaspp
