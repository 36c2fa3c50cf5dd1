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

}  // namespace gaspp
