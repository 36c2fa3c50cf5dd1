// applayer/ssh.cpp — see ssh.hpp.
#include "applayer/ssh.hpp"

#include <utility>

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
  if (state_[dir]) return;
  if (gap) {
    state_[dir] = -1;
    if (bad_) ++*bad_;
    return;
  }
  std::string& b = buf_[dir];
  for (size_t i = 0; i < n && !state_[dir]; ++i) {
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
}

}  // namespace gaspp
