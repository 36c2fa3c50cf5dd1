// capture/multi_source.cpp — see capture/multi_source.hpp.
#include "capture/multi_source.hpp"

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <thread>

namespace gaspp {

MultiSource::MultiSource(std::vector<std::unique_ptr<Source>> inputs) : in_(std::move(inputs)), ended_(in_.size()) {
  if (in_.empty() || in_.size() > 0xffff) throw std::invalid_argument("MultiSource: 1 to 65535 inputs");
}

SourceStatus MultiSource::next(SourceRecord& r, uint64_t wait_ns) {
  using clock = std::chrono::steady_clock;
  clock::time_point deadline{};  // set when first needed: a record at hand costs no look at the clock
  bool waited = false;
  const size_t n = in_.size();
  for (;;) {
    // The current input first while its run lasts, then the others in turn, none waiting.
    bool live = false;
    for (size_t k = 0; k < n; ++k) {
      const size_t i = (cur_ + k) % n;
      if (ended_[i]) continue;
      live = true;
      if (k == 0 && run_ >= kRun && n > 1) continue;  // its run is over: the others first
      const SourceStatus st = in_[i]->next(r, 0);
      if (st == SourceStatus::end) {
        ended_[i] = true;
        continue;
      }
      if (st != SourceStatus::record) continue;
      if (i != cur_) {
        cur_ = i;
        run_ = 0;
      }
      ++run_;
      out_.emplace_back(seq_, uint16_t(i), r.seq);
      r.seq = seq_++;
      r.interface = uint16_t(i);
      return SourceStatus::record;
    }
    if (!live) return SourceStatus::end;
    run_ = 0;  // nothing elsewhere: the current input may go on
    const auto now = clock::now();
    if (!waited) {
      waited = true;
      deadline = now + std::chrono::nanoseconds(wait_ns);
    }
    if (now >= deadline) return SourceStatus::idle;
    std::vector<pollfd> fds;
    for (size_t i = 0; i < n; ++i)
      if (!ended_[i] && in_[i]->wait_fd() >= 0) fds.push_back(pollfd{in_[i]->wait_fd(), POLLIN | POLLERR, 0});
    // Readable can also mean a ring block still held (af_packet_source.hpp): wait at most 1 ms at
    // a time, then look at every input again.
    if (fds.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    else (void)poll(fds.data(), fds.size(), 1);
  }
}

void MultiSource::release(uint64_t seq) {
  std::vector<uint64_t> upto(in_.size(), ~0ull);
  while (!out_.empty() && std::get<0>(out_.front()) <= seq) {
    upto[std::get<1>(out_.front())] = std::get<2>(out_.front());
    out_.pop_front();
  }
  for (size_t i = 0; i < in_.size(); ++i)
    if (upto[i] != ~0ull) in_[i]->release(upto[i]);
}

void MultiSource::finish() {
  for (auto& s : in_) s->finish();
}

SourceReport MultiSource::report() const {
  SourceReport rep;
  for (size_t i = 0; i < in_.size(); ++i) {
    SourceReport one = in_[i]->report();
    if (i == 0) {
      rep = one;
      rep.issues.clear();
    } else {
      rep.name += "," + one.name;
      rep.kernel_packets += one.kernel_packets;
      rep.kernel_drops += one.kernel_drops;
      rep.vlan_restored += one.vlan_restored;
      rep.unprocessed_at_stop += one.unprocessed_at_stop;
      rep.warnings += one.warnings;
      rep.suppressed_issues += one.suppressed_issues;
      rep.damaged = rep.damaged || one.damaged;
    }
    for (auto& is : one.issues) rep.issues.push_back(std::move(is));
  }
  return rep;
}

}  // namespace gaspp
