// modules/detect/transform.cpp — Suricata's buffer transforms (transform.hpp).
#define PCRE2_CODE_UNIT_WIDTH 8
#include "modules/detect/transform.hpp"
#include "modules/detect/text.hpp"

#include <openssl/evp.h>
#include <pcre2.h>
#include <zlib.h>

#include <array>
#include <atomic>
#include <cctype>
#include <mutex>

#include "modules/detect/base64.hpp"
#include "modules/detect/signature.hpp"

namespace gaspp {

namespace {

bool is_ws(uint8_t c) { return c == '\t' || c == '\n' || c == 0x0b || c == 0x0c || c == '\r' || c == ' '; }

int hexval(uint8_t c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string unquote(const std::string& s) {
  return s.size() >= 2 && s.front() == '"' && s.back() == '"' ? s.substr(1, s.size() - 2) : s;
}

bool parse_u32(const std::string& s, uint32_t max, uint32_t& out) {
  if (s.empty() || s.size() > 10 || s.find_first_not_of("0123456789") != std::string::npos) return false;
  const unsigned long long v = std::stoull(s);
  if (v > max) return false;
  out = uint32_t(v);
  return true;
}

// xor's key: hex digits (an even count, 1-255 bytes) or `extract NBYTES OFFSET`.
bool parse_xor_key(const std::string& s0, Transform& t, std::string& why) {
  const std::string s = trim(s0);
  if (s.rfind("extract", 0) == 0) {
    const std::string rest = trim(s.substr(7));
    const size_t sp = rest.find_first_of(" \t");
    uint32_t n = 0, at = 0;
    if (sp == std::string::npos || !parse_u32(rest.substr(0, sp), 255, n) || n == 0 ||
        !parse_u32(trim(rest.substr(sp)), 65535, at)) {
      why = "error:xor: 'extract' wants 'extract <nbytes> <offset>' (1-255 bytes)";
      return false;
    }
    t.key_extract = true;
    t.nbytes = n;
    t.key_at = at;
    return true;
  }
  const std::string h = unquote(s);
  if (h.empty() || h.size() % 2 || h.size() > 510) {
    why = "error:xor: '" + h + "' is not a hex key of 1 to 255 bytes";
    return false;
  }
  for (size_t i = 0; i < h.size(); i += 2) {
    const int a = hexval(uint8_t(h[i])), b = hexval(uint8_t(h[i + 1]));
    if (a < 0 || b < 0) {
      why = "error:xor: '" + h + "' is not a hex key";
      return false;
    }
    t.arg += char(a * 16 + b);
  }
  return true;
}

// Suricata's base64 modes for from_base64 (rust/src/utils/base64.rs, ffi/base64.rs): rfc4648
// stops at the first byte outside the alphabet and '=' (base64.hpp); rfc2045 skips such bytes and
// drops a group left incomplete at the end; strict (the base64 crate's STANDARD engine) decodes
// only canonical base64 (whole padded groups, '=' only at the end, unused bits zero), else nothing.
size_t base64_decode_mode(const uint8_t* in, size_t n, uint8_t mode, std::string& out) {
  out.assign(n, '\0');
  uint8_t* o = reinterpret_cast<uint8_t*>(out.data());
  if (mode == 1) return base64_decode_rfc4648(in, n, o);
  if (mode == 0) {
    if (n % 4) return 0;
    for (size_t i = 0; i < n; ++i) {
      const int v = base64_value(in[i]);
      if (v < 0) return 0;
      if (v == 64) {  // padding: the last one or two places of the last group only
        const bool third = i == n - 2 && base64_value(in[n - 1]) == 64;
        if (i != n - 1 && !third) return 0;
      }
    }
    if (n && in[n - 1] == '=') {
      const bool two = in[n - 2] == '=';
      const int last = base64_value(in[n - (two ? 3 : 2)]);
      if (last & (two ? 0x0f : 0x03)) return 0;  // bits the padding leaves unused must be zero
    }
    return base64_decode_rfc4648(in, n, o);
  }
  std::string kept;
  kept.reserve(n);
  for (size_t i = 0; i < n; ++i)
    if (base64_value(in[i]) >= 0) kept += char(in[i]);
  kept.resize(kept.size() / 4 * 4);
  return base64_decode_rfc4648(reinterpret_cast<const uint8_t*>(kept.data()), kept.size(), o);
}

struct PcreFree {
  void operator()(void* p) const { pcre2_code_free(static_cast<pcre2_code*>(p)); }
};

}  // namespace

bool Transform::operator==(const Transform& o) const {
  return kind == o.kind && arg == o.arg && offset == o.offset && nbytes == o.nbytes && key_at == o.key_at &&
         key_extract == o.key_extract && mode == o.mode && s_offset == o.s_offset && s_nbytes == o.s_nbytes &&
         truncate == o.truncate && max_size == o.max_size;
}

const char* transform_name(TransformKind k) {
  switch (k) {
    case TransformKind::dotprefix: return "dotprefix";
    case TransformKind::to_lowercase: return "to_lowercase";
    case TransformKind::to_uppercase: return "to_uppercase";
    case TransformKind::strip_whitespace: return "strip_whitespace";
    case TransformKind::compress_whitespace: return "compress_whitespace";
    case TransformKind::to_md5: return "to_md5";
    case TransformKind::to_sha1: return "to_sha1";
    case TransformKind::to_sha256: return "to_sha256";
    case TransformKind::url_decode: return "url_decode";
    case TransformKind::xor_key: return "xor";
    case TransformKind::pcrexform: return "pcrexform";
    case TransformKind::header_lowercase: return "header_lowercase";
    case TransformKind::strip_pseudo_headers: return "strip_pseudo_headers";
    case TransformKind::from_base64: return "from_base64";
    case TransformKind::subslice: return "subslice";
    case TransformKind::gunzip: return "gunzip";
    case TransformKind::zlib_deflate: return "zlib_deflate";
  }
  return "?";
}

bool parse_transform(const std::string& k, const std::string& v0, Transform& t, std::string& why) {
  static const std::pair<const char*, TransformKind> kNoArg[] = {
      {"dotprefix", TransformKind::dotprefix},
      {"to_lowercase", TransformKind::to_lowercase},
      {"to_uppercase", TransformKind::to_uppercase},
      {"strip_whitespace", TransformKind::strip_whitespace},
      {"compress_whitespace", TransformKind::compress_whitespace},
      {"to_md5", TransformKind::to_md5},
      {"to_sha1", TransformKind::to_sha1},
      {"to_sha256", TransformKind::to_sha256},
      {"url_decode", TransformKind::url_decode},
      {"header_lowercase", TransformKind::header_lowercase},
      {"strip_pseudo_headers", TransformKind::strip_pseudo_headers},
  };
  static const char* const kUnsupported[] = {"domain", "tld", "luaxform"};
  t = Transform{};
  why.clear();
  const std::string v = trim(v0);
  for (const auto& [name, kind] : kNoArg)
    if (k == name) {
      if (!v.empty()) why = "error:" + k + " takes no value";
      t.kind = kind;
      return true;
    }
  for (const char* name : kUnsupported)
    if (k == name) {
      why = "skip:app-layer:" + k;
      return true;
    }
  if (k == "xor") {
    t.kind = TransformKind::xor_key;
    if (v.empty()) {
      why = "error:xor needs a key";
      return true;
    }
    std::string key = v;
    if (v.rfind("offset", 0) == 0) {
      const size_t comma = v.find(',');
      if (comma == std::string::npos || !parse_u32(trim(v.substr(6, comma - 6)), 0xffffffffu, t.offset)) {
        why = "error:xor: 'offset' wants 'offset <N>,<key>'";
        return true;
      }
      key = v.substr(comma + 1);
    }
    parse_xor_key(key, t, why);
    return true;
  }
  if (k == "pcrexform") {
    t.kind = TransformKind::pcrexform;
    t.arg = unquote(v);
    int err = 0;
    PCRE2_SIZE off = 0;
    pcre2_code* re = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(t.arg.c_str()), PCRE2_ZERO_TERMINATED, 0, &err, &off, nullptr);
    if (!re) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof msg);
      why = "error:pcrexform: \"" + t.arg + "\" does not compile at offset " + std::to_string(off) + ": " +
            reinterpret_cast<const char*>(msg);
      return true;
    }
    t.code = std::shared_ptr<void>(re, PcreFree{});
    uint32_t groups = 0;
    pcre2_pattern_info(re, PCRE2_INFO_CAPTURECOUNT, &groups);
    if (groups != 1) why = "error:pcrexform needs exactly one capture group, found " + std::to_string(groups);
    return true;
  }
  if (k == "subslice") {
    // Suricata's subslice.rs: OFFSET, OFFSET,NBYTES, OFFSET,truncate or OFFSET,NBYTES,truncate.
    t.kind = TransformKind::subslice;
    std::vector<std::string> parts;
    for (size_t at = 0;;) {
      const size_t comma = v.find(',', at);
      parts.push_back(trim(v.substr(at, comma == std::string::npos ? std::string::npos : comma - at)));
      if (comma == std::string::npos) break;
      at = comma + 1;
    }
    const auto number = [](const std::string& s, int32_t& out) {
      if (s.empty() || s.size() > 11) return false;
      size_t i = s[0] == '-' || s[0] == '+' ? 1 : 0;
      if (i == s.size() || s.find_first_not_of("0123456789", i) != std::string::npos) return false;
      const long long n = std::stoll(s);
      if (n < INT32_MIN || n > INT32_MAX) return false;
      out = int32_t(n);
      return true;
    };
    const auto is_truncate = [](std::string s) {
      for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
      return s == "truncate";
    };
    bool ok = !parts.empty() && parts.size() <= 3 && number(parts[0], t.s_offset);
    if (ok && parts.size() == 2) {
      if (is_truncate(parts[1])) t.truncate = true;
      else ok = number(parts[1], t.s_nbytes) && t.s_nbytes != 0;
    } else if (ok && parts.size() == 3) {
      ok = number(parts[1], t.s_nbytes) && t.s_nbytes != 0 && is_truncate(parts[2]);
      t.truncate = true;
    }
    if (!ok) why = "error:subslice: 'offset', 'offset, nbytes' (not 0), 'offset, truncate' or 'offset, nbytes, truncate', not '" + v + "'";
    return true;
  }
  if (k == "gunzip" || k == "zlib_deflate") {
    // Suricata's decompress.rs: an optional "max-size N" (units kb, mb; 1 to 16 MiB).
    t.kind = k == "gunzip" ? TransformKind::gunzip : TransformKind::zlib_deflate;
    if (v.empty()) return true;
    const size_t sp = v.find(' ');
    const std::string key = v.substr(0, sp), val = sp == std::string::npos ? "" : trim(v.substr(sp + 1));
    uint64_t mult = 1;
    std::string digits = val;
    for (const auto& [unit, m] : {std::pair<const char*, uint64_t>{"kb", 1024}, {"mb", 1024 * 1024}, {"gb", 1024ull << 20}})
      if (digits.size() > 2 && digits.compare(digits.size() - 2, 2, unit) == 0) {
        mult = m;
        digits.resize(digits.size() - 2);
      }
    uint32_t n = 0;
    if (key != "max-size" || !parse_u32(trim(digits), 0xffffffffu, n) || n == 0 || uint64_t(n) * mult > (16u << 20))
      why = "error:" + k + ": 'max-size N' from 1 to 16 MiB, not '" + v + "'";
    else
      t.max_size = uint32_t(uint64_t(n) * mult);
    return true;
  }
  if (k == "from_base64") {
    t.kind = TransformKind::from_base64;
    if (v.empty()) return true;
    bool seen[3] = {};
    size_t start = 0;
    while (start <= v.size()) {
      size_t comma = v.find(',', start);
      if (comma == std::string::npos) comma = v.size();
      const std::string item = trim(v.substr(start, comma - start));
      start = comma + 1;
      const size_t sp = item.find_first_of(" \t");
      const std::string name = item.substr(0, sp);
      const std::string val = sp == std::string::npos ? "" : trim(item.substr(sp));
      const int which = name == "mode" ? 0 : name == "offset" ? 1 : name == "bytes" ? 2 : -1;
      if (which < 0) {
        why = "error:from_base64: unknown option '" + name + "'";
        return true;
      }
      if (seen[which]) {
        why = "error:from_base64: " + name + " given twice";
        return true;
      }
      seen[which] = true;
      if (which == 0) {
        if (val == "strict") t.mode = 0;
        else if (val == "rfc4648") t.mode = 1;
        else if (val == "rfc2045") t.mode = 2;
        else {
          why = "error:from_base64: mode is strict, rfc4648 or rfc2045, not '" + val + "'";
          return true;
        }
      } else if (!parse_u32(val, 65535, which == 1 ? t.offset : t.nbytes)) {
        why = "error:from_base64: " + name + " is a number from 0 to 65535, not '" + val + "'";
        return true;
      }
    }
    return true;
  }
  return false;
}

bool transform_accepts(const Transform& t, const std::string& c) {
  switch (t.kind) {
    case TransformKind::to_lowercase:
      for (const char ch : c)
        if (ch >= 'A' && ch <= 'Z') return false;
      return true;
    case TransformKind::to_uppercase:
      for (const char ch : c)
        if (ch >= 'a' && ch <= 'z') return false;
      return true;
    case TransformKind::strip_whitespace:
      for (const char ch : c)
        if (is_ws(uint8_t(ch))) return false;
      return true;
    case TransformKind::compress_whitespace:
      for (size_t i = 1; i < c.size(); ++i)
        if (is_ws(uint8_t(c[i - 1])) && is_ws(uint8_t(c[i]))) return false;
      return true;
    default:
      return true;
  }
}

void apply_transform(const Transform& t, std::string& b) {
  if (b.empty()) return;  // Suricata leaves an empty buffer as it is
  switch (t.kind) {
    case TransformKind::dotprefix: b.insert(b.begin(), '.'); return;
    case TransformKind::to_lowercase:
      for (char& c : b)
        if (c >= 'A' && c <= 'Z') c = char(c + 32);
      return;
    case TransformKind::to_uppercase:
      for (char& c : b)
        if (c >= 'a' && c <= 'z') c = char(c - 32);
      return;
    case TransformKind::strip_whitespace: {
      size_t o = 0;
      for (const char c : b)
        if (!is_ws(uint8_t(c))) b[o++] = c;
      b.resize(o);
      return;
    }
    case TransformKind::compress_whitespace: {
      size_t o = 0;
      bool space = false;
      for (const char c : b) {
        const bool ws = is_ws(uint8_t(c));
        if (!ws || !space) b[o++] = c;
        space = ws;
      }
      b.resize(o);
      return;
    }
    case TransformKind::to_md5:
    case TransformKind::to_sha1:
    case TransformKind::to_sha256: {
      const EVP_MD* md = t.kind == TransformKind::to_md5 ? EVP_md5() : t.kind == TransformKind::to_sha1 ? EVP_sha1() : EVP_sha256();
      unsigned char out[EVP_MAX_MD_SIZE];
      unsigned int n = 0;
      // A digest that fails (no provider) leaves the buffer empty: nothing matches it.
      if (EVP_Digest(b.data(), b.size(), out, &n, md, nullptr) != 1) n = 0;
      b.assign(reinterpret_cast<const char*>(out), n);
      return;
    }
    case TransformKind::url_decode: {
      // Suricata's state machine: after a '%', two hex digits give a byte; anything else ends the
      // escape, written as it came ('%', the hex digit read, then the byte itself, which is not
      // read again: "%%41" stays "%%41", "%+" stays "%+").
      std::string o;
      o.reserve(b.size());
      int state = 0;  // 0 plain, 1 after '%', 2 after '%' and one hex digit
      char first = 0;
      for (const char c : b) {
        if (state) {
          const int v = hexval(uint8_t(c));
          if (v >= 0 && state == 1) {
            state = 2, first = c;
          } else if (v >= 0) {
            o += char(hexval(uint8_t(first)) * 16 + v), state = 0;
          } else {
            o += '%';
            if (state == 2) o += first;
            o += c, state = 0;
          }
        } else if (c == '%') {
          state = 1;
        } else {
          o += c == '+' ? ' ' : c;
        }
      }
      if (state) {
        o += '%';
        if (state == 2) o += first;
      }
      b = std::move(o);
      return;
    }
    case TransformKind::xor_key: {
      if (t.offset > b.size()) return;
      std::string key = t.arg;
      if (t.key_extract) {
        if (size_t(t.key_at) + t.nbytes > b.size()) return;
        key = b.substr(t.key_at, t.nbytes);
      }
      for (size_t i = t.offset; i < b.size(); ++i) b[i] = char(uint8_t(b[i]) ^ uint8_t(key[(i - t.offset) % key.size()]));
      return;
    }
    case TransformKind::pcrexform: {
      pcre2_code* re = static_cast<pcre2_code*>(t.code.get());
      if (!re) return;
      pcre2_match_data* m = pcre2_match_data_create_from_pattern(re, nullptr);
      if (!m) return;
      const int rc = pcre2_match(re, reinterpret_cast<PCRE2_SPTR>(b.data()), b.size(), 0, 0, m, nullptr);
      if (rc > 1) {
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(m);
        if (ov[2] != PCRE2_UNSET) b = b.substr(ov[2], ov[3] - ov[2]);
      }
      pcre2_match_data_free(m);
      return;
    }
    case TransformKind::header_lowercase: {
      bool value = false;
      for (char& c : b) {
        if (!value) {
          if (c == ':') value = true;
          else if (c >= 'A' && c <= 'Z') c = char(c + 32);
        } else if (c == '\n') {
          value = false;
        }
      }
      return;
    }
    case TransformKind::strip_pseudo_headers: {
      std::string o;
      o.reserve(b.size());
      for (size_t i = 0; i < b.size();) {
        size_t e = b.find('\n', i);
        e = e == std::string::npos ? b.size() : e + 1;
        if (b[i] != ':') o.append(b, i, e - i);
        i = e;
      }
      b = std::move(o);
      return;
    }
    case TransformKind::subslice: {
      // subslice.rs subslice_apply.
      const int64_t len = int64_t(b.size()), off = t.s_offset;
      if ((off < 0 ? -off : off) > len && !t.truncate) {
        b.clear();
        return;
      }
      const int64_t start = off >= 0 ? std::min(off, len) : len + std::max(off, -len);
      int64_t end = len;
      if (t.s_nbytes < 0) {
        end = len + t.s_nbytes;
        if (end < 0) {
          if (!t.truncate) {
            b.clear();
            return;
          }
          end = 0;
        }
      } else if (t.s_nbytes > 0) {
        end = start + t.s_nbytes;
        if (end > len && !t.truncate) {
          b.clear();
          return;
        }
        end = std::min(end, len);
      }
      const int64_t lo = std::min(start, end), hi = std::max(start, end);
      b = b.substr(size_t(lo), size_t(hi - lo));
      return;
    }
    case TransformKind::gunzip:
    case TransformKind::zlib_deflate: {
      // decompress.rs: one read of at most max_size bytes from a gzip (gunzip) or zlib stream.
      z_stream z{};
      if (inflateInit2(&z, t.kind == TransformKind::gunzip ? 16 + MAX_WBITS : MAX_WBITS) != Z_OK) {
        b.clear();
        return;
      }
      std::string out(t.max_size, '\0');
      z.next_in = reinterpret_cast<Bytef*>(b.data());
      z.avail_in = uInt(b.size());
      z.next_out = reinterpret_cast<Bytef*>(out.data());
      z.avail_out = uInt(out.size());
      int rc = Z_OK;
      while (rc == Z_OK && z.avail_out > 0 && z.avail_in > 0) rc = inflate(&z, Z_NO_FLUSH);
      const size_t got = out.size() - z.avail_out;
      inflateEnd(&z);
      // flate2's read fails on corrupt data (its one inflate call runs into it): an empty buffer.
      out.resize(rc == Z_OK || rc == Z_STREAM_END || rc == Z_BUF_ERROR ? got : 0);
      b = std::move(out);
      return;
    }
    case TransformKind::from_base64: {
      size_t from = 0, n = b.size();
      if (t.offset) {
        if (t.offset >= b.size()) return;
        from = t.offset;
        n -= from;
      }
      if (t.nbytes) {
        if (t.nbytes >= n) return;
        n = t.nbytes;
      }
      std::string out;
      const size_t got = base64_decode_mode(reinterpret_cast<const uint8_t*>(b.data()) + from, n, t.mode, out);
      if (got) {
        out.resize(got);
        b = std::move(out);
      }
      return;
    }
  }
}

// The process's table of (buffer, transforms) pairs. Entries are written under the mutex, once,
// before their id is handed out; readers (the inspection threads) only read entries below the
// published count, which never move.
namespace {
struct DerivedTable {
  std::mutex mu;
  std::array<DerivedBuf, kMaxDerivedBufs> bufs;
  std::atomic<int> n{0};
};
DerivedTable& derived_table() {
  static DerivedTable t;
  return t;
}

uint8_t find_or_add(uint8_t base, const std::vector<Transform>& chain, uint8_t copy) {
  DerivedTable& tb = derived_table();
  std::lock_guard<std::mutex> lock(tb.mu);
  const int n = tb.n.load(std::memory_order_relaxed);
  for (int i = 0; i < n; ++i) {
    const DerivedBuf& d = tb.bufs[size_t(i)];
    if (d.base == base && d.copy == copy && d.chain == chain) return uint8_t(kBufDerived + i);
  }
  if (n >= kMaxDerivedBufs) return kBufPayload;
  DerivedBuf& d = tb.bufs[size_t(n)];
  d.base = base;
  d.chain = chain;
  d.copy = copy;
  d.name = sig_buf_name(base);
  if (copy) d.name += "#" + std::to_string(copy);
  for (const Transform& t : chain) d.name += std::string("|") + transform_name(t.kind);
  tb.n.store(n + 1, std::memory_order_release);
  return uint8_t(kBufDerived + n);
}
}  // namespace

const DerivedBuf* derived_buf(uint8_t b) {
  if (b < kBufDerived || b >= kBufCount) return nullptr;
  DerivedTable& tb = derived_table();
  const int i = b - kBufDerived;
  return i < tb.n.load(std::memory_order_acquire) ? &tb.bufs[size_t(i)] : nullptr;
}

uint8_t base_buf(uint8_t b) {
  const DerivedBuf* d = derived_buf(b);
  return d ? d->base : b;
}

uint8_t derive_buf(uint8_t b, const std::vector<Transform>& more) {
  const DerivedBuf* d = derived_buf(b);
  std::vector<Transform> chain = d ? d->chain : std::vector<Transform>{};
  chain.insert(chain.end(), more.begin(), more.end());
  return find_or_add(d ? d->base : b, chain, d ? d->copy : 0);
}

uint8_t instance_copy(uint8_t b, uint8_t n) { return find_or_add(b, {}, n); }

uint8_t rebase_buf(uint8_t b, uint8_t from, uint8_t to) {
  const DerivedBuf* d = derived_buf(b);
  if (!d) return b == from ? to : b;
  return d->base == from ? find_or_add(to, d->chain, d->copy) : b;
}

void apply_transforms(uint8_t b, std::string& buf) {
  if (const DerivedBuf* d = derived_buf(b))
    for (const Transform& t : d->chain) apply_transform(t, buf);
}

}  // namespace gaspp
