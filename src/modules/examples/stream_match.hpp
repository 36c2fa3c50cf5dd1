// modules/examples/stream_match.hpp — finds a byte string in reassembled TCP streams (on_stream):
// the example of a stream module, and the tests' check that pieces arrive in order across batches.
//
// Options:
//   pattern=TEXT   what to find (1..16 bytes; \xHH escapes allowed); required
//   action=A       on a match: alert (default: an event with the stream offset just past the match,
//                  and the flow marked alerted), drop_flow, or none
// Per-flow state: per direction, the last up-to-15 bytes seen (a match may straddle pieces) and the
// number of matches. A gap (a hole that never filled) or the end of a direction clears the carried
// bytes: no match spans missing data.
// Host side: counts events; with -l each match is an EVE `stream_match` event (flow, direction,
// offset).
//
// Example: gaspp -r web.pcap --module stream_match:pattern=passwd -l out/
#pragma once
#include <string>

#include "gaspp/module.hpp"
#include "gaspp/stream_hook.hpp"

namespace gaspp {

struct StreamMatchModule {
  static constexpr const char* kName = "stream_match";
  static constexpr uint32_t kLayers = kLayerStream;
  static constexpr bool kChangesContext = false;
  static constexpr uint32_t kMaxPattern = 16;
  enum Action : uint8_t { kAlert, kDropFlow, kNone };
  struct FlowState {
    uint8_t tail[2][kMaxPattern - 1];
    uint8_t tail_n[2];
    uint32_t matches[2];
  };
  struct View {
    uint8_t pattern[kMaxPattern];
    uint32_t len;
    uint8_t action;
  };

  GASPP_HD static uint32_t on_stream(StreamPiece& s, FlowState* st, const View& v, uint32_t ctx) {
    const int dir = s.to_client() ? 1 : 0;
    uint8_t local_tail[kMaxPattern - 1];
    uint8_t local_n = 0;
    uint8_t* tail = st ? st->tail[dir] : local_tail;
    uint8_t& tn = st ? st->tail_n[dir] : local_n;
    if (s.gap() || s.end()) tn = 0;
    const uint8_t* d = s.data();
    const uint32_t n = s.len();
    // Byte x of the text tail ++ data (x < tn: the carried tail).
    auto at = [&](uint32_t x) { return x < tn ? tail[x] : d[x - tn]; };
    const uint32_t total = tn + n;
    for (uint32_t end = v.len; end <= total; ++end) {
      if (end <= tn) continue;  // matched before, inside the carried bytes
      uint32_t k = 0;
      while (k < v.len && at(end - v.len + k) == v.pattern[k]) ++k;
      if (k < v.len) continue;
      if (st) ++st->matches[dir];
      if (v.action == kAlert) {
        s.alerted();
        s.emit(1, uint32_t(s.offset() + (end - tn)));
      } else if (v.action == kDropFlow) {
        s.drop_flow();
      }
    }
    // Carry the last len-1 bytes.
    const uint32_t keep = v.len - 1 < total ? v.len - 1 : total;
    uint8_t next[kMaxPattern - 1];
    for (uint32_t k = 0; k < keep; ++k) next[k] = at(total - keep + k);
    for (uint32_t k = 0; k < keep; ++k) tail[k] = next[k];
    tn = uint8_t(keep);
    return ctx;
  }

  class Host {
   public:
    explicit Host(const ModuleOptions& opt);
    View upload(TableMemory&) { return view_; }
    void on_event(const ModuleEvent& e, const HostPacket& p, ModuleOutput& out);
    void report(std::map<std::string, uint64_t>& r) const { r["matches_reported"] = events_; }

   private:
    View view_{};
    uint64_t events_ = 0;
  };
};

}  // namespace gaspp
