// output/reject_packet.hpp — the answer to a packet a reject rule dropped (Suricata's reject,
// rejectsrc, rejectdst, rejectboth: its respond-reject-libnet11.c), built as an Ethernet frame for
// the inline forwarder to send.
//
// A TCP segment is answered with a reset (RST|ACK, no payload, the segment's window):
//  * to its source: addresses, ports and MAC addresses swapped; when the segment's acknowledgment
//    number is 0 (a SYN), seq 0 and ack = its seq + its payload + 1, otherwise seq = its ack and
//    ack = its seq + its payload (RFC 793 section 3.4, as Suricata builds it);
//  * to its destination: the segment's own addresses, ports, seq and ack.
// Any other IP packet is answered with an ICMP destination unreachable, administratively
// prohibited (IPv4 type 3 code 10, IPv6 type 1 code 1: EVE's "icmp-prohib"), from the packet's
// destination to its source (or, to the destination, from its source), quoting as much of the
// packet as fits the MTU (IPv4: at least its header and 8 bytes), as Suricata does.
// TTL / hop limit 64, IPv4 id 0, checksums computed. An 802.1Q tag on the packet is kept.
//
// IPv6 extension headers (hop-by-hop, routing, destination options, AH, a first fragment's; at
// most 8) are walked to the TCP header, which gets the reset (the answer carries none of them); a
// later fragment, or headers the capture cut, get the ICMPv6 unreachable.
// Frames that cannot be answered (not Ethernet, not IPv4/IPv6, cut before the headers needed) give
// false; the forwarder counts them.
#pragma once
#include <cstdint>
#include <vector>

namespace gaspp {

// The answer to `frame` (an Ethernet frame of cap bytes) towards its source (to_source) or its
// destination, into out (replaced). mtu bounds the answer's IP packet. false: no answer.
bool build_reject(const uint8_t* frame, uint32_t cap, bool to_source, uint32_t mtu, std::vector<uint8_t>& out);

}  // namespace gaspp
