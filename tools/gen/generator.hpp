// tools/gen/generator.hpp — deterministic synthetic traffic generator (`gaspp gen`, tests, benchmarks).
//
// generate() produces a stream of well-formed Ethernet frames (no FCS) and hands each one to a
// callback; generate_pcap() writes the same stream to a classic nanosecond pcap file. The output
// is a pure function of the configuration: the same GenConfig (seed included) gives byte-identical
// frames and timestamps on every run, a different seed gives different traffic.
//
// Every frame is valid and decodes cleanly in tshark: Ethernet II with locally administered
// unicast MACs (first octet xxxxxx10), an optional single 802.1Q tag, IPv4 (20-byte header, DF,
// correct header checksum) or IPv6 (40-byte header, flow label per flow), then TCP or UDP with
// correct checksums over the IPv4/IPv6 pseudo header. IPv4 total length, IPv6 payload length and
// UDP length always describe the real packet; frames shorter than 60 bytes are padded to 60 with
// zeros after the IP packet. Addresses: IPv4 clients in 10.0.0.0/8, servers in 198.18.0.0/15
// (RFC 2544 benchmark range); IPv6 clients in fd00::/8, servers in 2001:db8::/32. Client ports
// are drawn from 61000..65535; fixed/mix server ports from 16000..16999 (no tshark dissector
// claims these, so random payloads show as plain data); http mode uses server port 80.
//
// Modes (GenConfig::mode):
//   fixed  Every frame is exactly `size` bytes. Flows are 80% TCP (PSH/ACK segments whose
//          sequence numbers advance per direction, ack = the peer's next sequence number) and
//          20% UDP; packets pick a flow uniformly at random and a random direction. Payload bytes
//          are pseudo-random (xoshiro256**) and never all zero; the first few are kept out of
//          the patterns tshark's heuristic dissectors (RTCP, Thrift, CLTP, TPKT) look for, so
//          random data is not mistaken for a malformed protocol message (same in all modes).
//          A flow whose headers do not fit in `size` is downgraded (TCP -> UDP, then its VLAN
//          tag dropped, then IPv6 -> IPv4) so that every frame still has exactly `size` bytes;
//          IPv6/VLAN shares are then lower than asked for the smallest sizes (IPv6+UDP needs
//          62 bytes, IPv6+TCP 74).
//   mix    Frame lengths follow an Internet-backbone-like mix (mean ~600 B, median ~85 B):
//            41%  tiny   60..66 B   TCP: pure ACK (54 B, padded to 60); UDP: small datagram
//            16%  small  67..100 B  DNS-like requests, short segments
//             6%  medium 101..576 B uniform
//             4%  large  577..1513 B uniform
//            33%  full   1514 B     (IP packet of 1500 bytes, the Ethernet MTU)
//          The length is that of an untagged frame; VLAN-tagged flows add their 4-byte tag, so
//          their full-size frames are 1518 B. TCP data segments travel server->client with
//          probability 0.85, pure ACKs client->server with probability 0.85; UDP 50/50.
//   http   `flows` concurrent TCP connections, each a web download: SYN, SYN-ACK (both with MSS,
//          window-scale and SACK-permitted options), ACK, a ~300-byte "GET /files/... HTTP/1.1"
//          request, then a response of ~800 KB (body 784..816 KB, random bytes) sent as full-size
//          segments (MSS 1460 over IPv4, 1440 over IPv6: ~550 segments) whose first begins with
//          "HTTP/1.1 200 OK\r\n...Content-Length: N\r\n...\r\n\r\n". The client acknowledges
//          delayed-ACK style: after every second segment, or after a single one with probability
//          0.28 (timer expiry), and always after the last one: ~320 pure ACKs per connection.
//          The server then closes (FIN/ACK), the client answers FIN/ACK, the server ACKs.
//          Sequence and acknowledgement numbers are exact (ISNs random; SYN and FIN count one).
//          Each packet comes from a connection chosen uniformly at random among the active ones;
//          a finished connection is replaced at once by a new one (new ports, addresses, ISNs).
//
// Flow properties: each flow (connection) is IPv6 with probability ipv6_share and carries one
// 802.1Q tag (random VID 2..4094) with probability vlan_share, chosen when the flow is created.
//
// Impairments, drawn per packet from their own random stream (so that enabling them does not
// change the underlying traffic). In http mode they apply to the response data segments only.
//   loss       the packet is not emitted
//   duplicate  the packet is emitted twice in a row
//   reorder    the packet is held back and emitted right after the next emitted packet of the same
//              flow and direction (i.e. swapped with it); packets still held at the end are
//              flushed in order.
//
// Counting: `packets` is the number of packets the traffic model produces, before impairments;
// the number of frames emitted is therefore about packets * (1 - loss) * (1 + duplicate).
//
// Planting: when `plant` is non-empty, each payload-carrying packet whose payload can hold the
// string receives it with probability plant_rate, at a uniformly random offset. In http mode only
// the response body is eligible (HTTP headers and the request stay intact).
//
// Timestamps: the first frame is stamped start_ns; each frame advances the clock by its wire time
// at `gbps`, counting 24 bytes of overhead (preamble 8, FCS 4, inter-frame gap 12). Timestamps are
// assigned in emission order, so they never decrease.
//
// Validation: generate()/generate_pcap() throw std::invalid_argument for size outside 60..1514
// (fixed mode), flows == 0, rates or shares outside 0..1, or gbps <= 0.
//
// Example:
//   gaspp::GenConfig cfg;
//   cfg.seed = 7;
//   cfg.packets = 100'000;
//   cfg.mode = gaspp::GenMode::http;
//   cfg.flows = 64;
//   cfg.plant = "attack-signature";
//   cfg.plant_rate = 0.01;
//   uint64_t n = gaspp::generate_pcap(cfg, "/tmp/http.pcap");      // frames written
//
//   uint64_t bytes = 0;                                            // or consume frames directly
//   gaspp::generate(cfg, [&](uint64_t ts_ns, const uint8_t* frame, uint32_t len) {
//     bytes += len;
//   });
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace gaspp {

enum class GenMode { fixed, mix, http };

struct GenConfig {
  uint64_t seed = 1;
  uint64_t packets = 1'000'000;  // packets produced by the traffic model (before loss/duplicates)
  GenMode mode = GenMode::mix;
  uint32_t size = 64;            // fixed mode: frame length without FCS, 60..1514
  uint32_t flows = 1024;         // concurrent flows; http mode: concurrent connections
  double reorder = 0, duplicate = 0, loss = 0;  // per-packet rates, 0..1
  double ipv6_share = 0;         // fraction of flows that are IPv6
  double vlan_share = 0;         // fraction of flows carrying one 802.1Q tag
  std::string plant;             // string planted in payloads ...
  double plant_rate = 0;         // ... of this fraction of the payload packets where it fits
  uint64_t start_ns = 1'700'000'000ull * 1'000'000'000ull;  // timestamp of the first frame
  double gbps = 10;              // line rate the timestamps advance at
};

// Receives frames in order. frame points at an Ethernet frame (no FCS) of length len, valid only
// during the call.
using FrameSink = std::function<void(uint64_t ts_ns, const uint8_t* frame, uint32_t len)>;

// Throws std::invalid_argument describing the first invalid field.
void validate(const GenConfig& cfg);

// "fixed", "mix" or "http"; parse_gen_mode throws std::invalid_argument for anything else.
const char* to_string(GenMode mode);
GenMode parse_gen_mode(std::string_view name);

// Runs the traffic model and calls sink for every emitted frame.
void generate(const GenConfig& cfg, const FrameSink& sink);

// Writes the stream as a classic little-endian nanosecond pcap file (magic 0xa1b23c4d, version
// 2.4, snaplen 262144, LINKTYPE_ETHERNET). Returns the number of packets written. Throws
// std::runtime_error naming the path and the errno text if the file cannot be written.
uint64_t generate_pcap(const GenConfig& cfg, const std::string& path);

}  // namespace gaspp
