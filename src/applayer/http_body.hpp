// applayer/http_body.hpp — Content-Encoding of HTTP bodies: gzip and deflate, layered, with zlib.
//
// A body declared `Content-Encoding: gzip, deflate` (or in several headers) was compressed with
// each coding in turn; decoding runs them backwards. Which codings count, as libhtp does:
// gzip/x-gzip and deflate/x-deflate; `identity` and empty tokens are skipped; any other token
// ends the list (what follows it is not decoded). At most `layer_limit` layers are decoded
// (Suricata's response-body-decompress-layer-limit, default 2), the outer ones first.
//
// Leniency, as libhtp: a gzip layer is inflated as raw deflate after its header is skipped (so a
// header with odd flags or a wrong CRC still decodes), and a deflate layer is tried as zlib and, when
// its first bytes are not a zlib header, as raw deflate. When a layer fails (corrupt data) it
// passes the rest of its input through undecoded, so the bytes still reach inspection. Data after
// the end of a compressed stream is dropped. Output is bounded by the caller's limit: decoding
// stops once `limit` bytes came out (counted by the caller as a body cut short).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gaspp {

enum class HttpCoding : uint8_t { gzip, deflate };

// Parses Content-Encoding values (one or more headers, in order) into the codings applied, the
// first applied first. False when a token is not known (the list stops there).
bool parse_content_codings(const std::vector<std::string>& values, std::vector<HttpCoding>& out);

class HttpBodyDecoder {
 public:
  // codings: as parse_content_codings gave them (first applied first); layer_limit: 0 none.
  HttpBodyDecoder(const std::vector<HttpCoding>& codings, uint32_t layer_limit);
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
