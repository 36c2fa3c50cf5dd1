// modules/detect/prefilter_compile.hpp — builds the hashed prefilter's tables (prefilter.hpp) from
// the fast patterns and places them with the backend.
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

}  // namespace gaspp
