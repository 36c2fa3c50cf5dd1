// capture/filtered_source.cpp — see capture/filtered_source.hpp.
#include "capture/filtered_source.hpp"

#include <pcap/pcap.h>

#include <stdexcept>

namespace gaspp {
namespace {

// libpcap's DLT_ value for a link type (LinkType holds the LINKTYPE_ number, which differs for raw
// IP and, being a byte, stands in for SLL2).
int dlt_of(LinkType link) {
  switch (link) {
    case LinkType::raw: return DLT_RAW;
    case LinkType::linux_sll2: return 276;  // DLT_LINUX_SLL2
    default: return int(link);
  }
}

}  // namespace

std::string compile_filter(const std::string& expr, LinkType link, bpf_program& prog) {
  pcap_t* p = pcap_open_dead(dlt_of(link), 262144);
  if (!p) return "libpcap cannot open a handle for link type " + std::to_string(int(link));
  std::string why;
  if (pcap_compile(p, &prog, expr.c_str(), 1, PCAP_NETMASK_UNKNOWN) != 0) why = pcap_geterr(p);
  pcap_close(p);
  return why;
}

struct FilteredSource::Program {
  bpf_program prog{};
  ~Program() { pcap_freecode(&prog); }
};

std::string check_filter(const std::string& expr, LinkType link) {
  bpf_program prog{};
  const std::string why = compile_filter(expr, link, prog);
  if (why.empty()) pcap_freecode(&prog);
  return why;
}

FilteredSource::FilteredSource(Source& inner, std::string expr) : inner_(inner), expr_(std::move(expr)) {}
FilteredSource::~FilteredSource() = default;

const FilteredSource::Program& FilteredSource::program_for(LinkType link) {
  auto& slot = programs_[uint8_t(link)];
  if (!slot) {
    auto p = std::make_unique<Program>();
    const std::string why = compile_filter(expr_, link, p->prog);
    if (!why.empty()) throw std::invalid_argument("filter '" + expr_ + "': " + why);
    slot = std::move(p);
  }
  return *slot;
}

SourceStatus FilteredSource::next(SourceRecord& r, uint64_t wait_ns) {
  for (;;) {
    const SourceStatus st = inner_.next(r, wait_ns);
    if (st != SourceStatus::record) return st;
    pcap_pkthdr h{};
    h.ts.tv_sec = time_t(r.ts_ns / 1000000000ull);
    h.ts.tv_usec = suseconds_t(r.ts_ns % 1000000000ull / 1000);
    h.caplen = r.cap_len;
    h.len = r.wire_len;
    if (pcap_offline_filter(&program_for(r.link).prog, &h, r.rec + kRecordHeaderBytes)) return st;
    // Refused. It is released with the records around it (release() passes a sequence number,
    // so it cannot be released ahead of records still in a batch).
    ++filtered_;
  }
}

SourceReport FilteredSource::report() const {
  SourceReport s = inner_.report();
  s.filtered = filtered_;
  s.filter = expr_;
  return s;
}

}  // namespace gaspp
