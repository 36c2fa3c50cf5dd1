// The batched pipeline against a reference: decoding each record directly on the host, one by one.
// Whatever the backend, batch size, batch limits and transfer path, every packet must come out
// with the same decoded fields and the totals must add up.
// That reference is the product's own decoder; two oracles independent of it check what the
// decoding says: a capture built byte by byte here whose every packet's fields and the run's
// counters are written by hand (HandBuiltCaptureDecodesAsBuilt), and tshark's fields and counts
// for the generated captures the reference tests use (GeneratedCapturesMatchTshark; needs tshark,
// fails under CI without it).
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <atomic>
#include <chrono>
#include <thread>

#include "core/thread_pool.hpp"
#include "tools/gen/generator.hpp"
#include "pipeline/pipeline.hpp"
#include "output/decode_rows.hpp"
#include "test_support.hpp"

using namespace gaspp;

namespace {

CaptureFile generated(GenMode mode, uint64_t packets, double ipv6, double vlan, uint64_t seed = 3) {
  GenConfig g;
  g.mode = mode;
  g.packets = packets;
  g.ipv6_share = ipv6;
  g.vlan_share = vlan;
  g.seed = seed;
  g.flows = 50;
  return test::generated_capture(g);
}

// The generated captures of the reference tests (tshark checks the same ones).
CaptureFile mix_capture() { return generated(GenMode::mix, 3000, 0.3, 0.3); }
CaptureFile http_capture() { return generated(GenMode::http, 5000, 0.5, 0.5); }
CaptureFile paths_capture() { return generated(GenMode::mix, 2000, 0.2, 0.2, 9); }

// Rows of the reference decode: each record decoded on its own, on the host.
std::vector<std::string> reference_rows(const CaptureFile& cap) {
  std::vector<std::string> rows;
  RecordWalker w(cap);
  RecordInfo r;
  DecodedPacket p;
  while (w.next(r)) {
    decode_record(cap.data() + r.offset, cap.size() - r.offset, cap.format(), cap.link(), p);
    std::string s;
    format_decode_row(rows.size() + 1, p, s);
    rows.push_back(s);
  }
  return rows;
}

struct Result {
  RunReport rep;
  std::vector<std::string> rows;
  std::vector<DecodedPacket> pkts;  // as the pipeline decoded them, in capture order
  std::vector<uint32_t> batch_sizes;
};

Result run(const CaptureFile& cap, BackendConfig bc, RunOptions ro) {
  Result res;
  auto be = test::make_backend(bc);
  ro.want_decoded = true;
  DecodedPacket p;
  res.rep = run_capture(cap, *be, ro, [&](const PacketBatch& b) {
    res.batch_sizes.push_back(b.count);
    DecodedView v = const_cast<PacketBatch&>(b).decoded.view();
    for (uint32_t i = 0; i < b.count; ++i) {
      load(v, i, p);
      std::string s;
      format_decode_row(b.first_index + i + 1, p, s);
      res.rows.push_back(s);
      res.pkts.push_back(p);
    }
  });
  return res;
}

void expect_same_rows(const std::vector<std::string>& got, const std::vector<std::string>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << "packet " << i + 1;
}

}  // namespace

TEST(Pipeline, MatchesReferenceForEveryBatchSize) {
  const CaptureFile cap = mix_capture();
  const auto want = reference_rows(cap);
  ASSERT_EQ(want.size(), 3000u);
  for (uint32_t n : {1u, 2u, 3u, 7u, 64u, 65536u}) {
    BackendConfig bc;
    bc.batch_packets = n;
    RunOptions ro;
    ro.policy.max_packets = n;
    Result r = run(cap, bc, ro);
    SCOPED_TRACE("batch " + std::to_string(n));
    expect_same_rows(r.rows, want);
    EXPECT_EQ(r.rep.totals.v[c_packets], 3000u);
    EXPECT_EQ(r.rep.passed + r.rep.dropped, 3000u);
    EXPECT_EQ(r.rep.batches, (3000 + n - 1) / n);
    EXPECT_EQ(r.rep.totals.v[c_l3_ipv4] + r.rep.totals.v[c_l3_ipv6], 3000u);
    EXPECT_EQ(r.rep.totals.v[c_l4_tcp] + r.rep.totals.v[c_l4_udp], 3000u);
    EXPECT_EQ(r.rep.totals.v[c_malformed], 0u);
  }
}

TEST(Pipeline, CountersEqualTheReferenceCounts) {
  const CaptureFile cap = http_capture();
  Counters want{};
  HostCounterSink sink{want};
  RecordWalker w(cap);
  RecordInfo r;
  DecodedPacket p;
  while (w.next(r)) {
    decode_record(cap.data() + r.offset, cap.size() - r.offset, cap.format(), cap.link(), p);
    count_packet(sink, p);
  }
  Result res = run(cap, {}, {});
  // Decode counters; flow counters have their own tests (test_flow.cpp).
  for (int k = 0; k <= c_undecoded_last_; ++k) EXPECT_EQ(res.rep.totals.v[k], want.v[k]) << "counter " << k;
  EXPECT_GT(want.v[c_vlan_tagged], 0u);
  EXPECT_GT(want.v[c_l3_ipv6], 0u);
}

TEST(Pipeline, BatchClosesAtTheByteLimit) {
  const CaptureFile cap = generated(GenMode::fixed, 100, 0, 0);  // 64-byte frames: 80 record bytes
  BackendConfig bc;
  RunOptions ro;
  ro.policy.max_bytes = 800;  // ten records
  Result r = run(cap, bc, ro);
  ASSERT_EQ(r.batch_sizes.size(), 10u);
  for (uint32_t s : r.batch_sizes) EXPECT_EQ(s, 10u);
}

TEST(Pipeline, BatchClosesAtTheCaptureTimeLimit) {
  test::PcapBuilder b(1, false, true);
  // Packets at t = 0, 0.4, 0.8, 1.2, 1.6 ... s: with a 1 s limit, batches of 3 (0, .4, .8), (1.2, 1.6, 2.0) ...
  for (int k = 0; k < 9; ++k) b.record(test::tcp4_frame(k, 0), 100 + (k * 400) / 1000, uint32_t((k * 400 % 1000) * 1000000));
  const CaptureFile cap = CaptureFile::from_memory(b.bytes(), "timed");
  RunOptions ro;
  ro.policy.timeout_ns = 1'000'000'000ull;
  Result r = run(cap, {}, ro);
  EXPECT_EQ(r.batch_sizes, (std::vector<uint32_t>{3, 3, 3}));
  ro.policy.timeout_ns = 0;
  r = run(cap, {}, ro);
  EXPECT_EQ(r.batch_sizes, (std::vector<uint32_t>{9}));
}

TEST(Pipeline, EveryTransferPathAgrees) {
  // On CUDA a file range is copied directly, compacted first, or only its heads are copied
  // (header-only slicing: gathered through the mapping by the GPU, on SMs of its own or sharing
  // every SM); on the CPU every setting reads the span in place. Either way the rows are the reference rows.
  const CaptureFile cap = paths_capture();
  const auto want = reference_rows(cap);
  struct Path {
    const char* name;
    uint32_t batch;
    int gather_sms;
  };
  for (const Path& path : {Path{"direct", 500, 0}, Path{"compacted", 500, 0}, Path{"sliced", 500, 0},
                           Path{"sliced", 2000, 0}, Path{"sliced", 500, -1}}) {
    const std::string p = path.name;
    BackendConfig bc;
    bc.batch_packets = path.batch;
    bc.force_compact = p == "compacted";
    bc.slice = p == "sliced" ? BackendConfig::Slice::on : BackendConfig::Slice::off;
    bc.gather_sms = path.gather_sms;
    RunOptions ro;
    ro.policy.max_packets = path.batch;
    Result r = run(cap, bc, ro);
    SCOPED_TRACE(p + " batch " + std::to_string(path.batch) + " gather_sms " + std::to_string(path.gather_sms));
    expect_same_rows(r.rows, want);
    if (test::backend_under_test() == "cuda") {
      if (p == "sliced") std::printf("  sliced, gather_sms %d: %s\n", path.gather_sms, r.rep.backend.c_str());
      // Sharing every SM is said as such; a partition either is made or its refusal is explained.
      if (path.gather_sms < 0) {
        EXPECT_EQ(r.rep.backend.find("gather"), std::string::npos) << r.rep.backend;
      } else if (p == "sliced") {
        EXPECT_NE(r.rep.backend.find(" gather "), std::string::npos) << r.rep.backend;
      }
      const uint64_t batches = 2000 / path.batch;
      const TransferStats& t = r.rep.transfer;
      EXPECT_EQ(p == "compacted" ? t.batches_compacted : p == "sliced" ? t.batches_sliced : t.batches_direct,
                batches);
      EXPECT_EQ(t.batches_direct + t.batches_compacted + t.batches_sliced, batches);
    }
  }
}

namespace {

// --- an oracle written by hand: a capture built byte by byte --------------------------------------

// One packet of the hand-built capture: what the test writes into the frame, hence what decoding
// must find there.
struct Built {
  const char* name;
  uint16_t vlan;          // 802.1Q id, 0: untagged
  const char* src;        // IPv4 or IPv6 address as inet_ntop writes it; nullptr: an ARP request
  const char* dst;
  uint8_t proto;          // 6 TCP, 17 UDP, 1 ICMP, 58 ICMPv6
  uint16_t sport, dport;  // TCP/UDP ports; ICMP and ICMPv6: type, code
  uint8_t ttl;            // TTL or hop limit
  uint16_t payload;       // bytes after the transport header
};

// clang-format off
const std::vector<Built> kBuilt = {
  // name                   vlan  src                 dst                  proto sport  dport  ttl  payload
  {"tcp v4 syn",            0,    "10.0.0.1",         "10.0.0.2",          6,    40000, 80,    64,  0},
  {"udp v4 in vlan 100",    100,  "192.168.1.10",     "224.0.0.251",       17,   5353,  5353,  255, 20},
  {"tcp v6 with data",      0,    "2001:db8::1",      "2001:db8::2",       6,    443,   50000, 57,  100},
  {"udp v6 in vlan 4094",   4094, "fe80::1",          "ff02::1:2",         17,   546,   547,   1,   30},
  {"icmp v4 echo",          0,    "10.0.0.1",         "8.8.8.8",           1,    8,     0,     128, 32},
  {"arp request",           0,    nullptr,            nullptr,             0,    0,     0,     0,   0},
  {"icmpv6 echo",           0,    "2001:db8::1",      "2001:db8::2",       58,   128,   0,     64,  16},
  {"tcp v4 extreme ports",  0,    "172.16.0.1",       "172.31.255.254",    6,    65535, 1,     1,   1},
  {"udp v4 port 0 src",     0,    "0.0.0.0",          "255.255.255.255",   17,   0,     67,    64,  8},
  {"tcp v6 loopback vlan 7",7,    "::1",              "::1",               6,    1,     2,     255, 5},
};
// What a run over kBuilt must count (by hand from the rows above).
struct BuiltCounts {
  uint64_t packets = 10, ipv4 = 5, ipv6 = 4, arp = 1, tcp = 4, udp = 3, icmp = 1, icmpv6 = 1, vlan = 3;
};
// clang-format on

std::vector<uint8_t> build_frame(const Built& b) {
  std::vector<uint8_t> f = {0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01};
  auto put16 = [&](uint16_t v) {
    f.push_back(uint8_t(v >> 8));
    f.push_back(uint8_t(v));
  };
  auto put = [&](const uint8_t* p, size_t n) { f.insert(f.end(), p, p + n); };
  if (b.vlan) {
    put16(0x8100);
    put16(b.vlan);
  }
  if (!b.src) {  // ARP request: who has 10.0.0.2, tell 10.0.0.1
    const uint8_t mac[6] = {0x02, 0, 0, 0, 0, 0x01}, zero[6] = {}, spa[4] = {10, 0, 0, 1}, tpa[4] = {10, 0, 0, 2};
    put16(0x0806);
    put16(1);
    put16(0x0800);
    f.push_back(6);
    f.push_back(4);
    put16(1);
    put(mac, 6);
    put(spa, 4);
    put(zero, 6);
    put(tpa, 4);
    return f;
  }
  uint8_t sa[16] = {}, da[16] = {};
  const bool v6 = inet_pton(AF_INET6, b.src, sa) == 1;
  if (!v6) {
    EXPECT_EQ(inet_pton(AF_INET, b.src, sa), 1) << b.name;
    EXPECT_EQ(inet_pton(AF_INET, b.dst, da), 1) << b.name;
  } else {
    EXPECT_EQ(inet_pton(AF_INET6, b.dst, da), 1) << b.name;
  }
  std::vector<uint8_t> l4;
  auto l4_16 = [&](uint16_t v) {
    l4.push_back(uint8_t(v >> 8));
    l4.push_back(uint8_t(v));
  };
  if (b.proto == 6) {
    l4_16(b.sport);
    l4_16(b.dport);
    for (uint8_t x : {0, 0, 0x03, 0xe8, 0, 0, 0, 0}) l4.push_back(x);  // seq 1000, ack 0
    l4.push_back(0x50);                                                // 20-byte header
    l4.push_back(b.payload ? 0x18 : 0x02);                             // PSH ACK, or SYN
    l4_16(65535);
    l4_16(0);
    l4_16(0);
  } else if (b.proto == 17) {
    l4_16(b.sport);
    l4_16(b.dport);
    l4_16(uint16_t(8 + b.payload));
    l4_16(0);
  } else {  // ICMP, ICMPv6: type, code, checksum, id, sequence
    l4.push_back(uint8_t(b.sport));
    l4.push_back(uint8_t(b.dport));
    l4_16(0);
    l4_16(0x1234);
    l4_16(1);
  }
  for (uint16_t k = 0; k < b.payload; ++k) l4.push_back(uint8_t('a' + k % 26));
  if (v6) {
    put16(0x86dd);
    for (uint8_t x : {0x60, 0, 0, 0}) f.push_back(x);
    put16(uint16_t(l4.size()));
    f.push_back(b.proto);
    f.push_back(b.ttl);
    put(sa, 16);
    put(da, 16);
  } else {
    put16(0x0800);
    uint8_t ip[20] = {0x45, 0, uint8_t((20 + l4.size()) >> 8), uint8_t(20 + l4.size()), 0x12, 0x34, 0x40, 0,
                      b.ttl, b.proto, 0, 0};
    std::memcpy(ip + 12, sa, 4);
    std::memcpy(ip + 16, da, 4);
    uint32_t sum = 0;
    for (int k = 0; k < 20; k += 2) sum += uint32_t(ip[k] << 8 | ip[k + 1]);
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    ip[10] = uint8_t(~sum >> 8);
    ip[11] = uint8_t(~sum);
    put(ip, 20);
  }
  f.insert(f.end(), l4.begin(), l4.end());
  return f;
}

// An address the decoder stored (network-order bytes, four to a word), as inet_ntop writes it.
std::string addr_text(const uint32_t* words, bool v6) {
  uint8_t b[16];
  std::memcpy(b, words, 16);
  char s[INET6_ADDRSTRLEN] = {};
  inet_ntop(v6 ? AF_INET6 : AF_INET, b, s, sizeof s);
  return s;
}

void expect_built(const DecodedPacket& p, const Built& b, const std::string& where) {
  const std::string r = where + ": row \"" + b.name + "\"";
  EXPECT_EQ(unsigned(p.malformed[0]), 0u) << r;
  EXPECT_EQ(unsigned(p.vlan_count[0]), b.vlan ? 1u : 0u) << r;
  if (b.vlan) {
    EXPECT_EQ(p.vlan_id[0], b.vlan) << r;
  }
  if (!b.src) {
    EXPECT_EQ(p.l3[0], uint8_t(L3::arp)) << r;
    return;
  }
  const bool v6 = std::strchr(b.src, ':') != nullptr;
  EXPECT_EQ(p.l3[0], uint8_t(v6 ? L3::ipv6 : L3::ipv4)) << r;
  EXPECT_EQ(addr_text(p.src_ip, v6), b.src) << r;
  EXPECT_EQ(addr_text(p.dst_ip, v6), b.dst) << r;
  EXPECT_EQ(unsigned(p.ip_proto[0]), unsigned(b.proto)) << r;
  EXPECT_EQ(unsigned(p.ip_ttl[0]), unsigned(b.ttl)) << r;
  const L4 l4 = b.proto == 6 ? L4::tcp : b.proto == 17 ? L4::udp : b.proto == 1 ? L4::icmp : L4::icmpv6;
  EXPECT_EQ(p.l4[0], uint8_t(l4)) << r;
  if (b.proto == 6 || b.proto == 17) {
    EXPECT_EQ(p.sport[0], b.sport) << r;
    EXPECT_EQ(p.dport[0], b.dport) << r;
    EXPECT_EQ(p.payload_len[0], b.payload) << r;
  } else {
    EXPECT_EQ(unsigned(p.icmp_type[0]), unsigned(b.sport)) << r;
    EXPECT_EQ(unsigned(p.icmp_code[0]), unsigned(b.dport)) << r;
  }
  if (b.proto == 6) {
    EXPECT_EQ(p.tcp_flags[0], b.payload ? 0x18 : 0x02) << r;
  }
}

}  // namespace

TEST(Pipeline, HandBuiltCaptureDecodesAsBuilt) {
  test::PcapBuilder pb(1, false, true);
  for (size_t k = 0; k < kBuilt.size(); ++k) pb.record(build_frame(kBuilt[k]), 1700000000, uint32_t(k * 1000));
  const CaptureFile cap = CaptureFile::from_memory(pb.bytes(), "hand-built");
  const BuiltCounts want;
  struct Cfg {
    const char* name;
    uint32_t batch;
    bool compact;
    bool slice;
  };
  for (const Cfg& c : {Cfg{"batch 1", 1, false, false}, Cfg{"batch 3", 3, false, false}, Cfg{"batch 64", 64, false, false},
                       Cfg{"compacted, batch 4", 4, true, false}, Cfg{"sliced, batch 4", 4, false, true}}) {
    SCOPED_TRACE(c.name);
    BackendConfig bc;
    bc.batch_packets = c.batch;
    bc.force_compact = c.compact;
    bc.slice = c.slice ? BackendConfig::Slice::on : BackendConfig::Slice::off;
    RunOptions ro;
    ro.policy.max_packets = c.batch;
    const Result r = run(cap, bc, ro);
    ASSERT_EQ(r.pkts.size(), kBuilt.size()) << c.name;
    for (size_t k = 0; k < kBuilt.size(); ++k) expect_built(r.pkts[k], kBuilt[k], std::string(c.name) + ", packet " + std::to_string(k + 1));
    const auto& t = r.rep.totals.v;
    EXPECT_EQ(t[c_packets], want.packets) << c.name;
    EXPECT_EQ(t[c_l3_ipv4], want.ipv4) << c.name;
    EXPECT_EQ(t[c_l3_ipv6], want.ipv6) << c.name;
    EXPECT_EQ(t[c_l3_arp], want.arp) << c.name;
    EXPECT_EQ(t[c_l4_tcp], want.tcp) << c.name;
    EXPECT_EQ(t[c_l4_udp], want.udp) << c.name;
    EXPECT_EQ(t[c_l4_icmp], want.icmp) << c.name;
    EXPECT_EQ(t[c_l4_icmpv6], want.icmpv6) << c.name;
    EXPECT_EQ(t[c_vlan_tagged], want.vlan) << c.name;
    EXPECT_EQ(t[c_malformed], 0u) << c.name;
  }
}

namespace {

// --- an outside oracle: tshark's fields of the generated captures ---------------------------------

struct TsharkPacket {
  int family = 0;          // 4, 6, 0: neither
  uint8_t src[16] = {}, dst[16] = {};
  char l4 = 0;             // 't' TCP, 'u' UDP, 0: neither
  uint16_t sport = 0, dport = 0;
  int vlan = -1;           // outermost 802.1Q id, -1: untagged
};

// tshark -T fields over `cap` (written to a temporary file), first occurrence of each field: the
// outer headers. An empty result says tshark failed.
std::vector<TsharkPacket> tshark_packets(const CaptureFile& cap, const std::string& name) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("gaspp-test-pipeline-" + name + "-" + std::to_string(::getpid()) + ".pcap");
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(cap.data()), std::streamsize(cap.size()));
  }
  const std::string cmd = "tshark -n -r '" + path.string() +
                          "' -T fields -E separator=/t -E occurrence=f -e vlan.id -e ip.src -e ip.dst -e ipv6.src"
                          " -e ipv6.dst -e tcp.srcport -e tcp.dstport -e udp.srcport -e udp.dstport 2>/dev/null";
  std::vector<TsharkPacket> out;
  FILE* f = ::popen(cmd.c_str(), "r");
  if (!f) return out;
  std::string text;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
  const int rc = ::pclose(f);
  std::filesystem::remove(path);
  if (rc != 0) return {};
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> c;
    std::stringstream ls(line);
    for (std::string x; std::getline(ls, x, '\t');) c.push_back(x);
    c.resize(9);
    TsharkPacket p;
    if (!c[0].empty()) p.vlan = std::stoi(c[0]);
    if (!c[1].empty()) {
      p.family = 4;
      inet_pton(AF_INET, c[1].c_str(), p.src);
      inet_pton(AF_INET, c[2].c_str(), p.dst);
    } else if (!c[3].empty()) {
      p.family = 6;
      inet_pton(AF_INET6, c[3].c_str(), p.src);
      inet_pton(AF_INET6, c[4].c_str(), p.dst);
    }
    if (!c[5].empty()) {
      p.l4 = 't';
      p.sport = uint16_t(std::stoul(c[5]));
      p.dport = uint16_t(std::stoul(c[6]));
    } else if (!c[7].empty()) {
      p.l4 = 'u';
      p.sport = uint16_t(std::stoul(c[7]));
      p.dport = uint16_t(std::stoul(c[8]));
    }
    out.push_back(p);
  }
  return out;
}

// Each packet the pipeline decoded against tshark's fields for it, and the run's counters against
// tshark's counts.
void expect_like_tshark(const Result& r, const std::vector<TsharkPacket>& want, const std::string& what) {
  ASSERT_EQ(r.pkts.size(), want.size()) << what;
  uint64_t v4 = 0, v6 = 0, tcp = 0, udp = 0, vlan = 0;
  int bad = 0;
  for (size_t i = 0; i < want.size() && bad < 5; ++i) {
    const DecodedPacket& p = r.pkts[i];
    const TsharkPacket& w = want[i];
    const std::string at = what + ", packet " + std::to_string(i + 1);
    v4 += w.family == 4;
    v6 += w.family == 6;
    tcp += w.l4 == 't';
    udp += w.l4 == 'u';
    vlan += w.vlan >= 0;
    const int family = p.l3[0] == uint8_t(L3::ipv4) ? 4 : p.l3[0] == uint8_t(L3::ipv6) ? 6 : 0;
    const char l4 = p.l4[0] == uint8_t(L4::tcp) ? 't' : p.l4[0] == uint8_t(L4::udp) ? 'u' : 0;
    uint8_t src[16] = {}, dst[16] = {};
    std::memcpy(src, p.src_ip, family == 6 ? 16 : 4);
    std::memcpy(dst, p.dst_ip, family == 6 ? 16 : 4);
    const bool same = family == w.family && std::memcmp(src, w.src, 16) == 0 && std::memcmp(dst, w.dst, 16) == 0 &&
                      l4 == w.l4 && (!l4 || (p.sport[0] == w.sport && p.dport[0] == w.dport)) &&
                      (p.vlan_count[0] ? int(p.vlan_id[0]) : -1) == w.vlan;
    EXPECT_TRUE(same) << at << ": ours " << (family ? addr_text(p.src_ip, family == 6) : "-") << " > "
                      << (family ? addr_text(p.dst_ip, family == 6) : "-") << " l4 " << (l4 ? l4 : '-') << " "
                      << p.sport[0] << " > " << p.dport[0] << " vlan " << (p.vlan_count[0] ? int(p.vlan_id[0]) : -1)
                      << "; tshark family " << w.family << " l4 " << (w.l4 ? w.l4 : '-') << " " << w.sport << " > "
                      << w.dport << " vlan " << w.vlan;
    bad += !same;
  }
  if (bad) return;
  const auto& t = r.rep.totals.v;
  EXPECT_EQ(t[c_l3_ipv4], v4) << what;
  EXPECT_EQ(t[c_l3_ipv6], v6) << what;
  EXPECT_EQ(t[c_l4_tcp], tcp) << what;
  EXPECT_EQ(t[c_l4_udp], udp) << what;
  EXPECT_EQ(t[c_vlan_tagged], vlan) << what;
}

}  // namespace

// The captures of MatchesReferenceForEveryBatchSize, CountersEqualTheReferenceCounts and
// EveryTransferPathAgrees, with their batch sizes and transfer paths, against tshark.
TEST(Pipeline, GeneratedCapturesMatchTshark) {
  GASPP_REQUIRE_TOOL("tshark");
  {
    const CaptureFile cap = mix_capture();
    const auto want = tshark_packets(cap, "mix");
    ASSERT_EQ(want.size(), 3000u) << "tshark read the mix capture";
    for (uint32_t n : {1u, 7u, 65536u}) {
      BackendConfig bc;
      bc.batch_packets = n;
      RunOptions ro;
      ro.policy.max_packets = n;
      expect_like_tshark(run(cap, bc, ro), want, "mix, batch " + std::to_string(n));
    }
  }
  {
    const CaptureFile cap = http_capture();
    const auto want = tshark_packets(cap, "http");
    ASSERT_EQ(want.size(), 5000u) << "tshark read the http capture";
    expect_like_tshark(run(cap, {}, {}), want, "http");
  }
  {
    const CaptureFile cap = paths_capture();
    const auto want = tshark_packets(cap, "paths");
    ASSERT_EQ(want.size(), 2000u) << "tshark read the capture";
    for (const char* path : {"direct", "compacted", "sliced"}) {
      const std::string p = path;
      BackendConfig bc;
      bc.batch_packets = 500;
      bc.force_compact = p == "compacted";
      bc.slice = p == "sliced" ? BackendConfig::Slice::on : BackendConfig::Slice::off;
      RunOptions ro;
      ro.policy.max_packets = 500;
      expect_like_tshark(run(cap, bc, ro), want, p);
    }
  }
}

TEST(Pipeline, RealCapturesMatchReference) {
  const std::filesystem::path dir = test::shared_data_dir() / "pcaps";
  GASPP_REQUIRE_PATH(dir);
  int n = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    const auto ext = e.path().extension();
    if (ext != ".pcap" && ext != ".pcapng" && ext != ".cap") continue;
    const CaptureFile cap = CaptureFile::open(e.path().string());
    const auto want = reference_rows(cap);
    BackendConfig bc;
    bc.batch_packets = 7;
    RunOptions ro;
    ro.policy.max_packets = 7;
    Result r = run(cap, bc, ro);
    SCOPED_TRACE(e.path().string());
    expect_same_rows(r.rows, want);
    ++n;
  }
  EXPECT_GT(n, 20);
}

TEST(Pipeline, SourceOfTheBatchReachesEveryPacket) {
  const CaptureFile cap = generated(GenMode::mix, 50, 0, 0);
  auto be = test::make_backend();
  PacketBatch& b = be->batch(0);
  RecordWalker w(cap);
  RecordInfo r;
  uint64_t first = 0;
  b.count = 0;
  while (w.next(r)) {
    if (b.count == 0) first = r.offset;
    b.h_rec_off[b.count++] = uint32_t(r.offset - first);
  }
  b.h_span = cap.data() + first;
  b.span_len = cap.size() - first;
  b.record_bytes = b.span_len;
  b.fmt = cap.format();
  b.link = cap.link();
  b.source = 7;
  b.want_decoded = true;
  be->submit(0);
  be->wait(0);
  DecodedView v = b.decoded.view();
  for (uint32_t i = 0; i < b.count; ++i) ASSERT_EQ(v.source[i], 7) << i;
  EXPECT_EQ(b.counters.v[c_packets], 50u);
}

namespace {

// Every packet of `cap` decoded from heads of `stride` bytes (decode_sliced_packet, as the CUDA
// backend's sliced path does) must give the row the whole record gives. Returns the number of
// packets that needed their whole record.
uint64_t check_sliced_decode(const CaptureFile& cap, uint32_t stride) {
  std::vector<uint32_t> off;
  RecordWalker w(cap);
  RecordInfo r;
  while (w.next(r)) off.push_back(uint32_t(r.offset));
  BatchView v{};
  v.data = cap.data();
  v.data_len = cap.size();
  v.rec_off = off.data();
  v.count = uint32_t(off.size());
  v.fmt = cap.format();
  v.link = cap.link();
  std::vector<uint8_t> heads(size_t(v.count) * stride);
  for (uint32_t i = 0; i < v.count; ++i)
    std::memcpy(heads.data() + size_t(i) * stride, v.data + off[i], slice_head_len(v, i, stride));
  uint64_t whole = 0;
  DecodedPacket a, b;
  std::string ra, rb;
  for (uint32_t i = 0; i < v.count; ++i) {
    decode_batch_packet(v, i, a);
    whole += decode_sliced_packet(v, heads.data() + size_t(i) * stride, slice_head_len(v, i, stride), i, b);
    ra.clear();
    rb.clear();
    format_decode_row(i + 1, a, ra);
    format_decode_row(i + 1, b, rb);
    EXPECT_EQ(rb, ra) << cap.path() << " packet " << i + 1 << " heads of " << stride;
    if (rb != ra) break;
  }
  return whole;
}

}  // namespace

TEST(Pipeline, SlicedDecodeEqualsWholeRecords) {
  // Heads of kSliceHeadBytes (what CUDA copies) and of 48 (most headers do not fit: the fallback to the
  // whole record runs for most packets) over every real capture and a generated mix.
  const std::filesystem::path dir = test::shared_data_dir() / "pcaps";
  GASPP_REQUIRE_PATH(dir);
  uint64_t packets = 0, whole_full = 0, whole48 = 0;
  std::vector<CaptureFile> caps;
  caps.push_back(generated(GenMode::mix, 3000, 0.3, 0.3, 11));
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    const auto ext = e.path().extension();
    if (e.is_regular_file() && (ext == ".pcap" || ext == ".pcapng" || ext == ".cap")) caps.push_back(CaptureFile::open(e.path().string()));
  }
  for (const CaptureFile& cap : caps) {
    whole_full += check_sliced_decode(cap, kSliceHeadBytes);
    whole48 += check_sliced_decode(cap, 48);
    RecordWalker w(cap);
    RecordInfo r;
    while (w.next(r)) ++packets;
  }
  EXPECT_GT(whole48, packets / 4);  // the fallback really ran
  std::printf("sliced decode: %zu captures, %llu packets equal to whole-record decode; whole record needed for %llu "
              "(%u-byte heads) and %llu (48-byte heads)\n",
              caps.size(), (unsigned long long)packets, (unsigned long long)whole_full, kSliceHeadBytes, (unsigned long long)whole48);
}

// A CUDA backend is bound to the device its configuration names (BackendConfig::device): it says
// which in its description, and a device that does not exist is refused with the count found.
TEST(Pipeline, CudaBackendIsBoundToItsDevice) {
  if (test::backend_under_test() != "cuda") GTEST_SKIP() << "a CUDA device binding (GASPP_TEST_BACKEND=cuda)";
  BackendConfig bc;
  bc.flow.capacity = 1u << 12;
  bc.device = 0;
  EXPECT_NE(make_cuda_backend(bc)->describe().find("device 0:"), std::string::npos);
  bc.device = 1000;
  try {
    make_cuda_backend(bc);
    ADD_FAILURE() << "device 1000 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("cuda device 1000 does not exist"), std::string::npos) << e.what();
  }
}

// Every index of every job is visited once, by the worker that owns its range, whether the next job
// comes while the workers spin (no pause) or after they went to sleep (a pause past kSpinMicros).
TEST(ThreadPool, EveryJobCoversItsRangeOnceAwakeOrAsleep) {
  struct Case {
    int threads;
    int pause_us;
  };
  for (const Case c : {Case{1, 0}, Case{2, 0}, Case{5, 0}, Case{3, 1000}, Case{8, 50}, Case{16, 0}}) {
    ThreadPool pool(c.threads);
    for (int job = 0; job < 200; ++job) {
      const uint64_t n = uint64_t(job * 37 % 1000);
      std::vector<std::atomic<int>> hits(n);
      std::atomic<int> bad_worker{0};
      pool.parallel_for(n, [&](uint64_t b, uint64_t e, int w) {
        if (w < 0 || w >= pool.size()) ++bad_worker;
        for (uint64_t i = b; i < e; ++i) ++hits[i];
      });
      for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "threads " << c.threads << " job " << job;
      ASSERT_EQ(bad_worker.load(), 0);
      if (c.pause_us && job % 20 == 0) std::this_thread::sleep_for(std::chrono::microseconds(c.pause_us));
    }
  }
}

// With timing on, the busy time is every range's time summed over the threads (each range here
// sleeps a known time), and taking it clears it; with timing off nothing is counted.
TEST(ThreadPool, BusyTimeIsTheRangesTimeSummed) {
  for (const int threads : {1, 3}) {
    ThreadPool pool(threads);
    const auto job = [&](uint64_t b, uint64_t e, int) {
      if (b < e) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    };
    pool.parallel_for(uint64_t(threads), job);
    EXPECT_EQ(pool.take_busy_ns(), 0u) << "timing off";
    pool.set_timing(true);
    pool.parallel_for(uint64_t(threads), job);
    const uint64_t busy = pool.take_busy_ns();
    EXPECT_GE(busy, uint64_t(threads) * 5'000'000u) << threads << " threads";
    EXPECT_LT(busy, uint64_t(threads) * 500'000'000u) << threads << " threads";
    EXPECT_EQ(pool.take_busy_ns(), 0u) << "taken once";
  }
}

// Serial mode: every job is one range, [0, n), run by the calling thread as worker 0; switched off,
// the jobs spread over the workers again.
TEST(ThreadPool, SerialModeRunsEachJobOnTheCallerAsOneRange) {
  ThreadPool pool(4);
  for (const bool serial : {true, false, true}) {
    pool.set_serial(serial);
    for (const uint64_t n : {2ull, 4ull, 255ull, 4096ull}) {
      std::vector<std::tuple<uint64_t, uint64_t, int, std::thread::id>> ranges;
      std::mutex mu;
      pool.parallel_for(n, [&](uint64_t b, uint64_t e, int w) {
        std::lock_guard<std::mutex> lk(mu);
        ranges.emplace_back(b, e, w, std::this_thread::get_id());
      });
      if (serial) {
        ASSERT_EQ(ranges.size(), 1u) << n;
        EXPECT_EQ(ranges[0], std::make_tuple(uint64_t(0), n, 0, std::this_thread::get_id())) << n;
      } else {
        EXPECT_EQ(ranges.size(), 4u) << n;
      }
    }
  }
}
