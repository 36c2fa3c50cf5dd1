// The reference reassembler (reference_reassembler.hpp) checked on its own: table-driven cases
// for every initial sequence number the stream-engine tests use (0, 1, 2^32-1, 2^32-10), and a
// property: random streams, segmented at random, shuffled, duplicated and partly overlapping
// (with consistent data) come back exactly; and on real captures it reproduces PcapPlusPlus's
// expected reassembled data.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "capture/capture_file.hpp"
#include "decode/decoder.hpp"
#include "reference_reassembler.hpp"
#include "test_support.hpp"

using gaspp::test::ReferenceReassembler;

namespace {

constexpr uint32_t kIsns[] = {0u, 1u, 0xffffffffu, 0xfffffff6u};

struct Seg {
  uint32_t off;  // stream offset (seq = isn + 1 + off)
  std::string data;
};

struct Case {
  const char* name;
  std::vector<Seg> segs;
  bool close;
  std::string want;
  std::vector<ReferenceReassembler::Gap> gaps;
  std::vector<uint64_t> conflicts;
};

const Case kCases[] = {
    {"in order", {{0, "abc"}, {3, "def"}}, false, "abcdef", {}, {}},
    {"out of order", {{3, "def"}, {0, "abc"}}, false, "abcdef", {}, {}},
    {"hole waits", {{0, "abc"}, {6, "ghi"}}, false, "abc", {}, {}},
    {"exact retransmission", {{0, "abc"}, {0, "abc"}, {3, "def"}}, false, "abcdef", {}, {}},
    {"partial overlap, same data", {{0, "abcd"}, {2, "cdef"}}, false, "abcdef", {}, {}},
    {"overlap, different data: first wins", {{0, "abcd"}, {2, "XXef"}}, false, "abcdef", {}, {2, 3}},
    {"pending first copy wins", {{4, "efgh"}, {4, "XXXXij"}, {0, "abcd"}}, false, "abcdefghij", {}, {4, 5, 6, 7}},
    {"straddling segment delivers its new tail", {{0, "abc"}, {1, "bcdef"}}, false, "abcdef", {}, {}},
    {"gap skipped at close", {{0, "abc"}, {6, "ghi"}}, true, "abcghi", {{3, 3}}, {}},
    {"two gaps", {{0, "a"}, {3, "d"}, {7, "h"}}, true, "adh", {{1, 2}, {4, 3}}, {}},
};

}  // namespace

TEST(ReferenceReassembler, TableForEveryIsn) {
  for (const Case& c : kCases)
    for (uint32_t isn : kIsns) {
      SCOPED_TRACE(std::string(c.name) + ", isn " + std::to_string(isn));
      ReferenceReassembler r(isn);
      for (const Seg& s : c.segs) r.segment(isn + 1 + s.off, s.data);
      if (c.close) r.close();
      EXPECT_EQ(r.bytes(), c.want);
      EXPECT_EQ(r.gaps(), c.gaps);
      EXPECT_EQ(r.conflicts(), c.conflicts);
    }
}

TEST(ReferenceReassembler, LateBytesAfterAGapAreCountedNotDelivered) {
  ReferenceReassembler r(1000);
  r.segment(1001, "abc");
  r.segment(1007, "ghi");
  r.close();
  r.segment(1004, "def");
  EXPECT_EQ(r.bytes(), "abcghi");
  EXPECT_EQ(r.late_bytes(), 3u);
}

TEST(ReferenceReassembler, RandomSegmentationReorderingAndDuplicatesGiveTheStreamBack) {
  std::mt19937 rng(11);
  for (int round = 0; round < 200; ++round) {
    const uint32_t isn = round < 4 ? kIsns[round] : uint32_t(rng());
    std::string stream(1 + rng() % 5000, '\0');
    for (char& ch : stream) ch = char(rng());
    std::vector<Seg> segs;
    for (uint32_t off = 0; off < stream.size();) {
      const uint32_t len = std::min<uint32_t>(1 + rng() % 300, uint32_t(stream.size()) - off);
      segs.push_back({off, stream.substr(off, len)});
      if (rng() % 5 == 0) segs.push_back({off, stream.substr(off, len)});  // duplicate
      if (rng() % 5 == 0 && off + len < stream.size()) {                   // overlap with the next bytes
        const uint32_t o2 = off + len / 2, l2 = std::min<uint32_t>(len, uint32_t(stream.size()) - o2);
        segs.push_back({o2, stream.substr(o2, l2)});
      }
      off += len;
    }
    // Shuffle within a window, as a network reorders (and sometimes far).
    for (size_t k = 0; k + 1 < segs.size(); ++k)
      if (rng() % 3 == 0) std::swap(segs[k], segs[std::min(segs.size() - 1, k + 1 + rng() % 8)]);
    ReferenceReassembler r(isn);
    for (const Seg& s : segs) r.segment(isn + 1 + s.off, s.data);
    SCOPED_TRACE("round " + std::to_string(round) + ", isn " + std::to_string(isn));
    ASSERT_EQ(r.bytes().size(), stream.size());
    ASSERT_EQ(r.bytes(), stream);
    EXPECT_TRUE(r.gaps().empty());
    EXPECT_TRUE(r.conflicts().empty());
  }
}

// On real captures: the reference, fed each TCP connection's payloads in capture order (one
// reassembler per direction, bytes appended to the connection's output as they become
// deliverable, as PcapPlusPlus's own test writes them), reproduces PcapPlusPlus's expected
// reassembled data. This pins the oracle's semantics before the stream engine is compared with it.

namespace {

std::map<std::string, std::string> connections_via_reference(const std::filesystem::path& pcap) {
  using namespace gaspp;
  const CaptureFile cap = CaptureFile::open(pcap.string());
  RecordWalker w(cap);
  RecordInfo r;
  DecodedPacket p;
  std::map<std::string, ReferenceReassembler> dir;
  std::map<std::string, std::string> conn;
  while (w.next(r)) {
    decode_record(cap.data() + r.offset, cap.size() - r.offset, cap.format(), cap.link(), p);
    if (p.l4[0] != uint8_t(L4::tcp) || p.malformed[0]) continue;
    auto ep = [&](const uint32_t* a, uint16_t port) {
      std::ostringstream o;
      o << std::hex << a[0] << ':' << a[1] << ':' << a[2] << ':' << a[3] << '.' << std::dec << port;
      return o.str();
    };
    const std::string s = ep(p.src_ip, p.sport[0]), d = ep(p.dst_ip, p.dport[0]);
    const std::string key = s + ">" + d, ckey = std::min(s, d) + "|" + std::max(s, d);
    const uint32_t len = captured_payload(p);
    auto it = dir.find(key);
    if (it == dir.end()) {
      if (!(p.tcp_flags[0] & 2) && len == 0) continue;  // nothing to start from yet
      it = dir.emplace(key, ReferenceReassembler(p.tcp_flags[0] & 2 ? p.tcp_seq[0] : p.tcp_seq[0] - 1)).first;
    }
    if (len == 0) continue;
    const size_t before = it->second.bytes().size();
    const uint8_t* f = cap.data() + r.offset + kRecordHeaderBytes;
    it->second.segment(p.tcp_seq[0], std::string(reinterpret_cast<const char*>(f + p.payload_off[0]), len));
    conn[ckey] += it->second.bytes().substr(before);
  }
  return conn;
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

}  // namespace

TEST(ReferenceReassembler, ReproducesPcapPlusPlusExpectedData) {
  const auto dir = gaspp::test::shared_data_dir() / "pcaps" / "pcapplusplus";
  GASPP_REQUIRE_PATH(dir);
  {
    const auto conns = connections_via_reference(dir / "one_tcp_stream.pcap");
    ASSERT_EQ(conns.size(), 1u);
    EXPECT_EQ(conns.begin()->second, slurp(dir / "one_tcp_stream_output.txt"));
  }
  const auto conns = connections_via_reference(dir / "three_http_streams.pcap");
  ASSERT_EQ(conns.size(), 3u);
  for (int k = 1; k <= 3; ++k) {
    const std::string want = slurp(dir / ("three_http_streams_conn_" + std::to_string(k) + "_output.txt"));
    int matches = 0;
    for (const auto& [key, data] : conns) matches += data == want;
    EXPECT_EQ(matches, 1) << "connection " << k;
  }
}
