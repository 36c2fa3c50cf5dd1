// applayer/sdp.hpp — SDP bodies of SIP messages (RFC 4566), read the way Suricata's SDP parser
// reads them (rust/src/sdp/parser.rs), for the EVE `sdp` object and the sdp.* signature buffers.
//
// Every SIP body is tried as SDP from its first byte (the Content-Type is not looked at). Lines end
// with LF or CRLF; they come in Suricata's fixed order: v=0, o=, s=, then each at most once i=,
// u=, e=, p=, c=, then b= lines, one or more time descriptions (t= and at most one r=), z=, k=, a=
// lines, then media descriptions (m=, then i=, c=, b= lines, k=, a= lines). Up to the first t=, a
// line out of order or that does not parse fails the whole SDP (the message has none); after it,
// such a line ends the SDP there (what came before is kept). Suricata's grammar is strict and kept
// as it is: s= and i= take letters, digits, spaces and tabs only; b= only CT, AS and TIAS; r= and
// z= exactly four fields; an a= name letters only; m= only audio, video, text, application and
// message over udp, RTP/AVP and RTP/SAVP; c= an IP address (written back normalised), an IPv4
// multicast address with its TTL.
//
// Example:
//   SdpMessage m;
//   if (parse_sdp(body, n, m)) ... m.origin, m.media[0].media
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gaspp {

struct SdpTime {
  std::string time, repeat;  // "start stop"; the r= line's four fields
  bool has_repeat = false;
};

struct SdpMedia {
  std::string media, info, connection, key;
  bool has_info = false, has_connection = false, has_key = false;
  std::vector<std::string> bandwidths, attributes;
};

struct SdpMessage {
  // o= as "username sess-id sess-version nettype addrtype address" (runs of blanks as one space)
  std::string origin, session_name, session_info, uri, email, phone, connection, timezone, key;
  bool has_info = false, has_uri = false, has_email = false, has_phone = false, has_connection = false,
       has_timezone = false, has_key = false;
  std::vector<std::string> bandwidths, attributes;  // "AS:64"; "name" or "name:value"
  std::vector<SdpTime> times;
  std::vector<SdpMedia> media;
};

// Parses p[0, n) as SDP; false when it is none (out is then empty).
bool parse_sdp(const uint8_t* p, size_t n, SdpMessage& out);

}  // namespace gaspp
