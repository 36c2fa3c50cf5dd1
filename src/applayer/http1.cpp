// applayer/http1.cpp — see http1.hpp.
#include "applayer/http1.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace gaspp {

namespace {
// libhtp's Content-Encoding warnings (parse_content_codings_htp) as the transaction's events.
uint64_t coding_events(uint8_t a) {
  return (a & kCodingAbnormal ? uint64_t(kHttpEvAbnormalCeHeader) : 0) |
         (a & kCodingTooManyLayers ? uint64_t(kHttpEvTooManyEncodingLayers) : 0);
}
}  // namespace

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

// The values of the headers whose names `same` accepts, joined with ", "; false when there is none.
template <class Same>
bool join_headers(const std::vector<HttpHeader>& hs, Same same, std::string& out) {
  bool any = false;
  for (const HttpHeader& h : hs)
    if (same(h.name)) {
      if (any) out += ", ";
      out += h.value;
      any = true;
    }
  return any;
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

int hexval_of(uint8_t c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool is_ws(uint8_t c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == 0x0b || c == 0x0c; }

// s without the whitespace (libhtp's is_space) at either end.
std::string trim_space(const std::string& s) {
  size_t a = 0, z = s.size();
  while (a < z && is_ws(uint8_t(s[a]))) ++a;
  while (z > a && is_ws(uint8_t(s[z - 1]))) --z;
  return s.substr(a, z - a);
}

bool token_char(uint8_t c) {
  return c > 0x20 && c < 0x7f && !std::strchr("()<>@,;:\\\"/[]?={}", c);
}

uint64_t header_name_events(const std::string& raw, bool colon, int side);

// The response header block at the start of b, as libhtp's response header parser reads it
// (headers.rs, Side::Response): a lone CR ends a line, "\n\r" is one line end, a line folds when
// its end is followed by SP, HT or NUL unless that continuation looks like "Name:", and the block
// ends at an empty line. Returns the bytes up to and including the block's end, 0 when more bytes
// are needed (at eof: the block ends with the data).
class RespHeaderParser {
 public:
  RespHeaderParser(const std::string& b, bool eof) : b_(b), n_(b.size()), eof_(eof) {}
  uint64_t events = 0;  // the header names' anomalies (HttpEvent bits), valid when parse() used the block
  size_t parse(std::vector<HttpHeader>& out) {
    size_t i = 0;
    for (;;) {
      if (i >= n_) return eof_ ? n_ : 0;
      if (b_[i] == '\r' || b_[i] == '\n') {
        size_t l = def_eol(i);
        if (!l) l = reg_eol(i);
        if (need_) return eof_ ? n_ : 0;
        return i + l;
      }
      HttpHeader h;
      if (!header(i, h)) return eof_ ? n_ : 0;
      out.push_back(std::move(h));
      const size_t l = reg_eol(i);
      if (need_) return eof_ ? n_ : 0;
      if (l) return i + l;
    }
  }

 private:
  uint8_t at(size_t k) const { return uint8_t(b_[k]); }
  // "\r\n", "\n\r", "\n" or "\r" at k (0: none; need_ when the bytes after k decide it).
  size_t reg_eol(size_t k) {
    if (k >= n_) return 0;
    if (at(k) == '\r') {
      if (k + 1 >= n_ && !eof_) need_ = true;
      return k + 1 < n_ && at(k + 1) == '\n' ? 2 : 1;
    }
    if (at(k) == '\n') {
      if (k + 1 >= n_ && !eof_) need_ = true;
      return k + 1 < n_ && at(k + 1) == '\r' ? 2 : 1;
    }
    return 0;
  }
  bool crlf_or_lf(size_t k) const { return k < n_ && (at(k) == '\n' || (at(k) == '\r' && k + 1 < n_ && at(k + 1) == '\n')); }
  // The deformed line ends: "\n\r\r\n" before "\n" or "\r\n"; "\r\n\r" [CR SP HT]+ ["\n"] not before them.
  size_t def_eol(size_t k) const {
    if (b_.compare(k, 4, "\n\r\r\n") == 0 && crlf_or_lf(k + 4)) return 4;
    if (b_.compare(k, 3, "\r\n\r") == 0) {
      size_t e = k + 3;
      while (e < n_ && (at(e) == '\r' || at(e) == ' ' || at(e) == '\t')) ++e;
      if (e == k + 3) return 0;
      if (e < n_ && at(e) == '\n') ++e;
      if (!crlf_or_lf(e)) return e - k;
    }
    return 0;
  }
  size_t line_end(size_t k) const {
    while (k < n_ && at(k) != '\r' && at(k) != '\n') ++k;
    return k;
  }
  // One header from i; i moves past its line end (not past the block's end).
  bool header(size_t& i, HttpHeader& h) {
    // The name runs to the first ':' before a line end; a line end followed by SP or HT does not
    // stop it (libhtp's quirk: "Transfer-Encoding\r\n :\r\n chunked" is a Transfer-Encoding).
    size_t j = i;
    for (;;) {
      while (j < n_ && at(j) != ':' && at(j) != '\r' && at(j) != '\n') ++j;
      if (j >= n_ || at(j) == ':') break;
      const size_t l = reg_eol(j);
      if (need_) return false;
      if (j + l >= n_ && !eof_) return false;
      if (j + l < n_ && (at(j + l) == ' ' || at(j + l) == '\t')) {
        j += l;
        continue;
      }
      break;
    }
    if (j >= n_ && !eof_) return false;
    size_t k;
    if (j < n_ && at(j) == ':') {
      events |= header_name_events(b_.substr(i, j - i), true, 1);
      h.name = trim_space(b_.substr(i, j - i));
      k = j + 1;
      while (k < n_ && (at(k) == ' ' || at(k) == '\t')) ++k;
    } else {
      events |= header_name_events("", false, 1);
      k = i;  // no colon: a header without a name, the line its value
    }
    size_t e = line_end(k);
    if (e >= n_ && !eof_) return false;
    std::string v = b_.substr(k, e - k);
    size_t pos = e;
    for (int folds = 0; pos < n_; ++folds) {
      const size_t l = reg_eol(pos);
      if (need_) return false;
      const size_t f = pos + l;
      if (f >= n_ && !eof_) return false;
      const bool fold = folds < 128 && f < n_ && (at(f) == ' ' || at(f) == '\t' || at(f) == 0);
      if (!fold) {
        const size_t d = def_eol(pos);
        pos += d ? d : l;
        break;
      }
      // A continuation that reads "Name:" is a header of its own.
      size_t q = f + 1;
      while (q < n_ && (at(q) == ' ' || at(q) == '\t')) ++q;
      const size_t t0 = q;
      while (q < n_ && token_char(at(q))) ++q;
      if (q > t0) {
        while (q < n_ && (at(q) == ' ' || at(q) == '\t')) ++q;
        if (q < n_ && at(q) == ':') {
          pos = f;
          break;
        }
      }
      const size_t s2 = f + 1, e2 = line_end(s2);
      if (e2 >= n_ && !eof_) return false;
      const size_t l2 = reg_eol(e2);
      if (need_) return false;
      if (!v.empty()) v += char(at(f));
      if (e2 > s2 || l2 > 1) {
        v += b_.substr(s2, e2 - s2);
        pos = e2;
        continue;
      }
      if (l2 == 1 && e2 + 1 < n_ && at(e2 + 1) == '\n') {
        // "...\n \n\n": the one-byte line end is taken, and the LF after it ends the block.
        pos = e2 + 1;
        break;
      }
      pos = e2;  // a fold of one byte and a 1-byte line end: the block ends at that line end
      break;
    }
    h.value = trim_space(v);
    i = pos;
    return true;
  }
  const std::string& b_;
  size_t n_;
  bool eof_;
  bool need_ = false;
};

// Header names compare case-insensitively with NUL bytes left out (libhtp's framing lookups).
bool name_is(const std::string& name, const char* want) {
  std::string t;
  for (char c : name)
    if (c) t += char(std::tolower(static_cast<unsigned char>(c)));
  return t == want;
}

const HttpHeader* find_header(const std::vector<HttpHeader>& hs, const char* want) {
  for (const HttpHeader& h : hs)
    if (name_is(h.name, want)) return &h;
  return nullptr;
}

// Whether a response's Content-Type (up to ';' or whitespace) names multipart/byteranges.
bool multipart_byteranges(const HttpTx& t) {
  const HttpHeader* ct = find_header(t.resp_headers, "content-type");
  if (!ct) return false;
  const std::string& v = ct->value;
  size_t e = 0;
  while (e < v.size() && v[e] != ';' && !is_ws(uint8_t(v[e]))) ++e;
  return contains_nocase(v.substr(0, e), "multipart/byteranges");
}

// A file's name from a URI as sent (Suricata names an HTTP file by libhtp's parsed path): the
// path, after an absolute URI's scheme and authority, before its query or fragment.
std::string uri_path(const std::string& uri) {
  size_t b = 0;
  const size_t scheme = uri.find("://");
  if (scheme != std::string::npos && uri.find_first_of("/?#") > scheme) {
    b = uri.find_first_of("/?#", scheme + 3);
    if (b == std::string::npos) return "";
  }
  const size_t e = uri.find_first_of("?#", b);
  return uri.substr(b, e == std::string::npos ? std::string::npos : e - b);
}

// Content-Disposition's filename parameter (Suricata's HTTPParseContentDispositionHeader: the
// value after `filename=`, its quotes taken off); "" when there is none.
std::string disposition_filename(const std::string& v) {
  size_t i = 0;
  while (i < v.size()) {
    size_t semi = v.find(';', i);
    if (semi == std::string::npos) semi = v.size();
    size_t a = i;
    while (a < semi && is_ws(uint8_t(v[a]))) ++a;
    const size_t eq = v.find('=', a);
    if (eq < semi) {
      std::string key = v.substr(a, eq - a);
      while (!key.empty() && is_ws(uint8_t(key.back()))) key.pop_back();
      if (key.size() == 8 && contains_nocase(key, "filename")) {
        std::string val = v.substr(eq + 1, semi - eq - 1);
        while (!val.empty() && is_ws(uint8_t(val.front()))) val.erase(0, 1);
        while (!val.empty() && is_ws(uint8_t(val.back()))) val.pop_back();
        if (val.size() >= 2 && val.front() == '"' && val.back() == '"') val = val.substr(1, val.size() - 2);
        return val;
      }
    }
    i = semi + 1;
  }
  return "";
}

// Whether a request's Content-Type names multipart/form-data (and the boundary it needs).
bool form_data(const HttpTx& t) {
  const HttpHeader* ct = find_header(t.req_headers, "content-type");
  return ct && contains_nocase(ct->value, "multipart/form-data") && contains_nocase(ct->value, "boundary");
}

// The hashes `bits` asks for of a closed file's bytes.
void hash_file(MimeFile& f, const std::string& bytes, uint8_t bits) {
  const EVP_MD* mds[3] = {EVP_md5(), EVP_sha1(), EVP_sha256()};
  std::string* out[3] = {&f.md5, &f.sha1, &f.sha256};
  for (int k = 0; k < 3; ++k)
    if (bits & (1 << k)) *out[k] = digest_hex(bytes, mds[k]);
}

// The values of every header named `want` (libhtp's lookup: no case, NULs left out), joined with
// ", " as libhtp joins repeats; false when there is none.
bool joined_header(const std::vector<HttpHeader>& hs, const char* want, std::string& out) {
  return join_headers(hs, [&](const std::string& n) { return name_is(n, want); }, out);
}

// libhtp's protocol number of a request line's protocol (parsers.rs protocol_version): "HTTP",
// "/", the version .9, 1.0 or 1.1 with spaces and leading zeros allowed around them; 9, 100 or
// 101, and -2 for anything else (below 1.1, as libhtp's Invalid). A request line without one is
// HTTP/0.9.
int protocol_number(const std::string& p) {
  if (p.empty()) return 9;
  size_t i = 0;
  const auto spaces = [&] {
    while (i < p.size() && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n' || p[i] == '\f' || p[i] == '\v')) ++i;
  };
  spaces();
  if (p.size() - i < 4 || !contains_nocase(p.substr(i, 4), "http")) return -2;
  i += 4;
  spaces();
  if (i >= p.size() || p[i] != '/') return -2;
  ++i;
  while (i < p.size() && (p[i] == '0' || p[i] == ' ' || p[i] == '\t')) ++i;
  int v = -2;
  if (p.compare(i, 2, ".9") == 0) v = 9, i += 2;
  else if (p.compare(i, 3, "1.0") == 0) v = 100, i += 3;
  else if (p.compare(i, 3, "1.1") == 0) v = 101, i += 3;
  else return -2;
  spaces();
  return i == p.size() ? v : -2;
}

// Content-Length as libhtp reads it: the first run of digits; -1 when there is none.
int64_t lenient_length(const std::string& v) {
  size_t i = 0;
  while (i < v.size() && !(v[i] >= '0' && v[i] <= '9')) ++i;
  if (i == v.size()) return -1;
  int64_t n = 0;
  for (; i < v.size() && v[i] >= '0' && v[i] <= '9'; ++i) {
    if (n > (int64_t(1) << 50)) return -1;
    n = n * 10 + (v[i] - '0');
  }
  return n;
}

// A status code: [SP HT]* digits [SP HT]*, 100..999; 0 otherwise.
int status_code(const std::string& s) {
  size_t i = 0;
  while (i < s.size() && ws(s[i])) ++i;
  int v = 0, d = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9' && d < 4; ++i, ++d) v = v * 10 + (s[i] - '0');
  while (i < s.size() && ws(s[i])) ++i;
  return i == s.size() && d > 0 && v >= 100 && v <= 999 ? v : 0;
}

// libhtp's known methods (HtpMethod::new, case as written); any other is Unknown.
constexpr size_t kHttp09MaxJunk = 16;  // libhtp's HTTP09_MAX_JUNK_LEN

bool known_method(const std::string& m) {
  static const char* const kMethods[] = {"GET", "PUT", "POST", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH",
                                         "PROPFIND", "PROPPATCH", "MKCOL", "COPY", "MOVE", "LOCK", "UNLOCK",
                                         "VERSION-CONTROL", "CHECKOUT", "UNCHECKOUT", "CHECKIN", "UPDATE", "LABEL",
                                         "REPORT", "MKWORKSPACE", "MKACTIVITY", "BASELINE-CONTROL", "MERGE",
                                         "INVALID", "HEAD"};
  return std::any_of(std::begin(kMethods), std::end(kMethods), [&](const char* k) { return m == k; });
}

// The anomalies of a header name as libhtp's header parser flags them (headers.rs name()): the
// name as written before its colon; side 0 request, 1 response. A request's leading whitespace
// only reaches here on a block's first line (later ones fold into the header before).
uint64_t header_name_events(const std::string& raw, bool colon, int side) {
  if (!colon) return side ? kHttpEvResponseFieldMissingColon : kHttpEvRequestFieldMissingColon;
  if (raw.empty()) return side ? kHttpEvResponseInvalidEmptyName : kHttpEvRequestInvalidEmptyName;
  uint64_t ev = 0;
  if (is_ws(uint8_t(raw[0]))) ev |= side ? kHttpEvInvalidResponseFieldFolding : kHttpEvInvalidRequestFieldFolding;
  if (is_ws(uint8_t(raw.back()))) ev |= side ? kHttpEvResponseInvalidLwsAfterName : kHttpEvRequestInvalidLwsAfterName;
  // token_chars: SP/HT, token characters, SP/HT; anything left is not a token.
  size_t i = 0;
  while (i < raw.size() && ws(raw[i])) ++i;
  while (i < raw.size() && token_char(uint8_t(raw[i]))) ++i;
  while (i < raw.size() && ws(raw[i])) ++i;
  if (i < raw.size()) ev |= side ? kHttpEvResponseHeaderNameNotToken : kHttpEvRequestHeaderInvalid;
  return ev;
}

// A chunk-size line with a chunk extension (libhtp's parse_chunked_length): a valid size followed by
// data holding a ';'.
bool chunk_extension(const std::string& line) {
  size_t i = 0;
  while (i < line.size() && is_ws(uint8_t(line[i]))) ++i;
  while (i < line.size() && hexval_of(uint8_t(line[i])) >= 0) ++i;
  return line.find(';', i) != std::string::npos;
}

// Rust's char::is_alphanumeric over a byte taken as U+0000..U+00FF (libhtp's validate_hostname).
bool latin1_alnum(uint8_t c) {
  if (c < 0x80) return std::isalnum(c) != 0;
  return c == 0xaa || c == 0xb2 || c == 0xb3 || c == 0xb5 || c == 0xb9 || c == 0xba || (c >= 0xbc && c <= 0xbe) ||
         (c >= 0xc0 && c != 0xd7 && c != 0xf7);
}

// libhtp's relaxed hostname check (util.rs validate_hostname).
bool valid_hostname(const std::string& h) {
  if (h.empty() || h.size() > 255) return false;
  if (h[0] == '[') {
    const size_t rb = h.find_first_of("#?/]", 1);
    if (rb != std::string::npos && h[rb] == ']' && rb > 1) {
      in6_addr a;
      return inet_pton(AF_INET6, h.substr(1, rb - 1).c_str(), &a) == 1;
    }
  }
  if (h[0] == '.' || h.find("..") != std::string::npos) return false;
  size_t start = 0;
  for (;;) {
    const size_t dot = h.find('.', start);
    const size_t end = dot == std::string::npos ? h.size() : dot;
    if (end - start > 63) return false;
    for (size_t k = start; k < end; ++k)
      if (!(h[k] == '_' || h[k] == '-' || latin1_alnum(uint8_t(h[k])))) return false;
    if (dot == std::string::npos) return true;
    start = dot + 1;
  }
}

// An authority as libhtp's parse_hostport reads a Host header or a CONNECT target: the hostname
// (leading "//" and spaces skipped; an IPv6 literal in brackets, else up to / ? # :), then an
// optional ":port" (port: its number, -1 when there is none, -2 when it is not one). False when it
// has no hostname; valid says whether hostname and port are.
bool parse_hostport(const std::string& in, std::string& host, int& port, bool& valid) {
  size_t i = in.compare(0, 2, "//") == 0 ? 2 : 0;
  if (i < in.size() && in[i] == '/') return false;
  while (i < in.size() && in[i] == ' ') ++i;
  size_t e = i;
  if (i < in.size() && in[i] == '[') {
    const size_t rb = in.find(']', i);
    e = rb == std::string::npos ? in.size() : rb + 1;
  } else {
    while (e < in.size() && !std::strchr("/?#:", in[e])) ++e;
  }
  if (e == i) return false;
  host = in.substr(i, e - i);
  while (!host.empty() && host.back() == ' ') host.pop_back();
  valid = valid_hostname(host);
  port = -1;
  if (e < in.size() && in[e] == ':') {
    size_t k = e + 1;
    while (k < in.size() && in[k] == ' ') ++k;
    size_t z = k;
    while (z < in.size() && !std::strchr("/?#", in[z])) ++z;
    std::string p = in.substr(k, z - k);
    p = p.substr(0, p.find(' '));
    if (p.empty()) {
      valid = false;  // ":" and no port: libhtp's port() does not match, and data is left over
      return true;
    }
    const bool digits = !p.empty() && p.size() <= 5 && p.find_first_not_of("0123456789") == std::string::npos;
    const int n = digits ? std::stoi(p) : 0;
    if (digits && n >= 1 && n <= 65535) {
      port = n;
    } else {
      port = -2;
      valid = false;
    }
  } else if (e < in.size()) {
    valid = false;  // data after the hostname that is no port
  }
  return true;
}

// The hostname of a request URI as libhtp's parse_uri finds one: after a scheme (the URI does not
// start with '/' and has a ':'), past "//user@" credentials; port and valid as parse_hostport's.
// False when the URI names no host.
bool uri_authority(const std::string& uri, std::string& host, int& port, bool& valid) {
  if (uri.empty() || uri[0] == '/') return false;
  const size_t colon = uri.find(':');
  if (colon == std::string::npos) return false;
  std::string rest = uri.substr(colon + 1);
  if (rest.compare(0, 2, "//") == 0 && rest.compare(0, 3, "///") != 0) {
    const size_t at = rest.find('@');
    if (at != std::string::npos) rest = rest.substr(at + 1);
  }
  // Past the authority comes the path: only the hostname and a port given must be valid.
  bool rest_valid = true;
  if (!parse_hostport(rest, host, port, rest_valid)) return false;
  valid = valid_hostname(host) && port != -2;
  return true;
}

}  // namespace

uint64_t http_event_bit(const std::string& name) {
#define GASPP_HTTP_EVENT_LOOKUP(id, text) \
  if (name == text) return kHttpEv##id;
  GASPP_HTTP_EVENTS(GASPP_HTTP_EVENT_LOOKUP)
#undef GASPP_HTTP_EVENT_LOOKUP
  return 0;
}

std::vector<const char*> http_event_names(uint64_t events) {
  static const char* const kNames[] = {
#define GASPP_HTTP_EVENT_NAME(id, text) text,
      GASPP_HTTP_EVENTS(GASPP_HTTP_EVENT_NAME)
#undef GASPP_HTTP_EVENT_NAME
  };
  std::vector<const char*> out;
  for (size_t b = 0; b < size_t(HttpEventId::kCount); ++b)
    if (events >> b & 1) out.push_back(kNames[b]);
  return out;
}

namespace {
// Whether a field's name is `want`: any case in HTTP/1; in HTTP/2 as sent, lowercase (its field
// names are lowercase on the wire; the fields an upgraded request brought from HTTP/1 keep their
// case and so are not found by name, as in Suricata's HTTP/2 lookups).
bool field_is(const HttpTx& t, const std::string& n, const char* want) {
  if (!t.http2) return ieq(n, want);
  size_t i = 0;
  for (; want[i]; ++i)
    if (i >= n.size() || n[i] != char(std::tolower(static_cast<unsigned char>(want[i])))) return false;
  return i == n.size();
}
}  // namespace

std::string HttpTx::req_header(const char* name) const {
  std::string v;
  header(0, name, v);
  return v;
}
std::string HttpTx::resp_header(const char* name) const {
  std::string v;
  header(1, name, v);
  return v;
}
bool HttpTx::has_req_header(const char* name) const {
  return std::any_of(req_headers.begin(), req_headers.end(), [&](const HttpHeader& h) { return field_is(*this, h.name, name); });
}
bool HttpTx::header(int side, const char* name, std::string& out) const {
  return join_headers(side ? resp_headers : req_headers, [&](const std::string& n) { return field_is(*this, n, name); }, out);
}

std::string HttpTx::hostname(int* port) const {
  if (port) *port = -1;
  std::string h;
  const size_t scheme = uri_raw.find("://");
  const bool absolute = scheme != std::string::npos && scheme > 0 && scheme < 8 &&
                        std::all_of(uri_raw.begin(), uri_raw.begin() + long(scheme),
                                    [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; });
  if (absolute) {
    const size_t a = scheme + 3, e = uri_raw.find_first_of("/?#", a);
    h = uri_raw.substr(a, e == std::string::npos ? std::string::npos : e - a);
    const size_t at = h.rfind('@');
    if (at != std::string::npos) h = h.substr(at + 1);
  } else if (!header(0, "host", h)) {
    if (authority.empty()) return "";
    h = authority;  // HTTP/2's :authority
  }
  h = trim(h);
  // The port: after the bracketed IPv6 address, else after the first colon.
  size_t colon = std::string::npos;
  if (!h.empty() && h[0] == '[') {
    const size_t rb = h.find(']');
    if (rb != std::string::npos && rb + 1 < h.size() && h[rb + 1] == ':') colon = rb + 1;
  } else {
    colon = h.find(':');
  }
  if (colon != std::string::npos) {
    const std::string p = trim(h.substr(colon + 1));
    if (port && !p.empty() && p.size() <= 5 && p.find_first_not_of("0123456789") == std::string::npos) {
      const int n = std::stoi(p);  // at most 5 digits: no overflow
      if (n <= 65535) *port = n;
    }
    h.resize(colon);
  }
  while (!h.empty() && h.back() == '.') h.pop_back();
  for (char& c : h) c = char(std::tolower(static_cast<unsigned char>(c)));
  return h;
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
      if (front.get() == last_resp_) last_resp_ = nullptr;
      if (front.get() == last_req_) last_req_ = nullptr;
      txs_.pop_front();
      if (answered_) --answered_;
      ++stats_.txs_dropped;
    }
  }
  txs_.push_back(std::make_unique<HttpTx>());
  HttpTx* t = txs_.back().get();
  t->id = next_id_++;
  t->limits = &lim_;
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
  t->events |= kHttpEvUnableToMatchResponse;
  return t;
}

void Http1Conn::lose(int dir, uint64_t& counter) {
  ++counter;
  Dir& d = d_[dir];
  d.phase = kLost;
  d.line.clear();
  d.dec.reset();
  if (d.tx) update_http_files(*d.tx, dir, true, true, lim_, stats_);  // the message's files end here
  if (dir == 0) last_req_ = nullptr;
}

// A line or header block past header_limit: libhtp's field-too-long, on the message being parsed
// (a request line too long starts its transaction, as libhtp's does), and the direction stops.
void Http1Conn::too_long(int dir) {
  Dir& d = d_[dir];
  HttpTx* t = d.tx;
  if (!t && dir == 0) {
    t = new_tx();
    ++stats_.requests;
  } else if (!t) {
    t = tx_for_response();
  }
  t->events |= dir == 0 ? kHttpEvRequestFieldTooLong : kHttpEvResponseFieldTooLong;
  touch(t);
  lose(dir, stats_.lines_too_long);
}

void Http1Conn::feed(int dir, const uint8_t* p, size_t n, bool gap) {
  Dir& d = d_[dir];
  if (d.phase == kLost) {
    if ((upgrade_tx_ || connect_tx_) && dir == 1 && !gap) rest_.append(reinterpret_cast<const char*>(p), n);
    return;
  }
  if (gap) {
    lose(dir, stats_.gaps);
    return;
  }
  size_t i = 0;
  while (i < n && d.phase != kLost) {
    if (dir == 1 && (d.phase == kIdle || d.phase == kLine || d.phase == kHeaders)) {
      // A response's line and headers: buffered and parsed as libhtp does (response_head).
      d.phase = d.phase == kIdle ? kLine : d.phase;
      d.line.append(reinterpret_cast<const char*>(p + i), n - i);
      i = n;
      drain_response(false);
      return;
    }
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
      case kChunkSize:
        if (d.line.empty()) {
          // Lines of control bytes before a size are skipped; a size line that does not start
          // with a hex digit makes the rest of the stream the body (libhtp's fallback).
          while (i < n && (is_ws(p[i]))) ++i;
          if (i == n) break;
          if (hexval_of(p[i]) < 0) {
            if (d.tx) d.tx->events |= dir == 0 ? kHttpEvInvalidRequestChunkLen : kHttpEvInvalidResponseChunkLen;
            d.phase = kBodyClose;
            break;
          }
        }
        [[fallthrough]];
      default: {
        // Line-oriented phases: gather up to LF.
        const uint8_t* lf = static_cast<const uint8_t*>(std::memchr(p + i, '\n', n - i));
        const size_t take = lf ? size_t(lf - (p + i)) + 1 : n - i;
        if (d.line.size() + take > lim_.header_limit) {
          too_long(dir);
          return;
        }
        d.line.append(reinterpret_cast<const char*>(p + i), take);
        i += take;
        if (!lf) break;
        on_line(dir, d.line);
        d.line.clear();
        if (d.maybe_09) {
          // libhtp's request_protocol: a request line without a protocol followed, in the data at
          // hand, by more than up to 16 bytes of whitespace is not HTTP/0.9: its headers follow.
          d.maybe_09 = false;
          size_t k = i;
          while (k < n && is_ws(p[k])) ++k;
          if (k < n || k - i > kHttp09MaxJunk) {
            d.tx->events |= kHttpEvRequestLineMissingProtocol;
          } else {
            d.tx->req_headers_done = true;
            finish_message(0);
          }
        }
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
      // responses' lines go through response_head
      if (last_req_ && unexpected_body(line, raw)) return;
      last_req_ = nullptr;
      begin_request(line);
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
        too_long(dir);
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
      if (dir == 0) {
        t.events |= header_name_events(colon == std::string::npos ? line : line.substr(0, colon), colon != std::string::npos, 0);
        // Repetition by libhtp's names (a colonless line's is "", so two of them repeat); a
        // repeated Content-Length whose values differ (or do not parse) is ambiguous.
        const std::string name = colon == std::string::npos ? std::string() : h.name;
        bool repeated = false;
        for (size_t k = 0; k < d.names.size(); ++k) {
          if (d.names[k].size() != name.size() || !ieq(d.names[k], name.c_str())) continue;
          t.events |= kHttpEvRequestHeaderRepetition;
          repeated = true;
          if (ieq(name, "content-length")) {
            const int64_t x = lenient_length(hs[k].value), y = lenient_length(h.value);
            if (x < 0 || y < 0 || x != y) t.events |= kHttpEvDuplicateClRequest;
          }
          break;
        }
        // libhtp's number_headers_limit: a new name when more than it are held already.
        if (!repeated && d.distinct_names++ > kHttpHeadersLimit) t.events |= kHttpEvRequestTooManyHeaders;
        d.names.push_back(name);
      }
      hs.push_back(std::move(h));
      touch(&t);
      return;
    }
    case kChunkSize: {
      const int64_t size = parse_chunk_size(line);
      if (size > 0x7fffffff) return;  // skipped, as libhtp does
      if (d.tx && size >= 0 && chunk_extension(line))
        d.tx->events |= dir == 0 ? kHttpEvRequestChunkExtension : kHttpEvResponseChunkExtension;
      if (size < 0) {
        if (d.tx) d.tx->events |= dir == 0 ? kHttpEvInvalidRequestChunkLen : kHttpEvInvalidResponseChunkLen;
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
      // Whatever stands after a chunk's data up to the next LF is discarded (libhtp).
      d.phase = kChunkSize;
      return;
    case kTrailer:
      if (line.empty()) finish_message(dir);
      return;
    default:
      return;
  }
}

void Http1Conn::begin_request(const std::string& line) {
  Dir& d = d_[0];
  HttpTx* t = new_tx();
  d.tx = t;
  ++stats_.requests;
  t->request_line = line;
  d.names.clear();
  d.distinct_names = 0;
  // The method: after any leading whitespace (libhtp's IDS personality ignores it), up to the
  // next whitespace.
  size_t i = 0;
  while (i < line.size() && is_ws(uint8_t(line[i]))) ++i;
  if (i) t->events |= kHttpEvRequestLineLeadingWhitespace;
  const size_t m0 = i;
  while (i < line.size() && !is_ws(uint8_t(line[i]))) ++i;
  t->method = line.substr(m0, i - m0);
  const size_t delim = i;
  while (i < line.size() && is_ws(uint8_t(line[i]))) ++i;
  if (line.find_first_not_of(' ', delim) < i) t->events |= kHttpEvMethodDelimNonCompliant;
  const std::string rest = line.substr(i);
  // The request line's anomalies as libhtp's parse_request_line reads it: the URI ends at the
  // first space (else at any whitespace), the protocol is the rest.
  const bool known = known_method(t->method);
  if (rest.empty()) {
    if (!known) t->events |= kHttpEvRequestLineUnknownMethod;
  } else {
    const std::string rem = trim_space(rest);
    size_t sp = rem.find(' ');
    if (std::any_of(rem.begin(), rem.begin() + long(std::min(sp, rem.size())), [](char c) { return c != ' ' && is_ws(uint8_t(c)); })) {
      t->events |= kHttpEvUriDelimNonCompliant;
      if (sp == std::string::npos)
        sp = size_t(std::find_if(rem.begin(), rem.end(), [](char c) { return is_ws(uint8_t(c)); }) - rem.begin());
    }
    const std::string proto = sp >= rem.size() ? std::string() : trim_space(rem.substr(sp + 1));
    if (proto.empty()) {
      if (!known) t->events |= kHttpEvRequestLineUnknownMethodNoProtocol;
    } else if (!known && protocol_number(proto) == -2) {
      t->events |= kHttpEvRequestLineUnknownMethodInvalidProtocol;
    }
  }
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
  d.phase = kHeaders;
  // HTTP/0.9, a request line alone, unless more than whitespace follows it in the same data
  // (feed decides, as libhtp's request_protocol does).
  d.maybe_09 = t->protocol.empty();
}

// The hostname checks of libhtp's process_request_headers and parse_request_line: the URI's host
// (a CONNECT target: host and port) and the Host header's must be valid, and must not disagree.
void Http1Conn::request_host_events(HttpTx& t) {
  std::string uhost;
  int uport = -1;
  bool have_uri;
  bool uvalid = true;
  have_uri = t.method == "CONNECT" ? parse_hostport(t.uri_raw, uhost, uport, uvalid) : uri_authority(t.uri_raw, uhost, uport, uvalid);
  if (have_uri && !uvalid) t.events |= kHttpEvUriHostInvalid;
  std::string hv;
  if (!joined_header(t.req_headers, "host", hv)) return;
  std::string hhost;
  int hport = -1;
  bool hvalid = true;
  if (parse_hostport(hv, hhost, hport, hvalid)) {
    if (!hvalid) t.events |= kHttpEvHeaderHostInvalid;
    if (have_uri && (uhost.size() != hhost.size() || !ieq(uhost, hhost.c_str()))) t.events |= kHttpEvHostAmbiguous;
    if (have_uri && hport != -1 && uport != -1 && hport != uport) t.events |= kHttpEvHostAmbiguous;
  } else if (have_uri) {
    t.events |= kHttpEvHostAmbiguous;
  }
}

bool Http1Conn::unexpected_body(const std::string& line, const std::string& raw) {
  size_t k = 0;
  while (k < line.size() && is_ws(uint8_t(line[k]))) ++k;
  size_t e = k;
  while (e < line.size() && !is_ws(uint8_t(line[e]))) ++e;
  const std::string method = line.substr(k, e - k);
  if (!method.empty() && known_method(method)) return false;
  Dir& d = d_[0];
  if (!method.empty()) last_req_->events |= kHttpEvRequestBodyUnexpected;
  d.tx = last_req_;
  body(0, reinterpret_cast<const uint8_t*>(raw.data()), raw.size());
  touch(d.tx);
  d.tx = nullptr;
  d.phase = kIdle;
  return true;
}

void Http1Conn::end_headers(int dir) {
  Dir& d = d_[dir];
  HttpTx& t = *d.tx;
  touch(&t);
  if (dir == 0) {
    // Request bodies: chunked when Transfer-Encoding names it, else Content-Length (its first
    // run of digits, as libhtp), else none.
    const HttpHeader* te = find_header(t.req_headers, "transfer-encoding");
    const HttpHeader* cl = find_header(t.req_headers, "content-length");
    const int64_t len = cl ? lenient_length(cl->value) : -1;
    d.hit_limit = false;
    t.req_headers_done = true;
    // The anomalies libhtp flags here (transaction.rs, process_request_headers).
    const int proto = protocol_number(t.protocol);
    if (te) {
      if (!contains_nocase(te->value, "chunked") || proto < 101) t.events |= kHttpEvInvalidTeRequest;
    } else if (cl && len < 0) {
      t.events |= kHttpEvInvalidClRequest;
    }
    if (proto >= 101 && !find_header(t.req_headers, "host")) t.events |= kHttpEvMissingHost;
    request_host_events(t);
    // Authorization: libhtp reads Basic, Digest and Bearer.
    std::string auth;
    if (joined_header(t.req_headers, "authorization", auth)) {
      const auto starts = [&](const char* w) { return auth.size() >= std::strlen(w) && ieq(auth.substr(0, std::strlen(w)), w); };
      if (!starts("basic") && !starts("digest") && !starts("bearer")) t.events |= kHttpEvAuthUnrecognized;
    }
    // Request bodies are decoded too (Suricata turns libhtp's request decompression on).
    // (Repeated fields joined with ", ", as libhtp joins a request's.)
    std::string ce;
    std::vector<HttpCoding> codings;
    uint8_t ce_anomalies = 0;
    if (joined_header(t.req_headers, "content-encoding", ce))
      parse_content_codings_htp(ce, lim_.decompress_layer_limit, codings, lim_.lzma_enabled, &ce_anomalies);
    t.events |= coding_events(ce_anomalies);
    d.dec = codings.empty() ? nullptr : std::make_unique<HttpBodyDecoder>(codings, 0, lim_.lzma_memlimit);
    if (te && contains_nocase(te->value, "chunked")) d.phase = kChunkSize;
    else if (len > 0) d.phase = kBodyLen, d.remain = uint64_t(len);
    else finish_message(dir);
    return;
  }
  response_headers_done(0);
}

void Http1Conn::drain_response(bool eof) {
  Dir& d = d_[1];
  while (d.phase == kLine || d.phase == kHeaders) {
    if (d.line.size() > lim_.header_limit) {
      too_long(1);
      return;
    }
    const size_t used = response_head(eof);
    if (used == 0) {
      if (eof) d.line.clear();
      return;
    }
    d.line.erase(0, used);
    if (d.line.empty()) return;
  }
  if ((upgrade_tx_ || connect_tx_) && d.phase == kLost) {
    // The server's first bytes of HTTP/2 after its 101, or of the tunnel after its 2xx to CONNECT.
    rest_.append(d.line);
    d.line.clear();
    return;
  }
  if (d.phase == kLost || d.line.empty()) return;
  // The headers ended: what follows them is the body (or the next response).
  std::string rest;
  rest.swap(d.line);
  feed(1, reinterpret_cast<const uint8_t*>(rest.data()), rest.size());
}

size_t Http1Conn::response_head(bool eof) {
  Dir& d = d_[1];
  const std::string& b = d.line;
  if (d.phase == kHeaders) {
    HttpTx& t = *d.tx;
    std::vector<HttpHeader> hs;
    RespHeaderParser parser(b, eof);
    const size_t used = parser.parse(hs);
    if (!used) return 0;
    t.events |= parser.events;
    // Repeated names (case-insensitive, NUL counts) are joined with ", ", but the first
    // Content-Length stays (libhtp's process_response_header), and a second one that differs is
    // ambiguous.
    for (HttpHeader& h : hs) {
      HttpHeader* same = nullptr;
      for (HttpHeader& o : t.resp_headers)
        if (o.name.size() == h.name.size() && ieq(o.name, h.name.c_str()) &&
            std::memchr(o.name.data(), 0, o.name.size()) == std::memchr(h.name.data(), 0, h.name.size()))
          same = &o;
      if (!same) {
        if (t.resp_headers.size() > kHttpHeadersLimit) t.events |= kHttpEvResponseTooManyHeaders;  // (libhtp's limit)
        t.resp_headers.push_back(std::move(h));
        continue;
      }
      t.events |= kHttpEvResponseHeaderRepetition;
      if (!name_is(same->name, "content-length")) {
        same->value += ", " + h.value;
      } else {
        const int64_t x = lenient_length(same->value), y = lenient_length(h.value);
        if (x < 0 || y < 0 || x != y) t.events |= kHttpEvDuplicateClResponse;
      }
    }
    t.resp_headers_raw = b.substr(0, used);
    response_headers_done(used);
    return used;
  }
  // kLine: the status line, or lines before it.
  size_t e = 0;
  while (e < b.size() && b[e] != '\r' && b[e] != '\n') ++e;
  size_t eol = 0;
  if (e < b.size()) {
    if (b[e] == '\r' && e + 1 >= b.size() && !eof) return 0;
    eol = b[e] == '\r' && e + 1 < b.size() && b[e + 1] == '\n' ? 2 : 1;
  } else if (!eof) {
    return 0;
  }
  const std::string line = b.substr(0, e);
  if (line.empty()) return e + eol;  // empty lines are skipped
  size_t k = 0;
  while (k < line.size() && (is_ws(uint8_t(line[k])) || line[k] == 0)) ++k;
  const bool http = line.size() - k >= 4 && std::toupper(static_cast<unsigned char>(line[k])) == 'H' &&
                    std::toupper(static_cast<unsigned char>(line[k + 1])) == 'T' &&
                    std::toupper(static_cast<unsigned char>(line[k + 2])) == 'T' &&
                    std::toupper(static_cast<unsigned char>(line[k + 3])) == 'P';
  if (!http) {
    // libhtp's treat_response_line_as_body: skipped when more follows and it is short or the
    // next line starts with 'H'; else body of the response (no decoding), line by line.
    const size_t after = b.size() - (e + eol);
    if (after > 1 && (b[e + eol] == 'H' || line.size() <= 2)) return e + eol;
    if (!d.tx) {
      d.tx = last_resp_ ? last_resp_ : tx_for_response();
      if (d.tx != last_resp_) ++stats_.responses;
      d.tx->resp_line = d.tx->resp_headers_done = true;
      d.tx->resp_done = false;
    }
    d.dec.reset();
    body(1, reinterpret_cast<const uint8_t*>(b.data()), e + eol);
    return e + eol;
  }
  HttpTx* t = d.tx && !d.tx->resp_line ? d.tx : tx_for_response();
  if (d.tx && d.tx != t) finish_message(1);
  d.tx = t;
  ++stats_.responses;
  touch(t);
  t->response_line = line;
  size_t i = k;
  while (i < line.size() && !is_ws(uint8_t(line[i]))) ++i;
  t->resp_protocol = line.substr(k, i - k);
  while (i < line.size() && is_ws(uint8_t(line[i]))) ++i;
  size_t j = i;
  while (j < line.size() && !is_ws(uint8_t(line[j]))) ++j;
  t->stat_code = line.substr(i, j - i);
  while (j < line.size() && is_ws(uint8_t(line[j]))) ++j;
  t->stat_msg = line.substr(j);
  t->resp_line = true;
  // libhtp's validate_response_line.
  if (protocol_number(t->resp_protocol) == -2) t->events |= kHttpEvResponseLineInvalidProtocol;
  if (!status_code(t->stat_code)) t->events |= kHttpEvResponseLineInvalidResponseStatus;
  d.phase = kHeaders;
  return e + eol;
}

// Body framing of a response whose headers ended (libhtp's response_body_determine).
void Http1Conn::response_headers_done(size_t) {
  Dir& d = d_[1];
  HttpTx& t = *d.tx;
  t.resp_headers_done = true;
  touch(&t);
  const HttpHeader* te = find_header(t.resp_headers, "transfer-encoding");
  const HttpHeader* cl = find_header(t.resp_headers, "content-length");
  const bool chunked = te && contains_nocase(te->value, "chunked");
  const int code = status_code(t.stat_code);
  const int64_t len = cl ? lenient_length(cl->value) : -1;
  if (t.method == "CONNECT" && code >= 200 && code < 300) {
    // A tunnel: the bytes after this response are another protocol's (connect_tunnel()).
    t.resp_done = true;
    d.phase = kLost;
    d_[0].phase = kLost;
    connect_tx_ = &t;
    return;
  }
  if (code == 101 && !te && !cl) {
    // Switching protocols: what follows is not HTTP/1 any more. To h2c (the request asked for it,
    // the response agrees): HTTP/2 follows, which the application layer hands to its parser
    // (h2c_upgraded()).
    t.resp_done = true;
    d.phase = kLost;
    d_[0].phase = kLost;
    std::string up;
    if (joined_header(t.req_headers, "upgrade", up) && contains_nocase(up, "h2c") &&
        joined_header(t.resp_headers, "upgrade", up) && contains_nocase(up, "h2c"))
      upgrade_tx_ = &t;
    return;
  }
  if (code == 101) t.events |= kHttpEvSwitchingProtoWithContentLength;
  if (code == 100 && !te && len <= 0) {
    // An interim response: the final one follows for the same request.
    if (t.seen_100continue) t.events |= kHttpEvContinueAlreadySeen;
    t.seen_100continue = true;
    t.response_line.clear();
    t.resp_protocol.clear();
    t.stat_code.clear();
    t.stat_msg.clear();
    t.resp_headers.clear();
    t.resp_headers_raw.clear();
    t.resp_line = t.resp_headers_done = false;
    t.scans.clear();  // what consumers scanned or built of the interim response is gone
    t.built.clear();
    d.phase = kLine;
    return;
  }
  d.hit_limit = false;
  // Content-Encoding: the codings of the first header (repeats joined).
  const HttpHeader* ce = find_header(t.resp_headers, "content-encoding");
  std::vector<HttpCoding> codings;
  uint8_t ce_anomalies = 0;
  if (ce) parse_content_codings_htp(ce->value, lim_.decompress_layer_limit, codings, lim_.lzma_enabled, &ce_anomalies);
  t.events |= coding_events(ce_anomalies);
  d.dec = codings.empty() ? nullptr : std::make_unique<HttpBodyDecoder>(codings, 0, lim_.lzma_memlimit);
  const bool no_body = code / 100 == 1 || code == 204 || code == 304;
  if (t.method != "HEAD" && no_body && (te || cl)) t.events |= kHttpEvResponseBodyUnexpected;
  if (t.method == "HEAD" || (no_body && !te && !cl)) {
    finish_message(1);
  } else if (chunked) {
    if (!ieq(te->value, "chunked")) t.events |= kHttpEvResponseAbnormalTransferEncoding;
    if (protocol_number(t.resp_protocol) < 101) t.events |= kHttpEvResponseChunkedOldProto;
    d.phase = kChunkSize;
  } else if (cl) {
    if (len < 0) {
      t.events |= kHttpEvInvalidClResponse;
      lose(1, stats_.not_http);  // an invalid Content-Length ends libhtp's parsing of the connection
      d_[0].phase = kLost;
    } else if (len == 0) {
      finish_message(1);
    } else {
      d.phase = kBodyLen;
      d.remain = uint64_t(len);
    }
  } else if (multipart_byteranges(t)) {
    // libhtp cannot frame a multipart/byteranges body without a length: its parsing of the
    // connection ends.
    t.events |= kHttpEvResponseMultipartByteranges;
    lose(1, stats_.not_http);
    d_[0].phase = kLost;
  } else {
    d.phase = kBodyClose;
  }
}

void Http1Conn::body(int dir, const uint8_t* p, size_t n) {
  Dir& d = d_[dir];
  if (!d.tx || n == 0) return;
  HttpTx& t = *d.tx;
  const size_t limit = t.file_depth_set[dir] ? lim_.file_store_depth : dir == 0 ? lim_.request_body_limit : lim_.response_body_limit;
  // Only a body that grew is news to the consumers: bytes past the limit (or a decoder still
  // gathering) change nothing they inspect, and a multi-megabyte download would otherwise make
  // them look at the same 100 KiB again for every segment.
  if (!append_http_body(t, dir, p, n, limit, d.dec.get(), d.hit_limit, stats_)) return;
  update_http_files(t, dir, false, false, lim_, stats_);
  touch(&t);
}

bool append_http_body(HttpTx& t, int dir, const uint8_t* p, size_t n, size_t limit, HttpBodyDecoder* dec,
                      bool& counted, HttpStats& st) {
  std::string& out = dir == 0 ? t.request_body : t.response_body;
  (dir == 0 ? t.request_body_len : t.response_body_len) += n;
  const size_t before = out.size();
  if (before >= limit) {
    if (!counted) ++st.bodies_truncated;
    counted = true;
    return false;
  }
  if (dec) {
    const bool failed = dec->failed();
    dec->feed(p, n, out, limit);
    if (!failed && dec->failed()) ++st.decode_failures;
  } else {
    out.append(reinterpret_cast<const char*>(p), std::min(n, limit - before));
  }
  if (out.size() >= limit) {
    if (!counted) ++st.bodies_truncated;
    counted = true;
    t.body_cut[dir] = true;
  }
  return out.size() != before;
}

void update_http_files(HttpTx& t, int dir, bool done, bool incomplete, const HttpLimits& lim, HttpStats& st) {
  const std::string& body = dir == 0 ? t.request_body : t.response_body;
  if (dir == 0 && !t.form && t.form_fed == 0 && !body.empty() && t.method == "POST" && form_data(t)) {
    // A form's parts are MIME entities under the request's Content-Type.
    t.form = std::make_unique<MimeDecoder>(st.form, lim.file_hashes);
    t.form->line("Content-Type: " + find_header(t.req_headers, "content-type")->value, "\r\n");
    t.form->line("", "\r\n");
  }
  if (dir == 0 && t.form) {
    // Whole lines only; the rest waits for its line break or the body's end.
    while (t.form_fed < body.size()) {
      const size_t nl = body.find('\n', t.form_fed);
      if (nl == std::string::npos && !done) break;
      const size_t e = nl == std::string::npos ? body.size() : nl + 1;
      size_t le = e;
      if (le > t.form_fed && body[le - 1] == '\n') --le;
      if (le > t.form_fed && body[le - 1] == '\r') --le;
      t.form->line(std::string_view(body).substr(t.form_fed, le - t.form_fed), std::string_view(body).substr(le, e - le));
      t.form_fed = e;
    }
    if (done) t.form->end(incomplete || t.body_cut[0]);
    return;
  }
  // Suricata's request files: a POST's or a PUT's body (methods as libhtp numbers them: uppercase).
  if (dir == 0 && t.method != "POST" && t.method != "PUT") return;
  std::vector<MimeFile>& fs = t.body_files[dir];
  if (fs.empty()) {
    if (body.empty()) return;  // a file opens with its first byte (Suricata's)
    ++st.files;
    fs.emplace_back();
    const HttpHeader* cd = dir == 1 ? find_header(t.resp_headers, "content-disposition") : nullptr;
    fs[0].name = cd ? disposition_filename(cd->value) : "";
    if (fs[0].name.empty()) fs[0].name = uri_path(t.uri_raw);
  }
  MimeFile& f = fs[0];
  if (!f.open()) return;
  f.size = body.size();
  if (!done) return;
  if (incomplete || t.body_cut[dir]) {
    f.truncated = true;
    ++st.files_truncated;
  } else {
    f.closed = true;
    hash_file(f, body, lim.file_hashes);
  }
}

void Http1Conn::finish_message(int dir, bool incomplete) {
  Dir& d = d_[dir];
  if (d.tx) {
    update_http_files(*d.tx, dir, true, incomplete, lim_, stats_);
    touch(d.tx);
    if (dir == 0) {
      d.tx->req_done = true;
      if (!d.tx->protocol.empty()) last_req_ = d.tx;  // not after HTTP/0.9 (libhtp ignores what follows)
    } else {
      d.tx->resp_done = true, last_resp_ = d.tx;
    }
  }
  d.tx = nullptr;
  d.dec.reset();
  d.remain = 0;
  d.phase = kIdle;
}

void Http1Conn::end(int dir) {
  Dir& d = d_[dir];
  if (dir == 1 && (d.phase == kLine || d.phase == kHeaders) && !d.line.empty()) drain_response(true);
  if (d.phase == kChunkSize && !d.line.empty()) {
    // A size line the stream ended in: libhtp's fallback makes it body.
    body(dir, reinterpret_cast<const uint8_t*>(d.line.data()), d.line.size());
    d.line.clear();
  }
  if (d.phase == kBodyClose || d.phase == kChunkSize || d.phase == kChunkData || d.phase == kChunkEnd ||
      d.phase == kBodyLen || (dir == 1 && d.tx && d.tx->resp_line))
    // A body that runs to the close is whole; one whose length or chunks were cut off is not.
    finish_message(dir, d.phase == kChunkSize || d.phase == kChunkData || d.phase == kChunkEnd ||
                            (d.phase == kBodyLen && d.remain > 0));
  if (d.phase != kLost) d.phase = kLost;
}

void Http1Conn::release_done() {
  while (!txs_.empty()) {
    HttpTx* t = txs_.front().get();
    if (!(t->req_done && t->resp_done) || t == d_[0].tx || t == d_[1].tx ||
        std::find(touched_.begin(), touched_.end(), t) != touched_.end())
      break;
    if (t == last_resp_) last_resp_ = nullptr;
    if (t == last_req_) last_req_ = nullptr;
    txs_.pop_front();
    if (answered_) --answered_;
  }
}

}  // namespace gaspp
