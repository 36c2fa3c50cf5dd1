// tools/gen/generator.cpp — deterministic synthetic traffic generator (see generator.hpp): the
// fixed and mix modes, the checks of a configuration and the pcap output; the http mode is in
// http.cpp, the parts both share in frames.hpp.
#include "tools/gen/generator.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include "tools/gen/frames.hpp"

namespace gaspp {
namespace {

using namespace gen_detail;

// ---------------------------------------------------------------------------------------------
// fixed and mix modes: packets spread uniformly over a fixed set of flows.

enum class SizeClass { tiny, small, medium, large, full };

// Untagged frame length of a backbone-like mix (see generator.hpp for the table).
uint32_t sample_mix_length(Rng& rng, SizeClass& cls) {
  const uint32_t u = rng.below(100);
  if (u < 41) {
    cls = SizeClass::tiny;
    return rng.range(60, 66);
  }
  if (u < 57) {
    cls = SizeClass::small;
    return rng.range(67, 100);
  }
  if (u < 63) {
    cls = SizeClass::medium;
    return rng.range(101, 576);
  }
  if (u < 67) {
    cls = SizeClass::large;
    return rng.range(577, 1513);
  }
  cls = SizeClass::full;
  return 1514;
}

// Makes a fixed-mode flow fit into `size` bytes (see generator.hpp).
void fit_flow(Flow& f, uint32_t size) {
  if (f.header_len() > size) f.proto = kUdp;
  if (f.header_len() > size) f.vlan = false;
  if (f.header_len() > size) {
    f.v6 = false;
    const uint8_t c[4] = {10, f.ip[0][1], f.ip[0][2], uint8_t(1 + f.ip[0][3] % 254)};
    const uint8_t s[4] = {198, uint8_t(18 + (f.ip[1][5] & 1)), f.ip[1][6],
                          uint8_t(1 + f.ip[1][7] % 254)};
    std::memcpy(f.ip[0], c, 4);
    std::memcpy(f.ip[1], s, 4);
  }
}

void run_flows(const GenConfig& cfg, Rng& rng, Emitter& em) {
  const bool fixed = cfg.mode == GenMode::fixed;
  std::vector<Flow> flows(cfg.flows);
  for (auto& f : flows) {
    const uint8_t proto = rng.below(10) < 8 ? kTcp : kUdp;
    f = make_flow(rng, cfg, proto, uint16_t(rng.range(16000, 16999)));
    if (fixed) fit_flow(f, cfg.size);
  }
  PacketWriter w;
  PayloadFiller fill(cfg);
  for (uint64_t i = 0; i < cfg.packets; ++i) {
    Flow& f = flows[rng.below(cfg.flows)];
    const uint32_t hdr = f.header_len();
    SizeClass cls = SizeClass::full;
    const uint32_t target = fixed ? cfg.size : sample_mix_length(rng, cls) + (f.vlan ? 4 : 0);
    uint32_t payload = target > hdr ? target - hdr : 0;
    int dir;
    uint8_t* p;
    if (f.proto == kTcp) {
      if (!fixed && cls == SizeClass::tiny) payload = 0;  // pure ACK
      if (fixed)
        dir = int(rng.below(2));
      else  // data mostly flows server->client, ACKs client->server
        dir = rng.below(100) < 85 ? (payload ? 1 : 0) : (payload ? 0 : 1);
      const uint8_t flags = payload ? (kAck | kPsh) : kAck;
      p = w.begin_tcp(f, dir, f.seq[dir], f.seq[dir ^ 1], flags, 1024, nullptr, 0, payload);
      f.seq[dir] += payload;
    } else {
      if (!fixed) payload = std::max<uint32_t>(payload, 8);
      dir = int(rng.below(2));
      p = w.begin_udp(f, dir, payload);
    }
    fill.random(rng, p, payload);
    fill.maybe_plant(rng, p, payload);
    const uint32_t len = w.finish();
    em.submit(w.data(), len, f.held[dir], true);
  }
}


bool is_rate(double x) { return x >= 0 && x <= 1; }  // false for NaN

void check_rate(const char* name, double x) {
  if (!is_rate(x))
    throw std::invalid_argument(std::string("GenConfig.") + name + " = " + std::to_string(x) +
                                ": must be within 0..1");
}

// ---------------------------------------------------------------------------------------------
// pcap output.

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

[[noreturn]] void throw_io(const std::string& what, const std::string& path, int err) {
  throw std::runtime_error("generate_pcap: " + what + " '" + path + "': " + std::strerror(err));
}

void put_le32(uint8_t* p, uint32_t v) {
  p[0] = uint8_t(v);
  p[1] = uint8_t(v >> 8);
  p[2] = uint8_t(v >> 16);
  p[3] = uint8_t(v >> 24);
}

}  // namespace

void validate(const GenConfig& cfg) {
  if (cfg.mode == GenMode::fixed && (cfg.size < 60 || cfg.size > 1514))
    throw std::invalid_argument("GenConfig.size = " + std::to_string(cfg.size) +
                                ": fixed-mode frame length must be within 60..1514 bytes "
                                "(Ethernet frame without FCS)");
  if (cfg.flows == 0) throw std::invalid_argument("GenConfig.flows must be at least 1");
  check_rate("reorder", cfg.reorder);
  check_rate("duplicate", cfg.duplicate);
  check_rate("loss", cfg.loss);
  check_rate("ipv6_share", cfg.ipv6_share);
  check_rate("vlan_share", cfg.vlan_share);
  check_rate("plant_rate", cfg.plant_rate);
  if (!(cfg.gbps > 0) || !std::isfinite(cfg.gbps))
    throw std::invalid_argument("GenConfig.gbps = " + std::to_string(cfg.gbps) +
                                ": line rate must be positive and finite");
  if (cfg.mode != GenMode::fixed && cfg.mode != GenMode::mix && cfg.mode != GenMode::http)
    throw std::invalid_argument("GenConfig.mode: unknown mode");
}

const char* to_string(GenMode mode) {
  switch (mode) {
    case GenMode::fixed: return "fixed";
    case GenMode::mix: return "mix";
    case GenMode::http: return "http";
  }
  return "unknown";
}

GenMode parse_gen_mode(std::string_view name) {
  if (name == "fixed") return GenMode::fixed;
  if (name == "mix") return GenMode::mix;
  if (name == "http") return GenMode::http;
  throw std::invalid_argument("unknown generator mode '" + std::string(name) +
                              "' (expected fixed, mix or http)");
}

void generate(const GenConfig& cfg, const FrameSink& sink) {
  validate(cfg);
  Rng rng(cfg.seed);
  Emitter em(cfg, sink);
  if (cfg.mode == GenMode::http)
    run_http(cfg, rng, em);
  else
    run_flows(cfg, rng, em);
  em.flush();
}

uint64_t generate_pcap(const GenConfig& cfg, const std::string& path) {
  validate(cfg);
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "wb"));
  if (!file) throw_io("cannot open", path, errno);
  std::setvbuf(file.get(), nullptr, _IONBF, 0);  // buffered below, in large blocks

  constexpr size_t kBufBytes = size_t(4) << 20;
  std::vector<uint8_t> buf(kBufBytes);
  size_t used = 0;
  auto flush = [&] {
    if (used && std::fwrite(buf.data(), 1, used, file.get()) != used)
      throw_io("cannot write", path, errno);
    used = 0;
  };

  uint8_t* g = buf.data();
  put_le32(g, 0xa1b23c4d);  // nanosecond-resolution pcap
  g[4] = 2;                 // version 2.4 (major, minor as le16)
  g[5] = 0;
  g[6] = 4;
  g[7] = 0;
  put_le32(g + 8, 0);       // thiszone
  put_le32(g + 12, 0);      // sigfigs
  put_le32(g + 16, 262144); // snaplen
  put_le32(g + 20, 1);      // LINKTYPE_ETHERNET
  used = 24;

  uint64_t written = 0;
  generate(cfg, [&](uint64_t ts_ns, const uint8_t* frame, uint32_t len) {
    if (used + 16 + len > kBufBytes) flush();
    uint8_t* r = buf.data() + used;
    put_le32(r, uint32_t(ts_ns / 1'000'000'000ull));
    put_le32(r + 4, uint32_t(ts_ns % 1'000'000'000ull));
    put_le32(r + 8, len);
    put_le32(r + 12, len);
    std::memcpy(r + 16, frame, len);
    used += 16 + size_t(len);
    ++written;
  });
  flush();
  std::FILE* f = file.release();
  if (std::fclose(f) != 0) throw_io("cannot close", path, errno);
  return written;
}

}  // namespace gaspp
