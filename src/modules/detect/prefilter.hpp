// modules/detect/prefilter.hpp — the multi-literal prefilter written for the GPU (hashed
// filtering), host+device code: which fast patterns occur in a buffer.
//
// Every pattern is keyed by its first min(len, 4) bytes, lower-cased (so one table serves
// case-sensitive and nocase patterns; the check after a hit compares exactly). Per key length
// (1..4) a bitmap over a hash of the key says whether any pattern may start with these bytes; a hit
// looks the key up in an open-addressing table (linear probing) whose slot lists the patterns with
// that key, and each is compared in full at that position. One pass over the buffer reads each byte
// a few times from one window (no state table to chase, as Aho-Corasick would): the bitmaps (
// kPfBits4 bits for 4-byte keys: 512 KiB) stay in the cache.
// CPU backend: Hyperscan does this job (detect_host.cpp); this one is the device's, and tests check
// that both find the same patterns on the same buffers.
#pragma once
#include <cstdint>
#include <type_traits>

#include "gaspp/hd.hpp"

namespace gaspp {

constexpr uint32_t kPfBits4 = 22;   // 4-byte keys: 2^22-bit filter
constexpr uint32_t kPfBits3 = 20;   // 3-byte keys
// 2-byte keys: 2^16 bits (direct); 1-byte keys: 256 bits (direct)

struct PfSlot {
  uint32_t key;     // lower-cased first bytes, little-endian packed
  uint8_t len;      // key length 1..4; 0: empty slot
  uint8_t pad_[3];
  uint32_t off, n;  // patterns with this key: pat_ids[off .. off+n)
};

struct PrefilterView {
  const uint32_t* bits[5];       // [key length] filter bitmaps (index 0 unused)
  const PfSlot* slots;
  uint32_t slot_mask;            // slots - 1
  const uint32_t* pat_ids;       // lists of pattern ids per slot
  const uint32_t* pat_off;       // pattern bytes: bytes[pat_off[id] .. + pat_len[id])
  const uint16_t* pat_len;
  const uint8_t* pat_nocase;
  const uint8_t* bytes;          // nocase patterns stored lower-cased
  uint8_t lens_present;          // bit k: some pattern has key length k
};
static_assert(std::is_trivially_copyable_v<PrefilterView>, "PrefilterView is a kernel argument");

GASPP_HD GASPP_FORCEINLINE uint8_t pf_lower(uint8_t c) { return (c >= 'A' && c <= 'Z') ? uint8_t(c + 32) : c; }

GASPP_HD GASPP_FORCEINLINE uint32_t pf_filter_index(uint32_t key, uint32_t len) {
  if (len == 1) return key & 0xffu;
  if (len == 2) return key & 0xffffu;
  const uint32_t bits = len == 4 ? kPfBits4 : kPfBits3;
  return (key * 0x9E3779B1u) >> (32 - bits);
}
GASPP_HD GASPP_FORCEINLINE uint32_t pf_slot_hash(uint32_t key, uint32_t len) {
  return (key ^ (len * 0x85ebca6bu)) * 0xc2b2ae35u;
}

// Calls hit(pattern_id) for each pattern that occurs in buf[0..n) starting at position i. The
// positions are independent of each other: a scan may split them among threads as it likes.
template <class F>
GASPP_HD GASPP_FORCEINLINE void prefilter_at(const PrefilterView& pf, const uint8_t* buf, uint32_t n, uint32_t i, F&& hit) {
  const uint32_t avail = n - i < 4 ? n - i : 4;
  uint32_t key = 0;  // lower-cased bytes i..i+3, little-endian, as far as they exist
  for (uint32_t k = 0; k < avail; ++k) key |= uint32_t(pf_lower(buf[i + k])) << (8 * k);
  for (uint32_t len = 1; len <= avail; ++len) {
    if (!(pf.lens_present & (1u << len))) continue;
    const uint32_t kk = len == 4 ? key : key & ((1u << (8 * len)) - 1);
    const uint32_t fi = pf_filter_index(kk, len);
    if (!((pf.bits[len][fi >> 5] >> (fi & 31)) & 1)) continue;
    for (uint32_t s = pf_slot_hash(kk, len) & pf.slot_mask;; s = (s + 1) & pf.slot_mask) {
      const PfSlot& sl = pf.slots[s];
      if (sl.len == 0) break;
      if (sl.len != len || sl.key != kk) continue;
      for (uint32_t q = 0; q < sl.n; ++q) {
        const uint32_t id = pf.pat_ids[sl.off + q];
        const uint32_t m = pf.pat_len[id];
        if (m > n - i) continue;
        const uint8_t* p = pf.bytes + pf.pat_off[id];
        bool ok = true;
        if (pf.pat_nocase[id]) {
          for (uint32_t k = 0; k < m && ok; ++k) ok = pf_lower(buf[i + k]) == p[k];
        } else {
          for (uint32_t k = 0; k < m && ok; ++k) ok = buf[i + k] == p[k];
        }
        if (ok) hit(id);
      }
      break;
    }
  }
}

// Calls hit(pattern_id) for each pattern occurrence in buf[0..n) (a pattern found at several
// positions is reported at each).
template <class F>
GASPP_HD inline void prefilter_scan(const PrefilterView& pf, const uint8_t* buf, uint32_t n, F&& hit) {
  for (uint32_t i = 0; i < n; ++i) prefilter_at(pf, buf, n, i, hit);
}

}  // namespace gaspp
