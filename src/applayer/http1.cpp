// applayer/http1.cpp — see http1.hpp.
#include "applayer/http1.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace gaspp {

namespace {

bool ws(char c) { return c == ' ' || c == '\t'; }

std::string trim(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && (ws(s[a]) || s[a] == '\r' || s[a] == '\n' || s[a] == '\v' || s[a] == '\f')) ++a;
  while (b > a && (ws(s[b - 1]) || s[b - 1] == '\r' || s[b - 1] == '\n' || s[b - 1] == '\v' || s[b - 1] == '\f')) --b;
  return s.substr(a, b - a);
}

bool ieq(const std::string& a, const char* b) {
  const size_t n = std::strlen(b);
  if (a.size() != n) return false;
  for (size_t i = 0; i < n; ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

// Whether s contains `word` ignoring case and NUL bytes (libhtp finds `chunked` this way).
bool contains_nocase(const std::string& s, const char* word) {
  std::string t;
  for (char c : s)
    if (c) t += char(std::tolower(static_cast<unsigned char>(c)));
  return t.find(word) != std::string::npos;
}

std::string header_of(const std::vector<HttpHeader>& hs, const char* name) {
  std::string v;
  bool any = false;
  for (const HttpHeader& h : hs)
    if (ieq(h.name, name)) {
      if (any) v += ", ";
      v += h.value;
      any = true;
    }
  return v;
}

// Content-Length: digits, with whitespace around them (libhtp); -1 when it is not a number.
int64_t parse_content_length(const std::string& v) {
  const std::string t = trim(v);
  if (t.empty()) return -1;
  int64_t n = 0;
  for (char c : t) {
    if (c < '0' || c > '9') return -1;
    if (n > (int64_t(1) << 50)) return -1;
    n = n * 10 + (c - '0');
  }
  return n;
}

// A chunk-size line: optional whitespace, hex digits, then anything (extensions). -1: no digits.
int64_t parse_chunk_size(const std::string& line) {
  size_t i = 0;
  while (i < line.size() && (ws(line[i]) || line[i] == '\r')) ++i;
  int64_t n = 0;
  size_t digits = 0;
  for (; i < line.size(); ++i) {
    const char c = line[i];
    int v;
    if (c >= '0' && c <= '9') v = c - '0';
    else if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
    else break;
    if (n > (int64_t(1) << 40)) return -1;
    n = n * 16 + v;
    ++digits;
  }
  return digits ? n : -1;
}

}  // namespace

std::string HttpTx::req_header(const char* name) const { return header_of(req_headers, name); }
std::string HttpTx::resp_header(const char* name) const { return header_of(resp_headers, name); }
bool HttpTx::has_req_header(const char* name) const {
  return std::any_of(req_headers.begin(), req_headers.end(), [&](const HttpHeader& h) { return ieq(h.name, name); });
}

void Http1Conn::touch(HttpTx* t) {
  if (t && std::find(touched_.begin(), touched_.end(), t) == touched_.end()) touched_.push_back(t);
}

HttpTx* Http1Conn::new_tx() {
  if (txs_.size() >= lim_.max_txs) {
    // Drop the oldest transaction no direction is still parsing.
    const HttpTx* busy0 = d_[0].tx;
    const HttpTx* busy1 = d_[1].tx;
    const auto& front = txs_.front();
    if (front.get() != busy0 && front.get() != busy1 &&
        std::find(touched_.begin(), touched_.end(), front.get()) == touched_.end()) {
      txs_.pop_front();
      if (answered_) --answered_;
      ++stats_.txs_dropped;
    }
  }
  txs_.push_back(std::make_unique<HttpTx>());
  HttpTx* t = txs_.back().get();
  t->id = next_id_++;
  ++stats_.txs;
  return t;
}

// Responses answer requests in order; a response with no request waiting gets a transaction of
// its own (picked up midstream, or a server that speaks first).
HttpTx* Http1Conn::tx_for_response() {
  while (answered_ < txs_.size() && txs_[answered_]->resp_done) ++answered_;
  if (answered_ < txs_.size()) return txs_[answered_].get();
  HttpTx* t = new_tx();
  t->req_done = true;  // no request will come for it (a later one starts a transaction of its own)
  return t;
}

void Http1Conn::lose(int dir, uint64_t& counter) {
  ++counter;
  Dir& d = d_[dir];
  d.phase = kLost;
  d.line.clear();
  d.dec.reset();
}

void Http1Conn::feed(int dir, const uint8_t* p, size_t n, bool gap) {
  Dir& d = d_[dir];
  if (d.phase == kLost) return;
  if (gap) {
    lose(dir, stats_.gaps);
    return;
  }
  size_t i = 0;
  while (i < n && d.phase != kLost) {
    switch (d.phase) {
      case kIdle:
        // Blank lines between messages are skipped (RFC 9112 §2.2).
        while (i < n && (p[i] == '\r' || p[i] == '\n')) ++i;
        if (i < n) d.phase = kLine;
        break;
      case kBodyLen:
      case kChunkData: {
        const size_t k = size_t(std::min<uint64_t>(d.remain, n - i));
        body(dir, p + i, k);
        i += k;
        d.remain -= k;
        if (d.remain == 0) {
          if (d.phase == kBodyLen) finish_message(dir);
          else d.phase = kChunkEnd;
        }
        break;
      }
      case kBodyClose:
        body(dir, p + i, n - i);
        i = n;
        break;
      default: {
        // Line-oriented phases: gather up to LF.
        const uint8_t* lf = static_cast<const uint8_t*>(std::memchr(p + i, '\n', n - i));
        const size_t take = lf ? size_t(lf - (p + i)) + 1 : n - i;
        if (d.line.size() + take > lim_.header_limit) {
          lose(dir, stats_.lines_too_long);
          return;
        }
        d.line.append(reinterpret_cast<const char*>(p + i), take);
        i += take;
        if (!lf) break;
        on_line(dir, d.line);
        d.line.clear();
        break;
      }
    }
  }
}

void Http1Conn::on_line(int dir, std::string& raw) {
  Dir& d = d_[dir];
  std::string line = raw;
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  switch (d.phase) {
    case kLine:
      begin_message(dir, line);
      return;
    case kHeaders: {
      HttpTx& t = *d.tx;
      if (line.empty()) {
        end_headers(dir);
        return;
      }
      std::string& rawblock = dir == 0 ? t.req_headers_raw : t.resp_headers_raw;
      std::vector<HttpHeader>& hs = dir == 0 ? t.req_headers : t.resp_headers;
      if (rawblock.size() + raw.size() > lim_.header_limit) {
        lose(dir, stats_.lines_too_long);
        return;
      }
      rawblock += raw;
      if (ws(line[0]) && !hs.empty()) {
        // A folded line continues the header before it.
        const std::string more = trim(line);
        if (!more.empty()) hs.back().value += (hs.back().value.empty() ? "" : " ") + more;
        return;
      }
      const size_t colon = line.find(':');
      HttpHeader h;
      if (colon == std::string::npos) {
        h.name = trim(line);  // no colon: a name without a value (libhtp keeps it, flagged)
      } else {
        h.name = trim(line.substr(0, colon));
        h.value = trim(line.substr(colon + 1));
      }
      hs.push_back(std::move(h));
      touch(&t);
      return;
    }
    case kChunkSize: {
      const int64_t size = parse_chunk_size(line);
      if (size < 0) {
        // Not a chunk size: libhtp stops dechunking and takes the rest as the body until the
        // connection closes, this line included.
        body(dir, reinterpret_cast<const uint8_t*>(raw.data()), raw.size());
        d.phase = kBodyClose;
        return;
      }
      if (size == 0) {
        d.phase = kTrailer;
        return;
      }
      d.remain = uint64_t(size);
      d.phase = kChunkData;
      return;
    }
    case kChunkEnd:
      // The CRLF after a chunk's data (what else stands there is ignored, as libhtp does).
      d.phase = kChunkSize;
      if (!line.empty()) {
        const int64_t size = parse_chunk_size(line);
        if (size > 0) {
          d.remain = uint64_t(size);
          d.phase = kChunkData;
        } else if (size == 0) {
          d.phase = kTrailer;
        }
      }
      return;
    case kTrailer:
      if (line.empty()) finish_message(dir);
      return;
    default:
      return;
  }
}

void Http1Conn::begin_message(int dir, const std::string& line) {
  Dir& d = d_[dir];
  if (dir == 0) {
    HttpTx* t = new_tx();
    d.tx = t;
    ++stats_.requests;
    t->request_line = line;
    size_t i = 0;
    while (i < line.size() && !ws(line[i])) ++i;
    t->method = line.substr(0, i);
    while (i < line.size() && ws(line[i])) ++i;
    const std::string rest = line.substr(i);
    // The protocol is the last word when it names HTTP (a URI may hold spaces); else the URI ends
    // at the first space.
    size_t last = rest.find_last_of(" \t");
    if (last != std::string::npos && rest.compare(last + 1, 5, "HTTP/") == 0) {
      t->uri_raw = trim(rest.substr(0, last));
      t->protocol = rest.substr(last + 1);
    } else {
      size_t e = 0;
      while (e < rest.size() && !ws(rest[e])) ++e;
      t->uri_raw = rest.substr(0, e);
      t->protocol = trim(rest.substr(e));
    }
    t->req_line = true;
    touch(t);
    if (t->protocol.empty()) {
      // HTTP/0.9: a request line alone.
      t->req_headers_done = true;
      finish_message(dir);
      return;
    }
    d.phase = kHeaders;
    return;
  }
  HttpTx* t = tx_for_response();
  d.tx = t;
  ++stats_.responses;
  touch(t);
  if (line.size() < 4 || !(std::toupper(static_cast<unsigned char>(line[0])) == 'H' &&
                           std::toupper(static_cast<unsigned char>(line[1])) == 'T' &&
                           std::toupper(static_cast<unsigned char>(line[2])) == 'T' &&
                           std::toupper(static_cast<unsigned char>(line[3])) == 'P')) {
    // Not a status line: an HTTP/0.9 response, all body until the connection closes.
    t->resp_line = t->resp_headers_done = true;
    d.phase = kBodyClose;
    const std::string again = line + "\n";
    body(dir, reinterpret_cast<const uint8_t*>(again.data()), again.size());
    return;
  }
  t->response_line = line;
  size_t i = 0;
  while (i < line.size() && !ws(line[i])) ++i;
  t->resp_protocol = line.substr(0, i);
  while (i < line.size() && ws(line[i])) ++i;
  size_t e = i;
  while (e < line.size() && !ws(line[e])) ++e;
  t->stat_code = line.substr(i, e - i);
  t->stat_msg = trim(line.substr(e));
  t->resp_line = true;
  d.phase = kHeaders;
}

void Http1Conn::end_headers(int dir) {
  Dir& d = d_[dir];
  HttpTx& t = *d.tx;
  touch(&t);
  const std::vector<HttpHeader>& hs = dir == 0 ? t.req_headers : t.resp_headers;
  const std::string te = header_of(hs, "Transfer-Encoding");
  const bool chunked = contains_nocase(te, "chunked");
  int64_t cl = -1;
  bool has_cl = false;
  for (const HttpHeader& h : hs)
    if (ieq(h.name, "Content-Length")) {
      has_cl = true;
      if (cl < 0) cl = parse_content_length(h.value);
    }
  d.hit_limit = false;
  if (dir == 0) {
    t.req_headers_done = true;
    if (chunked) d.phase = kChunkSize;
    else if (cl > 0) d.phase = kBodyLen, d.remain = uint64_t(cl);
    else finish_message(dir);
    return;
  }
  t.resp_headers_done = true;
  const int code = t.stat_code.size() == 3 && std::all_of(t.stat_code.begin(), t.stat_code.end(), ::isdigit)
                       ? std::stoi(t.stat_code)
                       : 0;
  if (code >= 100 && code < 200) {
    if (code == 101) {
      // Switching protocols: what follows is not HTTP/1 any more.
      t.resp_done = true;
      d.phase = kLost;
      d_[0].phase = kLost;
      return;
    }
    // An interim response (100 Continue): the final one follows for the same request.
    t.response_line.clear();
    t.resp_protocol.clear();
    t.stat_code.clear();
    t.stat_msg.clear();
    t.resp_headers.clear();
    t.resp_headers_raw.clear();
    t.resp_line = t.resp_headers_done = false;
    d.tx = nullptr;
    d.phase = kIdle;
    return;
  }
  std::vector<HttpCoding> codings;
  std::vector<std::string> ce;
  for (const HttpHeader& h : hs)
    if (ieq(h.name, "Content-Encoding")) ce.push_back(h.value);
  parse_content_codings(ce, codings);
  d.dec = codings.empty() ? nullptr : std::make_unique<HttpBodyDecoder>(codings, lim_.decompress_layer_limit);
  if (t.method == "HEAD" || code == 204 || code == 304) finish_message(dir);
  else if (chunked) d.phase = kChunkSize;
  else if (has_cl && cl >= 0) {
    if (cl == 0) finish_message(dir);
    else d.phase = kBodyLen, d.remain = uint64_t(cl);
  } else {
    d.phase = kBodyClose;
  }
}

void Http1Conn::body(int dir, const uint8_t* p, size_t n) {
  Dir& d = d_[dir];
  if (!d.tx || n == 0) return;
  HttpTx& t = *d.tx;
  touch(&t);
  std::string& out = dir == 0 ? t.request_body : t.response_body;
  const size_t limit = dir == 0 ? lim_.request_body_limit : lim_.response_body_limit;
  (dir == 0 ? t.request_body_len : t.response_body_len) += n;
  const size_t before = out.size();
  if (before >= limit) {
    if (!d.hit_limit) ++stats_.bodies_truncated;
    d.hit_limit = true;
    return;
  }
  if (d.dec) {
    const bool failed = d.dec->failed();
    d.dec->feed(p, n, out, limit);
    if (!failed && d.dec->failed()) ++stats_.decode_failures;
  } else {
    out.append(reinterpret_cast<const char*>(p), std::min(n, limit - before));
  }
  if (out.size() >= limit && !d.hit_limit) {
    ++stats_.bodies_truncated;
    d.hit_limit = true;
  }
}

void Http1Conn::finish_message(int dir) {
  Dir& d = d_[dir];
  if (d.tx) {
    touch(d.tx);
    if (dir == 0) d.tx->req_done = true;
    else d.tx->resp_done = true;
  }
  d.tx = nullptr;
  d.dec.reset();
  d.remain = 0;
  d.phase = kIdle;
}

void Http1Conn::end(int dir) {
  Dir& d = d_[dir];
  if (d.phase == kBodyClose) finish_message(dir);
  if (d.phase != kLost) d.phase = kLost;
}

void Http1Conn::release_done() {
  while (!txs_.empty()) {
    HttpTx* t = txs_.front().get();
    if (!(t->req_done && t->resp_done) || t == d_[0].tx || t == d_[1].tx ||
        std::find(touched_.begin(), touched_.end(), t) != touched_.end())
      break;
    txs_.pop_front();
    if (answered_) --answered_;
  }
}

}  // namespace gaspp
