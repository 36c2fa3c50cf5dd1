// modules/detect/prefilter_compile.cpp — the hashed prefilter's tables (prefilter_compile.hpp).
#include "modules/detect/prefilter_compile.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>

namespace gaspp {

void PrefilterTables::compile(const std::vector<std::pair<std::string, bool>>& patterns) {
  std::map<std::pair<uint32_t, uint8_t>, std::vector<uint32_t>> by_key;
  for (int l = 1; l <= 4; ++l) {
    const uint64_t bits = l == 1 ? 256 : l == 2 ? 65536 : (1ull << (l == 4 ? kPfBits4 : kPfBits3));
    bits_[l].assign(size_t(bits / 32), 0);
  }
  bits_[0].assign(1, 0);
  for (uint32_t id = 0; id < patterns.size(); ++id) {
    const std::string& p = patterns[id].first;
    if (p.empty() || p.size() > 65535) throw std::invalid_argument("detect: a fast pattern of length " + std::to_string(p.size()));
    const uint32_t len = p.size() < 4 ? uint32_t(p.size()) : 4;
    uint32_t key = 0;
    for (uint32_t k = 0; k < len; ++k) key |= uint32_t(pf_lower(uint8_t(p[k]))) << (8 * k);
    by_key[{key, uint8_t(len)}].push_back(id);
    const uint32_t fi = pf_filter_index(key, len);
    bits_[len][fi >> 5] |= 1u << (fi & 31);
    lens_present_ |= uint8_t(1u << len);
    pat_off_.push_back(uint32_t(bytes_.size()));
    pat_len_.push_back(uint16_t(p.size()));
    pat_nocase_.push_back(patterns[id].second ? 1 : 0);
    bytes_.insert(bytes_.end(), p.begin(), p.end());
  }
  size_t slots = 16;
  while (slots < 2 * by_key.size()) slots *= 2;
  slots_.assign(slots, PfSlot{});
  for (auto& [k, ids] : by_key) {
    uint32_t s = pf_slot_hash(k.first, k.second) & uint32_t(slots - 1);
    while (slots_[s].len) s = (s + 1) & uint32_t(slots - 1);
    slots_[s].key = k.first;
    slots_[s].len = k.second;
    slots_[s].off = uint32_t(pat_ids_.size());
    slots_[s].n = uint32_t(ids.size());
    pat_ids_.insert(pat_ids_.end(), ids.begin(), ids.end());
  }
}

PrefilterView PrefilterTables::place(TableMemory& mem) const {
  PrefilterView v{};
  for (int l = 0; l <= 4; ++l) v.bits[l] = mem.place(bits_[l]);
  v.slots = mem.place(slots_);
  v.slot_mask = uint32_t(slots_.size() - 1);
  v.pat_ids = mem.place(pat_ids_);
  v.pat_off = mem.place(pat_off_);
  v.pat_len = mem.place(pat_len_);
  v.pat_nocase = mem.place(pat_nocase_);
  v.bytes = mem.place(bytes_);
  v.lens_present = lens_present_;
  return v;
}

uint64_t PrefilterTables::bytes() const {
  uint64_t b = 0;
  for (int l = 0; l <= 4; ++l) b += bits_[l].size() * 4;
  return b + slots_.size() * sizeof(PfSlot) + pat_ids_.size() * 4 + pat_off_.size() * 4 + pat_len_.size() * 2 +
         pat_nocase_.size() + bytes_.size();
}

// The trie of the case-folded patterns, then breadth first: each state's missing transitions are
// its failure state's, and its pattern list gains the failure state's (so a scan needs no links).
void AcTables::compile(const std::vector<std::pair<std::string, bool>>& patterns) {
  cls_.assign(256, 0);
  classes_ = 1;
  for (const auto& [p, nocase] : patterns)
    for (char ch : p) {
      const uint8_t c = pf_lower(uint8_t(ch));
      if (!cls_[c]) cls_[c] = uint8_t(classes_++);
      if (classes_ > 256) throw std::logic_error("detect: more than 256 byte classes");
    }
  for (int c = 'A'; c <= 'Z'; ++c) cls_[size_t(c)] = cls_[size_t(c + 32)];
  const uint32_t C = classes_;
  max_len_ = 0;
  for (const auto& pt : patterns) max_len_ = std::max(max_len_, uint32_t(pt.first.size()));
  std::vector<uint32_t> next(C, 0);  // trie transitions (0: none; the root has none into itself)
  std::vector<std::vector<uint32_t>> outs(1);
  for (uint32_t id = 0; id < patterns.size(); ++id) {
    uint32_t s = 0;
    for (char ch : patterns[id].first) {
      const uint32_t c = cls_[pf_lower(uint8_t(ch))];
      if (!next[size_t(s) * C + c]) {
        if (uint64_t(outs.size() + 1) * C * 4 > kAcMaxTableBytes)
          throw std::invalid_argument("detect: the Aho-Corasick table would pass " + std::to_string(kAcMaxTableBytes >> 20) +
                                      " MiB");
        next[size_t(s) * C + c] = uint32_t(outs.size());
        outs.emplace_back();
        next.resize(next.size() + C, 0);
      }
      s = next[size_t(s) * C + c];
    }
    outs[s].push_back(id);
  }
  const uint32_t n = uint32_t(outs.size());
  std::vector<uint32_t> fail(n, 0), order;
  order.reserve(n);
  std::vector<uint32_t> go(size_t(n) * C, 0);
  for (uint32_t c = 0; c < C; ++c) {
    const uint32_t t = next[c];
    go[c] = t;
    if (t) order.push_back(t);
  }
  for (size_t q = 0; q < order.size(); ++q) {
    const uint32_t s = order[q];
    const std::vector<uint32_t>& fo = outs[fail[s]];
    outs[s].insert(outs[s].end(), fo.begin(), fo.end());
    for (uint32_t c = 0; c < C; ++c) {
      const uint32_t t = next[size_t(s) * C + c];
      if (t) {
        fail[t] = go[size_t(fail[s]) * C + c];
        order.push_back(t);
        go[size_t(s) * C + c] = t;
      } else {
        go[size_t(s) * C + c] = go[size_t(fail[s]) * C + c];
      }
    }
  }
  delta_.assign(size_t(n) * C, 0);
  for (size_t k = 0; k < delta_.size(); ++k) {
    const uint32_t t = go[k];
    delta_[k] = t * C | (outs[t].empty() ? 0u : kAcOut);
  }
  out_off_.assign(size_t(n) + 1, 0);
  out_ids_.clear();
  for (uint32_t s = 0; s < n; ++s) {
    out_off_[s] = uint32_t(out_ids_.size());
    out_ids_.insert(out_ids_.end(), outs[s].begin(), outs[s].end());
  }
  out_off_[n] = uint32_t(out_ids_.size());
}

AcView AcTables::place(TableMemory& mem) const {
  AcView v{};
  v.delta = mem.place(delta_);
  v.cls = mem.place(cls_);
  v.out_off = mem.place(out_off_);
  v.out_ids = mem.place(out_ids_);
  v.classes = classes_;
  v.states = states();
  v.max_len = max_len_;
  return v;
}

}  // namespace gaspp
