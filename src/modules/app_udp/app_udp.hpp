// modules/app_udp/app_udp.hpp — brings the UDP datagrams the application layer parses to the
// host: DNS, by Suricata's detection ports (UDP port 53 unless app-layer.protocols.dns.udp.
// detection-ports says otherwise, either side), and SIP, by its detection ports (5060 unless
// app-layer.protocols.sip.detection-ports says otherwise, either side; Suricata also finds SIP by
// content on any port, which would mean reading every UDP payload here).
//
// The pipeline puts this module first itself when the application layer runs (ModuleSet's
// set_app_layer_config; the summary lists it as `app-udp`), so that it sees the packets later
// modules drop, as Suricata parses before it detects: the application layer reads TCP from
// the reassembled streams, but a UDP message is one packet, and a packet reaches the host, with its
// flow's id and direction, as a module event. Its stage raises one event per UDP packet with a
// flow, to or from a DNS port carrying at least a DNS header (12 bytes), or to or from a SIP port
// carrying anything; ModuleSet takes those events, re-decodes the packets on the host and hands
// their payloads to the application layer (applayer/app_layer.hpp) in capture order. No verdict,
// no per-flow state. Options (ModuleSet sets them from the application layer's configuration):
// dns-ports, sip-ports (applayer/detection_ports.hpp's lists; at most 8 ports or ranges each).
#pragma once
#include <stdexcept>

#include "applayer/detection_ports.hpp"
#include "gaspp/module.hpp"

namespace gaspp {

struct AppUdpModule {
  static constexpr const char* kName = "app-udp";
  static constexpr uint32_t kLayers = kLayerUdp;
  static constexpr bool kChangesContext = false;
  static constexpr uint16_t kEventDatagram = 1;
  static constexpr uint32_t kDnsHeader = 12;
  struct FlowState {};
  struct View {
    PortRanges dns = PortRanges::one(53), sip = PortRanges::one(5060);
  };
  GASPP_HD static uint32_t on_udp(Packet& p, FlowState*, const View& v, uint32_t ctx) {
    if (!p.has_flow()) return ctx;
    const uint32_t len = p.dec().payload_len[p.index()];
    const bool dns = (v.dns.has(p.sport()) || v.dns.has(p.dport())) && len >= kDnsHeader;
    const bool sip = (v.sip.has(p.sport()) || v.sip.has(p.dport())) && len > 0;
    if (dns || sip) p.emit(kEventDatagram, 0);
    return ctx;
  }
  struct Host : ModuleHost<AppUdpModule> {
    explicit Host(const ModuleOptions& opt) : ModuleHost(ModuleOptions{}) {
      for (const auto& [k, val] : opt) {
        PortRanges* to = k == "dns-ports" ? &view_.dns : k == "sip-ports" ? &view_.sip : nullptr;
        if (!to) throw std::invalid_argument(std::string(kName) + ": unknown option '" + k + "'");
        const std::string why = parse_port_ranges(val, *to);
        if (!why.empty()) throw std::invalid_argument(std::string(kName) + ": " + k + ": " + why);
      }
    }
    View upload(TableMemory&) { return view_; }

   private:
    View view_{};
  };
};

}  // namespace gaspp
