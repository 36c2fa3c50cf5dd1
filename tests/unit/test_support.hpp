// Helpers shared by the unit tests: the backend under test and an in-memory pcap builder.
#pragma once
#include <arpa/inet.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "capture/capture_file.hpp"
#include "capture/generator.hpp"

namespace gaspp::test {

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

}  // namespace gaspp::test
