// bench/device_matchers.cuh — the device's multi-literal matchers alone on the GPU, over payloads
// already in device memory (no pipeline around them): the measurement that picks the matcher
// design (issue: Aho-Corasick as the baseline against at least one other).
//   hash/thread  the hashed filter (prefilter.hpp), one thread per payload (as on_ip runs it)
//   ac/thread    Aho-Corasick (prefilter_ac.hpp), one thread per payload
//   hash/warp    the hashed filter, one warp per payload, lane k taking positions k, k+32, ...
//                (its positions are independent, so the warp reads consecutive bytes together)
//   ac/warp      Aho-Corasick, one warp per payload cut in 32 parts, each read from the longest
//                pattern's length minus one before its start
// Each counts pattern occurrences; all four must count the same (the caller checks them against
// the host's count).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "modules/detect/detect.hpp"

namespace gaspp::bench {

struct DeviceMatcherFigures {
  std::string name;
  double seconds = 0;  // median over the reps, one pass over every payload
  uint64_t hits = 0;
};

// payloads: (offset in bytes, length). host must have been built with matcher=ac (both tables).
std::vector<DeviceMatcherFigures> device_matchers_alone(DetectModule::Host& host, const uint8_t* bytes,
                                                        const std::vector<std::pair<uint64_t, uint32_t>>& payloads,
                                                        int reps);

}  // namespace gaspp::bench
