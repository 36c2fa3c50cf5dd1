// capture/filtered_source.hpp — a BPF filter in front of another Source (capture/source.hpp), as
// tcpdump's and Suricata's trailing filter expression: only the records the expression accepts
// reach the batcher.
//
// The expression is compiled with libpcap (pcap_compile, optimized, as tcpdump does) for each link
// type the source hands out, when the first record of that type comes, and run on each record
// with pcap_offline_filter. Records it refuses are counted (report().filtered, the summary's
// capture.filtered) and never batched, so the packets the run counts, numbers (pcap_cnt) and
// writes (-w) are the accepted ones — tcpdump -r FILE -w - EXPR keeps the same packets. An
// expression that does not compile for a link type is an error (std::invalid_argument naming the
// expression and libpcap's reason); check_filter() tells before a run starts.
//
// Example:
//   FileSource file(cap);
//   FilteredSource src(file, "tcp port 80");
//   RunReport rep = run_source(src, backend, opt);
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "capture/source.hpp"

struct bpf_program;

namespace gaspp {

// "" when expr compiles for link, else libpcap's reason.
std::string check_filter(const std::string& expr, LinkType link);
// Compiles expr for link into prog (libpcap, optimized; free it with pcap_freecode): "" or the reason.
std::string compile_filter(const std::string& expr, LinkType link, bpf_program& prog);

class FilteredSource final : public Source {
 public:
  // The inner source must outlive this one.
  FilteredSource(Source& inner, std::string expr);
  ~FilteredSource() override;
  SourceStatus next(SourceRecord& r, uint64_t wait_ns) override;
  void release(uint64_t seq) override { inner_.release(seq); }
  std::vector<MemoryRegion> regions() const override { return inner_.regions(); }
  uint64_t position() const override { return inner_.position(); }
  uint64_t total() const override { return inner_.total(); }
  void finish() override { inner_.finish(); }
  SourceReport report() const override;

 private:
  struct Program;
  const Program& program_for(LinkType link);
  Source& inner_;
  std::string expr_;
  std::map<uint8_t, std::unique_ptr<Program>> programs_;  // by link type
  uint64_t filtered_ = 0;
};

}  // namespace gaspp
