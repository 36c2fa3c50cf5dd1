// The capture reader on damaged and unusual files: each damage gives a message with the record
// number and byte offset, and the records before it are processed and counted.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "capture/capture_file.hpp"
#include "pipeline/pipeline.hpp"
#include "core/thread_pool.hpp"
#include "test_support.hpp"

using namespace gaspp;
using gaspp::test::PcapBuilder;
using gaspp::test::tcp4_frame;

namespace {

std::string write_temp(const std::vector<uint8_t>& b) {
  char name[] = "/tmp/gaspp-test-XXXXXX";
  const int fd = mkstemp(name);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(::write(fd, b.data(), b.size()), ssize_t(b.size()));
  ::close(fd);
  return name;
}

RunReport run_bytes(const std::vector<uint8_t>& b, std::string* path_out = nullptr) {
  const std::string path = write_temp(b);
  if (path_out) *path_out = path;
  CaptureFile cap = CaptureFile::open(path);
  auto be = gaspp::test::make_backend();
  RunReport r = run_capture(cap, *be, {});
  ::unlink(path.c_str());
  return r;
}

std::vector<uint8_t> three_packets(bool be = false, bool ns = false) {
  return PcapBuilder(1, be, ns).record(tcp4_frame(1, 10)).record(tcp4_frame(11, 20)).record(tcp4_frame(31, 0)).bytes();
}

}  // namespace

TEST(Capture, AllFourMagicVariantsReadAlike) {
  for (bool be : {false, true})
    for (bool ns : {false, true}) {
      auto b = PcapBuilder(1, be, ns).record(tcp4_frame(1, 10), 100, ns ? 123456789 : 123456).bytes();
      const std::string path = write_temp(b);
      CaptureFile cap = CaptureFile::open(path);
      EXPECT_EQ(cap.format().swapped, be ? 1 : 0);
      EXPECT_EQ(cap.format().nanos, ns ? 1 : 0);
      RecordWalker w(cap);
      RecordInfo r;
      ASSERT_TRUE(w.next(r));
      EXPECT_EQ(r.ts_ns, 100'000'000'000ull + (ns ? 123456789ull : 123456000ull));
      EXPECT_EQ(r.cap_len, 64u);
      EXPECT_FALSE(w.next(r));
      EXPECT_TRUE(w.issues().empty());
      ::unlink(path.c_str());
    }
}

TEST(Capture, EmptyFileIsAClearError) {
  const std::string path = write_temp({});
  try {
    CaptureFile::open(path);
    FAIL() << "expected an error";
  } catch (const CaptureError& e) {
    EXPECT_NE(std::string(e.what()).find("empty file"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  ::unlink(path.c_str());
}

TEST(Capture, BadMagicIsAClearError) {
  auto b = three_packets();
  b[0] = 'G'; b[1] = 'I'; b[2] = 'F'; b[3] = '8';
  const std::string path = write_temp(b);
  try {
    CaptureFile::open(path);
    FAIL() << "expected an error";
  } catch (const CaptureError& e) {
    EXPECT_NE(std::string(e.what()).find("not a pcap or pcapng file"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("0x38464947"), std::string::npos) << e.what();
  }
  ::unlink(path.c_str());
}

TEST(Capture, TruncatedGlobalHeaderIsAClearError) {
  auto b = three_packets();
  b.resize(10);
  const std::string path = write_temp(b);
  try {
    CaptureFile::open(path);
    FAIL() << "expected an error";
  } catch (const CaptureError& e) {
    EXPECT_NE(std::string(e.what()).find("global header cut short: 10 of 24 bytes"), std::string::npos) << e.what();
  }
  ::unlink(path.c_str());
}

TEST(Capture, RecordCutShortAtEndOfFileKeepsEarlierPackets) {
  auto b = three_packets();
  const size_t full = b.size();
  // Cut inside the third record's data, then inside its header.
  for (size_t cut : {full - 5, full - 54 - 10}) {  // third frame is 54 bytes
    auto c = b;
    c.resize(cut);
    RunReport r = run_bytes(c);
    EXPECT_EQ(r.totals.v[c_packets], 2u);
    EXPECT_TRUE(r.damaged);
    ASSERT_EQ(r.issues.size(), 1u);
    EXPECT_TRUE(r.issues[0].fatal);
    EXPECT_EQ(r.issues[0].record, 3u);
    const uint64_t third = 24 + (16 + 64) + (16 + 74);
    EXPECT_EQ(r.issues[0].offset, third);
    EXPECT_NE(r.issues[0].message.find("record 3 at byte offset " + std::to_string(third)), std::string::npos)
        << r.issues[0].message;
    EXPECT_NE(r.issues[0].message.find("cut short"), std::string::npos) << r.issues[0].message;
  }
}

TEST(Capture, CaplenOverSnaplenIsAWarningAndProcessed) {
  auto b = PcapBuilder(1, false, false, 60).record(tcp4_frame(1, 10)).record(tcp4_frame(2, 0)).bytes();
  RunReport r = run_bytes(b);
  EXPECT_EQ(r.totals.v[c_packets], 2u);
  EXPECT_FALSE(r.damaged);
  ASSERT_EQ(r.issues.size(), 1u);  // the 64-byte frame; the 54-byte one fits
  EXPECT_FALSE(r.issues[0].fatal);
  EXPECT_EQ(r.issues[0].record, 1u);
  EXPECT_NE(r.issues[0].message.find("exceeds the snap length 60"), std::string::npos) << r.issues[0].message;
  EXPECT_EQ(r.capture_warnings, 1u);
}

TEST(Capture, CaplenOver256KiBStopsReadingWithTheOffset) {
  auto b = PcapBuilder().record(tcp4_frame(1, 10)).bytes();
  const size_t second = b.size();
  PcapBuilder tail;
  auto more = PcapBuilder().record(tcp4_frame(2, 0), 1, 0, 300000, 300000).bytes();
  b.insert(b.end(), more.begin() + 24, more.end());
  RunReport r = run_bytes(b);
  EXPECT_EQ(r.totals.v[c_packets], 1u);
  EXPECT_TRUE(r.damaged);
  ASSERT_EQ(r.issues.size(), 1u);
  EXPECT_EQ(r.issues[0].offset, second);
  EXPECT_EQ(r.issues[0].record, 2u);
  EXPECT_NE(r.issues[0].message.find("captured length 300000 exceeds the 262144-byte limit"), std::string::npos)
      << r.issues[0].message;
}

TEST(Capture, ZeroLengthRecordsAreCountedAsMalformed) {
  auto b = PcapBuilder().record({}).record(tcp4_frame(1, 4)).record({}).bytes();
  RunReport r = run_bytes(b);
  EXPECT_EQ(r.totals.v[c_packets], 3u);
  EXPECT_EQ(r.passed + r.dropped, 3u);
  EXPECT_EQ(r.totals.v[c_malformed], 2u);
  EXPECT_EQ(r.totals.v[c_malformed_reason0 + int(MalformedReason::empty)], 2u);
  EXPECT_EQ(r.totals.v[c_l4_tcp], 1u);
  EXPECT_FALSE(r.damaged);
}

TEST(Capture, HeaderOnlyFileHasNoPackets) {
  auto b = PcapBuilder().bytes();
  RunReport r = run_bytes(b);
  EXPECT_EQ(r.totals.v[c_packets], 0u);
  EXPECT_FALSE(r.damaged);
  EXPECT_EQ(r.batches, 0u);
}

TEST(Capture, WireLengthBelowCaptureLengthIsAWarning) {
  auto b = PcapBuilder().record(tcp4_frame(1, 4), 1, 0, -1, 20).bytes();
  RunReport r = run_bytes(b);
  EXPECT_EQ(r.totals.v[c_packets], 1u);
  ASSERT_EQ(r.issues.size(), 1u);
  EXPECT_NE(r.issues[0].message.find("exceeds the original length 20"), std::string::npos);
}

TEST(Capture, PcapngGoesThroughLibpcap) {
  // A minimal pcapng: section header, interface description (Ethernet), one enhanced packet block.
  std::vector<uint8_t> b;
  auto u32 = [&](uint32_t v) { for (int k = 0; k < 4; ++k) b.push_back(uint8_t(v >> (8 * k))); };
  auto u16 = [&](uint16_t v) { b.push_back(uint8_t(v)); b.push_back(uint8_t(v >> 8)); };
  u32(0x0a0d0d0a); u32(28); u32(0x1a2b3c4d); u16(1); u16(0); u32(0xffffffff); u32(0xffffffff); u32(28);
  u32(1); u32(20); u16(1); u16(0); u32(65535); u32(20);
  const auto f = tcp4_frame(7, 6);
  const uint32_t padded = uint32_t((f.size() + 3) & ~size_t(3));
  const uint32_t len = 32 + padded;
  u32(6); u32(len); u32(0); u32(0); u32(1000000); u32(uint32_t(f.size())); u32(uint32_t(f.size()));
  b.insert(b.end(), f.begin(), f.end());
  b.resize(b.size() + (padded - f.size()), 0);
  u32(len);
  std::string path;
  RunReport r = run_bytes(b, &path);
  EXPECT_EQ(r.container, "pcapng");
  EXPECT_EQ(r.totals.v[c_packets], 1u);
  EXPECT_EQ(r.totals.v[c_l4_tcp], 1u);
  EXPECT_FALSE(r.damaged);
}

// pcapng is converted, streaming, into a mapped temporary file, not held in memory: the mapped
// bytes are exactly the classic nanosecond pcap of the same packets (PcapBuilder's), across the
// converter's 4 MiB write boundary; a temporary directory that cannot be used is a clear error.
TEST(Capture, PcapngIsConvertedIntoAMappedTemporaryFile) {
  std::vector<uint8_t> b;
  auto u32 = [&](uint32_t v) { for (int k = 0; k < 4; ++k) b.push_back(uint8_t(v >> (8 * k))); };
  auto u16 = [&](uint16_t v) { b.push_back(uint8_t(v)); b.push_back(uint8_t(v >> 8)); };
  // Section header; interface (Ethernet, snaplen 65535) with if_tsresol 9 (nanoseconds).
  u32(0x0a0d0d0a); u32(28); u32(0x1a2b3c4d); u16(1); u16(0); u32(0xffffffff); u32(0xffffffff); u32(28);
  u32(1); u32(32); u16(1); u16(0); u32(65535); u16(9); u16(1); b.push_back(9); b.push_back(0); b.push_back(0); b.push_back(0);
  u32(0); u32(32);
  PcapBuilder classic(1, false, true, 65535);
  for (uint32_t k = 0; k < 6000; ++k) {  // about 6.3 MB
    const auto f = tcp4_frame(k * 1000, uint16_t(900 + k % 200));
    const uint64_t ts = 1'700'000'000'000'000'000ull + uint64_t(k) * 1234567;
    const uint32_t padded = uint32_t((f.size() + 3) & ~size_t(3));
    const uint32_t len = 32 + padded;
    u32(6); u32(len); u32(0); u32(uint32_t(ts >> 32)); u32(uint32_t(ts)); u32(uint32_t(f.size())); u32(uint32_t(f.size()));
    b.insert(b.end(), f.begin(), f.end());
    b.resize(b.size() + (padded - f.size()), 0);
    u32(len);
    classic.record(f, uint32_t(ts / 1000000000ull), uint32_t(ts % 1000000000ull));
  }
  const auto path = std::filesystem::temp_directory_path() / ("gaspp-test-" + std::to_string(::getpid()) + ".pcapng");
  {
    std::FILE* fp = std::fopen(path.c_str(), "wb");
    ASSERT_TRUE(fp);
    ASSERT_EQ(std::fwrite(b.data(), 1, b.size(), fp), b.size());
    std::fclose(fp);
  }
  {
    const CaptureFile cap = CaptureFile::open(path.string());
    EXPECT_EQ(std::string(cap.container()), "pcapng");
    EXPECT_TRUE(cap.mapped());
    const std::vector<uint8_t> want = classic.bytes();
    ASSERT_EQ(cap.size(), want.size());
    EXPECT_EQ(std::memcmp(cap.data(), want.data(), want.size()), 0);
  }
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old ? old : "";
  ::setenv("TMPDIR", "/nonexistent/gaspp-tmp", 1);
  try {
    CaptureFile::open(path.string());
    ADD_FAILURE() << "opened with an unusable TMPDIR";
  } catch (const CaptureError& e) {
    EXPECT_NE(std::string(e.what()).find("temporary file in /nonexistent/gaspp-tmp (TMPDIR), which cannot be created"),
              std::string::npos) << e.what();
  }
  if (old) ::setenv("TMPDIR", saved.c_str(), 1);
  else ::unsetenv("TMPDIR");
  std::filesystem::remove(path);
}

namespace {

// Every record the walker returns, and its messages, with or without parallel indexing.
struct Walk {
  std::vector<uint64_t> offsets;
  std::vector<std::string> messages;
  uint64_t parallel_windows = 0, ahead_windows = 0;
};

Walk walk(const CaptureFile& cap, ThreadPool* pool, uint64_t chunk) {
  Walk w;
  RecordWalker rw(cap);
  if (pool) rw.enable_parallel(pool, chunk);
  RecordInfo r;
  while (rw.next(r)) w.offsets.push_back(r.offset);
  for (const auto& i : rw.issues()) w.messages.push_back(i.message);
  w.parallel_windows = rw.windows_parallel();
  w.ahead_windows = rw.windows_ahead();
  return w;
}

std::vector<uint8_t> mixed_sizes(int n) {
  PcapBuilder b(1, false, true, 65535);
  for (int k = 0; k < n; ++k) b.record(tcp4_frame(uint32_t(k), uint16_t((k * 37) % 1400)), 100 + k);
  return b.bytes();
}

}  // namespace

// Windows after the first are indexed on the walker's own thread while the one before is read
// (windows_ahead); the chain must be the serial walk's all the same.
TEST(Capture, ParallelIndexingReturnsTheSerialChain) {
  ThreadPool pool(4);
  const auto bytes = mixed_sizes(3000);
  const CaptureFile cap = CaptureFile::from_memory(bytes, "mixed");
  const Walk serial = walk(cap, nullptr, 0);
  ASSERT_EQ(serial.offsets.size(), 3000u);
  for (uint64_t chunk : {4096ull, 10000ull, 65536ull, 300000ull}) {
    const Walk par = walk(cap, &pool, chunk);
    EXPECT_EQ(par.offsets, serial.offsets) << "chunk " << chunk;
    EXPECT_TRUE(par.messages.empty());
    if (chunk < 300000) {
      EXPECT_GT(par.parallel_windows, 0u) << "chunk " << chunk;
    }
    if (chunk <= 10000) {  // several windows: all but the first indexed while the one before was read
      EXPECT_GT(par.ahead_windows, 0u) << "chunk " << chunk;
      EXPECT_EQ(par.ahead_windows + 1, par.parallel_windows) << "chunk " << chunk;
    }
  }
}

TEST(Capture, ParallelIndexingFallsBackOnDamageWithTheSameMessages) {
  ThreadPool pool(3);
  auto bytes = mixed_sizes(2000);
  // A record whose captured length exceeds its original length in the middle (a warning, the
  // framing stays intact), and the file cut short (fatal).
  const CaptureFile probe = CaptureFile::from_memory(bytes, "probe");
  const Walk full = walk(probe, nullptr, 0);
  const uint64_t o = full.offsets[1000];
  uint32_t cap_len;
  std::memcpy(&cap_len, bytes.data() + o + 8, 4);
  const uint32_t wire = cap_len - 1;
  std::memcpy(bytes.data() + o + 12, &wire, 4);
  bytes.resize(bytes.size() - 7);
  const CaptureFile cap = CaptureFile::from_memory(bytes, "damaged");
  const Walk serial = walk(cap, nullptr, 0);
  ASSERT_EQ(serial.messages.size(), 2u);
  EXPECT_NE(serial.messages[0].find("record 1001"), std::string::npos) << serial.messages[0];
  for (uint64_t chunk : {4096ull, 50000ull}) {
    const Walk par = walk(cap, &pool, chunk);
    EXPECT_EQ(par.offsets, serial.offsets) << "chunk " << chunk;
    EXPECT_EQ(par.messages, serial.messages) << "chunk " << chunk;
  }
}

TEST(Capture, PipelineIndexesLargeFilesInParallel) {
  const auto bytes = mixed_sizes(4000);
  const CaptureFile cap = CaptureFile::from_memory(bytes, "mixed");
  auto be = gaspp::test::make_backend();
  RunOptions ro;
  ro.file.index_threads = 4;
  ro.file.index_chunk_bytes = 8192;
  const RunReport par = run_capture(cap, *be, ro);
  ro.file.index_threads = 1;
  const RunReport ser = run_capture(cap, *be, ro);
  EXPECT_GT(par.index_windows_parallel, 0u);
  EXPECT_EQ(ser.index_windows_parallel, 0u);
  for (int k = 0; k < c_count_; ++k) EXPECT_EQ(par.totals.v[k], ser.totals.v[k]) << k;
  EXPECT_EQ(par.totals.v[c_packets], 4000u);
}

TEST(Capture, DamagedPcapngKeepsEarlierRecordsAndIsDamaged) {
  // Section header, interface description, two enhanced packet blocks; the second block's trailing
  // length is then cut off, so libpcap stops there.
  std::vector<uint8_t> b;
  auto u32 = [&](uint32_t v) { for (int k = 0; k < 4; ++k) b.push_back(uint8_t(v >> (8 * k))); };
  auto u16 = [&](uint16_t v) { b.push_back(uint8_t(v)); b.push_back(uint8_t(v >> 8)); };
  u32(0x0a0d0d0a); u32(28); u32(0x1a2b3c4d); u16(1); u16(0); u32(0xffffffff); u32(0xffffffff); u32(28);
  u32(1); u32(20); u16(1); u16(0); u32(65535); u32(20);
  for (int k = 0; k < 2; ++k) {
    const auto f = tcp4_frame(uint32_t(7 + k), 6);
    const uint32_t padded = uint32_t((f.size() + 3) & ~size_t(3));
    const uint32_t len = 32 + padded;
    u32(6); u32(len); u32(0); u32(0); u32(1000000 + k); u32(uint32_t(f.size())); u32(uint32_t(f.size()));
    b.insert(b.end(), f.begin(), f.end());
    b.resize(b.size() + (padded - f.size()), 0);
    u32(len);
  }
  b.resize(b.size() - 10);
  RunReport r = run_bytes(b);
  EXPECT_EQ(r.container, "pcapng");
  EXPECT_EQ(r.totals.v[c_packets], 1u);
  EXPECT_TRUE(r.damaged);
  ASSERT_EQ(r.issues.size(), 1u);
  EXPECT_TRUE(r.issues[0].fatal);
  EXPECT_EQ(r.issues[0].record, 2u);
  EXPECT_NE(r.issues[0].message.find("libpcap stopped reading"), std::string::npos) << r.issues[0].message;
}

namespace {

// A capture of `n` 1,000-byte TCP frames.
std::vector<uint8_t> thousand_byte_records(int n) {
  PcapBuilder b(1, false, true, 65535);
  for (int k = 0; k < n; ++k) b.record(tcp4_frame(uint32_t(k), 946), 100 + k);
  return b.bytes();
}

}  // namespace

// A capture truncated by another process while it is mapped: a read past the new end does not
// crash (the page reads as zeros and the fault is recorded), and the walk stops with a fatal issue
// that says the file shrank.
TEST(Capture, FileShrinkingUnderTheReaderEndsAsDamaged) {
  const auto bytes = thousand_byte_records(3000);
  for (const bool parallel : {false, true}) {
    const std::string path = write_temp(bytes);
    CaptureFile cap = CaptureFile::open(path);
    ThreadPool pool(2);
    RecordWalker w(cap);
    if (parallel) w.enable_parallel(&pool, 256 << 10);
    RecordInfo r;
    for (int k = 0; k < 10; ++k) ASSERT_TRUE(w.next(r));
    ASSERT_EQ(::truncate(path.c_str(), off_t(bytes.size() / 2)), 0);
    // A read of a page past the new end: zeros, not SIGBUS.
    volatile const uint8_t* tail = cap.data() + bytes.size() - 100;
    EXPECT_EQ(*tail, 0);
    EXPECT_TRUE(cap.faulted());
    uint64_t more = 0;
    while (w.next(r)) ++more;
    EXPECT_TRUE(w.stopped()) << (parallel ? "parallel" : "serial");
    EXPECT_LT(10 + more, 3000u);
    ASSERT_FALSE(w.issues().empty());
    EXPECT_TRUE(w.issues().back().fatal);
    EXPECT_NE(w.issues().back().message.find("shrank"), std::string::npos) << w.issues().back().message;
    ::unlink(path.c_str());
  }
}

// Opening a second capture must not take the guard from the first: a read past the first one's
// new end still reads zeros and is recorded, in a child process (where, unguarded, it would die of
// SIGBUS).
TEST(Capture, EveryOpenCaptureStaysGuarded) {
  const auto bytes = thousand_byte_records(300);
  const std::string a = write_temp(bytes), b = write_temp(bytes);
  const CaptureFile ca = CaptureFile::open(a);
  const CaptureFile cb = CaptureFile::open(b);
  ASSERT_EQ(::truncate(a.c_str(), off_t(bytes.size() / 2)), 0);
  EXPECT_EXIT(
      {
        volatile const uint8_t* tail = ca.data() + bytes.size() - 100;
        const uint8_t v = *tail;
        std::_Exit(v == 0 && ca.faulted() && !cb.faulted() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
  ::unlink(a.c_str());
  ::unlink(b.c_str());
}

TEST(Capture, PipelineOnAShrunkFileReportsDamage) {
  // The shrink happens after open and before the run: the pipeline stops where the file now ends.
  const auto bytes = thousand_byte_records(3000);
  const std::string path = write_temp(bytes);
  CaptureFile cap = CaptureFile::open(path);
  ASSERT_EQ(::truncate(path.c_str(), off_t(bytes.size() / 3)), 0);
  auto be = gaspp::test::make_backend();
  const RunReport rep = run_capture(cap, *be, {});
  EXPECT_TRUE(rep.damaged);
  EXPECT_GT(rep.totals.v[c_packets], 0u);
  EXPECT_LT(rep.totals.v[c_packets], 3000u);
  ::unlink(path.c_str());
}
