// applayer/http_body.hpp — Content-Encoding of HTTP bodies: gzip and deflate (zlib) and lzma
// (liblzma), layered.
//
// A body declared `Content-Encoding: gzip, deflate` (or in several headers) was compressed with
// each coding in turn; decoding runs them backwards. Which codings count, as libhtp does:
// gzip/x-gzip and deflate/x-deflate, and lzma when enabled (Suricata's lzma-enabled, off by
// default: an lzma body is then inspected as sent); `identity` and empty tokens are skipped; any other token
// ends the list (what follows it is not decoded). At most `layer_limit` layers are decoded
// (Suricata's response-body-decompress-layer-limit, default 2), the outer ones first.
//
// Leniency, as libhtp: a gzip layer is inflated as raw deflate after its header is skipped (the
// trailer's CRC is never checked), deflate is raw deflate. On an error a layer restarts with the
// next format (gzip -> deflate -> zlib -> gzip; deflate -> zlib -> gzip -> deflate) on the current
// piece, at most 3 times, and then passes its data through undecoded, so the bytes still reach
// inspection; an error right after the first output ends the layer (later data is dropped). Data
// after the end of a compressed stream is dropped. Output is bounded by the caller's limit:
// decoding stops once `limit` bytes came out (counted by the caller as a body cut short).
//
// lzma, as libhtp: the 13-byte header of the .lzma format (5 bytes of properties, 8 of size), then
// the LZMA stream decoded until its end marker or the body's end, whatever the header's size says;
// the decoder's dictionary is bounded by lzma_memlimit (Suricata's lzma-memlimit, 1 MiB by
// default) as libhtp bounds it: its dictionary grows with the output, so a stream that declares a
// larger one decodes until its output reaches the limit, and then fails. An lzma layer that fails
// before any output passes its data through; after output it ends (what it made is kept).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gaspp {

enum class HttpCoding : uint8_t { gzip, deflate, lzma };

// A Content-Encoding value (repeated headers joined with ", ") as libhtp reads it: the whole value
// gzip, x-gzip, deflate or x-deflate; else split on ',' and ' ', each token a layer (at most
// layer_limit, 0: no limit, unknown tokens count), one that contains "gzip" or "deflate" that
// coding (one that contains "lzma": lzma when `lzma`, at most one such layer). out: the codings in
// the order they were applied (the last is undone first).
// anomalies (when given) gets libhtp's warnings on the list (kCodingAbnormal: a token that holds
// "gzip" or "deflate" but is not exactly gzip/x-gzip/deflate/x-deflate, or is none of those, lzma,
// inflate, none, identity; kCodingTooManyLayers: tokens past layer_limit).
inline constexpr uint8_t kCodingAbnormal = 1, kCodingTooManyLayers = 2;
void parse_content_codings_htp(const std::string& value, uint32_t layer_limit, std::vector<HttpCoding>& out,
                               bool lzma = false, uint8_t* anomalies = nullptr);

class HttpBodyDecoder {
 public:
  // codings: as parse_content_codings_htp gave them (first applied first); layer_limit: 0 none;
  // lzma_memlimit: bytes an lzma layer's decoder may use.
  HttpBodyDecoder(const std::vector<HttpCoding>& codings, uint32_t layer_limit, uint64_t lzma_memlimit = 1u << 20);
  ~HttpBodyDecoder();
  HttpBodyDecoder(const HttpBodyDecoder&) = delete;
  HttpBodyDecoder& operator=(const HttpBodyDecoder&) = delete;
  // Decodes the next piece of the body and appends the result to out, up to out.size() == limit.
  void feed(const uint8_t* p, size_t n, std::string& out, size_t limit);
  bool failed() const;  // some layer passed data through undecoded

 private:
  struct Layer;
  std::vector<std::unique_ptr<Layer>> layers_;  // innermost coding (applied last) first
};

}  // namespace gaspp
