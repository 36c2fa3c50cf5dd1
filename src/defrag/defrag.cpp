// defrag/defrag.cpp — see defrag.hpp.
#include "defrag/defrag.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace gaspp {
namespace {

constexpr uint32_t kNone = UINT32_MAX;

// Whether fragment `n` (arrived later) takes a byte that fragment `o` holds.
bool later_wins(DefragPolicy pol, uint32_t n_off, uint32_t n_end, uint32_t o_off, uint32_t o_end) {
  switch (pol) {
    case DefragPolicy::first: return false;
    case DefragPolicy::last: return true;
    case DefragPolicy::bsd: return n_off < o_off;
    case DefragPolicy::bsd_right: return n_off >= o_off;
    case DefragPolicy::linux: return n_off <= o_off;
    case DefragPolicy::windows: return n_off < o_off && n_end > o_end;
    case DefragPolicy::solaris: return n_off < o_off && n_end >= o_end;
  }
  return false;
}

void put32(uint8_t* p, uint32_t v, bool big) {
  for (int b = 0; b < 4; ++b) p[b] = uint8_t(v >> (big ? 8 * (3 - b) : 8 * b));
}
void put16be(uint8_t* p, uint32_t v) {
  p[0] = uint8_t(v >> 8);
  p[1] = uint8_t(v);
}

}  // namespace

bool parse_defrag_policy(const std::string& n, DefragPolicy& out) {
  // Suricata's host-os-policy names and the defrag policy each selects (defrag.c DefragGetOsPolicy).
  static const std::pair<const char*, DefragPolicy> kNames[] = {
      {"bsd", DefragPolicy::bsd},         {"bsd-right", DefragPolicy::bsd_right}, {"hpux10", DefragPolicy::bsd},
      {"irix", DefragPolicy::bsd},        {"macos", DefragPolicy::first},         {"linux", DefragPolicy::linux},
      {"old-linux", DefragPolicy::linux}, {"windows", DefragPolicy::windows},     {"windows2k3", DefragPolicy::windows},
      {"vista", DefragPolicy::windows},   {"solaris", DefragPolicy::solaris},     {"old-solaris", DefragPolicy::first},
      {"hpux11", DefragPolicy::first},    {"first", DefragPolicy::first},         {"last", DefragPolicy::last}};
  for (const auto& [name, pol] : kNames)
    if (n == name) {
      out = pol;
      return true;
    }
  return false;
}

const char* defrag_policy_name(DefragPolicy p) {
  static const char* kNames[] = {"bsd", "linux", "windows", "solaris", "first", "last", "bsd-right"};
  return kNames[int(p)];
}

bool Defragmenter::Key::operator==(const Key& o) const {
  return std::memcmp(src, o.src, sizeof src) == 0 && std::memcmp(dst, o.dst, sizeof dst) == 0 && id == o.id &&
         af == o.af && proto == o.proto && vlan_n == o.vlan_n && std::equal(vlan, vlan + vlan_n, o.vlan);
}

size_t Defragmenter::KeyHash::operator()(const Key& k) const {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t(k.id) << 16 | uint64_t(k.af) << 8 | k.proto);
  const auto mix = [&](uint64_t v) { h = (h ^ v) * 0xff51afd7ed558ccdull; h ^= h >> 33; };
  for (int i = 0; i < 4; ++i) mix(uint64_t(k.src[i]) << 32 | k.dst[i]);
  for (int i = 0; i < k.vlan_n; ++i) mix(k.vlan[i]);
  return size_t(h);
}

void Defragmenter::release(std::unordered_map<Key, Tracker, KeyHash>::iterator it) {
  frags_ -= it->second.frags.size();
  bytes_ -= it->second.bytes.size();
  map_.erase(it);
}

void Defragmenter::expire(uint64_t now, bool force) {
  const uint64_t t = uint64_t(cfg_.timeout_s) * 1'000'000'000ull;
  if (!force && now < next_expiry_ns_) return;
  // A forced scan (a limit reached) runs only when some datagram can have expired: a scan costs
  // the whole table, and a flood of fragments at a full table must not pay it for each one.
  if (force && !(oldest_ts_ns_ + t < now)) return;
  next_expiry_ns_ = now + 1'000'000'000ull;  // a scan per second of capture time
  uint64_t oldest = UINT64_MAX;
  for (auto it = map_.begin(); it != map_.end();) {
    if (it->second.last_ts_ns + t < now) {
      ++st_.timeouts;
      auto dead = it++;
      release(dead);
    } else {
      oldest = std::min(oldest, it->second.last_ts_ns);
      ++it;
    }
  }
  oldest_ts_ns_ = oldest == UINT64_MAX ? now : oldest;
}

void Defragmenter::finish() {
  st_.incomplete_at_end += map_.size();
  map_.clear();
  frags_ = bytes_ = 0;
}

bool Defragmenter::add(const uint8_t* rec, uint64_t room, RecordFormat fmt, LinkType link, std::vector<uint8_t>& out) {
  event_ = DecodeEvent::none;
  if (!cfg_.enabled || room < kRecordHeaderBytes) return false;
  const RecordHeader h = read_record_header(rec, fmt);
  const uint32_t cap = uint32_t(std::min<uint64_t>(h.cap_len, room - kRecordHeaderBytes));
  const uint8_t* f = rec + kRecordHeaderBytes;
  if (!may_be_fragment(f, cap, link)) return false;
  DecodedPacket p;
  decode_record(rec, room, fmt, link, p);
  if (!(p.ip_frag[0] & kFragIsFragment) || p.l3_off[0] == kNoOffset) return false;
  if (p.tunnel_depth[0]) {
    ++st_.in_tunnel;
    return false;
  }
  const bool v6 = p.l3[0] == uint8_t(L3::ipv6);
  ++(v6 ? st_.ipv6_fragments : st_.ipv4_fragments);
  const uint32_t l3 = p.l3_off[0];
  // The fragment's place: offset, its data in the frame, and for IPv6 the fragment header.
  uint32_t off, data_start, end, id, nh_field = 0, frag_hdr = 0;
  bool more;
  uint8_t proto = 0, next = 0;
  if (!v6) {
    if (cap < l3 + 20) return false;  // the decoder flagged it malformed
    const uint32_t ihl = uint32_t(f[l3] & 15) * 4;
    const uint16_t fo = load_be16(f + l3 + 6);
    off = uint32_t(fo & 0x1fff) * 8;
    more = fo & 0x2000;
    data_start = l3 + ihl;
    end = l3 + load_be16(f + l3 + 2);
    id = load_be16(f + l3 + 4);
    proto = f[l3 + 9];
  } else {
    uint8_t nh = f[l3 + 6];
    nh_field = l3 + 6;
    uint32_t o = l3 + 40;
    end = l3 + 40 + load_be16(f + l3 + 4);
    for (int n = 0; nh != 44; ++n) {  // the decoder found the fragment header: walk to it
      if (n == 8 || !detail::ipv6_is_extension(nh) || cap < o + 8) return false;
      const uint32_t len = nh == 51 ? (uint32_t(f[o + 1]) + 2) * 4 : (uint32_t(f[o + 1]) + 1) * 8;
      nh_field = o;
      nh = f[o];
      o += len;
    }
    if (cap < o + 8) return false;
    frag_hdr = o;
    const uint16_t fo = load_be16(f + o + 2);
    off = fo & 0xfff8;
    more = fo & 1;
    id = load_be32(f + o + 4);
    next = f[o];
    data_start = o + 8;
  }
  // A broken IP layer is counted malformed by the decoder; a transport header cut by the
  // fragmentation is no reason not to reassemble (the datagram is decoded again).
  // IPv6: the walk above checked the chain up to the fragment header; a fault after it (an
  // extension header the fragmentation cut) belongs to the datagram, decoded again once whole.
  const uint8_t bad = p.malformed[0];
  const bool l3_fault = v6 ? bad >= uint8_t(MalformedReason::ipv6_truncated) && bad <= uint8_t(MalformedReason::ipv6_bad_payload_len)
                           : bad >= uint8_t(MalformedReason::ipv4_truncated) && bad <= uint8_t(MalformedReason::ipv4_bad_options);
  if (end < data_start || l3_fault) return false;
  const uint32_t len = end - data_start;
  if (end > cap) {
    ++st_.truncated;
    return false;
  }
  if ((v6 ? 0 : 20) + off + len > 65535) {
    ++st_.too_large;
    event_ = v6 ? DecodeEvent::ipv6_frag_pkt_too_large : DecodeEvent::ipv4_frag_pkt_too_large;
    return false;
  }

  Key k{};
  std::copy(p.src_ip, p.src_ip + 4, k.src);
  std::copy(p.dst_ip, p.dst_ip + 4, k.dst);
  k.id = id;
  k.af = v6 ? 6 : 4;
  k.proto = proto;
  k.vlan_n = p.vlan_count[0];
  std::copy(p.vlan_id, p.vlan_id + k.vlan_n, k.vlan);

  const uint64_t now = h.ts_ns;
  expire(now, false);
  const uint32_t prefix_len = off == 0 ? (v6 ? frag_hdr : data_start) : 0;
  const uint64_t need = uint64_t(len) + prefix_len;
  auto it = map_.find(k);
  if (it != map_.end() && it->second.last_ts_ns + uint64_t(cfg_.timeout_s) * 1'000'000'000ull < now) {
    ++st_.timeouts;  // expired: this fragment starts a new datagram (a reused identification)
    release(it);
    it = map_.end();
  }
  if (it == map_.end() && map_.size() >= cfg_.trackers) expire(now, true);
  if (it == map_.end() && map_.size() >= cfg_.trackers) {
    ++st_.max_trackers_reached;
    return false;
  }
  if (frags_ >= cfg_.max_frags || bytes_ + need > cfg_.memcap) {
    expire(now, true);
    it = map_.find(k);  // the datagram itself may have expired
    if (frags_ >= cfg_.max_frags) {
      ++st_.max_frags_reached;
      return false;
    }
    if (bytes_ + need > cfg_.memcap) {
      ++st_.memcap_reached;
      return false;
    }
  }
  if (it == map_.end()) {
    if (map_.empty()) oldest_ts_ns_ = now;
    it = map_.emplace(k, Tracker{}).first;
    st_.peak_trackers = std::max<uint64_t>(st_.peak_trackers, map_.size());
  }
  Tracker& t = it->second;
  for (const Frag& o : t.frags)
    if (off < o.off + o.len && o.off < off + len) {
      ++st_.overlaps;
      event_ = v6 ? DecodeEvent::ipv6_frag_overlap : DecodeEvent::ipv4_frag_overlap;
      break;
    }
  Frag fr{};
  fr.off = off;
  fr.len = len;
  fr.more = more;
  fr.seq = uint32_t(t.frags.size());
  fr.data = t.bytes.size();
  t.bytes.insert(t.bytes.end(), f + data_start, f + end);
  if (off == 0) {
    fr.prefix = t.bytes.size();
    fr.prefix_len = prefix_len;
    fr.nh_field = nh_field;
    fr.next = next;
    fr.l3 = uint16_t(l3);
    t.bytes.insert(t.bytes.end(), f, f + prefix_len);
  }
  // Kept by offset (then arrival): the completeness check is a linear walk.
  t.frags.insert(std::upper_bound(t.frags.begin(), t.frags.end(), off, [](uint32_t o, const Frag& f) { return o < f.off; }), fr);
  ++frags_;
  bytes_ += need;
  t.last_ts_ns = now;
  t.seen_last |= !more;
  t.has_first |= off == 0;
  if (!t.seen_last || !t.has_first) return false;
  const int r = complete(t, v6, rec, fmt, out);
  if (r > 0) ++(v6 ? st_.ipv6_reassembled : st_.ipv4_reassembled);
  if (r != 0) release(it);
  return r > 0;
}

// Assembles the datagram when every byte up to its end is held: 1 when appended to `out`, 0 while
// bytes are missing, -1 when it can never be built.
int Defragmenter::complete(Tracker& t, bool v6, const uint8_t* rec, RecordFormat fmt, std::vector<uint8_t>& out) {
  // Held bytes from 0 to the end of the first fragment without "more fragments" (and of any other
  // fragment at its offset), with no hole. t.frags is in offset order.
  uint32_t len = 0, last_off = 0, used = 0;
  const uint32_t n = uint32_t(t.frags.size());
  bool last = false;
  for (; used < n; ++used) {
    const Frag& f = t.frags[used];
    if (last && f.off > last_off) break;
    if (f.off > len) return 0;
    len = std::max(len, f.off + f.len);
    if (!f.more && !last) last = true, last_off = f.off;
  }
  if (!last) return 0;
  // Each byte to the fragment the policy prefers, the fragments in use taken in arrival order.
  by_seq_.resize(used);
  std::iota(by_seq_.begin(), by_seq_.end(), 0u);
  std::sort(by_seq_.begin(), by_seq_.end(), [&](uint32_t a, uint32_t b) { return t.frags[a].seq < t.frags[b].seq; });
  owner_.assign(len, kNone);
  for (const uint32_t i : by_seq_) {
    const Frag& f = t.frags[i];
    for (uint32_t b = f.off; b < f.off + f.len; ++b) {
      const uint32_t o = owner_[b];
      if (o == kNone || later_wins(cfg_.policy, f.off, f.off + f.len, t.frags[o].off, t.frags[o].off + t.frags[o].len))
        owner_[b] = i;
    }
  }
  // The header comes from the first fragment holding byte 0 (the latest offset-0 one when the
  // datagram has no data).
  uint32_t head = len ? owner_[0] : kNone;
  if (head == kNone)
    for (const uint32_t i : by_seq_)
      if (t.frags[i].off == 0) head = i;
  const Frag& hf = t.frags[head];
  const uint32_t ip_len = v6 ? hf.prefix_len - hf.l3 - 40 + len : hf.prefix_len - hf.l3 + len;
  if (ip_len > 65535) {
    ++st_.too_large;
    event_ = v6 ? DecodeEvent::ipv6_frag_pkt_too_large : DecodeEvent::ipv4_frag_pkt_too_large;
    return -1;
  }
  const size_t base = out.size();
  const uint32_t frame = hf.prefix_len + len;
  out.resize(base + kRecordHeaderBytes + frame);
  uint8_t* r = out.data() + base;
  std::memcpy(r, rec, 8);  // the completing fragment's capture time, as written
  put32(r + 8, frame, fmt.swapped);
  put32(r + 12, frame, fmt.swapped);
  uint8_t* fr = r + kRecordHeaderBytes;
  std::memcpy(fr, t.bytes.data() + hf.prefix, hf.prefix_len);
  uint8_t* d = fr + hf.prefix_len;
  for (uint32_t b = 0; b < len; ++b) {
    const Frag& f = t.frags[owner_[b]];
    d[b] = t.bytes[f.data + (b - f.off)];
  }
  uint8_t* ip = fr + hf.l3;
  if (!v6) {
    // Total length and fragment field rewritten; the checksum updated for both (RFC 1624), so a
    // header that was bad stays bad.
    const uint32_t old_len = load_be16(ip + 2), old_frag = load_be16(ip + 6);
    put16be(ip + 2, ip_len);
    put16be(ip + 6, 0);
    uint32_t s = (~uint32_t(load_be16(ip + 10)) & 0xffff) + (~old_len & 0xffff) + ip_len + (~old_frag & 0xffff);
    s = (s & 0xffff) + (s >> 16);
    s = (s & 0xffff) + (s >> 16);
    put16be(ip + 10, ~s & 0xffff);
  } else {
    put16be(ip + 4, ip_len);
    fr[hf.nh_field] = hf.next;
  }
  return 1;
}

}  // namespace gaspp
