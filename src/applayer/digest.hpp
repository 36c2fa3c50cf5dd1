// applayer/digest.hpp — the hashes the parsers give as lowercase hex (JA3's and a mail's MD5s,
// a file's MD5/SHA-1/SHA-256), through OpenSSL's EVP interface.
#pragma once
#include <openssl/evp.h>

#include <memory>
#include <string>
#include <string_view>

namespace gaspp {

// A running digest; freed with its owner.
struct DigestFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
using DigestCtx = std::unique_ptr<EVP_MD_CTX, DigestFree>;

// n bytes as lowercase hex.
inline std::string hex_of(const unsigned char* p, unsigned n) {
  static const char kHex[] = "0123456789abcdef";
  std::string s;
  s.reserve(n * 2);
  for (unsigned i = 0; i < n; ++i) {
    s += kHex[p[i] >> 4];
    s += kHex[p[i] & 15];
  }
  return s;
}

// The digest `md` of s in hex; "" if OpenSSL fails.
inline std::string digest_hex(std::string_view s, const EVP_MD* md) {
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  return EVP_Digest(s.data(), s.size(), d, &n, md, nullptr) == 1 ? hex_of(d, n) : std::string();
}

// The MD5 of s in hex; "" if OpenSSL fails.
inline std::string md5_hex(std::string_view s) { return digest_hex(s, EVP_md5()); }

// A file's running MD5, SHA-1 and SHA-256 (bit k of `bits`: the k-th of them; FileHash in
// mime.hpp), started, fed and finished into hex ("" for those not asked for or failed).
struct FileDigests {
  DigestCtx h[3];
  void start(uint8_t bits) {
    const EVP_MD* mds[3] = {EVP_md5(), EVP_sha1(), EVP_sha256()};
    for (int k = 0; k < 3; ++k) {
      h[k].reset();
      if (!(bits & (1 << k))) continue;
      h[k].reset(EVP_MD_CTX_new());
      if (!h[k] || EVP_DigestInit_ex(h[k].get(), mds[k], nullptr) != 1) h[k].reset();
    }
  }
  void update(const void* p, size_t n) {
    for (auto& c : h)
      if (c) EVP_DigestUpdate(c.get(), p, n);
  }
  void finish(std::string& md5, std::string& sha1, std::string& sha256) {
    std::string* out[3] = {&md5, &sha1, &sha256};
    for (int k = 0; k < 3; ++k) {
      if (!h[k]) continue;
      unsigned char md[EVP_MAX_MD_SIZE];
      unsigned n = 0;
      if (EVP_DigestFinal_ex(h[k].get(), md, &n) == 1) *out[k] = hex_of(md, n);
      h[k].reset();
    }
  }
};

}  // namespace gaspp
