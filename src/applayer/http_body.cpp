// applayer/http_body.cpp — see http_body.hpp.
#include "applayer/http_body.hpp"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace gaspp {

namespace {
std::string lower_trim(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && (s[a] == ' ' || s[a] == '\t')) ++a;
  while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t')) --b;
  std::string t = s.substr(a, b - a);
  for (char& c : t) c = char(std::tolower(static_cast<unsigned char>(c)));
  return t;
}
}  // namespace

bool parse_content_codings(const std::vector<std::string>& values, std::vector<HttpCoding>& out) {
  out.clear();
  for (const std::string& v : values) {
    size_t a = 0;
    while (a <= v.size()) {
      size_t b = v.find(',', a);
      if (b == std::string::npos) b = v.size();
      const std::string t = lower_trim(v.substr(a, b - a));
      a = b + 1;
      if (t.empty() || t == "identity" || t == "none") continue;
      if (t == "gzip" || t == "x-gzip") out.push_back(HttpCoding::gzip);
      else if (t == "deflate" || t == "x-deflate") out.push_back(HttpCoding::deflate);
      else return false;
    }
  }
  return true;
}

// One coding being undone. Input arrives in pieces; output goes to `out` (the next layer's input
// or the body).
struct HttpBodyDecoder::Layer {
  HttpCoding coding;
  z_stream z{};
  bool init = false;
  bool ended = false;        // the compressed stream ended: later input is dropped
  bool passthrough = false;  // the data is not what the coding says: passed on undecoded
  bool tried_raw = false;
  std::string head;          // gzip: the header bytes gathered so far
  bool head_done = false;

  explicit Layer(HttpCoding c) : coding(c) {}
  ~Layer() {
    if (init) inflateEnd(&z);
  }

  bool start(int bits) {
    if (init) inflateEnd(&z);
    z = z_stream{};
    init = inflateInit2(&z, bits) == Z_OK;
    return init;
  }

  // The length of a complete gzip header at the start of head, 0 while more is needed, -1 when it is
  // not a gzip header.
  long gzip_header_len() const {
    const size_t n = head.size();
    if (n >= 1 && uint8_t(head[0]) != 0x1f) return -1;
    if (n >= 2 && uint8_t(head[1]) != 0x8b) return -1;
    if (n < 10) return 0;
    const uint8_t flg = uint8_t(head[3]);
    size_t at = 10;
    if (flg & 4) {  // FEXTRA
      if (n < at + 2) return 0;
      at += 2 + (uint8_t(head[at]) | size_t(uint8_t(head[at + 1])) << 8);
      if (n < at) return 0;
    }
    for (int bit : {8, 16}) {  // FNAME, FCOMMENT: zero-terminated
      if (!(flg & bit)) continue;
      while (at < n && head[at] != 0) ++at;
      if (at >= n) return 0;
      ++at;
    }
    if (flg & 2) at += 2;  // FHCRC
    if (n < at) return 0;
    return long(at);
  }

  void inflate_into(const uint8_t* p, size_t n, std::string& out, size_t limit) {
    uint8_t buf[16384];
    z.next_in = const_cast<Bytef*>(p);
    z.avail_in = uInt(n);
    while (z.avail_in > 0 && out.size() < limit) {
      z.next_out = buf;
      z.avail_out = sizeof buf;
      const int rc = inflate(&z, Z_NO_FLUSH);
      const size_t got = sizeof buf - z.avail_out;
      out.append(reinterpret_cast<const char*>(buf), std::min(got, limit - out.size()));
      if (rc == Z_STREAM_END) {
        ended = true;
        return;
      }
      if (rc == Z_BUF_ERROR && got == 0) return;
      if (rc != Z_OK) {
        // Corrupt: the rest goes on as it is (libhtp's passthrough).
        passthrough = true;
        const size_t left = z.avail_in;
        out.append(reinterpret_cast<const char*>(z.next_in), std::min(left, limit - out.size()));
        return;
      }
    }
  }

  void feed(const uint8_t* p, size_t n, std::string& out, size_t limit) {
    if (ended || n == 0) return;
    if (passthrough) {
      out.append(reinterpret_cast<const char*>(p), std::min(n, limit - std::min(limit, out.size())));
      return;
    }
    if (coding == HttpCoding::gzip && !head_done) {
      head.append(reinterpret_cast<const char*>(p), n);
      const long h = gzip_header_len();
      if (h == 0) return;
      head_done = true;
      std::string rest;
      if (h < 0) {
        // No gzip header: perhaps zlib or raw deflate after all.
        rest.swap(head);
        start(15 + 32);
      } else {
        rest = head.substr(size_t(h));
        head.clear();
        start(-15);
      }
      if (!init) {
        passthrough = true;
        out.append(rest.substr(0, limit - std::min(limit, out.size())));
        return;
      }
      inflate_into(reinterpret_cast<const uint8_t*>(rest.data()), rest.size(), out, limit);
      return;
    }
    if (!init) {
      // deflate: zlib-wrapped when the first two bytes say so, raw otherwise.
      const bool zlib_head = n >= 2 && (p[0] & 0x0f) == 8 && ((uint32_t(p[0]) << 8 | p[1]) % 31) == 0;
      if (!start(zlib_head ? 15 : -15)) {
        passthrough = true;
        feed(p, n, out, limit);
        return;
      }
    }
    inflate_into(p, n, out, limit);
  }
};

HttpBodyDecoder::HttpBodyDecoder(const std::vector<HttpCoding>& codings, uint32_t layer_limit) {
  // The last coding applied is undone first.
  for (auto it = codings.rbegin(); it != codings.rend() && layers_.size() < layer_limit; ++it)
    layers_.push_back(std::make_unique<Layer>(*it));
}

HttpBodyDecoder::~HttpBodyDecoder() = default;

void HttpBodyDecoder::feed(const uint8_t* p, size_t n, std::string& out, size_t limit) {
  if (out.size() >= limit) return;
  if (layers_.empty()) {
    out.append(reinterpret_cast<const char*>(p), std::min(n, limit - out.size()));
    return;
  }
  // Each layer's output is the next one's input; the intermediate pieces are bounded by the limit
  // too (a layer cannot make more than `limit` bytes that could reach the body).
  std::string cur(reinterpret_cast<const char*>(p), n), next;
  for (size_t k = 0; k + 1 < layers_.size(); ++k) {
    next.clear();
    layers_[k]->feed(reinterpret_cast<const uint8_t*>(cur.data()), cur.size(), next, limit);
    cur.swap(next);
  }
  layers_.back()->feed(reinterpret_cast<const uint8_t*>(cur.data()), cur.size(), out, limit);
}

bool HttpBodyDecoder::failed() const {
  return std::any_of(layers_.begin(), layers_.end(), [](const auto& l) { return l->passthrough; });
}

}  // namespace gaspp
