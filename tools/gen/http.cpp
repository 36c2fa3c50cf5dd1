// tools/gen/http.cpp — the generator's http mode: concurrent web downloads (see generator.hpp).
#include <cstdio>
#include <vector>

#include "tools/gen/frames.hpp"

namespace gaspp::gen_detail {
namespace {

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

}  // namespace

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

}  // namespace gaspp::gen_detail
