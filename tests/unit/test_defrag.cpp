// IP fragment reassembly (defrag/defrag.hpp) against its oracles: the Sturges/Novak overlap
// pattern with the result each target-based policy is published to give (the expectations of
// Suricata's defrag unit tests), the reassembled packets suricata-verify's defrag tests expect
// (test.yaml `packet`), and hand-computed headers; then the limits, and the prefilter against the
// decoder on every shared capture.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "defrag/defrag.hpp"
#include "test_support.hpp"

namespace gaspp {
namespace {

using Bytes = std::vector<uint8_t>;

// The IPv4 header checksum computed from scratch (an oracle for the incremental update).
uint16_t ip4_checksum(const uint8_t* h, uint32_t len) {
  uint32_t s = 0;
  for (uint32_t i = 0; i < len; i += 2)
    if (i != 10) s += uint32_t(h[i]) << 8 | h[i + 1];
  while (s >> 16) s = (s & 0xffff) + (s >> 16);
  return uint16_t(~s);
}

// Ethernet (optionally one VLAN tag) + IPv4 fragment of `data` at byte offset `off`.
Bytes frag4(uint16_t id, uint32_t off, bool more, const Bytes& data, uint8_t proto = 1, int vlan = -1) {
  Bytes f = {2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1};
  if (vlan >= 0) f.insert(f.end(), {0x81, 0x00, uint8_t(vlan >> 8), uint8_t(vlan)});
  f.insert(f.end(), {0x08, 0x00});
  const size_t ip = f.size();
  const uint32_t tot = 20 + uint32_t(data.size());
  const uint16_t fo = uint16_t(off / 8) | (more ? 0x2000 : 0);
  f.insert(f.end(), {0x45, 0, uint8_t(tot >> 8), uint8_t(tot), uint8_t(id >> 8), uint8_t(id), uint8_t(fo >> 8), uint8_t(fo),
                     64, proto, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2});
  const uint16_t c = ip4_checksum(f.data() + ip, 20);
  f[ip + 10] = uint8_t(c >> 8);
  f[ip + 11] = uint8_t(c);
  f.insert(f.end(), data.begin(), data.end());
  return f;
}

// Ethernet + IPv6 (optionally a hop-by-hop header before the fragment header) fragment.
Bytes frag6(uint32_t id, uint32_t off, bool more, const Bytes& data, uint8_t next = 58, bool hop_by_hop = false) {
  Bytes f = {2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x86, 0xdd};
  const uint32_t plen = (hop_by_hop ? 8 : 0) + 8 + uint32_t(data.size());
  f.insert(f.end(), {0x60, 0, 0, 0, uint8_t(plen >> 8), uint8_t(plen), uint8_t(hop_by_hop ? 0 : 44), 64});
  for (int k = 0; k < 32; ++k) f.push_back(k == 15 ? 1 : k == 31 ? 2 : 0);
  if (hop_by_hop) f.insert(f.end(), {44, 0, 1, 4, 0, 0, 0, 0});  // PadN option filling its 8 bytes
  const uint16_t fo = uint16_t(off) | (more ? 1 : 0);
  f.insert(f.end(), {next, 0, uint8_t(fo >> 8), uint8_t(fo), uint8_t(id >> 24), uint8_t(id >> 16), uint8_t(id >> 8), uint8_t(id)});
  f.insert(f.end(), data.begin(), data.end());
  return f;
}

// A record (little-endian, microseconds) of `frame`.
Bytes record(const Bytes& frame, uint32_t sec = 1) {
  Bytes r(16, 0);
  const uint32_t v[4] = {sec, 0, uint32_t(frame.size()), uint32_t(frame.size())};
  for (int k = 0; k < 4; ++k)
    for (int b = 0; b < 4; ++b) r[4 * k + b] = uint8_t(v[k] >> (8 * b));
  r.insert(r.end(), frame.begin(), frame.end());
  return r;
}

// Feeds the frames in order; returns the frames of the datagrams completed (and after which input).
struct Fed {
  std::vector<Bytes> frames;
  std::vector<size_t> after;
};
Fed feed(Defragmenter& d, const std::vector<Bytes>& frames, uint32_t sec_step = 0) {
  Fed out;
  for (size_t i = 0; i < frames.size(); ++i) {
    const Bytes r = record(frames[i], 1 + uint32_t(i) * sec_step);
    Bytes o;
    if (d.add(r.data(), r.size(), RecordFormat{0, 0}, LinkType::ethernet, o)) {
      EXPECT_GE(o.size(), 16u);
      out.frames.emplace_back(o.begin() + 16, o.end());
      out.after.push_back(i);
    }
  }
  return out;
}

Bytes fill(char c, size_t n) { return Bytes(n, uint8_t(c)); }

// The Sturges/Novak pattern: nine original fragments, then seven overlapping ones, then the last.
struct NovakFrag { uint32_t off, len; char c; };
constexpr NovakFrag kNovak[] = {{0, 24, 'A'},  {32, 16, 'B'},  {48, 24, 'C'},  {80, 8, 'D'},   {104, 16, 'E'}, {120, 24, 'F'},
                                {144, 16, 'G'}, {160, 16, 'H'}, {176, 8, 'I'},  {8, 32, 'J'},   {48, 24, 'K'},  {72, 24, 'L'},
                                {96, 24, 'M'},  {128, 8, 'N'},  {152, 8, 'O'},  {160, 8, 'P'},  {176, 16, 'Q'}};

TEST(Defrag, SturgesNovakOverlapsPerPolicy) {
  // Each letter stands for 8 bytes of the fragment that wins them (Suricata's expectations).
  const std::map<DefragPolicy, std::string> expected = {
      {DefragPolicy::bsd, "AAAJJBCCCLLLMMMFFFGGHHIQ"},     {DefragPolicy::linux, "AAAJJBKKKLLLMMMFFFGGPHQQ"},
      {DefragPolicy::windows, "AAAJBBCCCLLLMEEFFFGGHHIQ"}, {DefragPolicy::solaris, "AAAJBBCCCLLLMMMFFFGGHHIQ"},
      {DefragPolicy::first, "AAAJBBCCCLDLMEEFFFGGHHIQ"},   {DefragPolicy::last, "AJJJJBKKKLLLMMMFNFGOPHQQ"}};
  for (const bool v6 : {false, true})
    for (const auto& [pol, want] : expected) {
      SCOPED_TRACE(std::string(defrag_policy_name(pol)) + (v6 ? " ipv6" : " ipv4"));
      DefragConfig c;
      c.policy = pol;
      Defragmenter d(c);
      std::vector<Bytes> frames;
      for (size_t i = 0; i < std::size(kNovak); ++i) {
        const bool more = i + 1 < std::size(kNovak);
        const Bytes data = fill(kNovak[i].c, kNovak[i].len);
        frames.push_back(v6 ? frag6(7, kNovak[i].off, more, data) : frag4(7, kNovak[i].off, more, data));
      }
      const Fed out = feed(d, frames);
      ASSERT_EQ(out.frames.size(), 1u);
      EXPECT_EQ(out.after[0], std::size(kNovak) - 1);
      const Bytes& f = out.frames[0];
      const size_t hdr = 14 + (v6 ? 40 : 20);
      ASSERT_EQ(f.size(), hdr + 192);
      std::string got;
      for (size_t b = 0; b < 192; b += 8) got += char(f[hdr + b]);
      EXPECT_EQ(got, want);
      EXPECT_GT(d.stats().overlaps, 0u);
      EXPECT_EQ(d.trackers(), 0u);
      EXPECT_EQ(d.bytes_held(), 0u);
    }
}

// Suricata's BSD cases of a later fragment overlapping the start of an earlier one, and of
// fragments arriving after the one without "more fragments".
TEST(Defrag, BsdOrderCases) {
  struct Case { std::vector<NovakFrag> frags; std::vector<bool> more; std::string want; };
  const Case cases[] = {
      {{{24, 16, 'A'}, {8, 16, 'B'}, {16, 16, 'C'}, {0, 8, 'D'}}, {false, true, true, true}, "DBBCA"},
  };
  for (const Case& k : cases) {
    Defragmenter d(DefragConfig{});
    std::vector<Bytes> frames;
    for (size_t i = 0; i < k.frags.size(); ++i) frames.push_back(frag4(0x96, k.frags[i].off, k.more[i], fill(k.frags[i].c, k.frags[i].len)));
    const Fed out = feed(d, frames);
    ASSERT_EQ(out.frames.size(), 1u);
    std::string got;
    for (size_t b = 34; b < out.frames[0].size(); b += 8) got += char(out.frames[0][b]);
    EXPECT_EQ(got, k.want);
  }
  // Byte-level: the later fragment at 8 starts before the one at 16 and wins 16..23.
  Defragmenter d(DefragConfig{});
  const auto s = [](const char* t) { return Bytes(t, t + std::strlen(t)); };
  const Fed out = feed(d, {frag4(6, 16, true, s("AABBCCDDAABBDDCC")), frag4(6, 8, true, s("AACCBBDDAACCDDBB")),
                           frag4(6, 0, true, s("ZZZZZZZZ")), frag4(6, 32, false, s("DDCCBBAA"))});
  ASSERT_EQ(out.frames.size(), 1u);
  EXPECT_EQ(std::string(out.frames[0].begin() + 34, out.frames[0].end()), "ZZZZZZZZAACCBBDDAACCDDBBAABBDDCCDDCCBBAA");
}

TEST(Defrag, HeadersOfTheReassembledDatagram) {
  // IPv4 behind a VLAN tag, out of order: total length, fragment field and checksum rewritten.
  {
    Defragmenter d(DefragConfig{});
    Bytes payload(1000);
    for (size_t i = 0; i < payload.size(); ++i) payload[i] = uint8_t(i * 7);
    const Bytes a(payload.begin(), payload.begin() + 504), b(payload.begin() + 504, payload.end());
    const Fed out = feed(d, {frag4(0x1234, 504, false, b, 17, 42), frag4(0x1234, 0, true, a, 17, 42)});
    ASSERT_EQ(out.frames.size(), 1u);
    const Bytes& f = out.frames[0];
    ASSERT_EQ(f.size(), 18 + 20 + 1000u);
    const uint8_t* ip = f.data() + 18;
    EXPECT_EQ(load_be16(ip + 2), 1020);
    EXPECT_EQ(load_be16(ip + 6), 0);
    EXPECT_EQ(load_be16(ip + 10), ip4_checksum(ip, 20));
    EXPECT_TRUE(std::equal(payload.begin(), payload.end(), f.begin() + 38));
    EXPECT_EQ(d.stats().ipv4_reassembled, 1u);
  }
  // IPv6 with a hop-by-hop header before the fragment header: it stays, names the fragment
  // header's next header, and the payload length counts it.
  {
    Defragmenter d(DefragConfig{});
    const Fed out = feed(d, {frag6(99, 0, true, fill('x', 16), 17, true), frag6(99, 16, false, fill('y', 8), 17, true)});
    ASSERT_EQ(out.frames.size(), 1u);
    const Bytes& f = out.frames[0];
    ASSERT_EQ(f.size(), 14 + 40 + 8 + 24u);
    EXPECT_EQ(f[14 + 6], 0);       // hop-by-hop still first
    EXPECT_EQ(f[14 + 40], 17);     // and it now names UDP
    EXPECT_EQ(load_be16(f.data() + 14 + 4), 8 + 24);
    EXPECT_EQ(std::string(f.begin() + 62, f.end()), std::string(16, 'x') + std::string(8, 'y'));
    EXPECT_EQ(d.stats().ipv6_reassembled, 1u);
  }
  // A destination-options header after the fragment header, cut by the fragmentation (an evasion
  // Suricata sees through): the first fragment's chain does not fit, the datagram's does.
  {
    Defragmenter d(DefragConfig{});
    Bytes opts = {17, 7, 1, 52};  // next UDP, 64 bytes, one PadN filling them
    opts.resize(64, 0);
    const Bytes head(opts.begin(), opts.begin() + 16);
    Bytes tail(opts.begin() + 16, opts.end());
    tail.insert(tail.end(), {0, 53, 0, 53, 0, 12, 0, 0, 'd', 'a', 't', 'a'});
    const Fed out = feed(d, {frag6(11, 0, true, head, 60), frag6(11, 16, false, tail, 60)});
    ASSERT_EQ(out.frames.size(), 1u);
    EXPECT_EQ(out.frames[0].size(), 14 + 40 + 64 + 12u);
    EXPECT_EQ(out.frames[0][14 + 6], 60);
    DecodedPacket p;
    const Bytes r = record(out.frames[0]);
    decode_record(r.data(), r.size(), RecordFormat{0, 0}, LinkType::ethernet, p);
    EXPECT_EQ(p.malformed[0], 0);
    EXPECT_EQ(p.l4[0], uint8_t(L4::udp));
    EXPECT_EQ(p.dport[0], 53);
  }
  // An IPv6 atomic fragment (offset 0, no more fragments; RFC 6946) is no fragment: it is decoded
  // past its fragment header as it stands, with Suricata's ipv6.exthdr_useless_fh, and the
  // defragmenter never sees it.
  {
    Defragmenter d(DefragConfig{});
    const Bytes frame = frag6(5, 0, false, fill('q', 12), 17);
    const Fed out = feed(d, {frame});
    EXPECT_TRUE(out.frames.empty());
    EXPECT_EQ(d.trackers(), 0u);
    DecodedPacket p;
    const Bytes r = record(frame);
    decode_record(r.data(), r.size(), RecordFormat{0, 0}, LinkType::ethernet, p);
    EXPECT_EQ(p.ip_frag[0], 0);
    EXPECT_EQ(p.l4[0], uint8_t(L4::udp));
    EXPECT_EQ(p.events[0], uint8_t(DecodeEvent::ipv6_exthdr_useless_fh));
  }
  // Different VLANs, ids or addresses never mix.
  {
    Defragmenter d(DefragConfig{});
    const Fed out = feed(d, {frag4(1, 0, true, fill('a', 8), 1, 10), frag4(1, 8, false, fill('b', 8), 1, 11),
                             frag4(2, 8, false, fill('c', 8), 1, 10)});
    EXPECT_TRUE(out.frames.empty());
    EXPECT_EQ(d.trackers(), 3u);
    d.finish();
    EXPECT_EQ(d.stats().incomplete_at_end, 3u);
  }
}

TEST(Defrag, LimitsAreCountedAndFreed) {
  struct Case {
    const char* name;
    DefragConfig cfg;
    uint32_t sec_step;
    uint64_t DefragStats::*counter;
  };
  DefragConfig small_trackers;
  small_trackers.trackers = 2;
  DefragConfig few_frags;
  few_frags.max_frags = 2;
  DefragConfig tiny_memcap;
  tiny_memcap.memcap = 100;
  DefragConfig short_timeout;
  short_timeout.timeout_s = 1;
  const Case cases[] = {{"trackers", small_trackers, 0, &DefragStats::max_trackers_reached},
                        {"max-frags", few_frags, 0, &DefragStats::max_frags_reached},
                        {"memcap", tiny_memcap, 0, &DefragStats::memcap_reached},
                        {"timeout", short_timeout, 2, &DefragStats::timeouts}};
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    Defragmenter d(k.cfg);
    // Three datagrams' first halves, then their second halves: with the limit, not all complete.
    std::vector<Bytes> frames;
    for (uint16_t id = 1; id <= 3; ++id) frames.push_back(frag4(id, 0, true, fill('a', 48)));
    for (uint16_t id = 1; id <= 3; ++id) frames.push_back(frag4(id, 48, false, fill('b', 48)));
    const Fed out = feed(d, frames, k.sec_step);
    EXPECT_LT(out.frames.size(), 3u);
    EXPECT_GT(d.stats().*k.counter, 0u);
    EXPECT_LE(d.trackers(), k.cfg.trackers);
    EXPECT_LE(d.bytes_held(), k.cfg.memcap);
  }
  // A datagram that timed out is not merged with a later one reusing its identification: the
  // stale first half is dropped (a timeout) and the new halves complete on their own.
  {
    DefragConfig c;
    c.timeout_s = 10;
    Defragmenter d(c);
    const auto r = [&](const Bytes& f, uint32_t sec) { return record(f, sec); };
    Bytes o;
    const Bytes stale = r(frag4(4, 0, true, fill('s', 16)), 1), a = r(frag4(4, 0, true, fill('n', 16)), 30),
                b = r(frag4(4, 16, false, fill('m', 8)), 30);
    EXPECT_FALSE(d.add(stale.data(), stale.size(), RecordFormat{0, 0}, LinkType::ethernet, o));
    EXPECT_FALSE(d.add(a.data(), a.size(), RecordFormat{0, 0}, LinkType::ethernet, o));
    EXPECT_TRUE(d.add(b.data(), b.size(), RecordFormat{0, 0}, LinkType::ethernet, o));
    EXPECT_EQ(std::string(o.begin() + 16 + 34, o.end()), std::string(16, 'n') + std::string(8, 'm'));
    EXPECT_EQ(d.stats().timeouts, 1u);
  }
  // Capture time passing without fragments times a datagram out too (the batcher ticks it).
  {
    DefragConfig c;
    c.timeout_s = 10;
    Defragmenter d(c);
    feed(d, {frag4(5, 0, true, fill('s', 16))});
    d.tick(5'000'000'000ull);
    EXPECT_EQ(d.trackers(), 1u);
    d.tick(20'000'000'000ull);
    EXPECT_EQ(d.trackers(), 0u);
    EXPECT_EQ(d.stats().timeouts, 1u);
    EXPECT_EQ(d.bytes_held(), 0u);
  }
  // Without limits, the same input completes all three.
  Defragmenter d(DefragConfig{});
  std::vector<Bytes> frames;
  for (uint16_t id = 1; id <= 3; ++id) frames.push_back(frag4(id, 0, true, fill('a', 48)));
  for (uint16_t id = 1; id <= 3; ++id) frames.push_back(frag4(id, 48, false, fill('b', 48)));
  EXPECT_EQ(feed(d, frames).frames.size(), 3u);
  // Past 65,535 bytes: ignored, counted. Cut by the snap length: ignored, counted.
  Defragmenter big(DefragConfig{});
  EXPECT_TRUE(feed(big, {frag4(9, 65528, false, fill('z', 16))}).frames.empty());
  EXPECT_EQ(big.stats().too_large, 1u);
  Defragmenter cut(DefragConfig{});
  Bytes f = frag4(9, 0, true, fill('z', 64));
  Bytes r = record(f);
  r.resize(r.size() - 10);
  r[8] = uint8_t(f.size() - 10);  // captured length
  Bytes o;
  EXPECT_FALSE(cut.add(r.data(), r.size(), RecordFormat{0, 0}, LinkType::ethernet, o));
  EXPECT_EQ(cut.stats().truncated, 1u);
}

Bytes base64(const std::string& s) {
  Bytes out;
  uint32_t acc = 0;
  int bits = 0;
  for (const char ch : s) {
    const char* tbl = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const char* p = std::strchr(tbl, ch);
    if (!p || ch == 0) continue;  // '=' padding
    acc = acc << 6 | uint32_t(p - tbl);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(uint8_t(acc >> bits));
    }
  }
  return out;
}

// suricata-verify's defrag tests: the packet their alert carries is the reassembled one.
TEST(Defrag, SuricataVerifyReassembledPackets) {
  const auto dir = test::shared_data_dir() / "detect" / "suricata-verify" / "defrag";
  GASPP_REQUIRE_PATH(dir);
  int checked = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const YAML::Node y = YAML::LoadFile((e.path() / "test.yaml").string());
    std::string packet;
    for (const auto& c : y["checks"])
      if (c["filter"] && c["filter"]["match"]["packet"]) packet = c["filter"]["match"]["packet"].as<std::string>();
    if (packet.empty()) continue;
    std::filesystem::path pcap;
    for (const auto& f : std::filesystem::directory_iterator(e.path()))
      if (f.path().extension() == ".pcap") pcap = f.path();
    const CaptureFile cap = CaptureFile::open(pcap.string());
    SCOPED_TRACE(e.path().filename().string());
    Defragmenter d(DefragConfig{});
    RecordWalker w(cap);
    RecordInfo r{};
    std::vector<Bytes> got;
    while (w.next(r)) {
      Bytes o;
      if (d.add(cap.data() + r.offset, cap.size() - r.offset, cap.format(), cap.link(), o)) got.emplace_back(o.begin() + 16, o.end());
    }
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0], base64(packet));
    ++checked;
  }
  EXPECT_GE(checked, 2);  // one over Ethernet, one over PPP (linktype 9)
}

// may_be_fragment never says no to a fragment the decoder sees outside a tunnel: every record of
// every shared capture (the detection tests' included: some are fragmented), and built frames.
TEST(Defrag, PrefilterMissesNoFragment) {
  const auto pcaps = test::shared_data_dir() / "pcaps", detect = test::shared_data_dir() / "detect";
  GASPP_REQUIRE_PATH(pcaps);
  GASPP_REQUIRE_PATH(detect);
  uint64_t records = 0, fragments = 0, candidates = 0;
  std::vector<std::filesystem::path> files;
  for (const auto& dir : {pcaps, detect})
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) files.push_back(e.path());
  for (const auto& path : files) {
    const std::filesystem::directory_entry e(path);
    const auto ext = e.path().extension();
    if (!e.is_regular_file() || (ext != ".pcap" && ext != ".pcapng" && ext != ".cap")) continue;
    std::optional<CaptureFile> opened;
    try {
      opened.emplace(CaptureFile::open(e.path().string()));
    } catch (const std::exception&) {
      continue;  // not a capture (or one the capture tests cover)
    }
    const CaptureFile& cap = *opened;
    RecordWalker w(cap);
    RecordInfo r{};
    DecodedPacket p;
    while (w.next(r)) {
      const uint8_t* rec = cap.data() + r.offset;
      decode_record(rec, cap.size() - r.offset, cap.format(), cap.link(), p);
      const bool may = may_be_fragment(rec + 16, r.cap_len, cap.link());
      ++records;
      candidates += may;
      if ((p.ip_frag[0] & kFragIsFragment) && p.tunnel_depth[0] == 0) {
        ++fragments;
        EXPECT_TRUE(may) << e.path() << " record " << records;
      }
    }
  }
  const Bytes frames[] = {frag4(1, 0, true, fill('a', 8)), frag4(1, 8, false, fill('a', 8), 6, 3),
                          frag6(1, 0, true, fill('a', 8)), frag6(1, 8, false, fill('a', 8), 6, true)};
  for (const Bytes& f : frames) EXPECT_TRUE(may_be_fragment(f.data(), uint32_t(f.size()), LinkType::ethernet));
  const Bytes plain = test::tcp4_frame(1, 10);
  EXPECT_FALSE(may_be_fragment(plain.data(), uint32_t(plain.size()), LinkType::ethernet));
  EXPECT_GT(records, 10000u);
  EXPECT_GE(fragments, 4u);  // suricata-verify's fragmented captures
  EXPECT_LT(candidates, records / 4) << "the prefilter should rule out most packets";
  std::printf("prefilter: %llu records, %llu candidates, %llu fragments\n", (unsigned long long)records,
              (unsigned long long)candidates, (unsigned long long)fragments);
}

}  // namespace
}  // namespace gaspp
