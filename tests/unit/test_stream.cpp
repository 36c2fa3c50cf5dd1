// TCP reassembly through the backend under test, against oracles: PcapPlusPlus's expected data
// for one_tcp_stream (and the retransmission, missing-data and out-of-order variants its tests
// build by editing the capture, rebuilt here the same way) and three_http_streams; the reference
// reassembler (reference_reassembler.hpp) on random streams; and the original bytes themselves.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <set>

#include "capture/capture_file.hpp"
#include "pipeline/pipeline.hpp"
#include "output/stream_dump.hpp"
#include "reference_reassembler.hpp"
#include "test_support.hpp"

using namespace gaspp;
using gaspp::test::ReferenceReassembler;

namespace {

// One direction as the pipeline delivered it.
struct DirOut {
  std::string name;          // tcpflow name (sender-receiver)
  std::string bytes;         // delivered bytes, back to back
  std::vector<std::pair<uint64_t, uint64_t>> gaps;  // (stream offset, length)
  std::vector<std::pair<uint64_t, uint64_t>> conflicts;
  bool ended = false;
  uint64_t next = 0;         // stream offset reached
  bool offsets_ok = true;    // every chunk started where the previous one (plus its gap) ended
  std::vector<std::pair<uint64_t, std::string>> pieces;  // (stream offset, bytes) per chunk
};

struct StreamRun {
  RunReport rep;
  std::map<std::pair<uint64_t, int>, DirOut> dirs;  // (flow id, dir)
  const DirOut* by_name(const std::string& n) const {
    for (auto& [k, d] : dirs)
      if (d.name == n) return &d;
    return nullptr;
  }
};

StreamRun run_streams(const CaptureFile& cap, uint32_t batch, BackendConfig bc = {}) {
  bc.batch_packets = batch;
  RunOptions ro;
  ro.policy.max_packets = batch;
  ro.policy.timeout_ns = 0;
  ro.want_streams = true;
  auto be = test::make_backend(bc);
  StreamRun r;
  r.rep = run_capture(cap, *be, ro, nullptr, nullptr,
                      [&](const std::vector<StreamChunk>& chunks, std::span<const uint8_t> bytes) {
                        for (const StreamChunk& c : chunks) {
                          DirOut& d = r.dirs[{c.flow_id, c.dir}];
                          if (d.name.empty()) d.name = stream_file_name(c);
                          if (c.flags & kChunkConflict) {
                            d.conflicts.emplace_back(c.off, c.len);
                            continue;
                          }
                          if (c.gap) d.gaps.emplace_back(c.off - c.gap, c.gap);
                          if (c.off != d.next + c.gap) d.offsets_ok = false;
                          d.bytes.append(reinterpret_cast<const char*>(bytes.data()) + c.data, c.len);
                          if (c.len) d.pieces.emplace_back(c.off, d.bytes.substr(d.bytes.size() - c.len));
                          d.next = c.off + c.len;
                          if (c.flags & kChunkEnd) d.ended = true;
                        }
                      });
  return r;
}

// A capture as a list of frames that tests edit, then write back.
struct Frames {
  std::vector<std::vector<uint8_t>> f;
  std::vector<uint64_t> ts;
  static Frames read(const std::filesystem::path& p) {
    const CaptureFile cap = CaptureFile::open(p.string());
    RecordWalker w(cap);
    RecordInfo r;
    Frames out;
    while (w.next(r)) {
      const uint8_t* b = cap.data() + r.offset + kRecordHeaderBytes;
      out.f.emplace_back(b, b + r.cap_len);
      out.ts.push_back(r.ts_ns);
    }
    return out;
  }
  CaptureFile capture(const char* name) const {
    test::PcapBuilder b(1, false, true, 262144);
    for (size_t i = 0; i < f.size(); ++i)
      b.record(f[i], uint32_t(ts[i] / 1000000000ull), uint32_t(ts[i] % 1000000000ull));
    return CaptureFile::from_memory(b.bytes(), name);
  }
  void erase(size_t i) { f.erase(f.begin() + long(i)); ts.erase(ts.begin() + long(i)); }
  void insert(size_t i, std::vector<uint8_t> fr, uint64_t t) {
    f.insert(f.begin() + long(i), std::move(fr));
    ts.insert(ts.begin() + long(i), t);
  }
  void move(size_t from, size_t to) {
    auto fr = f[from];
    const uint64_t t = ts[from];
    erase(from);
    insert(to, std::move(fr), t);
  }
  // After an edit that moves segments later or leaves them out: see test::ack_only_received.
  void ack_only_received() { test::ack_only_received(f); }
};

// PcapPlusPlus's test helper, rebuilt: a copy of an Ethernet/IPv4/TCP frame whose payload is
// bytes [beginning, beginning + n) of the original (n <= 0: to the end; beyond the end: '*'), with
// the sequence number moved by `beginning`.
std::vector<uint8_t> retransmission(const std::vector<uint8_t>& fr, int beginning, int n) {
  const size_t ip = 14, ihl = (fr[ip] & 15) * 4u, tcp = ip + ihl, thl = (fr[tcp + 12] >> 4) * 4u;
  const int total = fr[ip + 2] << 8 | fr[ip + 3];
  const int payload = total - int(ihl) - int(thl);
  if (n <= 0) n = payload - beginning;
  std::vector<uint8_t> out(fr.begin(), fr.begin() + long(tcp + thl));
  for (int k = 0; k < n; ++k)
    out.push_back(beginning + k < payload ? fr[tcp + thl + size_t(beginning + k)] : uint8_t('*'));
  const int nt = int(ihl + thl) + n;
  out[ip + 2] = uint8_t(nt >> 8);
  out[ip + 3] = uint8_t(nt);
  uint32_t seq = load_be32(&out[tcp + 4]) + uint32_t(beginning);
  for (int k = 0; k < 4; ++k) out[tcp + 4 + size_t(k)] = uint8_t(seq >> (24 - 8 * k));
  return out;
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// PcapPlusPlus writes both directions into one text, in delivery order, with "[N bytes missing]"
// where it skipped a hole. Checks that the text without the markers is an interleaving of the two
// directions we delivered (each block matched greedily, longest first).
void check_interleaving(const std::string& expected, const std::string& a, const std::string& b) {
  const std::string e = std::regex_replace(expected, std::regex(R"(\[\d+ bytes missing\])"), "");
  EXPECT_EQ(e.size(), a.size() + b.size());
  size_t i = 0, x = 0, y = 0;
  auto common = [&](const std::string& s, size_t p) {
    size_t n = 0;
    while (i + n < e.size() && p + n < s.size() && e[i + n] == s[p + n]) ++n;
    return n;
  };
  while (i < e.size()) {
    const size_t la = common(a, x), lb = common(b, y);
    if (la == 0 && lb == 0) {
      ADD_FAILURE() << "expected byte " << i << " continues neither direction";
      return;
    }
    if (la >= lb) i += la, x += la;
    else i += lb, y += lb;
  }
  EXPECT_EQ(x, a.size());
  EXPECT_EQ(y, b.size());
}

uint64_t gap_bytes(const DirOut& d) {
  uint64_t n = 0;
  for (auto& g : d.gaps) n += g.second;
  return n;
}

constexpr uint32_t kIsnsForStreams[] = {0u, 1u, 0xffffffffu, 0xfffffff6u};

const std::filesystem::path kPpp = test::shared_data_dir() / "pcaps" / "pcapplusplus";
const char* kClient = "010.000.000.001.61541-081.218.072.015.00080";
const char* kServer = "081.218.072.015.00080-010.000.000.001.61541";

// Every piece delivered equals the original stream at its offset.
void expect_true_to(const DirOut& d, const std::string& original) {
  for (auto& [off, b] : d.pieces) {
    ASSERT_LE(off + b.size(), original.size());
    EXPECT_EQ(b, original.substr(off, b.size())) << "at stream offset " << off;
  }
}

std::multiset<uint64_t> marker_sizes(const std::string& expected) {
  static const std::regex marker(R"(\[(\d+) bytes missing\])");
  std::multiset<uint64_t> m;
  for (std::sregex_iterator it(expected.begin(), expected.end(), marker), end; it != end; ++it)
    m.insert(std::stoull((*it)[1]));
  return m;
}

struct Variant {
  const char* name;
  void (*edit)(Frames&);
  const char* expected;
  // PcapPlusPlus's text is an interleaving of the two directions. Not for "missing data": there
  // PcapPlusPlus, stuck on the 20-byte hole at the start, hands out later data first and the rest
  // of the first segment ("POST ...") only at byte 8397 of its text, out of stream order. That
  // variant is checked against the original bytes, the sizes of PcapPlusPlus's markers and the
  // total it delivered instead.
  bool interleaves;
};

const Variant kVariants[] = {
    // ack_only_received() leaves a capture whose acknowledgements are already consistent as it is.
    {"unchanged", [](Frames& s) { s.ack_only_received(); }, "one_tcp_stream_output.txt", true},
    {"retransmission",
     [](Frames& s) {
       const auto r1 = retransmission(s.f[4], 0, 0), r2 = retransmission(s.f[10], 10, 0),
                  r3 = retransmission(s.f[13], 0, 1340), r4 = retransmission(s.f[21], 0, 1430),
                  r5 = retransmission(s.f[28], 10, 1370), r6 = retransmission(s.f[34], 10, 91);
       const uint64_t t1 = s.ts[4], t2 = s.ts[10], t3 = s.ts[13], t4 = s.ts[21], t5 = s.ts[28], t6 = s.ts[34];
       s.insert(5, r1, t1);
       s.insert(12, r2, t2);
       s.insert(16, r3, t3);
       s.insert(25, r4, t4);
       s.insert(33, r5, t5);
       s.insert(40, r6, t6);
     },
     "one_tcp_stream_retransmission_output.txt", true},
    {"missing data",
     [](Frames& s) {
       s.insert(4, retransmission(s.f[3], 20, 0), s.ts[3]);
       s.erase(3);
       s.insert(21, retransmission(s.f[20], 0, 1390), s.ts[20]);
       s.erase(20);
       s.erase(28);
       s.erase(30);
     },
     "one_tcp_stream_missing_data_output.txt", false},
    {"out of order",
     [](Frames& s) {
       std::swap(s.f[9], s.f[10]);
       std::swap(s.ts[9], s.ts[10]);
       s.move(18, 23);
       for (size_t i = 0; i < 12; ++i) s.move(35, 24 + i);
       s.ack_only_received();
     },
     "one_tcp_stream_out_of_order_output.txt", true},
    {"out of order and missing data",
     [](Frames& s) {
       for (size_t i = 0; i < 12; ++i) s.move(35, 24 + i);
       s.erase(29);
       s.ack_only_received();
     },
     "one_tcp_stream_missing_data_output_ooo.txt", true},
};

}  // namespace

TEST(Stream, PcapPlusPlusOneTcpStreamAndItsVariants) {
  GASPP_REQUIRE_PATH(kPpp);
  const StreamRun base = run_streams(CaptureFile::open((kPpp / "one_tcp_stream.pcap").string()), 65536);
  const DirOut* base_c = base.by_name(kClient);
  const DirOut* base_s = base.by_name(kServer);
  ASSERT_TRUE(base_c && base_s);
  for (const Variant& v : kVariants) {
    SCOPED_TRACE(v.name);
    Frames fr = Frames::read(kPpp / "one_tcp_stream.pcap");
    v.edit(fr);
    const CaptureFile cap = fr.capture(v.name);
    for (uint32_t batch : {1u, 3u, 7u, 65536u}) {
      SCOPED_TRACE("batch " + std::to_string(batch));
      const StreamRun r = run_streams(cap, batch);
      ASSERT_EQ(r.dirs.size(), 2u);
      const DirOut* c = r.by_name(kClient);
      const DirOut* s = r.by_name(kServer);
      ASSERT_TRUE(c && s);
      EXPECT_TRUE(c->offsets_ok && s->offsets_ok);
      const std::string expected = slurp(kPpp / v.expected);
      uint64_t missing = 0;
      for (uint64_t m : marker_sizes(expected)) missing += m;
      if (v.interleaves) {
        check_interleaving(expected, c->bytes, s->bytes);
      } else {
        std::multiset<uint64_t> ours;
        for (const DirOut* d : {c, s})
          for (auto& g : d->gaps) ours.insert(g.second);
        EXPECT_EQ(ours, marker_sizes(expected));
        EXPECT_EQ(std::regex_replace(expected, std::regex(R"(\[\d+ bytes missing\])"), "").size(),
                  c->bytes.size() + s->bytes.size());
      }
      if (std::string(v.name) != "retransmission") {  // its '*' padding wins where it came first
        expect_true_to(*c, base_c->bytes);
        expect_true_to(*s, base_s->bytes);
      }
      EXPECT_EQ(gap_bytes(*c) + gap_bytes(*s), missing);
      EXPECT_EQ(r.rep.totals.v[c_stream_gap_bytes], missing);
      if (std::string(v.name) == "unchanged" || std::string(v.name) == "out of order") {
        EXPECT_EQ(c->bytes, base_c->bytes);
        EXPECT_EQ(s->bytes, base_s->bytes);
      }
      if (std::string(v.name) == "out of order") {
        EXPECT_GT(r.rep.totals.v[c_stream_ooo_buffered], 0u);
      }
      if (std::string(v.name) == "retransmission") {
        EXPECT_GE(r.rep.totals.v[c_stream_retransmit], 3u);
      }
      EXPECT_EQ(r.rep.totals.v[c_stream_ooo_dropped], 0u);
      EXPECT_EQ(r.rep.totals.v[c_stream_chunk_overflow], 0u);
    }
  }
}

TEST(Stream, PcapPlusPlusThreeHttpStreams) {
  GASPP_REQUIRE_PATH(kPpp);
  const StreamRun r = run_streams(CaptureFile::open((kPpp / "three_http_streams.pcap").string()), 65536);
  // Pair the directions of each connection (same flow id) and match them to the expected files.
  std::map<uint64_t, std::pair<std::string, std::string>> conns;
  for (auto& [k, d] : r.dirs) (k.second == 0 ? conns[k.first].first : conns[k.first].second) = d.bytes;
  ASSERT_EQ(conns.size(), 3u);
  for (int k = 1; k <= 3; ++k) {
    const std::string want = slurp(kPpp / ("three_http_streams_conn_" + std::to_string(k) + "_output.txt"));
    int matches = 0;
    for (auto& [id, c] : conns)
      if (c.first.size() + c.second.size() == want.size() &&
          (want == c.first + c.second || want == c.second + c.first || (c.first.size() && want.find(c.first) != std::string::npos &&
                                                                        want.find(c.second) != std::string::npos)))
        ++matches;
    EXPECT_EQ(matches, 1) << "connection " << k;
  }
}

// ---------------------------------------------------------------------------------------------
// Property: random connections (both directions), segmented at random, reordered, duplicated,
// partly overlapping with the same data, some overlapping with different data, some segments
// lost; initial sequence numbers 0, 1, 2^32-1 and 2^32-10; over IPv4 and IPv6; interleaved with
// each other; pushed in batches of 1, 2, 3, 7, 64 and the default; for each overlap policy. Each
// direction must equal the reference reassembler fed the same segments in capture order and
// closed at the end (the policy's copy of waiting bytes wins, gaps skipped at close), whatever the
// batch size.

namespace {

// Over IPv6 the 32-bit addresses become 2001:db8::<addr>.
std::vector<uint8_t> tcp_frame(uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport, uint8_t flags, uint32_t seq,
                               uint32_t ack, const std::string& payload, bool v6 = false) {
  const size_t iphl = v6 ? 40 : 20;
  // SYNs carry a window scale of 7 (as every current stack does), so that a sender may have more
  // than 64 KiB in flight once the first ACK after the handshake scales the window.
  const size_t thl = (flags & 0x02) ? 24 : 20;
  std::vector<uint8_t> f(14 + iphl + thl + payload.size(), 0);
  f[0] = 0x02; f[6] = 0x02; f[12] = v6 ? 0x86 : 0x08; f[13] = v6 ? 0xdd : 0x00;
  uint8_t* ip = f.data() + 14;
  if (v6) {
    const size_t plen = thl + payload.size();
    ip[0] = 0x60; ip[4] = uint8_t(plen >> 8); ip[5] = uint8_t(plen); ip[6] = 6; ip[7] = 64;
    for (uint8_t* a : {ip + 8, ip + 24}) { a[0] = 0x20; a[1] = 0x01; a[2] = 0x0d; a[3] = 0xb8; }
    for (int k = 0; k < 4; ++k) { ip[20 + k] = uint8_t(src >> (24 - 8 * k)); ip[36 + k] = uint8_t(dst >> (24 - 8 * k)); }
  } else {
    ip[0] = 0x45;
    const size_t tot = 20 + thl + payload.size();
    ip[2] = uint8_t(tot >> 8); ip[3] = uint8_t(tot);
    ip[8] = 64; ip[9] = 6;
    for (int k = 0; k < 4; ++k) { ip[12 + k] = uint8_t(src >> (24 - 8 * k)); ip[16 + k] = uint8_t(dst >> (24 - 8 * k)); }
  }
  uint8_t* t = ip + iphl;
  t[0] = uint8_t(sport >> 8); t[1] = uint8_t(sport); t[2] = uint8_t(dport >> 8); t[3] = uint8_t(dport);
  for (int k = 0; k < 4; ++k) { t[4 + k] = uint8_t(seq >> (24 - 8 * k)); t[8 + k] = uint8_t(ack >> (24 - 8 * k)); }
  t[12] = uint8_t((thl / 4) << 4); t[13] = flags; t[14] = 0xff; t[15] = 0xff;
  if (thl == 24) { t[20] = 1; t[21] = 3; t[22] = 3; t[23] = 7; }  // NOP, window scale 7
  std::memcpy(t + thl, payload.data(), payload.size());
  return f;
}

struct Pkt {
  int conn, dir;  // dir 0: client → server
  uint8_t flags;
  uint32_t seq, ack;
  std::string data;
};

struct Scenario {
  std::vector<Pkt> pkts;                      // capture order
  std::map<std::pair<int, int>, uint32_t> isn;
  std::map<std::pair<int, int>, std::string> truth;
};

Scenario make_scenario(std::mt19937_64& rng, int conns, bool lossy) {
  Scenario sc;
  std::vector<std::vector<Pkt>> per(static_cast<size_t>(conns));
  for (int c = 0; c < conns; ++c) {
    const uint32_t isn[2] = {kIsnsForStreams[rng() % 4], kIsnsForStreams[rng() % 4] + uint32_t(rng() % 3)};
    sc.isn[{c, 0}] = isn[0];
    sc.isn[{c, 1}] = isn[1];
    auto& v = per[size_t(c)];
    v.push_back({c, 0, 0x02, isn[0], 0, ""});
    v.push_back({c, 1, 0x12, isn[1], isn[0] + 1, ""});
    v.push_back({c, 0, 0x10, isn[0] + 1, isn[1] + 1, ""});
    std::vector<Pkt> data;
    for (int d = 0; d < 2; ++d) {
      std::string s(size_t(200 + rng() % 3000), ' ');
      for (auto& ch : s) ch = char('a' + rng() % 26);
      sc.truth[{c, d}] = s;
      std::vector<Pkt> segs;
      for (size_t off = 0; off < s.size();) {
        const size_t len = std::min<size_t>(s.size() - off, 1 + rng() % 300);
        segs.push_back({c, d, 0x18, isn[d] + 1 + uint32_t(off), isn[d ^ 1] + 1, s.substr(off, len)});
        // Overlapping copies with the same data (straddling the segment's start).
        if (rng() % 6 == 0 && off > 10) {
          const size_t b = off - 1 - rng() % 10;
          segs.push_back({c, d, 0x18, isn[d] + 1 + uint32_t(b), isn[d ^ 1] + 1, s.substr(b, len + (off - b))});
        }
        off += len;
      }
      for (size_t k = 0; k < segs.size(); ++k) {
        if (rng() % 8 == 0) segs.push_back(segs[k]);  // exact duplicate, later
        if (rng() % 15 == 0) {                         // a copy with different data, later
          Pkt x = segs[k];
          for (auto& ch : x.data) ch = char('A' + rng() % 26);
          segs.push_back(x);
        }
      }
      // Local reordering: swap neighbours at random, and move some segments far later.
      for (size_t k = 1; k < segs.size(); ++k)
        if (rng() % 4 == 0) std::swap(segs[k], segs[k - 1]);
      for (size_t k = 0; k + 1 < segs.size(); ++k)
        if (rng() % 20 == 0) {
          Pkt x = segs[k];
          segs.erase(segs.begin() + long(k));
          segs.insert(segs.begin() + long(std::min(segs.size(), k + 5 + rng() % 30)), x);
        }
      if (lossy)
        for (size_t k = 0; k < segs.size(); ++k)
          if (rng() % 25 == 0) segs.erase(segs.begin() + long(k));
      data.insert(data.end(), segs.begin(), segs.end());
    }
    // The two directions interleaved at random, keeping each one's order.
    std::vector<Pkt> a, b;
    for (auto& p : data) (p.dir == 0 ? a : b).push_back(p);
    size_t i = 0, j = 0;
    while (i < a.size() || j < b.size())
      v.push_back((j >= b.size() || (i < a.size() && rng() % 2)) ? a[i++] : b[j++]);
    // FIN each way, then the last ACK: the flow closes, holes are skipped.
    const uint32_t end0 = isn[0] + 1 + uint32_t(sc.truth[{c, 0}].size());
    const uint32_t end1 = isn[1] + 1 + uint32_t(sc.truth[{c, 1}].size());
    v.push_back({c, 0, 0x11, end0, end1, ""});
    v.push_back({c, 1, 0x11, end1, end0 + 1, ""});
    v.push_back({c, 0, 0x10, end0 + 1, end1 + 1, ""});
  }
  // Connections interleaved at random, each keeping its order.
  std::vector<size_t> pos(size_t(conns), 0);
  size_t left = 0;
  for (auto& v : per) left += v.size();
  while (left) {
    const size_t c = rng() % size_t(conns);
    if (pos[c] == per[c].size()) continue;
    sc.pkts.push_back(per[c][pos[c]++]);
    --left;
  }
  return sc;
}

CaptureFile scenario_capture(const Scenario& sc, bool v6 = false) {
  test::PcapBuilder b(1, false, true, 262144);
  uint64_t ts = 1'700'000'000'000'000'000ull;
  for (const Pkt& p : sc.pkts) {
    const uint32_t cli = 0x0a000001u + uint32_t(p.conn), srv = 0xc0a80001u;
    const uint16_t cport = uint16_t(40000 + p.conn), sport = 80;
    const auto f = p.dir == 0 ? tcp_frame(cli, srv, cport, sport, p.flags, p.seq, p.ack, p.data, v6)
                              : tcp_frame(srv, cli, sport, cport, p.flags, p.seq, p.ack, p.data, v6);
    b.record(f, uint32_t(ts / 1000000000ull), uint32_t(ts % 1000000000ull));
    ts += 1000;
  }
  return CaptureFile::from_memory(b.bytes(), "scenario");
}

std::string dir_name(int conn, int dir, bool v6 = false) {
  StreamChunk c{};
  c.key.family = v6 ? 6 : 4;
  const uint32_t cli = 0x0a000001u + uint32_t(conn), srv = 0xc0a80001u;
  const uint32_t a = dir == 0 ? cli : srv, b = dir == 0 ? srv : cli;
  const uint8_t ab[4] = {uint8_t(a >> 24), uint8_t(a >> 16), uint8_t(a >> 8), uint8_t(a)};
  const uint8_t bb[4] = {uint8_t(b >> 24), uint8_t(b >> 16), uint8_t(b >> 8), uint8_t(b)};
  const uint8_t prefix[4] = {0x20, 0x01, 0x0d, 0xb8};
  std::memcpy(&c.key.addr[0][0], v6 ? prefix : ab, 4);
  std::memcpy(&c.key.addr[1][0], v6 ? prefix : bb, 4);
  if (v6) {
    std::memcpy(&c.key.addr[0][3], ab, 4);
    std::memcpy(&c.key.addr[1][3], bb, 4);
  }
  c.key.port[0] = uint16_t(dir == 0 ? 40000 + conn : 80);
  c.key.port[1] = uint16_t(dir == 0 ? 80 : 40000 + conn);
  c.flags = kChunkClientLo;
  return stream_file_name(c);
}

}  // namespace

TEST(Stream, RandomStreamsEqualTheReferenceAtEveryBatchSize) {
  std::mt19937_64 rng(20261122);
  for (int round = 0; round < 8; ++round) {
    const OverlapPolicy policy = round % 4 < 2 ? OverlapPolicy::first : OverlapPolicy::last;
    const bool v6 = round % 8 >= 4;
    SCOPED_TRACE("round " + std::to_string(round) + (policy == OverlapPolicy::last ? ", overlap last" : ", overlap first") +
                 (v6 ? ", IPv6" : ", IPv4"));
    const Scenario sc = make_scenario(rng, 12, round % 2 == 1);
    // The reference, fed in capture order, closed at the end.
    std::map<std::pair<int, int>, ReferenceReassembler> ref;
    for (auto& [k, isn] : sc.isn) ref.emplace(k, ReferenceReassembler(isn, policy == OverlapPolicy::last));
    for (const Pkt& p : sc.pkts)
      if (!p.data.empty()) ref.at({p.conn, p.dir}).segment(p.seq, p.data);
    for (auto& [k, r] : ref) r.close();
    const CaptureFile cap = scenario_capture(sc, v6);
    for (uint32_t batch : {1u, 2u, 3u, 7u, 64u, 65536u}) {
      SCOPED_TRACE("batch " + std::to_string(batch));
      BackendConfig bc;
      bc.stream.overlap = policy;
      const StreamRun run = run_streams(cap, batch, bc);
      EXPECT_EQ(run.rep.totals.v[c_stream_ooo_dropped], 0u);
      for (auto& [k, r] : ref) {
        const DirOut* d = run.by_name(dir_name(k.first, k.second, v6));
        if (r.bytes().empty() && r.gaps().empty()) continue;
        ASSERT_TRUE(d) << dir_name(k.first, k.second, v6);
        EXPECT_EQ(d->bytes, r.bytes()) << dir_name(k.first, k.second, v6);
        std::vector<std::pair<uint64_t, uint64_t>> want;
        for (auto& g : r.gaps()) want.emplace_back(g.offset, g.length);
        // A hole at the very end (its segments lost) is reported up to the FIN.
        const uint64_t total = sc.truth.at(k).size();
        if (r.delivered() < total) {
          if (!want.empty() && want.back().first + want.back().second == r.delivered()) want.back().second += total - r.delivered();
          else want.emplace_back(r.delivered(), total - r.delivered());
        }
        EXPECT_EQ(d->gaps, want) << dir_name(k.first, k.second, v6);
        EXPECT_TRUE(d->ended);
        EXPECT_TRUE(d->offsets_ok);
      }
    }
  }
}

// The out-of-order buffer's byte pools: a long hole keeps ~140 segments waiting for many 1-packet
// batches while pairs swapped everywhere leave delivered bytes behind, in a 24 KiB pool that must
// be compacted again and again (moving every waiting segment). The stream comes out exact, with
// nothing dropped. Then the same traffic in a 4 KiB pool: segments are dropped and counted, their
// bytes become gaps, and every byte delivered is still the original's.
namespace {

Scenario one_connection_with_a_long_hole(size_t segments) {
  Scenario sc;
  const uint32_t isn[2] = {1000, 5000};
  sc.isn[{0, 0}] = isn[0];
  sc.isn[{0, 1}] = isn[1];
  std::string s(segments * 100, ' ');
  std::mt19937_64 rng(3);
  for (auto& ch : s) ch = char('a' + rng() % 26);
  sc.truth[{0, 0}] = s;
  sc.truth[{0, 1}] = "";
  std::vector<Pkt> segs;
  for (size_t k = 0; k < segments; ++k)
    segs.push_back({0, 0, 0x18, isn[0] + 1 + uint32_t(k * 100), isn[1] + 1, s.substr(k * 100, 100)});
  for (size_t k = 0; k + 1 < segs.size(); k += 2) std::swap(segs[k], segs[k + 1]);
  const Pkt late = segs[10];
  segs.erase(segs.begin() + 10);
  segs.insert(segs.begin() + 150, late);
  sc.pkts.push_back({0, 0, 0x02, isn[0], 0, ""});
  sc.pkts.push_back({0, 1, 0x12, isn[1], isn[0] + 1, ""});
  sc.pkts.push_back({0, 0, 0x10, isn[0] + 1, isn[1] + 1, ""});
  // The server's first ACK opens its scaled window (8 MiB): the SYN-ACK's own window is never
  // scaled, and without it the client's data past 64 KiB would be out of window.
  sc.pkts.push_back({0, 1, 0x10, isn[1] + 1, isn[0] + 1, ""});
  sc.pkts.insert(sc.pkts.end(), segs.begin(), segs.end());
  const uint32_t end0 = isn[0] + 1 + uint32_t(s.size());
  sc.pkts.push_back({0, 0, 0x11, end0, isn[1] + 1, ""});
  sc.pkts.push_back({0, 1, 0x11, isn[1] + 1, end0 + 1, ""});
  sc.pkts.push_back({0, 0, 0x10, end0 + 1, isn[1] + 2, ""});
  return sc;
}

}  // namespace

// The out-of-order buffer's default does not follow the batch size: with batches of one packet the
// ~140 segments waiting behind the long hole are all kept, as with one large batch.
TEST(Stream, TheDefaultOutOfOrderBufferDoesNotShrinkWithTheBatch) {
  const Scenario sc = one_connection_with_a_long_hole(300);
  const CaptureFile cap = scenario_capture(sc);
  for (uint32_t batch : {1u, 65536u}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    BackendConfig bc;
    ASSERT_EQ(bc.stream.held_segments, kDefaultHeldSegments);
    const StreamRun run = run_streams(cap, batch, bc);
    const DirOut* d = run.by_name(dir_name(0, 0));
    ASSERT_TRUE(d);
    EXPECT_EQ(d->bytes, sc.truth.at({0, 0}));
    EXPECT_TRUE(d->gaps.empty());
    EXPECT_EQ(run.rep.totals.v[c_stream_ooo_dropped], 0u);
  }
}

TEST(Stream, HeldBytesStayInPlaceAndArePackedWhenThePoolFills) {
  const Scenario sc = one_connection_with_a_long_hole(2000);
  const CaptureFile cap = scenario_capture(sc);
  const std::string& truth = sc.truth.at({0, 0});
  {
    BackendConfig bc;
    bc.stream.held_bytes = 24u << 10;
    const StreamRun run = run_streams(cap, 1, bc);
    const DirOut* d = run.by_name(dir_name(0, 0));
    ASSERT_TRUE(d);
    EXPECT_EQ(d->bytes, truth);
    EXPECT_TRUE(d->gaps.empty());
    EXPECT_EQ(run.rep.totals.v[c_stream_ooo_dropped], 0u);
    EXPECT_GE(run.rep.streams.compactions, 10u);
    EXPECT_GE(run.rep.streams.peak_segs, 130u);
  }
  {
    BackendConfig bc;
    bc.stream.held_bytes = 4u << 10;
    const StreamRun run = run_streams(cap, 1, bc);
    const DirOut* d = run.by_name(dir_name(0, 0));
    ASSERT_TRUE(d);
    EXPECT_GT(run.rep.totals.v[c_stream_ooo_dropped], 0u);
    EXPECT_FALSE(d->gaps.empty());
    EXPECT_EQ(d->bytes.size() + gap_bytes(*d), truth.size());
    expect_true_to(*d, truth);
    EXPECT_TRUE(d->offsets_ok);
  }
}

// A connection that stops with a hole and data waiting beyond it, then goes idle: when the expiry
// sweep removes the flow, the next batch delivers what waited, after a gap, and ends the
// direction, although the flow is gone from the table. With one batch for everything, the end of
// the run does the same.
TEST(Stream, DataWaitingWhenTheFlowExpiresIsDeliveredAfterAGap) {
  const uint32_t cli = 0x0a000001u, srv = 0xc0a80001u, other = 0x0a000002u;
  const std::string d0(100, 'a'), d2(100, 'c');
  test::PcapBuilder b(1, false, true, 262144);
  uint64_t ts = 1'700'000'000ull * 1'000'000'000ull;
  auto put = [&](const std::vector<uint8_t>& f) {
    b.record(f, uint32_t(ts / 1000000000ull), uint32_t(ts % 1000000000ull));
    ts += 1000;
  };
  put(tcp_frame(cli, srv, 40000, 80, 0x02, 999, 0, ""));
  put(tcp_frame(srv, cli, 80, 40000, 0x12, 4999, 1000, ""));
  put(tcp_frame(cli, srv, 40000, 80, 0x10, 1000, 5000, ""));
  put(tcp_frame(cli, srv, 40000, 80, 0x18, 1000, 5000, d0));
  put(tcp_frame(cli, srv, 40000, 80, 0x18, 1200, 5000, d2));  // bytes 100..199 never come
  ts += 700ull * 1'000'000'000ull;                               // past the 600 s established timeout
  for (int k = 0; k < 6; ++k) put(tcp_frame(other, srv, 40001, 80, 0x02, 77, 0, ""));
  const CaptureFile cap = CaptureFile::from_memory(b.bytes(), "expiry");
  for (uint32_t batch : {2u, 65536u}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    const StreamRun run = run_streams(cap, batch);
    const DirOut* d = run.by_name(dir_name(0, 0));
    ASSERT_TRUE(d);
    EXPECT_EQ(d->bytes, d0 + d2);
    EXPECT_EQ(d->gaps, (std::vector<std::pair<uint64_t, uint64_t>>{{100, 100}}));
    EXPECT_TRUE(d->ended);
    EXPECT_TRUE(d->offsets_ok);
    if (batch == 2) {
      EXPECT_GE(run.rep.totals.v[c_flow_timed_out], 1u);  // the sweep took it, not the end of the run
    }
  }
}

// Holes the receiver acknowledged (Suricata's CheckGap): the capture missed bytes the receiver has,
// so no copy will fill the hole; it is skipped at the acknowledgement that covers it and all that
// waits behind it (a gap), and what waited is delivered then, not at the close. A hole not
// acknowledged keeps waiting and a retransmission fills it. Each row is one connection (client ISN 999, server ISN 4999): the
// client's data segments as (offset, length), and between them the server's acknowledgements (as
// stream offsets of the client's direction); then FINs both ways. A late copy of skipped bytes is
// not delivered. Every batch size gives the same stream.
TEST(Stream, AHoleTheReceiverAcknowledgedIsAGapAtThatAck) {
  struct Step {
    char who;      // 'c': client data (off, len); 'a': server ACK of client offset `off`
    uint32_t off, len;
  };
  struct Row {
    const char* name;
    std::vector<Step> steps;
    std::vector<std::pair<uint64_t, uint64_t>> gaps;  // want
    std::vector<std::pair<uint32_t, uint32_t>> delivered;  // want: byte ranges of the original, in order
    uint64_t ack_skips;                                // want (whole run)
    bool before_end;  // want the bytes after the first gap delivered before the close (batch 1)
  };
  const std::vector<Row> rows = {
      {"acked hole, late copy after the ack",
       {{'c', 0, 100}, {'c', 200, 100}, {'a', 300, 0}, {'c', 100, 100}, {'c', 300, 100}, {'a', 400, 0}},
       {{100, 100}}, {{0, 100}, {200, 200}}, 1, true},
      // An acknowledgement that ends inside the hole does not pass it: the rest of the hole may
      // still come (and here does).
      {"ack inside the hole",
       {{'c', 0, 100}, {'c', 200, 100}, {'a', 150, 0}, {'c', 100, 100}, {'c', 300, 100}, {'a', 400, 0}},
       {}, {{0, 400}}, 0, false},
      {"ack up to the waiting data, then past it",
       {{'c', 0, 100}, {'c', 200, 100}, {'a', 200, 0}, {'c', 300, 100}, {'a', 400, 0}, {'c', 100, 100}},
       {{100, 100}}, {{0, 100}, {200, 200}}, 1, true},
      {"hole not acknowledged, retransmission fills it",
       {{'c', 0, 100}, {'c', 200, 100}, {'a', 100, 0}, {'c', 100, 100}, {'c', 300, 100}, {'a', 400, 0}},
       {}, {{0, 400}}, 0, false},
      {"two holes, one ack past both",
       {{'c', 0, 100}, {'c', 200, 50}, {'c', 300, 100}, {'a', 400, 0}, {'c', 400, 10}, {'a', 410, 0}},
       {{100, 100}, {250, 50}}, {{0, 100}, {200, 50}, {300, 110}}, 2, true},
      // Past the first hole but not past what waits behind it: nothing is skipped until the
      // acknowledgement covers it all (delivered bytes are not kept for comparison).
      {"two holes, ack past the first only",
       {{'c', 0, 100}, {'c', 200, 50}, {'c', 300, 100}, {'a', 210, 0}, {'c', 250, 50}, {'a', 400, 0}},
       {{100, 100}}, {{0, 100}, {200, 200}}, 1, true},
  };
  const uint32_t cli = 0x0a000001u, srv = 0xc0a80001u;
  std::string orig(1000, ' ');
  for (size_t k = 0; k < orig.size(); ++k) orig[k] = char('a' + (k * 7 + k / 26) % 26);
  for (const Row& row : rows) {
    test::PcapBuilder b(1, false, true, 262144);
    uint64_t ts = 1'700'000'000ull * 1'000'000'000ull;
    auto put = [&](const std::vector<uint8_t>& f) {
      b.record(f, uint32_t(ts / 1000000000ull), uint32_t(ts % 1000000000ull));
      ts += 1000;
    };
    put(tcp_frame(cli, srv, 40000, 80, 0x02, 999, 0, ""));
    put(tcp_frame(srv, cli, 80, 40000, 0x12, 4999, 1000, ""));
    put(tcp_frame(cli, srv, 40000, 80, 0x10, 1000, 5000, ""));
    uint32_t end = 0;
    for (const Step& s : row.steps) {
      if (s.who == 'c') {
        put(tcp_frame(cli, srv, 40000, 80, 0x18, 1000 + s.off, 5000, orig.substr(s.off, s.len)));
        end = std::max(end, s.off + s.len);
      } else {
        put(tcp_frame(srv, cli, 80, 40000, 0x10, 5000, 1000 + s.off, ""));
      }
    }
    put(tcp_frame(cli, srv, 40000, 80, 0x11, 1000 + end, 5000, ""));
    put(tcp_frame(srv, cli, 80, 40000, 0x11, 5000, 1001 + end, ""));
    put(tcp_frame(cli, srv, 40000, 80, 0x10, 1001 + end, 5001, ""));
    const CaptureFile cap = CaptureFile::from_memory(b.bytes(), "acked-holes");
    std::string want;
    for (auto [o, n] : row.delivered) want += orig.substr(o, n);
    for (uint32_t batch : {1u, 2u, 3u, 65536u}) {
      SCOPED_TRACE(std::string(row.name) + ", batch " + std::to_string(batch));
      const StreamRun run = run_streams(cap, batch);
      const DirOut* d = run.by_name(dir_name(0, 0));
      ASSERT_TRUE(d);
      EXPECT_EQ(d->bytes, want);
      EXPECT_EQ(d->gaps, row.gaps);
      EXPECT_TRUE(d->ended);
      EXPECT_TRUE(d->offsets_ok);
      EXPECT_EQ(run.rep.totals.v[c_stream_ack_skips], row.ack_skips);
      EXPECT_EQ(run.rep.totals.v[c_stream_gaps], row.gaps.size());
      EXPECT_EQ(run.rep.totals.v[c_stream_flow_limit], 0u);
    }
    // With one packet a batch: whether the bytes after the first gap came in an earlier batch than
    // the direction's end (the close).
    BackendConfig bc;
    bc.batch_packets = 1;
    RunOptions ro;
    ro.policy.max_packets = 1;
    ro.policy.timeout_ns = 0;
    ro.want_streams = true;
    auto be = test::make_backend(bc);
    int call = 0, after_gap_at = -1, end_at = -1;
    run_capture(cap, *be, ro, nullptr, nullptr, [&](const std::vector<StreamChunk>& chunks, std::span<const uint8_t>) {
      ++call;
      for (const StreamChunk& c : chunks) {
        if (c.dir != 0 || (c.flags & kChunkConflict)) continue;
        if (c.gap && after_gap_at < 0) after_gap_at = call;
        if (c.flags & kChunkEnd) end_at = call;
      }
    });
    SCOPED_TRACE(row.name);
    ASSERT_GT(end_at, 0);
    if (row.before_end) {
      EXPECT_GT(after_gap_at, 0);
      EXPECT_LT(after_gap_at, end_at);
    }
  }
}

// sort_stream_chunks (a radix sort of (flow id, direction) keys) against std::stable_sort by the
// same keys: flow ids over the full 51 bits, few and many flows, chunks already in order, and
// each flow's chunks keeping their order (stable).
TEST(Stream, ChunkSortIsStableByFlowAndDirection) {
  std::mt19937_64 rng(20261127);
  for (const size_t n : {size_t(0), size_t(1), size_t(7), size_t(1000), size_t(70000)}) {
    for (const uint64_t flows : {uint64_t(1), uint64_t(3), uint64_t(500), uint64_t(1) << 51}) {
      for (const bool presorted : {false, true}) {
        std::vector<StreamChunk> v(n);
        std::vector<uint64_t> ids(std::min<uint64_t>(flows, 4096));
        for (auto& id : ids) id = rng() & ((uint64_t(1) << 51) - 1);
        for (size_t i = 0; i < n; ++i) {
          v[i] = StreamChunk{};
          v[i].flow_id = ids[rng() % ids.size()];
          v[i].dir = uint8_t(rng() & 1);
          v[i].off = i;  // the arrival order, which must survive within a flow and direction
        }
        const auto by_key = [](const StreamChunk& a, const StreamChunk& b) {
          return a.flow_id != b.flow_id ? a.flow_id < b.flow_id : a.dir < b.dir;
        };
        if (presorted) std::stable_sort(v.begin(), v.end(), by_key);
        std::vector<StreamChunk> want = v;
        std::stable_sort(want.begin(), want.end(), by_key);
        sort_stream_chunks(v);
        ASSERT_EQ(v.size(), want.size());
        for (size_t i = 0; i < n; ++i) {
          ASSERT_EQ(v[i].flow_id, want[i].flow_id) << n << " chunks, " << flows << " flows, at " << i;
          ASSERT_EQ(v[i].dir, want[i].dir);
          ASSERT_EQ(v[i].off, want[i].off);
        }
      }
    }
  }
}

