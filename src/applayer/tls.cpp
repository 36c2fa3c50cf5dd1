// applayer/tls.cpp — see tls.hpp.
#include "applayer/tls.hpp"

#include "applayer/digest.hpp"

#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <memory>

namespace gaspp {

const char* tls_version_name(uint16_t v) {
  switch (v) {
    case 0x0300: return "SSLv3";
    case 0x0301: return "TLSv1";
    case 0x0302: return "TLS 1.1";
    case 0x0303: return "TLS 1.2";
    case 0x0304: return "TLS 1.3";
    case 0x7f01: return "TLS 1.3 draft-<16";
    case 0xfb14: return "TLS 1.3 draft-20-fb";
    case 0xfb15: return "TLS 1.3 draft-21-fb";
    case 0xfb16: return "TLS 1.3 draft-22-fb";
    case 0xfb17: return "TLS 1.3 draft-23-fb";
    case 0xfb1a: return "TLS 1.3 draft-26-fb";
    default: break;
  }
  // The drafts 16 to 28 (0x7f10..0x7f1c), as Suricata names them.
  static const char* const kDrafts[] = {"TLS 1.3 draft-16", "TLS 1.3 draft-17", "TLS 1.3 draft-18", "TLS 1.3 draft-19",
                                        "TLS 1.3 draft-20", "TLS 1.3 draft-21", "TLS 1.3 draft-22", "TLS 1.3 draft-23",
                                        "TLS 1.3 draft-24", "TLS 1.3 draft-25", "TLS 1.3 draft-26", "TLS 1.3 draft-27",
                                        "TLS 1.3 draft-28"};
  if (v >= 0x7f10 && v <= 0x7f1c) return kDrafts[v - 0x7f10];
  return "UNDETERMINED";
}

bool tls_version_known(uint16_t v) {
  if (v >= 0x0300 && v <= 0x0304) return true;
  if ((v >= 0x7f10 && v <= 0x7f1c) || v == 0x7f01) return true;  // TLS 1.3 drafts 16-28, pre-16
  return v == 0xfb14 || v == 0xfb15 || v == 0xfb16 || v == 0xfb17 || v == 0xfb1a;  // Facebook's drafts
}

namespace {
// A bounds-checked reader over one handshake message.
struct Reader {
  const uint8_t* p;
  size_t n, at = 0;
  bool ok = true;
  uint32_t u(int bytes) {
    if (at + size_t(bytes) > n) {
      ok = false;
      return 0;
    }
    uint32_t v = 0;
    for (int k = 0; k < bytes; ++k) v = v << 8 | p[at++];
    return v;
  }
  void skip(size_t k) {
    if (at + k > n) ok = false;
    else at += k;
  }
};
}  // namespace

namespace {
// A name as Suricata's X.509 parser prints it: the RDNs in encoding order, "SN=value" joined with
// ", " (several in one RDN with " + "), values as they are (UTF-8), no escaping.
// The subjectAltName entries of a certificate as Suricata's x509 module writes them
// (SCGeneralName's Display): DNS names, URIs and e-mail addresses as text, IP addresses as the
// byte list Rust's Debug prints ("[192, 0, 2, 1]"); other kinds are left out.
std::vector<std::string> subject_alt_names(X509* x) {
  std::vector<std::string> out;
  GENERAL_NAMES* names = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(x, NID_subject_alt_name, nullptr, nullptr));
  if (!names) return out;
  for (int i = 0; i < sk_GENERAL_NAME_num(names) && out.size() < kTlsMaxSans; ++i) {
    const GENERAL_NAME* g = sk_GENERAL_NAME_value(names, i);
    if (g->type == GEN_DNS || g->type == GEN_URI || g->type == GEN_EMAIL) {
      const ASN1_IA5STRING* v = g->d.ia5;
      out.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(v)), size_t(ASN1_STRING_length(v)));
    } else if (g->type == GEN_IPADD) {
      const ASN1_OCTET_STRING* v = g->d.ip;
      const unsigned char* b = ASN1_STRING_get0_data(v);
      std::string t = "[";
      for (int k = 0; k < ASN1_STRING_length(v); ++k) t += (k ? ", " : "") + std::to_string(unsigned(b[k]));
      out.push_back(t + "]");
    }
  }
  GENERAL_NAMES_free(names);
  return out;
}

std::string name_text(const X509_NAME* name) {
  std::unique_ptr<BIO, decltype(&BIO_free)> b(BIO_new(BIO_s_mem()), BIO_free);
  if (!b) return "";
  X509_NAME_print_ex(b.get(), name, 0, XN_FLAG_SEP_CPLUS_SPC | XN_FLAG_FN_SN | ASN1_STRFLGS_UTF8_CONVERT);
  char* data = nullptr;
  const long n = BIO_get_mem_data(b.get(), &data);
  return n > 0 ? std::string(data, size_t(n)) : std::string();
}

std::string hex_colons(const uint8_t* p, size_t n, bool upper) {
  const char* digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    if (i) s += ':';
    s += digits[p[i] >> 4];
    s += digits[p[i] & 15];
  }
  return s;
}


int64_t epoch_of(const ASN1_TIME* t) {
  struct tm tm {};
  if (!t || ASN1_TIME_to_tm(t, &tm) != 1) return 0;
  return int64_t(timegm(&tm));
}
}  // namespace

// A side's Certificate message (without its header): the chain, the first certificate decoded.
int TlsConn::parse_certificate(int dir, const uint8_t* p, size_t n) {
  TlsCert& c = tx_.cert[dir];
  Reader r{p, n};
  const size_t total = r.u(3);
  if (!r.ok || total > n - 3) return -1;
  const size_t end = 3 + total;
  while (r.ok && r.at + 3 <= end) {
    const size_t len = r.u(3);
    if (r.at + len > end) return -1;
    c.chain.emplace_back(reinterpret_cast<const char*>(p + r.at), len);
    r.at += len;
  }
  c.present = true;
  if (!c.chain.empty()) {
    const std::string& der = c.chain.front();
    const unsigned char* q = reinterpret_cast<const unsigned char*>(der.data());
    std::unique_ptr<X509, decltype(&X509_free)> x(d2i_X509(nullptr, &q, long(der.size())), X509_free);
    if (x) {
      c.decoded = true;
      c.subject = name_text(X509_get_subject_name(x.get()));
      c.issuer = name_text(X509_get_issuer_name(x.get()));
      // The serial's content octets as encoded (Suricata's raw_serial), not the integer's value.
      const ASN1_INTEGER* sn = X509_get0_serialNumber(x.get());
      unsigned char* enc = nullptr;
      const int el = sn ? i2d_ASN1_INTEGER(sn, &enc) : -1;
      if (el > 2) {
        // Past the tag and the length (short or long form): the content octets.
        size_t h = 2;
        if (enc[1] & 0x80) h += enc[1] & 0x7f;
        if (size_t(el) > h) c.serial = hex_colons(enc + h, size_t(el) - h, true);
      }
      OPENSSL_free(enc);
      c.not_before = epoch_of(X509_get0_notBefore(x.get()));
      c.not_after = epoch_of(X509_get0_notAfter(x.get()));
      c.sans = subject_alt_names(x.get());
    } else if (undecoded_) {
      ++*undecoded_;
    }
    uint8_t sha[SHA_DIGEST_LENGTH];
    SHA1(reinterpret_cast<const unsigned char*>(der.data()), der.size(), sha);
    c.fingerprint = hex_colons(sha, sizeof sha, false);
  }
  changed_ = true;
  return 1;
}

int TlsConn::finish(int dir, int state) {
  state_[dir] = state;
  update_done();
  return state;
}

// Suricata's handshake end (app-layer-ssl.c, after each segment): the server's certificate
// read when it asked for no client certificate, the client's when it did (Suricata waits for its
// subject and issuer; an undecodable certificate ends it here too, and is logged without them);
// or, without one, the side whose certificate is awaited has ended its handshake (the server's:
// its ServerHelloDone, its TLS 1.3 hello, a record that is not a handshake; the client's: its
// next flight after an empty Certificate, or its ChangeCipherSpec).
void TlsConn::update_done() {
  if (tx_.handshake_done || !tx_.server_hello) return;
  const int awaited = tx_.cert_requested ? 0 : 1;
  if (!tx_.cert[awaited].chain.empty() || state_[awaited] != 0) {
    tx_.handshake_done = true;
    changed_ = true;
  }
}

namespace {
// Suricata's hello version as its state keeps it: the TLS 1.3 drafts before 16 (0x7f01..0x7f0f)
// and a hello's own 0x0304 are its "pre-draft-16" (0x7f01 here, a version it knows).
uint16_t hello_version(uint16_t v) { return (v >= 0x7f01 && v < 0x7f10) || v == 0x0304 ? 0x7f01 : v; }
// The body length in a gathered 5-byte record header.
size_t record_len(const std::string& h) { return size_t(uint8_t(h[3])) << 8 | uint8_t(h[4]); }
}  // namespace

// One hello (handshake message type 1 or 2, without its 4-byte header): 1 when read, -1 malformed.
int TlsConn::parse_hello(int dir, const uint8_t* p, size_t n) {
  Reader r{p, n};
  const uint16_t version = uint16_t(r.u(2));
  if (r.at + 32 <= n) tx_.random[dir].assign(reinterpret_cast<const char*>(p + r.at), 32);
  r.skip(32);                 // random
  // A ServerHello of the TLS 1.3 drafts before 22 (its version field 0x7fNN or 0x0304) has no
  // session id and no compression method (Suricata's SSL_AL_FLAG_LOG_WITHOUT_CERT case).
  const bool draft = dir == 1 && (version == 0x0304 || (version >> 8) == 0x7f);
  if (!draft) r.skip(r.u(1));  // session id
  // JA3 (client) / JA3S (server): version, ciphers, extensions[, groups, point formats], decimal,
  // '-' within a field, ',' between; GREASE values (RFC 8701) left out.
  const auto grease = [](uint32_t v) { return (v & 0x0f0f) == 0x0a0a && (v >> 8) == (v & 0xff); };
  const auto add = [](std::string& f, uint32_t v) { f += (f.empty() ? "" : "-") + std::to_string(v); };
  std::string ciphers, exts, groups, formats;
  if (dir == 0) {
    const size_t cl = r.u(2);
    const size_t end = r.at + cl;
    while (r.ok && r.at + 2 <= end) {
      const uint32_t c = r.u(2);
      if (!grease(c)) add(ciphers, c);
    }
    r.at = end;
    r.skip(r.u(1));           // compression methods
  } else {
    add(ciphers, r.u(2));     // cipher suite
    if (!draft) r.skip(1);    // compression method
  }
  if (!r.ok || r.at > n) return -1;
  uint16_t supported = 0;
  if (r.at + 2 <= n) {
    const size_t end = std::min(n, r.at + 2 + r.u(2));
    while (r.ok && r.at + 4 <= end) {
      const uint32_t type = r.u(2), len = r.u(2);
      const size_t next = r.at + len;
      if (next > end) return -1;
      if (type == 0 && len > 0) {
        // server_name, as Suricata's TLSDecodeHSHelloExtensionSni reads it: the list's first
        // entry, which must be a host_name of 1 to 255 bytes; a bad type or length is an event
        // and ends the extensions (those after it are not read, nor in JA3); so does one too short
        // for its header, with handshake_invalid_length (the hello is kept). A second server_name
        // is an event, and not read.
        if (len < 3) {
          event(kTlsEvHandshakeInvalidLength);
          break;
        }
        const uint8_t kind = p[r.at + 2];
        if (kind != 0) {
          event(kTlsEvInvalidSniType);
          break;
        }
        if (len < 5) {
          event(kTlsEvHandshakeInvalidLength);
          break;
        }
        const size_t nlen = size_t(p[r.at + 3]) << 8 | p[r.at + 4];
        if (r.at + 5 + nlen > next || nlen > 255 || nlen == 0) {
          event(kTlsEvInvalidSniLength);
          break;
        }
        if (sni_seen_[dir]) event(kTlsEvMultipleSniExtensions);
        else if (dir == 0) tx_.sni.assign(reinterpret_cast<const char*>(p + r.at + 5), nlen);
        sni_seen_[dir] = true;
      }
      if (!grease(type)) add(exts, type);
      if (dir == 0 && type == 10) {
        Reader g{p, next, r.at};  // supported_groups
        const size_t gend = std::min(next, g.at + 2 + g.u(2));
        while (g.ok && g.at + 2 <= gend) {
          const uint32_t v = g.u(2);
          if (!grease(v)) add(groups, v);
        }
      } else if (dir == 0 && type == 11) {
        Reader f{p, next, r.at};  // ec_point_formats
        const size_t fend = std::min(next, f.at + 1 + f.u(1));
        while (f.ok && f.at + 1 <= fend) add(formats, f.u(1));
      } else if (dir == 0 && type == 43 && !tx_.client_offered) {
        Reader v{p, next, r.at};  // supported_versions: a 1-byte length, then the versions
        const size_t vend = std::min(next, v.at + 1 + v.u(1));
        while (v.ok && v.at + 2 <= vend) {
          const uint16_t ver = uint16_t(v.u(2));
          if (tls_version_known(ver)) {
            tx_.client_offered = ver;
            break;
          }
        }
      } else if (type == 16) {
        // application_layer_protocol_negotiation: a 2-byte list length, then 1-byte-length names
        // (the client's offers; the server's one choice).
        Reader a{p, next, r.at};
        const size_t aend = std::min(next, a.at + 2 + a.u(2));
        while (a.ok && a.at + 1 <= aend && tx_.alpn[dir].size() < kTlsMaxAlpn) {
          const size_t l = a.u(1);
          if (a.at + l > aend) break;
          tx_.alpn[dir].emplace_back(reinterpret_cast<const char*>(p + a.at), l);
          a.at += l;
        }
      } else if (dir == 1 && type == 43 && len == 2) {
        supported = uint16_t(p[r.at] << 8 | p[r.at + 1]);  // supported_versions: the one chosen
      }
      r.at = next;
    }
  }
  std::string& ja = dir == 0 ? tx_.ja3_string : tx_.ja3s_string;
  ja = std::to_string(version) + "," + ciphers + "," + exts + (dir == 0 ? "," + groups + "," + formats : "");
  (dir == 0 ? tx_.ja3_hash : tx_.ja3s_hash) = md5_hex(ja);
  if (dir == 0) {
    tx_.client_hello = true;
    tx_.client_version = version;
  } else {
    tx_.server_hello = true;
    // Without supported_versions, the version field; the drafts before 16 (0x7f01..0x7f0f, or
    // 0x0304 before supported_versions existed) are Suricata's "draft-<16".
    tx_.server_version = supported ? supported : hello_version(version);
  }
  changed_ = true;
  return 1;
}

uint32_t tls_event_bit(const std::string& name) {
  static const std::pair<const char*, uint32_t> kEvents[] = {
      {"invalid_record_type", kTlsEvInvalidRecordType},       {"invalid_record_version", kTlsEvInvalidRecordVersion},
      {"invalid_record_length", kTlsEvInvalidRecordLength},   {"invalid_ssl_record", kTlsEvInvalidSslRecord},
      {"invalid_alert_message", kTlsEvInvalidAlert},          {"invalid_heartbeat_message", kTlsEvInvalidHeartbeat},
      {"overflow_heartbeat_message", kTlsEvOverflowHeartbeat}, {"dataleak_heartbeat_mismatch", kTlsEvDataleakHeartbeat},
      {"handshake_invalid_length", kTlsEvHandshakeInvalidLength}, {"invalid_handshake_message", kTlsEvInvalidHandshake},
      {"invalid_sni_type", kTlsEvInvalidSniType}, {"invalid_sni_length", kTlsEvInvalidSniLength},
      {"multiple_sni_extensions", kTlsEvMultipleSniExtensions}};
  for (const auto& [n, b] : kEvents)
    if (name == n) return b;
  return 0;
}

void TlsConn::event(uint32_t bit) {
  if ((tx_.events & bit) == bit) return;
  tx_.events |= bit;
  changed_ = true;
}

bool TlsConn::scan_records(int dir, const uint8_t* p, size_t n) {
  std::string& h = scan_[dir];
  size_t i = 0;
  while (i < n) {
    if (skip_[dir]) {
      const size_t k = std::min(n - i, skip_[dir]);
      i += k;
      skip_[dir] -= k;
      continue;
    }
    if (hs_body_[dir]) {
      if (!walk_handshake(dir, p, n, i)) return false;
      continue;
    }
    if (h.size() < 5) {
      const size_t k = std::min(n - i, 5 - h.size());
      h.append(reinterpret_cast<const char*>(p + i), k);
      i += k;
      if (h.size() < 5) return true;
      // The header (SSLv3ParseRecord, then SSLv3Decode's checks, in its order).
      const uint16_t prev = ver_[dir];
      if (!(hello_[dir] && ver_[dir] != 0)) ver_[dir] = uint16_t(uint8_t(h[1]) << 8 | uint8_t(h[2]));
      const uint8_t type = uint8_t(h[0]);
      const size_t len = record_len(h);
      if (type < 20 || type > 24) {
        event(kTlsEvInvalidRecordType);
        if (prev != 0x0301 && prev != 0x0302) return false;
        // TLS 1.0 and 1.1 tolerate it: the rest of the data at hand is dropped, the record
        // state reset, the last good version kept.
        h.clear();
        ver_[dir] = prev;
        return true;
      }
      if (len == 0) {
        event(kTlsEvInvalidRecordLength);
        return false;
      }
      if (!tls_version_known(ver_[dir])) {
        event(kTlsEvInvalidRecordVersion);
        return false;
      }
      if (len > (1u << 14) + 1024) {
        event(kTlsEvInvalidRecordLength);
        return false;
      }
      if (type == 22) {
        // Handshake: encrypted after ChangeCipherSpec, but for TLS 1.3's middlebox one (skipped
        // whole); else its messages are walked.
        h.clear();
        if (ccs() && !(hello_[0] && ver_[0] > 0x0303 && !hello_[1])) {
          skip_[dir] = len;
          continue;
        }
        if (len < 4) {
          event(kTlsEvInvalidSslRecord);
          return false;
        }
        hs_body_[dir] = len;
        continue;
      }
    }
    const size_t len = record_len(h);
    const size_t want = 5 + std::min(len, kScanHead - 5);
    if (h.size() < want) {
      const size_t k = std::min(n - i, want - h.size());
      h.append(reinterpret_cast<const char*>(p + i), k);
      i += k;
      if (h.size() < want) return true;
    }
    if (!record_done(dir)) return false;
    skip_[dir] = 5 + len - h.size();
    h.clear();
  }
  return true;
}

// A record's checks once its header and first bytes are in (scan_[dir]).
bool TlsConn::record_done(int dir) {
  const std::string& h = scan_[dir];
  const uint8_t type = uint8_t(h[0]);
  const size_t len = record_len(h);
  const auto b = [&](size_t k) { return uint8_t(h[5 + k]); };
  switch (type) {
    case 20:  // ChangeCipherSpec
      ccs_[dir] = true;
      return true;
    case 21:  // alert (SSLv3ParseAlertProtocol)
      if (len < 2) {
        event(kTlsEvInvalidAlert);
        return false;
      }
      return true;
    case 24: {  // heartbeat (SSLv3ParseHeartbeatProtocol, RFC 6520)
      if (len < 3) return true;
      const uint8_t hb_type = b(0);
      if (!ccs() && hb_type != 1 && hb_type != 2) {
        event(kTlsEvInvalidHeartbeat);
        return false;
      }
      if (!hb_inflight_) {
        hb_inflight_ = true;
        hb_server_ = dir == 1;
        if (ccs()) {
          hb_len_ = uint32_t(len);  // encrypted: its length, to compare the response's with
          return true;
        }
        const size_t payload = size_t(b(1)) << 8 | b(2);
        if (payload + 3 > len) {
          event(kTlsEvOverflowHeartbeat);
          return false;
        }
        if (len - payload - 3 < 16) {
          event(kTlsEvInvalidHeartbeat);  // padding under 16 bytes
          return false;
        }
        return true;
      }
      if ((dir == 1) == hb_server_) {
        event(kTlsEvInvalidHeartbeat);  // a second one in flight from the same side
        return false;
      }
      hb_inflight_ = false;  // the answer
      if (ccs() && hb_len_ > 0 && hb_len_ < len) {
        event(kTlsEvDataleakHeartbeat);
        hb_len_ = 0;
        return false;
      }
      hb_len_ = 0;
      return true;
    }
    default:  // application data
      return true;
  }
}

// The messages of a handshake record (SSLv3ParseHandshakeProtocol): a message header must fit in
// what is left of the record; a message may run on into the next records; one of a type Suricata
// does not know is skipped to its record's end. A hello's first two bytes are its version.
bool TlsConn::walk_handshake(int dir, const uint8_t* p, size_t n, size_t& i) {
  size_t& body = hs_body_[dir];
  std::string& hdr = msg_hdr_[dir];
  while (body > 0 && i < n) {
    if (msg_skip_[dir] || msg_left_[dir]) {
      size_t& left = msg_skip_[dir] ? msg_skip_[dir] : msg_left_[dir];
      size_t k = std::min({left, body, n - i});
      if (want_ver_[dir] && !msg_skip_[dir]) {
        const size_t v = std::min(k, 2 - ver_buf_[dir].size());
        ver_buf_[dir].append(reinterpret_cast<const char*>(p + i), v);
        if (ver_buf_[dir].size() == 2) {
          want_ver_[dir] = false;
          hello_[dir] = true;
          ver_[dir] = hello_version(uint16_t(uint8_t(ver_buf_[dir][0]) << 8 | uint8_t(ver_buf_[dir][1])));
        }
      }
      i += k;
      body -= k;
      left -= k;
      if (body == 0) msg_skip_[dir] = 0;  // an unknown message ends with its record
      continue;
    }
    if (hdr.empty() && body < 4) {
      event(kTlsEvInvalidSslRecord | kTlsEvInvalidHandshake);
      return false;
    }
    const size_t k = std::min(4 - hdr.size(), n - i);
    hdr.append(reinterpret_cast<const char*>(p + i), k);
    i += k;
    body -= k;
    if (hdr.size() < 4) return true;
    const uint8_t type = uint8_t(hdr[0]);
    const size_t mlen = size_t(uint8_t(hdr[1])) << 16 | size_t(uint8_t(hdr[2])) << 8 | uint8_t(hdr[3]);
    hdr.clear();
    const bool known = type <= 2 || type == 4 || (type >= 11 && type <= 16) || (type >= 20 && type <= 22);
    if (!known) {
      if (!ccs_[dir]) event(kTlsEvInvalidHandshake);
      msg_skip_[dir] = std::min(body, mlen);
      continue;
    }
    if (type == (dir == 0 ? 1 : 2) && mlen >= 2) {
      want_ver_[dir] = true;
      ver_buf_[dir].clear();
    }
    msg_left_[dir] = mlen;
  }
  return true;
}

int TlsConn::feed(int dir, const uint8_t* p, size_t n, bool gap) {
  if (stopped_[dir]) return -1;
  if (gap) {
    // Data lost: the direction stops; counted malformed only while its handshake was read.
    stopped_[dir] = true;
    // A client whose hello was read has sent what the handshake needs of it (its certificate
    // comes only when asked for).
    if (state_[dir] == 0 && dir == 0 && tx_.client_hello) return finish(0, 1);
    return state_[dir] == 0 ? finish(dir, -1) : 1;
  }
  if (dir == 0 && client_first_ < 0 && n) client_first_ = p[0];
  const bool v2 = dir == 0 && client_first_ >= 0 && (client_first_ & 0x80) != 0;
  if (!v2 && !scan_records(dir, p, n)) {
    // Suricata's parser error: the connection is parsed no further.
    for (int d = 0; d < 2; ++d) {
      stopped_[d] = true;
      if (state_[d] == 0) finish(d, -1);
    }
    return -1;
  }
  if (state_[dir] == 0) {
    handshake(dir, p, n);
    update_done();  // per segment, as Suricata decides it
    if (tx_.client_hello) hello_[0] = true, ver_[0] = hello_version(tx_.version(0));
    if (tx_.server_hello) hello_[1] = true, ver_[1] = hello_version(tx_.version(1));
  }
  // A malformed handshake, or an SSLv2 client's hello read (its records are not walked): stopped.
  if (state_[dir] < 0 || (v2 && state_[dir] != 0)) stopped_[dir] = true;
  return state_[dir];
}

int TlsConn::handshake(int dir, const uint8_t* p, size_t n) {
  std::string& raw = tx_.raw[dir];
  if (raw.size() < kTlsMaxRaw) {
    const size_t k = std::min(n, size_t(kTlsMaxRaw) - raw.size());
    raw.append(reinterpret_cast<const char*>(p), k);
    if (k < n && raw_cut_) ++*raw_cut_;
  }
  std::string& rec = rec_[dir];
  std::string& hs = buf_[dir];
  // Past its hello a side may send its certificate chain.
  const bool past_hello = dir == 1 ? tx_.server_hello : tx_.client_hello;
  const size_t max_msg = past_hello ? kTlsMaxChain : kTlsMaxHello;
  size_t i = 0;
  // An SSLv2-format ClientHello (RFC 6101 appendix E.2, still sent by some clients to offer TLS):
  // a 2-byte header with the high bit set, then CLIENT-HELLO (1), the version, the cipher specs'
  // length, the session id's and the challenge's. The client's direction ends there (Suricata
  // reads the version from it; no SNI or JA3 in this format).
  if (dir == 0 && client_first_ >= 0 && (client_first_ & 0x80) != 0) {
    constexpr size_t kV2Head = 11;  // the 2-byte header and the hello's 9 fixed bytes
    rec.append(reinterpret_cast<const char*>(p), std::min(n, kV2Head - rec.size()));
    if (rec.size() < kV2Head) return 0;
    const auto b = [&](size_t at) { return uint8_t(rec[at]); };
    if (b(2) != 1) return finish(0, -1);
    tx_.client_hello = true;
    tx_.client_version = uint16_t(b(3) << 8 | b(4));
    changed_ = true;
    return finish(0, 1);
  }
  while (i < n) {
    // Record header (5 bytes), then the body.
    if (rec.size() < 5) {
      const size_t k = std::min(n - i, 5 - rec.size());
      rec.append(reinterpret_cast<const char*>(p + i), k);
      i += k;
      if (rec.size() < 5) return 0;
      const uint8_t type = uint8_t(rec[0]);
      // Not a handshake: this direction's handshake is over (a record type Suricata refuses was
      // an event of the record walk, which stopped the connection or skips it).
      if (type != 22) return finish(dir, 1);
    }
    const size_t len = record_len(rec);
    const size_t have = rec.size() - 5;
    const size_t k = std::min(n - i, len - have);
    hs.append(reinterpret_cast<const char*>(p + i), k);
    rec.append(reinterpret_cast<const char*>(p + i), k);
    i += k;
    if (rec.size() - 5 < len) return 0;
    rec.clear();
    if (hs.size() > max_msg + 4) return finish(dir, -1);
    // Handshake messages: 1-byte type, 3-byte length.
    while (hs.size() >= 4) {
      const uint8_t mt = uint8_t(hs[0]);
      const size_t ml = size_t(uint8_t(hs[1])) << 16 | size_t(uint8_t(hs[2])) << 8 | uint8_t(hs[3]);
      if (ml > max_msg) return finish(dir, -1);
      if (hs.size() < 4 + ml) break;
      const uint8_t* m = reinterpret_cast<const uint8_t*>(hs.data()) + 4;
      if (dir == 0 && !tx_.client_hello) {
        // The client's first message: its hello (anything else ends the direction).
        if (mt != 1) return finish(0, 1);
        if (parse_hello(0, m, ml) < 0) {
          event(kTlsEvHandshakeInvalidLength);  // Suricata's hello decoders: the event, no parser error
          return finish(0, -1);
        }
      } else if (dir == 0) {
        // The client's second flight: its certificate when the server asked for one (TLS 1.2
        // and earlier), then ClientKeyExchange; the direction ends at anything but a certificate
        // or a second hello (after a HelloRetryRequest; not read). TLS 1.3 sends the rest
        // encrypted: its ChangeCipherSpec or application data record ends the direction.
        if (mt == 11) return finish(0, parse_certificate(0, m, ml));
        if (mt != 1) return finish(0, 1);
      } else if (mt == 2 && !tx_.server_hello) {
        if (parse_hello(1, m, ml) < 0) {
          event(kTlsEvHandshakeInvalidLength);  // Suricata's hello decoders: the event, no parser error
          return finish(1, -1);
        }
        // TLS 1.3 encrypts the rest of the server's handshake.
        if (tx_.server_version >= 0x0304) return finish(1, 1);
      } else if (mt == 11 && tx_.server_hello && !tx_.cert[1].present) {
        // The server's chain; its CertificateRequest may follow before ServerHelloDone.
        if (parse_certificate(1, m, ml) < 0) return finish(1, -1);
      } else if (mt == 13 && tx_.server_hello) {
        tx_.cert_requested = true;
        changed_ = true;
      } else if (mt == 14) {
        return finish(1, 1);  // ServerHelloDone
      }
      hs.erase(0, 4 + ml);
    }
  }
  return 0;
}

}  // namespace gaspp
