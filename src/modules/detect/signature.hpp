// modules/detect/signature.hpp — Suricata signatures with payload options: the parser.
//
// A signature is a rule (modules/firewall/rules.hpp: action, protocol, addresses, ports, the
// naming options) plus what it inspects. Read here, in rule order:
//   content:"..."      with nocase, depth, offset, distance, within (numbers or byte_extract
//                      variables), startswith, endswith, fast_pattern (also `only` and `off,len`
//                      chop), rawbytes (no effect: there is no normalized payload); `!` negates
//   pcre:"/re/flags"   flags i s m x A E G (PCRE2 options), R (relative), O, B; `!` negates. The
//                      HTTP buffer flags (U H P C I D M S Y ...) name application-layer buffers
//   isdataat:N[,relative]   `!N` negates; N may be a byte_extract variable
//   byte_test, byte_jump, byte_extract   Suricata's arguments (endianness, string bases, bitmask,
//                      multiplier, align, from_beginning/from_end, post_offset); dce is refused
//   byte_math          bytes (a number or variable), offset, oper (+ - * / << >>), rvalue (a number
//                      or variable), result (a variable, as byte_extract's), endian, string,
//                      relative, bitmask; dce is refused
//   pkt_data           back to the packet payload buffer
//   dataset, datarep   after a sticky buffer: Suricata's datasets (dataset.hpp: isset, isnotset,
//                      set, unset; string, md5, sha256, ipv4, ipv6 / ip sets; load; match subdomain)
//   ip.src, ip.dst     the packet's source / destination address (4 or 16 bytes), a header buffer
//                      below; in an application-layer signature the sender / receiver of the
//                      direction inspected; the one header buffer a dataset can follow
//   ipv4.hdr, ipv6.hdr, tcp.hdr, udp.hdr, icmpv4.hdr, icmpv6.hdr   sticky buffers of the packet's
//                      own headers (Suricata's: the IPv4 header with its options, the IPv6 header
//                      with its extension headers, the TCP header with its options, 8 bytes of
//                      UDP, ICMPv4's 8 bytes plus a timestamp's or router advertisement's body,
//                      ICMPv6's 8). A signature with them is a packet signature; its options on
//                      each buffer are a list of their own, evaluated after the payload's in the
//                      order the rule names them, byte_extract / byte_math variables carried
//                      across. At most two such buffers; pcre, transforms and bsize on them are
//                      skipped, and their contents are not fast patterns (the prefilter reads
//                      payloads)
//   base64_decode[:bytes N][, offset M][, relative]   decodes base64 (Suricata's RFC 4648 mode)
//                      from the buffer's start, or the previous match's end with relative, plus
//                      offset, at most N bytes (default 65535); base64_data: the options after it
//                      inspect the decoded bytes. As Suricata's, the decode ends its buffer's list:
//                      the signature matches there when the base64_data options match the decoded
//                      bytes (never without base64_data). On the application layer's buffers only
//                      (an HTTP, TLS or DNS signature; others are skipped)
//   HTTP buffers       sticky (http.uri, http.uri.raw, http.method, http.protocol, http.request_line,
//                      http.header, http.header.raw, http.host, http.host.raw, http.user_agent,
//                      http.cookie, http.content_type, http.content_len, http.request_body,
//                      http.stat_code, http.stat_msg, http.response_line, http.response_body,
//                      file_data, http.start, http.header_names, http.server, http.location,
//                      http.referer, http.accept, http.accept_enc, http.accept_lang, http.connection,
//                      http.request_header and http.response_header (each header "Name: value", a
//                      multi-buffer)
//                      and their underscore forms) or content modifiers (http_uri, http_raw_uri,
//                      http_method, http_header, http_raw_header, http_cookie, http_user_agent,
//                      http_host, http_raw_host, http_client_body, http_server_body,
//                      http_stat_code, http_stat_msg), uricontent, urilen, and pcre's buffer flags
//                      (U I M H D C V W Z P Q S Y), bsize (on the sticky buffer); the protocol
//                      `http` in the header
//   TLS                tls.sni (tls_sni); the server certificate's tls.cert_subject,
//                      tls.cert_issuer, tls.cert_serial, tls.cert_fingerprint (and their
//                      underscore forms), tls.certs (each certificate of the chain, DER, a
//                      multi-buffer); ja3.hash (ja3_hash), ja3.string, ja3s.hash, ja3s.string;
//                      the protocol `tls` in the header
//   FTP                ftp.command, ftp.command_data (a request: to the server), ftp.reply,
//                      ftp.completion_code (each reply line an instance: to the client), and the
//                      keywords ftp.dynamic_port, ftp.mode, ftp.reply_received
//   SIP                sip.method, sip.uri, sip.request_line (a request), sip.stat_code,
//                      sip.stat_msg, sip.response_line (a response), sip.protocol (either),
//                      sip.from, sip.to, sip.via, sip.user_agent (sip.ua), sip.content_type,
//                      sip.content_length (the direction's message's fields, each an instance);
//                      the protocol `sip` in the header (UDP and TCP); the SDP body's sdp.origin,
//                      sdp.session_name, ..., sdp.media.encryption_key (applayer/sdp.hpp)
//   SSH                ssh.proto (ssh_proto), ssh.software (ssh_software): the sender's
//                      identification string's version and software; the protocol `ssh` in the
//                      header with them
//   files              file.name (file_name; each file's name, an instance), filename:"NAME" (a
//                      content on file.name, nocase), fileext:"EXT" (".EXT" at file.name's end,
//                      nocase), filemd5 / filesha1 / filesha256:[!]LIST (a file of one hash a
//                      line: the file's hash is listed), filesize (N, <N, >N, N<>M, ...), filestore
//                      (accepted; nothing is stored): on HTTP's files (HttpTx::files: the response
//                      body, a PUT's body, a form's parts) or, in an smtp rule, a mail's attachments
//   SMTP               file.data (a mail's attachments, each an instance), smtp.helo,
//                      smtp.mail_from, smtp.rcpt_to (each recipient an instance); the message's
//                      header fields once its header block ended (email.from, email.subject,
//                      email.to, email.cc, email.date, email.message_id, email.x_mailer: the first
//                      such field as written; email.received: each Received field, email.url: each
//                      URL found, multi-buffers) and email.body_md5 (hex, once the message
//                      ended); on `alert smtp`
//   DNS                dns.query (dns_query: each question's name of a request, a multi-buffer);
//                      dns.queries.rrname, dns.answers.rrname (dns.answer.name),
//                      dns.authorities.rrname, dns.additionals.rrname (each record's name, either
//                      direction), dns.response.rrname (a response's names and its records'
//                      CNAME, PTR, MX, NS and SOA mname data); dns.opcode, dns.rcode (numbers or
//                      rcode names) and dns.rrtype (a request's questions', a response's answers'
//                      types: any of them) as integers (N, <N, >N, N-M, !N);
//                      the protocol `dns` in the header (UDP and TCP)
//   transforms         after a sticky buffer (transform.hpp): dotprefix, to_lowercase,
//                      to_uppercase, strip_whitespace, compress_whitespace, to_md5, to_sha1,
//                      to_sha256, url_decode, xor, pcrexform, header_lowercase,
//                      strip_pseudo_headers, from_base64, chained in rule order
//   dsize:N | <N | >N | <=N | >=N | N<>M | N-M | !N; itype, icode (ICMP), ttl (IPv4 TTL, IPv6 hop
//                      limit) and tcp.mss (a TCP packet's MSS option; none: no match) the same way
//   ip_proto:[!<>]N|NAME (the transport protocol: tcp, udp, icmp, ipv6-icmp, gre, esp, sctp, ...)
//   seq:N, ack:N (a TCP packet's sequence and acknowledgement numbers), window:[!]N (its raw window)
//   flags:[+*!]FSRPAUCE0[,IGNORED] (TCP flags; C/1 CWR, E/2 ECE, 0 none)
//   flow:to_server|to_client|from_client|from_server|established|not_established|stateless|
//        only_stream|no_stream
//   flowbits:set|unset|toggle|isset|isnotset,NAME (NAME a|b: any of them; a&b: all) | noalert
//   flowint:NAME,OP[,VALUE] (FlowintCmd)
//   xbits:set|unset|toggle|isset|isnotset,NAME,track ip_src|ip_dst|ip_pair[,expire N] (XbitCmd)
//   iprep:any|src|dst|both,CATEGORY,OP,VALUE | isset | isnotset (iprep.hpp: the packet's addresses'
//                      reputation, decided on the host)
//   tag:session|host[,COUNT,packets|bytes|seconds[,src|dst]] (tag.hpp: the packets after an alert,
//                      logged as EVE `packet` events with tagged-packets=on)
//   threshold / detection_filter, and the naming options of the firewall's parser
// Anything else skips the rule, counted by reason: "app-layer:<keyword>" for what the application
// layer does not bring yet (dns.* but dns.query, tls.* but tls.sni, the transforms domain, tld, gunzip, ..., other app-layer protocols in the header, an http rule
// with payload options, ...), "keyword <k>" for the rest. A line that does not parse is an error with file and line.
//
// Where a rule's payload is inspected (Suricata's SIG_FLAG_REQUIRE_PACKET/STREAM): on TCP, a rule
// with payload options is a stream rule (reassembled data) unless flow:no_stream or dsize makes it
// a packet rule (so do flags, itype, icode); content with depth or offset makes it both; flow:only_stream and the protocol
// tcp-stream make it stream only. Other protocols inspect packets.
//
// Example:
//   SignatureSet set;
//   load_signature_file("emerging-exploit.rules", RuleVars{}, set);  // set.sigs, set.skipped_by_reason
#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "modules/detect/pcre_capture.hpp"
#include "modules/detect/dataset.hpp"
#include "modules/detect/iprep.hpp"
#include "modules/detect/tag.hpp"
#include "modules/detect/uint_cond.hpp"
#include "modules/firewall/rules.hpp"

namespace gaspp {

enum class SigOpType : uint8_t { content, pcre, isdataat, byte_test, byte_jump, byte_extract, base64_decode, byte_math, dataset };

// The buffer an option inspects: the packet payload or stream (kBufPayload), or an HTTP
// transaction's buffer (applayer/http1.hpp), by Suricata's sticky-buffer names and the legacy
// content modifiers. Each buffer belongs to the request or the response side; http.header,
// http.header.raw, http.cookie, http.content_type, http.content_len, http.connection, http.start,
// http.header_names and file_data belong to the side the signature's flow direction names (request without one, as
// Suricata registers them for both and matches either; file_data: the response by default).
inline constexpr int kMaxDerivedBufs = 64;
enum SigBuf : uint8_t {
  kBufPayload = 0,
  kBufHttpUri, kBufHttpUriRaw, kBufHttpMethod, kBufHttpProtocol, kBufHttpRequestLine, kBufHttpHost, kBufHttpHostRaw,
  kBufHttpUserAgent, kBufHttpRequestBody, kBufHttpReferer, kBufHttpAccept, kBufHttpAcceptEnc, kBufHttpAcceptLang,
  kBufHttpConnection,  // either side, as Suricata registers it (sig_buf_side), listed here for its id
  kBufTlsSni, kBufDnsQuery,
  // each request header "Name: value" (a multi-buffer)
  kBufHttpRequestHeader,
  // the dotprefix transform over a name buffer: "." then the buffer
  kBufTlsSniDot, kBufDnsQueryDot, kBufHttpHostDot,
  // DNS names of either direction's message (multi-buffers): questions, answer, authority and
  // additional records; and a response's names and name-valued data (response side)
  kBufDnsQueriesRrname, kBufDnsAnswersRrname, kBufDnsAuthoritiesRrname, kBufDnsAdditionalsRrname,
  kBufDnsResponseRrname,
  kBufJa3Hash, kBufJa3String,
  // either side (by flow direction)
  kBufHttpHeader, kBufHttpHeaderRaw, kBufHttpCookie, kBufHttpContentType, kBufHttpContentLen, kBufHttpStart,
  kBufHttpHeaderNames,
  // response
  kBufHttpStatCode, kBufHttpStatMsg, kBufHttpResponseLine, kBufHttpResponseBody, kBufHttpServer, kBufHttpLocation,
  kBufHttpResponseHeader,  // each response header "Name: value" (a multi-buffer)
  // http2.header_name: each header field's name of the side inspected, pseudo-fields too (HTTP/2's
  // transactions; a multi-buffer of either side, by flow direction)
  kBufHttp2HeaderName,
  // the server's certificate (TLS, to the client)
  kBufTlsCertSubject, kBufTlsCertIssuer, kBufTlsCertSerial, kBufTlsCertFingerprint, kBufTlsCerts,
  kBufTlsSubjectAltName,  // each subjectAltName of the server's certificate (a multi-buffer)
  // the inspected direction's hello: its random (32 bytes), the first 4, the other 28; each ALPN
  // protocol it names (a multi-buffer: the client's offers, the server's choice)
  kBufTlsRandom, kBufTlsRandomTime, kBufTlsRandomBytes, kBufTlsAlpn,
  kBufJa3sHash, kBufJa3sString,
  // SSH's identification strings (either side: the client's to the server, the server's to the client);
  // HASSH from the client's KEXINIT (to the server) and the server's (to the client): MD5 and string
  kBufSshProto, kBufSshSoftware, kBufSshHassh, kBufSshHasshString, kBufSshHasshServer, kBufSshHasshServerString,
  // SIP (applayer/sip.hpp): a request's start line (to the server), a response's (to the client),
  // either message's version; header fields (multi-buffers: each field of the name an instance)
  kBufSipMethod, kBufSipUri, kBufSipRequestLine, kBufSipStatCode, kBufSipStatMsg, kBufSipResponseLine,
  kBufSipProtocol, kBufSipFrom, kBufSipTo, kBufSipVia, kBufSipUserAgent, kBufSipContentType, kBufSipContentLength,
  // SIP's frames (frame:pdu, frame:request.line, ... in a sip rule; applayer/sip.hpp): the message
  // (either side), a request's start line with its CRLF, header fields and body (to the server), a
  // response's (to the client)
  kBufSipPduFrame, kBufSipRequestLineFrame, kBufSipRequestHeadersFrame, kBufSipRequestBodyFrame,
  kBufSipResponseLineFrame, kBufSipResponseHeadersFrame, kBufSipResponseBodyFrame,
  // a SIP message's SDP body (applayer/sdp.hpp; either side: a request's to the server, a
  // response's to the client): session fields, then the multi-buffers (each line, time or media
  // description an instance)
  kBufSdpOrigin, kBufSdpSessionName, kBufSdpSessionInfo, kBufSdpUri, kBufSdpEmail, kBufSdpPhone,
  kBufSdpConnection, kBufSdpTimezone, kBufSdpKey,
  kBufSdpBandwidth, kBufSdpTime, kBufSdpRepeatTime, kBufSdpAttribute, kBufSdpMedia, kBufSdpMediaInfo,
  kBufSdpMediaConnection, kBufSdpMediaKey,
  // HTTP/1's request and response frames (frame:http1.request, frame:http1.response): the message
  // as the transaction holds it (start line, header block, body)
  kBufHttpRequestFrame, kBufHttpResponseFrame,
  // file.name: each file's name of the inspected direction (HttpTx::files; a mail's attachments),
  // a multi-buffer (filename and fileext are contents on it)
  kBufFileName,
  // FTP (applayer/ftp.hpp): a request's command (its table name) and command data (to the server);
  // each reply line's text and completion code (to the client; multi-buffers)
  kBufFtpCommand, kBufFtpCommandData, kBufFtpReply, kBufFtpCompletionCode,
  // a mail's envelope (to the server): HELO/EHLO's name, MAIL FROM's and each RCPT TO's address;
  // then its message's header fields (email.*; received and url are multi-buffers) and body MD5
  kBufSmtpHelo, kBufSmtpMailFrom, kBufSmtpRcptTo,
  kBufEmailFrom, kBufEmailSubject, kBufEmailTo, kBufEmailCc, kBufEmailDate, kBufEmailMessageId, kBufEmailXMailer,
  kBufEmailReceived, kBufEmailUrl, kBufEmailBodyMd5,
  // base64_data: what the signature's base64_decode decoded (not a transaction's buffer)
  kBufBase64,
  // the packet's own headers (not a transaction's buffers): ipv4.hdr, ipv6.hdr, tcp.hdr, udp.hdr,
  // icmpv4.hdr, icmpv6.hdr, then its addresses ip.src and ip.dst (4 bytes for IPv4, 16 for IPv6),
  // in DetHdrBuf's order (detect_tables.hpp)
  kBufIpv4Hdr, kBufIpv6Hdr, kBufTcpHdr, kBufUdpHdr, kBufIcmpv4Hdr, kBufIcmpv6Hdr, kBufIpSrc, kBufIpDst,
  // a sticky buffer with transforms (transform.hpp): registered per process, kMaxDerivedBufs ids
  kBufDerived,
  kBufCount = kBufDerived + kMaxDerivedBufs
};
static_assert(kBufCount <= 255, "buffer ids are bytes");
const char* sig_buf_name(uint8_t b);
// Whether b is one of the packet's header buffers (ipv4.hdr, ..., icmpv6.hdr, ip.src, ip.dst).
inline bool header_buf(uint8_t b) { return b >= kBufIpv4Hdr && b <= kBufIpDst; }
// ip.src / ip.dst: header buffers an application-layer signature reads too (the sender and the
// receiver of the direction it inspects), and the only ones a dataset can test.
inline bool ip_addr_buf(uint8_t b) { return b == kBufIpSrc || b == kBufIpDst; }
// Whether b (or the buffer b transforms) is one of a mail's fields: its envelope, header fields or
// body MD5 (the buffers of an `alert smtp` signature's envelope pass; detect_app.cpp).
bool mail_buf(uint8_t b);
// Whether b (or the buffer b transforms) is one of SIP's (sip.*).
bool sip_buf(uint8_t b);
// Whether b (or the buffer b transforms) is one of FTP's (ftp.*).
bool ftp_buf(uint8_t b);
// Whether b (or the buffer b transforms) is one of SSH's (ssh.proto, ssh.software, ssh.hassh*).
bool ssh_buf(uint8_t b);
// A SIP frame's buffer (kBufSipPduFrame ... kBufSipResponseBodyFrame), and the frame's name as
// Suricata writes it in EVE (frame.type): "pdu", "request.line", ...
bool sip_frame_buf(uint8_t b);
const char* sip_frame_name(uint8_t b);
// Its part of the message for sip_frame_span (applayer/sip.hpp): 0 pdu, 1 start line, 2 headers, 3 body.
int sip_frame_kind(uint8_t b);
// Whether b (or the buffer b transforms) has instances (a multi-buffer: the DNS names, tls.certs,
// a mail's recipients, the HTTP headers one by one; a mail's files, file.data, too, which is the
// body buffer of HTTP's and not counted here).
bool instance_buf(uint8_t b);
// Which side a buffer is read from: 0 request, 1 response, 2 either (by the flow direction, else
// both). kBufPayload in an HTTP signature is the transaction's message of the side inspected.
int sig_buf_side(uint8_t b);

// byte_test operators.
enum SigCmp : uint8_t { kCmpLt, kCmpGt, kCmpEq, kCmpAnd, kCmpXor, kCmpLe, kCmpGe };

// One option of the payload list, as written.
struct SigOp {
  SigOpType type = SigOpType::content;
  std::string bytes;             // content: the bytes; pcre: the expression (between the slashes)
  bool negated = false;
  bool nocase = false;
  bool relative = false;         // content: distance or within given; others: `relative` / R
  bool startswith = false, endswith = false;
  std::vector<PcreCaptureSpec> captures;  // pcre: what its groups are stored into (pcre_capture.hpp)
  bool fast_pattern = false, fp_only = false, fp_chop = false;
  uint16_t fp_off = 0, fp_len = 0;
  bool has_offset = false, has_depth = false, has_distance = false, has_within = false;
  int32_t offset = 0, depth = 0, distance = 0, within = 0;
  // A byte_extract variable in place of the number (index into the rule's variables), or -1.
  int8_t offset_var = -1, depth_var = -1, distance_var = -1, within_var = -1;
  // pcre
  uint32_t pcre_options = 0;     // PCRE2 compile options
  // isdataat: `offset` is N (offset_var its variable)
  // base64_decode: `offset` is the offset, `depth` the bytes (65535 when not given)
  // byte_test / byte_jump / byte_extract
  uint8_t nbytes = 0;
  uint8_t base = 0;              // 0: binary; 8, 10, 16: a string number
  bool little = false;
  uint8_t cmp = kCmpEq;            // byte_test: SigCmp; byte_math: ByteMathOper (detect_tables.hpp)
  uint64_t value = 0;            // byte_test value
  int8_t value_var = -1;
  bool has_mask = false;
  uint64_t mask = 0;
  uint32_t multiplier = 1;
  int32_t post_offset = 0;
  uint32_t align = 0;            // byte_jump: 4 (align); byte_extract: the align value
  bool from_beginning = false, from_end = false;
  int8_t var = -1;               // byte_extract, byte_math: the variable it sets
  int8_t nbytes_var = -1;        // byte_test, byte_jump: a byte_extract variable as the byte count
  int16_t dataset = -1;          // dataset, datarep: its command in Signature::datasets
  uint8_t buf = kBufPayload;     // SigBuf: the buffer it inspects
};

// dsize, itype, icode: N, <N, >N, <=N, >=N, N<>M or N-M (lo < x < hi), !N.
struct NumCond {
  bool on = false;
  uint8_t cmp = kCmpEq;            // kCmpEq, kCmpLt, kCmpGt, kCmpLe, kCmpGe
  bool range = false, neg = false;
  uint16_t lo = 0, hi = 0;
};

struct FlowbitCmd {
  enum Cmd : uint8_t { set, unset, toggle, isset, isnotset } cmd = set;
  bool any = true;                 // names joined by | (any) or & (all)
  std::vector<std::string> names;
};

// flowint:NAME,OP[,VALUE] (Suricata's): set (=), add (+), sub (-) change the flow's integer after
// a match; isset, notset (isnotset) and the comparisons (== != < <= > >=) are conditions. VALUE is
// a number or another flowint's name (0 when that one is not set).
struct FlowintCmd {
  enum Op : uint8_t { set, add, sub, isset, notset, eq, ne, lt, le, gt, ge } op = set;
  std::string name;
  uint32_t value = 0;
  std::string value_var;  // non-empty: the value is that flowint's
  bool condition() const { return op != set && op != add && op != sub; }
};

// xbits:CMD,NAME,track ip_src|ip_dst|ip_pair[,expire SECONDS] (Suricata's): a bit kept per host
// (the packet's source or destination address) or per address pair (either order), set, unset
// or toggled after a match, tested (isset, isnotset) as a condition; a bit lives `expire` seconds
// (default 30) of capture time from its last set.
struct XbitCmd {
  enum Cmd : uint8_t { set, unset, toggle, isset, isnotset } cmd = set;
  enum Track : uint8_t { ip_src, ip_dst, ip_pair } track = ip_src;
  std::string name;
  uint32_t expire = 30;
  bool hostbits = false;  // written with the hostbits keyword (Suricata orders those apart: detect_host.cpp)
  bool condition() const { return cmd == isset || cmd == isnotset; }
};

enum SigMode : uint8_t {
  kSigPacket = 1,      // inspect packet payloads
  kSigStream = 2,      // inspect the reassembled stream (TCP)
  kSigStreamOnly = 4,  // never fall back to the packet payload
};

// An http2.* keyword's condition on the inspected side's frames of an HTTP/2 transaction
// (HttpTx::h2_frames; Suricata's rust/src/http2/detect.rs). frametype, errorcode, priority and
// window are Suricata's multi-integers over the side's frames (a frame without the value — another
// type — counts in the indexes and the subslice but holds no value): any (default), all,
// all_or_absent, or_absent (these two only once the side is complete), the frame at an index
// (oob_or), `nb COND` (how many hold the value's condition; other than > or >= only once complete),
// `count COND` (how many have a value), and a subslice START:END of the frames. settings: some
// SETTINGS frame has the parameter (with a value condition when given); size_update: some header
// block's dynamic table size update holds the condition.
struct Http2Cond {
  enum Kind : uint8_t { kFrameType, kErrorCode, kPriority, kWindow, kSettings, kSizeUpdate };
  enum Index : uint8_t { kAny, kAll, kAllOrAbsent, kOrAbsent, kAt, kNb, kCount };
  uint8_t kind = kFrameType;
  uint8_t index = kAny;
  bool oob_or = false;
  int32_t at = 0;
  int32_t start = 0, end = 0;  // the subslice (0, 0: all)
  UintCond c;                  // the value's (settings: mode none, any value)
  UintCond n;                  // nb's or count's condition on the number
  uint16_t settings_id = 0;
};

struct Signature {
  Rule rule;                       // header and names
  std::vector<SigOp> ops;          // the payload list, in rule order
  std::vector<std::string> vars;   // byte_extract variable names (index = SigOp::var)
  uint8_t flow_dir = 0;            // 1 to_server, 2 to_client
  uint8_t flow_est = 0;            // 1 established, 2 not_established
  bool only_stream = false, no_stream = false;
  NumCond dsize, itype, icode;
  NumCond ttl, tcp_mss, ip_proto;  // packet header conditions (packet signatures)
  bool seq_on = false, ack_on = false, win_on = false, win_neg = false;
  uint32_t seq = 0, ack = 0;
  uint16_t win = 0;
  uint8_t decode_event = 0;        // decode-event: a DecodeEvent the packet raised (fields.hpp)
  NumCond icmp_id, icmp_seq;       // an ICMP message with an identifier (echo, timestamp, ...)
  uint16_t ipopts = 0;             // IpOptBits an IPv4 packet must carry (all of them)
  // flow.pkts, flow.bytes, stream_size, vlan.id, vlan.layers (uint_cond.hpp), all required.
  std::vector<IntCond> int_conds;
  // ipv4-csum, tcpv4-csum, tcpv6-csum, udpv4-csum, udpv6-csum, icmpv4-csum, icmpv6-csum: the
  // checksums that must be valid / invalid (DetCsumBits, detect_tables.hpp)
  uint8_t csum_valid = 0, csum_invalid = 0;
  // Any of the packet header conditions (ttl, tcp.mss, ip_proto, seq, ack, window, decode-event,
  // icmp_id, icmp_seq, ipopts, the checksum keywords, and the integer conditions but stream_size, which a stream match
  // reads at the packet that delivered the data).
  bool header_conds() const {
    return ttl.on || tcp_mss.on || ip_proto.on || seq_on || ack_on || win_on || decode_event || icmp_id.on ||
           icmp_seq.on || ipopts || csum_valid || csum_invalid ||
           std::any_of(int_conds.begin(), int_conds.end(), [](const IntCond& c) { return c.key != kIcStreamSize; });
  }
  bool has_flags = false;
  uint8_t flags_mode = 0;          // 0 exactly, 1 + (all of), 2 * (any of), 3 ! (not all of)
  uint16_t flags_want = 0, flags_ignore = 0;
  std::vector<FlowbitCmd> flowbits;
  std::vector<FlowintCmd> flowints;
  std::vector<XbitCmd> xbits;
  std::vector<IprepCond> iprep;    // iprep (iprep.hpp), all required: decided on the host
  std::vector<DatasetSpec> datasets;  // the dataset and datarep options (SigOp::dataset), as parsed
  std::vector<TagSpec> tags;       // tag options (tag.hpp): applied on the host when the signature alerts
  // filemd5, filesha1, filesha256 (Suricata's): the file's hash is in the list (negated: is not),
  // known once the file closed; all of them, on one file (each file an instance).
  struct FileHashCond {
    uint8_t algo = 0;  // FileHash bit (applayer/mime.hpp)
    bool neg = false;
    std::string list;  // the list file as written (beside the rule file when relative)
    std::shared_ptr<const std::unordered_set<std::string>> hashes;  // lowercase hex, read at load
  };
  std::vector<FileHashCond> file_hashes;
  // filesize: the file's size, compared once it closed or was truncated (Suricata's
  // FILE_SIG_NEED_SIZE).
  UintCond filesize;
  // filestore: accepted; files are not written to disk (gaspp has no file-store output, so the
  // keyword does what Suricata's does with that output off: nothing; docs/rules.md).
  bool filestore = false;
  bool file_conds() const { return !file_hashes.empty() || filesize.mode != kUintNone; }
  bool noalert = false;
  bool pass_alerts = false;  // a pass rule with the alert keyword (Suricata 8): its match alerts too
  bool flow_keyword = false;       // a `flow` option was given (any of its values)
  // Suricata's IP-only (and like-IP-only) signature: nothing but the header, thresholds and
  // flowbits `set`. Its drop or pass applies to the whole flow; other signatures' to the packet
  // they matched, or to the flow when they matched the stream (SignatureProperties).
  bool ip_only = false;
  // Suricata's SIG_TYPE_IPONLY (SignatureIsIPOnly returning 1): what ip_only requires but iprep
  // allowed (it is IP-only compatible), and no negated address or IPv6 range in the header (those
  // make it like-IP-only). The IP-only engine inspects it on the first packet of each direction of
  // a flow only (kDetFirstOnly).
  bool ip_only_engine = false;
  uint8_t mode = 0;                // SigMode bits
  int fast_pattern = -1;           // the op the prefilter looks for (a content), or -1: none
  // An application-layer signature (protocol http, or an option on an HTTP buffer): matched per
  // HTTP transaction on the host (detect.hpp), never on packets or stream pieces.
  bool app = false;
  // A header protocol that the application layer detects but does not parse (smtp, ftp, ssh,
  // smb; Suricata's app_proto name): a packet or stream signature that matches only on flows
  // detected as that protocol, as of the matching packet (decided on the host, detect.hpp).
  std::string gate_proto;
  uint8_t http_version = 0;        // the header's http1 (1) or http2 (2): that version's transactions only
  uint8_t app_proto = 0;           // 1 http, 2 tls, 3 dns, 4 smtp files, 5 ssh, 6 smtp envelope, 7 sip, 8 ftp, 9 ftp-data (from the header's protocol or the buffers)
  // ftp.dynamic_port, ftp.mode (1 active, 2 passive), ftp.reply_received (1 yes, 2 no): the
  // transaction's (applayer/ftp.hpp)
  NumCond ftp_dynamic_port;
  uint8_t ftp_mode = 0, ftp_reply_received = 0;
  bool ftp_bounce = false;         // ftpbounce: a PORT request naming another address than the client's
  std::string ftpdata_command;     // ftpdata_command: an FTP data connection's command (RETR, STOR, ...)
  uint8_t ftp_events = 0;          // app-layer-event:ftp.NAME (applayer/ftp.hpp FtpEvent bits), all required
  uint32_t smtp_events = 0;        // app-layer-event:smtp.NAME (applayer/smtp.hpp SmtpEvent bits), all required
  uint8_t ssh_events = 0;          // app-layer-event:ssh.NAME (applayer/ssh.hpp SshEvent bits), all required
  uint32_t tls_events = 0;         // app-layer-event:tls.NAME (applayer/tls.hpp TlsEvent bits), all required
  uint64_t http_events = 0;        // app-layer-event:http.NAME (applayer/http1.hpp HttpEvent bits), all required
  uint32_t http2_events = 0;       // app-layer-event:http2.NAME (applayer/http2.hpp Http2Event bits), all required
  std::vector<Http2Cond> http2_conds;  // http2.frametype, .errorcode, .priority, .window, .settings, .size_update
  uint16_t dns_events = 0;         // app-layer-event:dns.NAME (applayer/dns.hpp DnsEvent bits), all required
  NumCond urilen;                  // urilen (on the normalized URI, or the raw one with urilen_raw)
  bool urilen_raw = false;
  // tls.version: the hello version of the inspected direction (Suricata's: to the server the
  // ClientHello's, supported_versions first; to the client the ServerHello's), TLS 1.3 drafts
  // counting as 1.3 unless the value is raw (0xNNNN).
  bool tls_version_on = false, tls_version_raw = false;
  uint16_t tls_version = 0;
  NumCond dns_opcode, dns_rcode;   // dns.opcode, dns.rcode
  NumCond tls_chain_len;           // tls.cert_chain_len: the server's certificates
  // tls_cert_notbefore / tls_cert_notafter: the server certificate's date against `at` (mode 1 =,
  // 2 <= (written <), 3 >= (written >), 4 within [at, to] (written a<>b)), in seconds since the epoch.
  struct DateCond {
    uint8_t mode = 0;
    int64_t at = 0, to = 0;
  } tls_notbefore, tls_notafter;
  // tls_cert_expired (1) / tls_cert_valid (2): the server certificate's notAfter against the time
  // of the packet inspecting it (Suricata's flow last time): before it, expired; else valid.
  uint8_t tls_expiry = 0;
  // ssl_version: the inspected direction's version (its hello's: the supported_versions choice,
  // else the hello's version; an SSLv2-framed hello's version field) among these, bit k for sslv2,
  // sslv3, tls1.0, tls1.1, tls1.2, tls1.3 (its drafts too); negated: not among them. A direction
  // without a hello matches neither way (Suricata's DetectSslVersionMatch).
  uint8_t ssl_version = 0;
  bool ssl_version_neg = false;
  IntCond dns_rrtype;              // dns.rrtype: a multi-integer over the questions' or answers' types
  std::vector<std::pair<uint8_t, NumCond>> bsize;  // bsize: (the sticky buffer, its size condition)
  // absent (Suricata 8): (the sticky buffer, or_else). The buffer's list matches when the
  // transaction does not have it; with or_else, one it has goes on to the list's other options.
  std::vector<std::pair<uint8_t, bool>> absent;
};

struct SignatureSet {
  std::vector<Signature> sigs;
  std::map<std::string, uint64_t> skipped_by_reason;  // "app-layer:http_uri", "keyword flowint", ...
  std::vector<RuleError> errors;
  uint64_t lines = 0, comments = 0;
  std::vector<RuleId> firewall_ids;  // their gid and sid (threshold.config entries may name them)
  uint64_t to_firewall = 0;  // with leave_to_firewall: header-only rules the firewall module takes
  // Where each (gid, sid) is in sigs: a rule loaded again keeps the higher rev
  // (add_keeping_newest_rev, firewall/rules.hpp). Counted: duplicates_replaced.
  std::map<std::pair<uint32_t, uint32_t>, size_t> by_id;
  uint64_t duplicates_replaced = 0;
  // The file hash lists read (Signature::FileHashCond), by length and path: read once, shared.
  std::map<std::string, std::shared_ptr<const std::unordered_set<std::string>>> file_hash_lists;
  uint64_t skipped() const;
  uint64_t skipped_app_layer() const;  // those whose reason starts with "app-layer:"
};

// Parses one rule: "" and `out` filled, "skip:<reason>", or "error:<why>".
std::string parse_signature(const std::string& text, const RuleVars& vars, Signature& out);
// Reads a rules file (as load_rules_file: comments, continued lines). False when it cannot be read.
// leave_to_firewall (the flowbit names the rule files read): a rule the firewall keeps (parse_rule
// takes it, firewall_keeps) is left to the firewall module, which matches headers faster (counted
// in to_firewall).
bool load_signature_file(const std::string& path, const RuleVars& vars, SignatureSet& set,
                         const std::set<std::string>* leave_to_firewall = nullptr);

}  // namespace gaspp
