// defrag/defrag.hpp — IP fragment reassembly, on the host, before batches reach a backend.
//
// Suricata reassembles IPv4 and IPv6 fragments before flow tracking: the fragments themselves get
// no flow (they are decoded, counted and verdicted as packets), and the reassembled datagram
// enters the pipeline right after the fragment that completed it, as a packet of its own. gaspp
// does the same. The batcher (pipeline/pipeline.cpp) shows each record to may_be_fragment(), a few
// byte reads that rule out everything but IP fragments and the layers it cannot see through
// cheaply (PPPoE, MPLS, IPv6 extension headers, non-Ethernet links), and hands the rest to
// Defragmenter::add(), which decodes the record with the shared decoder. Fragments are rare and
// reassembly is branchy, byte-copying work on a few packets, so it runs on the host, not as a
// kernel; batches without a completed datagram are not touched.
//
// Semantics (Suricata's defrag.c, with its defaults):
// - A datagram is keyed by address family, source, destination, IP identification, the IPv4
//   protocol, and the VLAN ids. It completes when a fragment without "more fragments" has arrived
//   and every byte from 0 to its end is held (fragments at that same offset still count, as in
//   Suricata). The reassembled frame is the first fragment's frame up to its IP header (IPv6: up
//   to the fragment header, which is removed, and the header before it names what followed it),
//   then the data; IPv4 total length and fragment field are rewritten and its header checksum
//   updated incrementally (a bad one stays bad), IPv6's payload length likewise.
// - Overlaps are resolved per byte by the policy (Suricata's names; default bsd). Between the
//   fragment that holds a byte and a later one that covers it, the later one wins when:
//     first: never; last: always; bsd: it starts before the held one; bsd-right: it starts at or
//     after it; linux: it starts before it or at the same offset; windows: it starts before and
//     ends after it; solaris: it starts before it and ends at or after its end. (These reproduce
//     the published Sturges/Novak overlap results.)
// - Fragments inside a GTP-U tunnel are not reassembled (counted `in_tunnel`; their first fragment
//   is tracked as before). A fragment whose data the capture cut short cannot be reassembled
//   (counted `truncated`). A fragment reaching past 65,535 bytes is ignored (`too_large`).
//
// Limits (suricata.yaml's `defrag` section; every one counted when hit): `trackers` datagrams in
// reassembly at once (65,535), `max-frags` fragments held (65,535), `memcap` bytes of fragments
// held (32 MiB; Suricata's memcap counts its trackers, gaspp's the bytes it keeps), `timeout`
// seconds of capture time after a datagram's latest fragment (60). A datagram whose fragments stop
// coming is dropped at its timeout (`timeouts`): when a fragment finds it expired, by a scan once a
// second of capture time (tick(), every batch), and when a limit is reached; then the new fragment is refused (its
// datagram cannot complete). The datagram key is directional (source, destination), as a
// datagram's fragments all travel one way.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "decode/decoder.hpp"

namespace gaspp {

enum class DefragPolicy : uint8_t { bsd, linux, windows, solaris, first, last, bsd_right };
// Suricata's policy and host-os names (bsd-right, old-linux, vista, ... map onto the six);
// false when the name is unknown.
bool parse_defrag_policy(const std::string& name, DefragPolicy& out);
const char* defrag_policy_name(DefragPolicy p);

struct DefragConfig {
  bool enabled = true;
  DefragPolicy policy = DefragPolicy::bsd;
  uint32_t trackers = 65535;
  uint32_t max_frags = 65535;
  uint64_t memcap = 32ull << 20;
  uint32_t timeout_s = 60;
};

#define GASPP_DEFRAG_COUNTERS(X)                                                              \
  X(ipv4_fragments, "ipv4_fragments")     /* IPv4 fragments seen (outside tunnels) */         \
  X(ipv6_fragments, "ipv6_fragments")                                                         \
  X(ipv4_reassembled, "ipv4_reassembled") /* datagrams completed */                           \
  X(ipv6_reassembled, "ipv6_reassembled")                                                     \
  X(overlaps, "overlaps")                 /* fragments overlapping data already held */       \
  X(timeouts, "timeouts")                 /* datagrams dropped incomplete at their timeout */ \
  X(too_large, "too_large")               /* fragments reaching past 65,535 bytes: ignored */ \
  X(truncated, "truncated")               /* fragments cut by the snap length: ignored */     \
  X(in_tunnel, "in_tunnel")               /* fragments inside a tunnel: not reassembled */    \
  X(max_trackers_reached, "max_trackers_reached")                                             \
  X(max_frags_reached, "max_frags_reached")                                                   \
  X(memcap_reached, "memcap_reached")

struct DefragStats {
#define GASPP_X(name, text) uint64_t name = 0;
  GASPP_DEFRAG_COUNTERS(GASPP_X)
#undef GASPP_X
  uint64_t incomplete_at_end = 0;  // datagrams still waiting for fragments when the run ended
  uint64_t peak_trackers = 0;
};

// Could the record's frame be an IP fragment (or hide one behind layers this check does not
// read)? False only when it certainly is not one. A few loads from the frame's first bytes.
// Inline: the batcher runs it on every record, ahead of the defragmenter.
inline bool may_be_fragment(const uint8_t* f, uint32_t cap, LinkType link) {
  uint32_t off;
  uint16_t et;
  switch (link) {
    case LinkType::ethernet:
      if (cap < 14) return false;
      et = load_be16(f + 12), off = 14;
      break;
    case LinkType::linux_sll:
      if (cap < 16) return false;
      et = load_be16(f + 14), off = 16;
      break;
    case LinkType::linux_sll2:
      if (cap < 20) return false;
      et = load_be16(f), off = 20;
      break;
    case LinkType::cisco_hdlc:
      if (cap < 4) return false;
      et = load_be16(f + 2), off = 4;
      break;
    case LinkType::ppp:
    case LinkType::ppp_hdlc: {
      uint16_t proto = 0;
      off = detail::ppp_header(f, cap, proto);
      if (off == 0) return false;
      et = detail::ethertype_of_ppp(proto);
      break;
    }
    case LinkType::raw:
    case LinkType::ipv4:
    case LinkType::ipv6:
      if (cap < 1) return false;
      et = (f[0] >> 4) == 4 ? 0x0800 : (f[0] >> 4) == 6 ? 0x86dd : 0;
      off = 0;
      break;
    default:
      return link == LinkType::null_bsd || link == LinkType::loop;  // rare: the decoder decides
  }
  for (int n = 0; n < 3 && (et == 0x8100 || et == 0x88a8 || et == 0x9100); ++n) {
    if (cap < off + 4) return false;
    et = load_be16(f + off + 2);
    off += 4;
  }
  if (et == 0x0800) return cap < off + 8 || (load_be16(f + off + 6) & 0x3fff) != 0;
  if (et == 0x86dd) return cap < off + 7 || detail::ipv6_is_extension(f[off + 6]);
  return et == 0x8864 || et == 0x8847 || et == 0x8848;  // PPPoE, MPLS: what they carry is not read here
}

class Defragmenter {
 public:
  explicit Defragmenter(const DefragConfig& cfg) : cfg_(cfg) {}

  // Looks at one record (16-byte header in `fmt`, then the frame; `room` bytes readable from
  // `rec`). An IP fragment is kept; when it completes a datagram, the reassembled datagram is
  // appended to `out` as a record in the same format, with the fragment's capture time, and
  // true is returned.
  bool add(const uint8_t* rec, uint64_t room, RecordFormat fmt, LinkType link, std::vector<uint8_t>& out);
  // The decoder event the last add() raised on its fragment (Suricata's: ipv4/ipv6.frag_overlap
  // when it overlaps a fragment held, frag_pkt_too_large when it reaches past 65,535 bytes or
  // completes a datagram that does); none otherwise.
  DecodeEvent last_event() const { return event_; }

  // Capture time has reached `now_ns` (any packet, fragment or not): datagrams past their timeout
  // are dropped, by a scan at most once a second of capture time.
  void tick(uint64_t now_ns) {
    if (!map_.empty()) expire(now_ns, false);
  }
  // Ends the run: datagrams still incomplete are counted (incomplete_at_end) and released.
  void finish();
  const DefragStats& stats() const { return st_; }
  const DefragConfig& config() const { return cfg_; }
  uint64_t trackers() const { return map_.size(); }
  uint64_t bytes_held() const { return bytes_; }

 private:
  DecodeEvent event_ = DecodeEvent::none;
  struct Key {
    uint32_t src[4], dst[4], id;
    uint16_t vlan[3];
    uint8_t af, proto, vlan_n;
    bool operator==(const Key& o) const;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  struct Frag {
    uint32_t off, len;     // within the datagram's fragmentable part
    uint32_t seq;          // arrival order within the datagram
    uint64_t data;         // where its bytes are in Tracker::bytes
    uint64_t prefix = 0;   // offset-0 fragments: the frame up to the fragmentable part ...
    uint32_t prefix_len = 0;
    uint32_t nh_field = 0; // ... IPv6: where, in that prefix, the field naming the fragment header is
    uint16_t l3 = 0;       // where the IP header starts in that prefix
    uint8_t next = 0;      // IPv6: the fragment header's next header
    bool more;
  };
  struct Tracker {
    std::vector<Frag> frags;  // by offset, then arrival
    std::vector<uint8_t> bytes;
    uint64_t last_ts_ns = 0;
    bool seen_last = false, has_first = false;
  };

  int complete(Tracker& t, bool v6, const uint8_t* rec_header, RecordFormat fmt, std::vector<uint8_t>& out);
  void expire(uint64_t now_ns, bool force);
  void release(std::unordered_map<Key, Tracker, KeyHash>::iterator it);

  DefragConfig cfg_;
  DefragStats st_;
  std::unordered_map<Key, Tracker, KeyHash> map_;
  uint64_t frags_ = 0, bytes_ = 0;
  uint64_t next_expiry_ns_ = 0;
  uint64_t oldest_ts_ns_ = 0;    // no datagram held is older (its latest fragment) than this
  std::vector<uint32_t> owner_;  // reassembly scratch: which fragment holds each byte
  std::vector<uint32_t> by_seq_;
};

}  // namespace gaspp
