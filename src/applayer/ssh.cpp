// applayer/ssh.cpp — see ssh.hpp.
#include "applayer/ssh.hpp"

namespace gaspp {

void SshConn::line(int dir, const std::string& l) {
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
    if (b.size() > kSshMaxBanner) {
      state_[dir] = -1;
      if (bad_) ++*bad_;
    }
  }
}

}  // namespace gaspp
