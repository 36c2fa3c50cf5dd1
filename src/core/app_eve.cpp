// core/app_eve.cpp — see app_eve.hpp.
#include "core/app_eve.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <ctime>

#include "applayer/http2.hpp"
#include "core/eve_event.hpp"

namespace gaspp {

namespace {
std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
void str(std::string& j, const char* name, const std::string& v) {
  j += std::string(j.back() == '{' ? "" : ",") + "\"" + name + "\":\"" + json_escape(v) + "\"";
}
}  // namespace

namespace {
// A name without its underscores, as Suricata's logger writes its enumerations (NO_ERROR: NOERROR).
std::string squeezed(const char* name) {
  std::string s;
  for (const char* c = name; *c; ++c)
    if (*c != '_') s += *c;
  return s;
}

// One side's frames as Suricata's log_http2_frames writes them: every SETTINGS frame's parameters
// in one "settings" list (left out without any: an acknowledgement's, as the EVE schema wants one
// at least), the first GOAWAY's or RST_STREAM's error code, the request's first priority
// (PRIORITY, or HEADERS with one; the schema has none in a response), and "has_multiple" naming
// the first of those that came twice. Empty when there is none of them.
std::string eve_http2_frames(const std::vector<HttpTx::H2Frame>& frames, bool request) {
  std::string j;
  bool settings = false;
  for (const HttpTx::H2Frame& f : frames) {
    if (f.settings.empty()) continue;  // only a SETTINGS frame (not an acknowledgement) has parameters
    j += settings ? "" : "\"settings\":[";
    for (const auto& [id, v] : f.settings)
      j += std::string(j.back() == '[' ? "" : ",") + "{\"settings_id\":\"SETTINGS" + squeezed(http2_settings_name(id) + 9) +
           "\",\"settings_value\":" + std::to_string(v) + "}";
    settings = true;
  }
  if (settings) j += "]";
  bool error = false, priority = false, multiple = false;
  for (const HttpTx::H2Frame& f : frames) {
    const char* twice = nullptr;
    if (f.error >= 0) {
      if (!error) {
        const char* n = http2_error_name(uint32_t(f.error));
        j += std::string(j.empty() ? "" : ",") + "\"error_code\":\"" +
             (n ? squeezed(n) : "unknown-" + std::to_string(f.error)) + "\"";
        error = true;
      } else {
        twice = "error_code";
      }
    } else if (f.priority >= 0 && request) {
      if (!priority) {
        j += std::string(j.empty() ? "" : ",") + "\"priority\":" + std::to_string(f.priority);
        priority = true;
      } else {
        twice = "priority";
      }
    }
    if (twice && !multiple) {
      j += std::string(",\"has_multiple\":\"") + twice + "\"";
      multiple = true;
    }
  }
  return j;
}

// HTTP/2's http object, as Suricata's log_http2: version "2", the header blocks' fields as
// decoded (pseudo-fields too), the common fields from them, and the http2 object's stream id.
std::string eve_http2_object(const HttpTx& t) {
  std::string j = "\"http\":{\"version\":\"2\"";
  const auto fields = [&](const char* key, const std::vector<HttpHeader>& fs) {
    if (fs.empty()) return;
    j += std::string(",\"") + key + "\":[";
    for (size_t i = 0; i < fs.size(); ++i)
      j += std::string(i ? "," : "") + "{\"name\":\"" + json_escape(fs[i].name) + "\",\"value\":\"" + json_escape(fs[i].value) + "\"}";
    j += "]";
  };
  fields("request_headers", t.h2_fields[0]);
  fields("response_headers", t.h2_fields[1]);
  const auto field = [&](int side, const char* name) -> const std::string* {
    for (const HttpHeader& h : t.h2_fields[side])
      if (h.name == name) return &h.value;
    return nullptr;
  };
  if (!t.method.empty()) str(j, "http_method", t.method);
  if (t.req_line) str(j, "url", t.uri_raw);
  if (const std::string h = t.hostname(); !h.empty()) str(j, "hostname", h);
  if (const std::string* v = field(0, "user-agent")) str(j, "http_user_agent", *v);
  for (int side = 1; side >= 0; --side)  // one length: the response's, else the request's
    if (const std::string* v = field(side, "content-length"); v && !v->empty() && v->size() < 20 &&
                                                             v->find_first_not_of("0123456789") == std::string::npos) {
      j += ",\"length\":" + *v;
      break;
    }
  if (t.stat_code.size() == 3 && t.stat_code.find_first_not_of("0123456789") == std::string::npos)
    j += ",\"status\":" + std::to_string(std::stoi(t.stat_code));
  j += ",\"http2\":{\"stream_id\":" + std::to_string(t.stream_id);
  for (int side = 0; side < 2; ++side) {
    const std::string f = eve_http2_frames(t.h2_frames[side], side == 0);
    if (!f.empty()) j += std::string(side ? ",\"response\":{" : ",\"request\":{") + f + "}";
  }
  return j + "}}";
}
}  // namespace

std::string eve_http_object(const HttpTx& t) {
  if (t.http2) return eve_http2_object(t);
  std::string j = "\"http\":{";
  int port = -1;
  const std::string host = t.hostname(&port);
  if (!host.empty()) str(j, "hostname", host);
  if (port >= 0 && port <= 65535) j += std::string(j.back() == '{' ? "" : ",") + "\"http_port\":" + std::to_string(port);
  if (t.req_line) str(j, "url", t.uri_raw);
  if (t.has_req_header("User-Agent")) str(j, "http_user_agent", t.req_header("User-Agent"));
  std::string ct = t.resp_header("Content-Type");
  if (!ct.empty()) {
    const size_t semi = ct.find(';');
    if (semi != std::string::npos) ct = ct.substr(0, semi);
    while (!ct.empty() && (ct.back() == ' ' || ct.back() == '\t')) ct.pop_back();
    str(j, "http_content_type", lower(ct));
  }
  if (t.has_req_header("Referer")) str(j, "http_refer", t.req_header("Referer"));
  if (!t.method.empty()) str(j, "http_method", t.method);
  if (!t.protocol.empty()) str(j, "protocol", t.protocol);
  else if (!t.resp_protocol.empty()) str(j, "protocol", t.resp_protocol);
  if (t.stat_code.size() == 3 && std::isdigit(static_cast<unsigned char>(t.stat_code[0])) &&
      std::isdigit(static_cast<unsigned char>(t.stat_code[1])) && std::isdigit(static_cast<unsigned char>(t.stat_code[2])))
    j += std::string(j.back() == '{' ? "" : ",") + "\"status\":" + std::to_string(std::stoi(t.stat_code));
  const std::string loc = t.resp_header("Location");
  if (!loc.empty()) str(j, "redirect", loc);
  j += std::string(j.back() == '{' ? "" : ",") + "\"length\":" + std::to_string(t.response_body_len);
  return j + "}";
}

namespace {
// The head every transaction event shares: time, flow, the packet, the type, client to server.
std::string app_event_head(uint64_t ts_ns, uint64_t flow_id, uint64_t pcap_cnt, const char* type, const FlowKey& key,
                           bool client_lo) {
  std::string j = "{\"timestamp\":\"" + eve_timestamp(ts_ns) + "\",\"flow_id\":" + std::to_string(flow_id);
  if (pcap_cnt) j += ",\"pcap_cnt\":" + std::to_string(pcap_cnt);
  j += std::string(",\"event_type\":\"") + type + "\"" + flow_endpoints_json(key, client_lo ? 0 : 1);
  return j + ",\"pkt_src\":\"wire/pcap\"";
}
}  // namespace

std::string eve_applayer_anomaly_event(uint64_t ts_ns, uint64_t flow_id, uint64_t pcap_cnt, const FlowKey& key, bool src_lo,
                                       uint64_t tx_id, const char* app_proto, const char* event, bool upper) {
  std::string name = event;
  if (upper)
    for (char& c : name) c = char(std::toupper(static_cast<unsigned char>(c)));
  return app_event_head(ts_ns, flow_id, pcap_cnt, "anomaly", key, src_lo) + ",\"tx_id\":" + std::to_string(tx_id) +
         ",\"anomaly\":{\"app_proto\":\"" + app_proto + "\",\"type\":\"applayer\",\"event\":\"" + name +
         "\",\"layer\":\"proto_parser\"}}";
}

std::string eve_http_event(uint64_t ts_ns, uint64_t flow_id, uint64_t pcap_cnt, const FlowKey& key, bool client_lo,
                           const HttpTx& t) {
  return app_event_head(ts_ns, flow_id, pcap_cnt, "http", key, client_lo) + ",\"tx_id\":" + std::to_string(t.id) + "," +
         eve_http_object(t) + "}";
}

namespace {
// An X.509 time as Suricata logs it: ISO 8601, UTC, no offset ("2024-05-01T12:00:00").
std::string x509_time(int64_t t) {
  const time_t tt = time_t(t);
  struct tm tm {};
  gmtime_r(&tt, &tm);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%S", &tm);
  return b;
}
}  // namespace

std::string eve_tls_object(const TlsTx& t) {
  // Suricata's order (output-json-tls.c, its extended fields): subject, issuerdn, subjectaltname,
  // serial, fingerprint, sni, version, notbefore, notafter, client_alpns, server_alpns, then the
  // client's certificate ("client": subject, issuerdn, fingerprint, serial, notbefore, notafter)
  // when it sent one.
  std::string j = "\"tls\":{";
  const auto list = [&](const char* name, const std::vector<std::string>& v) {
    if (v.empty()) return;
    j += std::string(j.back() == '{' ? "" : ",") + "\"" + name + "\":[";
    for (size_t i = 0; i < v.size(); ++i) j += (i ? ",\"" : "\"") + json_escape(v[i]) + "\"";
    j += "]";
  };
  const TlsCert& s = t.cert[1];
  if (s.decoded) {
    str(j, "subject", s.subject);
    str(j, "issuerdn", s.issuer);
    list("subjectaltname", s.sans);
    str(j, "serial", s.serial);
  }
  if (!s.fingerprint.empty()) str(j, "fingerprint", s.fingerprint);
  if (!t.sni.empty()) str(j, "sni", t.sni);
  const uint16_t v = t.server_hello ? t.server_version : t.client_version;
  str(j, "version", tls_version_name(v));
  if (s.decoded && s.not_before) str(j, "notbefore", x509_time(s.not_before));
  if (s.decoded && s.not_after) str(j, "notafter", x509_time(s.not_after));
  list("client_alpns", t.alpn[0]);
  list("server_alpns", t.alpn[1]);
  if (const TlsCert& c = t.cert[0]; c.decoded) {
    j += ",\"client\":{";
    str(j, "subject", c.subject);
    str(j, "issuerdn", c.issuer);
    if (!c.fingerprint.empty()) str(j, "fingerprint", c.fingerprint);
    if (!c.serial.empty()) str(j, "serial", c.serial);
    if (c.not_before) str(j, "notbefore", x509_time(c.not_before));
    if (c.not_after) str(j, "notafter", x509_time(c.not_after));
    j += "}";
  }
  return j + "}";
}

std::string eve_tls_event(uint64_t ts_ns, uint64_t flow_id, uint64_t pcap_cnt, const FlowKey& key, bool client_lo,
                          const TlsTx& t) {
  return app_event_head(ts_ns, flow_id, pcap_cnt, "tls", key, client_lo) + "," + eve_tls_object(t) + "}";
}

std::string eve_ssh_object(const SshTx& t) {
  std::string j = "\"ssh\":{";
  const char* side[2] = {"client", "server"};
  bool first = true;
  for (int d = 0; d < 2; ++d) {
    if (!t.banner[d]) continue;
    if (!first) j += ",";
    first = false;
    j += std::string("\"") + side[d] + "\":{\"proto_version\":\"" + json_escape(t.proto[d]) + "\"";
    if (!t.software[d].empty()) j += ",\"software_version\":\"" + json_escape(t.software[d]) + "\"";
    if (t.log_hassh && t.kex[d])
      j += ",\"hassh\":{\"hash\":\"" + json_escape(t.hassh[d]) + "\",\"string\":\"" + json_escape(t.hassh_string[d]) + "\"}";
    j += "}";
  }
  return j + "}";
}

std::string eve_ssh_event(uint64_t ts_ns, uint64_t flow_id, uint64_t pcap_cnt, const FlowKey& key, bool client_lo,
                          const SshTx& t) {
  return app_event_head(ts_ns, flow_id, pcap_cnt, "ssh", key, client_lo) + "," + eve_ssh_object(t) + "}";
}

namespace {
// Suricata's sdp object (rust/src/sdp/logger.rs).
std::string eve_sdp_object(const SdpMessage& m) {
  const auto list = [](std::string& j, const char* name, const std::vector<std::string>& v) {
    if (v.empty()) return;
    j += std::string(",\"") + name + "\":[";
    for (size_t i = 0; i < v.size(); ++i) j += (i ? ",\"" : "\"") + json_escape(v[i]) + "\"";
    j += "]";
  };
  std::string j = "\"sdp\":{\"origin\":\"" + json_escape(m.origin) + "\"";
  str(j, "session_name", m.session_name);
  if (m.has_info) str(j, "session_info", m.session_info);
  if (m.has_uri) str(j, "uri", m.uri);
  if (m.has_email) str(j, "email", m.email);
  if (m.has_phone) str(j, "phone_number", m.phone);
  if (m.has_connection) str(j, "connection_data", m.connection);
  list(j, "bandwidths", m.bandwidths);
  j += ",\"time_descriptions\":[";
  for (size_t i = 0; i < m.times.size(); ++i) {
    j += (i ? ",{\"time\":\"" : "{\"time\":\"") + json_escape(m.times[i].time) + "\"";
    if (m.times[i].has_repeat) str(j, "repeat_time", m.times[i].repeat);
    j += "}";
  }
  j += "]";
  if (m.has_timezone) str(j, "timezone", m.timezone);
  if (m.has_key) str(j, "encryption_key", m.key);
  list(j, "attributes", m.attributes);
  if (!m.media.empty()) {
    j += ",\"media_descriptions\":[";
    for (size_t i = 0; i < m.media.size(); ++i) {
      const SdpMedia& d = m.media[i];
      j += (i ? ",{\"media\":\"" : "{\"media\":\"") + json_escape(d.media) + "\"";
      if (d.has_info) str(j, "media_info", d.info);
      list(j, "bandwidths", d.bandwidths);
      if (d.has_connection) str(j, "connection_data", d.connection);
      if (d.has_key) str(j, "encryption_key", d.key);
      list(j, "attributes", d.attributes);
      j += "}";
    }
    j += "]";
  }
  return j + "}";
}
}  // namespace

std::string eve_sip_object(const SipTx& t) {
  // Suricata's order (rust/src/sip/log.rs).
  std::string j = "\"sip\":{";
  if (t.request) {
    j += "\"method\":\"" + json_escape(t.method) + "\"";
    str(j, "uri", t.uri);
    str(j, "version", t.version);
    if (t.has_sdp) j += "," + eve_sdp_object(t.sdp);
    if (!t.line.empty()) str(j, "request_line", t.line);
  } else {
    j += "\"version\":\"" + json_escape(t.version) + "\"";
    str(j, "code", t.code);
    str(j, "reason", t.reason);
    if (t.has_sdp) j += "," + eve_sdp_object(t.sdp);
    if (!t.line.empty()) str(j, "response_line", t.line);
  }
  return j + "}";
}

std::string eve_sip_event(uint64_t ts_ns, uint64_t flow_id, uint64_t pcap_cnt, const FlowKey& key, bool client_lo,
                          const SipTx& t) {
  // src: the message's sender (Suricata logs it with the packet that carried it).
  const bool src_lo = t.request ? client_lo : !client_lo;
  return app_event_head(ts_ns, flow_id, pcap_cnt, "sip", key, src_lo) + "," + eve_sip_object(t) + "}";
}

std::string eve_ftp_object(const FtpTx& t) {
  std::string j = "\"ftp\":{";
  const auto sep = [&] { return j.back() == '{' ? "" : ","; };
  if (t.has_command()) {
    j += "\"command\":\"" + json_escape(t.command) + "\"";
    if (!t.command_data.empty()) {
      str(j, "command_data", t.command_data);
      j += std::string(",\"command_truncated\":") + (t.command_truncated ? "true" : "false");
    }
  }
  // The codes of the lines that have one, and the texts that are not empty (not aligned).
  const auto list = [&](const char* name, const std::vector<std::string>& v) {
    bool open = false;
    for (const std::string& x : v) {
      if (x.empty()) continue;
      j += open ? "," : std::string(sep()) + "\"" + name + "\":[";
      j += "\"" + json_escape(x) + "\"";
      open = true;
    }
    if (open) j += "]";
  };
  list("completion_code", t.codes);
  list("reply", t.replies);
  if (t.dynamic_port) j += std::string(sep()) + "\"dynamic_port\":" + std::to_string(t.dynamic_port);
  if (t.mode_cmd) j += std::string(sep()) + "\"mode\":\"" + (t.active ? "active" : "passive") + "\"";
  j += std::string(sep()) + "\"reply_received\":\"" + (t.done ? "yes" : "no") + "\"";
  j += std::string(",\"reply_truncated\":") + (t.reply_truncated ? "true" : "false");
  return j + "}";
}

std::string eve_ftp_event(uint64_t ts_ns, uint64_t flow_id, uint64_t pcap_cnt, const FlowKey& key, bool client_lo,
                          const FtpTx& t) {
  return app_event_head(ts_ns, flow_id, pcap_cnt, "ftp", key, client_lo) + "," + eve_ftp_object(t) + "}";
}

std::string eve_ftp_data_object(const FtpDataTx& t) {
  std::string j = "\"ftp_data\":{";
  if (t.has_file) str(j, "filename", t.file_name);
  if (!t.command.empty()) str(j, "command", t.command);
  return j + "}";
}

std::string eve_ftp_data_event(uint64_t ts_ns, uint64_t flow_id, uint64_t pcap_cnt, const FlowKey& key, bool client_lo,
                               const FtpDataTx& t) {
  return app_event_head(ts_ns, flow_id, pcap_cnt, "ftp_data", key, client_lo) + "," + eve_ftp_data_object(t) + "}";
}

std::string eve_smtp_objects(const SmtpTx& t) {
  const auto opt = [](std::string& j, const char* name, const std::string& v) {
    if (!v.empty()) str(j, name, v);
  };
  const auto list = [](std::string& j, const char* name, const std::vector<std::string>& v) {
    if (v.empty()) return;
    j += std::string(j.back() == '{' ? "" : ",") + "\"" + name + "\":[";
    for (size_t i = 0; i < v.size(); ++i) j += (i ? ",\"" : "\"") + json_escape(v[i]) + "\"";
    j += "]";
  };
  std::string j = "\"smtp\":{";
  opt(j, "helo", t.helo);
  opt(j, "mail_from", t.mail_from);
  list(j, "rcpt_to", t.rcpt_to);
  j += "}";
  if (!t.data) return j;
  j += ",\"email\":{\"status\":\"";
  j += t.message_done ? "PARSE_DONE" : t.headers_done ? "HEADER_READY" : "BODY_STARTED";
  j += "\"";
  opt(j, "from", t.from);
  list(j, "to", t.to);
  list(j, "cc", t.cc);
  opt(j, "subject", t.subject);
  opt(j, "date", t.date);
  opt(j, "message_id", t.message_id);
  opt(j, "x_mailer", t.x_mailer);
  if (t.mime) {
    list(j, "attachment", t.mime->attachments());
    // Suricata logs them last found first.
    list(j, "url", std::vector<std::string>(t.mime->urls().rbegin(), t.mime->urls().rend()));
  }
  // eve-log smtp md5 (smtp.hpp: kMailMd5*).
  if (t.log_body_md5) opt(j, "body_md5", t.body_md5);
  opt(j, "subject_md5", t.subject_md5);
  return j + "}";
}

std::string eve_file_object(const MimeFile& f, uint64_t tx_id) {
  std::string j = "{\"filename\":\"" + json_escape(f.name) + "\",\"gaps\":false,\"state\":\"" +
                  (f.closed ? "CLOSED" : f.truncated ? "TRUNCATED" : "UNKNOWN") + "\"";
  if (f.closed && !f.md5.empty()) j += ",\"md5\":\"" + f.md5 + "\"";
  if (f.closed && !f.sha1.empty()) j += ",\"sha1\":\"" + f.sha1 + "\"";
  if (!f.sha256.empty()) j += ",\"sha256\":\"" + f.sha256 + "\"";
  return j + ",\"stored\":false,\"size\":" + std::to_string(f.size) + ",\"tx_id\":" + std::to_string(tx_id) + "}";
}

namespace {
std::string fileinfo_object(const MimeFile& f, uint64_t tx_id) { return ",\"fileinfo\":" + eve_file_object(f, tx_id) + "}"; }
}  // namespace

std::string eve_fileinfo_event(uint64_t ts_ns, uint64_t flow_id, uint64_t pcap_cnt, const FlowKey& key, bool client_lo,
                               const SmtpTx& t, const MimeFile& f) {
  return app_event_head(ts_ns, flow_id, pcap_cnt, "fileinfo", key, client_lo) + "," + eve_smtp_objects(t) +
         ",\"app_proto\":\"smtp\"" + fileinfo_object(f, t.id);
}

std::string eve_fileinfo_event(uint64_t ts_ns, uint64_t flow_id, uint64_t pcap_cnt, const FlowKey& key, bool client_lo,
                               const HttpTx& t, int side, const MimeFile& f) {
  // From the file's sender: the server for a response's.
  return app_event_head(ts_ns, flow_id, pcap_cnt, "fileinfo", key, side == 1 ? !client_lo : client_lo) + "," +
         eve_http_object(t) + (t.http2 ? ",\"app_proto\":\"http2\"" : ",\"app_proto\":\"http\"") + fileinfo_object(f, t.id);
}

std::string eve_fileinfo_event(uint64_t ts_ns, uint64_t flow_id, uint64_t pcap_cnt, const FlowKey& key, bool client_lo,
                               const FtpDataTx& t, int side, const MimeFile& f) {
  return app_event_head(ts_ns, flow_id, pcap_cnt, "fileinfo", key, side == 1 ? !client_lo : client_lo) + "," +
         eve_ftp_data_object(t) + ",\"app_proto\":\"ftp-data\"" + fileinfo_object(f, t.id);
}

std::string eve_smtp_event(uint64_t ts_ns, uint64_t flow_id, uint64_t pcap_cnt, const FlowKey& key, bool client_lo,
                           const SmtpTx& t) {
  return app_event_head(ts_ns, flow_id, pcap_cnt, "smtp", key, client_lo) + ",\"tx_id\":" + std::to_string(t.id) + "," +
         eve_smtp_objects(t) + "}";
}

namespace {
void sep(std::string& j) {
  if (j.back() != '{' && j.back() != '[') j += ',';
}
void num(std::string& j, const char* name, uint64_t v) {
  sep(j);
  j += std::string("\"") + name + "\":" + std::to_string(v);
}
void yes(std::string& j, const char* name) {
  sep(j);
  j += std::string("\"") + name + "\":true";
}
std::string quoted(const std::string& v) { return "\"" + json_escape(v) + "\""; }

std::string hex_of(const std::string& b, const char* between) {
  static const char kHex[] = "0123456789abcdef";
  std::string h;
  for (size_t i = 0; i < b.size(); ++i) {
    if (i) h += between;
    h += kHex[uint8_t(b[i]) >> 4];
    h += kHex[uint8_t(b[i]) & 15];
  }
  return h;
}

// Suricata's dns_print_addr: dotted IPv4; IPv6 as eight groups of four hex digits; else "".
std::string dns_addr(const std::string& a) {
  if (a.size() == 4)
    return std::to_string(uint8_t(a[0])) + "." + std::to_string(uint8_t(a[1])) + "." + std::to_string(uint8_t(a[2])) +
           "." + std::to_string(uint8_t(a[3]));
  if (a.size() != 16) return "";
  std::string s;
  for (size_t i = 0; i < 16; i += 2) {
    if (i) s += ':';
    s += hex_of(a.substr(i, 2), "");
  }
  return s;
}

std::string soa_object(const DnsRecord::Soa& s) {
  std::string j = "{";
  str(j, "mname", s.mname);
  if (s.mname_truncated) yes(j, "mname_truncated");
  str(j, "rname", s.rname);
  if (s.rname_truncated) yes(j, "rname_truncated");
  num(j, "serial", s.serial);
  num(j, "refresh", s.refresh);
  num(j, "retry", s.retry);
  num(j, "expire", s.expire);
  num(j, "minimum", s.minimum);
  return j + "}";
}
std::string sshfp_object(const DnsRecord& r) {
  std::string j = "{";
  str(j, "fingerprint", hex_of(r.data, ":"));
  num(j, "algo", r.algo);
  num(j, "type", r.fp_type);
  return j + "}";
}
std::string srv_object(const DnsRecord& r) {
  std::string j = "{";
  num(j, "priority", r.priority);
  num(j, "weight", r.weight);
  num(j, "port", r.port);
  str(j, "name", r.data);
  return j + "}";
}

// dns_log_json_answer_detail: one object (TXT: one per string, i its index).
std::string record_detail(const DnsRecord& r, size_t i) {
  std::string j = "{";
  str(j, "rrname", r.name);
  if (r.name_truncated) yes(j, "rrname_truncated");
  str(j, "rrtype", dns_rrtype_name(r.rrtype));
  num(j, "ttl", r.ttl);
  switch (r.kind) {
    case DnsRecord::kAddr: str(j, "rdata", dns_addr(r.data)); break;
    case DnsRecord::kName:
      str(j, "rdata", r.data);
      if (r.data_truncated) yes(j, "rdata_truncated");
      break;
    case DnsRecord::kTxt: str(j, "rdata", r.txt[i]); break;
    case DnsRecord::kNull: str(j, "rdata", r.data); break;
    case DnsRecord::kSoa: j += ",\"soa\":" + soa_object(r.soa); break;
    case DnsRecord::kSshfp: j += ",\"sshfp\":" + sshfp_object(r); break;
    case DnsRecord::kSrv: j += ",\"srv\":" + srv_object(r); break;
    case DnsRecord::kOpt: {
      j += ",\"opt\":[";
      for (size_t k = 0; k < r.opt.size(); ++k)
        j += std::string(k ? "," : "") + "{\"code\":" + std::to_string(r.opt[k].first) + ",\"data\":\"" +
             hex_of(r.opt[k].second, "") + "\"}";
      j += "]";
      break;
    }
    default: break;
  }
  return j + "}";
}

// A section's records, TXT records expanded to one entry per string.
void records_array(std::string& j, const char* name, const std::vector<DnsRecord>& rs, bool skip_empty_opt) {
  std::string a;
  for (const DnsRecord& r : rs) {
    if (skip_empty_opt && r.kind == DnsRecord::kOpt && r.opt.empty()) continue;
    if (r.kind == DnsRecord::kTxt) {
      for (size_t i = 0; i < r.txt.size(); ++i) a += (a.empty() ? "" : ",") + record_detail(r, i);
    } else {
      a += (a.empty() ? "" : ",") + record_detail(r, 0);
    }
  }
  if (a.empty() && skip_empty_opt) return;
  sep(j);
  j += std::string("\"") + name + "\":[" + a + "]";
}

// dns_log_json_answers' grouped format: the answers' data by type, types in order of appearance.
std::string grouped(const std::vector<DnsRecord>& rs) {
  std::vector<std::pair<std::string, std::string>> g;  // type → items
  const auto add = [&](const std::string& type, const std::string& item) {
    auto it = std::find_if(g.begin(), g.end(), [&](const auto& e) { return e.first == type; });
    if (it == g.end()) {
      g.emplace_back(type, "");
      it = g.end() - 1;
    }
    it->second += (it->second.empty() ? "" : ",") + item;
  };
  for (const DnsRecord& r : rs) {
    const std::string type = dns_rrtype_name(r.rrtype);
    switch (r.kind) {
      case DnsRecord::kAddr: add(type, quoted(dns_addr(r.data))); break;
      case DnsRecord::kName:
      case DnsRecord::kNull: add(type, quoted(r.data)); break;
      case DnsRecord::kTxt:
        for (const std::string& t : r.txt) add(type, quoted(t));
        break;
      case DnsRecord::kSoa: add(type, soa_object(r.soa)); break;
      case DnsRecord::kSshfp: add(type, sshfp_object(r)); break;
      case DnsRecord::kSrv: add(type, srv_object(r)); break;
      default: break;
    }
  }
  std::string j = "{";
  for (const auto& [type, items] : g) j += std::string(j.size() > 1 ? "," : "") + quoted(type) + ":[" + items + "]";
  return j + "}";
}
}  // namespace

std::string eve_dns_object(const DnsTx& t, bool with_grouped) {
  const DnsMessage& m = t.msg;
  std::string j = "\"dns\":{\"version\":3";
  str(j, "type", t.request ? "request" : "response");
  num(j, "tx_id", t.id);
  num(j, "id", m.id);
  char flags[8];
  std::snprintf(flags, sizeof flags, "%x", unsigned(m.flags));
  str(j, "flags", flags);
  if (m.flags & 0x8000) yes(j, "qr");
  if (m.flags & 0x0400) yes(j, "aa");
  if (m.flags & 0x0200) yes(j, "tc");
  if (m.flags & 0x0100) yes(j, "rd");
  if (m.flags & 0x0080) yes(j, "ra");
  if (m.flags & 0x0040) yes(j, "z");
  num(j, "opcode", m.opcode());
  str(j, "rcode", dns_rcode_name(m.rcode()));
  if (!m.queries.empty()) {
    j += ",\"queries\":[";
    for (size_t i = 0; i < m.queries.size(); ++i) {
      const DnsQuery& q = m.queries[i];
      j += std::string(i ? "," : "") + "{\"rrname\":" + quoted(q.name) + ",\"rrtype\":" + quoted(dns_rrtype_name(q.rrtype));
      if (q.truncated) j += ",\"rrname_truncated\":true";
      j += "}";
    }
    j += "]";
  }
  if (!m.answers.empty()) {
    records_array(j, "answers", m.answers, false);
    if (with_grouped) j += ",\"grouped\":" + grouped(m.answers);
  }
  if (!m.authorities.empty()) records_array(j, "authorities", m.authorities, false);
  if (!m.additionals.empty()) records_array(j, "additionals", m.additionals, true);
  return j + "}";
}

std::string eve_dns_event(uint64_t ts_ns, uint64_t flow_id, uint64_t pcap_cnt, const FlowKey& key, bool client_lo,
                          const DnsTx& t) {
  // src: the message's sender. app_event_head's client_lo names the src endpoint as key endpoint 0.
  const bool src_lo = t.request ? client_lo : !client_lo;
  return app_event_head(ts_ns, flow_id, pcap_cnt, "dns", key, src_lo) + "," + eve_dns_object(t) + "}";
}

}  // namespace gaspp
