// gaspp/hd.hpp — host+device building blocks shared by every per-item function.
//
// GASPP_HD marks a function that is compiled for both the CPU backend and the CUDA backend: under
// nvcc it expands to `__host__ __device__`, under a plain C++ compiler to nothing. Per-packet
// logic (decoding, counting) is written once with it and called from a thread pool on the CPU and
// from thin grid-stride kernels on the GPU.
//
// Packet headers sit at arbitrary byte offsets in a batch buffer; a plain multi-byte load of an
// unaligned field faults on the GPU, so every multi-byte field is assembled from single bytes
// (load_be16/32, load_le32...). The compiler merges these where the target allows.
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define GASPP_HD __host__ __device__
#define GASPP_FORCEINLINE __forceinline__
#else
#define GASPP_HD
#define GASPP_FORCEINLINE inline __attribute__((always_inline))
#endif

namespace gaspp {

GASPP_HD GASPP_FORCEINLINE uint16_t load_be16(const uint8_t* p) {
  return static_cast<uint16_t>((p[0] << 8) | p[1]);
}
GASPP_HD GASPP_FORCEINLINE uint32_t load_be32(const uint8_t* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}
GASPP_HD GASPP_FORCEINLINE uint16_t load_le16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
}
GASPP_HD GASPP_FORCEINLINE uint32_t load_le32(const uint8_t* p) {
  return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}
// Four bytes in memory order packed into a word (p[0] in the low byte): addresses are kept this
// way so that printing them byte by byte gives network order on any host.
GASPP_HD GASPP_FORCEINLINE uint32_t load_bytes32(const uint8_t* p) { return load_le32(p); }

GASPP_HD GASPP_FORCEINLINE uint32_t mix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x7feb352dU;
  h ^= h >> 15;
  h *= 0x846ca68bU;
  h ^= h >> 16;
  return h;
}

}  // namespace gaspp
