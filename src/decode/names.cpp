#include "gaspp/fields.hpp"

namespace gaspp {

const char* malformed_reason_name(MalformedReason r) {
  static const char* const names[] = {
#define GASPP_X(id, name) name,
      GASPP_MALFORMED_REASONS(GASPP_X)
#undef GASPP_X
  };
  const int i = static_cast<int>(r);
  return i >= 0 && i < kMalformedReasons ? names[i] : "unknown";
}

const char* decode_event_name(DecodeEvent e) {
  static const char* const names[] = {
#define GASPP_X(id, name) name,
      GASPP_DECODE_EVENTS(GASPP_X)
#undef GASPP_X
  };
  const int i = static_cast<int>(e);
  return i >= 0 && i < kDecodeEvents ? names[i] : "unknown";
}

const char* undecoded_reason_name(UndecodedReason r) {
  static const char* const names[] = {
#define GASPP_X(id, name) name,
      GASPP_UNDECODED_REASONS(GASPP_X)
#undef GASPP_X
  };
  const int i = static_cast<int>(r);
  return i >= 0 && i < kUndecodedReasons ? names[i] : "unknown";
}

const char* l3_name(L3 v) {
  switch (v) {
    case L3::none: return "none";
    case L3::ipv4: return "ipv4";
    case L3::ipv6: return "ipv6";
    case L3::arp: return "arp";
    case L3::other: return "other";
  }
  return "unknown";
}

const char* l4_name(L4 v) {
  switch (v) {
    case L4::none: return "none";
    case L4::tcp: return "tcp";
    case L4::udp: return "udp";
    case L4::icmp: return "icmp";
    case L4::icmpv6: return "icmpv6";
    case L4::other: return "other";
  }
  return "unknown";
}

const char* link_name(LinkType v) {
  switch (v) {
    case LinkType::null_bsd: return "bsd_loopback";
    case LinkType::ethernet: return "ethernet";
    case LinkType::raw: return "raw_ip";
    case LinkType::linux_sll: return "linux_sll";
    case LinkType::linux_sll2: return "linux_sll2";
    case LinkType::ipv4: return "raw_ipv4";
    case LinkType::ipv6: return "raw_ipv6";
    case LinkType::loop: return "openbsd_loopback";
    case LinkType::cisco_hdlc: return "cisco_hdlc";
    case LinkType::ppp: return "ppp";
    case LinkType::ppp_hdlc: return "ppp_hdlc";
  }
  return "unsupported";
}

}  // namespace gaspp
