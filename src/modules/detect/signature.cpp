// modules/detect/signature.cpp — the signature parser (signature.hpp).
#include "modules/detect/signature.hpp"

#include "applayer/http1.hpp"
#include "applayer/http2.hpp"
#include "applayer/smtp.hpp"
#include "applayer/ssh.hpp"
#include "modules/detect/http2_cond.hpp"
#include "modules/detect/dataset.hpp"
#include "modules/detect/tag.hpp"
#include "modules/detect/text.hpp"
#include "modules/detect/detect_tables.hpp"
#include "modules/detect/transform.hpp"
#include "applayer/dns.hpp"
#include "applayer/ftp.hpp"
#include "applayer/tls.hpp"
#include "gaspp/fields.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <ctime>
#include <pcre2.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <strings.h>

namespace gaspp {
namespace {

std::vector<std::string> split_commas(const std::string& v) {
  std::vector<std::string> out;
  std::stringstream ss(v);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(trim(item));
  return out;
}

bool parse_int(const std::string& s, int64_t& v) {
  const std::string t = trim(s);
  if (t.empty()) return false;
  size_t i = 0;
  bool neg = false;
  if (t[0] == '-' || t[0] == '+') {
    neg = t[0] == '-';
    i = 1;
  }
  if (i >= t.size()) return false;
  int base = 10;
  if (t.size() > i + 2 && t[i] == '0' && (t[i + 1] == 'x' || t[i + 1] == 'X')) {
    base = 16;
    i += 2;
  }
  uint64_t x = 0;
  for (; i < t.size(); ++i) {
    const char c = char(std::tolower(static_cast<unsigned char>(t[i])));
    int d = -1;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (base == 16 && c >= 'a' && c <= 'f') d = c - 'a' + 10;
    if (d < 0) return false;
    if (x > (UINT64_MAX - uint64_t(d)) / uint64_t(base)) return false;
    x = x * uint64_t(base) + uint64_t(d);
  }
  v = neg ? -int64_t(x) : int64_t(x);
  return true;
}

// A number, or the name of a byte_extract variable of this rule: sets num or var.
bool num_or_var(const std::string& s, const Signature& sig, int32_t& num, int8_t& var, std::string& why,
                int64_t lo, int64_t hi) {
  int64_t v;
  if (parse_int(s, v)) {
    if (v < lo || v > hi) {
      why = "value " + s + " out of range";
      return false;
    }
    num = int32_t(v);
    var = -1;
    return true;
  }
  const std::string t = trim(s);
  for (size_t k = 0; k < sig.vars.size(); ++k)
    if (sig.vars[k] == t) {
      var = int8_t(k);
      num = 0;
      return true;
    }
  why = "'" + t + "' is neither a number nor a byte_extract variable";
  return false;
}

bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

// Keywords of the application layer (the next stage of the engine): rules with them are counted
// apart.
bool app_layer_keyword(const std::string& k) {
  static const char* const kPrefixes[] = {"http", "file", "dns", "tls", "ja3", "ja4", "ssh", "smb", "dcerpc", "krb5",
                                          "snmp", "sip", "rfb", "mqtt", "modbus", "dnp3", "enip", "cip", "ike",
                                          "quic", "nfs", "ftp", "smtp", "imap", "pop3", "x509", "ldap", "websocket",
                                          "email", "sdp", "rdp", "pgsql", "dhcp", "ntp", "telnet", "tftp", "mdns",
                                          "uri", "app-layer", "base64", "dce_", "cert", "bittorrent"};
  for (const char* p : kPrefixes)
    if (starts_with(k, p)) return true;
  return k == "urilen" || k == "uricontent" || k == "filename" || k == "fileext" || k == "filemagic" ||
         k == "filestore" || k == "filesize" || k == "filemd5" || k == "filesha1" || k == "filesha256" ||
         k == "luajit" || k == "lua";
}

struct BufName {
  const char* name;
  uint8_t buf;
};
// Sticky buffers: the options after them inspect the buffer.
const BufName kStickyBuffers[] = {
    {"http.uri", kBufHttpUri}, {"http.uri.normalized", kBufHttpUri}, {"http.uri.raw", kBufHttpUriRaw}, {"http.method", kBufHttpMethod},
    {"http.protocol", kBufHttpProtocol}, {"http_protocol", kBufHttpProtocol},
    {"http.request_line", kBufHttpRequestLine}, {"http_request_line", kBufHttpRequestLine},
    {"http.header", kBufHttpHeader}, {"http.header.raw", kBufHttpHeaderRaw}, {"http.host", kBufHttpHost},
    {"http.host.raw", kBufHttpHostRaw}, {"http.user_agent", kBufHttpUserAgent}, {"http.cookie", kBufHttpCookie},
    {"http.content_type", kBufHttpContentType}, {"http_content_type", kBufHttpContentType},
    {"http.content_len", kBufHttpContentLen}, {"http_content_len", kBufHttpContentLen},
    {"http.request_body", kBufHttpRequestBody}, {"http.stat_code", kBufHttpStatCode},
    {"http.stat_msg", kBufHttpStatMsg}, {"http.response_line", kBufHttpResponseLine},
    {"http_response_line", kBufHttpResponseLine}, {"http.response_body", kBufHttpResponseBody},
    {"file_data", kBufHttpResponseBody}, {"file.data", kBufHttpResponseBody}, {"http.start", kBufHttpStart},
    {"file.name", kBufFileName}, {"file_name", kBufFileName},
    {"http_start", kBufHttpStart}, {"http.header_names", kBufHttpHeaderNames},
    {"http_header_names", kBufHttpHeaderNames}, {"http.server", kBufHttpServer}, {"http_server", kBufHttpServer},
    {"http.location", kBufHttpLocation}, {"http_location", kBufHttpLocation}, {"http.referer", kBufHttpReferer},
    {"http_referer", kBufHttpReferer}, {"http.accept", kBufHttpAccept}, {"http_accept", kBufHttpAccept},
    {"http.accept_enc", kBufHttpAcceptEnc}, {"http_accept_enc", kBufHttpAcceptEnc},
    {"http.accept_lang", kBufHttpAcceptLang}, {"http_accept_lang", kBufHttpAcceptLang},
    {"http.connection", kBufHttpConnection}, {"http_connection", kBufHttpConnection},
    {"http.request_header", kBufHttpRequestHeader}, {"http.response_header", kBufHttpResponseHeader},
    {"http2.header", kBufHttpRequestHeader},  // Suricata 7's name of http.request_header
    {"http2.header_name", kBufHttp2HeaderName},
    {"tls.sni", kBufTlsSni}, {"tls_sni", kBufTlsSni}, {"dns.query", kBufDnsQuery}, {"dns_query", kBufDnsQuery},
    {"dns.queries.rrname", kBufDnsQueriesRrname}, {"dns.answers.rrname", kBufDnsAnswersRrname},
    {"dns.answer.name", kBufDnsAnswersRrname}, {"dns.authorities.rrname", kBufDnsAuthoritiesRrname},
    {"dns.additionals.rrname", kBufDnsAdditionalsRrname}, {"dns.response.rrname", kBufDnsResponseRrname},
    {"tls.cert_subject", kBufTlsCertSubject}, {"tls_cert_subject", kBufTlsCertSubject},
    {"tls.cert_issuer", kBufTlsCertIssuer}, {"tls_cert_issuer", kBufTlsCertIssuer},
    {"tls.cert_serial", kBufTlsCertSerial}, {"tls_cert_serial", kBufTlsCertSerial},
    {"tls.cert_fingerprint", kBufTlsCertFingerprint}, {"tls_cert_fingerprint", kBufTlsCertFingerprint},
    {"tls.certs", kBufTlsCerts}, {"tls.subjectaltname", kBufTlsSubjectAltName}, {"tls.random", kBufTlsRandom},
    {"tls.random_time", kBufTlsRandomTime}, {"tls.random_bytes", kBufTlsRandomBytes}, {"tls.alpn", kBufTlsAlpn},
    {"ja3.hash", kBufJa3Hash}, {"ja3_hash", kBufJa3Hash},
    {"ja3.string", kBufJa3String}, {"ja3_string", kBufJa3String}, {"ja3s.hash", kBufJa3sHash}, {"ja3s.string", kBufJa3sString},
    {"ssh.proto", kBufSshProto}, {"ssh_proto", kBufSshProto}, {"ssh.software", kBufSshSoftware},
    {"ssh.hassh", kBufSshHassh}, {"ssh.hassh.string", kBufSshHasshString}, {"ssh.hassh.server", kBufSshHasshServer},
    {"ssh.hassh.server.string", kBufSshHasshServerString},
    {"ssh_software", kBufSshSoftware}, {"smtp.helo", kBufSmtpHelo}, {"smtp.mail_from", kBufSmtpMailFrom},
    {"smtp.rcpt_to", kBufSmtpRcptTo}, {"email.from", kBufEmailFrom}, {"email.subject", kBufEmailSubject},
    {"email.to", kBufEmailTo}, {"email.cc", kBufEmailCc}, {"email.date", kBufEmailDate},
    {"email.message_id", kBufEmailMessageId}, {"email.x_mailer", kBufEmailXMailer},
    {"email.received", kBufEmailReceived}, {"email.url", kBufEmailUrl}, {"email.body_md5", kBufEmailBodyMd5},
    {"sip.method", kBufSipMethod}, {"sip.uri", kBufSipUri}, {"sip.request_line", kBufSipRequestLine},
    {"sip.stat_code", kBufSipStatCode}, {"sip.stat_msg", kBufSipStatMsg}, {"sip.response_line", kBufSipResponseLine},
    {"sip.protocol", kBufSipProtocol}, {"sip.from", kBufSipFrom}, {"sip.to", kBufSipTo}, {"sip.via", kBufSipVia},
    {"sip.user_agent", kBufSipUserAgent}, {"sip.ua", kBufSipUserAgent}, {"sip.content_type", kBufSipContentType},
    {"sip.content_length", kBufSipContentLength},
    {"sdp.origin", kBufSdpOrigin}, {"sdp.session_name", kBufSdpSessionName}, {"sdp.session_info", kBufSdpSessionInfo},
    {"sdp.uri", kBufSdpUri}, {"sdp.email", kBufSdpEmail}, {"sdp.phone_number", kBufSdpPhone},
    {"sdp.connection_data", kBufSdpConnection}, {"sdp.timezone", kBufSdpTimezone}, {"sdp.encryption_key", kBufSdpKey},
    {"sdp.bandwidth", kBufSdpBandwidth}, {"sdp.time", kBufSdpTime}, {"sdp.repeat_time", kBufSdpRepeatTime},
    {"sdp.attribute", kBufSdpAttribute}, {"sdp.media.media", kBufSdpMedia}, {"sdp.media.media_info", kBufSdpMediaInfo},
    {"sdp.media.connection_data", kBufSdpMediaConnection}, {"sdp.media.encryption_key", kBufSdpMediaKey},
    {"ftp.command", kBufFtpCommand}, {"ftp.command_data", kBufFtpCommandData}, {"ftp.reply", kBufFtpReply},
    {"ftp.completion_code", kBufFtpCompletionCode},
};
// The packet's header buffers (sticky, not the application layer's).
const BufName kHeaderBuffers[] = {
    {"ipv4.hdr", kBufIpv4Hdr}, {"ipv6.hdr", kBufIpv6Hdr}, {"tcp.hdr", kBufTcpHdr},
    {"udp.hdr", kBufUdpHdr},   {"icmpv4.hdr", kBufIcmpv4Hdr}, {"icmpv6.hdr", kBufIcmpv6Hdr},
    {"ip.src", kBufIpSrc},     {"ip.dst", kBufIpDst},
};
// Content modifiers: the content right before them inspects the buffer.
const BufName kContentModifiers[] = {
    {"http_uri", kBufHttpUri}, {"http_raw_uri", kBufHttpUriRaw}, {"http_method", kBufHttpMethod},
    {"http_header", kBufHttpHeader}, {"http_raw_header", kBufHttpHeaderRaw}, {"http_cookie", kBufHttpCookie},
    {"http_user_agent", kBufHttpUserAgent}, {"http_host", kBufHttpHost}, {"http_raw_host", kBufHttpHostRaw},
    {"http_client_body", kBufHttpRequestBody}, {"http_server_body", kBufHttpResponseBody},
    {"http_stat_code", kBufHttpStatCode}, {"http_stat_msg", kBufHttpStatMsg},
};

// The dotprefix variant of a buffer; kBufPayload: the transform is not supported on it.
uint8_t dotprefix_buf(uint8_t b) {
  switch (b) {
    case kBufDnsQuery: return kBufDnsQueryDot;
    case kBufTlsSni: return kBufTlsSniDot;
    case kBufHttpHost: return kBufHttpHostDot;
    default: return kBufPayload;
  }
}

int find_buf(const BufName* t, size_t n, const std::string& k) {
  for (size_t i = 0; i < n; ++i)
    if (k == t[i].name) return t[i].buf;
  return -1;
}

// Whether parse_signature reads keyword k (for `requires: keyword K`): the sticky buffers, the
// content modifiers, the transforms and the options of its loop. Known keywords whose every use
// is skipped (tag, ...) are not listed: a rule that requires them would not load.
bool signature_keyword_known(const std::string& k, const RuleVars& vars) {
  if (std::find(vars.keywords_off.begin(), vars.keywords_off.end(), k) != vars.keywords_off.end()) return false;
  static const char* const kOptions[] = {
      "content", "uricontent", "nocase", "depth", "offset", "distance", "within", "startswith", "endswith",
      "fast_pattern", "rawbytes", "pcre", "isdataat", "byte_test", "byte_jump", "byte_extract", "byte_math", "dataset", "datarep", "iprep", "tag", "pkt_data",
      "base64_decode", "base64_data", "dsize", "itype", "icode", "ttl", "tcp.mss", "ip_proto", "seq", "ack",
      "window", "tcp.seq", "tcp.ack", "tcp.window", "decode-event", "icmp_id", "icmp_seq", "ipopts", "flow.pkts", "flow.bytes", "flow.pkts_toserver",
      "flow.pkts_toclient", "flow.bytes_toserver", "flow.bytes_toclient", "stream_size", "vlan.id", "vlan.layers", "flow.age", "ipv4-csum", "tcpv4-csum", "tcpv6-csum",
      "udpv4-csum", "udpv6-csum", "icmpv4-csum", "icmpv6-csum", "flags", "tcp.flags", "flow", "flowbits", "xbits", "hostbits", "app-layer-event", "prefilter",
      "flowint", "noalert", "alert", "bsize", "absent", "tls.version", "dns.opcode", "dns.rcode", "dns.rrtype", "ftp.dynamic_port", "ftp.mode", "ftp.reply_received", "ftpbounce", "urilen", "requires",
      "tls.subject", "tls.issuerdn", "tls.fingerprint", "tls.cert_chain_len", "tls_cert_notbefore", "tls_cert_notafter",
      "tls_cert_expired", "tls_cert_valid", "ssl_version", "filename", "fileext", "filemd5", "filesha1", "filesha256",
      "filesize", "filestore"};
  if (name_keyword(k) || find_buf(kStickyBuffers, std::size(kStickyBuffers), k) >= 0 ||
      find_buf(kHeaderBuffers, std::size(kHeaderBuffers), k) >= 0 ||
      find_buf(kContentModifiers, std::size(kContentModifiers), k) >= 0 ||
      std::any_of(std::begin(kOptions), std::end(kOptions), [&](const char* o) { return k == o; }))
    return true;
  Transform t;
  std::string why;
  return parse_transform(k, "", t, why) && !starts_with(why, "skip:");
}

// The buffer of an option that names none: the sticky buffer in force, or, for a relative
// option without one, the buffer of the content or pcre it is relative to (Suricata attaches it to
// that option's list, so `content:"x"; http_uri; isdataat:1,relative;` inspects the URI).
uint8_t relative_buf(const Signature& s, const SigOp& op, uint8_t cur_buf) {
  if (cur_buf != kBufPayload || !op.relative) return cur_buf;
  for (auto it = s.ops.rbegin(); it != s.ops.rend(); ++it)
    if (it->type == SigOpType::content || it->type == SigOpType::pcre) return it->buf;
  return cur_buf;
}

SigOp* last_content(Signature& s) {
  for (auto it = s.ops.rbegin(); it != s.ops.rend(); ++it)
    if (it->type == SigOpType::content) return &*it;
  return nullptr;
}

// base for byte_* string forms
bool parse_base(const std::string& t, uint8_t& base) {
  if (t == "hex") base = 16;
  else if (t == "dec") base = 10;
  else if (t == "oct") base = 8;
  else return false;
  return true;
}

std::string parse_byte_op(const std::string& k, const std::string& v, Signature& sig, SigOp& op) {
  std::vector<std::string> a = split_commas(v);
  std::string why;
  const bool test = k == "byte_test", jump = k == "byte_jump", extract = k == "byte_extract";
  op.type = test ? SigOpType::byte_test : jump ? SigOpType::byte_jump : SigOpType::byte_extract;
  const size_t fixed = test ? 4 : extract ? 3 : 2;
  if (a.size() < fixed) return "error:" + k + " needs at least " + std::to_string(fixed) + " arguments";
  int64_t n;
  int8_t nvar = -1;
  int32_t nb = 0;
  if (!num_or_var(a[0], sig, nb, nvar, why, 0, 64)) return "error:" + k + " nbytes: " + why;
  // Suricata's byte_test and byte_jump take a byte_extract variable as the count (checked where
  // it is read: more than 8 bytes of binary data, or 23 characters, is no match).
  if (nvar >= 0 && extract) return "error:byte_extract: the byte count is a number";
  op.nbytes = uint8_t(nb);
  op.nbytes_var = nvar;
  size_t i = 1;
  if (test) {
    std::string o = a[1];
    if (!o.empty() && o[0] == '!') {
      op.negated = true;
      o = trim(o.substr(1));
    }
    if (o == "<") op.cmp = kCmpLt;
    else if (o == ">") op.cmp = kCmpGt;
    else if (o == "=") op.cmp = kCmpEq;
    else if (o == "&") op.cmp = kCmpAnd;
    else if (o == "^") op.cmp = kCmpXor;
    else if (o == "<=") op.cmp = kCmpLe;
    else if (o == ">=") op.cmp = kCmpGe;
    else return "error:byte_test: unknown operator '" + a[1] + "'";
    if (parse_int(a[2], n)) {
      op.value = uint64_t(n);
    } else {
      int32_t dummy;
      if (!num_or_var(a[2], sig, dummy, op.value_var, why, 0, 0)) return "error:byte_test value: " + why;
    }
    i = 3;
  }
  if (!num_or_var(a[i], sig, op.offset, op.offset_var, why, -65535, 65535)) return "error:" + k + " offset: " + why;
  ++i;
  if (extract) {
    const std::string name = a[i++];
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return "error:byte_extract: bad variable name '" + name + "'";
    if (sig.vars.size() >= 16) return "skip:more than 16 byte_extract variables";
    op.var = int8_t(sig.vars.size());
    sig.vars.push_back(name);
  }
  bool string = false;
  for (; i < a.size(); ++i) {
    const std::string& t = a[i];
    if (t == "relative") op.relative = true;
    else if (t == "big") op.little = false;
    else if (t == "little") op.little = true;
    else if (t == "string") string = true;
    else if (parse_base(t, op.base)) string = true;
    else if (t == "dce") return "skip:keyword " + k + " dce";
    else if (jump && t == "align") op.align = 4;
    else if (jump && t == "from_beginning") op.from_beginning = true;
    else if (jump && t == "from_end") op.from_end = true;
    else if (starts_with(t, "bitmask")) {
      if (!parse_int(trim(t.substr(7)), n) || n <= 0) return "error:" + k + ": bad bitmask '" + t + "'";
      op.has_mask = true;
      op.mask = uint64_t(n);
    } else if (starts_with(t, "multiplier")) {
      if (!parse_int(trim(t.substr(10)), n) || n <= 0 || n > 65535) return "error:" + k + ": bad multiplier '" + t + "'";
      op.multiplier = uint32_t(n);
    } else if (jump && starts_with(t, "post_offset")) {
      if (!parse_int(trim(t.substr(11)), n) || n < -65535 || n > 65535) return "error:byte_jump: bad post_offset '" + t + "'";
      op.post_offset = int32_t(n);
    } else if (extract && starts_with(t, "align")) {
      if (!parse_int(trim(t.substr(5)), n) || (n != 2 && n != 4)) return "error:byte_extract: align is 2 or 4, not '" + t + "'";
      op.align = uint32_t(n);
    } else {
      return "error:" + k + ": unknown argument '" + t + "'";
    }
  }
  if (string && op.base == 0) op.base = 10;
  // Suricata's byte_test and byte_jump take 0 bytes too (DetectBytetestValidateNbytes,
  // DetectBytejumpValidateNbytes): a binary read of nothing is 0 (byte_jump then moves by its
  // post_offset), and 0 characters never yield a number. byte_extract reads at least one.
  if (op.base == 0 && (op.nbytes < (extract ? 1 : 0) || op.nbytes > 8))
    return "error:" + k + ": nbytes must be " + (extract ? "1" : "0") + "..8 for binary data";
  if (op.base != 0 && op.nbytes > 23) return "error:" + k + ": nbytes must be 0..23 for a string";
  if (jump && op.from_beginning && op.from_end) return "error:byte_jump: from_beginning and from_end";
  return "";
}

// byte_math (Suricata's detect-bytemath.c and its Rust parser): `bytes N|VAR, offset N, oper
// + - * / << >>, rvalue N|VAR, result NAME` in any order, then endian big|little, string
// hex|dec|oct, relative, bitmask HEX (read as hex with or without 0x, as Suricata's); dce skips.
std::string parse_byte_math(const std::string& v, Signature& sig, SigOp& op) {
  op.type = SigOpType::byte_math;
  const std::vector<std::string> a = split_commas(v);
  if (a.size() < 5 || a.size() > 9) return "error:byte_math takes 5 to 9 arguments";
  std::string why, result;
  bool have_bytes = false, have_offset = false, have_oper = false, have_rvalue = false, have_endian = false;
  bool string = false;
  for (const std::string& t : a) {
    const size_t sp = t.find_first_of(" \t");
    const std::string name = t.substr(0, sp), val = sp == std::string::npos ? "" : trim(t.substr(sp));
    auto twice = [&](bool& seen) {
      const bool was = seen;
      seen = true;
      return was;
    };
    if (name == "bytes") {
      if (twice(have_bytes)) return "error:byte_math: bytes given twice";
      int32_t nb = 0;
      if (!num_or_var(val, sig, nb, op.nbytes_var, why, 1, 10)) return "error:byte_math bytes: " + why;
      op.nbytes = uint8_t(nb);
    } else if (name == "offset") {
      if (twice(have_offset)) return "error:byte_math: offset given twice";
      int64_t n;
      if (!parse_int(val, n) || n < -65535 || n > 65535) return "error:byte_math: bad offset '" + val + "'";
      op.offset = int32_t(n);
    } else if (name == "oper") {
      if (twice(have_oper)) return "error:byte_math: oper given twice";
      static const char* const kOps[] = {"+", "-", "*", "/", "<<", ">>"};
      const auto* it = std::find(std::begin(kOps), std::end(kOps), val);
      if (it == std::end(kOps)) return "error:byte_math: unknown oper '" + val + "'";
      op.cmp = uint8_t(it - std::begin(kOps));  // ByteMathOper
    } else if (name == "rvalue") {
      if (twice(have_rvalue)) return "error:byte_math: rvalue given twice";
      int64_t n;
      if (parse_int(val, n)) {
        if (n < 0 || n > int64_t(UINT32_MAX)) return "error:byte_math: rvalue out of range '" + val + "'";
        op.value = uint64_t(n);
      } else {
        int32_t dummy;
        if (!num_or_var(val, sig, dummy, op.value_var, why, 0, 0)) return "error:byte_math rvalue: " + why;
      }
    } else if (name == "result") {
      if (!result.empty()) return "error:byte_math: result given twice";
      if (val.empty() || std::isdigit(static_cast<unsigned char>(val[0]))) return "error:byte_math: bad result name '" + val + "'";
      result = val;
    } else if (name == "endian") {
      if (twice(have_endian)) return "error:byte_math: endianness given twice";
      if (val == "big") op.little = false;
      else if (val == "little") op.little = true;
      else return "error:byte_math: bad endian '" + val + "'";
    } else if (name == "dce") {
      return "skip:keyword byte_math dce";
    } else if (name == "string") {
      if (string) return "error:byte_math: string given twice";
      if (!parse_base(val, op.base)) return "error:byte_math: bad string base '" + val + "'";
      string = true;
    } else if (name == "relative") {
      if (op.relative) return "error:byte_math: relative given twice";
      op.relative = true;
    } else if (name == "bitmask") {
      if (op.has_mask) return "error:byte_math: bitmask given twice";
      std::string h = val;
      if (h.size() > 2 && h[0] == '0' && (h[1] == 'x' || h[1] == 'X')) h = h.substr(2);
      char* end = nullptr;
      const unsigned long long m = h.empty() ? 0 : std::strtoull(h.c_str(), &end, 16);
      if (h.empty() || *end || h.size() > 8) return "error:byte_math: bad bitmask '" + val + "'";
      op.has_mask = true;
      op.mask = m;
    } else {
      return "error:byte_math: unknown argument '" + name + "'";
    }
  }
  if (!have_bytes || !have_offset || !have_oper || !have_rvalue || result.empty())
    return "error:byte_math needs bytes, offset, oper, rvalue and result";
  // Shifts read at most 4 bytes (Suricata refuses more at load).
  if (op.cmp >= kMathShl && op.nbytes_var < 0 && op.nbytes > 4) return "error:byte_math: shifts take 1..4 bytes";
  if (sig.vars.size() >= 16) return "skip:more than 16 byte_extract variables";
  op.var = int8_t(sig.vars.size());
  sig.vars.push_back(result);
  return "";
}

std::string parse_pcre(const std::string& v, SigOp& op) {
  std::string t = trim(v);
  if (!t.empty() && t[0] == '!') {
    op.negated = true;
    t = trim(t.substr(1));
  }
  // Quoted as usual, or bare (`pcre:/x/i;`, which Suricata also reads).
  if (t.size() >= 2 && t.front() == '"' && t.back() == '"') t = t.substr(1, t.size() - 2);
  else if (t.empty() || t.front() != '/') return "error:pcre must be quoted";
  // Capture names after the flags (`"/uid=(\d+)/i, pkt:uid, flow:name"`), cut off where
  // Suricata's DetectPcreParse cuts them: at the first flow:, pkt: or alert: with a comma or space
  // before it. They name the variables the groups are stored in (pcre_capture.hpp); matching does
  // not depend on them.
  size_t cut = std::string::npos;
  std::string capture_list;
  for (const char* tag : {"flow:", "pkt:", "alert:"}) cut = std::min(cut, t.find(tag));
  if (cut != std::string::npos && cut > 1) {
    size_t e = cut;
    while (e > 0 && (t[e - 1] == ',' || t[e - 1] == ' ')) --e;
    if (e < cut) {
      capture_list = t.substr(cut);
      t = trim(t.substr(0, e));
    }
  }
  // Suricata unescapes \" and \; in the option value; the expression keeps its other escapes.
  std::string u;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '\\' && i + 1 < t.size() && (t[i + 1] == '"' || t[i + 1] == ';')) {
      u += t[++i];
      continue;
    }
    u += t[i];
  }
  if (u.empty() || u[0] != '/') return "error:pcre must start with '/'";
  const size_t end = u.find_last_of('/');
  if (end == 0) return "error:pcre has no closing '/'";
  op.bytes = u.substr(1, end - 1);
  for (char c : u.substr(end + 1)) {
    switch (c) {
      case 'i': op.pcre_options |= PCRE2_CASELESS; break;
      case 's': op.pcre_options |= PCRE2_DOTALL; break;
      case 'm': op.pcre_options |= PCRE2_MULTILINE; break;
      case 'x': op.pcre_options |= PCRE2_EXTENDED; break;
      case 'A': op.pcre_options |= PCRE2_ANCHORED; break;
      case 'E': op.pcre_options |= PCRE2_DOLLAR_ENDONLY; break;
      case 'G': op.pcre_options |= PCRE2_UNGREEDY; break;
      case 'R': op.relative = true; break;
      case 'O': case 'B': break;  // match limits; rawbytes
      case 'U': op.buf = kBufHttpUri; break;
      case 'I': op.buf = kBufHttpUriRaw; break;
      case 'M': op.buf = kBufHttpMethod; break;
      case 'H': op.buf = kBufHttpHeader; break;
      case 'D': op.buf = kBufHttpHeaderRaw; break;
      case 'C': op.buf = kBufHttpCookie; break;
      case 'V': op.buf = kBufHttpUserAgent; break;
      case 'W': op.buf = kBufHttpHost; break;
      case 'Z': op.buf = kBufHttpHostRaw; break;
      case 'P': op.buf = kBufHttpRequestBody; break;
      case 'Q': op.buf = kBufHttpResponseBody; break;
      case 'S': op.buf = kBufHttpStatCode; break;
      case 'Y': op.buf = kBufHttpStatMsg; break;
      case 'K': return std::string("app-layer:pcre /") + c;
      default: return std::string("error:unknown pcre flag '") + c + "'";
    }
  }
  return parse_pcre_captures(capture_list, op.bytes, op.captures);
}

// A date as Suricata's tls validity keywords read it (DateStringToEpoch): seconds since the epoch
// (digits, not four of them), or UTC YYYY, YYYY-MM, YYYY-MM-DD, then optionally [ T]HH, HH:MM or
// HH:MM:SS; the missing parts are their first values. false when it is none of these.
bool parse_cert_date(const std::string& text, int64_t& out) {
  const std::string t = trim(text);
  if (t.empty()) return false;
  if (t.find_first_not_of("0123456789") == std::string::npos && t.size() != 4) {
    if (t.size() > 12) return false;
    out = std::stoll(t);
    return true;
  }
  int y = 0, mo = 1, d = 1, h = 0, mi = 0, se = 0;
  size_t i = 0;
  auto num = [&](size_t digits, int& v) {
    if (i + digits > t.size()) return false;
    for (size_t k = 0; k < digits; ++k)
      if (!std::isdigit(static_cast<unsigned char>(t[i + k]))) return false;
    v = std::stoi(t.substr(i, digits));
    i += digits;
    return true;
  };
  if (!num(4, y)) return false;
  if (i < t.size() && (t[i] != '-' || (++i, !num(2, mo)))) return false;
  if (i < t.size() && (t[i] != '-' || (++i, !num(2, d)))) return false;
  if (i < t.size() && ((t[i] != ' ' && t[i] != 'T') || (++i, !num(2, h)))) return false;
  if (i < t.size() && (t[i] != ':' || (++i, !num(2, mi)))) return false;
  if (i < t.size() && (t[i] != ':' || (++i, !num(2, se)))) return false;
  if (i != t.size() || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60) return false;
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = se;
  out = int64_t(timegm(&tm));
  return true;
}

std::string parse_date_cond(const std::string& v, Signature::DateCond& c) {
  std::string t = trim(v);
  if (t.size() >= 2 && t.front() == '"' && t.back() == '"') t = trim(t.substr(1, t.size() - 2));
  if (const size_t r = t.find("<>"); r != std::string::npos) {
    if (!parse_cert_date(t.substr(0, r), c.at) || !parse_cert_date(t.substr(r + 2), c.to))
      return "'" + t + "' is not DATE<>DATE";
    if (c.to <= c.at) return "the range's end is not after its start";
    c.mode = 4;
    return "";
  }
  c.mode = 1;
  if (!t.empty() && (t[0] == '<' || t[0] == '>')) c.mode = t[0] == '<' ? 2 : 3, t.erase(0, 1);
  if (!parse_cert_date(t, c.at)) return "'" + t + "' is no date (YYYY[-MM[-DD[ HH[:MM[:SS]]]]] or seconds)";
  return "";
}

std::string parse_num_cond(const std::string& k, const std::string& v, uint32_t max, NumCond& c) {
  std::string t = trim(v);
  int64_t a, b;
  c.on = true;
  if (!t.empty() && t[0] == '!') {
    c.neg = true;
    t = trim(t.substr(1));
  }
  size_t r = t.find("<>");
  if (r == std::string::npos && t.size() > 1 && t.find('-', 1) != std::string::npos) r = t.find('-', 1);
  if (r != std::string::npos && r > 0) {
    const size_t w = t.compare(r, 2, "<>") == 0 ? 2 : 1;
    if (!parse_int(t.substr(0, r), a) || !parse_int(t.substr(r + w), b) || a < 0 || b > int64_t(max) || a >= b)
      return "error:bad " + k + " range '" + v + "'";
    c.range = true;
    c.lo = uint16_t(a);
    c.hi = uint16_t(b);
    return "";
  }
  c.cmp = kCmpEq;
  if (starts_with(t, "<=")) c.cmp = kCmpLe, t = t.substr(2);
  else if (starts_with(t, ">=")) c.cmp = kCmpGe, t = t.substr(2);
  else if (starts_with(t, "<")) c.cmp = kCmpLt, t = t.substr(1);
  else if (starts_with(t, ">")) c.cmp = kCmpGt, t = t.substr(1);
  else if (starts_with(t, "=")) t = t.substr(1);
  if (!parse_int(t, a) || a < 0 || a > int64_t(max)) return "error:bad " + k + " '" + v + "'";
  c.lo = uint16_t(a);
  return "";
}

// ip_proto:[!<>]N|NAME (Suricata's DetectIPProtoParse): the transport protocol's number or name.
std::string parse_ip_proto(const std::string& v, NumCond& c) {
  std::string t = trim(v);
  c = NumCond{};
  c.on = true;
  if (!t.empty() && (t[0] == '!' || t[0] == '<' || t[0] == '>')) {
    if (t[0] == '!') c.neg = true;
    else c.cmp = t[0] == '<' ? kCmpLt : kCmpGt;
    t = trim(t.substr(1));
  }
  if (!t.empty() && t.find_first_not_of("0123456789") == std::string::npos && t.size() <= 3 && std::stoul(t) <= 255) {
    c.lo = uint16_t(std::stoul(t));
    return "";
  }
  // Names as /etc/protocols has them (the common ones built in: the file is not everywhere).
  static const std::pair<const char*, uint8_t> kNames[] = {
      {"ip", 0},     {"icmp", 1},      {"igmp", 2},   {"ipencap", 4}, {"ipip", 4},  {"tcp", 6},   {"egp", 8},
      {"igp", 9},    {"udp", 17},      {"ipv6", 41},  {"ipv6-route", 43}, {"ipv6-frag", 44}, {"rsvp", 46},
      {"gre", 47},   {"esp", 50},      {"ah", 51},    {"ipv6-icmp", 58}, {"icmpv6", 58}, {"ipv6-nonxt", 59},
      {"ipv6-opts", 60}, {"eigrp", 88}, {"ospf", 89},  {"ospfigp", 89}, {"etherip", 97}, {"encap", 98},
      {"pim", 103},  {"ipcomp", 108},  {"vrrp", 112}, {"l2tp", 115},  {"isis", 124}, {"sctp", 132},
      {"fc", 133},   {"mobility-header", 135}, {"udplite", 136}, {"mpls-in-ip", 137}, {"hip", 139},
      {"shim6", 140}, {"wesp", 141},   {"rohc", 142}, {"ethernet", 143}};
  std::string lower;
  for (const char ch : t) lower += char(std::tolower(static_cast<unsigned char>(ch)));
  for (const auto& [name, num] : kNames)
    if (lower == name) {
      c.lo = num;
      return "";
    }
  return "error:ip_proto: '" + t + "' is neither a protocol number (0-255) nor a protocol name";
}

// A content keyword's value without its leading `!`, which negates op (content, uricontent,
// filename, fileext).
std::string negatable_content(const std::string& v, SigOp& op) {
  std::string t = trim(v);
  if (!t.empty() && t[0] == '!') {
    op.negated = true;
    t = trim(t.substr(1));
  }
  return t;
}

// decode-event:LAYER.NAME (engine-event is its old name). The events the decoder and the
// defragmenter raise (gaspp/fields.hpp) load; Suricata's others name layers or checks gaspp does
// not have, and a rule with one is skipped as such (it would never match); any other name is an
// error, as in Suricata.
std::string parse_decode_event(const std::string& v, uint8_t& out) {
  for (int k = 1; k < kDecodeEvents; ++k)
    if (v == decode_event_name(DecodeEvent(k))) {
      out = uint8_t(k);
      return "";
    }
  static const char* const kNotRaised[] = {
      "ipv4.opt_unknown", "ipv4.unknown_protocol", "ipv6.exthdr_dupl_ah", "ipv6.exthdr_dupl_eh",
      "ipv6.exthdr_ah_res_not_null", "icmpv4.unknown_type", "icmpv4.unknown_code", "icmpv4.ipv4_trunc_pkt",
      "icmpv4.ipv4_unknown_ver", "icmpv6.unknown_code", "icmpv6.ipv6_trunc_pkt", "icmpv6.ipv6_unknown_version",
      "icmpv6.mld_message_with_invalid_hl", "icmpv6.unassigned_type", "icmpv6.experimentation_type",
      "sll.pkt_too_small", "ethernet.pkt_too_small", "ethernet.unknown_ethertype", "ppp.pkt_too_small",
      "ppp.vju_pkt_too_small", "ppp.ip4_pkt_too_small", "ppp.ip6_pkt_too_small", "ppp.wrong_type",
      "ppp.unsup_proto", "pppoe.pkt_too_small", "pppoe.wrong_code", "pppoe.malformed_tags", "gre.version0_malformed_sre_hdr",
      "gre.version1_malformed_sre_hdr", "vlan.header_too_small", "vlan.unknown_type", "vlan.too_many_layers",
      "vntag.header_too_small", "vntag.unknown_type", "ieee8021ah.header_too_small", "etag.header_too_small",
      "etag.unknown_type", "ipraw.invalid_ip_version", "ipv6.ipv4_in_ipv6_too_small",
      "ipv6.ipv6_in_ipv6_too_small", "mpls.header_too_small", "mpls.pkt_too_small", "mpls.bad_label_router_alert",
      "mpls.bad_label_implicit_null", "mpls.bad_label_reserved", "mpls.unknown_payload_type", "ltnull.pkt_too_small",
      "ltnull.unsupported_type", "erspan.header_too_small", "erspan.unsupported_version",
      "erspan.too_many_vlan_layers", "dce.pkt_too_small", "chdlc.pkt_too_small", "too_many_layers",
      "afpacket.trunc_pkt", "igmp.pkt_too_small", "igmp.v3_pkt_too_small", "igmp.malformed",
      "ipv4.opt_pad_required", "ipv6.exthdr_zero_len_padn", "ipv6.unknown_next_header", "tcp.opt_invalid"};
  for (const char* n : kNotRaised)
    if (v == n) return "skip:decode-event " + v + " (gaspp does not raise it)";
  return "error:decode-event: unknown event '" + v + "'";
}

// flow.pkts:DIR,COND / flow.bytes:DIR,COND (DIR toserver, toclient, either, both) and the
// one-direction forms flow.pkts_toserver:COND ... (Suricata's detect/flow.rs).
std::string parse_flow_count(const std::string& k, const std::string& v, IntCond& ic) {
  ic = IntCond{};
  ic.key = k.rfind("flow.pkts", 0) == 0 ? kIcFlowPkts : kIcFlowBytes;
  std::string arg = trim(v);
  if (k.size() > 10 && (k.ends_with("_toserver") || k.ends_with("_toclient"))) {
    ic.dir = k.ends_with("_toserver") ? kIcToServer : kIcToClient;
  } else {
    const size_t comma = arg.find(',');
    const std::string dir = trim(arg.substr(0, comma));
    if (dir == "toserver") ic.dir = kIcToServer;
    else if (dir == "toclient") ic.dir = kIcToClient;
    else if (dir == "either") ic.dir = kIcEither;
    else if (dir == "both") ic.dir = kIcBoth;
    else return "error:" + k + ": direction '" + dir + "' is none of toserver, toclient, either, both";
    if (comma == std::string::npos) return "error:" + k + ": no value after the direction";
    arg = arg.substr(comma + 1);
  }
  const std::string r = parse_uint_cond(arg, ic.key == kIcFlowPkts ? 0xffffffffull : ~0ull, ic.c);
  return r.empty() ? "" : "error:" + k + ": " + r;
}

// flow.age:COND (Suricata's detect-flow-age.c: a u32 condition on the flow's age in seconds).
std::string parse_flow_age(const std::string& v, IntCond& ic) {
  ic = IntCond{};
  ic.key = kIcFlowAge;
  const std::string r = parse_uint_cond(trim(v), 0xffffffffull, ic.c);
  return r.empty() ? "" : "error:flow.age: " + r;
}

// The operator at the front of an integer condition (Suricata's detect_parse_uint_mode, longest
// first): its UintMode in `mode` and how many characters it took; 0 when there is none.
size_t uint_mode_prefix(const std::string& t, uint8_t& mode) {
  static const std::pair<const char*, uint8_t> kOps[] = {{">=", kUintGe}, {"<=", kUintLe}, {">", kUintGt}, {"<", kUintLt},
                                                         {"!=", kUintNe}, {"!", kUintNe},   {"=", kUintEq}};
  for (const auto& [name, m] : kOps)
    if (t.rfind(name, 0) == 0) {
      mode = m;
      return std::strlen(name);
    }
  return 0;
}

// stream_size:SIDE,OP,N (SIDE server, client, both, either; OP one of < <= > >= = != !;
// Suricata's detect/stream_size.rs).
std::string parse_stream_size(const std::string& v, IntCond& ic) {
  ic = IntCond{};
  ic.key = kIcStreamSize;
  const std::vector<std::string> a = split_commas(v);
  if (a.size() != 3) return "error:stream_size is SIDE,OPERATOR,NUMBER, not '" + v + "'";
  if (a[0] == "client") ic.dir = kIcToServer;  // the client's side sends to the server
  else if (a[0] == "server") ic.dir = kIcToClient;
  else if (a[0] == "both") ic.dir = kIcBoth;
  else if (a[0] == "either") ic.dir = kIcEither;
  else return "error:stream_size: side '" + a[0] + "' is none of server, client, both, either";
  if (uint_mode_prefix(a[1], ic.c.mode) != a[1].size() || a[1].empty()) return "error:stream_size: operator '" + a[1] + "' is none of < <= > >= = !=";
  if (a[2].empty() || a[2].size() > 10 || a[2].find_first_not_of("0123456789") != std::string::npos ||
      std::stoull(a[2]) > 0xffffffffull)
    return "error:stream_size: '" + a[2] + "' is not a 32-bit number";
  ic.c.a = std::stoull(a[2]);
  return "";
}

// vlan.id:COND[,INDEX] (INDEX any, all, all_or_absent, or_absent, or a layer -3..2, oob_or N:
// Suricata's multi-integer) and vlan.layers:COND (0 to 3).
std::string parse_vlan(const std::string& k, const std::string& v, IntCond& ic) {
  ic = IntCond{};
  if (k == "vlan.layers") {
    ic.key = kIcVlanLayers;
    const std::string r = parse_uint_cond(v, 3, ic.c);
    return r.empty() ? "" : "error:vlan.layers: " + r;
  }
  ic.key = kIcVlanId;
  const std::vector<std::string> a = split_commas(v);
  if (a.empty() || a.size() > 3) return "error:vlan.id is VALUE[,INDEX], not '" + v + "'";
  if (a.size() == 3) return "skip:vlan.id with a subslice";
  if (a[0].rfind("count", 0) == 0 || (a.size() == 2 && a[1].rfind("nb", 0) == 0))
    return "skip:vlan.id counting matches";
  const std::string r = parse_uint_cond(a[0], 4095, ic.c);
  if (!r.empty()) return "error:vlan.id: " + r + " (ids are 12 bits)";
  if (a.size() == 1) return "";
  const std::string w = parse_uint_index(a[1], 3, ic);
  return w.empty() ? "" : "error:vlan.id: " + w;
}

// ipopts:NAME, Suricata's names of the IPv4 options (IPV4_OPT_FLAG_*); `any` is Suricata's 0xffff,
// which its match (every bit of the value present) never meets, and neither does gaspp's.
std::string parse_ipopts(const std::string& v, uint16_t& out) {
  static const std::pair<const char*, uint16_t> kNames[] = {
      {"ts", kIpOptTs},       {"rr", kIpOptRr},       {"qs", kIpOptQs},       {"sec", kIpOptSec},
      {"lsrr", kIpOptLsrr},   {"esec", kIpOptEsec},   {"cipso", kIpOptCipso}, {"satid", kIpOptSid},
      {"ssrr", kIpOptSsrr},   {"rtralt", kIpOptRtralt}, {"eol", kIpOptEol},   {"nop", kIpOptNop},
      {"any", 0xffff}};
  for (const auto& [name, bits] : kNames)
    if (v == name) {
      out = bits;
      return "";
    }
  return "error:ipopts: unknown option '" + v + "'";
}

uint16_t flag_bit(char c) {
  switch (c) {
    case 'F': return 0x01;
    case 'S': return 0x02;
    case 'R': return 0x04;
    case 'P': return 0x08;
    case 'A': return 0x10;
    case 'U': return 0x20;
    case 'E': case '2': return 0x40;
    case 'C': case '1': return 0x80;
    default: return 0;
  }
}

std::string parse_flags(const std::string& v, Signature& s) {
  const auto a = split_commas(v);
  if (a.empty() || a.size() > 2 || a[0].empty()) return "error:flags needs FLAGS[,IGNORED]";
  s.has_flags = true;
  for (char c : a[0]) {
    if (c == '+') s.flags_mode = 1;
    else if (c == '*') s.flags_mode = 2;
    else if (c == '!') s.flags_mode = 3;
    else if (c == '0') s.flags_want = 0;
    else if (const uint16_t b = flag_bit(char(std::toupper(static_cast<unsigned char>(c))))) s.flags_want |= b;
    else return std::string("error:flags: unknown flag '") + c + "'";
  }
  if (a.size() == 2)
    for (char c : a[1]) {
      const uint16_t b = flag_bit(char(std::toupper(static_cast<unsigned char>(c))));
      if (!b) return std::string("error:flags: unknown flag to ignore '") + c + "'";
      s.flags_ignore |= b;
    }
  return "";
}

std::string parse_flowbits(const std::string& v, Signature& s) {
  const std::vector<std::string> a = split_commas(v);
  if (a.empty()) return "error:flowbits needs a command";
  if (a[0] == "noalert") {
    s.noalert = true;
    return "";
  }
  FlowbitCmd c;
  if (a[0] == "set") c.cmd = FlowbitCmd::set;
  else if (a[0] == "unset") c.cmd = FlowbitCmd::unset;
  else if (a[0] == "toggle") c.cmd = FlowbitCmd::toggle;
  else if (a[0] == "isset") c.cmd = FlowbitCmd::isset;
  else if (a[0] == "isnotset") c.cmd = FlowbitCmd::isnotset;
  else return "error:unknown flowbits command '" + a[0] + "'";
  if (a.size() != 2 || a[1].empty()) return "error:flowbits " + a[0] + " needs one name";
  std::string name = a[1];
  const bool has_or = name.find('|') != std::string::npos, has_and = name.find('&') != std::string::npos;
  if (has_or && has_and) return "error:flowbits mixes | and &";
  c.any = !has_and;
  std::string cur;
  for (char ch : name + (has_and ? "&" : "|")) {
    if (ch == '|' || ch == '&') {
      if (trim(cur).empty()) return "error:flowbits: empty name";
      c.names.push_back(trim(cur));
      cur.clear();
    } else {
      cur += ch;
    }
  }
  s.flowbits.push_back(c);
  return "";
}

// The command of an xbits or hostbits option; false when it is none of them.
bool xbit_cmd(const std::string& t, XbitCmd& c) {
  static const std::pair<const char*, XbitCmd::Cmd> kCmds[] = {{"set", XbitCmd::set}, {"unset", XbitCmd::unset},
                                                               {"toggle", XbitCmd::toggle}, {"isset", XbitCmd::isset},
                                                               {"isnotset", XbitCmd::isnotset}};
  for (const auto& [name, cmd] : kCmds)
    if (t == name) {
      c.cmd = cmd;
      return true;
    }
  return false;
}

// hostbits: <set|unset|toggle|isset|isnotset>,<name>[,src|dst], or noalert: Suricata's host bits,
// which are xbits tracked by the source (default) or destination address, expiring after 300 s
// (detect-hostbits.c), in the same namespace as xbits' ip_src/ip_dst.
std::string parse_hostbits(const std::string& v, Signature& s) {
  const std::vector<std::string> a = split_commas(v);
  if (a.empty()) return "error:hostbits needs a command";
  if (a[0] == "noalert") {
    if (a.size() > 1) return "error:hostbits:noalert takes no name";
    s.noalert = true;
    return "";
  }
  XbitCmd c;
  c.expire = 300;
  c.hostbits = true;
  if (!xbit_cmd(a[0], c)) return "error:unknown hostbits command '" + a[0] + "'";
  if (a.size() < 2 || a[1].empty()) return "error:hostbits:" + a[0] + " needs a name";
  if (a.size() > 3) return "error:hostbits: " + a[0] + ",NAME[,src|dst], not '" + v + "'";
  c.name = a[1];
  if (a.size() == 3) {
    if (a[2] == "src") c.track = XbitCmd::ip_src;
    else if (a[2] == "dst") c.track = XbitCmd::ip_dst;
    else if (a[2] == "both") return "skip:keyword hostbits both (not implemented in Suricata either)";
    else return "error:hostbits: direction src or dst, not '" + a[2] + "'";
  }
  s.xbits.push_back(c);
  return "";
}

std::string parse_xbits(const std::string& v, Signature& s) {
  const std::vector<std::string> a = split_commas(v);
  if (a.size() < 3) return "error:xbits needs a command, a name and track";
  XbitCmd c;
  if (!xbit_cmd(a[0], c)) return "error:unknown xbits command '" + a[0] + "'";
  c.name = a[1];
  if (c.name.empty()) return "error:xbits: empty name";
  bool track = false, expire = false;
  for (size_t k = 2; k < a.size(); ++k) {
    const std::string t = trim(a[k]);
    const size_t sp = t.find_first_of(" \t");
    const std::string key = t.substr(0, sp), val = sp == std::string::npos ? "" : trim(t.substr(sp));
    if (key == "track" && !track) {
      track = true;
      if (val == "ip_src") c.track = XbitCmd::ip_src;
      else if (val == "ip_dst") c.track = XbitCmd::ip_dst;
      else if (val == "ip_pair") c.track = XbitCmd::ip_pair;
      else if (val == "tx") return "skip:keyword xbits track tx";
      else return "error:xbits: track '" + val + "' (ip_src, ip_dst or ip_pair)";
    } else if (key == "expire" && !expire) {
      expire = true;
      char* end = nullptr;
      const unsigned long e = std::strtoul(val.c_str(), &end, 10);
      if (val.empty() || *end || e == 0 || e > 0xffffffffu) return "error:xbits: expire '" + val + "' (seconds, > 0)";
      c.expire = uint32_t(e);
    } else {
      return "error:xbits: '" + t + "' (track and expire, once each)";
    }
  }
  if (!track) return "error:xbits needs track";
  s.xbits.push_back(c);
  return "";
}

std::string parse_flowint(const std::string& v, Signature& s) {
  const auto a = split_commas(v);
  if (a.size() < 2 || a[0].empty()) return "error:flowint needs NAME,OP[,VALUE]";
  FlowintCmd c;
  c.name = a[0];
  const std::string& op = a[1];
  using F = FlowintCmd;
  if (op == "=") c.op = F::set;
  else if (op == "+") c.op = F::add;
  else if (op == "-") c.op = F::sub;
  else if (op == "isset") c.op = F::isset;
  else if (op == "notset" || op == "isnotset") c.op = F::notset;
  else if (op == "==") c.op = F::eq;
  else if (op == "!=") c.op = F::ne;
  else if (op == "<") c.op = F::lt;
  else if (op == "<=") c.op = F::le;
  else if (op == ">") c.op = F::gt;
  else if (op == ">=") c.op = F::ge;
  else return "error:flowint: unknown operator '" + op + "'";
  const bool unary = c.op == F::isset || c.op == F::notset;
  if (unary != (a.size() == 2) || a.size() > 3) return "error:flowint " + op + (unary ? " takes no value" : " needs a value");
  if (!unary) {
    int64_t n;
    if (parse_int(a[2], n)) {
      if (n < 0 || n > int64_t(UINT32_MAX)) return "error:flowint value out of range";
      c.value = uint32_t(n);
    } else {
      c.value_var = a[2];
    }
  }
  s.flowints.push_back(c);
  return "";
}

// Checks and settles the payload list once the rule is read: fast pattern, mode.
std::string finish(Signature& s) {
  // The matcher's stack holds one frame per option (detect_tables.hpp, kDetMaxOps).
  if (s.ops.size() > 64) return "skip:more than 64 payload options";
  for (size_t i = 0; i < s.ops.size(); ++i) {
    SigOp& o = s.ops[i];
    if (o.type != SigOpType::content) continue;
    const int32_t len = int32_t(o.bytes.size());
    if (o.startswith) {
      if (o.has_depth || o.has_offset || o.relative) return "error:startswith with depth, offset, distance or within";
      o.has_depth = true;
      o.depth = len;
    }
    if (o.has_depth && o.depth_var < 0 && o.depth < len) return "error:depth smaller than the content";
    // depth counts from the offset (Suricata's DetectDepthSetup / DetectOffsetSetup): the matcher
    // takes it as the end of the window from the buffer's start. With a variable on either side
    // the matcher adds them when it runs (inspect.hpp).
    if (o.has_depth && o.has_offset && o.depth_var < 0 && o.offset_var < 0) o.depth += o.offset;
    if (o.has_within && o.within_var < 0 && o.within < len) return "error:within smaller than the content";
    if (o.relative && (o.has_depth || o.has_offset)) return "error:content with both absolute (depth/offset) and relative (distance/within) modifiers";
    if (o.fp_chop && size_t(o.fp_off) + o.fp_len > o.bytes.size()) return "error:fast_pattern chop beyond the content";
  }
  // Fast pattern (the prefilter's literal): the one marked, else the longest non-negated content
  // (first on ties). Which one only changes speed: every content is verified.
  // Not one of the decoded bytes (base64_data): they are not a buffer the prefilter scans.
  // Nor one of a header buffer's (ipv4.hdr, ...): the prefilter reads payloads.
  int fp = -1;
  for (size_t i = 0; i < s.ops.size(); ++i)
    if (s.ops[i].type == SigOpType::content && s.ops[i].fast_pattern) {
      if (s.ops[i].negated) return "error:fast_pattern on a negated content";
      if (s.ops[i].buf == kBufBase64 || header_buf(s.ops[i].buf)) s.ops[i].fast_pattern = false;
      else fp = int(i);
    }
  // Nor one of a buffer tested `absent: or_else` (the list holds without the buffer: Suricata's
  // prefilter leaves such a buffer out).
  const auto absent_buf = [&](uint8_t b) {
    return std::any_of(s.absent.begin(), s.absent.end(), [&](const auto& z) { return z.first == b; });
  };
  if (fp < 0)
    for (size_t i = 0; i < s.ops.size(); ++i)
      if (s.ops[i].type == SigOpType::content && !s.ops[i].negated && s.ops[i].buf != kBufBase64 && !header_buf(s.ops[i].buf) &&
          !absent_buf(s.ops[i].buf) && (fp < 0 || s.ops[i].bytes.size() > s.ops[size_t(fp)].bytes.size()))
        fp = int(i);
  s.fast_pattern = fp;
  for (const SigOp& o : s.ops) {
    if (o.type == SigOpType::base64_decode && !s.app)
      return "skip:app-layer:base64_decode on packet or stream data (it is read on the application layer's buffers)";
    // The decoded bytes are inspected as a list of their own, without the variables of the rest.
    if (o.buf == kBufBase64 && (o.offset_var >= 0 || o.depth_var >= 0 || o.distance_var >= 0 || o.within_var >= 0 ||
                                o.value_var >= 0 || o.var >= 0))
      return "skip:keyword base64_data with byte_extract variables";
  }
  const bool packet_bufs_only = std::all_of(s.ops.begin(), s.ops.end(), [](const SigOp& o) { return ip_addr_buf(o.buf); });
  if (s.app && s.rule.action == RuleAction::alert && packet_bufs_only && s.bsize.empty() && s.absent.empty() && !s.urilen.on && !s.http_events &&
      !s.http2_events && s.http2_conds.empty() &&
      !s.file_conds() &&
      !s.dns_events &&
      !s.tls_version_on && !s.dns_opcode.on && !s.dns_rcode.on && s.dns_rrtype.c.mode == kUintNone && !s.tls_chain_len.on &&
      !s.tls_notbefore.mode && !s.tls_notafter.mode && !s.tls_expiry && !s.ssl_version && !s.tls_events && !s.ftp_dynamic_port.on && !s.ftp_mode && !s.ftp_reply_received && !s.ftp_events && !s.ftp_bounce &&
      !s.smtp_events && !s.ssh_events && s.ftpdata_command.empty()) {
    // Only the protocol (`alert http any any -> any any (flow:...; sid:1;)`): no buffer to inspect,
    // so Suricata makes it a packet signature (SIG_TYPE_APPLAYER, or SIG_TYPE_PKT with packet
    // conditions) that matches every packet of a flow whose app_proto is the protocol, not each
    // transaction once; so is one whose only buffers are the packet's (ip.src, ip.dst). A pass or
    // drop one stays a transaction signature: Suricata's first match decides the flow, which stops
    // its inspection, and a gated signature (decided on the host, after the verdicts) could not do
    // that; once a transaction is the nearest to it.
    s.app = false;
    s.app_proto = 0;
    s.gate_proto = s.rule.app_proto;
  }
  // The packet's header buffers: packet signatures, at most two such buffers. ip.src and ip.dst
  // in an application-layer signature are buffers of the transaction's direction (detect_app.cpp).
  uint8_t hdr_bufs[2] = {0, 0};
  for (const SigOp& o : s.ops) {
    if (!header_buf(o.buf) || o.buf == hdr_bufs[0] || o.buf == hdr_bufs[1] || (s.app && ip_addr_buf(o.buf))) continue;
    if (hdr_bufs[1]) return "skip:keyword " + std::string(sig_buf_name(o.buf)) + " beside two other header buffers";
    hdr_bufs[hdr_bufs[0] ? 1 : 0] = o.buf;
  }
  if (hdr_bufs[0] && s.app) return "skip:app-layer:" + std::string(sig_buf_name(hdr_bufs[0])) + " in an application-layer signature";
  if (hdr_bufs[0] && (s.only_stream || s.rule.tcp_stream)) return "error:a header buffer in a stream-only rule";
  if (s.gate_proto == "smtp" && s.app) {
    if (!s.absent.empty()) return "skip:app-layer:absent on smtp buffers";
    // A mail's buffers, one part of it a signature: its fields (applayer/smtp.hpp: the envelope's
    // smtp.helo, smtp.mail_from, smtp.rcpt_to, the message's email.* header fields and body MD5) or
    // its attachments (applayer/mime.hpp: file.data, each file an
    // instance, and what base64_data decodes of it).
    const bool env = std::any_of(s.ops.begin(), s.ops.end(), [&](const SigOp& o) { return mail_buf(o.buf); }) ||
                     std::any_of(s.bsize.begin(), s.bsize.end(), [&](const auto& z) { return mail_buf(z.first); });
    const auto in_part = [&](uint8_t b) {
      return env ? mail_buf(b) : base_buf(b) == kBufHttpResponseBody || base_buf(b) == kBufFileName;
    };
    const std::string part = env ? "the mail's fields" : "file.data";
    if (env && s.file_conds()) return "skip:app-layer:smtp file keywords beside the mail's fields";
    if (!env && !s.file_conds() && std::none_of(s.ops.begin(), s.ops.end(), [&](const SigOp& o) { return in_part(o.buf); }))
      return "skip:app-layer:base64_decode on packet or stream data (it is read on the application layer's buffers)";
    for (const SigOp& o : s.ops)
      if (!in_part(o.buf) && o.buf != kBufBase64)
        return "skip:app-layer:smtp " + std::string(o.buf == kBufPayload ? "payload" : sig_buf_name(o.buf)) + " beside " + part;
    for (const auto& [b, c] : s.bsize)
      if (!in_part(b)) return "skip:app-layer:smtp bsize on " + std::string(sig_buf_name(b));
    if (s.dsize.on || s.has_flags || s.itype.on || s.icode.on || s.header_conds() || s.only_stream || s.no_stream ||
        s.rule.tcp_pkt || s.rule.tcp_stream)
      return "skip:app-layer:smtp rule with packet conditions";
    if (!s.int_conds.empty()) return "skip:app-layer:stream_size on an application-layer signature";
    if (s.flow_dir == 2) return "error:" + part + " of a mail are sent to the server (flow:to_client)";
    s.gate_proto.clear();
    s.app_proto = env ? 6 : 4;
    s.rule.proto = 6;
    s.mode = 0;
    s.ip_only = false;
    return "";
  }
  if (s.gate_proto == "ssh" && s.app) {
    if (!s.absent.empty()) return "skip:app-layer:absent on ssh buffers";
    // The identification strings (applayer/ssh.hpp): ssh.proto and ssh.software, per direction;
    // HASSH (ssh.hassh* : the client's to the server, the server's to the client).
    for (const SigOp& o : s.ops) {
      if (!ssh_buf(o.buf) && o.buf != kBufBase64)
        return "skip:app-layer:ssh " + std::string(o.buf == kBufPayload ? "payload beside ssh buffers" : sig_buf_name(o.buf));
    }
    for (const auto& [b, c] : s.bsize)
      if (!ssh_buf(b))
        return "skip:app-layer:ssh bsize on " + std::string(sig_buf_name(b));
    s.gate_proto.clear();
    s.app_proto = 5;
  }
  if (s.gate_proto == "ftp" && s.app) {
    if (!s.absent.empty()) return "skip:app-layer:absent on ftp buffers";
    // The control connection's transactions (applayer/ftp.hpp).
    for (const SigOp& o : s.ops)
      if (!ftp_buf(o.buf) && o.buf != kBufBase64 && o.buf != kBufPayload)
        return "skip:app-layer:ftp " + std::string(sig_buf_name(o.buf));
    for (const auto& [b, c] : s.bsize)
      if (!ftp_buf(b)) return "skip:app-layer:ftp bsize on " + std::string(sig_buf_name(b));
    s.gate_proto.clear();
    s.app_proto = 8;
  }
  if (s.gate_proto == "ftp-data" && s.app) {
    if (!s.absent.empty()) return "skip:app-layer:absent on ftp-data buffers";
    // A data connection's transfer (applayer/ftp_data.hpp): its file (file_data, file.name and the
    // file keywords) and its command.
    const auto file_buf = [](uint8_t b) {
      b = base_buf(b);
      return b == kBufHttpResponseBody || b == kBufFileName;
    };
    for (const SigOp& o : s.ops)
      if (!file_buf(o.buf))
        return "skip:app-layer:ftp-data " + std::string(o.buf == kBufPayload ? "payload beside file keywords" : sig_buf_name(o.buf));
    for (const auto& [b, c] : s.bsize)
      if (!file_buf(b)) return "skip:app-layer:ftp-data bsize on " + std::string(sig_buf_name(b));
    if (s.dsize.on || s.has_flags || s.itype.on || s.icode.on || s.header_conds() || s.only_stream || s.no_stream ||
        s.rule.tcp_pkt || s.rule.tcp_stream)
      return "skip:app-layer:ftp-data rule with packet conditions";
    if (!s.int_conds.empty()) return "skip:app-layer:stream_size on an application-layer signature";
    if (s.rule.proto != 6 && s.rule.proto != 0) return "error:an ftp-data rule that is not TCP";
    s.gate_proto.clear();
    s.app_proto = 9;
    s.rule.proto = 6;
    s.mode = 0;
    s.ip_only = false;
    return "";
  }
  if (!s.gate_proto.empty() && s.app) {
    // No parser for the protocol: none of its buffers (the mail's headers, ...) exists.
    for (const SigOp& o : s.ops)
      if (o.buf != kBufPayload)
        return "skip:app-layer:" + s.gate_proto + " " + (o.buf == kBufHttpResponseBody ? "file.data" : sig_buf_name(o.buf));
    return "skip:app-layer:" + s.gate_proto + " buffer";
  }
  if (s.app) {
    // Matched per transaction (detect.hpp); payload options inspect the transaction's message
    // (detect_app.cpp). Packet-only conditions are not matched there.
    if (s.dsize.on || s.has_flags || s.itype.on || s.icode.on || s.header_conds() || s.only_stream || s.no_stream || s.rule.tcp_pkt ||
        s.rule.tcp_stream)
      return "skip:app-layer:http rule with packet conditions";
    if (!s.int_conds.empty()) return "skip:app-layer:stream_size on an application-layer signature";
    // The protocol the buffers belong to must agree with the header's.
    const auto proto_of = [](uint8_t b) -> uint8_t {
      b = base_buf(b);
      return b == kBufTlsSni || b == kBufTlsSniDot || (b >= kBufTlsCertSubject && b <= kBufJa3sString) ||
                     b == kBufJa3Hash || b == kBufJa3String
                 ? 2
             : b == kBufDnsQuery || b == kBufDnsQueryDot || (b >= kBufDnsQueriesRrname && b <= kBufDnsResponseRrname) ? 3
             : ssh_buf(b)                                ? 5
             : mail_buf(b)                               ? 6
             : sip_buf(b)                                ? 7
             : ftp_buf(b)                                ? 8
                                                         : 1;
    };
    for (const SigOp& o : s.ops) {
      const uint8_t p = o.buf == kBufPayload || o.buf == kBufBase64 || ip_addr_buf(o.buf) ? 0 : proto_of(o.buf);
      if (p && s.app_proto && p != s.app_proto) return "error:buffers of another protocol than the rule's (" + std::string(sig_buf_name(o.buf)) + ")";
      if (p) s.app_proto = p;
    }
    for (const auto& [b, c] : s.bsize) {
      const uint8_t p = proto_of(b);
      if (s.app_proto && p != s.app_proto) return "error:bsize on a buffer of another protocol than the rule's";
      s.app_proto = p;
    }
    for (const auto& [b, e] : s.absent) {
      const uint8_t p = proto_of(b);
      if (s.app_proto && p != s.app_proto) return "error:absent on a buffer of another protocol than the rule's";
      s.app_proto = p;
    }
    if (s.http_events && s.app_proto && s.app_proto != 1) return "error:app-layer-event http.* in a rule of another protocol";
    if (s.app_proto == 8) {
      // Suricata's SigConsolidateDirection: a request's buffers exist to the server only, a
      // reply's to the client only.
      bool to_server = false, to_client = false;
      for (const SigOp& o : s.ops)
        if (ftp_buf(o.buf)) (sig_buf_side(o.buf) == 0 ? to_server : to_client) = true;
      to_client = to_client || s.ftp_reply_received;
      to_server = to_server || s.ftp_bounce;
      if ((to_server && (to_client || s.flow_dir == 2)) || (to_client && s.flow_dir == 1))
        return "error:ftp keywords of the request and of the reply, or against the flow direction";
      for (const SigOp& o : s.ops)
        if (o.buf == kBufPayload) return "skip:app-layer:ftp payload beside ftp keywords";
      if (s.rule.proto != 6 && s.rule.proto != 0) return "error:an ftp rule that is not TCP";
      s.rule.proto = 6;
      s.mode = 0;
      s.ip_only = false;
      return "";
    }
    if (!s.app_proto) s.app_proto = 1;
    if (s.app_proto == 5 || s.app_proto == 6 || s.app_proto == 7)
      for (const SigOp& o : s.ops)
        if (o.buf == kBufPayload)
          return std::string("skip:app-layer:") + (s.app_proto == 5   ? "ssh payload beside ssh buffers"
                                                   : s.app_proto == 7 ? "sip payload beside sip buffers"
                                                                      : "smtp payload beside the mail's fields");
    if (s.app_proto == 7) {
      if (s.rule.proto != 6 && s.rule.proto != 17 && s.rule.proto != 0) return "error:a sip rule that is neither UDP nor TCP";
    } else if (s.app_proto != 3) {
      if (s.rule.proto != 6 && s.rule.proto != 0) return "error:an http or tls rule that is not TCP";
      s.rule.proto = 6;
    } else if (s.rule.proto != 6 && s.rule.proto != 17 && s.rule.proto != 0) {
      return "error:a dns rule that is neither UDP nor TCP";
    }
    s.mode = 0;
    s.ip_only = false;
    return "";
  }
  // Mode (Suricata: SigConsolidateTcpBuffer, detect-flow.c, detect-dsize.c).
  const bool tcp = s.rule.proto == 0 || s.rule.proto == 6;
  uint8_t m = 0;
  if (s.only_stream || s.rule.tcp_stream) m = kSigStream | kSigStreamOnly;
  if (s.no_stream || s.rule.tcp_pkt || s.dsize.on || s.has_flags || s.itype.on || s.icode.on || s.header_conds() ||
      hdr_bufs[0])
    m |= kSigPacket;
  if (tcp && !s.ops.empty() && !(m & (kSigPacket | kSigStream))) {
    m = kSigStream;
    for (const SigOp& o : s.ops)
      if (o.type == SigOpType::content && (o.has_depth || o.has_offset)) m |= kSigPacket;
  }
  if (!m || !tcp) m |= kSigPacket;
  if ((s.itype.on || s.icode.on) && s.rule.proto != 1 && s.rule.proto != 58 && s.rule.proto != 0)
    return "error:itype/icode on a rule that is not ICMP";
  if (s.has_flags && s.rule.proto != 6 && s.rule.proto != 0) return "error:flags on a rule that is not TCP";
  if ((m & kSigStreamOnly) && !tcp) return "error:only_stream on a rule that is not TCP";
  s.mode = m;
  const bool header_only = s.ops.empty() && !s.flow_keyword && !s.dsize.on && !s.has_flags && !s.itype.on &&
                           !s.icode.on && !s.header_conds() && s.int_conds.empty() && s.flowints.empty() &&
                           !s.rule.tcp_stream &&
                           std::all_of(s.flowbits.begin(), s.flowbits.end(), [](const FlowbitCmd& c) { return c.cmd == FlowbitCmd::set; }) &&
                           s.gate_proto.empty();  // Suricata: a signature with an app_proto is never IP-only
  s.ip_only = header_only && s.iprep.empty();
  s.ip_only_engine = header_only && !like_ip_only_addresses(s.rule);
  return "";
}

}  // namespace

std::string parse_uint_cond(const std::string& text, uint64_t max, UintCond& out) {
  out = UintCond{};
  std::string t = trim(text);
  const std::string bad = "'" + text + "' is not an integer condition";
  // A number at the front of s (decimal with a unit, or 0x hex), s left after it and its spaces.
  const auto number = [&](std::string& s, uint64_t& x) -> bool {
    size_t i = 0;
    x = 0;
    const bool hex = s.size() > 2 && s[0] == '0' && s[1] == 'x';
    if (hex) i = 2;
    const size_t start = i;
    for (; i < s.size(); ++i) {
      const unsigned char c = static_cast<unsigned char>(s[i]);
      const int d = std::isdigit(c) ? c - '0' : hex && std::isxdigit(c) ? std::tolower(c) - 'a' + 10 : -1;
      if (d < 0) break;
      const uint64_t base = hex ? 16 : 10;
      if (x > (~0ull - uint64_t(d)) / base) return false;
      x = x * base + uint64_t(d);
    }
    if (i == start) return false;
    if (!hex && x >= 1) {
      static const std::pair<const char*, uint64_t> kUnits[] = {{"kib", 1024}, {"kb", 1024}, {"mib", 1024 * 1024},
                                                                {"mb", 1024 * 1024}, {"gib", 1024ull << 20 << 10},
                                                                {"gb", 1024ull << 20 << 10}};
      for (const auto& [u, m] : kUnits) {
        const size_t n = std::strlen(u);
        if (s.size() - i >= n && strncasecmp(s.c_str() + i, u, n) == 0) {
          if (x > max / m) return false;
          x *= m;
          i += n;
          break;
        }
      }
    }
    if (x > max) return false;
    s = trim(s.substr(i));
    return true;
  };
  if (!t.empty() && t[0] == '&') {  // &MASK=V, &MASK!=V
    t = trim(t.substr(1));
    if (!number(t, out.a)) return bad;
    out.mode = kUintMask;
    if (t.rfind("!", 0) == 0) out.mode = kUintNegMask, t = t.substr(1);
    if (t.rfind("=", 0) != 0) return bad;
    t = trim(t.substr(1));
    if (!number(t, out.b) || !t.empty()) return bad;
    if ((out.b & out.a) != out.b) return "'" + text + "' can never match (the value has bits outside the mask)";
    return "";
  }
  {  // [!]N-M, [!]N<>M
    std::string s = t;
    const bool neg = !s.empty() && s[0] == '!';
    if (neg) s = trim(s.substr(1));
    uint64_t lo, hi;
    if (number(s, lo) && (s.rfind("-", 0) == 0 || s.rfind("<>", 0) == 0)) {
      s = trim(s.substr(s[0] == '-' ? 1 : 2));
      if (!number(s, hi) || !s.empty()) return bad;
      if (hi <= lo || hi - lo <= 1) return "'" + text + "': a range N-M needs M > N + 1 (its ends excluded)";
      out.mode = neg ? kUintNegRange : kUintRange;
      out.a = lo;
      out.b = hi;
      return "";
    }
  }
  out.mode = kUintEq;
  if (const size_t n = uint_mode_prefix(t, out.mode)) t = trim(t.substr(n));
  if (!number(t, out.a) || !t.empty()) return bad;
  if ((out.mode == kUintLt || out.mode == kUintGe) && out.a == 0) return "'" + text + "' can never match or always does";
  if ((out.mode == kUintLe || out.mode == kUintGt) && out.a == max) return "'" + text + "' can never match or always does";
  return "";
}

std::string parse_uint_index(const std::string& text, int limit, IntCond& out) {
  const std::string t0 = trim(text);
  out.oob_or = 0;
  if (t0 == "any") return out.index = kIcAny, "";
  if (t0 == "all") return out.index = kIcAll, "";
  if (t0 == "all_or_absent") return out.index = kIcAllOrAbsent, "";
  if (t0 == "or_absent") return out.index = kIcOrAbsent, "";
  std::string t = t0;
  if (t.rfind("oob_or", 0) == 0) {
    out.oob_or = 1;
    t = trim(t.substr(6));
  }
  int64_t i;
  if (!parse_int(t, i) || i < -limit || i > limit - 1)
    return "index '" + t0 + "' is none of any, all, all_or_absent, or_absent, " + std::to_string(-limit) + " to " +
           std::to_string(limit - 1) + " (oob_or N)";
  out.index = kIcAt;
  out.at = int8_t(i);
  return "";
}

// An http2.* keyword's value (Http2Cond; Suricata's detect_parse_array_uint[_enum] and
// http2_parse_settingsctx).
std::string parse_http2_cond(const std::string& k, const std::string& v, Http2Cond& out) {
  const std::string kind = k.substr(6);
  out.kind = kind == "frametype"   ? Http2Cond::kFrameType
             : kind == "errorcode" ? Http2Cond::kErrorCode
             : kind == "priority"  ? Http2Cond::kPriority
             : kind == "window"    ? Http2Cond::kWindow
             : kind == "settings"  ? Http2Cond::kSettings
                                   : Http2Cond::kSizeUpdate;
  const uint64_t max = out.kind == Http2Cond::kFrameType || out.kind == Http2Cond::kPriority ? 255 : 0xffffffffu;
  std::string t = trim(v);
  if (out.kind == Http2Cond::kSettings) {
    // NAME[ COND]: the parameter's name, then its value's condition.
    size_t e = 0;
    while (e < t.size() && (std::isalnum(static_cast<unsigned char>(t[e])) || t[e] == '_')) ++e;
    std::string name = t.substr(0, e);
    for (char& ch : name) ch = char(std::toupper(static_cast<unsigned char>(ch)));
    for (uint16_t id = 1; id < 16 && !out.settings_id; ++id)
      if (const char* n = http2_settings_name(id); n && name == n) out.settings_id = id;
    if (!out.settings_id) return "unknown settings parameter '" + name + "'";
    const std::string rest = trim(t.substr(e));
    return rest.empty() ? "" : parse_uint_cond(rest, 0xffffffffu, out.c);
  }
  if (out.kind == Http2Cond::kSizeUpdate) return parse_uint_cond(t, 0xffffffffu, out.c);
  const std::vector<std::string> parts = split_commas(t);
  if (parts.empty() || parts.size() > 3) return "'" + v + "' is VALUE[,INDEX[,START:END]]";
  if (parts.size() == 1 && parts[0].rfind("count", 0) == 0) {
    out.index = Http2Cond::kCount;
    return parse_uint_cond(parts[0].substr(5), 0xffffffffu, out.n);
  }
  // The value: a number or condition, or (frametype, errorcode) a name, with its operator.
  std::string val = trim(parts[0]), pre;
  while (!val.empty() && (val[0] == '!' || val[0] == '<' || val[0] == '>' || val[0] == '=')) pre += val[0], val.erase(0, 1);
  if (!val.empty() && std::isalpha(static_cast<unsigned char>(val[0])) &&
      (out.kind == Http2Cond::kFrameType || out.kind == Http2Cond::kErrorCode)) {
    std::string up;
    for (const char ch : val) up += char(std::toupper(static_cast<unsigned char>(ch)));
    if (up == "HTTP11_REQUIRED") up = "HTTP_1_1_REQUIRED";  // Suricata 9's name of it
    int found = -1;
    for (uint32_t n = 0; n < 16 && found < 0; ++n) {
      const char* name = out.kind == Http2Cond::kFrameType ? http2_frame_type_name(n) : http2_error_name(n);
      if (name && up == name) found = int(n);
    }
    if (found < 0) return "unknown name '" + val + "'";
    val = std::to_string(found);
  }
  if (std::string r = parse_uint_cond(pre + val, max, out.c); !r.empty()) return r;
  if (parts.size() >= 2) {
    const std::string ix = trim(parts[1]);
    if (ix == "any") out.index = Http2Cond::kAny;
    else if (ix == "all") out.index = Http2Cond::kAll;
    else if (ix == "all_or_absent") out.index = Http2Cond::kAllOrAbsent;
    else if (ix == "or_absent") out.index = Http2Cond::kOrAbsent;
    else if (ix.rfind("nb", 0) == 0) {
      out.index = Http2Cond::kNb;
      if (std::string r = parse_uint_cond(ix.substr(2), 0xffffffffu, out.n); !r.empty()) return "nb: " + r;
    } else {
      std::string n = ix;
      if (n.rfind("oob_or", 0) == 0) out.oob_or = true, n = trim(n.substr(6));
      int64_t i;
      if (!parse_int(n, i) || i < INT32_MIN || i > INT32_MAX) return "index '" + ix + "'";
      out.index = Http2Cond::kAt;
      out.at = int32_t(i);
    }
  }
  if (parts.size() == 3) {
    const std::string s = trim(parts[2]);
    const size_t colon = s.find(':');
    int64_t a, b;
    if (colon == std::string::npos || !parse_int(trim(s.substr(0, colon)), a) || !parse_int(trim(s.substr(colon + 1)), b) ||
        a < INT32_MIN || a > INT32_MAX || b < INT32_MIN || b > INT32_MAX)
      return "subslice '" + s + "' is START:END";
    if ((a > 0 && b > 0 && b <= a) || (a < 0 && b < 0 && b <= a)) return "subslice '" + s + "' must end after its start";
    out.start = int32_t(a);
    out.end = int32_t(b);
  }
  return "";
}

const char* sig_buf_name(uint8_t b) {
  if (b == kBufPayload) return "payload";
  if (b == kBufDnsQueryDot) return "dns.query|dotprefix";
  if (b == kBufTlsSniDot) return "tls.sni|dotprefix";
  if (b == kBufHttpHostDot) return "http.host|dotprefix";
  if (b == kBufBase64) return "base64_data";
  if (b == kBufFileName) return "file.name";
  if (b == kBufHttpRequestFrame) return "frame:http1.request";
  if (b == kBufHttpResponseFrame) return "frame:http1.response";
  if (b == kBufSipPduFrame) return "frame:sip.pdu";
  if (b == kBufSipRequestLineFrame) return "frame:sip.request.line";
  if (b == kBufSipRequestHeadersFrame) return "frame:sip.request.headers";
  if (b == kBufSipRequestBodyFrame) return "frame:sip.request.body";
  if (b == kBufSipResponseLineFrame) return "frame:sip.response.line";
  if (b == kBufSipResponseHeadersFrame) return "frame:sip.response.headers";
  if (b == kBufSipResponseBodyFrame) return "frame:sip.response.body";
  for (const BufName& n : kHeaderBuffers)
    if (n.buf == b) return n.name;
  if (const DerivedBuf* d = derived_buf(b)) return d->name.c_str();
  for (const BufName& n : kStickyBuffers)
    if (n.buf == b && std::strchr(n.name, '.')) return n.name;
  return "?";
}

int sig_buf_side(uint8_t b) {
  if (b >= kBufDerived) return base_buf(b) < kBufDerived ? sig_buf_side(base_buf(b)) : 0;
  // Every buffer named (no default): a buffer added to SigBuf without a side is a compile warning.
  switch (SigBuf(b)) {
    case kBufPayload:
    case kBufBase64:  // inspected where its base64_decode is (its own side)
    case kBufIpv4Hdr: case kBufIpv6Hdr: case kBufTcpHdr: case kBufUdpHdr: case kBufIcmpv4Hdr: case kBufIcmpv6Hdr:
    case kBufIpSrc: case kBufIpDst:  // the sender / receiver of the direction inspected
    case kBufHttpHeader: case kBufHttpHeaderRaw: case kBufHttpCookie: case kBufHttpContentType:
    case kBufHttpContentLen: case kBufHttpStart: case kBufHttpHeaderNames: case kBufHttpConnection:
    case kBufSshProto: case kBufSshSoftware:
    case kBufTlsRandom: case kBufTlsRandomTime: case kBufTlsRandomBytes: case kBufTlsAlpn:
    case kBufSipProtocol: case kBufSipFrom: case kBufSipTo: case kBufSipVia: case kBufSipUserAgent:
    case kBufSipContentType: case kBufSipContentLength: case kBufSipPduFrame:
    case kBufSdpOrigin: case kBufSdpSessionName: case kBufSdpSessionInfo: case kBufSdpUri: case kBufSdpEmail:
    case kBufSdpPhone: case kBufSdpConnection: case kBufSdpTimezone: case kBufSdpKey: case kBufSdpBandwidth:
    case kBufSdpTime: case kBufSdpRepeatTime: case kBufSdpAttribute: case kBufSdpMedia: case kBufSdpMediaInfo:
    case kBufSdpMediaConnection: case kBufSdpMediaKey:
    case kBufDnsQueriesRrname: case kBufDnsAnswersRrname: case kBufDnsAuthoritiesRrname: case kBufDnsAdditionalsRrname:
    case kBufFileName:  // the files of the direction inspected
    case kBufHttp2HeaderName:
    // Each side's certificate: the server's to the client, the client's (mutual TLS) to the server.
    case kBufTlsCertSubject: case kBufTlsCertIssuer: case kBufTlsCertSerial: case kBufTlsCertFingerprint:
    case kBufTlsCerts:
      return 2;
    case kBufDnsResponseRrname:
      return 1;
    case kBufHttpStatCode: case kBufHttpStatMsg: case kBufHttpResponseLine: case kBufHttpResponseBody:
    case kBufHttpServer: case kBufHttpLocation: case kBufHttpResponseHeader:
    case kBufTlsSubjectAltName: case kBufJa3sHash: case kBufJa3sString: case kBufSshHasshServer:
    case kBufSshHasshServerString:
    case kBufSipStatCode: case kBufSipStatMsg: case kBufSipResponseLine:
    case kBufSipResponseLineFrame: case kBufSipResponseHeadersFrame: case kBufSipResponseBodyFrame:
    case kBufHttpResponseFrame: case kBufFtpReply: case kBufFtpCompletionCode:
      return 1;
    case kBufSmtpHelo: case kBufSmtpMailFrom: case kBufSmtpRcptTo: case kBufHttpRequestHeader:
    case kBufEmailFrom: case kBufEmailSubject: case kBufEmailTo: case kBufEmailCc: case kBufEmailDate:
    case kBufEmailMessageId: case kBufEmailXMailer: case kBufEmailReceived: case kBufEmailUrl: case kBufEmailBodyMd5:
    case kBufHttpUri: case kBufHttpUriRaw: case kBufHttpMethod: case kBufHttpProtocol: case kBufHttpRequestLine:
    case kBufHttpHost: case kBufHttpHostRaw: case kBufHttpUserAgent: case kBufHttpRequestBody: case kBufHttpReferer:
    case kBufHttpAccept: case kBufHttpAcceptEnc: case kBufHttpAcceptLang: case kBufTlsSni:
    case kBufDnsQuery: case kBufTlsSniDot: case kBufDnsQueryDot: case kBufHttpHostDot: case kBufJa3Hash:
    case kBufJa3String: case kBufSshHassh: case kBufSshHasshString:
    case kBufSipMethod: case kBufSipUri: case kBufSipRequestLine:
    case kBufSipRequestLineFrame: case kBufSipRequestHeadersFrame: case kBufSipRequestBodyFrame:
    case kBufHttpRequestFrame: case kBufFtpCommand: case kBufFtpCommandData:
      return 0;
    case kBufDerived: case kBufCount:
      break;
  }
  return 0;
}

bool instance_buf(uint8_t b) {
  b = base_buf(b);
  return b == kBufDnsQuery || b == kBufDnsQueryDot || (b >= kBufDnsQueriesRrname && b <= kBufDnsResponseRrname) ||
         b == kBufTlsCerts || b == kBufTlsSubjectAltName || b == kBufTlsAlpn || b == kBufSmtpRcptTo || b == kBufEmailReceived || b == kBufEmailUrl ||
         b == kBufHttpRequestHeader || b == kBufHttpResponseHeader || b == kBufHttp2HeaderName || (b >= kBufSipFrom && b <= kBufSipContentLength) ||
         b == kBufFtpReply || b == kBufFtpCompletionCode || (b >= kBufSdpBandwidth && b <= kBufSdpMediaKey) ||
         b == kBufFileName;
}

bool ftp_buf(uint8_t b) {
  b = base_buf(b);
  return b >= kBufFtpCommand && b <= kBufFtpCompletionCode;
}

bool ssh_buf(uint8_t b) {
  b = base_buf(b);
  return b >= kBufSshProto && b <= kBufSshHasshServerString;
}

bool sip_buf(uint8_t b) {
  b = base_buf(b);
  return b >= kBufSipMethod && b <= kBufSdpMediaKey;  // the SIP message's fields, frames and SDP body
}

bool sip_frame_buf(uint8_t b) {
  b = base_buf(b);
  return b >= kBufSipPduFrame && b <= kBufSipResponseBodyFrame;
}

namespace {
// SIP's frames in buffer order (kBufSipPduFrame ...), by Suricata's names.
constexpr const char* kSipFrameNames[] = {"pdu", "request.line", "request.headers", "request.body",
                                          "response.line", "response.headers", "response.body"};
}  // namespace

const char* sip_frame_name(uint8_t b) { return sip_frame_buf(b) ? kSipFrameNames[base_buf(b) - kBufSipPduFrame] : "?"; }

int sip_frame_kind(uint8_t b) {
  b = base_buf(b);
  return b == kBufSipPduFrame ? 0 : (b - kBufSipRequestLineFrame) % 3 + 1;
}

bool mail_buf(uint8_t b) {
  b = base_buf(b);
  return b >= kBufSmtpHelo && b <= kBufEmailBodyMd5;
}

uint64_t SignatureSet::skipped() const {
  uint64_t n = 0;
  for (auto& [k, v] : skipped_by_reason) n += v;
  return n;
}

uint64_t SignatureSet::skipped_app_layer() const {
  uint64_t n = 0;
  for (auto& [k, v] : skipped_by_reason)
    if (starts_with(k, "app-layer:")) n += v;
  return n;
}

std::string parse_signature(const std::string& text, const RuleVars& vars, Signature& out) {
  out = Signature{};
  std::vector<std::pair<std::string, std::string>> opts;
  const std::string head = parse_rule_head(text, vars, out.rule, opts);
  if (!head.empty()) return head;
  if (out.rule.app_proto == "http" || out.rule.app_proto == "http1" || out.rule.app_proto == "http2" ||
      out.rule.app_proto == "tls") {
    out.app = true;
    out.app_proto = out.rule.app_proto == "tls" ? 2 : 1;
    // http1 / http2: the transactions of that version only (http: both).
    out.http_version = out.rule.app_proto == "http1" ? 1 : out.rule.app_proto == "http2" ? 2 : 0;
    out.rule.proto = 6;
  } else if (out.rule.app_proto == "dns") {
    out.app = true;
    out.app_proto = 3;
    out.rule.proto = 0;  // UDP and TCP
  } else if (out.rule.app_proto == "sip") {
    out.app = true;
    out.app_proto = 7;
    out.rule.proto = 0;  // UDP and TCP
  } else if (out.rule.app_proto == "smtp" || out.rule.app_proto == "ftp" || out.rule.app_proto == "ssh" ||
             out.rule.app_proto == "smb" || out.rule.app_proto == "ftp-data") {
    out.gate_proto = out.rule.app_proto;
    out.rule.proto = 6;
  } else if (!out.rule.app_proto.empty()) {
    return "skip:app-layer:protocol " + out.rule.app_proto;
  }
  bool have_sid = false;
  std::string why;
  uint8_t cur_buf = kBufPayload;  // the sticky buffer in force
  std::vector<Transform> pending;  // transforms after it not yet registered (transform.hpp)
  uint8_t multi_uses[kBufCount] = {};  // uses of each multi-buffer's keyword so far
  for (auto& [k, v] : opts) {
    // Suricata 8's names of the TCP header keywords (seq, ack and window are their aliases).
    if (k == "tcp.seq" || k == "tcp.ack" || k == "tcp.window") k.erase(0, 4);
    if (k == "requires") {
      // Versions and features held (parse_rule_head); the keywords are checked here.
      for (const std::string& kw : out.rule.requires_keywords)
        if (!signature_keyword_known(kw, vars)) return "skip:requires keyword " + kw;
      continue;
    }
    if (const int b = find_buf(kHeaderBuffers, std::size(kHeaderBuffers), k); b >= 0) {
      // Transforms pending on the buffer before (no option read it): nothing to apply, as for a
      // sticky buffer below.
      cur_buf = uint8_t(b);
      pending.clear();
      continue;
    }
    if (const int b = find_buf(kStickyBuffers, std::size(kStickyBuffers), k); b >= 0) {
      if (std::find(vars.keywords_off.begin(), vars.keywords_off.end(), k) != vars.keywords_off.end())
        return "error:keyword " + k + " is turned off by the configuration";
      // `http.content_type: to_server`: Suricata 8's direction for a buffer of either side, in a
      // transactional rule; the buffers here inspect the side they are met on. An HTTP rule's
      // file.data with one is the body of that side (the request's, or the response's as without).
      if ((v == "to_server" || v == "to_client") && b == kBufHttpResponseBody && k.rfind("file", 0) == 0 &&
          (out.rule.app_proto == "http" || out.rule.app_proto == "http1")) {
        cur_buf = v == "to_server" ? uint8_t(kBufHttpRequestBody) : uint8_t(kBufHttpResponseBody);
        pending.clear();
        out.app = true;
        continue;
      }
      if (v == "to_server" || v == "to_client") return "skip:keyword " + k + " with a direction (" + v + ")";
      cur_buf = uint8_t(b);
      pending.clear();
      out.app = true;
      // (ftp.reply and ftp.completion_code are multi-buffers Suricata does not register as
      // multi-instance: a second use adds to the first.)
      if (instance_buf(cur_buf) && !ftp_buf(cur_buf) && multi_uses[cur_buf]++ > 0) {
        // A multi-buffer's keyword again: a buffer of its own (transform.hpp's instance copies).
        cur_buf = instance_copy(cur_buf, multi_uses[cur_buf] - 1);
        if (cur_buf == kBufPayload)
          return "skip:app-layer:transforms: more than " + std::to_string(kMaxDerivedBufs) +
                 " buffer and transform combinations";
      }
      if (b == kBufHttp2HeaderName) {
        // HTTP/2's transactions only, as the http2.* keywords.
        if (out.app_proto && out.app_proto != 1) return "error:" + k + " on a signature of another protocol";
        out.http_version = 2;
        out.app_proto = 1;
      }
      continue;
    }
    if (k == "frame") {
      // Frames (Suricata's detect-frame.c): HTTP/1's request and response and SIP's pdu, start
      // lines, headers and bodies, the protocol named (`http1.request`, `sip.pdu`) or taken from
      // the rule's header (`alert sip ... frame:request.line`). Other protocols' frames (smb2,
      // dns, ...) are not built.
      const bool http = out.rule.app_proto == "http" || out.rule.app_proto == "http1";
      const bool sip = out.rule.app_proto == "sip";
      const std::string f = v.rfind("sip.", 0) == 0 ? v.substr(4) : (sip ? v : "");
      int sf = -1;
      for (int i = 0; i < int(std::size(kSipFrameNames)) && !f.empty(); ++i)
        if (f == kSipFrameNames[i]) sf = i;
      if (v == "http1.request" || (http && v == "request")) cur_buf = kBufHttpRequestFrame;
      else if (v == "http1.response" || (http && v == "response")) cur_buf = kBufHttpResponseFrame;
      else if (sf >= 0) cur_buf = uint8_t(kBufSipPduFrame + sf);
      else return "skip:keyword frame " + v;
      pending.clear();
      out.app = true;
      continue;
    }
    if (const int b = find_buf(kContentModifiers, std::size(kContentModifiers), k); b >= 0) {
      if (out.ops.empty() || out.ops.back().type != SigOpType::content) return "error:" + k + " without a content right before it";
      out.ops.back().buf = uint8_t(b);
      out.app = true;
      continue;
    }
    if (Transform t; parse_transform(k, v, t, why)) {
      // A transform of the sticky buffer (transform.hpp): the options after it inspect the
      // transformed buffer, a buffer of its own (options before it stay on the plain one, as
      // Suricata starts a new buffer instance when a transform follows matches). The chain is
      // registered when an option first inspects it, so that its prefixes take no place.
      if (!why.empty()) return why;
      if (cur_buf == kBufPayload || cur_buf == kBufBase64)
        return "skip:app-layer:" + k + " without a sticky buffer (pkt_data, base64_data)";
      if (header_buf(cur_buf)) return "skip:keyword " + k + " on " + sig_buf_name(cur_buf);
      // dotprefix right on a name buffer keeps that buffer's own id.
      const uint8_t dot = t.kind == TransformKind::dotprefix && pending.empty() ? dotprefix_buf(cur_buf) : uint8_t(kBufPayload);
      if (dot != kBufPayload) cur_buf = dot;
      else pending.push_back(t);
      continue;
    }
    if (!pending.empty() && find_buf(kStickyBuffers, std::size(kStickyBuffers), k) < 0) {
      const uint8_t next = derive_buf(cur_buf, pending);
      pending.clear();
      // file_data read on the request side (detect_app.cpp) needs the request body's pair too.
      if (next == kBufPayload ||
          (base_buf(next) == kBufHttpResponseBody && rebase_buf(next, kBufHttpResponseBody, kBufHttpRequestBody) == kBufPayload))
        return "skip:app-layer:transforms: more than " + std::to_string(kMaxDerivedBufs) +
               " buffer and transform combinations";
      cur_buf = next;
    }
    if (k == "absent") {
      // Suricata 8's absent: first on its buffer; alone, or (or_else) before other options.
      if (cur_buf == kBufPayload) return "error:absent without a sticky buffer";
      const std::string t = trim(v);
      if (!t.empty() && t != "or_else") return "error:absent: nothing or or_else, not '" + t + "'";
      const uint8_t b = cur_buf;
      if (std::any_of(out.ops.begin(), out.ops.end(), [&](const SigOp& o) { return o.buf == b; }) ||
          std::any_of(out.bsize.begin(), out.bsize.end(), [&](const auto& z) { return z.first == b; }) ||
          std::any_of(out.absent.begin(), out.absent.end(), [&](const auto& z) { return z.first == b; }))
        return "error:absent must come first, right after its buffer";
      if (out.absent.size() == 4) return "skip:keyword absent on more than 4 buffers";
      out.absent.push_back({b, !t.empty()});
      out.app = true;
      continue;
    }
    if (k == "bsize") {
      if (cur_buf == kBufPayload) return "skip:keyword bsize without a sticky buffer";
      if (header_buf(cur_buf)) return std::string("skip:keyword bsize on ") + sig_buf_name(cur_buf);
      NumCond c;
      const std::string r = parse_num_cond(k, v, 65535, c);
      if (!r.empty()) return r;
      out.bsize.push_back({cur_buf, c});
      out.app = true;
      continue;
    }
    if (k == "ssl_version") {
      // Suricata's DetectSslVersionParse: an optional leading '!' (for the whole list), then
      // names separated by commas or spaces, any case, each once.
      static const char* const kNames[] = {"sslv2", "sslv3", "tls1.0", "tls1.1", "tls1.2", "tls1.3"};
      if (out.ssl_version) return "skip:keyword ssl_version twice";
      std::string t = trim(v);
      if (t.empty()) return "error:ssl_version: an empty value";
      if (t[0] == '!') out.ssl_version_neg = true, t.erase(0, 1);
      size_t i = 0;
      while (i < t.size()) {
        size_t n = 0;
        while (i + n < t.size() && !std::isspace(static_cast<unsigned char>(t[i + n])) && t[i + n] != ',') ++n;
        const std::string w = t.substr(i, n);
        int bit = -1;
        for (int b = 0; b < 6; ++b)
          if (strcasecmp(w.c_str(), kNames[b]) == 0) bit = b;
        if (bit < 0) return "error:ssl_version: unknown version '" + w + "' (sslv2, sslv3, tls1.0, tls1.1, tls1.2, tls1.3)";
        if (out.ssl_version & (1u << bit)) return "error:ssl_version: '" + w + "' twice";
        out.ssl_version |= uint8_t(1u << bit);
        i += n;
        while (i < t.size() && (std::isspace(static_cast<unsigned char>(t[i])) || t[i] == ',')) ++i;
      }
      if (out.app_proto && out.app_proto != 2) return "error:ssl_version on a signature of another protocol";
      out.app = true;
      out.app_proto = 2;
      continue;
    }
    if (k == "tls.version") {
      std::string t = trim(v);
      if (t.size() >= 2 && t.front() == '"' && t.back() == '"') t = t.substr(1, t.size() - 2);
      static const std::pair<const char*, uint16_t> kNames[] = {
          {"1.0", 0x0301}, {"1.1", 0x0302}, {"1.2", 0x0303}, {"1.3", 0x0304}};
      out.tls_version_on = true;
      bool named = false;
      for (const auto& [name, ver] : kNames)
        if (t == name) out.tls_version = ver, named = true;
      if (!named) {
        if (t.size() != 6 || t.compare(0, 2, "0x") != 0 || t.find_first_not_of("0123456789abcdefABCDEF", 2) != std::string::npos)
          return "error:tls.version: 1.0, 1.1, 1.2, 1.3 or 0xNNNN, not '" + t + "'";
        out.tls_version = uint16_t(std::stoul(t, nullptr, 16));
        out.tls_version_raw = true;
      }
      if (out.app_proto && out.app_proto != 2) return "error:tls.version on a signature of another protocol";
      out.app = true;
      out.app_proto = 2;
      continue;
    }
    if (k == "tls.subject" || k == "tls.issuerdn" || k == "tls.fingerprint") {
      // Suricata's legacy TLS keywords (detect-tls.c): the server certificate's subject or issuer
      // holds the quoted text (negated with '!': does not hold it; no certificate: no match), or
      // the fingerprint is it (lowercase); a content on tls.cert_subject, tls.cert_issuer or
      // tls.cert_fingerprint that leaves the sticky buffer as it was.
      SigOp op;
      std::string t = trim(v);
      if (!t.empty() && t[0] == '!') {
        op.negated = true;
        t = trim(t.substr(1));
      }
      if (t.size() < 2 || t.front() != '"' || t.back() != '"') return "error:" + k + " needs a quoted value";
      op.bytes = t.substr(1, t.size() - 2);
      op.buf = k == "tls.subject" ? kBufTlsCertSubject : k == "tls.issuerdn" ? kBufTlsCertIssuer : kBufTlsCertFingerprint;
      if (op.buf == kBufTlsCertFingerprint)
        for (char& ch : op.bytes) ch = char(std::tolower(static_cast<unsigned char>(ch)));
      if (out.app_proto && out.app_proto != 2) return "error:" + k + " on a signature of another protocol";
      out.ops.push_back(op);
      out.app = true;
      out.app_proto = 2;
      continue;
    }
    if (k == "tls.cert_chain_len") {
      const std::string r = parse_num_cond(k, v, 65535, out.tls_chain_len);
      if (!r.empty()) return r;
      if (out.app_proto && out.app_proto != 2) return "error:" + k + " on a signature of another protocol";
      out.app = true;
      out.app_proto = 2;
      continue;
    }
    if (k == "tls_cert_expired" || k == "tls_cert_valid") {
      if (!trim(v).empty()) return "error:" + k + " takes no value";
      out.tls_expiry = k == "tls_cert_expired" ? 1 : 2;
      if (out.app_proto && out.app_proto != 2) return "error:" + k + " on a signature of another protocol";
      out.app = true;
      out.app_proto = 2;
      continue;
    }
    if (k == "tls_cert_notbefore" || k == "tls_cert_notafter") {
      Signature::DateCond& c = k == "tls_cert_notbefore" ? out.tls_notbefore : out.tls_notafter;
      const std::string r = parse_date_cond(v, c);
      if (!r.empty()) return "error:" + k + ": " + r;
      if (out.app_proto && out.app_proto != 2) return "error:" + k + " on a signature of another protocol";
      out.app = true;
      out.app_proto = 2;
      continue;
    }
    if (k == "dns.opcode" || k == "dns.rcode" || k == "dns.rrtype") {
      NumCond scratch;
      NumCond& c = k == "dns.opcode" ? out.dns_opcode : k == "dns.rcode" ? out.dns_rcode : scratch;
      if (c.on || (k == "dns.rrtype" && out.dns_rrtype.c.mode != kUintNone)) return "skip:keyword " + k + " twice";
      // dns.rrtype is a multi-integer: VALUE[,INDEX] (uint_array_holds).
      std::string t = trim(v), pre, index;
      if (k == "dns.rrtype") {
        const std::vector<std::string> parts = split_commas(v);
        if (parts.size() > 2) return "skip:dns.rrtype with a subslice";
        t = parts.empty() ? "" : parts[0];
        if (parts.size() == 2) index = parts[1];
      }
      // rcode and rrtype also by name (NXDOMAIN, AAAA, ...), as Suricata's enumerations.
      while (!t.empty() && (t[0] == '!' || t[0] == '<' || t[0] == '>' || t[0] == '=')) pre += t[0], t.erase(0, 1);
      if (pre.find('=') != std::string::npos && pre != "<=" && pre != ">=") return "error:" + k + ": '" + v + "'";
      if (!t.empty() && std::isalpha(static_cast<unsigned char>(t[0])) && k != "dns.opcode") {
        std::string up;
        for (const char ch : t) up += char(std::toupper(static_cast<unsigned char>(ch)));
        int found = -1;
        for (int n = 0; n < (k == "dns.rcode" ? 16 : 65536) && found < 0; ++n)
          if ((k == "dns.rcode" ? dns_rcode_name(uint8_t(n)) : dns_rrtype_name(uint16_t(n))) == up) found = n;
        if (found < 0) return "error:" + k + ": unknown name '" + t + "'";
        t = std::to_string(found);
      }
      if (k == "dns.rrtype") {
        const std::string r = parse_uint_cond(pre + t, 65535, out.dns_rrtype.c);
        if (!r.empty()) return "error:dns.rrtype: " + r;
        const std::string w = index.empty() ? "" : parse_uint_index(index, 127, out.dns_rrtype);
        if (!w.empty()) return "error:dns.rrtype: " + w;
      } else {
        const std::string r = parse_num_cond(k, pre + t, 255, c);
        if (!r.empty()) return r;
      }
      if (out.app_proto && out.app_proto != 3) return "error:" + k + " on a signature of another protocol";
      out.app = true;
      out.app_proto = 3;
      continue;
    }
    if (k == "http2.frametype" || k == "http2.errorcode" || k == "http2.priority" || k == "http2.window" ||
        k == "http2.settings" || k == "http2.size_update") {
      // On HTTP/2's transactions only (Http2Cond).
      Http2Cond c;
      if (std::string r = parse_http2_cond(k, v, c); !r.empty()) return "error:" + k + ": " + r;
      if (out.app_proto && out.app_proto != 1) return "error:" + k + " on a signature of another protocol";
      out.http2_conds.push_back(c);
      out.http_version = 2;
      out.app = true;
      out.app_proto = 1;
      continue;
    }
    if (k == "ftpbounce") {
      // Suricata's DetectFtpbounceMatch: the transaction's PORT request (applayer/ftp.hpp).
      if (out.app_proto && out.app_proto != 8) return "error:ftpbounce on a signature of another protocol";
      if (out.gate_proto == "ftp") out.gate_proto.clear();
      out.ftp_bounce = true;
      out.app = true;
      out.app_proto = 8;
      continue;
    }
    if (k == "ftp.dynamic_port" || k == "ftp.mode" || k == "ftp.reply_received") {
      // The transaction's (applayer/ftp.hpp); Suricata's value syntax (detect-ftp-*.c).
      std::string t = trim(v);
      for (char& ch : t) ch = char(std::tolower(static_cast<unsigned char>(ch)));
      if (k == "ftp.dynamic_port") {
        if (out.ftp_dynamic_port.on) return "skip:keyword " + k + " twice";
        const std::string r = parse_num_cond(k, v, 65535, out.ftp_dynamic_port);
        if (!r.empty()) return r;
      } else if (k == "ftp.mode") {
        if (t != "active" && t != "passive") return "error:ftp.mode: '" + v + "' is neither active nor passive";
        out.ftp_mode = t == "active" ? 1 : 2;
      } else {
        const bool yes = t == "yes" || t == "on" || t == "true" || t == "1";
        const bool no = t == "no" || t == "off" || t == "false" || t == "0";
        if (!yes && !no) return "error:ftp.reply_received: '" + v + "': specify yes or no";
        out.ftp_reply_received = yes ? 1 : 2;
      }
      if (out.app_proto && out.app_proto != 8) return "error:" + k + " on a signature of another protocol";
      if (out.gate_proto == "ftp") out.gate_proto.clear();
      out.app = true;
      out.app_proto = 8;
      continue;
    }
    if (k == "ftpdata_command") {
      // An FTP data connection's command (Suricata's detect-ftpdata.c: lower case names).
      std::string t = trim(v);
      static const char* const kCmds[] = {"stor", "appe", "stou", "retr", "nlst", "list", "mlsd"};
      if (std::find_if(std::begin(kCmds), std::end(kCmds), [&](const char* c) { return t == c; }) == std::end(kCmds))
        return "error:ftpdata_command: '" + v + "' is not one of stor, appe, stou, retr, nlst, list, mlsd";
      for (char& ch : t) ch = char(std::toupper(static_cast<unsigned char>(ch)));
      if (!out.ftpdata_command.empty()) return "skip:keyword " + k + " twice";
      if (!out.gate_proto.empty() && out.gate_proto != "ftp-data") return "error:" + k + " on a signature of another protocol";
      if (out.app_proto) return "error:" + k + " on a signature of another protocol";
      out.ftpdata_command = t;
      out.gate_proto = "ftp-data";
      out.app = true;
      continue;
    }
    if (k == "urilen") {
      auto a = split_commas(v);
      if (a.empty()) return "error:urilen needs a value";
      const std::string r = parse_num_cond(k, a[0], 65535, out.urilen);
      if (!r.empty()) return r;
      for (size_t i = 1; i < a.size(); ++i) {
        if (a[i] == "raw") out.urilen_raw = true;
        else if (a[i] != "norm") return "error:urilen: unknown argument '" + a[i] + "'";
      }
      out.app = true;
      continue;
    }
    std::string err;
    if (apply_name_option(k, v, out.rule, err)) {
      if (!err.empty()) return "error:" + err;
      have_sid = have_sid || k == "sid";
      continue;
    }
    if (k == "content") {
      SigOp op;
      const std::string t = negatable_content(v, op);
      if (!parse_content(t, op.bytes, why)) return "error:" + why;
      op.buf = cur_buf;
      // It must survive the buffer's transforms (Suricata's DetectEngineBufferTypeValidateTransform).
      if (const DerivedBuf* d = derived_buf(cur_buf); d && !op.negated)
        for (const Transform& tr : d->chain)
          if (!transform_accepts(tr, op.bytes))
            return "error:content \"" + t + "\" incompatible with the " + transform_name(tr.kind) + " transform";
      out.ops.push_back(op);
      continue;
    }
    if (k == "filename" || k == "fileext") {
      // Suricata's legacy file keywords, contents on file.name: the name, or ".EXT" at its end; no case.
      SigOp op;
      if (!parse_content(negatable_content(v, op), op.bytes, why)) return "error:" + k + ": " + why;
      if (op.bytes.empty()) return "error:" + k + " needs a value";
      if (k == "fileext") op.bytes = "." + op.bytes, op.endswith = true;
      op.nocase = true;
      for (char& ch : op.bytes) ch = char(std::tolower(static_cast<unsigned char>(ch)));
      op.buf = kBufFileName;
      out.app = true;
      out.ops.push_back(op);
      continue;
    }
    if (k == "filemd5" || k == "filesha1" || k == "filesha256") {
      Signature::FileHashCond c;
      c.algo = k == "filemd5" ? kHashMd5 : k == "filesha1" ? kHashSha1 : kHashSha256;
      std::string t = trim(v);
      if (!t.empty() && t[0] == '!') c.neg = true, t = trim(t.substr(1));
      if (t.size() >= 2 && t.front() == '"' && t.back() == '"') t = t.substr(1, t.size() - 2);
      if (t.empty()) return "error:" + k + " needs a list file";
      c.list = t;
      out.file_hashes.push_back(std::move(c));
      out.app = true;
      continue;
    }
    if (k == "filesize") {
      const std::string r = parse_uint_cond(trim(v), UINT64_MAX, out.filesize);
      if (!r.empty()) return "error:filesize: " + r;
      out.app = true;
      continue;
    }
    if (k == "filestore") {
      out.filestore = true;
      out.app = true;
      continue;
    }
    if (k == "uricontent") {  // content on http.uri, negated as content is (`uricontent:!"x"`)
      SigOp op;
      if (!parse_content(negatable_content(v, op), op.bytes, why)) return "error:" + why;
      op.buf = kBufHttpUri;
      out.app = true;
      out.ops.push_back(op);
      continue;
    }
    if (k == "nocase" || k == "depth" || k == "offset" || k == "distance" || k == "within" || k == "startswith" ||
        k == "endswith" || k == "fast_pattern" || k == "rawbytes") {
      SigOp* c = out.ops.empty() || out.ops.back().type != SigOpType::content ? nullptr : &out.ops.back();
      if (!c) c = last_content(out);
      if (!c) return "error:" + k + " without a content before it";
      if (k == "nocase") {
        c->nocase = true;
        for (char& ch : c->bytes) ch = char(std::tolower(static_cast<unsigned char>(ch)));
      } else if (k == "rawbytes") {
      } else if (k == "startswith") {
        c->startswith = true;
      } else if (k == "endswith") {
        c->endswith = true;
      } else if (k == "fast_pattern") {
        c->fast_pattern = true;
        const std::string t = trim(v);
        if (t == "only") {
          c->fp_only = true;
        } else if (!t.empty()) {
          const auto a = split_commas(t);
          int64_t o, l;
          if (a.size() != 2 || !parse_int(a[0], o) || !parse_int(a[1], l) || o < 0 || l <= 0 || o > 65535 || l > 65535)
            return "error:fast_pattern: '" + t + "' is neither `only` nor OFFSET,LENGTH";
          c->fp_chop = true;
          c->fp_off = uint16_t(o);
          c->fp_len = uint16_t(l);
        }
      } else {
        int32_t n = 0;
        int8_t var = -1;
        const bool dist = k == "distance";
        if (!num_or_var(v, out, n, var, why, dist ? -65535 : 0, 65535)) return "error:" + k + ": " + why;
        if (k == "depth") c->has_depth = true, c->depth = n, c->depth_var = var;
        else if (k == "offset") c->has_offset = true, c->offset = n, c->offset_var = var;
        else if (dist) c->has_distance = true, c->distance = n, c->distance_var = var, c->relative = true;
        else c->has_within = true, c->within = n, c->within_var = var, c->relative = true;
      }
      continue;
    }
    if (k == "pcre") {
      SigOp op;
      op.type = SigOpType::pcre;
      op.buf = kBufCount;  // none named by a flag yet
      const std::string r = parse_pcre(v, op);
      if (starts_with(r, "app-layer:")) return "skip:" + r;
      if (!r.empty()) return r;
      if (op.buf == kBufCount) op.buf = relative_buf(out, op, cur_buf);
      if (header_buf(op.buf)) return std::string("skip:keyword pcre on ") + sig_buf_name(op.buf);
      out.app = out.app || op.buf != kBufPayload;
      // Compile once here so that a bad expression is an error with its line, not a load failure.
      int ec;
      PCRE2_SIZE eo;
      pcre2_code* re = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(op.bytes.data()), op.bytes.size(), op.pcre_options,
                                     &ec, &eo, nullptr);
      if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(ec, msg, sizeof msg);
        return "error:pcre does not compile at offset " + std::to_string(eo) + ": " + reinterpret_cast<char*>(msg);
      }
      pcre2_code_free(re);
      out.ops.push_back(op);
      continue;
    }
    if (k == "isdataat") {
      SigOp op;
      op.type = SigOpType::isdataat;
      auto a = split_commas(v);
      if (a.empty()) return "error:isdataat needs a value";
      std::string n = a[0];
      if (!n.empty() && n[0] == '!') {
        op.negated = true;
        n = trim(n.substr(1));
      }
      if (!num_or_var(n, out, op.offset, op.offset_var, why, 0, 65535)) return "error:isdataat: " + why;
      for (size_t i = 1; i < a.size(); ++i) {
        if (a[i] == "relative") op.relative = true;
        else if (a[i] != "rawbytes") return "error:isdataat: unknown argument '" + a[i] + "'";
      }
      op.buf = relative_buf(out, op, cur_buf);
      out.ops.push_back(op);
      continue;
    }
    if (k == "byte_test" || k == "byte_jump" || k == "byte_extract" || k == "byte_math") {
      SigOp op;
      const std::string r = k == "byte_math" ? parse_byte_math(v, out, op) : parse_byte_op(k, v, out, op);
      if (!r.empty()) return r;
      op.buf = relative_buf(out, op, cur_buf);
      out.ops.push_back(op);
      continue;
    }
    if (k == "pkt_data") {
      cur_buf = kBufPayload;
      continue;
    }
    if (k == "tag") {
      TagSpec t;
      const std::string r = parse_tag_option(v, t);
      if (!r.empty()) return r;
      out.tags.push_back(t);
      continue;
    }
    if (k == "iprep") {
      IprepCond c;
      const std::string r = parse_iprep(v, vars.iprep_categories, c);
      if (!r.empty()) return r;
      out.iprep.push_back(c);
      continue;
    }
    if (k == "dataset" || k == "datarep") {
      // On a sticky buffer only (Suricata refuses it elsewhere).
      if (cur_buf == kBufPayload || cur_buf == kBufBase64) return "error:" + k + " without a sticky buffer";
      if (header_buf(cur_buf) && !ip_addr_buf(cur_buf)) return "skip:keyword " + k + " on " + sig_buf_name(cur_buf);
      DatasetSpec spec;
      const std::string r = k == "dataset" ? parse_dataset_option(v, spec) : parse_datarep_option(v, spec);
      if (!r.empty()) return r;
      SigOp op;
      op.type = SigOpType::dataset;
      op.dataset = int16_t(out.datasets.size());
      out.datasets.push_back(spec);
      op.buf = cur_buf;
      out.ops.push_back(op);
      continue;
    }
    if (k == "base64_decode") {
      if (cur_buf == kBufBase64) return "error:base64_decode after base64_data";
      for (const SigOp& o : out.ops)
        if (o.type == SigOpType::base64_decode) return "error:more than one base64_decode";
      SigOp op;
      op.type = SigOpType::base64_decode;
      op.depth = 65535;
      for (const std::string& a : split_commas(v)) {
        const size_t sp = a.find_first_of(" \t");
        const std::string name = a.substr(0, sp), num = sp == std::string::npos ? "" : trim(a.substr(sp));
        if (name == "relative" && num.empty()) {
          op.relative = true;
        } else if (name == "bytes" || name == "offset") {
          char* end = nullptr;
          const unsigned long n = std::strtoul(num.c_str(), &end, 10);
          if (num.empty() || *end || n > (name == "bytes" ? 65535ul : 0xffffffful))
            return "error:base64_decode: bad " + name + " '" + num + "'";
          if (name == "bytes") op.depth = n ? int32_t(n) : 65535;
          else op.offset = int32_t(n);
        } else {
          return "error:base64_decode: unknown argument '" + a + "'";
        }
      }
      op.buf = relative_buf(out, op, cur_buf);
      out.ops.push_back(op);
      continue;
    }
    if (k == "base64_data") {
      bool decoded = false;
      for (const SigOp& o : out.ops) decoded = decoded || o.type == SigOpType::base64_decode;
      if (!decoded) return "error:base64_data without base64_decode before it";
      cur_buf = kBufBase64;
      continue;
    }
    if (k == "dsize" || k == "itype" || k == "icode") {
      NumCond& c = k == "dsize" ? out.dsize : k == "itype" ? out.itype : out.icode;
      const std::string r = parse_num_cond(k, v, k == "dsize" ? 65535 : 255, c);
      if (!r.empty()) return r;
      continue;
    }
    if (k == "ttl" || k == "tcp.mss") {
      NumCond& c = k == "ttl" ? out.ttl : out.tcp_mss;
      if (c.on) return "skip:keyword " + k + " twice";
      const std::string r = parse_num_cond(k, v, k == "ttl" ? 255 : 65535, c);
      if (!r.empty()) return r;
      continue;
    }
    if (k == "ip_proto") {
      if (out.ip_proto.on) return "skip:keyword ip_proto twice";
      const std::string r = parse_ip_proto(v, out.ip_proto);
      if (!r.empty()) return r;
      continue;
    }
    if (k == "seq" || k == "ack" || k == "window") {
      std::string t = trim(v);
      const bool neg = k == "window" && !t.empty() && t[0] == '!';
      if (neg) t = trim(t.substr(1));
      const uint64_t max = k == "window" ? 65535 : 0xffffffffull;
      if (t.empty() || t.size() > 10 || t.find_first_not_of("0123456789") != std::string::npos || std::stoull(t) > max)
        return "error:" + k + " is a number from 0 to " + std::to_string(max) + ", not '" + v + "'";
      const uint64_t n = std::stoull(t);
      bool& on = k == "seq" ? out.seq_on : k == "ack" ? out.ack_on : out.win_on;
      if (on) return "skip:keyword " + k + " twice";
      on = true;
      if (k == "seq") out.seq = uint32_t(n);
      else if (k == "ack") out.ack = uint32_t(n);
      else out.win = uint16_t(n), out.win_neg = neg;
      continue;
    }
    if (k == "icmp_id" || k == "icmp_seq") {
      NumCond& c = k == "icmp_id" ? out.icmp_id : out.icmp_seq;
      if (c.on) return "skip:keyword " + k + " twice";
      std::string t = trim(v);
      if (t.size() >= 2 && t.front() == '"' && t.back() == '"') t = trim(t.substr(1, t.size() - 2));  // Suricata unquotes
      const std::string r = parse_num_cond(k, t, 65535, c);
      if (!r.empty()) return r;
      continue;
    }
    if (k == "flow.pkts" || k == "flow.bytes" || k == "flow.pkts_toserver" || k == "flow.pkts_toclient" ||
        k == "flow.bytes_toserver" || k == "flow.bytes_toclient" || k == "stream_size" || k == "vlan.id" ||
        k == "vlan.layers" || k == "flow.age") {
      IntCond ic;
      const std::string r = k == "stream_size"         ? parse_stream_size(v, ic)
                            : k.rfind("vlan.", 0) == 0 ? parse_vlan(k, v, ic)
                            : k == "flow.age"          ? parse_flow_age(v, ic)
                                                       : parse_flow_count(k, v, ic);
      if (!r.empty()) return r;
      out.int_conds.push_back(ic);
      continue;
    }
    if (k.size() > 5 && k.ends_with("-csum")) {
      static const std::pair<const char*, uint8_t> kCsums[] = {
          {"ipv4-csum", kCkIpv4}, {"tcpv4-csum", kCkTcpv4}, {"tcpv6-csum", kCkTcpv6}, {"udpv4-csum", kCkUdpv4},
          {"udpv6-csum", kCkUdpv6}, {"icmpv4-csum", kCkIcmpv4}, {"icmpv6-csum", kCkIcmpv6}};
      uint8_t bit = 0;
      for (const auto& [name, b] : kCsums)
        if (k == name) bit = b;
      if (!bit) return "skip:keyword " + k;
      std::string t = trim(v);
      if (t.size() >= 2 && t.front() == '"' && t.back() == '"') t = trim(t.substr(1, t.size() - 2));
      if (strcasecmp(t.c_str(), "valid") == 0) out.csum_valid |= bit;
      else if (strcasecmp(t.c_str(), "invalid") == 0) out.csum_invalid |= bit;
      else return "error:" + k + " is valid or invalid, not '" + v + "'";
      continue;
    }
    if (k == "ipopts") {
      if (out.ipopts) return "error:ipopts twice (Suricata allows one)";
      const std::string r = parse_ipopts(trim(v), out.ipopts);
      if (!r.empty()) return r;
      continue;
    }
    if (k == "decode-event" || k == "engine-event") {
      if (out.decode_event) return "skip:keyword decode-event twice";
      const std::string r = parse_decode_event(trim(v), out.decode_event);
      if (!r.empty()) return r;
      continue;
    }
    if (k == "flags" || k == "tcp.flags") {
      // tcp.flags: Suricata 8's name for flags, same syntax.
      const std::string r = parse_flags(v, out);
      if (!r.empty()) return r;
      continue;
    }
    if (k == "flow") {
      out.flow_keyword = true;
      for (const std::string& o : split_commas(v)) {
        if (o == "to_server" || o == "from_client") out.flow_dir = 1;
        else if (o == "to_client" || o == "from_server") out.flow_dir = 2;
        else if (o == "established") out.flow_est = 1;
        else if (o == "not_established") out.flow_est = 2;
        else if (o == "stateless") {
        } else if (o == "only_stream") out.only_stream = true;
        else if (o == "no_stream") out.no_stream = true;
        else if (o == "only_frag" || o == "no_frag") return "skip:flow " + o;
        else return "error:unknown flow option '" + o + "'";
      }
      if (out.only_stream && out.no_stream) return "error:flow: only_stream and no_stream";
      continue;
    }
    if (k == "flowbits") {
      const std::string r = parse_flowbits(v, out);
      if (!r.empty()) return r;
      continue;
    }
    if (k == "xbits" || k == "hostbits") {
      const std::string r = k == "xbits" ? parse_xbits(v, out) : parse_hostbits(v, out);
      if (!r.empty()) return r;
      continue;
    }
    if (k == "app-layer-event") {
      // An event a parser raises: an HTTP request's anomaly (applayer/http1.hpp), a DNS
      // message's (applayer/dns.hpp), a TLS connection's (applayer/tls.hpp), an FTP
      // transaction's (applayer/ftp.hpp); other events are skipped.
      const std::string ev = trim(v);
      // proto.NAME of a signature protocol (signature.hpp app_proto): its bit into `bits`.
      const auto take = [&](uint32_t bit, uint8_t proto, auto& bits) -> std::string {
        if (!bit) return "skip:app-layer:app-layer-event " + ev;
        if (out.app_proto && out.app_proto != proto) return "error:app-layer-event " + ev + " in a rule of another protocol";
        bits |= decltype(+bits)(bit);
        out.app = true;
        out.app_proto = proto;
        return "";
      };
      const std::string name = ev.substr(std::min<size_t>(ev.size(), 4));
      if (ev.rfind("dns.", 0) == 0) {
        if (std::string r = take(dns_event_bit(name), 3, out.dns_events); !r.empty()) return r;
        continue;
      }
      if (ev.rfind("tls.", 0) == 0) {
        if (std::string r = take(tls_event_bit(name), 2, out.tls_events); !r.empty()) return r;
        continue;
      }
      if (ev.rfind("ssh.", 0) == 0) {
        if (std::string r = take(ssh_event_bit(name), 5, out.ssh_events); !r.empty()) return r;
        if (out.gate_proto == "ssh") out.gate_proto.clear();
        continue;
      }
      if (ev.rfind("smtp.", 0) == 0) {
        if (std::string r = take(smtp_event_bit(ev.substr(5)), 6, out.smtp_events); !r.empty()) return r;
        if (out.gate_proto == "smtp") out.gate_proto.clear();
        continue;
      }
      if (ev.rfind("ftp.", 0) == 0) {
        if (std::string r = take(ftp_event_bit(name), 8, out.ftp_events); !r.empty()) return r;
        if (out.gate_proto == "ftp") out.gate_proto.clear();
        continue;
      }
      if (ev.rfind("http2.", 0) == 0) {
        // HTTP/2's anomalies (applayer/http2.hpp): on HTTP/2's transactions only.
        if (std::string r = take(http2_event_bit(ev.substr(6)), 1, out.http2_events); !r.empty()) return r;
        out.http_version = 2;
        continue;
      }
      const uint64_t bit = ev.rfind("http.", 0) == 0 ? http_event_bit(ev.substr(5)) : 0;
      if (!bit) return "skip:app-layer:app-layer-event " + ev;
      out.http_events |= bit;
      out.app = true;
      continue;
    }
    if (k == "prefilter") {
      // Which keyword the prefilter engine uses: no change to what matches (the engine picks its
      // own prefilter).
      continue;
    }
    if (k == "flowint") {
      const std::string r = parse_flowint(v, out);
      if (!r.empty()) return r;
      continue;
    }
    if (k == "noalert") {
      out.noalert = true;
      out.pass_alerts = false;
      continue;
    }
    if (k == "alert") {
      // Suricata 8's alert keyword (detect-noalert.c): the rule alerts whatever its action, the
      // later of alert and noalert winning. Alert, drop and reject rules alert already; a pass
      // rule alerts at the match that passes (EVE action "allowed"). An accept rule's is the
      // firewall's (its rules files), not the signatures'.
      if (!trim(v).empty()) return "error:alert takes no value";
      if (out.rule.action == RuleAction::accept) return "skip:keyword alert on an accept rule";
      out.noalert = false;
      out.pass_alerts = out.rule.action == RuleAction::pass;
      continue;
    }
    if (app_layer_keyword(k)) return "skip:app-layer:" + k;
    return "skip:keyword " + k;
  }
  if (!have_sid) return "error:no sid";
  for (const auto& z : out.absent) {
    const uint8_t b = z.first;  // not a structured binding: lambdas capture it
    const bool or_else = z.second;
    const bool other = std::any_of(out.ops.begin(), out.ops.end(), [&](const SigOp& o) { return o.buf == b; }) ||
                       std::any_of(out.bsize.begin(), out.bsize.end(), [&](const auto& z) { return z.first == b; });
    if (!or_else && other) return "error:absent: a buffer tested absent is not tested with other options too";
    if (or_else && !other) return "error:absent: or_else expects other options on its buffer";
    if (std::any_of(out.ops.begin(), out.ops.end(), [&](const SigOp& o) { return o.buf == b && o.fast_pattern; }))
      return "error:absent and fast_pattern on one buffer";
  }
  if (out.rule.transactional) {
    // Suricata 8's `=>`: one transaction, request and response buffers; it refuses a rule that one
    // direction could carry. Matched here as a transaction signature with buffers of both sides
    // (at the response, as -> with both does).
    bool server = false, client = false;
    for (const SigOp& o : out.ops) {
      const int side = sig_buf_side(o.buf);
      server = server || (side == 0 && o.buf != kBufPayload);
      client = client || side == 1;
    }
    for (const auto& [b, c] : out.bsize) server = server || sig_buf_side(b) == 0, client = client || sig_buf_side(b) == 1;
    if (!out.app) return "error:=> (a transactional rule) needs application-layer buffers";
    if (!server || !client) return "error:=> with buffers of one direction only: a -> rule does that";
  }
  return finish(out);
}

namespace {
// A signature's dataset files (dataset.hpp): refused when absolute or reaching up with '..' unless
// allowed (Suricata 8's datasets.rules.allow-absolute-filenames), an error when not readable, as
// Suricata fails such a rule's setup. "" when all is well.
std::string check_dataset_files(const Signature& s, const std::string& rule_file, const RuleVars& vars) {
  for (const DatasetSpec& spec : s.datasets) {
    if (spec.load.empty()) continue;
    const std::filesystem::path p = spec.load;
    const bool up = std::any_of(p.begin(), p.end(), [](const std::filesystem::path& c) { return c == ".."; });
    if ((p.is_absolute() || up) && !vars.datasets_allow_absolute)
      return "error:dataset " + spec.name + ": '" + spec.load +
             "' is absolute or has '..' (allowed with datasets.rules.allow-absolute-filenames)";
    const std::string at = dataset_path(spec.load, rule_file);
    if (!std::ifstream(at)) return "error:dataset " + spec.name + ": cannot read " + at;
  }
  return "";
}
}  // namespace

namespace {
// A signature's file hash lists (filemd5, filesha1, filesha256), read beside the rule file when
// relative: one hash a line (lowercase hex of the algorithm's length, what follows it on the line
// ignored), empty lines and lines starting with '#' or whitespace skipped, as Suricata reads
// them. A list read once is shared. An unreadable list or a bad line is the rule's error.
std::string load_file_hash_lists(Signature& s, const std::string& rule_file,
                                 std::map<std::string, std::shared_ptr<const std::unordered_set<std::string>>>& cache) {
  for (Signature::FileHashCond& c : s.file_hashes) {
    const std::string at = dataset_path(c.list, rule_file);
    const size_t len = c.algo == kHashMd5 ? 32 : c.algo == kHashSha1 ? 40 : 64;
    const std::string key = std::to_string(len) + ":" + at;
    if (const auto it = cache.find(key); it != cache.end()) {
      c.hashes = it->second;
      continue;
    }
    std::ifstream in(at);
    if (!in) return "error:" + c.list + ": cannot read " + at;
    auto set = std::make_shared<std::unordered_set<std::string>>();
    std::string line;
    for (uint64_t n = 1; std::getline(in, line); ++n) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty() || line[0] == '#' || line[0] == ' ' || line[0] == '\t') continue;
      std::string h = line.substr(0, line.find_first_of(" \t"));
      for (char& ch : h) ch = char(std::tolower(static_cast<unsigned char>(ch)));
      if (h.size() != len || h.find_first_not_of("0123456789abcdef") != std::string::npos)
        return "error:" + at + ":" + std::to_string(n) + ": not a hash of " + std::to_string(len) + " hex digits";
      set->insert(std::move(h));
    }
    c.hashes = set;
    cache.emplace(key, std::move(set));
  }
  return "";
}
}  // namespace

bool load_signature_file(const std::string& path, const RuleVars& vars, SignatureSet& set,
                         const std::set<std::string>* leave_to_firewall) {
  return read_rule_texts(path, set.errors, set.lines, set.comments, [&](const std::string& text, uint32_t first) {
    if (leave_to_firewall) {
      Rule r;
      if (parse_rule(text, vars, r).empty() && firewall_keeps(r, *leave_to_firewall)) {
        ++set.to_firewall;
        set.firewall_ids.push_back({r.gid, r.sid});
        return;
      }
    }
    Signature s;
    std::string res = parse_signature(text, vars, s);
    if (res.empty()) res = check_dataset_files(s, path, vars);
    if (res.empty()) res = load_file_hash_lists(s, path, set.file_hash_lists);
    if (res.empty()) {
      s.rule.file = path;
      s.rule.line = first;
      s.rule.text = text;
      add_keeping_newest_rev(set.sigs, set.by_id, std::move(s), [](const Signature& x) -> const Rule& { return x.rule; },
                             set.errors, set.duplicates_replaced);
    } else if (starts_with(res, "skip:")) {
      ++set.skipped_by_reason[res.substr(5)];
    } else {
      set.errors.push_back({path, first, res.substr(6)});
    }
  });
}

}  // namespace gaspp
