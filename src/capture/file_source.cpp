#include "capture/file_source.hpp"

#include <algorithm>
#include <thread>

namespace gaspp {

FileSource::FileSource(const CaptureFile& cap, const FileSourceOptions& opt) : cap_(&cap), walker_(cap) {
  const int threads =
      opt.index_threads > 0 ? opt.index_threads : int(std::max(1u, std::thread::hardware_concurrency()));
  if (threads > 1 && cap.size() >= 2 * opt.index_chunk_bytes) {
    index_pool_ = std::make_unique<ThreadPool>(threads);
    walker_.enable_parallel(index_pool_.get(), opt.index_chunk_bytes);
  }
}

SourceStatus FileSource::next(SourceRecord& r, uint64_t) {
  RecordInfo info;
  if (!walker_.next(info)) return SourceStatus::end;
  r.rec = cap_->data() + info.offset;
  r.seq = seq_++;
  r.ts_ns = info.ts_ns;
  r.cap_len = info.cap_len;
  r.wire_len = info.wire_len;
  r.fmt = cap_->format();
  r.link = cap_->link();
  r.interface = 0;
  return SourceStatus::record;
}

std::vector<MemoryRegion> FileSource::regions() const {
  if (!cap_->data() || cap_->size() == 0) return {};
  return {MemoryRegion{cap_->data(), cap_->size()}};
}

SourceReport FileSource::report() const {
  SourceReport rep;
  rep.name = cap_->path();
  rep.container = cap_->container();
  rep.raw_link = cap_->raw_link_type();
  LinkType lt;
  rep.link = link_type_from_pcap(cap_->raw_link_type(), lt) ? link_name(lt) : "unsupported";
  rep.input_bytes = cap_->size();
  for (const CaptureIssue& i : walker_.issues()) rep.issues.push_back(SourceIssue{i.fatal, i.record, i.offset, i.message});
  rep.warnings = walker_.warnings();
  rep.suppressed_issues = walker_.suppressed_issues();
  rep.damaged = walker_.stopped();
  rep.index_windows_parallel = walker_.windows_parallel();
  rep.index_windows_serial = walker_.windows_serial();
  return rep;
}

FileSequenceSource::FileSequenceSource(std::vector<const CaptureFile*> caps, const FileSourceOptions& opt)
    : caps_(std::move(caps)), opt_(opt) {}

SourceStatus FileSequenceSource::next(SourceRecord& r, uint64_t wait_ns) {
  for (;;) {
    if (!cur_) {
      if (next_file_ == caps_.size()) return SourceStatus::end;
      cur_ = std::make_unique<FileSource>(*caps_[next_file_++], opt_);
    }
    if (cur_->next(r, wait_ns) == SourceStatus::record) {
      r.seq = seq_++;
      return SourceStatus::record;
    }
    // This file is done (its end, or damage it reports): its end-of-run checks now, then the next.
    cur_->finish();
    done_bytes_ += cur_->total();
    done_.push_back(std::move(cur_));
  }
}

std::vector<MemoryRegion> FileSequenceSource::regions() const {
  if (caps_.empty() || !caps_[0]->data() || caps_[0]->size() == 0) return {};
  return {MemoryRegion{caps_[0]->data(), caps_[0]->size()}};
}

uint64_t FileSequenceSource::position() const { return done_bytes_ + (cur_ ? cur_->position() : 0); }

uint64_t FileSequenceSource::total() const {
  uint64_t t = 0;
  for (const CaptureFile* c : caps_) t += c->size();
  return t;
}

void FileSequenceSource::finish() {
  if (cur_) {
    cur_->finish();
    done_.push_back(std::move(cur_));
  }
}

SourceReport FileSequenceSource::report() const {
  SourceReport rep;
  for (size_t k = 0; k < done_.size(); ++k) {
    SourceReport one = done_[k]->report();
    if (k == 0) {
      rep = one;
      rep.issues.clear();
      rep.warnings = rep.suppressed_issues = 0;
      rep.damaged = false;
      rep.index_windows_parallel = rep.index_windows_serial = 0;
      rep.input_bytes = 0;
    } else if (one.link != rep.link) {
      rep.link = "mixed";
    }
    if (k > 0 && one.container != rep.container) rep.container = "mixed";
    rep.issues.insert(rep.issues.end(), one.issues.begin(), one.issues.end());
    rep.warnings += one.warnings;
    rep.suppressed_issues += one.suppressed_issues;
    rep.damaged = rep.damaged || one.damaged;
    rep.index_windows_parallel += one.index_windows_parallel;
    rep.index_windows_serial += one.index_windows_serial;
    rep.input_bytes += one.input_bytes;
  }
  if (caps_.size() > 1)
    rep.name = caps_.front()->path() + " ... " + caps_.back()->path() + " (" + std::to_string(caps_.size()) + " files)";
  return rep;
}

}  // namespace gaspp
