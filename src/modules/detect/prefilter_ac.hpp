// modules/detect/prefilter_ac.hpp — the Aho-Corasick multi-literal matcher (GASPP §6's design, the
// baseline the hashed filter of prefilter.hpp is measured against), host+device code.
//
// One deterministic automaton over all fast patterns, case-folded (A-Z read as a-z): the input
// byte goes through a 256-entry class table (bytes no pattern holds share class 0), and the state
// table holds, per state, one entry per class — the next state's row offset, with the top bit set
// when that state ends some patterns. A hit reports every pattern ending there (failure links are
// folded into the lists at build time); a case-sensitive pattern is compared exactly first. The scan
// reads one table entry per input byte, each depending on the one before: the cost is the latency
// of that chain, where the hashed filter's lookups are independent of each other.
// Tables: states x classes x 4 bytes (ET Open's 1,666 fast patterns: 17,850 states and 231
// classes — hex contents use most byte values — 16.5 MB, which an H100's L2 holds).
#pragma once
#include <cstdint>
#include <type_traits>

#include "gaspp/hd.hpp"
#include "modules/detect/prefilter.hpp"

namespace gaspp {

constexpr uint32_t kAcOut = 0x80000000u;  // the state this entry leads to ends some patterns

struct AcView {
  const uint32_t* delta;    // [state * classes + class]: next state's row offset | kAcOut
  const uint8_t* cls;       // byte -> class
  const uint32_t* out_off;  // per state: its patterns are out_ids[out_off[s] .. out_off[s+1])
  const uint32_t* out_ids;
  uint32_t classes;
  uint32_t states;
  uint32_t max_len;         // the longest pattern
};
static_assert(std::is_trivially_copyable_v<AcView>, "AcView is a kernel argument");

// Calls hit(pattern_id, start) for each pattern occurrence in buf that ends in [report_from, to), reading
// from `from` on (to split a buffer among threads, start each part the longest pattern's length
// minus one before it). The pattern bytes come from the hashed filter's tables (pf: pat_off,
// pat_len, pat_nocase, bytes).
template <class F>
GASPP_HD inline void ac_scan_range(const AcView& ac, const PrefilterView& pf, const uint8_t* buf, uint32_t from,
                                   uint32_t report_from, uint32_t to, F&& hit) {
  uint32_t e = 0;  // row offset of the current state (the root's is 0)
  for (uint32_t i = from; i < to; ++i) {
    e = ac.delta[(e & ~kAcOut) + ac.cls[buf[i]]];
    if (!(e & kAcOut) || i < report_from) continue;
    const uint32_t s = (e & ~kAcOut) / ac.classes;
    for (uint32_t q = ac.out_off[s]; q < ac.out_off[s + 1]; ++q) {
      const uint32_t id = ac.out_ids[q];
      const uint32_t m = pf.pat_len[id];
      if (!pf.pat_nocase[id]) {
        const uint8_t* p = pf.bytes + pf.pat_off[id];
        const uint8_t* at = buf + i + 1 - m;
        bool ok = true;
        for (uint32_t k = 0; k < m && ok; ++k) ok = at[k] == p[k];
        if (!ok) continue;
      }
      hit(id, i + 1 - m);
    }
  }
}

// Every pattern occurrence in buf[0..n), as prefilter_scan reports them.
template <class F>
GASPP_HD GASPP_FORCEINLINE void ac_scan(const AcView& ac, const PrefilterView& pf, const uint8_t* buf, uint32_t n, F&& hit) {
  ac_scan_range(ac, pf, buf, 0, 0, n, [&](uint32_t id, uint32_t) { hit(id); });
}

}  // namespace gaspp
