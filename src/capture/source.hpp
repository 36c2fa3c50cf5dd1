// capture/source.hpp — where packets come from: the interface the batcher (pipeline/pipeline.hpp)
// reads, whatever is behind it.
//
// A source hands out records one at a time, each a 16-byte pcap record header followed by the
// captured frame, in the source's RecordFormat and LinkType, in memory the source owns:
//
//   Source& src = ...;                 // FileSource (capture/file_source.hpp) is the first one
//   backend.attach_regions(src.regions());     // zero-copy where the backend can (optional)
//   SourceRecord r;
//   while (src.next(r, timeout) != SourceStatus::end) { ... batch r.rec ... }
//   src.release(seq);                  // after the batch holding records up to seq has finished
//   src.finish();                      // end-of-run checks; then src.report()
//
// The contract:
//  * A record stays readable, at the same address, until release() passes its sequence number.
//    The batcher releases a batch's records once the backend has finished that batch (a ring
//    source hands its blocks back to the kernel there; a file source has nothing to do).
//  * Records that lie back to back in memory (the next one starts where the previous ended) may
//    be batched as one span of memory (PacketBatch::h_span), which the CUDA backend copies, or
//    reads through a registered mapping, in one piece. So may records that follow one another at
//    rising addresses inside one of regions() (a ring's records with the kernel's headers between
//    them, a file's records a filter thinned out): the span then has gaps, which nothing reads —
//    the CPU backend reads the records in place, the CUDA backend moves the span as it is or packs
//    its records first (backend/cuda/transfer.hpp decides by how much of it they fill). Records
//    that do neither are copied together by the batcher. Everything between two records of a span
//    must stay mapped until they are released: a region is one mapping.
//  * regions() are the memory ranges the records live in, for a backend to register for direct
//    device access (the first one) and for the batcher's spans; empty when there is nothing worth
//    registering.
//  * format() and link() may change between records (several files in a row): SourceRecord says
//    which apply, and the batcher closes a batch where they change, as a batch has one of each.
//  * next() returns `idle` when no record came within `wait_ns` (a live source: the batcher then
//    closes the batch it has, so traffic that stops does not sit in a half-full batch), and `end`
//    when no record will come (end of file, a fatal error, or stop()).
//  * Problems with the input (a cut record, a bad header) are the source's to report: it counts
//    and describes them in report() and keeps going where it can. Every record it hands out is
//    a packet the pipeline counts.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/packet_batch.hpp"  // MemoryRegion
#include "decode/decoder.hpp"

namespace gaspp {

struct SourceRecord {
  const uint8_t* rec = nullptr;  // record header + frame, readable until release() passes seq
  uint64_t seq = 0;              // 0-based, in the order next() handed records out
  uint64_t ts_ns = 0;            // capture time
  uint32_t cap_len = 0;          // captured frame bytes after the 16-byte header
  uint32_t wire_len = 0;
  RecordFormat fmt{};
  LinkType link = LinkType::ethernet;
  uint16_t interface = 0;        // which input of the source (live: the interface; files: 0)
  // Whether the frame may be an IP fragment (defrag/defrag.hpp's may_be_fragment), where a source
  // worked it out on a thread of its own (ThreadedSource: the frame is in that thread's cache);
  // -1: not known, the batcher looks.
  int8_t fragment = -1;
  uint64_t bytes() const { return kRecordHeaderBytes + cap_len; }
};

enum class SourceStatus : uint8_t { record, idle, end };

// A record the source refused (damaged input), as the report lists it.
struct SourceIssue {
  bool fatal = false;    // the source stopped here
  uint64_t record = 0;   // 1-based record number in its input
  uint64_t offset = 0;   // byte offset in the input, where it has one
  std::string message;   // names the input, the record and what is wrong
};

// What a source says about its run (RunReport copies it).
struct SourceReport {
  std::string name;                 // file path or interface
  std::string container;            // "pcap", "pcapng", "live", ...
  std::string link;                 // the decoder's name for the link type, or "unsupported"
  uint32_t raw_link = 0;            // pcap LINKTYPE_* number
  uint64_t input_bytes = 0;         // file size (0 for live sources)
  std::vector<SourceIssue> issues;  // at most a bounded number per kind (suppressed counts the rest)
  uint64_t warnings = 0, suppressed_issues = 0;
  bool damaged = false;             // reading stopped at a fatal issue
  uint64_t index_windows_parallel = 0, index_windows_serial = 0;  // file sources' parallel indexing
  std::string filter;               // the BPF expression records passed (capture/filtered_source.hpp), or ""
  uint64_t filtered = 0;            // records it refused: read, counted here, never batched
  // Live capture (capture/af_packet_source.hpp): the kernel's counts of frames for the socket and
  // of those it dropped for want of room in the ring, and tags put back after VLAN offload.
  bool live = false;
  uint64_t kernel_packets = 0, kernel_drops = 0, vlan_restored = 0;
  // Records a reader thread took from a ring that the pipeline had not taken when the run stopped
  // (capture/threaded_source.hpp): read, not processed.
  uint64_t unprocessed_at_stop = 0;
};

class Source {
 public:
  virtual ~Source() = default;
  // The next record into r; see the contract above.
  virtual SourceStatus next(SourceRecord& r, uint64_t wait_ns) = 0;
  // Records up to and including seq are no longer read by anyone.
  virtual void release(uint64_t seq) { (void)seq; }
  virtual std::vector<MemoryRegion> regions() const { return {}; }
  // Progress for the progress line: how much of the input has been read, of how much (0: unknown).
  virtual uint64_t position() const { return 0; }
  virtual uint64_t total() const { return 0; }
  // After the last next(): checks that need the run to be over (a file that shrank under it).
  virtual void finish() {}
  virtual SourceReport report() const = 0;
  // A descriptor poll() reports readable when records may have come (live sources), or -1.
  virtual int wait_fd() const { return -1; }
  // Brings the counts report() gives up to date mid-run (a live source's kernel counters).
  virtual void refresh_counts() {}
};

}  // namespace gaspp
