// Helpers shared by the unit tests: the backend under test and an in-memory pcap builder.
#pragma once
#include <arpa/inet.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "capture/capture_file.hpp"
#include "gaspp/stream_chunk.hpp"
#include "tools/gen/generator.hpp"

namespace gaspp::test {

// A path in the test temporary directory for this process alone: ctest runs each test in a
// process of its own, several at once, and two tests writing one fixed name raced.
inline std::string temp_path(const std::string& name) {
  return (std::filesystem::path(std::getenv("TMPDIR") && *std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") /
          ("gaspp-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

// One direction's bytes [from, to) of s as a stream chunk of flow `flow_id` at stream offset
// `from` (the key's endpoint 0 the client), its bytes appended to `bytes`: what the application
// layer's process() takes.
inline void add_chunk(std::vector<StreamChunk>& chunks, std::vector<uint8_t>& bytes, const FlowKey& k, int dir,
                      const std::string& s, size_t from, size_t to, uint32_t packet, uint64_t flow_id = 7) {
  StreamChunk c{};
  c.key = k;
  c.flow_id = flow_id;
  c.off = from;
  c.data = uint32_t(bytes.size());
  c.len = uint32_t(to - from);
  c.dir = uint8_t(dir);
  c.flags = kChunkClientLo;
  c.prev = kChunkNoPrev;
  c.slot = 0;
  c.packet = packet;
  bytes.insert(bytes.end(), s.begin() + long(from), s.begin() + long(to));
  chunks.push_back(c);
}

// GASPP_TEST_BACKEND=cpu|cuda selects the backend; cpu when unset.
inline std::string backend_under_test() {
  const char* b = std::getenv("GASPP_TEST_BACKEND");
  return b && *b ? b : "cpu";
}

inline std::unique_ptr<Backend> make_backend(BackendConfig cfg = {}) {
  if (cfg.threads == 0) cfg.threads = 3;  // more workers than the CI machine's cores: ranges really split
  // Unit tests use a small flow table (fast to allocate, and to sweep under compute-sanitizer);
  // tests about the table set their own capacity.
  if (cfg.flow.capacity == FlowConfig{}.capacity) cfg.flow.capacity = 1u << 16;
  // And a small out-of-order buffer pool.
  if (cfg.stream.held_bytes == StreamConfig{}.held_bytes) cfg.stream.held_bytes = 4u << 20;
  return backend_under_test() == "cuda" ? make_cuda_backend(cfg) : make_cpu_backend(cfg);
}

// An address in text parsed to its 16 bytes (IPv4 in the first 4); all 0xff when unparsable, so
// a bad text never equals a good one. Tests compare addresses parsed, never as text.
inline std::array<uint8_t, 16> parsed_address(const std::string& text, bool v6) {
  std::array<uint8_t, 16> b{};
  if (inet_pton(v6 ? AF_INET6 : AF_INET, text.c_str(), b.data()) != 1) b.fill(0xff);
  return b;
}

// The real captures and rules: $GASPP_DATA, else ../shared/data beside the checkout.
inline std::filesystem::path shared_data_dir() {
  const char* d = std::getenv("GASPP_DATA");
  if (d && *d) return d;
  return std::filesystem::path(GASPP_SOURCE_DIR) / ".." / "shared" / "data";
}

// Skips the test when `path` (real data from ../shared/data) is missing, except under CI (the CI
// environment variable set), where missing data fails the test: a CI run must test everything.
#define GASPP_REQUIRE_PATH(path)                                                                   \
  do {                                                                                             \
    if (!std::filesystem::exists(path)) {                                                          \
      if (std::getenv("CI")) FAIL() << (path) << " not found (../shared/data beside the checkout, or GASPP_DATA)"; \
      GTEST_SKIP() << (path) << " not found (../shared/data beside the checkout, or GASPP_DATA)";  \
    }                                                                                              \
  } while (0)

// Whether `tool` is a command on PATH (tshark, ...).
inline bool have_tool(const std::string& tool) {
  return std::system(("command -v '" + tool + "' >/dev/null 2>&1").c_str()) == 0;
}

// Skips the test when `tool` (an external oracle such as tshark) is not installed, except under CI,
// where it fails the test, as GASPP_REQUIRE_PATH does for data.
#define GASPP_REQUIRE_TOOL(tool)                                                                   \
  do {                                                                                             \
    if (!::gaspp::test::have_tool(tool)) {                                                         \
      if (std::getenv("CI")) FAIL() << (tool) << " not found on PATH (scripts/setup.sh installs it)"; \
      GTEST_SKIP() << (tool) << " not found on PATH (scripts/setup.sh installs it)";               \
    }                                                                                              \
  } while (0)

// Builds a classic pcap file in memory, in either byte order and time unit.
class PcapBuilder {
 public:
  explicit PcapBuilder(uint32_t linktype = 1, bool big_endian = false, bool nanos = false, uint32_t snaplen = 65535)
      : be_(big_endian) {
    put32(nanos ? 0xa1b23c4d : 0xa1b2c3d4);
    put16(2);
    put16(4);
    put32(0);
    put32(0);
    put32(snaplen);
    put32(linktype);
  }
  PcapBuilder& record(const std::vector<uint8_t>& frame, uint32_t ts_sec = 1, uint32_t ts_frac = 0,
                      int64_t caplen = -1, int64_t wirelen = -1) {
    put32(ts_sec);
    put32(ts_frac);
    put32(caplen < 0 ? uint32_t(frame.size()) : uint32_t(caplen));
    put32(wirelen < 0 ? uint32_t(frame.size()) : uint32_t(wirelen));
    bytes_.insert(bytes_.end(), frame.begin(), frame.end());
    return *this;
  }
  PcapBuilder& raw(const std::vector<uint8_t>& b) {
    bytes_.insert(bytes_.end(), b.begin(), b.end());
    return *this;
  }
  std::vector<uint8_t> bytes() const { return bytes_; }

 private:
  void put16(uint16_t v) {
    if (be_) { bytes_.push_back(uint8_t(v >> 8)); bytes_.push_back(uint8_t(v)); }
    else { bytes_.push_back(uint8_t(v)); bytes_.push_back(uint8_t(v >> 8)); }
  }
  void put32(uint32_t v) {
    for (int k = 0; k < 4; ++k) bytes_.push_back(uint8_t(be_ ? v >> (24 - 8 * k) : v >> (8 * k)));
  }
  bool be_;
  std::vector<uint8_t> bytes_;
};

// A minimal, valid Ethernet/IPv4/TCP frame with `payload` bytes of data (checksums not computed).
inline std::vector<uint8_t> tcp4_frame(uint32_t seq, uint16_t payload = 0, uint8_t flags = 0x18) {
  std::vector<uint8_t> f(14 + 20 + 20 + payload, 0);
  f[0] = 0x02; f[6] = 0x02; f[12] = 0x08; f[13] = 0x00;
  uint8_t* ip = f.data() + 14;
  ip[0] = 0x45;
  const uint16_t tot = uint16_t(40 + payload);
  ip[2] = uint8_t(tot >> 8); ip[3] = uint8_t(tot);
  ip[8] = 64; ip[9] = 6;
  ip[12] = 10; ip[15] = 1; ip[16] = 10; ip[19] = 2;
  uint8_t* t = ip + 20;
  t[0] = 0x30; t[1] = 0x39; t[2] = 0x00; t[3] = 0x50;
  for (int k = 0; k < 4; ++k) t[4 + k] = uint8_t(seq >> (24 - 8 * k));
  t[12] = 0x50; t[13] = flags; t[14] = 0xff; t[15] = 0xff;
  for (uint16_t k = 0; k < payload; ++k) t[20 + k] = uint8_t('a' + k % 26);
  return f;
}

// A generated workload as an in-memory nanosecond pcap.
inline CaptureFile generated_capture(const GenConfig& g, const char* name = "generated") {
  PcapBuilder b(1, false, true, 262144);
  std::vector<uint8_t> frame;
  generate(g, [&](uint64_t ts, const uint8_t* f, uint32_t len) {
    frame.assign(f, f + len);
    b.record(frame, uint32_t(ts / 1000000000ull), uint32_t(ts % 1000000000ull));
  });
  return CaptureFile::from_memory(b.bytes(), name);
}

// Lowers every TCP acknowledgement that acknowledges bytes the capture has not shown yet to the
// end of what the other side has sent contiguously so far, in capture order: what a receiver of
// this traffic would acknowledge if it got exactly what the capture holds. A capture edited or
// generated with segments moved later or left out then says that the receiver waited for them,
// instead of having acknowledged bytes not yet sent (which a reassembler that follows
// acknowledgements, Suricata's or ours, takes for bytes the capture missed, and skips).
// Frames: Ethernet, 802.1Q tags, IPv4 or IPv6 without extension headers, TCP; others are left as
// they are. Checksums are not redone (the pipeline does not check them unless asked).
inline void ack_only_received(std::vector<std::vector<uint8_t>>& frames) {
  struct Side {
    uint32_t base = 0, next = 0;                 // next: relative to base
    std::vector<std::pair<uint32_t, uint32_t>> waiting;  // (start, end) relative, beyond next
  };
  std::map<std::vector<uint8_t>, Side> sides;  // sender address + port
  auto be32 = [](const uint8_t* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; };
  for (auto& fr : frames) {
    size_t at = 12;
    while (at + 4 <= fr.size() && fr[at] == 0x81 && fr[at + 1] == 0x00) at += 4;
    if (at + 2 > fr.size()) continue;
    const uint16_t type = uint16_t(fr[at] << 8 | fr[at + 1]);
    const size_t ip = at + 2;
    size_t tcp = 0, alen = 0, src = 0, dst = 0;
    uint32_t plen = 0;
    if (type == 0x0800 && ip + 20 <= fr.size() && fr[ip + 9] == 6) {
      const size_t ihl = (fr[ip] & 15) * 4u;
      tcp = ip + ihl, alen = 4, src = ip + 12, dst = ip + 16;
      plen = uint32_t(fr[ip + 2] << 8 | fr[ip + 3]) - uint32_t(ihl);
    } else if (type == 0x86dd && ip + 40 <= fr.size() && fr[ip + 6] == 6) {
      tcp = ip + 40, alen = 16, src = ip + 8, dst = ip + 24;
      plen = uint32_t(fr[ip + 4] << 8 | fr[ip + 5]);
    } else {
      continue;
    }
    if (tcp + 20 > fr.size()) continue;
    const uint32_t thl = (fr[tcp + 12] >> 4) * 4u;
    const uint32_t data = plen - thl;
    const uint8_t flags = fr[tcp + 13];
    std::vector<uint8_t> me_key(fr.begin() + long(src), fr.begin() + long(src + alen));
    me_key.insert(me_key.end(), fr.begin() + long(tcp), fr.begin() + long(tcp + 2));
    std::vector<uint8_t> peer_key(fr.begin() + long(dst), fr.begin() + long(dst + alen));
    peer_key.insert(peer_key.end(), fr.begin() + long(tcp + 2), fr.begin() + long(tcp + 4));
    const uint32_t seq = be32(&fr[tcp + 4]);
    auto [it, fresh] = sides.try_emplace(me_key);
    Side& me = it->second;
    if (fresh) me.base = seq;
    // The sequence space this segment takes (SYN and FIN one each), relative to the first seen.
    const uint32_t a = seq - me.base, b = a + data + ((flags & 0x02) ? 1 : 0) + ((flags & 0x01) ? 1 : 0);
    if (b != a && int32_t(b - me.next) > 0) me.waiting.emplace_back(a, b);
    for (bool moved = true; moved;) {
      moved = false;
      for (size_t k = 0; k < me.waiting.size(); ++k)
        if (int32_t(me.waiting[k].first - me.next) <= 0) {
          if (int32_t(me.waiting[k].second - me.next) > 0) me.next = me.waiting[k].second;
          me.waiting.erase(me.waiting.begin() + long(k));
          moved = true;
          break;
        }
    }
    const auto peer = sides.find(peer_key);
    if (!(flags & 0x10) || peer == sides.end()) continue;
    const uint32_t most = peer->second.base + peer->second.next;
    if (int32_t(be32(&fr[tcp + 8]) - most) > 0)
      for (int k = 0; k < 4; ++k) fr[tcp + 8 + size_t(k)] = uint8_t(most >> (24 - 8 * k));
  }
}

// generated_capture() with ack_only_received() applied: the generator's losses and reorderings
// then act as if they happened before the receiver (it waits for the bytes), not at the capture.
inline CaptureFile generated_capture_acking_received(const GenConfig& g, const char* name = "generated") {
  std::vector<std::vector<uint8_t>> frames;
  std::vector<uint64_t> ts;
  generate(g, [&](uint64_t t, const uint8_t* f, uint32_t len) {
    frames.emplace_back(f, f + len);
    ts.push_back(t);
  });
  ack_only_received(frames);
  PcapBuilder b(1, false, true, 262144);
  for (size_t i = 0; i < frames.size(); ++i)
    b.record(frames[i], uint32_t(ts[i] / 1000000000ull), uint32_t(ts[i] % 1000000000ull));
  return CaptureFile::from_memory(b.bytes(), name);
}

}  // namespace gaspp::test
