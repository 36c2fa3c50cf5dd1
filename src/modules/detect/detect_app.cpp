// modules/detect/detect_app.cpp — application-layer signatures: matched per HTTP transaction or
// TLS handshake on the host (see detect.hpp and applayer/app_layer.hpp).
//
// A signature with HTTP buffers is split by buffer: the options on each buffer, in rule order,
// form a payload list of their own (relative options refer within it), evaluated by the same
// detect_inspect as packets and stream pieces, on the host tables (PCRE2 for pcre). The signature
// matches a transaction when its header matches the data's direction (the rule's addresses and
// ports against the sender and receiver of the data), its flow direction holds, urilen holds, and
// every list matches its buffer. It is inspected on each update of the transaction in the
// direction it reads (the response's when any of its buffers is a response buffer), over what the
// transaction holds so far (bodies grow), and alerts at most once per transaction and direction, attributed to
// the packet whose data completed the match, as Suricata does. A buffer the transaction does not
// have yet (the headers before they end) or at all (an absent header) fails the list.
//
// The candidates of an update: a Hyperscan literal database per buffer over the fast patterns
// (the marked content, else the longest non-negated one, of any of the signature's lists), and the
// signatures without one.
#include <arpa/inet.h>
#include <hs/hs.h>
#include <strings.h>

#include <algorithm>
#include <optional>
#include <cctype>
#include <cstring>
#include <stdexcept>

#include "modules/detect/body_window.hpp"
#include "modules/detect/detect.hpp"
#include "modules/detect/hs_cache.hpp"
#include "modules/detect/http2_cond.hpp"
#include "modules/detect/transform.hpp"
#include "core/app_eve.hpp"
#include "core/eve_event.hpp"

namespace gaspp {

namespace {

bool ieq_prefix(const std::string& s, const char* p) {
  const size_t n = std::strlen(p);
  if (s.size() < n) return false;
  for (size_t i = 0; i < n; ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != p[i]) return false;
  return true;
}

int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      const int a = hexval(s[i + 1]), b = hexval(s[i + 2]);
      if (a >= 0 && b >= 0) {
        o += char(a * 16 + b);
        i += 2;
        continue;
      }
    }
    o += s[i];
  }
  return o;
}

// RFC 3986 §5.2.4 remove_dot_segments.
std::string remove_dots(const std::string& in) {
  std::string s = in, out;
  while (!s.empty()) {
    if (s.rfind("../", 0) == 0) s.erase(0, 3);
    else if (s.rfind("./", 0) == 0) s.erase(0, 2);
    else if (s.rfind("/./", 0) == 0) s.replace(0, 3, "/");
    else if (s == "/.") s = "/";
    else if (s.rfind("/../", 0) == 0 || s == "/..") {
      s = s.size() == 3 ? "/" : s.substr(3);
      const size_t k = out.find_last_of('/');
      out.erase(k == std::string::npos ? 0 : k);
    } else if (s == "." || s == "..") s.clear();
    else {
      size_t k = s.find('/', s[0] == '/' ? 1 : 0);
      if (k == std::string::npos) k = s.size();
      out += s.substr(0, k);
      s.erase(0, k);
    }
  }
  return out;
}

// The normalized URI (Suricata's http.uri): an absolute URI loses its scheme and authority; the
// path is percent-decoded and its dot segments removed; the query is percent-decoded ('+' kept:
// Suricata's query-plusspace-decode is off by default; %u forms kept), as libhtp's normalized URI.
std::string normalize_uri(const std::string& raw) {
  std::string u = raw;
  if (ieq_prefix(u, "http://") || ieq_prefix(u, "https://")) {
    const size_t a = u.find("//") + 2;
    const size_t p = u.find_first_of("/?", a);
    u = p == std::string::npos ? "/" : u.substr(p);
  }
  const size_t q = u.find('?');
  std::string path = q == std::string::npos ? u : u.substr(0, q);
  const std::string query = q == std::string::npos ? "" : percent_decode(u.substr(q));
  path = remove_dots(percent_decode(path));
  return path + query;
}

// The instances a DNS message's multi-buffers have: the longest of its name lists (the response
// names: every question, record and name-valued record data). A signature with two different
// multi-buffers matches each at any of its own instances (AppSig::multi_any), as Suricata does.
// A record whose data is a name (CNAME, PTR, MX, NS); SOA's mname is one too.
bool rdata_is_name(uint16_t rrtype) { return rrtype == 5 || rrtype == 12 || rrtype == 15 || rrtype == 2; }
bool rdata_has_name(uint16_t rrtype) { return rdata_is_name(rrtype) || rrtype == 6; }

size_t dns_instances(const DnsMessage& m) {
  size_t names = m.queries.size();
  for (const auto* sec : {&m.answers, &m.authorities, &m.additionals})
    for (const DnsRecord& r : *sec) names += 1 + rdata_has_name(r.rrtype);
  return std::max<size_t>(1, names);
}

// A side's header fields one by one (http.request_header, http.response_header,
// http2.header_name): HTTP/2's header block as decoded, pseudo-fields first, as Suricata reads
// HTTP/2's; HTTP/1's fields as received.
const std::vector<HttpHeader>& header_fields(const HttpTx& t, int side) {
  if (t.http2 && !t.h2_fields[side].empty()) return t.h2_fields[side];
  return side ? t.resp_headers : t.req_headers;
}

// The instances a SIP message's multi-buffers have: the most fields of one of their names, or
// lines, time or media descriptions of its SDP body.
size_t sip_instances(const SipTx& t) {
  size_t n = 1;
  for (const char* name : {"From", "To", "Via", "User-Agent", "Content-Type", "Content-Length"})
    n = std::max(n, t.header_count(name));
  if (t.has_sdp)
    n = std::max({n, t.sdp.bandwidths.size(), t.sdp.times.size(), t.sdp.attributes.size(), t.sdp.media.size()});
  return n;
}

// Whether the update's transaction has got as far as buffer `key` (side * kBufCount + buffer): a
// buffer it does not have by then it will not have (absent), as Suricata runs a buffer's inspection
// once the transaction's progress reaches it. HTTP: a body once its message is done, the others
// once its headers are; a DNS, SIP or FTP message is whole when parsed; TLS's handshake and SSH's
// banners when read.
}  // namespace

// Suricata's detect_uint_match_at_index over frames_ts / frames_tc with the keyword's get_value;
// settings and size_update: some frame has it.
bool http2_cond_holds(const Http2Cond& c, const std::vector<HttpTx::H2Frame>& frames, bool complete) {
  const auto value = [&](const HttpTx::H2Frame& f, uint64_t& v) {
    switch (c.kind) {
      case Http2Cond::kFrameType: v = f.type; return true;
      case Http2Cond::kErrorCode: v = uint64_t(f.error); return f.error >= 0;
      case Http2Cond::kPriority: v = uint64_t(f.priority); return f.priority >= 0;
      case Http2Cond::kWindow: v = uint64_t(f.window); return f.window >= 0;
      default: v = uint64_t(f.size_update); return f.size_update >= 0;
    }
  };
  if (c.kind == Http2Cond::kSettings) {
    for (const HttpTx::H2Frame& f : frames)
      for (const auto& [id, val] : f.settings)
        if (id == c.settings_id && uint_cond_holds(c.c, val)) return true;
    return false;
  }
  if (c.kind == Http2Cond::kSizeUpdate) {
    uint64_t v;
    for (const HttpTx::H2Frame& f : frames)
      if (value(f, v) && uint_cond_holds(c.c, v)) return true;
    return false;
  }
  // The subslice, as Suricata computes it (an empty one when it falls outside).
  const int64_t n = int64_t(frames.size());
  const int64_t start = c.start >= 0 ? c.start : n + c.start;
  const int64_t end = c.end > 0 ? c.end : n + c.end;
  const size_t lo = end > n || start >= end || start < 0 ? 0 : size_t(start);
  const size_t hi = end > n || start >= end || start < 0 ? 0 : size_t(end);
  uint64_t v;
  switch (c.index) {
    case Http2Cond::kAt: {
      const int64_t len = int64_t(hi - lo);
      const int64_t i = c.at < 0 ? len + c.at : c.at;
      if (i < 0 || i >= len) return c.oob_or && complete;
      return value(frames[lo + size_t(i)], v) && uint_cond_holds(c.c, v);
    }
    case Http2Cond::kNb:
    case Http2Cond::kCount: {
      // Before the side ends only "more than" can be decided.
      if (!complete && c.n.mode != kUintGt && c.n.mode != kUintGe) return false;
      uint64_t nb = 0;
      for (size_t i = lo; i < hi; ++i)
        nb += value(frames[i], v) && (c.index == Http2Cond::kCount || uint_cond_holds(c.c, v));
      return uint_cond_holds(c.n, nb);
    }
    case Http2Cond::kAll:
    case Http2Cond::kAllOrAbsent: {
      if (!complete) return false;
      bool any = false;
      for (size_t i = lo; i < hi; ++i)
        if (value(frames[i], v)) {
          if (!uint_cond_holds(c.c, v)) return false;
          any = true;
        }
      return any || c.index == Http2Cond::kAllOrAbsent;
    }
    default: {  // any, or_absent
      bool any = false;
      for (size_t i = lo; i < hi; ++i)
        if (value(frames[i], v)) {
          if (uint_cond_holds(c.c, v)) return true;
          any = true;
        }
      return c.index == Http2Cond::kOrAbsent && !any && complete;
    }
  }
}

namespace {

bool buffer_final(const AppUpdate& u, uint16_t key) {
  if (const HttpTx* h = u.http()) {
    const uint8_t b = base_buf(uint8_t(key % kBufCount));
    const bool body = b == kBufHttpRequestBody || b == kBufHttpResponseBody;
    return key / kBufCount ? (body ? h->resp_done : h->resp_headers_done) : (body ? h->req_done : h->req_headers_done);
  }
  if (const TlsTx* t = u.tls()) return t->handshake_done;
  if (const SshTx* s = u.ssh()) return s->done();
  return true;
}

// An SDP buffer of the message (sdp.hpp): the session's fields, or instance `index` of a
// multi-buffer (as Suricata's, a per-description field stops at the first description without it).
bool sdp_buffer(const SdpMessage& m, uint8_t b, size_t index, const std::string*& out) {
  const auto one = [&](const std::string& v, bool present) {
    out = &v;
    return present;
  };
  const auto nth = [&](const std::vector<std::string>& v) { return index < v.size() && one(v[index], true); };
  // Instance `index` of a per-description field: present only when every description up to it has it.
  const auto leading = [&](const auto& v, auto has, auto value) {
    for (size_t k = 0; k <= index; ++k)
      if (k >= v.size() || !(v[k].*has)) return false;
    return one(v[index].*value, true);
  };
  switch (b) {
    case kBufSdpOrigin: return one(m.origin, true);
    case kBufSdpSessionName: return one(m.session_name, !m.session_name.empty());
    case kBufSdpSessionInfo: return one(m.session_info, m.has_info);
    case kBufSdpUri: return one(m.uri, m.has_uri);
    case kBufSdpEmail: return one(m.email, m.has_email);
    case kBufSdpPhone: return one(m.phone, m.has_phone);
    case kBufSdpConnection: return one(m.connection, m.has_connection);
    case kBufSdpTimezone: return one(m.timezone, m.has_timezone);
    case kBufSdpKey: return one(m.key, m.has_key);
    case kBufSdpBandwidth: return nth(m.bandwidths);
    case kBufSdpAttribute: return nth(m.attributes);
    case kBufSdpTime: return index < m.times.size() && one(m.times[index].time, true);
    case kBufSdpRepeatTime: return leading(m.times, &SdpTime::has_repeat, &SdpTime::repeat);
    case kBufSdpMedia: return index < m.media.size() && one(m.media[index].media, true);
    case kBufSdpMediaInfo: return leading(m.media, &SdpMedia::has_info, &SdpMedia::info);
    case kBufSdpMediaConnection: return leading(m.media, &SdpMedia::has_connection, &SdpMedia::connection);
    case kBufSdpMediaKey: return leading(m.media, &SdpMedia::has_key, &SdpMedia::key);
    default: return false;
  }
}

// Whether a file satisfies every hash list of a signature: its hash (known once it closed) is
// listed, or, negated, it is not.
bool file_hashes_hold(const std::vector<Signature::FileHashCond>& cs, const MimeFile& f) {
  for (const Signature::FileHashCond& c : cs) {
    const std::string& h = c.algo == kHashMd5 ? f.md5 : c.algo == kHashSha1 ? f.sha1 : f.sha256;
    if (!f.closed || h.empty() || !c.hashes || (c.hashes->count(h) != 0) == c.neg) return false;
  }
  return true;
}

// The files of a side of an HTTP transaction (HttpTx::files) or a mail (its attachments, sent to
// the server); null for other protocols.
const std::vector<MimeFile>* files_of(const HttpTx* h, const SmtpTx* m, int side, const FtpDataTx* fd = nullptr) {
  if (fd) return &fd->files[side];  // a data connection's file: on its direction's side
  if (m) return m->mime && side == 0 ? &m->mime->files() : nullptr;
  return h ? &h->files(side) : nullptr;
}

// A transaction's buffer, computed on first use during one update.
struct TxBuffers {
  const HttpTx& t;
  const TlsTx* tls;  // a TLS transaction (t is then an empty HttpTx: no HTTP buffer exists)
  const DnsTx* dns;  // a DNS transaction (likewise)
  const SmtpTx* smtp;  // an SMTP transaction (likewise)
  const SshTx* ssh;    // an SSH connection's identification strings (likewise)
  const SipTx* sip;    // a SIP message (likewise)
  const FtpTx* ftp;    // an FTP transaction (likewise)
  const FtpDataTx* ftpd = nullptr;  // an FTP data connection's transfer (likewise)
  size_t index;      // a multi-buffer's instance: the DNS question, the certificate, the mail's file
  std::string val[2 * kBufCount];
  int8_t state[2 * kBufCount] = {};  // 0 not computed, 1 present, -1 absent

  AppTx* owner;      // where buffers kept between updates live (AppTx::built)
  std::string addr[2];  // the client's and the server's address: 4 bytes (IPv4) or 16, network order
  // The update's own body (kBufHttpRequestBody or kBufHttpResponseBody; kBufPayload: none) is
  // inspected in a window (body_window.hpp): its buffers, and those transformed from it, hold the
  // window's bytes, or are absent when the update inspects none of it. The other side's body is
  // read whole (a signature reading both sides matches again at the response).
  uint8_t win_buf = kBufPayload;
  BodyWindow win;
  bool windowed(uint16_t key) const { return win_buf != kBufPayload && base_buf(uint8_t(key % kBufCount)) == win_buf; }
  // Where a buffer's bytes start in the buffer they are part of (Suricata's inspect offset).
  uint64_t base_of(uint16_t key) const { return windowed(key) ? win.offset : 0; }
  // Whether the transaction has the body a windowed buffer reads (whatever this update inspects).
  bool body_present(uint16_t key) const {
    return base_buf(uint8_t(key % kBufCount)) == kBufHttpRequestBody ? t.req_headers_done && !t.request_body.empty()
                                                                     : t.resp_headers_done && !t.response_body.empty();
  }

  TxBuffers(const HttpTx& tx, const TlsTx* tl, const DnsTx* dn, const SmtpTx* sm, const SshTx* sh, const SipTx* si,
            const FtpTx* ft, size_t i, AppTx* o)
      : t(tx), tls(tl), dns(dn), smtp(sm), ssh(sh), sip(si), ftp(ft), index(i), owner(o) {}

  const std::string* ptr[2 * kBufCount] = {};

  // side * kBufCount + buf -> the bytes, or null when the transaction does not have it (yet). A
  // buffer the transaction holds as it is (a body, a line) is not copied: bodies are up to their
  // limits and inspected at every update.
  const std::string* get(uint16_t key) {
    if (state[key] != 0) return ptr[key];
    // A finished request's buffers are final: built once, kept in the transaction for the
    // response's updates (which inspect signatures reading both sides); so are a message's start
    // line and header buffers once its headers are done (trailers are not kept), for the updates
    // its body brings. (Not a multi-buffer's instance: the headers one by one, the files.)
    const bool http = !tls && !dns && !smtp && !ssh && !sip && !ftp && !ftpd;
    const uint8_t base = base_buf(uint8_t(key % kBufCount));
    const bool final = http && !windowed(key) && !instance_buf(base) &&
                       (key < kBufCount ? key != kBufPayload &&
                                              (t.req_done || (t.req_headers_done && head_buf(base, 0)))
                                        : t.resp_headers_done && head_buf(base, 1));
    if (final) {
      const auto it = owner->built.find(uint16_t(kFinal + key));
      if (it != owner->built.end()) {
        state[key] = it->second.present ? 1 : -1;
        return ptr[key] = it->second.present ? &it->second.bytes : nullptr;
      }
    }
    const std::string* held = nullptr;
    const bool ok = compute(key % kBufCount, key / kBufCount, val[key], held);
    state[key] = ok ? 1 : -1;
    ptr[key] = ok ? (held ? held : &val[key]) : nullptr;
    if (final && !held) {
      AppTx::Built& b = owner->built[uint16_t(kFinal + key)];
      b.present = ok;
      b.bytes = std::move(val[key]);
      ptr[key] = ok ? &b.bytes : nullptr;
    }
    return ptr[key];
  }
  static constexpr uint16_t kFinal = 0x4000;  // AppTx::built ids of final buffers

  // A buffer of a side (0 request, 1 response) read from its start line and headers alone.
  static bool head_buf(uint8_t b, int side) {
    switch (b) {
      case kBufHttpProtocol: case kBufHttpHeader: case kBufHttpHeaderRaw: case kBufHttpCookie:
      case kBufHttpContentType: case kBufHttpContentLen: case kBufHttpConnection: case kBufHttpStart:
      case kBufHttpHeaderNames:
        return true;
      case kBufHttpStatCode: case kBufHttpStatMsg: case kBufHttpResponseLine: case kBufHttpServer:
      case kBufHttpLocation:
        return side == 1;
      case kBufHttpUri: case kBufHttpUriRaw: case kBufHttpMethod: case kBufHttpRequestLine: case kBufHttpHost:
      case kBufHttpHostRaw: case kBufHttpUserAgent: case kBufHttpReferer: case kBufHttpAccept:
      case kBufHttpAcceptEnc: case kBufHttpAcceptLang: case kBufHttpHostDot:
        return side == 0;
      default:
        return false;
    }
  }

  // A body: held whole, or, the update's own body, its window's bytes (none: absent).
  bool body_part(const std::string& body, bool headers_done, uint8_t b, std::string& out,
                 const std::string*& held) const {
    if (!headers_done || body.empty()) return false;
    if (b == win_buf) {
      if (!win.inspect) return false;
      if (win.offset != 0) {
        out.assign(body, size_t(win.offset), std::string::npos);
        return true;
      }
    }
    held = &body;
    return true;
  }

  bool header(int side, const char* name, std::string& out) const { return t.header(side, name, out); }

  // The buffer into out, or, when the transaction holds it as it is, *held pointing at it.
  bool compute(uint8_t b, int side, std::string& out, const std::string*& held) const {
    // A buffer with transforms (transform.hpp): its plain buffer, transformed.
    if (derived_buf(b)) {
      if (!compute(base_buf(b), side, out, held)) return false;
      if (held) out = *held;
      held = nullptr;
      apply_transforms(b, out);
      return true;
    }
    // dotprefix (signature.hpp): the name buffer with a "." before it.
    const uint8_t base = b == kBufDnsQueryDot    ? uint8_t(kBufDnsQuery)
                         : b == kBufTlsSniDot    ? uint8_t(kBufTlsSni)
                         : b == kBufHttpHostDot ? uint8_t(kBufHttpHost)
                                                : b;
    if (base != b) {
      if (!compute(base, side, out, held)) return false;
      if (held) out = *held;
      held = nullptr;
      out.insert(out.begin(), '.');
      return true;
    }
    const auto hold = [&](const std::string& v, bool present) {
      held = &v;
      return present;
    };
    // ip.src / ip.dst: the sender and the receiver of the side's messages (the packet's source
    // and destination in Suricata, whose packet engine reads them with the transaction's).
    if (b == kBufIpSrc || b == kBufIpDst) return hold(addr[(b == kBufIpSrc) == (side == 0) ? 0 : 1], true);
    if (tls) {
      // Payload contents of an `alert tls` signature: the direction's bytes as sent (TlsTx::raw).
      if (b == kBufPayload) return hold(tls->raw[side], !tls->raw[side].empty());
      if (b == kBufTlsSni) return hold(tls->sni, tls->client_hello && !tls->sni.empty());
      if (b == kBufJa3Hash) return hold(tls->ja3_hash, tls->client_hello);
      if (b == kBufJa3String) return hold(tls->ja3_string, tls->client_hello);
      if (b == kBufJa3sHash) return hold(tls->ja3s_hash, side == 1 && tls->server_hello);
      if (b == kBufJa3sString) return hold(tls->ja3s_string, side == 1 && tls->server_hello);
      // The inspected direction's hello: its random, and each ALPN protocol it names (an instance).
      if (b == kBufTlsRandom || b == kBufTlsRandomTime || b == kBufTlsRandomBytes) {
        const std::string& r = tls->random[side];
        if (r.size() != 32) return false;
        if (b == kBufTlsRandom) return hold(r, true);
        out = b == kBufTlsRandomTime ? r.substr(0, 4) : r.substr(4);
        return true;
      }
      if (b == kBufTlsAlpn) return index < tls->alpn[side].size() && hold(tls->alpn[side][index], true);
      // The inspected side's certificate: the server's to the client, the client's (mutual TLS)
      // to the server; subjectAltName only the server's, as Suricata's keywords read them.
      const TlsCert& c = tls->cert[side];
      switch (b) {
        case kBufTlsCertSubject: return hold(c.subject, c.decoded);
        case kBufTlsCertIssuer: return hold(c.issuer, c.decoded);
        case kBufTlsCertSerial: return hold(c.serial, c.decoded && !c.serial.empty());
        case kBufTlsCertFingerprint: return hold(c.fingerprint, !c.fingerprint.empty());
        case kBufTlsCerts:  // each certificate of the chain, one instance each
          return index < c.chain.size() && hold(c.chain[index], !c.chain[index].empty());
        case kBufTlsSubjectAltName:  // each subjectAltName entry, one instance each
          return side == 1 && index < c.sans.size() && hold(c.sans[index], true);
        default: return false;
      }
    }
    if (sip) {
      // The message of the side inspected: a request to the server, a response to the client.
      if ((side == 0) != sip->request) return false;
      switch (b) {
        case kBufSipMethod: return hold(sip->method, true);
        case kBufSipUri: return hold(sip->uri, true);
        case kBufSipRequestLine: return hold(sip->line, !sip->line.empty());
        case kBufSipStatCode: return hold(sip->code, true);
        case kBufSipStatMsg: return hold(sip->reason, true);
        case kBufSipResponseLine: return hold(sip->line, !sip->line.empty());
        case kBufSipProtocol: return hold(sip->version, true);
        case kBufSdpOrigin: case kBufSdpSessionName: case kBufSdpSessionInfo: case kBufSdpUri: case kBufSdpEmail:
        case kBufSdpPhone: case kBufSdpConnection: case kBufSdpTimezone: case kBufSdpKey: case kBufSdpBandwidth:
        case kBufSdpTime: case kBufSdpRepeatTime: case kBufSdpAttribute: case kBufSdpMedia: case kBufSdpMediaInfo:
        case kBufSdpMediaConnection: case kBufSdpMediaKey: {
          const std::string* v = nullptr;
          if (!sip->has_sdp || !sdp_buffer(sip->sdp, b, index, v)) return false;
          held = v;
          return true;
        }
        case kBufSipPduFrame: case kBufSipRequestLineFrame: case kBufSipRequestHeadersFrame:
        case kBufSipRequestBodyFrame: case kBufSipResponseLineFrame: case kBufSipResponseHeadersFrame:
        case kBufSipResponseBodyFrame: {
          // The frame's bytes as the message holds them (a TCP body cut at the limit: as far as kept).
          size_t off, len;
          if (!sip_frame_span(*sip, sip_frame_kind(b), off, len) || off >= sip->raw.size()) return false;
          out.assign(sip->raw, off, std::min(len, sip->raw.size() - off));
          return true;
        }
        default: break;
      }
      const char* name = b == kBufSipFrom          ? "From"
                         : b == kBufSipTo          ? "To"
                         : b == kBufSipVia         ? "Via"
                         : b == kBufSipUserAgent   ? "User-Agent"
                         : b == kBufSipContentType ? "Content-Type"
                         : b == kBufSipContentLength ? "Content-Length"
                                                     : nullptr;
      const std::string* v = name ? sip->header(name, index) : nullptr;
      return v && hold(*v, true);
    }
    if (ftp) {
      // Suricata's ftp keywords see nothing of a transaction without a command (the greeting).
      if (!ftp->has_command()) return false;
      switch (b) {
        case kBufFtpCommand: return side == 0 && hold(ftp->command, true);
        case kBufFtpCommandData: return side == 0 && hold(ftp->command_data, !ftp->command_data.empty());
        // The reply's lines once it is complete (not after a preliminary "1xx" only: Suricata's
        // engines wait for the transaction's progress to finish).
        case kBufFtpReply:
          return side == 1 && ftp->done && index < ftp->replies.size() && hold(ftp->replies[index], true);
        case kBufFtpCompletionCode:
          return side == 1 && ftp->done && index < ftp->codes.size() && hold(ftp->codes[index], true);
        default: return false;
      }
    }
    if (ssh) {
      // The sender's identification string (the side inspected).
      if (b == kBufSshProto) return hold(ssh->proto[side], ssh->banner[side]);
      if (b == kBufSshSoftware) return hold(ssh->software[side], ssh->banner[side]);
      // HASSH: the client's KEXINIT (to the server), the server's (to the client).
      if (b == kBufSshHassh || b == kBufSshHasshString)
        return side == 0 && hold(b == kBufSshHassh ? ssh->hassh[0] : ssh->hassh_string[0], ssh->kex[0]);
      if (b == kBufSshHasshServer || b == kBufSshHasshServerString)
        return side == 1 && hold(b == kBufSshHasshServer ? ssh->hassh[1] : ssh->hassh_string[1], ssh->kex[1]);
      return false;
    }
    if (smtp && mail_buf(b)) {
      // The envelope: the session's HELO/EHLO name, MAIL FROM's address, each RCPT TO's (an instance).
      if (side != 0) return false;
      if (b == kBufSmtpHelo) return hold(smtp->helo, !smtp->helo.empty());
      if (b == kBufSmtpMailFrom) return hold(smtp->mail_from, !smtp->mail_from.empty());
      if (b == kBufSmtpRcptTo) return index < smtp->rcpt_to.size() && hold(smtp->rcpt_to[index], !smtp->rcpt_to[index].empty());
      // The body's MD5, once the message ended; the URLs found so far (each an instance).
      if (b == kBufEmailBodyMd5) return hold(smtp->body_md5, !smtp->body_md5.empty());
      if (b == kBufEmailUrl)
        return smtp->mime && index < smtp->mime->urls().size() && hold(smtp->mime->urls()[index], true);
      // The header fields, once the header block ended (as Suricata's main headers): the first
      // field of the name, each Received field an instance.
      if (!smtp->headers_done) return false;
      const char* name = b == kBufEmailFrom       ? "from"
                         : b == kBufEmailSubject   ? "subject"
                         : b == kBufEmailTo        ? "to"
                         : b == kBufEmailCc        ? "cc"
                         : b == kBufEmailDate      ? "date"
                         : b == kBufEmailMessageId ? "message-id"
                         : b == kBufEmailXMailer   ? "x-mailer"
                                                   : "received";
      const std::string* v = smtp->header(name, b == kBufEmailReceived ? index : 0);
      return v && hold(*v, true);
    }
    if (ftpd) {
      // The transferred file, on the side its data goes to (file_data either side's body buffer:
      // an ftp-data signature's file_data reads the file whichever way it goes).
      const std::vector<MimeFile>& fs = ftpd->files[side];
      if (fs.empty()) return false;
      if (b == kBufFileName) return hold(fs[0].name, !fs[0].name.empty());
      if (b == kBufHttpResponseBody || b == kBufHttpRequestBody) return hold(fs[0].data, !fs[0].data.empty());
      return false;
    }
    if (b == kBufFileName) {
      // Each file's name of the side.
      const std::vector<MimeFile>* fs = files_of(!tls && !dns && !smtp && !ssh && !sip && !ftp ? &t : nullptr, smtp, side);
      return fs && index < fs->size() && hold((*fs)[index].name, !(*fs)[index].name.empty());
    }
    if (smtp) {
      // file.data (to the server, as the request body's buffer): the mail's files, one instance each.
      if (b != kBufHttpRequestBody || side != 0 || !smtp->mime || index >= smtp->mime->files().size()) return false;
      const MimeFile& f = smtp->mime->files()[index];
      // Suricata's file inspection for SMTP (detect-file-data.c, smtp.inspected-tracker): an open
      // file waits until content-inspect-min-size bytes of it have come.
      if (f.open() && f.size < kSmtpFileInspectMinSize) return false;
      return hold(f.data, !f.data.empty());
    }
    if (dns) {
      // Payload contents of an `alert dns` signature: the message as sent (DnsTx::raw).
      if (b == kBufPayload) return hold(dns->raw, !dns->raw.empty());
      // The names, one instance each (empty names are not inspected): dns.query a request's
      // questions; the others either direction's sections; dns.response.rrname a response's.
      const DnsMessage& m = dns->msg;
      const auto name_at = [&](const auto& list) {
        return index < list.size() && hold(list[index].name, !list[index].name.empty());
      };
      switch (b) {
        case kBufDnsQuery: return dns->request && name_at(m.queries);
        case kBufDnsQueriesRrname: return name_at(m.queries);
        case kBufDnsAnswersRrname: return name_at(m.answers);
        // (Suricata reads these two of the response only.)
        case kBufDnsAuthoritiesRrname: return !dns->request && name_at(m.authorities);
        case kBufDnsAdditionalsRrname: return !dns->request && name_at(m.additionals);
        case kBufDnsResponseRrname: {
          if (dns->request) return false;
          size_t k = index;
          if (k < m.queries.size()) return hold(m.queries[k].name, !m.queries[k].name.empty());
          k -= m.queries.size();
          // Each record: its name, then its data when that is a name (CNAME, PTR, MX, NS; SOA's mname).
          for (const auto* sec : {&m.answers, &m.authorities, &m.additionals})
            for (const DnsRecord& r : *sec) {
              if (k-- == 0) return hold(r.name, !r.name.empty());
              if (rdata_has_name(r.rrtype) && k-- == 0)
                return rdata_is_name(r.rrtype) ? hold(r.data, !r.data.empty()) : hold(r.soa.mname, !r.soa.mname.empty());
            }
          return false;
        }
        default: return false;
      }
    }
    // HTTP/1's frames: the message of their side, as the payload of an HTTP signature reads it.
    if (b == kBufHttpRequestFrame || b == kBufHttpResponseFrame) {
      if (side != (b == kBufHttpResponseFrame ? 1 : 0)) return false;
      b = kBufPayload;
    }
    if (b == kBufTlsSni || b == kBufDnsQuery || (b >= kBufDnsQueriesRrname && b <= kBufDnsResponseRrname) || b >= kBufTlsCertSubject || b == kBufJa3Hash || b == kBufJa3String)
      return false;
    const bool req_line = t.req_line, req_hdr = t.req_headers_done;
    const bool resp_line = t.resp_line, resp_hdr = t.resp_headers_done;
    const bool hdr = side ? resp_hdr : req_hdr;
    switch (b) {
      case kBufPayload: {
        // The message as sent: start line, header block, body (dechunked, decoded). Once the
        // headers are done only the body grows: the kept message gets the new body bytes.
        const std::string& body = side ? t.response_body : t.request_body;
        AppTx::Built& m = owner->built[uint16_t(side * kBufCount + kBufPayload)];
        if (m.stable && body.size() >= m.tail) {
          m.bytes.append(body, m.tail, std::string::npos);
        } else if (side) {
          m.bytes = t.response_line + "\r\n" + t.resp_headers_raw + body;
        } else {
          m.bytes = t.request_line + "\r\n" + t.req_headers_raw + (req_hdr ? "\r\n" : "") + body;
        }
        m.tail = body.size();
        m.stable = side ? resp_hdr : req_hdr;
        return hold(m.bytes, side ? resp_line : req_line);
      }
      case kBufHttpUri: out = normalize_uri(t.uri_raw); return req_line;
      case kBufHttpUriRaw: return hold(t.uri_raw, req_line);
      case kBufHttpMethod: return hold(t.method, req_line);
      case kBufHttpProtocol: return hold(side ? t.resp_protocol : t.protocol, side ? resp_line : req_line);
      case kBufHttpRequestLine: return hold(t.request_line, req_line);
      case kBufHttpHost: out = t.hostname(); return req_hdr && !out.empty();
      case kBufHttpHostRaw:  // HTTP/2's :authority where there is no Host field
        if (req_hdr && header(0, "host", out)) return true;
        out = t.authority;
        return req_hdr && t.http2 && !t.authority.empty();
      case kBufHttpUserAgent: return req_hdr && header(0, "user-agent", out);
      case kBufHttpReferer: return req_hdr && header(0, "referer", out);
      case kBufHttpAccept: return req_hdr && header(0, "accept", out);
      case kBufHttpAcceptEnc: return req_hdr && header(0, "accept-encoding", out);
      case kBufHttpAcceptLang: return req_hdr && header(0, "accept-language", out);
      case kBufHttpConnection: return hdr && header(side, "connection", out);
      case kBufHttpRequestBody: return body_part(t.request_body, req_hdr, b, out, held);
      case kBufHttpHeader: {
        // HTTP/2's: pseudo-fields too, values without surrounding blanks (Suricata's
        // SCHttp2TxGetHeaders); HTTP/1's values are trimmed by the parser.
        if (!hdr) return false;
        for (const HttpHeader& h : header_fields(t, side)) {
          if (ieq_prefix(h.name, side ? "set-cookie" : "cookie") && h.name.size() == (side ? 10u : 6u)) continue;
          out += h.name + ": ";
          if (t.http2) {
            const size_t a = h.value.find_first_not_of(" \t");
            if (a != std::string::npos) out.append(h.value, a, h.value.find_last_not_of(" \t") + 1 - a);
          } else {
            out += h.value;
          }
          out += "\r\n";
        }
        return !out.empty();
      }
      case kBufHttpHeaderRaw: {
        if (t.http2 && hdr) {
          // HTTP/2's header block as decoded, pseudo-fields too (SCHttp2TxGetHeadersRaw).
          for (const HttpHeader& h : header_fields(t, side)) out += h.name + ": " + h.value + "\r\n";
          return !out.empty();
        }
        const std::string& raw = side ? t.resp_headers_raw : t.req_headers_raw;
        return hold(raw, hdr && !raw.empty());
      }
      case kBufHttpCookie: return hdr && header(side, side ? "set-cookie" : "cookie", out);
      case kBufHttpContentType: return hdr && header(side, "content-type", out);
      case kBufHttpContentLen: return hdr && header(side, "content-length", out);
      case kBufHttpStart:
        if (!hdr) return false;
        out = (side ? t.response_line : t.request_line) + "\r\n";
        out += side ? t.resp_headers_raw : t.req_headers_raw;
        out += "\r\n";
        return true;
      case kBufHttpHeaderNames:
        if (!hdr) return false;
        out = "\r\n";
        for (const HttpHeader& h : header_fields(t, side)) out += h.name + "\r\n";
        out += "\r\n";
        return true;
      case kBufHttpRequestHeader:
      case kBufHttpResponseHeader: {
        // Each header, "Name: value" as received (one instance each; HTTP/2's pseudo-fields too).
        const int hs_side = b == kBufHttpResponseHeader ? 1 : 0;
        const auto& hs = header_fields(t, hs_side);
        if (!(hs_side ? resp_hdr : req_hdr) || index >= hs.size()) return false;
        out = hs[index].name + ": " + hs[index].value;
        return true;
      }
      case kBufHttp2HeaderName: {
        // Each header field's name of the side, pseudo-fields too (Suricata's SCHttp2TxGetHeaderName).
        const auto& hs = header_fields(t, side);
        return t.http2 && hdr && index < hs.size() && hold(hs[index].name, true);
      }
      case kBufHttpStatCode: return hold(t.stat_code, resp_line && !t.stat_code.empty());
      case kBufHttpStatMsg: return hold(t.stat_msg, resp_line && !t.stat_msg.empty());
      case kBufHttpResponseLine: return hold(t.response_line, resp_line && !t.response_line.empty());
      case kBufHttpResponseBody: return body_part(t.response_body, resp_hdr, b, out, held);
      case kBufHttpServer: return resp_hdr && header(1, "server", out);
      case kBufHttpLocation: return resp_hdr && header(1, "location", out);
      default: return false;
    }
  }
};

int on_app_match(unsigned int id, unsigned long long, unsigned long long, unsigned int, void* ctx) {
  static_cast<std::vector<uint32_t>*>(ctx)->push_back(id);
  return 0;
}

// The address an HTTP transaction's X-Forwarded-For (or the configured header) names, as Suricata's
// HttpXFFGetIPFromTxAux and ParseXFFString read it: a value of 7 to 255 bytes; reverse deployment:
// what follows its last space, forward: what precedes its first comma; a bracketed IPv6 address
// loses its brackets (and what follows), an IPv4 address its port. "" unless that is an address.
std::string xff_address(const HttpTx& t, const std::string& header, bool forward) {
  std::string v;
  if (!t.header(0, header.c_str(), v) || v.size() < 7 || v.size() >= 256) return "";
  if (forward) {
    v = v.substr(0, v.find(','));
  } else {
    const size_t sp = v.rfind(' ');
    if (sp != std::string::npos) v = v.substr(sp + 1);
  }
  if (!v.empty() && v[0] == '[') {
    const size_t end = v.find(']');
    if (end == std::string::npos) return "";
    v = v.substr(1, end - 1);
  } else if (std::count(v.begin(), v.end(), '.') == 3 && std::count(v.begin(), v.end(), ':') == 1) {
    v = v.substr(0, v.find(':'));
  }
  unsigned char a[16];
  return inet_pton(AF_INET, v.c_str(), a) == 1 || inet_pton(AF_INET6, v.c_str(), a) == 1 ? v : "";
}

}  // namespace

// One database per buffer key, as Suricata has an MPM context per buffer: a buffer is scanned for
// its own signatures' patterns only. (One database of every buffer's patterns scanned each buffer
// for all of them: with ET Open, Hyperscan's time per byte on the 20,000-pattern database was most
// of the application layer's inspection.)
struct DetectModule::Host::AppPrefilter {
  struct KeyDb {
    hs_database_t* db = nullptr;
    std::vector<std::vector<uint32_t>> pat_sigs;  // pattern id -> app signatures
    size_t max_len = 0;                           // the longest pattern
  };
  std::vector<KeyDb> by_key = std::vector<KeyDb>(2 * kBufCount);
  std::vector<hs_scratch_t*> scratch;  // one per on_app worker, large enough for every database
  std::vector<uint16_t> keys;    // the buffer keys some pattern is on
  std::vector<uint32_t> nofp;    // app signatures without a fast pattern
  ~AppPrefilter() {
    for (hs_scratch_t* sc : scratch) hs_free_scratch(sc);
    for (KeyDb& k : by_key)
      if (k.db) hs_free_database(k.db);
  }
};

void DetectModule::Host::set_app_workers(int n) {
  app_workers_ = std::vector<AppWorker>(size_t(std::max(1, n)));
  if (!app_pf_ || app_pf_->keys.empty()) return;
  while (app_pf_->scratch.size() < app_workers_.size()) {
    hs_scratch_t* sc = nullptr;
    for (const uint16_t k : app_pf_->keys)
      if (hs_alloc_scratch(app_pf_->by_key[k].db, &sc) != HS_SUCCESS)
        throw std::runtime_error("detect: Hyperscan scratch allocation failed");
    app_pf_->scratch.push_back(sc);
  }
}

void DetectModule::Host::on_app_end() {
  app_alerts_.clear();
  for (AppWorker& w : app_workers_) {
    app_alerts_.merge(w.alerts);
    w.alerts.clear();
    app_updates_ += w.updates;
    app_candidates_ += w.candidates;
    app_matches_ += w.matches;
    w.updates = w.candidates = w.matches = 0;
  }
}

void DetectModule::Host::add_app_sig(uint32_t i) {
  const Signature& s = set_.sigs[i];
  AppSig a{};
  a.sig = i;
  a.proto = s.app_proto;
  smtp_envelope_sigs_ = smtp_envelope_sigs_ || s.app_proto == 6;
  for (const SigOp& o : s.ops) mail_body_md5_ = mail_body_md5_ || base_buf(o.buf) == kBufEmailBodyMd5;
  for (const auto& z : s.bsize) mail_body_md5_ = mail_body_md5_ || base_buf(z.first) == kBufEmailBodyMd5;
  a.http_version = s.http_version;
  a.http2_events = s.http2_events;
  a.http2_conds = s.http2_conds;
  a.per_instance = s.app_proto == 4 || s.file_conds();  // a mail's files, the file keywords' files
  const bool reads_file_name =
      std::any_of(s.ops.begin(), s.ops.end(), [](const SigOp& o) { return base_buf(o.buf) == kBufFileName; });
  a.per_file = s.file_conds() || reads_file_name;
  if (s.file_conds()) {
    a.file_hashes = s.file_hashes.empty() ? nullptr : &s.file_hashes;
    a.filesize = s.filesize;
    for (const auto& c : s.file_hashes) file_hash_bits_ |= c.algo;
  }
  http_file_sigs_ = http_file_sigs_ || reads_file_name || (s.file_conds() && s.app_proto == 1);
  for (const SigOp& o : s.ops) a.per_instance = a.per_instance || instance_buf(o.buf);
  for (const auto& z : s.bsize) a.per_instance = a.per_instance || instance_buf(z.first);
  {
    // Two different multi-buffers (tls.subjectaltname and tls.alpn, say): each is matched at any
    // of its instances (its bsize with it), not at one index shared by both.
    // A keyword's copies (transform.hpp's instance_copy) count apart: each its own buffer.
    std::vector<uint8_t> multi;
    const auto multi_key = [](uint8_t b) {
      const DerivedBuf* d = derived_buf(b);
      return d && d->copy ? b : base_buf(b);
    };
    for (const SigOp& o : s.ops)
      if (instance_buf(o.buf) && std::find(multi.begin(), multi.end(), multi_key(o.buf)) == multi.end())
        multi.push_back(multi_key(o.buf));
    a.multi_any = multi.size() >= 2 && s.app_proto != 4;
  }
  const auto per_header = [](uint8_t b) {
    return base_buf(b) == kBufHttpRequestHeader || base_buf(b) == kBufHttpResponseHeader || base_buf(b) == kBufHttp2HeaderName;
  };
  for (const SigOp& o : s.ops) http_header_sigs_ = http_header_sigs_ || per_header(o.buf);
  for (const auto& z : s.bsize) http_header_sigs_ = http_header_sigs_ || per_header(z.first);
  a.urilen = DetCond{uint8_t(s.urilen.on ? (s.urilen.range ? 2 : 1) : 0), s.urilen.cmp, uint8_t(s.urilen.neg ? 1 : 0),
                     0, s.urilen.lo, s.urilen.hi};
  a.urilen_raw = s.urilen_raw;
  a.http_events = s.http_events;
  a.dns_events = s.dns_events;
  a.tls_version_on = s.tls_version_on;
  a.tls_version_raw = s.tls_version_raw;
  a.tls_version = s.tls_version;
  const auto cond = [](const NumCond& c) {
    return DetCond{uint8_t(c.on ? (c.range ? 2 : 1) : 0), c.cmp, uint8_t(c.neg ? 1 : 0), 0, c.lo, c.hi};
  };
  a.dns_opcode = cond(s.dns_opcode);
  a.tls_chain_len = cond(s.tls_chain_len);
  a.tls_notbefore = s.tls_notbefore;
  a.tls_notafter = s.tls_notafter;
  a.tls_expiry = s.tls_expiry;
  a.ssl_version = s.ssl_version;
  a.ssl_version_neg = s.ssl_version_neg;
  a.dns_rcode = cond(s.dns_rcode);
  a.dns_rrtype = s.dns_rrtype;
  a.ftp_dynamic_port = cond(s.ftp_dynamic_port);
  a.ftp_mode = s.ftp_mode;
  a.ftp_reply_received = s.ftp_reply_received;
  a.ftp_events = s.ftp_events;
  a.smtp_events = s.smtp_events;
  a.ssh_events = s.ssh_events;
  smtp_event_sigs_ = smtp_event_sigs_ || s.smtp_events;
  a.tls_events = s.tls_events;
  a.ftp_bounce = s.ftp_bounce;
  a.ftpdata_command = s.ftpdata_command;
  for (const SigOp& o : s.ops) a.captures = a.captures || !o.captures.empty();
  const auto hassh_buf = [](uint8_t b) {
    b = base_buf(b);
    return b == kBufSshHassh || b == kBufSshHasshString || b == kBufSshHasshServer || b == kBufSshHasshServerString;
  };
  for (const SigOp& o : s.ops) hassh_sigs_ = hassh_sigs_ || hassh_buf(o.buf);
  for (const auto& z : s.bsize) hassh_sigs_ = hassh_sigs_ || hassh_buf(z.first);
  // A buffer's side; an ftp-data signature's file_data reads the file whichever way it goes.
  const auto sig_buf_side = [&](uint8_t b) {
    return s.app_proto == 9 && base_buf(b) == kBufHttpResponseBody ? 2 : gaspp::sig_buf_side(b);
  };
  // Resolve each option's buffer to a side, then group the options by buffer in rule order.
  std::vector<uint16_t> key(s.ops.size());
  std::vector<bool> either(s.ops.size(), false);
  bool fixed = false;  // some buffer belongs to one side
  for (const SigOp& o : s.ops) fixed = fixed || sig_buf_side(o.buf) != 2 || (o.buf == kBufHttpResponseBody && s.app_proto != 9);
  for (const auto& [b, c] : s.bsize) fixed = fixed || sig_buf_side(b) != 2;
  for (const auto& [b, e] : s.absent) fixed = fixed || sig_buf_side(b) != 2;
  a.side = s.flow_dir == 2 ? 1 : 0;
  if (!fixed && s.flow_dir == 0) a.side = 2;
  // A response buffer anywhere makes it a response signature: decided before the buffers of either
  // side (the payload, say) are given one, so that options before the response buffer read the
  // response too.
  // file_data to the server (flow:to_server, or a mail's files): the request body's buffer.
  const bool fd_request = s.flow_dir == 1 || s.app_proto == 4;
  // A mail's buffers are the client's; a signature testing only a mail's anomalies keeps its flow
  // direction (Suricata's smtp-events.rules raise reply events to the client).
  const bool smtp_events_only = s.smtp_events && s.ops.empty() && s.bsize.empty() && s.absent.empty();
  if ((s.app_proto == 4 || s.app_proto == 6) && !smtp_events_only) a.side = 0;
  const auto reads_response = [&](uint8_t b) {
    return sig_buf_side(b) == 1 && !(base_buf(b) == kBufHttpResponseBody && fd_request);
  };
  // file_data to the server: the request body's buffer (with the same transforms).
  const auto to_request_body = [&](uint8_t& b, int& side) {
    if (fd_request && base_buf(b) == kBufHttpResponseBody) b = rebase_buf(b, kBufHttpResponseBody, kBufHttpRequestBody), side = 0;
  };
  // The request anomalies (app-layer-event) are the request's.
  if (s.http_events && a.side == 2) a.side = 0;
  for (const SigOp& o : s.ops)
    if (reads_response(o.buf)) a.side = 1;
  for (const auto& [b, c] : s.bsize)
    if (reads_response(b)) a.side = 1;
  for (const auto& [b, e] : s.absent)
    if (reads_response(b)) a.side = 1;
  // A bsize's or an absent's buffer with its side: the key, and whether it is the update's side.
  const auto resolve = [&](uint8_t b, bool& either) {
    int side = sig_buf_side(b);
    to_request_body(b, side);
    either = false;
    if (side == 2) {
      either = a.side == 2;
      side = a.side == 1 || s.flow_dir == 2 ? 1 : 0;
    }
    if (side == 1) a.side = 1;
    return uint16_t(side * kBufCount + b);
  };
  for (const auto& [b, c] : s.bsize) {
    AppSig::Size z{};
    z.key = resolve(b, z.either);
    z.cond = DetCond{uint8_t(c.range ? 2 : 1), c.cmp, uint8_t(c.neg ? 1 : 0), 0, c.lo, c.hi};
    a.bsize.push_back(z);
  }
  for (const auto& [b, or_else] : s.absent) {
    AppSig::Absent z{};
    z.key = resolve(b, z.either);
    z.or_else = or_else;
    a.absent.push_back(z);
  }
  // The base64_data options: a list of their own, inspected by the base64_decode op of a part.
  std::vector<size_t> b64;
  for (size_t k = 0; k < s.ops.size(); ++k)
    if (s.ops[k].buf == kBufBase64) b64.push_back(k);
  for (size_t k = 0; k < s.ops.size(); ++k) {
    uint8_t b = s.ops[k].buf;
    if (b == kBufBase64) continue;
    int side = sig_buf_side(b);
    to_request_body(b, side);
    if (side == 2) {
      either[k] = a.side == 2;
      side = a.side == 1 || s.flow_dir == 2 ? 1 : 0;
    }
    key[k] = uint16_t(side * kBufCount + b);
    if (side == 1) a.side = 1;
  }
  std::vector<uint16_t> seen;
  for (size_t k = 0; k < s.ops.size(); ++k)
    if (s.ops[k].buf != kBufBase64 && std::find(seen.begin(), seen.end(), key[k]) == seen.end()) seen.push_back(key[k]);
  const uint32_t b64_list = b64.empty() ? ~0u : add_base64_list(s, b64);
  for (uint16_t kb : seen) {
    std::vector<size_t> which;
    for (size_t k = 0; k < s.ops.size(); ++k)
      if (s.ops[k].buf != kBufBase64 && key[k] == kb) which.push_back(k);
    AppPart p{};
    p.key = kb;
    for (size_t k = 0; k < s.ops.size(); ++k)
      if (key[k] == kb) p.either = either[k];
    p.d = sigs_[i];
    p.d.mode = 0;
    add_ops(s, which, std::vector<int>(s.ops.size(), -1), p.d);
    for (uint32_t k = 0; k < p.d.op_n; ++k)
      if (ops_[p.d.op_off + k].type == kOpBase64) ops_[p.d.op_off + k].pat_off = b64_list;
    a.parts.push_back(p);
  }
  app_sigs_.push_back(std::move(a));
}

void DetectModule::Host::build_app_prefilter() {
  app_pf_ = std::make_shared<AppPrefilter>();
  // Per buffer key: the literals and the signatures each one stands for.
  std::map<uint16_t, std::map<std::pair<std::string, bool>, std::vector<uint32_t>>> lits;
  for (uint32_t a = 0; a < app_sigs_.size(); ++a) {
    const Signature& s = set_.sigs[app_sigs_[a].sig];
    const int fp = s.fast_pattern;  // signature.cpp's choice (none on a buffer tested absent)
    if (fp < 0) {
      app_pf_->nofp.push_back(a);
      continue;
    }
    const SigOp& o = s.ops[size_t(fp)];
    // The part holding the op (file_data may have become the request body).
    uint16_t kb = app_sigs_[a].parts.front().key;
    for (const AppPart& p : app_sigs_[a].parts)
      if (p.key % kBufCount == o.buf || p.key % kBufCount == rebase_buf(o.buf, kBufHttpResponseBody, kBufHttpRequestBody)) {
        kb = p.key;
        break;
      }
    const std::string lit = o.fp_chop ? o.bytes.substr(o.fp_off, o.fp_len) : o.bytes;
    lits[kb][{lit, o.nocase}].push_back(a);
    if (app_sigs_[a].side == 2) lits[uint16_t(kb % kBufCount + kBufCount)][{lit, o.nocase}].push_back(a);  // both sides
  }
  for (auto& [kb, m] : lits) {
    AppPrefilter::KeyDb& kd = app_pf_->by_key[kb];
    std::vector<std::string> ptr;
    std::vector<unsigned> flags, ids;
    for (auto& [lit, sigs] : m) {
      ids.push_back(unsigned(kd.pat_sigs.size()));
      kd.pat_sigs.push_back(sigs);
      ptr.push_back(lit.first);
      kd.max_len = std::max(kd.max_len, lit.first.size());
      flags.push_back(HS_FLAG_SINGLEMATCH | (lit.second ? HS_FLAG_CASELESS : 0));
    }
    try {
      kd.db = hs_compile_lit_cached(ptr, flags, ids, hs_cache_dir_, hs_cache_);
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(std::string("detect: Hyperscan could not compile the fast patterns of buffer ") +
                               sig_buf_name(uint8_t(kb % kBufCount)) + ": " + e.what());
    }
    app_pf_->keys.push_back(kb);
  }
  if (app_pf_->keys.empty()) return;
  set_app_workers(int(std::max<size_t>(1, app_workers_.size())));
}

void DetectModule::Host::on_app(std::span<const AppUpdate> updates, std::vector<ModuleEvent>& out, int worker) {
  if (app_sigs_.empty() || !host_view_.sigs) return;
  AppWorker& w = app_workers_.at(size_t(worker));
  std::vector<uint32_t>& hits = w.hits;
  std::vector<uint32_t>& cand = w.cand;
  for (const AppUpdate& u : updates) {
    if (!u.http() && !u.tls() && !u.dns() && !u.smtp() && !u.ssh() && !u.sip() && !u.ftp() && !u.ftp_data())
      continue;  // no signature buffers of its protocol
    AppTx& t = *u.tx;
    // The passes over an update: (protocol, first instance, instances). A multi-buffer (dns.query,
    // tls.certs, a mail's files, its recipients) is inspected per instance; a signature matches on
    // any of them (the other buffers are the same in every instance). A mail has two passes, both
    // on the client's lines: its files (file.data; one inspected once closed does not change, each
    // keeps its own scans) and its envelope (smtp.helo, smtp.mail_from, smtp.rcpt_to).
    struct Pass {
      uint8_t proto;
      size_t first, n;
    };
    Pass passes[2];
    int np = 0;
    if (const SmtpTx* m = u.smtp()) {
      // The server's lines change a mail's anomalies only (its replies): those signatures alone.
      const bool events = smtp_event_sigs_ && m->events;
      if (u.dir != 0 && !events) continue;
      if (u.dir == 0 && m->mime && !m->mime->files().empty()) passes[np++] = Pass{4, t.instances_final, m->mime->files().size()};
      if (events || (smtp_envelope_sigs_ && u.dir == 0 &&
                     (!m->helo.empty() || !m->mail_from.empty() || !m->rcpt_to.empty() || m->headers_done ||
                      (m->mime && !m->mime->urls().empty())))) {
        // Instances: the recipients, the Received fields, the URLs (each multi-buffer its own).
        const size_t received = m->headers_done ? std::count_if(m->headers.begin(), m->headers.end(), [](const auto& h) {
          return strcasecmp(h.first.c_str(), "received") == 0;
        }) : 0;
        passes[np++] = Pass{6, 0, std::max<size_t>({1, m->rcpt_to.size(), received, m->mime ? m->mime->urls().size() : 0})};
      }
    } else {
      passes[np++] = Pass{uint8_t(u.tls() ? 2 : u.dns() ? 3 : u.ssh() ? 5 : u.sip() ? 7 : u.ftp() ? 8 : u.ftp_data() ? 9 : 1), 0,
                          u.dns()   ? dns_instances(u.dns()->msg)
                          : u.tls() ? std::max<size_t>({1, u.tls()->cert[0].chain.size(), u.tls()->cert[1].chain.size(), u.tls()->cert[1].sans.size(),
                                                        u.tls()->alpn[0].size(), u.tls()->alpn[1].size()})
                          // sip.from, sip.via, ...: each field of the name an instance
                          : u.sip() ? sip_instances(*u.sip())
                          // ftp.reply, ftp.completion_code: each reply line an instance
                          : u.ftp() ? std::max<size_t>(1, u.ftp()->replies.size())
                          // http.request_header / http.response_header: each header an instance;
                          // the file keywords: each file of the update's side
                          : u.http() ? std::max<size_t>({1, http_header_sigs_ ? header_fields(*u.http(), 0).size() : 0,
                                                         http_header_sigs_ ? header_fields(*u.http(), 1).size() : 0,
                                                         http_file_sigs_ ? u.http()->files(u.dir).size() : 0})
                          : 1};
    }
    if (!np) continue;
    ++w.updates;
    // The update's own HTTP body: what of it this update inspects (body_window.hpp).
    uint8_t win_buf = kBufPayload;
    BodyWindow win;
    if (const HttpTx* h = u.http()) {
      static const HttpLimits kDefaults;
      const HttpLimits& lim = h->limits ? *h->limits : kDefaults;
      const bool req = u.dir == 0;
      const BodyWindowCfg c{req ? lim.request_inspect_min : lim.response_inspect_min,
                            req ? lim.request_inspect_window : lim.response_inspect_window, req, lim.body_inline};
      win = body_window(c, (req ? h->request_body : h->response_body).size(), req ? h->req_done : h->resp_done,
                        h->body_cut[u.dir], t.body_inspected[u.dir]);
      win_buf = req ? kBufHttpRequestBody : kBufHttpResponseBody;
    }
    static const HttpTx kNoHttp;
    for (int pi = 0; pi < np; ++pi) {
    const uint8_t proto = passes[pi].proto;
    const auto envelope_key = [](uint16_t key) {
      return mail_buf(uint8_t(key % kBufCount));
    };
    for (size_t inst = passes[pi].first; inst < passes[pi].n; ++inst) {
    if (proto == 4 && inst == t.instances_final && !u.smtp()->mime->files()[inst].open()) ++t.instances_final;
    // Cached scans of a multi-buffer may be of another instance's bytes (this update's previous
    // one, or the last one of an earlier update): those go, the others stay.
    if (passes[pi].n > 1 && !u.smtp())
      for (auto it = t.scans.begin(); it != t.scans.end();)
        it = instance_buf(uint8_t(it->first % kBufCount)) ? t.scans.erase(it) : std::next(it);
    const uint32_t scan_base = proto == 4 ? uint32_t(std::min<size_t>(inst, kMimeMaxFiles - 1) * 2 * kBufCount) : 0;
    TxBuffers bufs(u.http() ? *u.http() : kNoHttp, u.tls(), u.dns(), u.smtp(), u.ssh(), u.sip(), u.ftp(), inst, &t);
    bufs.ftpd = u.ftp_data();
    bufs.win_buf = win_buf;
    bufs.win = win;
    for (int e = 0; e < 2; ++e) {
      const int ep = (e == 0) == (u.client_lo != 0) ? 0 : 1;  // key endpoint of the client (e 0), the server (e 1)
      bufs.addr[e].assign(reinterpret_cast<const char*>(u.key.addr[ep]), u.key.family == 4 ? 4 : 16);
    }
    cand.assign(app_pf_->nofp.begin(), app_pf_->nofp.end());
    for (const uint16_t key : app_pf_->keys) {
      // A request update concerns signatures inspected on requests, whose patterns are on
      // request buffers.
      if (u.dir == 0 && key >= kBufCount) continue;
      // A mail's pass reads its own buffers only.
      if (u.smtp() && envelope_key(key) != (proto == 6)) continue;
      const std::string* b = bufs.get(key);
      if (!b || b->empty()) continue;
      const AppPrefilter::KeyDb& kd = app_pf_->by_key[key];
      if (bufs.windowed(key) && !derived_buf(uint8_t(key % kBufCount))) {
        // The update's own body: scanned as it grows (from where a pattern ending in the new
        // bytes can start), each signature's hit kept with the end of the last scan that found
        // it (the database reports a pattern's first occurrence in a scan only, so a later one
        // may end anywhere up to the scan's end); those whose scan ended in the window are
        // candidates, the others cannot be again (windows only move on).
        const std::string& body = u.dir ? u.http()->response_body : u.http()->request_body;
        AppTx::WindowScan& ws = t.window_scans[key];
        if (body.size() > ws.size) {
          const size_t from = ws.size + 1 > kd.max_len ? ws.size + 1 - kd.max_len : 0;
          hits.clear();
          hs_scan(kd.db, body.data() + from, unsigned(body.size() - from), 0, app_pf_->scratch[size_t(worker)],
                  on_app_match, &hits);
          for (const uint32_t id : hits)
            for (const uint32_t a : kd.pat_sigs[id]) {
              const auto it = std::find_if(ws.hits.begin(), ws.hits.end(), [&](const auto& x) { return x.first == a; });
              if (it == ws.hits.end()) ws.hits.emplace_back(a, body.size());
              else it->second = body.size();
            }
          ws.size = body.size();
        }
        std::erase_if(ws.hits, [&](const auto& x) { return x.second <= win.offset; });
        for (const auto& x : ws.hits) cand.push_back(x.first);
        continue;
      }
      // A buffer scanned before at the same size (a finished header, say) has the same hits. The
      // envelope's buffers are short and change per recipient, and a transformed window of a
      // body holds other bytes at every update, whatever its size: scanned every time.
      AppTx::Scan fresh;
      AppTx::Scan& sc = proto == 6 || bufs.windowed(key) ? fresh : t.scans[scan_base + key];
      if (sc.size != b->size()) {
        // Bodies only grow (appended as they are decoded), and so does a message once its headers
        // are done: a grown one is scanned from where a pattern ending in the new bytes can
        // start, and its hits join the earlier ones. Other buffers are scanned whole.
        const uint8_t base = uint8_t(key % kBufCount);
        const bool grows = sc.append_only && b->size() > sc.size;
        const size_t from = grows && sc.size + 1 > kd.max_len ? sc.size + 1 - kd.max_len : 0;
        if (!grows) sc.hits.clear();
        sc.size = b->size();
        const HttpTx* h = u.http();
        sc.append_only = base == kBufHttpResponseBody || base == kBufHttpRequestBody ||  // a mail's file too
                         (base == kBufPayload && h && (key >= kBufCount ? h->resp_headers_done : h->req_headers_done));
        hits.clear();
        if (hs_scan(kd.db, b->data() + from, unsigned(b->size() - from), 0, app_pf_->scratch[size_t(worker)], on_app_match,
                    &hits) == HS_SUCCESS)
          for (uint32_t id : hits) sc.hits.insert(sc.hits.end(), kd.pat_sigs[id].begin(), kd.pat_sigs[id].end());
        if (grows) {
          std::sort(sc.hits.begin(), sc.hits.end());
          sc.hits.erase(std::unique(sc.hits.begin(), sc.hits.end()), sc.hits.end());
        }
      }
      cand.insert(cand.end(), sc.hits.begin(), sc.hits.end());
    }
    std::sort(cand.begin(), cand.end());
    cand.erase(std::unique(cand.begin(), cand.end()), cand.end());
    // The sender of the data is the packet's source for the rule's header.
    const int client_ep = u.client_lo ? 0 : 1;
    const int src = u.dir ? 1 - client_ep : client_ep;
    FwPacket pk;
    pk.family = u.key.family;
    pk.addr[0] = addr_number(u.key.addr[src], u.key.family);
    pk.addr[1] = addr_number(u.key.addr[1 - src], u.key.family);
    pk.proto = u.key.proto;
    pk.has_ports = true;
    pk.port[0] = u.key.port[src];
    pk.port[1] = u.key.port[1 - src];
    for (uint32_t ai : cand) {
      const AppSig& a = app_sigs_[ai];
      // A signature alerts once per transaction and direction it inspects (Suricata keeps the
      // detection state of a transaction per direction): one without a flow direction can match
      // the request and the response.
      const uint32_t done_key = a.sig << 1 | (a.side == 2 ? u.dir : 0u);
      // A file signature once per file (the HTTP pass's and a mail's instances are its side's
      // files), as Suricata inspects on while more files may come (MATCH_MORE_FILES).
      const bool file_inst = a.per_file && (passes[pi].proto == 1 || passes[pi].proto == 4);
      const uint64_t file_key = uint64_t(a.sig) << 33 | uint64_t(u.dir) << 32 | uint64_t(inst);
      if (a.proto != proto || (a.side != 2 && a.side != u.dir) ||
          (file_inst ? t.matched_files.count(file_key) != 0 : t.matched.count(done_key) != 0))
        continue;
      // A signature without a multi-buffer reads the same bytes at every instance: the first decides.
      if (inst > passes[pi].first && !a.per_instance) continue;
      ++w.candidates;
      if (!sig_applies(host_view_, a.sig, pk, true, u.dir == 1, true, PacketFacts{})) continue;
      if (a.ssl_version) {
        // The inspected direction's version as Suricata's connection state holds it after the
        // hello (DetectSslVersionMatch): one it does not name matches neither way.
        const TlsTx* tl = u.tls();
        const uint16_t v = tl ? tl->version(u.dir) : 0;
        const int bit = v == 0x0002 ? 0 : v == 0x0300 ? 1 : v == 0x0301 ? 2 : v == 0x0302 ? 3 : v == 0x0303 ? 4
                        : v == 0x0304 || (v >> 8) == 0x7f ? 5 : -1;
        if (bit < 0 || (((a.ssl_version >> bit) & 1) != 0) == a.ssl_version_neg) continue;
      }
      if (a.tls_version_on) {
        // The inspected direction's hello (Suricata's DetectTlsVersionMatch).
        const TlsTx* tl = u.tls();
        uint16_t v = tl ? tl->version(u.dir) : 0;
        if (!a.tls_version_raw && (v >> 8) == 0x7f) v = 0x0304;  // the 1.3 drafts
        if (!tl || v != a.tls_version) continue;
      }
      if (a.tls_chain_len.kind || a.tls_notbefore.mode || a.tls_notafter.mode || a.tls_expiry) {
        // The inspected side's certificate (once it came): the validity keywords read the
        // client's to the server, the server's to the client; tls.cert_chain_len only the
        // server's chain (Suricata's detect-tls-cert-validity.c, detect-tls-certs.c).
        const TlsTx* tl = u.tls();
        if (!tl) continue;
        const TlsCert& cert = tl->cert[u.dir];
        if (!cert.present || (a.tls_chain_len.kind && u.dir != 1)) continue;
        if (a.tls_chain_len.kind && !det_cond_holds(a.tls_chain_len, uint32_t(cert.chain.size()))) continue;
        const auto date_holds = [&](const Signature::DateCond& c, int64_t v) {
          return c.mode == 0 || (cert.decoded && v != 0 &&
                                 (c.mode == 1   ? v == c.at
                                  : c.mode == 2 ? v <= c.at
                                  : c.mode == 3 ? v >= c.at
                                                : v >= c.at && v <= c.to));
        };
        if (!date_holds(a.tls_notbefore, cert.not_before) || !date_holds(a.tls_notafter, cert.not_after)) continue;
        // Seconds, as Suricata compares them; an update without its packet's time (a flow's end) decides nothing.
        if (a.tls_expiry && (!cert.decoded || cert.not_after == 0 || u.ts_ns == 0 ||
                             (int64_t(u.ts_ns / 1000000000u) > cert.not_after) != (a.tls_expiry == 1)))
          continue;
      }
      const bool rrtype = a.dns_rrtype.c.mode != kUintNone;
      if (const DnsTx* dn = u.dns(); dn && (a.dns_opcode.kind || a.dns_rcode.kind || rrtype)) {
        // The inspected direction's message (Suricata's dns_opcode_match, dns_rcode_match,
        // dns_rrtype_match: a request's questions' types, a response's answers', as a
        // multi-integer: any of them by default, all, or the one at an index).
        if (!det_cond_holds(a.dns_opcode, dn->msg.opcode()) || !det_cond_holds(a.dns_rcode, dn->msg.rcode())) continue;
        if (rrtype) {
          thread_local std::vector<uint16_t> types;
          types.clear();
          if (dn->request)
            for (const DnsQuery& q : dn->msg.queries) types.push_back(q.rrtype);
          else
            for (const DnsRecord& r : dn->msg.answers) types.push_back(r.rrtype);
          if (!uint_array_holds(a.dns_rrtype, types.data(), uint32_t(types.size()))) continue;
        }
      }
      if (a.ftp_dynamic_port.kind || a.ftp_mode || a.ftp_reply_received) {
        // The transaction's data port, mode and reply (Suricata's detect-ftp-dynamic-port.c,
        // detect-ftp-mode.c: a port must be known; ftp.reply_received: to the client).
        const FtpTx* f = u.ftp();
        if (!f || !f->has_command()) continue;
        if ((a.ftp_dynamic_port.kind || a.ftp_mode) && !f->dynamic_port) continue;
        if (a.ftp_dynamic_port.kind && !det_cond_holds(a.ftp_dynamic_port, f->dynamic_port)) continue;
        if (a.ftp_mode && f->active != (a.ftp_mode == 1)) continue;
        if (a.ftp_reply_received && (u.dir != 1 || f->done != (a.ftp_reply_received == 1))) continue;
      }
      if (a.ftp_bounce) {
        // A PORT request naming an IPv4 address other than the client's (to the server).
        const FtpTx* f = u.ftp();
        if (!f || u.dir != 0 || f->command != "PORT" || !f->port_ip_ok || bufs.addr[0].size() != 4 ||
            std::memcmp(bufs.addr[0].data(), f->port_ip, 4) == 0)
          continue;
      }
      if (!a.ftpdata_command.empty()) {
        // The data connection's command (either direction: Suricata's transaction is complete the
        // other way from the start).
        const FtpDataTx* fd = u.ftp_data();
        if (!fd || fd->command != a.ftpdata_command) continue;
      }
      if (a.ftp_events) {
        const FtpTx* f = u.ftp();
        if (!f || (f->events & a.ftp_events) != a.ftp_events) continue;
      }
      if (a.smtp_events) {
        const SmtpTx* m = u.smtp();
        if (!m || (m->events & a.smtp_events) != a.smtp_events) continue;
      }
      if (a.ssh_events) {
        const SshTx* sh = u.ssh();
        if (!sh || (sh->events & a.ssh_events) != a.ssh_events) continue;
      }
      if (a.tls_events) {
        // The connection's decoder events (either direction raised them, as Suricata's one tx).
        const TlsTx* tl = u.tls();
        if (!tl || (tl->events & a.tls_events) != a.tls_events) continue;
      }
      if (a.dns_events) {
        const DnsTx* dn = u.dns();
        if (!dn || (dn->events & a.dns_events) != a.dns_events) continue;
      }
      if (a.http_events) {
        const HttpTx* h = u.http();
        if (!h || (h->events & a.http_events) != a.http_events) continue;
      }
      if (a.http2_events) {
        const HttpTx* h = u.http();
        if (!h || (h->h2_events & a.http2_events) != a.http2_events) continue;
      }
      if (!a.http2_conds.empty()) {
        // The inspected side's frames (Suricata's frames_ts / frames_tc), complete when the side
        // ended.
        const HttpTx* h = u.http();
        if (!h || !h->http2) continue;
        const bool complete = u.dir == 0 ? h->req_done : h->resp_done;
        if (!std::all_of(a.http2_conds.begin(), a.http2_conds.end(),
                         [&](const Http2Cond& c) { return http2_cond_holds(c, h->h2_frames[u.dir], complete); }))
          continue;
      }
      if (a.http_version && (u.proto == AppProto::http2) != (a.http_version == 2)) continue;
      if (a.file_hashes || a.filesize.mode != kUintNone) {
        // The instance's file of the side inspected.
        const std::vector<MimeFile>* fs = files_of(u.http(), u.smtp(), u.dir, u.ftp_data());
        if (!fs || inst >= fs->size()) continue;
        const MimeFile& f = (*fs)[inst];
        if (a.file_hashes && !file_hashes_hold(*a.file_hashes, f)) continue;
        // A size is compared once the file closed or was truncated (Suricata's FILE_SIG_NEED_SIZE).
        if (a.filesize.mode != kUintNone && (f.open() || !uint_cond_holds(a.filesize, f.size))) continue;
      }
      if (a.urilen.kind) {
        const std::string* uri = bufs.get(a.urilen_raw ? kBufHttpUriRaw : kBufHttpUri);
        if (!uri || !det_cond_holds(a.urilen, uri->size())) continue;
      }
      bool all = true;
      // A buffer key of the inspected side (an either-side buffer takes the update's direction).
      const auto side_key = [&](uint16_t key, bool either) {
        return either ? uint16_t(key % kBufCount + u.dir * kBufCount) : key;
      };
      // Instance j's buffers (multi_any: a multi-buffer matched at any of its own instances).
      std::optional<TxBuffers> other;
      const auto instance_bufs = [&](size_t j) -> TxBuffers& {
        other.emplace(u.http() ? *u.http() : kNoHttp, u.tls(), u.dns(), u.smtp(), u.ssh(), u.sip(), u.ftp(), j, &t);
        other->ftpd = u.ftp_data();
        other->addr[0] = bufs.addr[0];
        other->addr[1] = bufs.addr[1];
        other->win_buf = win_buf;
        other->win = win;
        return *other;
      };
      // absent (Suricata 8): a buffer the transaction does not have (none, or empty) and will not
      // have (buffer_final) satisfies its list; `absent` alone fails on one
      // it has, `absent: or_else` goes on to the list's other options.
      uint16_t absent_keys[4];
      size_t n_absent = 0;
      for (const AppSig::Absent& z : a.absent) {
        const uint16_t zk = side_key(z.key, z.either);
        const std::string* b = bufs.get(zk);
        if (bufs.windowed(zk) ? bufs.body_present(zk) : b && !b->empty()) {
          if (z.or_else) continue;
          all = false;
          break;
        }
        if (!buffer_final(u, zk)) {
          all = false;  // not yet: it may still come
          break;
        }
        if (n_absent < std::size(absent_keys)) absent_keys[n_absent++] = zk;
      }
      const auto satisfied = [&](uint16_t key) {
        return std::find(absent_keys, absent_keys + n_absent, key) != absent_keys + n_absent;
      };
      for (const AppSig::Size& z : a.bsize) {
        if (!all) break;
        const uint16_t zk = side_key(z.key, z.either);
        if (satisfied(zk)) continue;
        if (a.multi_any && instance_buf(uint8_t(zk % kBufCount))) {
          // A multi-buffer's bsize: checked at the instance its contents match (below); without
          // contents, some instance must hold it.
          const bool with_part =
              std::any_of(a.parts.begin(), a.parts.end(), [&](const AppPart& p) { return side_key(p.key, p.either) == zk; });
          if (with_part) continue;
          bool any = false;
          for (size_t j = passes[pi].first; j < passes[pi].n && !any; ++j) {
            TxBuffers& tb = instance_bufs(j);
            const std::string* b = tb.get(zk);
            any = b && det_cond_holds(z.cond, b->size() + tb.base_of(zk));
          }
          if (!any) {
            all = false;
            break;
          }
          continue;
        }
        const std::string* b = bufs.get(zk);
        if (!b || !det_cond_holds(z.cond, b->size() + bufs.base_of(zk))) {
          all = false;
          break;
        }
      }
      // JSON datasets an isset matches on the way leave their objects for alert.context.
      DatasetContexts& dctx = dataset_contexts();
      dctx.active = true;
      dctx.hits.clear();
      // pcre captures: each pcre's groups from its match on the path that matched.
      PcreCaptureRecorder& caps = pcre_capture_recorder();
      if (a.captures) caps.begin();
      for (const AppPart& p : a.parts) {
        if (!all) break;
        const uint16_t key = side_key(p.key, p.either);
        if (satisfied(key)) continue;
        // Several multi-buffers: each matches at any of its own instances, as Suricata's.
        const bool any_instance = a.multi_any && instance_buf(uint8_t(key % kBufCount));
        const auto holds = [&](TxBuffers& tb) {
          const std::string* b = tb.get(key);
          if (!b) return false;
          if (any_instance)  // its bsize holds at the instance its contents match
            for (const AppSig::Size& z : a.bsize)
              if (side_key(z.key, z.either) == key && !det_cond_holds(z.cond, b->size() + tb.base_of(key))) return false;
          return detect_inspect(host_view_, p.d, reinterpret_cast<const uint8_t*>(b->data()), uint32_t(b->size()), 0,
                                kInspectAnywhere, tb.base_of(key)) == kInspectMatch;
        };
        if (any_instance) {
          bool any = false;
          for (size_t j = passes[pi].first; j < passes[pi].n && !any; ++j) any = holds(instance_bufs(j));
          all = any;
        } else {
          all = holds(bufs);
        }
      }
      dctx.active = false;
      std::vector<CapturedVar> captured;
      if (a.captures) captured = caps.take();
      if (!all) continue;
      if (file_inst) t.matched_files.insert(file_key);
      else t.matched.insert(done_key);
      ++w.matches;
      // filestore on an HTTP transaction: its file of this direction is kept past the body limit,
      // up to the file store depth, from the next bytes on (Suricata's HTP_STREAM_DEPTH_SET; the
      // parser reads the flag when the flow's next data comes, after this update).
      if (set_.sigs[a.sig].filestore)
        if (HttpTx* h = u.http()) h->file_depth_set[u.dir] = true;
      // tx_id, the transaction's object (unless metadata.app-layer is off) and app_proto.
      const char* proto = u.tls() ? "tls" : u.dns() ? "dns" : u.smtp() ? "smtp" : u.ssh() ? "ssh" : u.sip() ? "sip" : u.ftp() ? "ftp"
                          : u.ftp_data() ? "ftp-data" : u.proto == AppProto::http2 ? "http2" : "http";
      std::string obj;
      if (alert_meta_.app_layer)
        obj = "," + (u.tls()    ? eve_tls_object(*u.tls())
                     : u.dns()  ? eve_dns_object(*u.dns(), false)
                     : u.smtp() ? eve_smtp_objects(*u.smtp())
                     : u.ssh()  ? eve_ssh_object(*u.ssh())
                     : u.sip()  ? eve_sip_object(*u.sip())
                     : u.ftp()  ? eve_ftp_object(*u.ftp())
                     : u.ftp_data() ? eve_ftp_data_object(*u.ftp_data())
                                : eve_http_object(*u.http()));
      // The files of the transaction in the alerted packet's direction (Suricata's AlertAddFiles,
      // written with the rule metadata).
      // A file signature's alert lists the files from the one it matched on: the earlier ones were
      // complete (and, in Suricata, logged and pruned) before it.
      if (alert_meta_.rule_metadata) {
        const std::vector<MimeFile>* fs = files_of(u.http(), u.smtp(), u.dir, u.ftp_data());
        const size_t from = file_inst && fs && inst < fs->size() ? inst : 0;
        if (fs && fs->size() > from) {
          obj += ",\"files\":[";
          for (size_t k = from; k < fs->size(); ++k) obj += (k > from ? "," : "") + eve_file_object((*fs)[k], t.id);
          obj += "]";
        }
      }
      std::string context;  // `"KEY":{...}` members, the first object of each key
      std::vector<std::string> keys;
      for (const auto& [k, o] : dctx.hits) {
        if (std::find(keys.begin(), keys.end(), k) != keys.end()) continue;
        keys.push_back(k);
        context += (context.empty() ? "\"" : ",\"") + json_escape(k) + "\":" + o;
      }
      // A frame signature's alert carries the frame (the first frame buffer the signature reads).
      std::string frame;
      if (const SipTx* si = u.sip())
        for (const AppPart& p : a.parts) {
          const uint8_t fb = base_buf(uint8_t(p.key % kBufCount));
          if (!sip_frame_buf(fb)) continue;
          const int k = sip_frame_kind(fb);
          size_t off, len;
          if (!sip_frame_span(*si, k, off, len)) break;
          EveFrame f;
          f.type = sip_frame_name(fb);
          f.id = si->frame_id + uint64_t(k);
          f.to_server = si->request;
          f.tcp = !si->udp;
          f.stream_offset = si->udp || si->stream_offset == kSipNoOffset ? kEveNoOffset : si->stream_offset + off;
          f.length = len;
          f.data = reinterpret_cast<const uint8_t*>(si->raw.data()) + std::min(off, si->raw.size());
          f.have = off < si->raw.size() ? si->raw.size() - off : 0;
          // Suricata's SIP parser ties every frame but a datagram's pdu to its transaction, by
          // the transaction's own number, which counts from 1 (EVE's tx_id from 0).
          if (k != 0 || !si->udp) f.tx_id = t.id + 1;
          frame = eve_frame_json(f);
          break;
        }
      // Suricata alerts once per transaction a signature matched: several on one packet (pipelined
      // requests, messages in one segment) are several alerts, each with its tx_id (at most 256;
      // packet-alert-max bounds them anyway).
      uint8_t seq = 0;
      while (seq < 255 && w.alerts.count({u.flow_id, u.packet, a.sig, seq})) ++seq;
      w.alerts[{u.flow_id, u.packet, a.sig, seq}] =
          AppAlertText{",\"tx_id\":" + std::to_string(t.id) + obj + ",\"app_proto\":\"" + proto + "\"", context, frame,
                       xff_mode_ && u.http() ? xff_address(*u.http(), xff_header_, xff_forward_) : std::string(),
                       u.dir == 1, std::move(captured)};
      ModuleEvent ev{u.flow_id, u.packet, (a.sig << 2) | 2u, 0, kMatch, u.dir};
      ev.seq = seq;
      out.push_back(ev);
    }
    }
    }
  }
}

}  // namespace gaspp
