// applayer/detection_ports.hpp — the ports a protocol is probed on: Suricata's
// app-layer.protocols.PROTO[.udp|.tcp].detection-ports.dp, host+device (the app-udp module's stage
// reads them to pick the UDP datagrams it brings to the host).
//
// A flow is probed for the protocol when either of its ports is in the set (Suricata probes the
// server's port of a request and the client's of a reply). At most kMax ranges: a longer list is a
// configuration error, not a silent cut.
//
// Example:
//   PortRanges p;
//   std::string why = parse_port_ranges("[53, 5353, 8000:8100]", p);  // "" when it parsed
//   p.has(5353);  // true
#pragma once
#include <cstdint>
#include <string>

#include "gaspp/hd.hpp"

namespace gaspp {

struct PortRanges {
  static constexpr int kMax = 8;
  uint16_t lo[kMax] = {}, hi[kMax] = {};
  uint8_t n = 0;
  GASPP_HD bool has(uint16_t p) const {
    for (int i = 0; i < n; ++i)
      if (p >= lo[i] && p <= hi[i]) return true;
    return false;
  }
  static PortRanges one(uint16_t p) {
    PortRanges r;
    r.lo[0] = r.hi[0] = p;
    r.n = 1;
    return r;
  }
};

// Suricata's port list: a port, a range "a:b", "any", or a bracketed, comma-separated list of them.
// Returns "" when it parsed (out holds it), else why not.
std::string parse_port_ranges(const std::string& text, PortRanges& out);
// The list as parse_port_ranges reads it back ("53,5353,8000:8100").
std::string port_ranges_text(const PortRanges& p);

}  // namespace gaspp
