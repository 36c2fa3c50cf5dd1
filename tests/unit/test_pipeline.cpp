// The batched pipeline against a reference: decoding each record directly on the host, one by one.
// Whatever the backend, batch size, batch limits and transfer path, every packet must come out
// with the same decoded fields and the totals must add up.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "capture/generator.hpp"
#include "core/pipeline.hpp"
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
  const CaptureFile cap = generated(GenMode::mix, 3000, 0.3, 0.3);
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
  const CaptureFile cap = generated(GenMode::http, 5000, 0.5, 0.5);
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
  const CaptureFile cap = generated(GenMode::mix, 2000, 0.2, 0.2, 9);
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
      EXPECT_EQ(p == "compacted" ? r.rep.batches_compacted : p == "sliced" ? r.rep.batches_sliced : r.rep.batches_direct,
                batches);
      EXPECT_EQ(r.rep.batches_direct + r.rep.batches_compacted + r.rep.batches_sliced, batches);
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
