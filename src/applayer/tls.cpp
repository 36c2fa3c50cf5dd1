// applayer/tls.cpp — see tls.hpp.
#include "applayer/tls.hpp"

#include <algorithm>

namespace gaspp {

const char* tls_version_name(uint16_t v) {
  switch (v) {
    case 0x0300: return "SSLv3";
    case 0x0301: return "TLSv1";
    case 0x0302: return "TLS 1.1";
    case 0x0303: return "TLS 1.2";
    case 0x0304: return "TLS 1.3";
    default: return "UNDETERMINED";
  }
}

namespace {
// A bounds-checked reader over one handshake message.
struct Reader {
  const uint8_t* p;
  size_t n, at = 0;
  bool ok = true;
  uint32_t u(int bytes) {
    if (at + size_t(bytes) > n) {
      ok = false;
      return 0;
    }
    uint32_t v = 0;
    for (int k = 0; k < bytes; ++k) v = v << 8 | p[at++];
    return v;
  }
  void skip(size_t k) {
    if (at + k > n) ok = false;
    else at += k;
  }
};
}  // namespace

// One hello (handshake message type 1 or 2, without its 4-byte header): 1 when read, -1 malformed.
int TlsConn::parse_hello(int dir, const uint8_t* p, size_t n) {
  Reader r{p, n};
  const uint16_t version = uint16_t(r.u(2));
  r.skip(32);                 // random
  r.skip(r.u(1));             // session id
  if (dir == 0) {
    r.skip(r.u(2));           // cipher suites
    r.skip(r.u(1));           // compression methods
  } else {
    r.skip(2);                // cipher suite
    r.skip(1);                // compression method
  }
  if (!r.ok) return -1;
  uint16_t supported = 0;
  if (r.at + 2 <= n) {
    const size_t end = std::min(n, r.at + 2 + r.u(2));
    while (r.ok && r.at + 4 <= end) {
      const uint32_t type = r.u(2), len = r.u(2);
      const size_t next = r.at + len;
      if (next > end) return -1;
      if (dir == 0 && type == 0) {
        // server_name: a list of (type, name); host_name is type 0.
        Reader s{p, next, r.at};
        s.u(2);
        while (s.ok && s.at + 3 <= next) {
          const uint32_t kind = s.u(1), nlen = s.u(2);
          if (s.at + nlen > next) break;
          if (kind == 0 && tx_.sni.empty()) tx_.sni.assign(reinterpret_cast<const char*>(p + s.at), nlen);
          s.at += nlen;
        }
      } else if (dir == 1 && type == 43 && len == 2) {
        supported = uint16_t(p[r.at] << 8 | p[r.at + 1]);  // supported_versions: the one chosen
      }
      r.at = next;
    }
  }
  if (dir == 0) {
    tx_.client_hello = true;
    tx_.client_version = version;
  } else {
    tx_.server_hello = true;
    tx_.server_version = supported ? supported : version;
  }
  changed_ = true;
  return 1;
}

int TlsConn::feed(int dir, const uint8_t* p, size_t n, bool gap) {
  if (state_[dir]) return state_[dir];
  if (gap) return state_[dir] = -1;
  std::string& rec = rec_[dir];
  std::string& hs = buf_[dir];
  size_t i = 0;
  while (i < n) {
    // Record header (5 bytes), then the body.
    if (rec.size() < 5) {
      const size_t k = std::min(n - i, 5 - rec.size());
      rec.append(reinterpret_cast<const char*>(p + i), k);
      i += k;
      if (rec.size() < 5) return 0;
      const uint8_t type = uint8_t(rec[0]);
      if (type != 22) return state_[dir] = (type >= 20 && type <= 23) ? 1 : -1;  // not a handshake: done
    }
    const size_t len = size_t(uint8_t(rec[3])) << 8 | uint8_t(rec[4]);
    const size_t have = rec.size() - 5;
    const size_t k = std::min(n - i, len - have);
    hs.append(reinterpret_cast<const char*>(p + i), k);
    rec.append(reinterpret_cast<const char*>(p + i), k);
    i += k;
    if (rec.size() - 5 < len) return 0;
    rec.clear();
    if (hs.size() > kTlsMaxHello) return state_[dir] = -1;
    // Handshake messages: 1-byte type, 3-byte length.
    while (hs.size() >= 4) {
      const uint8_t mt = uint8_t(hs[0]);
      const size_t ml = size_t(uint8_t(hs[1])) << 16 | size_t(uint8_t(hs[2])) << 8 | uint8_t(hs[3]);
      if (ml > kTlsMaxHello) return state_[dir] = -1;
      if (hs.size() < 4 + ml) break;
      if ((dir == 0 && mt == 1) || (dir == 1 && mt == 2)) {
        const int r = parse_hello(dir, reinterpret_cast<const uint8_t*>(hs.data()) + 4, ml);
        return state_[dir] = r;
      }
      hs.erase(0, 4 + ml);
    }
  }
  return 0;
}

}  // namespace gaspp
