// applayer/http_body.cpp — see http_body.hpp.
#include "applayer/http_body.hpp"

#include <lzma.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace gaspp {

namespace {
std::string lower_nonul(const std::string& s) {
  std::string t;
  for (char c : s)
    if (c) t += char(std::tolower(static_cast<unsigned char>(c)));
  return t;
}
// Calls f(token) for each non-empty token of s split at ',' and ' ', until f returns false.
template <class F>
void each_token(const std::string& s, F f) {
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ',' || s[i] == ' ')) ++i;
    if (i == s.size()) return;
    size_t j = i;
    while (j < s.size() && s[j] != ',' && s[j] != ' ') ++j;
    if (!f(s.substr(i, j - i))) return;
    i = j;
  }
}
}  // namespace

void parse_content_codings_htp(const std::string& value, uint32_t layer_limit, std::vector<HttpCoding>& out,
                               bool lzma, uint8_t* anomalies) {
  out.clear();
  if (anomalies) *anomalies = 0;
  std::string v = lower_nonul(value);
  size_t a = 0, z = v.size();
  while (a < z && std::isspace(static_cast<unsigned char>(v[a]))) ++a;
  while (z > a && std::isspace(static_cast<unsigned char>(v[z - 1]))) --z;
  v = v.substr(a, z - a);
  if (v == "gzip" || v == "x-gzip") return out.push_back(HttpCoding::gzip);
  if (v == "deflate" || v == "x-deflate") return out.push_back(HttpCoding::deflate);
  if (v == "lzma") {
    if (lzma) out.push_back(HttpCoding::lzma);
    return;
  }
  if (v == "br" || v == "inflate" || v == "none") return;
  // libhtp's slow path: tokens split at ',' and ' ', at most layer_limit of them. The codings
  // come from the lowered value, the warnings from the tokens as sent (its exact compares).
  if (anomalies) {
    uint32_t n = 0;
    each_token(value, [&](const std::string& t) {
      if (layer_limit && ++n > layer_limit) {
        *anomalies |= kCodingTooManyLayers;
        return false;
      }
      std::string low = t;  // (index_of_nocase: case-blind; a NUL inside breaks a match)
      for (char& c : low) c = char(std::tolower(static_cast<unsigned char>(c)));
      const bool ok = low.find("gzip") != std::string::npos      ? t == "gzip" || t == "x-gzip"
                      : low.find("deflate") != std::string::npos ? t == "deflate" || t == "x-deflate"
                                                                 : t == "lzma" || t == "inflate" || t == "none" || t == "identity";
      if (!ok) *anomalies |= kCodingAbnormal;
      return true;
    });
  }
  bool lzma_used = false;
  uint32_t layers = 0;
  each_token(v, [&](const std::string& t) {
    if (layer_limit && ++layers > layer_limit) return false;
    if (t.find("gzip") != std::string::npos) out.push_back(HttpCoding::gzip);
    else if (t.find("deflate") != std::string::npos) out.push_back(HttpCoding::deflate);
    else if (lzma && !lzma_used && t.find("lzma") != std::string::npos) {
      out.push_back(HttpCoding::lzma);
      lzma_used = true;
    }
    return true;
  });
}

// One coding being undone, with libhtp's restarts: on an error the layer tries the next format
// (gzip -> raw deflate -> zlib -> gzip, deflate -> zlib -> gzip -> deflate) on the current piece,
// at most 3 times, then passes the data through; an error after output ends the layer.
struct HttpBodyDecoder::Layer {
  enum Kind { kGzip, kDeflate, kZlib, kLzma } kind;
  z_stream z{};
  lzma_stream xz = LZMA_STREAM_INIT;  // kLzma
  uint64_t memlimit = 1u << 20;
  bool capped = false;  // the header's dictionary was past memlimit: output held to it
  uint64_t made = 0;    // bytes the lzma decoder produced
  bool init = false;
  bool ended = false;        // the stream ended: later input is dropped
  bool dead = false;         // failed after output: later input is dropped
  bool passthrough = false;  // restarts used up: the data passes undecoded
  int restarts = 0;
  std::string head;          // gzip: header bytes gathered so far
  bool head_done = false;

  Layer(HttpCoding c, uint64_t lzma_memlimit)
      : kind(c == HttpCoding::gzip ? kGzip : c == HttpCoding::lzma ? kLzma : kDeflate), memlimit(lzma_memlimit) {}
  ~Layer() { end(); }

  void end() {
    if (!init) return;
    if (kind == kLzma) lzma_end(&xz);
    else inflateEnd(&z);
    init = false;
  }

  void reset() {
    end();
    head.clear();
    head_done = kind != kGzip && kind != kLzma;
    if (kind == kLzma) {
      xz = LZMA_STREAM_INIT;
      capped = false;
      made = 0;
      init = true;  // the decoder starts once the header is in (run_lzma)
      return;
    }
    z = z_stream{};
    init = inflateInit2(&z, kind == kZlib ? 15 : -15) == Z_OK;
  }

  // lzma: the 13-byte header gathered, its size field made "unknown" (libhtp decodes to the end
  // marker or the data's end whatever it says), then liblzma's .lzma decoder over the rest.
  bool run_lzma(const uint8_t* p, size_t n, std::string& got, size_t room) {
    constexpr size_t kHead = 13;
    std::string tmp;
    if (!head_done) {
      const size_t take = std::min(n, kHead - head.size());
      head.append(reinterpret_cast<const char*>(p), take);
      p += take;
      n -= take;
      if (head.size() < kHead) return true;
      head_done = true;
      std::memset(head.data() + 5, 0xff, 8);
      // libhtp grows the dictionary with the output, up to the memory limit: a stream may declare
      // a larger dictionary than the limit and still decode while its output stays under it.
      // liblzma allocates the declared dictionary, so the header's is cut to the limit (a power of
      // two, as the format wants) and the output is held to the limit instead.
      uint32_t dict = 0;
      for (int k = 0; k < 4; ++k) dict |= uint32_t(uint8_t(head[1 + k])) << (8 * k);
      capped = dict > memlimit;
      if (capped) {
        uint32_t d = 4096;
        while (uint64_t(d) * 2 <= memlimit && d < (1u << 30)) d *= 2;
        for (int k = 0; k < 4; ++k) head[1 + k] = char((d >> (8 * k)) & 0xff);
      }
      if (lzma_alone_decoder(&xz, UINT64_MAX) != LZMA_OK) return false;
      tmp = head + std::string(reinterpret_cast<const char*>(p), n);
      p = reinterpret_cast<const uint8_t*>(tmp.data());
      n = tmp.size();
    }
    uint8_t buf[16384];
    xz.next_in = p;
    xz.avail_in = n;
    while (xz.avail_in > 0 && got.size() < room) {
      xz.next_out = buf;
      xz.avail_out = sizeof buf;
      const lzma_ret rc = lzma_code(&xz, LZMA_RUN);
      size_t k = sizeof buf - xz.avail_out;
      if (capped && made + k > memlimit) {  // past the limit: what fits, then an error
        k = size_t(memlimit - made);
        got.append(reinterpret_cast<const char*>(buf), std::min(k, room - got.size()));
        made += k;
        return false;
      }
      made += k;
      got.append(reinterpret_cast<const char*>(buf), std::min(k, room - got.size()));
      if (rc == LZMA_STREAM_END) {
        ended = true;
        return true;
      }
      if (rc == LZMA_BUF_ERROR && k == 0) return true;
      if (rc != LZMA_OK) return false;  // data or header error, or past memlimit
    }
    return true;
  }

  // The gzip header at the start of head: its length, 0 while more is needed, -1 not gzip.
  long gzip_header_len() const {
    const size_t n = head.size();
    static const uint8_t kMagic[3] = {0x1f, 0x8b, 0x08};
    for (size_t i = 0; i < 3 && i < n; ++i)
      if (uint8_t(head[i]) != kMagic[i]) return -1;
    if (n < 10) return 0;
    const uint8_t flg = uint8_t(head[3]);
    size_t at = 10;
    if (flg & 4) {
      if (n < at + 2) return 0;
      at += 2 + (uint8_t(head[at]) | size_t(uint8_t(head[at + 1])) << 8);
      if (n < at) return 0;
    }
    for (int bit : {8, 16}) {
      if (!(flg & bit)) continue;
      while (at < n && head[at] != 0) ++at;
      if (at >= n) return 0;
      ++at;
    }
    if (flg & 2) at += 2;
    return n < at ? 0 : long(at);
  }

  // Runs the current decoder over p; false on a decoding error (what it made is in got).
  bool run(const uint8_t* p, size_t n, std::string& got, size_t room) {
    if (!init) reset();
    if (!init) return false;
    if (kind == kLzma) return run_lzma(p, n, got, room);
    std::string tmp;
    if (kind == kGzip && !head_done) {
      head.append(reinterpret_cast<const char*>(p), n);
      const long h = gzip_header_len();
      if (h < 0) return false;
      if (h == 0) return true;
      head_done = true;
      tmp = head.substr(size_t(h));
      head.clear();
      p = reinterpret_cast<const uint8_t*>(tmp.data());
      n = tmp.size();
    }
    uint8_t buf[16384];
    z.next_in = const_cast<Bytef*>(p);
    z.avail_in = uInt(n);
    while (z.avail_in > 0 && got.size() < room) {
      z.next_out = buf;
      z.avail_out = sizeof buf;
      const int rc = inflate(&z, Z_SYNC_FLUSH);
      const size_t k = sizeof buf - z.avail_out;
      got.append(reinterpret_cast<const char*>(buf), std::min(k, room - got.size()));
      if (rc == Z_STREAM_END) {
        ended = true;
        return true;
      }
      if (rc == Z_BUF_ERROR && k == 0) return true;
      if (rc != Z_OK) return false;
    }
    return true;
  }

  void feed(const uint8_t* p, size_t n, std::string& out, size_t limit) {
    if (ended || dead || n == 0 || out.size() >= limit) return;
    if (passthrough) {
      out.append(reinterpret_cast<const char*>(p), std::min(n, limit - out.size()));
      return;
    }
    for (;;) {
      std::string got;
      if (run(p, n, got, limit - out.size())) {
        out += got;
        return;
      }
      if (restarts == 0 && !got.empty()) {
        out += got;
        dead = true;
        return;
      }
      if (kind == kLzma || ++restarts > 3) {  // lzma: no other format to try
        passthrough = true;
        out.append(reinterpret_cast<const char*>(p), std::min(n, limit - out.size()));
        return;
      }
      kind = kind == kGzip ? kDeflate : kind == kDeflate ? kZlib : kGzip;
      reset();
    }
  }
};

HttpBodyDecoder::HttpBodyDecoder(const std::vector<HttpCoding>& codings, uint32_t layer_limit, uint64_t lzma_memlimit) {
  // The last coding applied is undone first.
  for (auto it = codings.rbegin(); it != codings.rend() && (!layer_limit || layers_.size() < layer_limit); ++it)
    layers_.push_back(std::make_unique<Layer>(*it, lzma_memlimit));
}

HttpBodyDecoder::~HttpBodyDecoder() = default;

void HttpBodyDecoder::feed(const uint8_t* p, size_t n, std::string& out, size_t limit) {
  if (out.size() >= limit) return;
  if (layers_.empty()) {
    out.append(reinterpret_cast<const char*>(p), std::min(n, limit - out.size()));
    return;
  }
  // Each layer's output is the next one's input; the pieces in between are bounded by the limit
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
  return std::any_of(layers_.begin(), layers_.end(), [](const auto& l) { return l->passthrough || l->dead; });
}

}  // namespace gaspp
