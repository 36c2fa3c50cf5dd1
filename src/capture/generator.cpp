// capture/generator.cpp — deterministic synthetic traffic generator (see generator.hpp).
#include "capture/generator.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

namespace gaspp {
namespace {

constexpr uint32_t kMaxFrame = 2048;      // largest frame built is 1518 (VLAN + 1500-byte IP)
constexpr uint32_t kMinFrame = 60;        // Ethernet minimum without FCS
constexpr uint32_t kWireOverhead = 24;    // preamble 8 + FCS 4 + inter-frame gap 12
constexpr uint8_t kTcp = 6, kUdp = 17;
constexpr uint8_t kFin = 0x01, kSyn = 0x02, kPsh = 0x08, kAck = 0x10;
constexpr uint64_t kImpairStream = 0x6a09e667f3bcc909ull;  // seeds the impairment stream

// ---------------------------------------------------------------------------------------------
// Random numbers: xoshiro256** seeded through splitmix64. Everything derived from it uses integer
// arithmetic or exact double comparisons, so output is identical across runs and platforms.

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (auto& w : s_) w = splitmix64(seed);
  }
  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1).
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }
  // Uniform in [0, n), n >= 1.
  uint32_t below(uint32_t n) { return uint32_t(((next() >> 32) * n) >> 32); }
  // Uniform in [lo, hi].
  uint32_t range(uint32_t lo, uint32_t hi) { return lo + below(hi - lo + 1); }
  // True with probability p; draws nothing when p <= 0.
  bool chance(double p) { return p > 0 && uniform() < p; }
  void fill(uint8_t* p, size_t n) {
    while (n >= 8) {
      const uint64_t v = next();
      std::memcpy(p, &v, 8);
      p += 8;
      n -= 8;
    }
    if (n) {
      const uint64_t v = next();
      std::memcpy(p, &v, n);
    }
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

// ---------------------------------------------------------------------------------------------
// Internet checksum. The one's-complement sum is independent of byte order (RFC 1071), so words
// are summed as loaded from memory and the folded result is stored back the same way.

uint64_t sum_words(uint64_t acc, const uint8_t* p, size_t n) {
  uint64_t acc2 = 0;
  while (n >= 16) {
    uint64_t a, b;
    std::memcpy(&a, p, 8);
    std::memcpy(&b, p + 8, 8);
    acc += (a & 0xffffffffu) + (a >> 32);
    acc2 += (b & 0xffffffffu) + (b >> 32);
    p += 16;
    n -= 16;
  }
  acc += acc2;
  if (n >= 8) {
    uint64_t a;
    std::memcpy(&a, p, 8);
    acc += (a & 0xffffffffu) + (a >> 32);
    p += 8;
    n -= 8;
  }
  if (n >= 4) {
    uint32_t a;
    std::memcpy(&a, p, 4);
    acc += a;
    p += 4;
    n -= 4;
  }
  if (n >= 2) {
    uint16_t a;
    std::memcpy(&a, p, 2);
    acc += a;
    p += 2;
    n -= 2;
  }
  if (n) {
    uint16_t a = 0;  // odd trailing byte, padded with a zero byte after it
    std::memcpy(&a, p, 1);
    acc += a;
  }
  return acc;
}

void store_checksum(uint8_t* at, uint64_t acc, bool zero_as_ffff) {
  acc = (acc & 0xffffffffu) + (acc >> 32);
  acc = (acc & 0xffffffffu) + (acc >> 32);
  while (acc >> 16) acc = (acc & 0xffff) + (acc >> 16);
  uint16_t c = uint16_t(~acc);
  if (c == 0 && zero_as_ffff) c = 0xffff;  // UDP: 0 means "no checksum"
  std::memcpy(at, &c, 2);
}

void put16(uint8_t* p, uint32_t v) {
  p[0] = uint8_t(v >> 8);
  p[1] = uint8_t(v);
}
void put32(uint8_t* p, uint32_t v) {
  p[0] = uint8_t(v >> 24);
  p[1] = uint8_t(v >> 16);
  p[2] = uint8_t(v >> 8);
  p[3] = uint8_t(v);
}

// ---------------------------------------------------------------------------------------------
// Flows. Side 0 is the client, side 1 the server; direction d means "sent by side d".

struct Flow {
  uint8_t mac[2][6];
  uint8_t ip[2][16];   // IPv4 uses the first 4 bytes
  uint16_t port[2];
  uint8_t ttl[2];      // as observed at the capture point
  uint16_t ip_id[2];
  uint32_t seq[2];     // next TCP sequence number of each side
  uint32_t flow_label;
  uint16_t vid;
  bool v6, vlan;
  uint8_t proto;
  int32_t held[2];     // reorder slot holding a frame of this direction, -1 if none

  uint32_t l3_offset() const { return vlan ? 18 : 14; }
  uint32_t header_len() const {
    return l3_offset() + (v6 ? 40 : 20) + (proto == kTcp ? 20 : 8);
  }
};

Flow make_flow(Rng& rng, const GenConfig& cfg, uint8_t proto, uint16_t server_port) {
  Flow f{};
  f.proto = proto;
  f.v6 = rng.chance(cfg.ipv6_share);
  f.vlan = rng.chance(cfg.vlan_share);
  f.vid = uint16_t(rng.range(2, 4094));
  for (auto& m : f.mac) {
    rng.fill(m, 6);
    m[0] = uint8_t((m[0] & 0xfc) | 0x02);  // locally administered, unicast
  }
  uint8_t r[16];
  rng.fill(r, 16);
  if (!f.v6) {
    const uint8_t c[4] = {10, r[0], r[1], uint8_t(1 + r[2] % 254)};
    const uint8_t s[4] = {198, uint8_t(18 + (r[3] & 1)), r[4], uint8_t(1 + r[5] % 254)};
    std::memcpy(f.ip[0], c, 4);
    std::memcpy(f.ip[1], s, 4);
  } else {
    f.ip[0][0] = 0xfd;
    rng.fill(&f.ip[0][1], 15);
    const uint8_t doc[4] = {0x20, 0x01, 0x0d, 0xb8};
    std::memcpy(f.ip[1], doc, 4);
    rng.fill(&f.ip[1][4], 12);
    f.ip[0][15] |= 1;  // never an all-zero interface identifier
    f.ip[1][15] |= 1;
  }
  f.port[0] = uint16_t(rng.range(61000, 65535));
  f.port[1] = server_port;
  f.ttl[0] = uint8_t(64 - rng.below(8));
  f.ttl[1] = uint8_t((rng.below(2) ? 128 : 64) - rng.below(20));
  f.ip_id[0] = uint16_t(rng.next());
  f.ip_id[1] = uint16_t(rng.next());
  f.seq[0] = uint32_t(rng.next());
  f.seq[1] = uint32_t(rng.next());
  f.flow_label = uint32_t(rng.next()) & 0xfffff;
  f.held[0] = f.held[1] = -1;
  return f;
}

// Builds one frame at a time into a reused buffer: begin_tcp/begin_udp write every header and
// return where the payload goes; finish() computes the L4 checksum and pads short frames.
class PacketWriter {
 public:
  uint8_t* begin_tcp(Flow& f, int dir, uint32_t seq, uint32_t ack, uint8_t flags, uint16_t window,
                     const uint8_t* opts, uint32_t opt_len, uint32_t payload_len) {
    const uint32_t hl = 20 + opt_len;
    uint8_t* t = begin_ip(f, dir, kTcp, hl + payload_len);
    put16(t, f.port[dir]);
    put16(t + 2, f.port[dir ^ 1]);
    put32(t + 4, seq);
    put32(t + 8, ack);
    t[12] = uint8_t((hl / 4) << 4);
    t[13] = flags;
    put16(t + 14, window);
    put32(t + 16, 0);  // checksum, urgent pointer
    if (opt_len) std::memcpy(t + 20, opts, opt_len);
    csum_at_ = 16;
    return t + hl;
  }

  uint8_t* begin_udp(Flow& f, int dir, uint32_t payload_len) {
    uint8_t* u = begin_ip(f, dir, kUdp, 8 + payload_len);
    put16(u, f.port[dir]);
    put16(u + 2, f.port[dir ^ 1]);
    put16(u + 4, 8 + payload_len);
    put16(u + 6, 0);
    csum_at_ = 6;
    return u + 8;
  }

  // Returns the frame length.
  uint32_t finish() {
    uint8_t* ip = buf_ + l3_;
    uint8_t* l4 = buf_ + l4_;
    uint64_t acc = v6_ ? sum_words(0, ip + 8, 32) : sum_words(0, ip + 12, 8);
    const uint8_t pseudo[4] = {0, proto_, uint8_t(l4_len_ >> 8), uint8_t(l4_len_)};
    acc = sum_words(acc, pseudo, 4);
    acc = sum_words(acc, l4, l4_len_);
    store_checksum(l4 + csum_at_, acc, proto_ == kUdp);
    uint32_t len = l4_ + l4_len_;
    if (len < kMinFrame) {
      std::memset(buf_ + len, 0, kMinFrame - len);
      len = kMinFrame;
    }
    return len;
  }

  const uint8_t* data() const { return buf_; }

 private:
  uint8_t* begin_ip(Flow& f, int dir, uint8_t proto, uint32_t l4_len) {
    const int src = dir, dst = dir ^ 1;
    uint8_t* b = buf_;
    std::memcpy(b, f.mac[dst], 6);
    std::memcpy(b + 6, f.mac[src], 6);
    uint32_t o = 12;
    if (f.vlan) {
      put16(b + o, 0x8100);
      put16(b + o + 2, f.vid);
      o += 4;
    }
    put16(b + o, f.v6 ? 0x86dd : 0x0800);
    o += 2;
    uint8_t* ip = b + o;
    l3_ = o;
    if (!f.v6) {
      ip[0] = 0x45;
      ip[1] = 0;
      put16(ip + 2, 20 + l4_len);
      put16(ip + 4, f.ip_id[dir]++);
      put16(ip + 6, 0x4000);  // DF
      ip[8] = f.ttl[dir];
      ip[9] = proto;
      ip[10] = ip[11] = 0;
      std::memcpy(ip + 12, f.ip[src], 4);
      std::memcpy(ip + 16, f.ip[dst], 4);
      store_checksum(ip + 10, sum_words(0, ip, 20), false);
      l4_ = o + 20;
    } else {
      put32(ip, 0x60000000u | f.flow_label);
      put16(ip + 4, l4_len);
      ip[6] = proto;
      ip[7] = f.ttl[dir];
      std::memcpy(ip + 8, f.ip[src], 16);
      std::memcpy(ip + 24, f.ip[dst], 16);
      l4_ = o + 40;
    }
    v6_ = f.v6;
    proto_ = proto;
    l4_len_ = l4_len;
    return b + l4_;
  }

  alignas(16) uint8_t buf_[kMaxFrame];
  uint32_t l3_ = 0, l4_ = 0, l4_len_ = 0, csum_at_ = 0;
  uint8_t proto_ = 0;
  bool v6_ = false;
};

// Pseudo-random payload bytes; plants cfg.plant with probability plant_rate where it fits.
// A few leading bytes are constrained so that the payload is never all zero and tshark's
// heuristic dissectors do not claim random data and then report it as malformed:
//   byte 0 within 0x10..0x7f   RTCP wants version 2 (0b10xxxxxx), Thrift 0x80/0x82, TPKT 3
//   byte 1 high nibble != 4    OSI CLTP takes 0x4? as a unit-data TPDU code
//   byte 4 below 0x80          Thrift framed transport puts 0x80/0x82 after a 4-byte length
class PayloadFiller {
 public:
  explicit PayloadFiller(const GenConfig& cfg) : plant_(cfg.plant), rate_(cfg.plant_rate) {}

  void random(Rng& rng, uint8_t* p, uint32_t n) {
    if (n == 0) return;
    rng.fill(p, n);
    p[0] = uint8_t(0x10 + p[0] % 0x70);
    if (n > 1 && (p[1] & 0xf0) == 0x40) p[1] ^= 0x80;
    if (n > 4) p[4] &= 0x7f;
  }
  void maybe_plant(Rng& rng, uint8_t* p, uint32_t n) {
    if (plant_.empty() || n < plant_.size() || !rng.chance(rate_)) return;
    const uint32_t off = rng.below(uint32_t(n - plant_.size() + 1));
    std::memcpy(p + off, plant_.data(), plant_.size());
  }

 private:
  const std::string& plant_;
  double rate_;
};

// ---------------------------------------------------------------------------------------------
// Emission: impairments, reorder holding, timestamps.

class Emitter {
 public:
  Emitter(const GenConfig& cfg, const FrameSink& sink)
      : sink_(sink),
        rng_(cfg.seed ^ kImpairStream),
        loss_(cfg.loss),
        duplicate_(cfg.duplicate),
        reorder_(cfg.reorder),
        start_ns_(cfg.start_ns),
        ns_per_byte_(8.0 / cfg.gbps) {}

  // Passes on a frame of the model. hold is the reorder slot of the frame's flow direction;
  // impairable says whether loss/duplicate/reorder may touch this frame.
  void submit(const uint8_t* frame, uint32_t len, int32_t& hold, bool impairable) {
    int copies = 1;
    if (impairable) {
      if (rng_.chance(loss_)) return;
      if (rng_.chance(duplicate_)) copies = 2;
      if (hold < 0 && rng_.chance(reorder_)) {
        hold = stash(frame, len, copies);
        return;
      }
    }
    out(frame, len, copies);
    if (hold >= 0) {
      Held& h = pool_[size_t(hold)];
      out(h.bytes.data(), h.len, h.copies);
      h.in_use = false;
      free_.push_back(hold);
      hold = -1;
    }
  }

  // Emits frames still held back, in the order they were held.
  void flush() {
    std::vector<int32_t> order;
    for (size_t i = 0; i < pool_.size(); ++i)
      if (pool_[i].in_use) order.push_back(int32_t(i));
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return pool_[size_t(a)].stamp < pool_[size_t(b)].stamp;
    });
    for (int32_t i : order) {
      Held& h = pool_[size_t(i)];
      out(h.bytes.data(), h.len, h.copies);
      h.in_use = false;
      free_.push_back(i);
    }
  }

 private:
  struct Held {
    std::array<uint8_t, kMaxFrame> bytes;
    uint32_t len = 0;
    int copies = 1;
    bool in_use = false;
    uint64_t stamp = 0;
  };

  int32_t stash(const uint8_t* frame, uint32_t len, int copies) {
    int32_t slot;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
    } else {
      slot = int32_t(pool_.size());
      pool_.emplace_back();
    }
    Held& h = pool_[size_t(slot)];
    std::memcpy(h.bytes.data(), frame, len);
    h.len = len;
    h.copies = copies;
    h.in_use = true;
    h.stamp = stamps_++;
    return slot;
  }

  void out(const uint8_t* frame, uint32_t len, int copies) {
    for (int c = 0; c < copies; ++c) {
      sink_(start_ns_ + uint64_t(clock_ns_), frame, len);
      clock_ns_ += double(len + kWireOverhead) * ns_per_byte_;
    }
  }

  const FrameSink& sink_;
  Rng rng_;
  double loss_, duplicate_, reorder_;
  uint64_t start_ns_;
  double ns_per_byte_;
  double clock_ns_ = 0;
  std::vector<Held> pool_;
  std::vector<int32_t> free_;
  uint64_t stamps_ = 0;
};

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

// ---------------------------------------------------------------------------------------------
// http mode: concurrent web downloads.

constexpr double kAckTimerChance = 0.28;   // delayed-ACK timer fires after a single segment
constexpr uint32_t kBodyMin = 784'000, kBodyMax = 816'000;
constexpr uint16_t kClientWindow = 4096, kServerWindow = 510;  // scaled by 2^7 after handshake
constexpr uint8_t kWindowShift = 7;

struct Conn {
  enum Phase : uint8_t { syn, syn_ack, ack, request, data, server_fin, client_fin, last_ack };
  Flow f;
  Phase phase = syn;
  uint32_t mss = 1460;
  uint32_t unacked = 0;     // data segments since the client's last ACK
  bool ack_due = false;
  uint64_t file_id = 0;
  uint32_t host = 0;
  uint64_t body_len = 0;
  uint64_t resp_len = 0;    // response header + body
  uint64_t resp_sent = 0;
  uint32_t head_len = 0;
  char head[192];           // response header
};

void new_conn(Conn& c, Rng& rng, const GenConfig& cfg) {
  c.f = make_flow(rng, cfg, kTcp, 80);
  c.phase = Conn::syn;
  c.mss = c.f.v6 ? 1440 : 1460;  // 1500-byte MTU
  c.unacked = 0;
  c.ack_due = false;
  c.file_id = rng.next();
  c.host = rng.below(64);
  c.body_len = rng.range(kBodyMin, kBodyMax);
  const int n = std::snprintf(c.head, sizeof c.head,
                              "HTTP/1.1 200 OK\r\n"
                              "Server: gaspp-gen\r\n"
                              "Content-Type: application/octet-stream\r\n"
                              "Content-Length: %llu\r\n"
                              "Connection: close\r\n"
                              "\r\n",
                              static_cast<unsigned long long>(c.body_len));
  c.head_len = uint32_t(n);
  c.resp_len = c.head_len + c.body_len;
  c.resp_sent = 0;
}

uint32_t format_request(const Conn& c, char* out, size_t cap) {
  const int n = std::snprintf(out, cap,
                              "GET /files/%016llx.bin HTTP/1.1\r\n"
                              "Host: cdn%u.example.com\r\n"
                              "User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:120.0) "
                              "Gecko/20100101 Firefox/120.0\r\n"
                              "Accept: */*\r\n"
                              "Accept-Language: en-US,en;q=0.5\r\n"
                              "Accept-Encoding: identity\r\n"
                              "Referer: http://cdn%u.example.com/downloads/\r\n"
                              "Cache-Control: no-cache\r\n"
                              "Connection: close\r\n"
                              "\r\n",
                              static_cast<unsigned long long>(c.file_id), c.host, c.host);
  return uint32_t(n);
}

// SYN options: MSS, NOP, window scale, NOP, NOP, SACK permitted (12 bytes).
void syn_options(uint8_t* o, uint32_t mss) {
  o[0] = 2;
  o[1] = 4;
  put16(o + 2, mss);
  o[4] = 1;
  o[5] = 3;
  o[6] = 3;
  o[7] = kWindowShift;
  o[8] = 1;
  o[9] = 1;
  o[10] = 4;
  o[11] = 2;
}

// Produces the next packet of connection c; returns true when the connection has ended.
bool step_conn(Conn& c, Rng& rng, PacketWriter& w, PayloadFiller& fill, Emitter& em) {
  Flow& f = c.f;
  uint8_t opts[12];
  int dir = 0;
  bool impairable = false, done = false;
  switch (c.phase) {
    case Conn::syn:
      syn_options(opts, c.mss);
      w.begin_tcp(f, 0, f.seq[0], 0, kSyn, 64240, opts, 12, 0);
      f.seq[0] += 1;
      c.phase = Conn::syn_ack;
      break;
    case Conn::syn_ack:
      dir = 1;
      syn_options(opts, c.mss);
      w.begin_tcp(f, 1, f.seq[1], f.seq[0], kSyn | kAck, 65160, opts, 12, 0);
      f.seq[1] += 1;
      c.phase = Conn::ack;
      break;
    case Conn::ack:
      w.begin_tcp(f, 0, f.seq[0], f.seq[1], kAck, kClientWindow, nullptr, 0, 0);
      c.phase = Conn::request;
      break;
    case Conn::request: {
      char req[512];
      const uint32_t n = format_request(c, req, sizeof req);
      uint8_t* p = w.begin_tcp(f, 0, f.seq[0], f.seq[1], kAck | kPsh, kClientWindow, nullptr, 0, n);
      std::memcpy(p, req, n);
      f.seq[0] += n;
      c.phase = Conn::data;
      break;
    }
    case Conn::data:
      if (c.ack_due) {
        w.begin_tcp(f, 0, f.seq[0], f.seq[1], kAck, kClientWindow, nullptr, 0, 0);
        c.ack_due = false;
        c.unacked = 0;
        if (c.resp_sent == c.resp_len) c.phase = Conn::server_fin;
      } else {
        dir = 1;
        impairable = true;
        const uint32_t n = uint32_t(std::min<uint64_t>(c.mss, c.resp_len - c.resp_sent));
        const bool last = c.resp_sent + n == c.resp_len;
        uint8_t* p = w.begin_tcp(f, 1, f.seq[1], f.seq[0], last ? (kAck | kPsh) : kAck,
                                 kServerWindow, nullptr, 0, n);
        uint32_t head = 0;
        if (c.resp_sent < c.head_len) {
          head = std::min<uint32_t>(n, uint32_t(c.head_len - c.resp_sent));
          std::memcpy(p, c.head + c.resp_sent, head);
        }
        fill.random(rng, p + head, n - head);
        fill.maybe_plant(rng, p + head, n - head);
        c.resp_sent += n;
        f.seq[1] += n;
        ++c.unacked;
        c.ack_due = last || c.unacked >= 2 || rng.chance(kAckTimerChance);
      }
      break;
    case Conn::server_fin:
      dir = 1;
      w.begin_tcp(f, 1, f.seq[1], f.seq[0], kFin | kAck, kServerWindow, nullptr, 0, 0);
      f.seq[1] += 1;
      c.phase = Conn::client_fin;
      break;
    case Conn::client_fin:
      w.begin_tcp(f, 0, f.seq[0], f.seq[1], kFin | kAck, kClientWindow, nullptr, 0, 0);
      f.seq[0] += 1;
      c.phase = Conn::last_ack;
      break;
    case Conn::last_ack:
      dir = 1;
      w.begin_tcp(f, 1, f.seq[1], f.seq[0], kAck, kServerWindow, nullptr, 0, 0);
      done = true;
      break;
  }
  const uint32_t len = w.finish();
  em.submit(w.data(), len, f.held[dir], impairable);
  return done;
}

void run_http(const GenConfig& cfg, Rng& rng, Emitter& em) {
  std::vector<Conn> conns(cfg.flows);
  for (auto& c : conns) new_conn(c, rng, cfg);
  PacketWriter w;
  PayloadFiller fill(cfg);
  for (uint64_t i = 0; i < cfg.packets; ++i) {
    Conn& c = conns[rng.below(cfg.flows)];
    if (step_conn(c, rng, w, fill, em)) new_conn(c, rng, cfg);
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
