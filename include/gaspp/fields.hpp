// gaspp/fields.hpp — what the decoder produces for each packet, as an aligned struct of arrays.
//
// GASPP_DECODED_FIELDS lists every per-packet field once: its element type, its name and how many
// elements each packet has. From that one list come the device view (`DecodedView`, pointers
// only, trivially copyable, passed to kernels by value), the host storage that owns the arrays
// (`DecodedArrays` in core/packet_batch.hpp) and the CUDA buffers (backend/cuda). Packet i's field
// `f` (element k) lives at `view.f[i * N + k]`, so a warp writing consecutive packets writes
// consecutive words.
//
// Conventions:
//   * offsets (l3_off, l4_off, payload_off) are from the first byte of the frame; kNoOffset = absent
//   * addresses are 16 bytes in network order packed four to a word (IPv4 in word 0, rest zero)
//   * sport/dport are TCP or UDP ports; ICMP and ICMPv6 use icmp_type/icmp_code/icmp_id instead
//   * payload_len is what the IP/UDP headers announce (what TCP sequence numbers count); the
//     captured part of it is captured_payload() in decoder.hpp
//   * malformed is a MalformedReason; a malformed packet keeps every field decoded before the fault
//   * events lists the DecodeEvents the packet raised (Suricata's decoder events), at most
//     kDecodeEventSlots; one more is counted as events_dropped and not kept
//   * undecoded is an UndecodedReason: a well-formed packet whose next layer gaspp does not decode
//     (a non-IP ethertype, a PPP control protocol, a pseudowire behind MPLS); it is never guessed
//   * tunnel_depth > 0: the L3/L4 fields are the innermost packet's (a GTP-U G-PDU's payload), as
//     Zeek and nDPI key flows on the inner packet; the outer headers are not kept
#pragma once
#include <cstdint>

#include "gaspp/hd.hpp"

namespace gaspp {

#define GASPP_DECODED_FIELDS(X)                                                       \
  X(uint64_t, ts_ns, 1)       /* capture time, ns since the epoch */                  \
  X(uint32_t, wire_len, 1)    /* original length on the wire */                       \
  X(uint32_t, cap_len, 1)     /* captured bytes */                                    \
  X(uint32_t, flow_hash, 1)   /* symmetric: both directions hash alike */            \
  X(uint32_t, src_ip, 4)                                                              \
  X(uint32_t, dst_ip, 4)                                                              \
  X(uint32_t, tcp_seq, 1)                                                             \
  X(uint32_t, tcp_ack, 1)                                                             \
  X(uint32_t, tcp_tsval, 1)                                                           \
  X(uint32_t, tcp_tsecr, 1)                                                           \
  X(uint32_t, tcp_sack, 8)    /* up to 4 SACK blocks: left, right */                  \
  X(uint32_t, payload_len, 1) /* as the IP/UDP headers announce; see captured_payload() */ \
  X(uint16_t, l3_off, 1)                                                              \
  X(uint16_t, l4_off, 1)                                                              \
  X(uint16_t, payload_off, 1)                                                         \
  X(uint16_t, ethertype, 1)   /* of the L3 header: after VLAN, PPPoE, MPLS (derived there and for raw/SLL/loopback); undecoded: the field that stopped it */ \
  X(uint16_t, vlan_id, 3)     /* outermost first */                                   \
  X(uint16_t, source, 1)      /* which capture source (file, interface, port) it came from */ \
  X(uint16_t, sport, 1)                                                               \
  X(uint16_t, dport, 1)                                                               \
  X(uint16_t, icmp_id, 1)                                                             \
  X(uint16_t, tcp_flags, 1)   /* 9 bits: NS CWR ECE URG ACK PSH RST SYN FIN */        \
  X(uint16_t, tcp_win, 1)     /* raw window field, not scaled */                      \
  X(uint16_t, tcp_mss, 1)                                                             \
  X(uint16_t, ip_opts, 1)     /* IpOptBits: IPv4 options present and valid (Suricata's opts_set) */ \
  X(uint8_t, link, 1)         /* LinkType of the source */                            \
  X(uint8_t, l3, 1)           /* L3 */                                                \
  X(uint8_t, l4, 1)           /* L4 */                                                \
  X(uint8_t, ip_proto, 1)     /* protocol number of the transport header (after IPv6 extensions) */ \
  X(uint8_t, ip_ttl, 1)       /* TTL or hop limit */                                  \
  X(uint8_t, ip_frag, 1)      /* FragFlags */                                         \
  X(uint8_t, vlan_count, 1)                                                           \
  X(uint8_t, icmp_type, 1)                                                            \
  X(uint8_t, icmp_code, 1)                                                            \
  X(uint8_t, tcp_wscale, 1)                                                           \
  X(uint8_t, tcp_opts, 1)     /* TcpOpt bits: which options were present */           \
  X(uint8_t, tcp_sack_n, 1)                                                           \
  X(uint8_t, tunnel_depth, 1) /* tunnel layers (GTP-U) the IP headers above sit inside */ \
  X(uint8_t, undecoded, 1)    /* UndecodedReason: why decoding stopped short of IP, not malformed */ \
  X(uint8_t, csum_bad, 1)     /* ChecksumBad bits (decode/checksum.hpp); 0 unless validation is on */ \
  X(uint8_t, malformed, 1)    /* MalformedReason */ \
  X(uint8_t, events, 4)       /* DecodeEvents raised, in the order raised; 0 ends the list */

constexpr uint16_t kNoOffset = 0xffff;

// Link-layer header types, numbered as LINKTYPE_* in the pcap format.
enum class LinkType : uint8_t {
  null_bsd = 0,      // BSD loopback: 4-byte address family in host byte order of the writer
  ethernet = 1,
  raw = 101,         // raw IPv4 or IPv6, version from the first nibble
  linux_sll = 113,
  ipv4 = 228,
  ipv6 = 229,
  loop = 108,        // OpenBSD loopback: address family in network order
  linux_sll2 = 20,   // internal code for LINKTYPE_LINUX_SLL2 (276), which does not fit a byte
  cisco_hdlc = 104,  // Cisco HDLC: address, control, then an ethertype (IPv4, IPv6, MPLS)
  ppp = 9,           // PPP (RFC 1661), optionally in HDLC-like framing (RFC 1662): ff 03, then the protocol
  ppp_hdlc = 50,     // PPP in HDLC-like framing (LINKTYPE_PPP_HDLC): address, control, protocol
};

enum class L3 : uint8_t { none = 0, ipv4, ipv6, arp, other };
enum class L4 : uint8_t { none = 0, tcp, udp, icmp, icmpv6, other };

enum FragFlags : uint8_t {
  kFragIsFragment = 1,   // part of a fragmented datagram (offset != 0 or MF set)
  kFragMore = 2,         // more fragments follow
  kFragFirst = 4,        // the fragment at offset 0 (carries the transport header)
  kFragDontFragment = 8,
};

// The IPv4 options a packet carries, a bit each as Suricata's IPV4_OPT_FLAG_* (what `ipopts`
// matches): EOL and NOP as met, the others when they are the first of their kind and valid.
enum IpOptBits : uint16_t {
  kIpOptEol = 1u << 1, kIpOptNop = 1u << 2, kIpOptRr = 1u << 3, kIpOptTs = 1u << 4, kIpOptQs = 1u << 5,
  kIpOptLsrr = 1u << 6, kIpOptSsrr = 1u << 7, kIpOptSid = 1u << 8, kIpOptSec = 1u << 9, kIpOptCipso = 1u << 10,
  kIpOptRtralt = 1u << 11, kIpOptEsec = 1u << 12,
};

enum TcpOpt : uint8_t {
  kOptMss = 1,
  kOptWscale = 2,
  kOptSackPerm = 4,
  kOptSack = 8,
  kOptTimestamp = 16,
  kOptTfo = 32,  // TCP Fast Open (kind 34, or the experimental 253/254 with magic 0xf989)
};

// Why a packet could not be decoded completely. Listed once with the summary's name for each.
#define GASPP_MALFORMED_REASONS(X)             \
  X(none, "none")                              \
  X(empty, "empty_record")                     \
  X(l2_truncated, "l2_truncated")              \
  X(vlan_too_deep, "vlan_too_deep")            \
  X(link_unsupported, "link_unsupported")      \
  X(ipv4_truncated, "ipv4_truncated")          \
  X(ipv4_bad_version, "ipv4_bad_version")      \
  X(ipv4_bad_ihl, "ipv4_bad_ihl")              \
  X(ipv4_bad_total_len, "ipv4_bad_total_len")  \
  X(ipv4_bad_options, "ipv4_bad_options")      \
  X(ipv6_truncated, "ipv6_truncated")          \
  X(ipv6_bad_version, "ipv6_bad_version")      \
  X(ipv6_bad_payload_len, "ipv6_bad_payload_len") \
  X(ipv6_ext_truncated, "ipv6_ext_truncated")  \
  X(ipv6_too_many_ext, "ipv6_too_many_ext")    \
  X(tcp_truncated, "tcp_truncated")            \
  X(tcp_bad_offset, "tcp_bad_offset")          \
  X(tcp_bad_options, "tcp_bad_options")        \
  X(udp_truncated, "udp_truncated")            \
  X(udp_bad_length, "udp_bad_length")          \
  X(icmp_truncated, "icmp_truncated")          \
  X(pppoe_truncated, "pppoe_truncated")        \
  X(pppoe_bad_header, "pppoe_bad_header")      \
  X(mpls_truncated, "mpls_truncated")          \
  X(mpls_too_deep, "mpls_too_deep")            \
  X(gtp_truncated, "gtp_truncated")            \
  X(gtp_bad_extension, "gtp_bad_extension")    \
  X(ip_in_ip_truncated, "ip_in_ip_truncated")  \
  X(gre_truncated, "gre_truncated")            \
  X(gre_bad_header, "gre_bad_header")          \
  X(nsh_truncated, "nsh_truncated")            \
  X(nsh_bad_length, "nsh_bad_length")

// Why a well-formed packet was not decoded up to IP: its next layer is one gaspp does not decode.
// Such packets are counted by reason (the summary's "undecoded") and get no flow; nothing is guessed.
#define GASPP_UNDECODED_REASONS(X)                                                          \
  X(none, "none")                                                                           \
  X(ethertype, "ethertype")              /* an ethertype / protocol field other than IP, ARP */ \
  X(llc, "llc")                          /* 802.3 frame with an LLC header */                \
  X(ip_version, "ip_version")            /* raw IP whose version is neither 4 nor 6 */      \
  X(address_family, "address_family")    /* loopback address family other than IPv4/IPv6 */ \
  X(pppoe_discovery, "pppoe_discovery")  /* PPPoE discovery stage (PADI, PADO, ...) */       \
  X(ppp_protocol, "ppp_protocol")        /* PPP control or non-IP protocol (LCP, IPCP, ...) */ \
  X(mpls_payload, "mpls_payload")        /* MPLS payload not IP (pseudowire, control word) */ \
  X(gtp_payload, "gtp_payload")          /* GTP-U G-PDU whose payload is not IPv4/IPv6 */    \
  X(gre_payload, "gre_payload")          /* GRE carrying MPLS, a non-IP PPP protocol, ... */ \
  X(tunnel_too_deep, "tunnel_too_deep")  /* more nested tunnels than kMaxTunnelDepth */     \
  X(nsh_unsupported, "nsh_unsupported")  /* NSH of another version or MD type, or carrying NSH or an unknown protocol */

enum class UndecodedReason : uint8_t {
#define GASPP_X(id, name) id,
  GASPP_UNDECODED_REASONS(GASPP_X)
#undef GASPP_X
      count_
};
constexpr int kUndecodedReasons = static_cast<int>(UndecodedReason::count_);

enum class MalformedReason : uint8_t {
#define GASPP_X(id, name) id,
  GASPP_MALFORMED_REASONS(GASPP_X)
#undef GASPP_X
      count_
};
constexpr int kMalformedReasons = static_cast<int>(MalformedReason::count_);

// Suricata's decoder events (decode-event:NAME in a rule; decoder.event.* in its stats) that the
// decoder and the defragmenter raise. An event is an anomaly: a packet may raise one and decode
// fine (an unknown IPv6 option), and a malformed packet raises the event Suricata gives its fault.
// Suricata's other decoder events (those of layers gaspp does not decode, or does not check) are
// listed in modules/detect/signature.cpp, where a rule naming one is skipped.
#define GASPP_DECODE_EVENTS(X)                                                    \
  X(none, "none")                                                                 \
  X(ipv4_pkt_too_small, "ipv4.pkt_too_small")                                     \
  X(ipv4_hlen_too_small, "ipv4.hlen_too_small")                                   \
  X(ipv4_iplen_smaller_than_hlen, "ipv4.iplen_smaller_than_hlen")                 \
  X(ipv4_trunc_pkt, "ipv4.trunc_pkt")                                             \
  X(ipv4_opt_invalid, "ipv4.opt_invalid")                                         \
  X(ipv4_opt_invalid_len, "ipv4.opt_invalid_len")                                 \
  X(ipv4_opt_malformed, "ipv4.opt_malformed")                                     \
  X(ipv4_opt_eol_required, "ipv4.opt_eol_required")                               \
  X(ipv4_opt_duplicate, "ipv4.opt_duplicate")                                     \
  X(ipv4_wrong_ip_version, "ipv4.wrong_ip_version")                               \
  X(ipv4_icmpv6, "ipv4.icmpv6")                                                   \
  X(ipv4_frag_pkt_too_large, "ipv4.frag_pkt_too_large")                           \
  X(ipv4_frag_overlap, "ipv4.frag_overlap")                                       \
  X(ipv6_pkt_too_small, "ipv6.pkt_too_small")                                     \
  X(ipv6_trunc_pkt, "ipv6.trunc_pkt")                                             \
  X(ipv6_trunc_exthdr, "ipv6.trunc_exthdr")                                       \
  X(ipv6_exthdr_dupl_fh, "ipv6.exthdr_dupl_fh")                                   \
  X(ipv6_exthdr_useless_fh, "ipv6.exthdr_useless_fh")                             \
  X(ipv6_exthdr_dupl_rh, "ipv6.exthdr_dupl_rh")                                   \
  X(ipv6_exthdr_dupl_hh, "ipv6.exthdr_dupl_hh")                                   \
  X(ipv6_exthdr_dupl_dh, "ipv6.exthdr_dupl_dh")                                   \
  X(ipv6_exthdr_invalid_optlen, "ipv6.exthdr_invalid_optlen")                     \
  X(ipv6_wrong_ip_version, "ipv6.wrong_ip_version")                               \
  X(ipv6_hopopts_unknown_opt, "ipv6.hopopts_unknown_opt")                         \
  X(ipv6_hopopts_only_padding, "ipv6.hopopts_only_padding")                       \
  X(ipv6_dstopts_unknown_opt, "ipv6.dstopts_unknown_opt")                         \
  X(ipv6_dstopts_only_padding, "ipv6.dstopts_only_padding")                       \
  X(ipv6_rh_type_0, "ipv6.rh_type_0")                                             \
  X(ipv6_fh_non_zero_reserved_field, "ipv6.fh_non_zero_reserved_field")           \
  X(ipv6_data_after_none_header, "ipv6.data_after_none_header")                   \
  X(ipv6_icmpv4, "ipv6.icmpv4")                                                   \
  X(ipv6_frag_pkt_too_large, "ipv6.frag_pkt_too_large")                           \
  X(ipv6_frag_overlap, "ipv6.frag_overlap")                                       \
  X(ipv6_frag_invalid_length, "ipv6.frag_invalid_length")                         \
  X(ipv6_ipv4_in_ipv6_wrong_version, "ipv6.ipv4_in_ipv6_wrong_version")           \
  X(ipv6_ipv6_in_ipv6_wrong_version, "ipv6.ipv6_in_ipv6_wrong_version")           \
  X(tcp_pkt_too_small, "tcp.pkt_too_small")                                       \
  X(tcp_hlen_too_small, "tcp.hlen_too_small")                                     \
  X(tcp_invalid_optlen, "tcp.invalid_optlen")                                     \
  X(tcp_opt_invalid_len, "tcp.opt_invalid_len")                                   \
  X(tcp_opt_duplicate, "tcp.opt_duplicate")                                       \
  X(udp_pkt_too_small, "udp.pkt_too_small")                                       \
  X(udp_hlen_too_small, "udp.hlen_too_small")                                     \
  X(udp_len_invalid, "udp.len_invalid")                                           \
  X(icmpv4_pkt_too_small, "icmpv4.pkt_too_small")                                 \
  X(icmpv6_pkt_too_small, "icmpv6.pkt_too_small")                                 \
  X(gre_pkt_too_small, "gre.pkt_too_small")                                       \
  X(gre_wrong_version, "gre.wrong_version")                                       \
  X(gre_version0_recur, "gre.version0_recur")                                     \
  X(gre_version0_flags, "gre.version0_flags")                                     \
  X(gre_version0_hdr_too_big, "gre.version0_hdr_too_big")                         \
  X(gre_version1_chksum, "gre.version1_chksum")                                   \
  X(gre_version1_route, "gre.version1_route")                                     \
  X(gre_version1_ssr, "gre.version1_ssr")                                         \
  X(gre_version1_recur, "gre.version1_recur")                                     \
  X(gre_version1_flags, "gre.version1_flags")                                     \
  X(gre_version1_no_key, "gre.version1_no_key")                                   \
  X(gre_version1_wrong_protocol, "gre.version1_wrong_protocol")                   \
  X(gre_version1_hdr_too_big, "gre.version1_hdr_too_big")

enum class DecodeEvent : uint8_t {
#define GASPP_X(id, name) id,
  GASPP_DECODE_EVENTS(GASPP_X)
#undef GASPP_X
      count_
};
constexpr int kDecodeEvents = static_cast<int>(DecodeEvent::count_);
constexpr int kDecodeEventSlots = 4;  // events kept a packet (Suricata keeps 15; more are counted)
static_assert(kDecodeEvents < 128, "an event is 7 bits of its slot (the high bit: events dropped)");

// The events the defragmenter raises on the host, after the device's decode (PacketBatch::host_events).
constexpr bool decode_event_raised_on_host(DecodeEvent e) {
  return e == DecodeEvent::ipv4_frag_overlap || e == DecodeEvent::ipv4_frag_pkt_too_large ||
         e == DecodeEvent::ipv6_frag_overlap || e == DecodeEvent::ipv6_frag_pkt_too_large;
}

const char* decode_event_name(DecodeEvent e);
const char* malformed_reason_name(MalformedReason r);
const char* undecoded_reason_name(UndecodedReason r);
const char* l3_name(L3 v);
const char* l4_name(L4 v);
const char* link_name(LinkType v);

// The device view: one pointer per field, nothing owned. Trivially copyable by construction.
struct DecodedView {
#define GASPP_X(type, name, n) type* name;
  GASPP_DECODED_FIELDS(GASPP_X)
#undef GASPP_X
};

// Bytes one packet's decoded fields take (used to size buffers and to report memory).
constexpr uint32_t decoded_bytes_per_packet() {
  return 0
#define GASPP_X(type, name, n) +uint32_t(sizeof(type) * (n))
      GASPP_DECODED_FIELDS(GASPP_X)
#undef GASPP_X
      ;
}

}  // namespace gaspp
