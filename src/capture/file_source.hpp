// capture/file_source.hpp — a capture file as a Source (capture/source.hpp).
//
// Serves the records of an open CaptureFile in file order, validated by its RecordWalker (which
// indexes ahead on several threads on large files: FileSourceOptions). The records are the file's
// bytes where they lie in the mapping, so they are always back to back and the mapping is the one
// region worth registering; release() has nothing to do, as the mapping outlives the run. The
// walker's issues (a cut record, an impossible length: capture_file.hpp) become the report's.
//
// Example:
//   CaptureFile cap = CaptureFile::open("trace.pcap");
//   FileSource src(cap);
//   RunReport rep = run_source(src, backend, opt);   // pipeline/pipeline.hpp
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "capture/capture_file.hpp"
#include "capture/source.hpp"
#include "core/thread_pool.hpp"

namespace gaspp {

struct FileSourceOptions {
  // Record indexing ahead of the batcher (RecordWalker::enable_parallel): threads (0 = all hardware
  // threads, 1 = serial) and file bytes per thread and window.
  int index_threads = 0;
  uint64_t index_chunk_bytes = 32ull << 20;
};

class FileSource final : public Source {
 public:
  // The capture must outlive the source.
  explicit FileSource(const CaptureFile& cap, const FileSourceOptions& opt = {});
  SourceStatus next(SourceRecord& r, uint64_t wait_ns) override;
  std::vector<MemoryRegion> regions() const override;
  uint64_t position() const override { return walker_.position(); }
  uint64_t total() const override { return cap_->size(); }
  void finish() override { walker_.check_file(); }
  SourceReport report() const override;

 private:
  const CaptureFile* cap_;
  std::unique_ptr<ThreadPool> index_pool_;
  RecordWalker walker_;
  uint64_t seq_ = 0;
};

// Several capture files as one Source, read one after the other in the order given (gaspp -r
// DIR): the pipeline keeps its flow state across them, as for one file. A file whose reading
// stops at damage ends there and the next one is read (the report is damaged and lists where);
// records of different files are never back to back, so the batcher copies the batch where a file
// ends, and only the first file's mapping is a region to register. Sequence numbers run on across
// files.
class FileSequenceSource final : public Source {
 public:
  // The captures must outlive the source.
  explicit FileSequenceSource(std::vector<const CaptureFile*> caps, const FileSourceOptions& opt = {});
  SourceStatus next(SourceRecord& r, uint64_t wait_ns) override;
  std::vector<MemoryRegion> regions() const override;
  uint64_t position() const override;
  uint64_t total() const override;
  void finish() override;
  SourceReport report() const override;

 private:
  std::vector<const CaptureFile*> caps_;
  FileSourceOptions opt_;
  std::vector<std::unique_ptr<FileSource>> done_;  // files read to their end, for the report
  std::unique_ptr<FileSource> cur_;
  size_t next_file_ = 0;
  uint64_t seq_ = 0, done_bytes_ = 0;
};

}  // namespace gaspp
