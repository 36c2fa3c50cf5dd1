// modules/detect/tag.hpp — Suricata's `tag` keyword: after a signature with it alerts, the packets
// that follow on the same session, or to and from the same host, are tagged (Suricata's
// detect-tag.c and detect-engine-tag.c), and with eve-log's `tagged-packets: yes` (the detect
// module's option tagged-packets=on) each is written as an EVE `packet` event.
//
//   tag:session[, COUNT, packets|bytes|seconds]
//   tag:host[, COUNT, packets|bytes|seconds[, src|dst]]
// Defaults: 256 packets; a host tag follows the packet's destination unless `src` is given. A
// packets count is at most 256. A direction on a session tag is allowed and means nothing, as in
// Suricata (which warns).
//
// As Suricata counts them: the alerting packet is the tag's first packet (counted, not logged: its
// alert carries it); a packets tag logs the next COUNT - 1 packets, a bytes tag those until the
// captured bytes counted pass COUNT, a seconds tag those until more than COUNT whole seconds lie
// between the alert and the packet. One packet is logged once, however many tags it has. A
// signature alerting again on a session or host it already tagged restarts its tag (its counts
// and start) up to 10 times (DETECT_TAG_MATCH_LIMIT); at most 50 tags a session or host
// (DETECT_TAG_MAX_TAGS), more are not kept. A host tag not seen for 600 s ends
// (TAG_MAX_LAST_TIME_SEEN).
//
// Sessions are the packet's 5-tuple, either direction (Suricata keeps them in the flow: here a
// new connection on the same tuple inherits a tag that has not run out). Limit: kTagMaxKeys
// sessions and kTagMaxKeys hosts with tags; a tag for another one is not kept, counted (full()).
//
// Example:
//   TagTable tags;
//   tags.add(spec, gid, sid, pkt);      // the alert on pkt, in capture order
//   if (tags.handle(pkt2)) log(pkt2);   // every packet after (pkt itself too: it is counted)
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

namespace gaspp {

struct TagSpec {
  enum Metric : uint8_t { packets, bytes, seconds };
  bool host = false;     // host tag (else session)
  bool dir_src = false;  // host tag: the packet's source (else its destination)
  Metric metric = packets;
  uint32_t count = 256;
};

// Parses a tag option's value: "" and out filled, or "error:<why>".
std::string parse_tag_option(const std::string& value, TagSpec& out);

// What the tag table needs of a packet.
struct TagPacket {
  uint64_t ts_ns = 0;
  uint32_t len = 0;       // captured bytes
  uint8_t family = 0;     // 4 or 6; 0: not IP (no session, no host)
  uint8_t proto = 0;
  uint8_t src[16] = {}, dst[16] = {};
  uint16_t sport = 0, dport = 0;
};

constexpr size_t kTagMaxKeys = size_t(1) << 20;

class TagTable {
 public:
  // The alert of signature gid:sid on packet p, whose rule has tag t.
  void add(const TagSpec& t, uint32_t gid, uint32_t sid, const TagPacket& p);
  // Counts p against the tags of its session and hosts, ends those that ran out; whether p is to
  // be logged as tagged.
  bool handle(const TagPacket& p);
  bool empty() const { return sessions_.empty() && hosts_.empty(); }
  uint64_t full() const { return full_; }
  uint64_t tagged() const { return tagged_; }

 private:
  struct Entry {
    uint32_t gid, sid;
    TagSpec::Metric metric;
    uint32_t count;
    uint32_t packets = 0;
    uint64_t bytes = 0;
    uint64_t first_ts, last_ts;
    uint32_t matches = 0;
    bool skipped_first = false;
  };
  using Key = std::string;  // bytes of the session's or host's identity
  static Key session_key(const TagPacket& p);
  static Key host_key(uint8_t family, const uint8_t* addr);
  void add_to(std::unordered_map<Key, std::vector<Entry>>& m, const Key& k, const Entry& e);
  // Suricata's TagHandlePacketFlow / TagHandlePacketHost over one list: whether p is tagged.
  static bool handle_list(std::vector<Entry>& list, const TagPacket& p, bool host);
  std::unordered_map<Key, std::vector<Entry>> sessions_, hosts_;
  uint64_t full_ = 0, tagged_ = 0;
};

}  // namespace gaspp
