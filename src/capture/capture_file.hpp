// capture/capture_file.hpp — a capture file opened for batching.
//
// CaptureFile::open() memory-maps a classic pcap file (microsecond or nanosecond timestamps,
// either byte order) and hands out its bytes as they are: a batch is a range of the file. Any
// other format that libpcap reads (pcapng, modified pcap) is converted once, streaming, into an
// unlinked temporary file in $TMPDIR (else /tmp) with the same layout (little-endian, nanosecond
// record headers), which is then mapped the same way: everything after this point sees one format,
// and memory stays bounded whatever the capture's size (the conversion needs as much free disk).
// The path "-" is standard input (tcpdump's -r -), read by libpcap and converted the same way.
// A temporary file that cannot be created or written (full disk) is a CaptureError naming it.
//
// RecordWalker steps through the record headers (a serial chain: each header gives the next
// offset) and validates each one before anything reads the frame:
//   * a header or frame cut short by the end of the file  → error, reading stops there
//   * a captured length over kMaxRecordBytes (256 KiB)    → error, reading stops (framing lost)
//   * a captured length over the file's snap length       → warning, the record is processed
//   * a captured length over the original length          → warning, the record is processed
//   * a zero-length record                                → processed, decoded as malformed
// The chain is serial, so on large files the walker can index ahead with several threads
// (enable_parallel): a window of the file is cut into one chunk per thread; each chunk after the
// first finds a plausible record start (a run of well-formed headers), walks its chain, and the
// window is accepted only if every chunk's chain lands exactly on the next chunk's start and no
// record needed a message. Chunk 0 starts on the true chain, so by induction every accepted offset
// is on it. Otherwise that window is walked serially as above, which gives the messages. While
// the records of an accepted window are handed out, the next window is indexed on a thread of the
// walker's own (with the pool), so the reading thread does not wait for it: it only waits when it
// gets there first. The offsets of two windows are buffered (at most window bytes / 16 entries
// each); a window indexed ahead is used only if the file's size is still the one it was indexed
// against (otherwise it is indexed again).
//
// Every message names the file, the record number (1-based, as tshark numbers frames) and the
// byte offset of the record header. Packets before the damage are processed and counted.
//
// Example:
//   CaptureFile cap = CaptureFile::open("trace.pcap");   // throws CaptureError if unreadable
//   RecordWalker w(cap);
//   RecordInfo r;
//   while (w.next(r)) handle(cap.data() + r.offset, r.cap_len);
//   for (auto& issue : w.issues()) std::cerr << issue.message << "\n";
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "capture/source.hpp"
#include "decode/decoder.hpp"

struct pcap;  // libpcap's handle (pcap_t)

namespace gaspp {

constexpr uint32_t kMaxRecordBytes = 256 * 1024;
constexpr uint64_t kPcapGlobalHeaderBytes = 24;

struct CaptureError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class CaptureFile {
 public:
  static CaptureFile open(const std::string& path);
  // A capture held in memory (already in this layout); used by the generator and tests.
  static CaptureFile from_memory(std::vector<uint8_t> bytes, const std::string& name);
  CaptureFile(CaptureFile&&) noexcept;
  CaptureFile& operator=(CaptureFile&&) noexcept;
  CaptureFile(const CaptureFile&) = delete;
  ~CaptureFile();

  const std::string& path() const { return path_; }
  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  uint64_t first_record() const { return first_record_; }
  RecordFormat format() const { return fmt_; }
  LinkType link() const { return link_; }
  uint32_t raw_link_type() const { return raw_link_; }
  uint32_t snaplen() const { return snaplen_; }
  const char* container() const { return container_; }  // "pcap", "pcapng", ...
  bool mapped() const { return mapped_; }
  // The file's size now (fstat); size() for a capture held in memory.
  uint64_t current_size() const;
  // True once a read of the mapping faulted past the end of the file (see the header).
  bool faulted() const;
  // For a format converted through libpcap: the error that stopped it early, else empty.
  const std::string& tail_error() const { return tail_error_; }
  // False for a format converted through libpcap: offsets into data() are not offsets in the file,
  // so messages name the record only.
  bool file_offsets() const { return file_offsets_; }

 private:
  CaptureFile() = default;
  void parse_global_header();
  // A capture libpcap reads (pcapng, a modified pcap, standard input) written in this layout to an
  // unlinked temporary file and mapped; closes p.
  static CaptureFile convert(CaptureFile f, ::pcap* p);
  // Maps `size` bytes of fd (read-only, shared) as the capture's bytes, under the SIGBUS guard; on
  // failure closes fd and throws CaptureError("<what>: <reason>").
  void map_fd(int fd, uint64_t size, const std::string& what);
  std::string path_;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  uint64_t first_record_ = kPcapGlobalHeaderBytes;
  RecordFormat fmt_{0, 0};
  LinkType link_ = LinkType::ethernet;
  uint32_t raw_link_ = 1;
  uint32_t snaplen_ = 0;
  const char* container_ = "pcap";
  bool mapped_ = false;
  int fd_ = -1;        // kept open while mapped, for current_size()
  int guard_ = -1;     // slot in the SIGBUS guard's table, -1 if none
  std::string tail_error_;
  bool file_offsets_ = true;
  std::vector<uint8_t> owned_;
  void release();
};

// Maps a pcap LINKTYPE_* number to the decoder's LinkType; false if the decoder has no support.
bool link_type_from_pcap(uint32_t linktype, LinkType& out);

struct RecordInfo {
  uint64_t offset;   // of the 16-byte record header, from the start of the file
  uint64_t ts_ns;
  uint32_t cap_len;
  uint32_t wire_len;
};

// A record the walker refused or warned about (offset: of its record header).
using CaptureIssue = SourceIssue;

class ThreadPool;

class RecordWalker {
 public:
  explicit RecordWalker(const CaptureFile& f) : f_(&f), pos_(f.first_record()), size_(f.size()) {}
  ~RecordWalker();
  // Not copied or moved: the thread indexing ahead works for this object.
  RecordWalker(const RecordWalker&) = delete;
  RecordWalker& operator=(const RecordWalker&) = delete;
  // Index ahead with the pool's threads, `chunk_bytes` of file per thread and window. The pool
  // must outlive the walker. Files shorter than two chunks are walked serially.
  void enable_parallel(ThreadPool* pool, uint64_t chunk_bytes = 32ull << 20) {
    pool_ = pool;
    chunk_bytes_ = chunk_bytes;
  }
  uint64_t windows_parallel() const { return windows_parallel_; }
  uint64_t windows_serial() const { return windows_serial_; }
  uint64_t windows_ahead() const { return windows_ahead_; }  // parallel windows indexed while the one before was read
  // Validates and returns the next record; false at the end of the file or after a fatal issue.
  bool next(RecordInfo& r);
  uint64_t position() const { return pos_; }
  uint64_t records() const { return records_; }
  bool stopped() const { return stopped_; }
  const std::vector<CaptureIssue>& issues() const { return issues_; }
  // Issues of one kind beyond this many are counted but not stored, so a hostile file cannot
  // grow memory; the count is in suppressed_issues().
  static constexpr size_t kMaxStoredIssues = 100;
  uint64_t suppressed_issues() const { return suppressed_; }
  uint64_t warnings() const { return warnings_; }
  // Re-reads the file's size now (the walker also does so on its own every kSizeCheckRecords);
  // reports a shrink or a fault as a fatal issue and stops. The pipeline calls it at the end of a
  // run, so a fault in a frame the walker had already passed is not missed.
  void check_file();
  static constexpr uint64_t kSizeCheckRecords = 4096;
  static constexpr size_t kReadyAhead = 8;  // records of an indexed window prefetched ahead of next()

 private:
  // A window the pool indexed: accepted (offsets on the true chain, which ends at `end`), or not
  // (then `end` is the window's end, up to which the walk goes serially).
  struct Window {
    uint64_t base = 0, end = 0;
    uint64_t size = 0;  // the file's readable size it was indexed against
    bool ok = false;
    std::vector<uint64_t> offsets;
  };
  static Window index_window(const CaptureFile& f, ThreadPool& pool, uint64_t chunk_bytes, uint64_t size,
                             uint64_t base);
  void report(bool fatal, uint64_t offset, std::string msg);
  bool fill_parallel();
  std::string shrink_text() const;  // "the file shrank while it was read (N bytes now, M when opened)"
  std::string shrink_note() const;  // "; " + shrink_text() when the file shrank, else empty
  const CaptureFile* f_;
  ThreadPool* pool_ = nullptr;
  uint64_t chunk_bytes_ = 0;
  std::vector<uint64_t> ready_;  // record offsets of an accepted window, not yet returned
  size_t ready_pos_ = 0;
  uint64_t serial_until_ = 0;    // a rejected window: walk serially up to here
  std::thread ahead_;            // indexing the window after the one being read, into ahead_win_
  Window ahead_win_;
  uint64_t windows_parallel_ = 0, windows_serial_ = 0, windows_ahead_ = 0;
  uint64_t pos_;
  uint64_t size_;                // readable bytes: the size at open, or less if the file shrank
  uint64_t records_ = 0;
  bool stopped_ = false;
  uint64_t suppressed_ = 0;
  uint64_t warnings_ = 0;
  std::vector<CaptureIssue> issues_;
};

}  // namespace gaspp
