// modules/detect/pcre_capture.hpp — pcre captures into packet, flow and alert variables, as
// Suricata's detect-pcre.c keeps them.
//
// A pcre names what its groups capture after the expression (`"/uid=(\d+)/, pkt:uid, flow:gid"`:
// group 1 into the packet variable uid, group 2 into the flow variable gid; `alert:NAME` into the
// alert's context; `pkt:key, pkt:value`: group 1 names a packet variable, group 2 is its value) or
// with named groups (`(?P<pkt_uid>...)`, `(?P<flow_gid>...)`, `(?P<alert_ua>...)`), those after
// the list: the i-th name takes group i + 1, as Suricata numbers them. Named groups of other
// prefixes are the expression's own (back-references) and capture nothing.
//
// While a signature with captures is inspected on the host (its transaction's buffers, or a
// packet's payload inspected again on the host), the recorder keeps each pcre's groups from its
// last successful match (the one on the path that matched: a later attempt of an earlier option
// re-runs the options after it); after the match, the signature engine takes them: flow variables
// are kept per flow (EVE metadata.flowvars), packet variables go with the packet's alerts
// (metadata.pktvars), alert variables into the alert's context. Values are at most 65,535 bytes
// (Suricata's), a key 255; EVE writes their printable bytes, others as '.'.
//
// Example:
//   std::vector<PcreCaptureSpec> specs;
//   parse_pcre_captures("pkt:uid, flow:gid", "uid=(\\d+) gid=(\\d+)", specs);  // "" when valid
//   PcreCaptureRecorder& r = pcre_capture_recorder();  r.begin();
//   ... inspection (pcre_capture_record on each pcre match) ...
//   std::vector<CapturedVar> vars = r.take();
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gaspp {

struct PcreCaptureSpec {
  enum Type : uint8_t { pkt, flow, alert, pkt_kv };
  Type type = pkt;
  std::string name;  // empty for pkt_kv (the first group names it)
};

struct CapturedVar {
  PcreCaptureSpec::Type type;  // pkt (pkt_kv resolved into one), flow or alert
  std::string name, value;
};

constexpr size_t kPcreMaxCaptures = 16;  // Suricata's DETECT_PCRE_CAPTURE_MAX

// The captures of a pcre: `list` is what followed the expression (comma or space separated
// names), `regex` the expression (its named groups). "" and specs filled, or "error:<why>".
std::string parse_pcre_captures(const std::string& list, const std::string& regex, std::vector<PcreCaptureSpec>& out);

class PcreCaptureRecorder {
 public:
  void begin() {
    active_ = true;
    by_pcre_.clear();
  }
  bool active() const { return active_; }
  // A pcre (its id in the host's list) matched: its groups (ovector pairs for groups 0..n-1 of
  // `subject`; PCRE2_UNSET ends unset ones) as its specs name them, replacing its earlier ones.
  void record(uint32_t pcre_id, const std::vector<PcreCaptureSpec>& specs, const size_t* ovector, uint32_t pairs,
              const uint8_t* subject);
  // The variables recorded since begin(), in the order of their pcres; stops recording.
  std::vector<CapturedVar> take();

 private:
  bool active_ = false;
  std::vector<std::pair<uint32_t, std::vector<CapturedVar>>> by_pcre_;
};
PcreCaptureRecorder& pcre_capture_recorder();  // this thread's

// Bytes as EVE writes a variable's value (Suricata's SCJbSetPrintAsciiString): printable ASCII
// as it is, any other byte as '.'.
std::string printable_ascii(const std::string& s);

}  // namespace gaspp
