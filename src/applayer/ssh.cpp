// applayer/ssh.cpp — see ssh.hpp.
#include "applayer/ssh.hpp"

#include <utility>

#include "applayer/digest.hpp"

namespace gaspp {

namespace {
// Suricata's ssh_parse_banner: "SSH-", a version of at least one byte up to a '-', the '-'.
bool parses_as_banner(const std::string& l) {
  if (l.compare(0, 4, "SSH-") != 0) return false;
  const size_t dash = l.find('-', 4);
  return dash != std::string::npos && dash > 4;
}
}  // namespace

uint8_t ssh_event_bit(const std::string& name) {
  return name == "invalid_banner" ? kSshEvInvalidBanner : name == "long_banner" ? kSshEvLongBanner : 0;
}

std::vector<const char*> ssh_event_names(uint8_t events) {
  std::vector<const char*> out;
  if (events & kSshEvInvalidBanner) out.push_back("invalid_banner");
  if (events & kSshEvLongBanner) out.push_back("long_banner");
  return out;
}

void SshConn::line(int dir, const std::string& l) {
  if (std::exchange(first_[dir], false) && !parses_as_banner(l) && !(tx_.events & kSshEvInvalidBanner)) {
    tx_.events |= kSshEvInvalidBanner;
    changed_ = true;
  }
  if (l.compare(0, 4, "SSH-") != 0) return;  // another line before the banner (a server's)
  const size_t dash = l.find('-', 4);
  tx_.proto[dir] = l.substr(4, dash == std::string::npos ? std::string::npos : dash - 4);
  if (dash != std::string::npos) {
    const size_t end = l.find_first_of(" \r\n", dash + 1);
    tx_.software[dir] = l.substr(dash + 1, end == std::string::npos ? std::string::npos : end - dash - 1);
  }
  tx_.banner[dir] = true;
  state_[dir] = 1;
  changed_ = true;
}

void SshConn::feed(int dir, const uint8_t* p, size_t n, bool gap) {
  if (done(dir)) return;
  if (gap) {
    if (!state_[dir] && bad_) ++*bad_;  // (a gap after the banner only loses the HASSH)
    state_[dir] = -1;
    return;
  }
  std::string& b = buf_[dir];
  size_t i = 0;
  for (; i < n && !state_[dir]; ++i) {
    const char c = char(p[i]);
    if (c == '\n') {
      if (!b.empty() && b.back() == '\r') b.pop_back();
      line(dir, b);
      b.clear();
      continue;
    }
    b.push_back(c);
    if (b.size() - (b.back() == '\r' ? 1 : 0) > kSshMaxBanner) {  // (the CR of a CRLF is not the line's)
      // 256 bytes without a line end: a banner that parses is read as it stands, long; anything
      // else ends the direction (Suricata's parser errors).
      if (parses_as_banner(b)) {
        tx_.events |= kSshEvLongBanner;
        line(dir, b);
      } else {
        tx_.events |= kSshEvInvalidBanner;
        changed_ = true;
        state_[dir] = -1;
        if (bad_) ++*bad_;
      }
      b.clear();
    }
  }
  if (state_[dir] == 1 || state_[dir] == 2) {
    if (i == n) return;
    binary(dir, p + i, n - i);
  }
}

void SshConn::binary(int dir, const uint8_t* p, size_t n) {
  std::string& b = buf_[dir];
  b.append(reinterpret_cast<const char*>(p), n);
  size_t at = 0;
  while ((state_[dir] == 1 || state_[dir] == 2) && b.size() - at >= 5) {
    const auto* q = reinterpret_cast<const uint8_t*>(b.data() + at);
    const uint32_t len = uint32_t(q[0]) << 24 | uint32_t(q[1]) << 16 | uint32_t(q[2]) << 8 | q[3];
    const uint8_t pad = q[4];
    if (len < 2 || len > kSshMaxPacket || pad >= len) {
      state_[dir] = -1;
      break;
    }
    if (b.size() - at < 4 + size_t(len)) break;  // the rest of the packet is still to come
    const uint8_t* payload = q + 5;
    const size_t plen = len - 1 - pad;
    if (plen && payload[0] == 20 && state_[dir] == 1) {
      kexinit(dir, payload, plen);  // a malformed one gives no HASSH; the packets go on
      state_[dir] = 2;
    } else if (plen && payload[0] == 21) {
      // NEWKEYS: encrypted from here; the direction is finished (with or without a KEXINIT read).
      state_[dir] = 3;
      tx_.newkeys[dir] = true;
      changed_ = true;
    }
    at += 4 + size_t(len);
  }
  b.erase(0, at);
  if (state_[dir] != 1 && state_[dir] != 2) b.clear();
}

// SSH_MSG_KEXINIT: the type, a 16-byte cookie, then name-lists (a 32-bit length and the names):
// kex, host key, encryption c2s and s2c, MAC c2s and s2c, compression c2s and s2c, ...
bool SshConn::kexinit(int dir, const uint8_t* p, size_t n) {
  std::string lists[8];
  size_t off = 17;
  for (std::string& l : lists) {
    if (off + 4 > n) return false;
    const uint32_t len = uint32_t(p[off]) << 24 | uint32_t(p[off + 1]) << 16 | uint32_t(p[off + 2]) << 8 | p[off + 3];
    off += 4;
    if (len > n - off) return false;
    l.assign(reinterpret_cast<const char*>(p + off), len);
    off += len;
  }
  const int s = dir == 0 ? 0 : 1;  // the client's c2s lists, the server's s2c
  std::string h = lists[0];
  for (int k : {2, 4, 6}) h += ";" + lists[k + s];
  tx_.hassh_string[dir] = h;
  tx_.hassh[dir] = md5_hex(h);
  tx_.kex[dir] = true;
  changed_ = true;
  return true;
}

}  // namespace gaspp
