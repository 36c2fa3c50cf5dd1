// tools/gen/frames.hpp — the generator's parts shared by its modes (generator.cpp: fixed and mix,
// http.cpp: http): the random numbers, checksums, flows, the frame writer, payload filling and the
// emitter that timestamps, impairs and hands out frames. Internal to the generator.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "tools/gen/generator.hpp"

namespace gaspp::gen_detail {

constexpr uint32_t kMaxFrame = 2048;      // largest frame built is 1518 (VLAN + 1500-byte IP)
constexpr uint32_t kMinFrame = 60;        // Ethernet minimum without FCS
constexpr uint32_t kWireOverhead = 24;    // preamble 8 + FCS 4 + inter-frame gap 12
constexpr uint8_t kTcp = 6, kUdp = 17;
constexpr uint8_t kFin = 0x01, kSyn = 0x02, kPsh = 0x08, kAck = 0x10;
constexpr uint64_t kImpairStream = 0x6a09e667f3bcc909ull;  // seeds the impairment stream

// ---------------------------------------------------------------------------------------------
// Random numbers: xoshiro256** seeded through splitmix64. Everything derived from it uses integer
// arithmetic or exact double comparisons, so output is identical across runs and platforms.

inline uint64_t splitmix64(uint64_t& state) {
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

inline uint64_t sum_words(uint64_t acc, const uint8_t* p, size_t n) {
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

inline void store_checksum(uint8_t* at, uint64_t acc, bool zero_as_ffff) {
  acc = (acc & 0xffffffffu) + (acc >> 32);
  acc = (acc & 0xffffffffu) + (acc >> 32);
  while (acc >> 16) acc = (acc & 0xffff) + (acc >> 16);
  uint16_t c = uint16_t(~acc);
  if (c == 0 && zero_as_ffff) c = 0xffff;  // UDP: 0 means "no checksum"
  std::memcpy(at, &c, 2);
}

inline void put16(uint8_t* p, uint32_t v) {
  p[0] = uint8_t(v >> 8);
  p[1] = uint8_t(v);
}
inline void put32(uint8_t* p, uint32_t v) {
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

inline Flow make_flow(Rng& rng, const GenConfig& cfg, uint8_t proto, uint16_t server_port) {
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


// The http mode (http.cpp): concurrent web downloads.
void run_http(const GenConfig& cfg, Rng& rng, Emitter& em);

}  // namespace gaspp::gen_detail
