// modules/detect/transform.hpp — Suricata's buffer transforms: the options after a transform
// inspect the sticky buffer transformed, a buffer of its own.
//
//   http.uri; url_decode; to_lowercase; content:"/admin";
//   http.request_line; pcrexform:"[a-zA-Z]+\s+(.*)\s+HTTP"; to_sha256; content:"|54 A9 ...|";
//
// Transforms (as Suricata 8 applies them, read from rust/src/detect/transforms and
// detect-transform-pcrexform.c; each leaves an empty buffer empty):
//   dotprefix             "." before the buffer
//   to_lowercase / to_uppercase   ASCII case
//   strip_whitespace      drops \t \n \v \f \r and space
//   compress_whitespace   a run of whitespace becomes its first character
//   to_md5 / to_sha1 / to_sha256  the raw digest (OpenSSL)
//   url_decode            %HH (either case) and '+' to space; a '%' not followed by two hex digits
//                         is kept with what follows it (that byte not decoded again)
//   xor:"HEX"             [offset N,]"HEX": the key repeated over the buffer from byte N (the bytes
//                         before it as they are); `extract NBYTES OFFSET` reads the key from the
//                         buffer itself
//   pcrexform:"RE"        the first capture group of the expression's first match (PCRE2); the
//                         buffer as it was when the expression does not match
//   header_lowercase      header names lowercased (up to each ':' of a line)
//   strip_pseudo_headers  lines starting with ':' dropped
//   from_base64[:bytes N, offset M, mode strict|rfc4648|rfc2045]   the base64 decoded; the buffer as
//                         it was when offset is past its end, when bytes is not less than what is
//                         left after offset, or when nothing decodes
//   subslice:OFFSET[,NBYTES][,truncate]   bytes from OFFSET (from the end when negative), NBYTES of
//                         them (up to NBYTES from the end when negative); out of range: empty,
//                         unless truncate clamps to the buffer
//   gunzip / zlib_deflate[:max-size N]     the gzip / zlib stream decompressed (zlib), at most N bytes
//                         (default 1024, at most 16 MiB); empty when nothing decompresses
// The others Suricata has (domain and tld, which need the public suffix list; luaxform) skip the
// rule, counted as "app-layer:<name>".
//
// A content after a transform must survive it (Suricata's TransformValidate): uppercase after
// to_lowercase, lowercase after to_uppercase, whitespace after strip_whitespace, or two whitespace
// bytes in a row after compress_whitespace make the rule an error.
//
// A (sticky buffer, transforms) pair is a buffer id of its own (SigBuf kBufDerived..kBufCount),
// registered for the process when a rule names it and shared by every rule that names the same
// pair. At most kMaxDerivedBufs pairs: a rule that needs another is skipped
// ("app-layer:transforms: more than N buffer and transform combinations").
//
// A multi-buffer's keyword used again in one rule (`http.request_header; content:"a";
// http.request_header; content:"b";`) is a buffer of its own too, as Suricata's multi-instance
// buffers are: the pair's `copy` numbers the use, and each copy matches at any of its instances
// on its own (two headers, not both contents in one). ftp.reply and ftp.completion_code, which
// Suricata does not register as multi-instance, are not copied; a mail's file.name copies, in a
// file signature, are still matched within one file.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gaspp {

enum class TransformKind : uint8_t {
  dotprefix, to_lowercase, to_uppercase, strip_whitespace, compress_whitespace, to_md5, to_sha1, to_sha256,
  url_decode, xor_key, pcrexform, header_lowercase, strip_pseudo_headers, from_base64, subslice, gunzip, zlib_deflate
};

struct Transform {
  TransformKind kind = TransformKind::dotprefix;
  std::string arg;             // xor: the key bytes; pcrexform: the expression
  uint32_t offset = 0;         // xor, from_base64: where decoding starts
  uint32_t nbytes = 0;         // from_base64: bytes (0: all); xor extract: the key's length
  uint32_t key_at = 0;         // xor extract: where the key is read
  bool key_extract = false;    // xor: the key is read from the buffer
  uint8_t mode = 1;            // from_base64: 0 strict, 1 rfc4648, 2 rfc2045
  int32_t s_offset = 0;        // subslice: the offset (negative: from the end)
  int32_t s_nbytes = 0;        // subslice: bytes (negative: up to that many from the end); 0: to the end
  bool truncate = false;       // subslice: clamp to the buffer instead of giving an empty one
  uint32_t max_size = 1024;    // gunzip, zlib_deflate: the most bytes decompressed
  std::shared_ptr<void> code;  // pcrexform: the compiled expression (pcre2_code)
  bool operator==(const Transform& o) const;
};

// Parses a transform option (its keyword and value). Returns true when k names one of Suricata's
// transforms; then `why` is "" (t filled), "skip:<reason>" or "error:<why>".
bool parse_transform(const std::string& k, const std::string& v, Transform& t, std::string& why);
// Whether a content's bytes survive the transform (Suricata's TransformValidate).
bool transform_accepts(const Transform& t, const std::string& content);
const char* transform_name(TransformKind k);
// Applies one transform to buf in place.
void apply_transform(const Transform& t, std::string& buf);

// A registered (buffer, transforms) pair.
struct DerivedBuf {
  uint8_t base = 0;                  // a SigBuf without transforms
  std::vector<Transform> chain;      // in rule order
  uint8_t copy = 0;                  // the keyword's use in its rule (0: the first; instance_copy)
  std::string name;                  // "http.uri|url_decode|to_lowercase", "http.request_header#1"
};
// The pair the buffer b (plain or derived) becomes with more transforms: its id, or 0 (the
// payload: none) when the table is full.
uint8_t derive_buf(uint8_t b, const std::vector<Transform>& more);
// The plain buffer b's n-th further use in one rule (n >= 1): its id, or 0 when the table is full.
uint8_t instance_copy(uint8_t b, uint8_t n);
// The registered pair of id b, or null when b is not derived.
const DerivedBuf* derived_buf(uint8_t b);
// b's plain buffer (b itself when not derived).
uint8_t base_buf(uint8_t b);
// b with its plain buffer `from` replaced by `to` (b itself when its base is not `from`; 0 when
// the table is full).
uint8_t rebase_buf(uint8_t b, uint8_t from, uint8_t to);
// Applies b's transforms to buf (nothing when b is not derived).
void apply_transforms(uint8_t b, std::string& buf);

}  // namespace gaspp
