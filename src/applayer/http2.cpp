// applayer/http2.cpp — HTTP/2 frames, HPACK (nghttp2's decoder) and streams as HttpTx; http2.hpp.
#include "applayer/http2.hpp"

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace gaspp {

namespace {

constexpr char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr size_t kPrefaceLen = sizeof(kPreface) - 1;
constexpr size_t kFrameHeader = 9;
// Suricata's HTTP2_MAX_HANDLED_FRAME_SIZE: a frame this long or longer is read as far as it came
// once HTTP2_MIN_HANDLED_FRAME_SIZE bytes of it did (long_frame_data), the rest skipped.
constexpr size_t kMaxHandledFrame = 65536, kMinHandledFrame = 256;
constexpr size_t kMaxHeaderBlock = 256 * 1024;
constexpr uint32_t kMaxTableSize = 65536;  // Suricata's HTTP2_MAX_TABLESIZE

enum : uint8_t { kData = 0, kHeaders = 1, kPriority = 2, kRstStream = 3, kSettings = 4, kPushPromise = 5,
                 kPing = 6, kGoaway = 7, kWindowUpdate = 8, kContinuation = 9 };
enum : uint8_t { kEndStream = 0x1, kEndHeaders = 0x4, kPadded = 0x8, kPriorityFlag = 0x20 };

const char* const kEventNames[] = {
#define GASPP_HTTP2_EVENT_NAME(id, name) name,
    GASPP_HTTP2_EVENTS(GASPP_HTTP2_EVENT_NAME)
#undef GASPP_HTTP2_EVENT_NAME
};

uint32_t be32(const uint8_t* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }

// A frame's payload without its padding (PADDED: a length byte first, that many bytes last);
// false when the padding is longer than the payload.
bool unpad(uint8_t flags, const uint8_t*& p, size_t& n) {
  if (!(flags & kPadded)) return true;
  if (n < 1 || p[0] >= n) return false;
  const size_t pad = p[0];
  ++p;
  n -= 1 + pad;
  return true;
}

// The dynamic table size updates at a header block's start (RFC 7541 6.3: 001xxxxx, a 5-bit
// prefix integer; only allowed there): the last one's value, -1 without one.
int64_t leading_size_update(const uint8_t* p, size_t n) {
  int64_t last = -1;
  size_t i = 0;
  while (i < n && (p[i] & 0xe0) == 0x20) {
    uint64_t v = p[i++] & 0x1f;
    if (v == 0x1f) {
      for (unsigned shift = 0;; shift += 7) {
        if (i >= n || shift > 28) return last;  // cut or too long: HPACK decides the block
        v += uint64_t(p[i] & 0x7f) << shift;
        if (!(p[i++] & 0x80)) break;
      }
    }
    last = int64_t(v);
  }
  return last;
}

}  // namespace

const char* http2_frame_type_name(uint32_t t) {
  static const char* const names[] = {"DATA", "HEADERS", "PRIORITY", "RST_STREAM", "SETTINGS",
                                      "PUSH_PROMISE", "PING", "GOAWAY", "WINDOW_UPDATE", "CONTINUATION"};
  return t < std::size(names) ? names[t] : nullptr;
}

const char* http2_error_name(uint32_t e) {
  static const char* const names[] = {"NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR",
                                      "SETTINGS_TIMEOUT", "STREAM_CLOSED", "FRAME_SIZE_ERROR", "REFUSED_STREAM",
                                      "CANCEL", "COMPRESSION_ERROR", "CONNECT_ERROR", "ENHANCE_YOUR_CALM",
                                      "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED"};
  return e < std::size(names) ? names[e] : nullptr;
}

const char* http2_settings_name(uint32_t id) {
  static const char* const names[] = {nullptr, "SETTINGS_HEADER_TABLE_SIZE", "SETTINGS_ENABLE_PUSH",
                                      "SETTINGS_MAX_CONCURRENT_STREAMS", "SETTINGS_INITIAL_WINDOW_SIZE",
                                      "SETTINGS_MAX_FRAME_SIZE", "SETTINGS_MAX_HEADER_LIST_SIZE", nullptr,
                                      "SETTINGS_ENABLE_CONNECT_PROTOCOL", "SETTINGS_NO_RFC7540_PRIORITIES"};
  return id < std::size(names) ? names[id] : nullptr;
}

uint32_t http2_event_bit(const std::string& name) {
  for (size_t i = 0; i < size_t(Http2EventId::kCount); ++i)
    if (name == kEventNames[i]) return uint32_t(1) << i;
  return 0;
}

std::vector<const char*> http2_event_names(uint32_t events) {
  std::vector<const char*> v;
  for (size_t i = 0; i < size_t(Http2EventId::kCount); ++i)
    if (events & (uint32_t(1) << i)) v.push_back(kEventNames[i]);
  return v;
}

Http2Conn::Http2Conn(const HttpLimits& lim, HttpStats& http_stats, Http2Stats& stats)
    : lim_(lim), hstats_(http_stats), st_(stats) {
  for (Dir& d : d_)
    if (nghttp2_hd_inflate_new(&d.hd) != 0) d.hd = nullptr;  // out of memory: the direction is lost at its first block
}

Http2Conn::~Http2Conn() {
  for (Dir& d : d_)
    if (d.hd) nghttp2_hd_inflate_del(d.hd);
}

void Http2Conn::touch(HttpTx* t) {
  if (std::find(touched_.begin(), touched_.end(), t) == touched_.end()) touched_.push_back(t);
}

void Http2Conn::event(uint32_t sid, uint32_t ev) {
  HttpTx* t = nullptr;
  if (sid) {
    if (Stream* s = stream(sid, true)) t = s->tx;
  } else if (!txs_.empty()) {
    t = txs_.back().get();
  } else if (Stream* s = stream(0, true)) {
    t = s->tx;  // no stream yet: a transaction of its own carries the connection's anomaly
  }
  if (!t) return;
  t->h2_events |= ev;
  touch(t);
}

HttpTx* Http2Conn::global_tx() {
  // Complete at once: the connection's frame has no end (Suricata's create_global_tx).
  auto t = std::make_unique<HttpTx>();
  t->id = next_id_++;
  t->limits = &lim_;
  t->http2 = t->h2_global = true;
  t->protocol = t->resp_protocol = "HTTP/2";
  t->req_done = t->resp_done = true;
  txs_.push_back(std::move(t));
  ++hstats_.txs;
  return txs_.back().get();
}

void Http2Conn::record(HttpTx* t, int dir, const HttpTx::H2Frame& f) {
  if (++t->h2_frames_seen[dir] > kHttp2TooManyFrames && !(t->h2_events & kHttp2EvTooManyFrames)) {
    t->h2_events |= kHttp2EvTooManyFrames;  // (Suricata keeps max-frames, then raises it)
    touch(t);
  }
  if (t->h2_frames[dir].size() >= kHttp2MaxFrames) {
    ++st_.frames_not_kept;
    return;
  }
  t->h2_frames[dir].push_back(f);
  touch(t);
}

Http2Conn::Stream* Http2Conn::stream(uint32_t sid, bool create) {
  const auto it = streams_.find(sid);
  if (it != streams_.end()) return &it->second;
  if (!create) return nullptr;
  size_t open = 0;
  for (const auto& t : txs_) open += !(t->req_done && t->resp_done);
  if (open >= lim_.max_txs) {
    // The oldest unfinished stream goes (its transaction is finished as it stands).
    for (auto& t : txs_)
      if (!(t->req_done && t->resp_done)) {
        if (Stream* old = stream(t->stream_id, false)) old->done[0] = old->done[1] = true, old->dec[0].reset(), old->dec[1].reset();
        t->req_done = t->resp_done = true;
        t->h2_events |= kHttp2EvTooManyStreams;
        touch(t.get());
        ++st_.txs_dropped;
        break;
      }
  }
  auto t = std::make_unique<HttpTx>();
  t->id = next_id_++;
  t->limits = &lim_;
  t->http2 = true;
  t->stream_id = sid;
  t->protocol = t->resp_protocol = "HTTP/2";
  Stream& s = streams_[sid];
  s.tx = t.get();
  txs_.push_back(std::move(t));
  ++st_.streams;
  ++hstats_.txs;
  return &s;
}

void Http2Conn::lose(int dir) {
  d_[dir].lost = true;
  d_[dir].buf.clear();
  d_[dir].block.clear();
  for (auto& [id, s] : streams_)
    if (!s.done[dir]) end_side(dir, id, true);
}

void Http2Conn::feed(int dir, const uint8_t* p, size_t n, bool gap) {
  Dir& d = d_[dir];
  if (d.lost) return;
  if (gap) {
    ++st_.gaps;
    ++hstats_.gaps;
    lose(dir);
    return;
  }
  d.buf.append(reinterpret_cast<const char*>(p), n);
  if (dir == 0 && !d.preface) {
    const size_t k = std::min(d.buf.size(), kPrefaceLen);
    if (std::memcmp(d.buf.data(), kPreface, k) != 0) {
      ++st_.bad_preface;
      event(0, kHttp2EvInvalidClientMagic);
      lose(dir);
      return;
    }
    if (d.buf.size() < kPrefaceLen) return;
    d.buf.erase(0, kPrefaceLen);
    d.preface = true;
  }
  size_t at = 0;
  while (!d.lost) {
    const size_t have = d.buf.size() - at;
    if (d.skip) {
      const size_t k = size_t(std::min<uint64_t>(d.skip, have));
      d.skip -= k;
      at += k;
      if (d.skip) break;
      continue;
    }
    if (have < kFrameHeader) break;
    const uint8_t* h = reinterpret_cast<const uint8_t*>(d.buf.data()) + at;
    const size_t len = size_t(h[0]) << 16 | size_t(h[1]) << 8 | h[2];
    const uint8_t type = h[3], flags = h[4];
    const uint32_t sid = be32(h + 5) & 0x7fffffffu;
    const size_t body = have - kFrameHeader;
    bool complete = body >= len;
    if (!complete) {
      if (len < kMaxHandledFrame || body < kMinHandledFrame) break;  // wait for the rest
      // A long frame: what came is read, the rest skipped (Suricata's long_frame_data).
      ++st_.long_frames;
      event(sid, kHttp2EvLongFrameData);
      d.skip = len - body;
    }
    ++st_.frames;
    frame(dir, type, flags, sid, h + kFrameHeader, complete ? len : body, complete);
    at += kFrameHeader + (complete ? len : body);
  }
  d.buf.erase(0, std::min(at, d.buf.size()));
}

void Http2Conn::frame(int dir, uint8_t type, uint8_t flags, uint32_t sid, const uint8_t* p, size_t n, bool complete) {
  Dir& d = d_[dir];
  if (d.in_block && type != kContinuation) {
    // A header block must go on in CONTINUATION frames: the decoder's state is lost.
    event(d.block_stream, kHttp2EvInvalidHeader);
    ++st_.hpack_errors;
    lose(dir);
    return;
  }
  // Lengths Suricata's frame parser requires (its parse_frame_data): an anomaly on the
  // connection's last transaction; the frame is read as far as it goes.
  if ((type == kGoaway && n < 8) || ((type == kRstStream || type == kWindowUpdate) && n != 4) ||
      (type == kPriority && n != 5))
    event(0, kHttp2EvInvalidFrameLength);
  note_frame(dir, type, flags, sid, p, n);
  if (sid == 0 && type != kSettings && type != kPing && type != kGoaway && type != kWindowUpdate) {
    event(0, type == kData ? kHttp2EvDataStreamZero : kHttp2EvInvalidFrameHeader);
    if (type != kHeaders && type != kPushPromise && type != kContinuation) return;
  }
  switch (type) {
    case kData: {
      if (!unpad(flags, p, n)) return;
      if (sid) data(dir, sid, p, n);
      if (sid && (flags & kEndStream) && complete) end_side(dir, sid, false);
      return;
    }
    case kHeaders:
    case kPushPromise: {
      if (!complete || !unpad(flags, p, n)) {
        event(sid, kHttp2EvInvalidHeader);
        ++st_.hpack_errors;
        lose(dir);
        return;
      }
      uint32_t target = sid;
      if (type == kHeaders && (flags & kPriorityFlag)) {
        if (n < 5) return;
        p += 5, n -= 5;
      }
      if (type == kPushPromise) {
        if (n < 4) return;
        target = be32(p) & 0x7fffffffu;  // the promised stream: its request's headers
        p += 4, n -= 4;
      }
      d.block.assign(reinterpret_cast<const char*>(p), n);
      d.block_stream = target;
      d.block_end_stream = type == kHeaders && (flags & kEndStream);
      d.block_push = type == kPushPromise;
      d.in_block = true;
      if (flags & kEndHeaders) header_block(dir, target, d.block_end_stream, d.block_push);
      return;
    }
    case kContinuation: {
      if (!d.in_block || !complete) {
        event(sid, kHttp2EvInvalidHeader);
        ++st_.hpack_errors;
        lose(dir);
        return;
      }
      if (d.block.size() + n > kMaxHeaderBlock) {
        event(d.block_stream, kHttp2EvInvalidHeader);
        ++st_.hpack_errors;
        lose(dir);
        return;
      }
      d.block.append(reinterpret_cast<const char*>(p), n);
      if (flags & kEndHeaders) header_block(dir, d.block_stream, d.block_end_stream, d.block_push);
      return;
    }
    case kRstStream:
      if (sid && stream(sid, false)) {
        end_side(0, sid, true);
        end_side(1, sid, true);
      }
      return;
    case kSettings: {
      // SETTINGS_HEADER_TABLE_SIZE: the largest table the sender decodes with, so the peer's
      // encoder may grow its table up to it: the other direction's decoder takes it.
      if (flags & 0x1) return;  // ACK
      for (size_t i = 0; i + 6 <= n; i += 6) {
        const uint16_t id = uint16_t(p[i] << 8 | p[i + 1]);
        const uint32_t v = be32(p + i + 2);
        if (id == 1 && d_[1 - dir].hd) nghttp2_hd_inflate_change_table_size(d_[1 - dir].hd, std::min(v, kMaxTableSize));
      }
      return;
    }
    default:
      return;  // PRIORITY, PING, GOAWAY, WINDOW_UPDATE, unknown types: nothing for the transactions
  }
}

// The frame as Suricata keeps it on its transaction (its fields that the http2.* keywords and the
// EVE http2 object read): a connection-level one on a transaction of its own; a stream's on the
// stream's (HEADERS and PUSH_PROMISE start it, PUSH_PROMISE's on the promised stream, CONTINUATION
// on its block's); PRIORITY, RST_STREAM and WINDOW_UPDATE only on a stream already known (a
// client's idle streams given priorities open no transaction), DATA on a stream with headers.
void Http2Conn::note_frame(int dir, uint8_t type, uint8_t flags, uint32_t sid, const uint8_t* p, size_t n) {
  HttpTx::H2Frame f;
  f.type = type;
  f.flags = flags;
  uint32_t target = sid;
  const uint8_t* q = p;
  size_t m = n;
  switch (type) {
    case kHeaders:
      if (!unpad(flags, q, m)) return;
      if (flags & kPriorityFlag) {
        if (m < 5) return;
        f.priority = q[4];
        q += 5, m -= 5;
      }
      f.size_update = leading_size_update(q, m);
      break;
    case kPushPromise:
      if (!unpad(flags, q, m) || m < 4) return;
      target = be32(q) & 0x7fffffffu;
      f.size_update = leading_size_update(q + 4, m - 4);
      break;
    case kContinuation:
      if (!d_[dir].in_block) return;
      target = d_[dir].block_stream;
      break;
    case kPriority:
      if (m >= 5) f.priority = q[4];
      break;
    case kRstStream:
      if (m >= 4) f.error = be32(q);
      break;
    case kGoaway:
      if (m >= 8) f.error = be32(q + 4);
      break;
    case kWindowUpdate:
      if (m >= 4) f.window = be32(q) & 0x7fffffffu;
      break;
    case kSettings:
      // The parameters up to the first of an id Suricata does not know (its parser stops there).
      if (!(flags & 0x1))
        for (size_t i = 0; i + 6 <= m; i += 6) {
          const uint16_t id = uint16_t(q[i] << 8 | q[i + 1]);
          if (!http2_settings_name(id)) break;
          f.settings.emplace_back(id, be32(q + i + 2));
        }
      break;
    default:
      break;
  }
  if (sid == 0) {
    if (type == kSettings || type == kPing || type == kGoaway || type == kWindowUpdate) record(global_tx(), dir, f);
    return;  // another type on stream 0 is an anomaly (frame), no transaction
  }
  const bool opens = type == kHeaders || type == kPushPromise || type == kContinuation;
  if (Stream* s = stream(target, false); s && s->tx->req_done && s->tx->resp_done && type != kRstStream &&
                                         type != kWindowUpdate && type != kPriority)
    event(0, kHttp2EvStreamIdReuse);  // (Suricata's find_or_create_tx: on the last transaction)
  if (Stream* s = stream(target, opens)) record(s->tx, dir, f);
}

void Http2Conn::header_block(int dir, uint32_t sid, bool end_stream, bool push) {
  Dir& d = d_[dir];
  d.in_block = false;
  std::string block;
  block.swap(d.block);
  if (!d.hd) {
    lose(dir);
    return;
  }
  std::vector<HttpHeader> fields;
  const uint8_t* in = reinterpret_cast<const uint8_t*>(block.data());
  size_t left = block.size();
  bool ok = true;
  for (;;) {
    nghttp2_nv nv;
    int flags = 0;
    const ssize_t r = nghttp2_hd_inflate_hd2(d.hd, &nv, &flags, in, left, 1);
    if (r < 0) {
      ok = false;
      break;
    }
    in += r;
    left -= size_t(r);
    if (flags & NGHTTP2_HD_INFLATE_EMIT)
      fields.push_back({std::string(reinterpret_cast<const char*>(nv.name), nv.namelen),
                        std::string(reinterpret_cast<const char*>(nv.value), nv.valuelen)});
    if (flags & NGHTTP2_HD_INFLATE_FINAL) {
      nghttp2_hd_inflate_end_headers(d.hd);
      break;
    }
    if (r == 0 && left == 0) break;
  }
  if (!ok) {
    // The decoder's table is no longer known: the direction stops.
    event(sid, kHttp2EvInvalidHeader);
    ++st_.hpack_errors;
    lose(dir);
    return;
  }
  if (!sid) return;
  Stream* s = stream(sid, true);
  if (!s) return;
  HttpTx& t = *s->tx;
  // Suricata's process_headers, on every block (trailers too): userinfo in :authority (RFC 9113
  // forbids it), and :authority and host that differ in one block.
  const auto same = [](const std::string& a, const std::string& b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
             return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
  };
  const std::string* authority = nullptr;
  const std::string* host = nullptr;
  for (const HttpHeader& h : fields) {
    if (same(h.name, ":authority")) {
      authority = &h.value;
      if (h.value.find('@') != std::string::npos) event(sid, kHttp2EvUserinfoInUri);
    } else if (same(h.name, "host")) {
      host = &h.value;
    }
  }
  if (authority && host && !same(*authority, *host))
    event(sid, kHttp2EvAuthorityHostMismatch);
  const bool request = dir == 0 || push;
  if (request) {
    if (t.req_headers_done) return;  // trailers: decoded (the table moved), not kept
    t.h2_fields[0] = fields;
    for (const HttpHeader& h : fields) {
      if (h.name == ":method") t.method = h.value;
      else if (h.name == ":path") t.uri_raw = h.value;
      else if (h.name == ":authority") t.authority = h.value;
      else if (!h.name.empty() && h.name[0] == ':') continue;  // :scheme, :protocol
      else t.req_headers.push_back(h);
    }
    for (const HttpHeader& h : t.req_headers) t.req_headers_raw += h.name + ": " + h.value + "\r\n";
    t.request_line = t.method + " " + t.uri_raw + " HTTP/2";
    t.req_line = t.req_headers_done = true;
    ++hstats_.requests;
    if (push) t.req_done = true;
  } else {
    if (t.resp_headers_done) return;  // trailers
    std::string status;
    for (const HttpHeader& h : fields)
      if (h.name == ":status") status = h.value;
    if (status.size() == 3 && status[0] == '1') return;  // informational: the final response follows
    t.stat_code = status;
    t.h2_fields[1] = fields;
    for (const HttpHeader& h : fields)
      if (h.name.empty() || h.name[0] != ':') t.resp_headers.push_back(h);
    for (const HttpHeader& h : t.resp_headers) t.resp_headers_raw += h.name + ": " + h.value + "\r\n";
    t.response_line = "HTTP/2 " + status + "\r\n";  // as Suricata's HTTP/2 response line
    t.resp_line = t.resp_headers_done = true;
    ++hstats_.responses;
  }
  // The body's Content-Encoding, decoded as HTTP/1's.
  std::string ce;
  if (t.header(request ? 0 : 1, "content-encoding", ce)) {
    std::vector<HttpCoding> codings;
    parse_content_codings_htp(ce, lim_.decompress_layer_limit, codings, lim_.lzma_enabled);
    if (!codings.empty()) s->dec[request ? 0 : 1] = std::make_unique<HttpBodyDecoder>(codings, 0, lim_.lzma_memlimit);
  }
  touch(&t);
  if (end_stream && !push) end_side(dir, sid, false);
}

void Http2Conn::data(int dir, uint32_t sid, const uint8_t* p, size_t n) {
  Stream* s = stream(sid, false);
  if (!s || s->done[dir] || n == 0) return;
  HttpTx& t = *s->tx;
  // Suricata's HTTP/2 bodies are its files', bounded by the file reassembly depth (the stream
  // depth, 1 MiB by default), not by libhtp's body limits.
  if (!append_http_body(t, dir, p, n, lim_.file_store_depth, s->dec[dir].get(), t.body_cut[dir], hstats_)) return;
  update_http_files(t, dir, false, false, lim_, hstats_);
  touch(&t);
}

void Http2Conn::end_side(int dir, uint32_t sid, bool incomplete) {
  Stream* s = stream(sid, false);
  if (!s || s->done[dir]) return;
  s->done[dir] = true;
  s->dec[dir].reset();
  HttpTx& t = *s->tx;
  update_http_files(t, dir, true, incomplete, lim_, hstats_);
  (dir == 0 ? t.req_done : t.resp_done) = true;
  touch(&t);
}

void Http2Conn::adopt_upgrade(const HttpTx& h1) {
  Stream* s = stream(1, true);
  if (!s) return;
  HttpTx& t = *s->tx;
  t.method = h1.method;
  t.uri_raw = h1.uri_raw;
  // The fields as HTTP/1 sent them, their names' case kept (SCHttp2TxAddHeader).
  t.req_headers = h1.req_headers;
  t.h2_fields[0] = h1.req_headers;
  for (const HttpHeader& h : h1.req_headers)
    if (h.name.size() == 4 && std::tolower(static_cast<unsigned char>(h.name[0])) == 'h' &&
        std::tolower(static_cast<unsigned char>(h.name[1])) == 'o' && std::tolower(static_cast<unsigned char>(h.name[2])) == 's' &&
        std::tolower(static_cast<unsigned char>(h.name[3])) == 't')
      t.authority = h.value;  // the host, as :authority is HTTP/2's
  for (const HttpHeader& h : t.req_headers) t.req_headers_raw += h.name + ": " + h.value + "\r\n";
  t.request_line = t.method + " " + t.uri_raw + " HTTP/2";
  t.request_body = h1.request_body;
  t.req_line = t.req_headers_done = t.req_done = true;
  s->done[0] = true;
  touch(&t);
}

void Http2Conn::end(int dir) {
  for (auto& [id, s] : streams_)
    if (!s.done[dir]) end_side(dir, id, true);
}

void Http2Conn::release_done() {
  while (!txs_.empty()) {
    HttpTx* t = txs_.front().get();
    if (!(t->req_done && t->resp_done) || std::find(touched_.begin(), touched_.end(), t) != touched_.end()) break;
    streams_.erase(t->stream_id);
    txs_.pop_front();
  }
}

}  // namespace gaspp
