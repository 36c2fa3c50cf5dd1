// applayer/addr_pair.hpp — a hash of two addresses, the key the application layer groups flows by:
// an FTP control connection and its data connections are between the same two addresses.
#pragma once
#include <cstdint>

#include "gaspp/flow.hpp"

namespace gaspp {

// The addresses as given (a, then b) and their family.
inline uint64_t addr_pair_hash(const uint32_t (&a)[4], const uint32_t (&b)[4], uint8_t family) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ family;
  for (const auto* e : {&a, &b})
    for (int i = 0; i < 4; ++i) h = (h ^ (*e)[i]) * 0x100000001B3ull;
  return h ^ (h >> 31);
}

// A flow's two addresses, either order (ports left out): the flows between two addresses share
// it, so that they are parsed in one AppLayer, in capture order (core/app_shards.hpp shards by it).
// FlowKey's endpoint 0 is the lower (address, port): with two different addresses the lower
// address, so the order is the pair's own; with one address twice, either order is the same.
inline uint64_t app_pair_hash(const FlowKey& k) { return addr_pair_hash(k.addr[0], k.addr[1], k.family); }

}  // namespace gaspp
