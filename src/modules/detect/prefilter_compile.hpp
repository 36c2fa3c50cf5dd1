// modules/detect/prefilter_compile.hpp — builds the device matchers' tables from the fast patterns
// and places them with the backend: the hashed filter (prefilter.hpp) and Aho-Corasick
// (prefilter_ac.hpp), which reads its pattern bytes from the hashed filter's tables.
//
// Sizes: the 4-byte filter is 2^kPfBits4 bits (512 KiB), the 3-byte one 2^kPfBits3 (128 KiB), the
// 2- and 1-byte ones direct (8 KiB, 32 B); the slot table has a power of two >= 2x the keys.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gaspp/module.hpp"
#include "modules/detect/prefilter.hpp"
#include "modules/detect/prefilter_ac.hpp"

namespace gaspp {

class PrefilterTables {
 public:
  // patterns: (bytes, nocase); nocase bytes are already lower-cased. Pattern ids are positions.
  void compile(const std::vector<std::pair<std::string, bool>>& patterns);
  PrefilterView place(TableMemory& mem) const;
  uint64_t bytes() const;

 private:
  std::vector<uint32_t> bits_[5];
  std::vector<PfSlot> slots_;
  std::vector<uint32_t> pat_ids_, pat_off_;
  std::vector<uint16_t> pat_len_;
  std::vector<uint8_t> pat_nocase_, bytes_;
  uint8_t lens_present_ = 0;
};

// The Aho-Corasick automaton (prefilter_ac.hpp); the limit on its table is kAcMaxTableBytes
// (std::invalid_argument beyond: the hashed filter has no such limit).
class AcTables {
 public:
  static constexpr uint64_t kAcMaxTableBytes = 1ull << 30;
  void compile(const std::vector<std::pair<std::string, bool>>& patterns);
  AcView place(TableMemory& mem) const;
  uint64_t bytes() const { return delta_.size() * 4 + out_off_.size() * 4 + out_ids_.size() * 4 + 256; }
  uint32_t states() const { return uint32_t(out_off_.empty() ? 0 : out_off_.size() - 1); }
  uint32_t classes() const { return classes_; }

 private:
  std::vector<uint32_t> delta_, out_off_, out_ids_;
  std::vector<uint8_t> cls_ = std::vector<uint8_t>(256, 0);
  uint32_t classes_ = 1;
  uint32_t max_len_ = 0;
};

}  // namespace gaspp
