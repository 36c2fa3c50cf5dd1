// applayer/ftp_data.cpp — see ftp_data.hpp.
#include "applayer/ftp_data.hpp"

#include <algorithm>
#include <cstring>

namespace gaspp {

FtpDataConn::FtpDataConn(const FtpTransfer& x, FtpDataStats& st, uint8_t hashes) : st_(st), hashes_(hashes) {
  ++st_.flows;
  tx_.command = x.command;
  tx_.file_name = x.file_name;
  tx_.has_file = x.has_file;
  tx_.data_dir = x.data_dir;
  changed_ = true;  // the transaction exists from the connection's first data
}

void FtpDataConn::feed(int dir, const uint8_t* p, size_t n, bool gap) {
  if (dir != tx_.data_dir) {
    st_.bytes_other_way += n;
    return;
  }
  if (tx_.done || !tx_.has_file) return;  // listings carry no file (Suricata opens none)
  std::vector<MimeFile>& fs = tx_.files[dir];
  if (gap && !fs.empty()) gap_ = true;
  if (n == 0) return;
  if (fs.empty()) {
    // The file opens with the first byte (Suricata's FileOpenFileWithId at the first data).
    fs.emplace_back();
    fs[0].name = tx_.file_name;
    hash_.start(hashes_);
  }
  MimeFile& f = fs[0];
  if (gap_) return;  // a file with a hole: not appended to further
  f.size += n;
  const size_t keep = f.data.size() < kMimeFileKeep ? std::min(n, kMimeFileKeep - f.data.size()) : 0;
  f.data.append(reinterpret_cast<const char*>(p), keep);
  hash_.update(p, n);
  changed_ = true;
}

void FtpDataConn::end(int dir) {
  if (dir != tx_.data_dir || tx_.done) return;
  tx_.done = true;
  changed_ = true;
  std::vector<MimeFile>& fs = tx_.files[dir];
  if (fs.empty()) return;
  MimeFile& f = fs[0];
  if (gap_) {
    f.truncated = true;
    ++st_.files_truncated;
    return;
  }
  f.closed = true;
  hash_.finish(f.md5, f.sha1, f.sha256);
}

size_t FtpExpectations::PairHash::operator()(const Pair& p) const { return size_t(addr_pair_hash(p.a, p.b, p.family)); }

FtpExpectations::Pair FtpExpectations::pair_of(const uint32_t (&a)[4], const uint32_t (&b)[4], uint8_t family) {
  // Either order names the pair (Suricata's IP pairs): the lower address first.
  Pair p{};
  const bool swap = std::memcmp(a, b, sizeof a) > 0;
  std::memcpy(p.a, swap ? b : a, sizeof p.a);
  std::memcpy(p.b, swap ? a : b, sizeof p.b);
  p.family = family;
  return p;
}

void FtpExpectations::add(const uint32_t (&a)[4], const uint32_t (&b)[4], uint8_t family, const FtpTransfer& x) {
  const Pair p = pair_of(a, b, family);
  auto it = pairs_.find(p);
  if (it == pairs_.end()) {
    if (pairs_.size() >= kFtpMaxExpectationPairs) {
      ++st_.expectations_refused;
      return;
    }
    it = pairs_.emplace(p, std::deque<FtpTransfer>{}).first;
  }
  ++st_.expectations;
  it->second.push_back(x);
  if (it->second.size() > kFtpMaxExpectations) {
    it->second.pop_front();
    ++st_.expectations_pushed_out;
  }
}

bool FtpExpectations::take(const uint32_t (&a)[4], const uint32_t (&b)[4], uint8_t family, uint16_t port, int dir,
                           FtpTransfer& out) {
  if (pairs_.empty()) return false;
  const auto it = pairs_.find(pair_of(a, b, family));
  if (it == pairs_.end()) return false;
  // The newest first, as Suricata's list (new ones go to its head).
  auto& q = it->second;
  for (size_t k = q.size(); k-- > 0;) {
    if (q[k].port != port || q[k].data_dir != dir) continue;
    out = std::move(q[k]);
    q.erase(q.begin() + long(k));
    if (q.empty()) pairs_.erase(it);
    return true;
  }
  return false;
}

}  // namespace gaspp
