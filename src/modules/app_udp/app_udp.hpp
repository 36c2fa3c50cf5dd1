// modules/app_udp/app_udp.hpp — brings the UDP datagrams the application layer parses to the
// host: DNS, by Suricata's detection port (UDP port 53, either side), and SIP, by its well-known
// port (5060, either side; Suricata finds SIP by content on any port, which would mean reading
// every UDP payload here).
//
// The pipeline puts this module first itself when the application layer runs (ModuleSet's
// set_app_layer_config; the summary lists it as `app-udp`), so that it sees the packets later
// modules drop, as Suricata parses before it detects: the application layer reads TCP from
// the reassembled streams, but a UDP message is one packet, and a packet reaches the host, with its
// flow's id and direction, as a module event. Its stage raises one event per UDP packet with a
// flow, to or from port 53 carrying at least a DNS header (12 bytes), or to or from port 5060
// carrying anything; ModuleSet takes
// those events, re-decodes the packets on the host and hands their payloads to the application
// layer (applayer/app_layer.hpp) in capture order. No verdict, no per-flow state, no options.
#pragma once
#include "gaspp/module.hpp"

namespace gaspp {

struct AppUdpModule {
  static constexpr const char* kName = "app-udp";
  static constexpr uint32_t kLayers = kLayerUdp;
  static constexpr bool kChangesContext = false;
  static constexpr uint16_t kEventDatagram = 1;
  static constexpr uint16_t kDnsPort = 53;
  static constexpr uint32_t kDnsHeader = 12;
  static constexpr uint16_t kSipPort = 5060;
  struct FlowState {};
  struct View {};
  GASPP_HD static uint32_t on_udp(Packet& p, FlowState*, const View&, uint32_t ctx) {
    if (!p.has_flow()) return ctx;
    const uint32_t len = p.dec().payload_len[p.index()];
    const bool dns = (p.sport() == kDnsPort || p.dport() == kDnsPort) && len >= kDnsHeader;
    const bool sip = (p.sport() == kSipPort || p.dport() == kSipPort) && len > 0;
    if (dns || sip) p.emit(kEventDatagram, 0);
    return ctx;
  }
  struct Host : ModuleHost<AppUdpModule> {
    using ModuleHost::ModuleHost;
  };
};

}  // namespace gaspp
