// modules/detect/base64.hpp — base64 as the signature keyword base64_decode reads it (Suricata's
// RFC 4648 mode), written here because its quirks are part of what a rule matches and no library
// decoder has them:
//   - decoding stops at the first byte that is neither of the alphabet nor '=' (a quote, a '<',
//     a line break); the group in progress is completed with '=' and decoded;
//   - '=' may stand anywhere: in a group's third place the group gives one byte, in its fourth
//     two (the rest of the group is ignored), and decoding goes on with the next group;
//   - a group whose first or second place is '=' (or a single leftover character) makes the whole
//     decode fail: nothing is decoded, not even the groups before it.
#pragma once
#include <cstddef>
#include <cstdint>

namespace gaspp {

// The value of a base64 alphabet character, 64 for '=', -1 for anything else.
inline int base64_value(uint8_t c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  if (c == '=') return 64;
  return -1;
}

// Decodes in[0..n) into out (room for n bytes); returns the bytes decoded, 0 on a failed decode.
inline size_t base64_decode_rfc4648(const uint8_t* in, size_t n, uint8_t* out) {
  size_t o = 0, i = 0;
  int q[4];
  bool stop = false;
  while (i < n && !stop) {
    int k = 0;
    while (k < 4) {
      const int x = i < n ? base64_value(in[i]) : -1;
      if (x < 0) {
        if (k == 0) return o;  // nothing pending
        while (k < 4) q[k++] = 64;  // completed with '='
        stop = true;
        break;
      }
      q[k++] = x;
      ++i;
    }
    if (q[0] == 64 || q[1] == 64) return 0;
    out[o++] = uint8_t(q[0] << 2 | q[1] >> 4);
    if (q[2] == 64) continue;
    out[o++] = uint8_t(q[1] << 4 | q[2] >> 2);
    if (q[3] == 64) continue;
    out[o++] = uint8_t(q[2] << 6 | q[3]);
  }
  return o;
}

}  // namespace gaspp
