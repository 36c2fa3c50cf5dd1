// core/app_eve.hpp — EVE `http`, `tls` and `dns` events (Suricata's eve-log types) of the application
// layer's transactions (applayer/http1.hpp, applayer/tls.hpp).
//
// One event per transaction, when its response has finished (or, for one that never got a
// response, when its flow leaves the table): the client as src, the server as dest (whatever
// direction the completing packet went), tx_id, and the `http` object with Suricata's default
// fields: hostname (normalized: lowercase, no port), http_port (when the Host header names one),
// url (the request target as sent), http_user_agent, http_content_type (the response's media type,
// lowercase, no parameters), http_refer, http_method, protocol, status, redirect (Location), length
// (the response body's bytes on the wire).
#pragma once
#include <cstdint>
#include <string>

#include "applayer/dns.hpp"
#include "applayer/http1.hpp"
#include "applayer/tls.hpp"
#include "applayer/smtp.hpp"
#include "applayer/ftp.hpp"
#include "applayer/ftp_data.hpp"
#include "applayer/sip.hpp"
#include "applayer/ssh.hpp"
#include "gaspp/flow.hpp"

namespace gaspp {

// EVE `anomaly` events of type applayer (Suricata's anomaly log, its applayer type): one per
// app-layer event a transaction raised, `"tx_id"` and `"anomaly":{"app_proto","type":"applayer",
// "event" (Suricata's name: uppercase for libhtp's events, as written for the Rust parsers'),
// "layer":"proto_parser"}`; src the sender of the packet that raised it (src_lo: key endpoint 0
// sent it).
std::string eve_applayer_anomaly_event(uint64_t ts_ns, uint64_t flow_id, uint64_t pcap_cnt, const FlowKey& key, bool src_lo,
                                       uint64_t tx_id, const char* app_proto, const char* event, bool upper = true);

// The `"http":{...}` member (no leading comma).
std::string eve_http_object(const HttpTx& t);

// A whole event. pcap_cnt 0: left out (a flow-only event); client_lo: key endpoint 0 is the client.
std::string eve_http_event(uint64_t ts_ns, uint64_t flow_id, uint64_t pcap_cnt, const FlowKey& key, bool client_lo,
                           const HttpTx& t);

// EVE `tls` events (Suricata's eve-log type tls, its extended fields that gaspp has), one per
// connection once the server's side of the handshake was read (its certificate, ServerHelloDone,
// encrypted data; or when the flow leaves the table): `"tls":{"subject","issuerdn",
// "subjectaltname","serial","fingerprint","sni","version","notbefore","notafter","client_alpns",
// "server_alpns"}` — the certificate's fields when one came, the version the server chose, else
// the client's; the lists when not empty.
std::string eve_tls_object(const TlsTx& t);
std::string eve_tls_event(uint64_t ts_ns, uint64_t flow_id, uint64_t pcap_cnt, const FlowKey& key, bool client_lo,
                          const TlsTx& t);

// EVE `dns` events in Suricata 8's format (version 3, its default), one per message: src is the
// message's sender (a request's client, a response's server), and `"dns":{"version":3,"type":
// "request"|"response","tx_id","id","flags" (hex),"qr","aa","tc","rd","ra","z" (when set),"opcode",
// "rcode","queries":[{"rrname","rrtype"}],"answers":[...],"grouped":{...},"authorities":[...],
// "additionals":[...]}` with every record type logged and both answer formats (detailed, grouped).
// grouped: with the `grouped` answers (events); alerts' dns object has the detailed ones only.
std::string eve_dns_object(const DnsTx& t, bool grouped = true);
std::string eve_dns_event(uint64_t ts_ns, uint64_t flow_id, uint64_t pcap_cnt, const FlowKey& key, bool client_lo,
                          const DnsTx& t);

// EVE `ssh` events (Suricata's eve-log type ssh), one per connection once both sides sent their
// NEWKEYS (or when the flow leaves the table with a banner): `"ssh":{"client":{"proto_version",
// "software_version","hassh":{"hash","string"}},"server":{...}}`, a side present when its banner
// was read, software_version when it is not empty, hassh when its logging is on (SshTx::log_hassh)
// and the side's KEXINIT was read.
std::string eve_ssh_object(const SshTx& t);
std::string eve_ssh_event(uint64_t ts_ns, uint64_t flow_id, uint64_t pcap_cnt, const FlowKey& key, bool client_lo,
                          const SshTx& t);
// EVE `sip` events (Suricata's eve-log type sip), one per message, src its sender:
// `"sip":{"method","uri","version","request_line"}` for a request, `"sip":{"version","code",
// "reason","response_line"}` for a response, an `sdp` object before the line when the body is SDP
// (applayer/sdp.hpp).
std::string eve_sip_object(const SipTx& t);
std::string eve_sip_event(uint64_t ts_ns, uint64_t flow_id, uint64_t pcap_cnt, const FlowKey& key, bool client_lo,
                          const SipTx& t);
// EVE `ftp` events (Suricata's eve-log type ftp), one per transaction once its reply came (or when
// the flow leaves the table), src the client: `"ftp":{"command","command_data","command_truncated",
// "completion_code":[...],"reply":[...],"dynamic_port","mode","reply_received","reply_truncated"}`
// in Suricata's order (EveFTPLogCommand), each member present as Suricata writes it.
std::string eve_ftp_object(const FtpTx& t);
std::string eve_ftp_event(uint64_t ts_ns, uint64_t flow_id, uint64_t pcap_cnt, const FlowKey& key, bool client_lo,
                          const FtpTx& t);
// EVE `ftp_data` events (Suricata's eve-log type ftp-data: EveFTPDataAddMetadata), one per data
// connection once its transfer ended (or when the flow leaves the table), src the data
// connection's client: `"ftp_data":{"filename","command"}` (filename when the command named one).
// Its file's `fileinfo` event carries the same object, app_proto "ftp-data", src the file's sender.
std::string eve_ftp_data_object(const FtpDataTx& t);
std::string eve_ftp_data_event(uint64_t ts_ns, uint64_t flow_id, uint64_t pcap_cnt, const FlowKey& key, bool client_lo,
                               const FtpDataTx& t);
std::string eve_fileinfo_event(uint64_t ts_ns, uint64_t flow_id, uint64_t pcap_cnt, const FlowKey& key, bool client_lo,
                               const FtpDataTx& t, int side, const MimeFile& f);
// EVE `smtp` events (Suricata's eve-log type smtp), one per mail once it completed (its message
// ended, RSET, or the flow's end): tx_id, `"smtp":{"helo","mail_from","rcpt_to":[...]}` and
// `"email":{"status","from","to":[...],"cc":[...],"subject","date","message_id","x_mailer"}` (the
// members present; status PARSE_DONE when the message ended with its ".", else HEADER_READY once
// its headers were read, BODY_STARTED otherwise), `attachment` (the file names the message's
// MIME headers gave, applayer/mime.hpp) and `url` (the URLs of its text, last found first).
std::string eve_smtp_objects(const SmtpTx& t);
std::string eve_smtp_event(uint64_t ts_ns, uint64_t flow_id, uint64_t pcap_cnt, const FlowKey& key, bool client_lo,
                           const SmtpTx& t);
// A file's object as Suricata's EveFileInfo writes it (in fileinfo events, and in an alert's
// `files` array): {"filename","gaps","state" (CLOSED; TRUNCATED when cut by a limit or the flow's
// end; UNKNOWN while open),"md5","sha1" (closed files),"sha256","stored":false,"size","tx_id"},
// the hashes those asked for (force-hash, the file hash keywords) that were taken.
std::string eve_file_object(const MimeFile& f, uint64_t tx_id);
// EVE `fileinfo` events (Suricata's eve-log type files) of a mail's attachments, written with its
// smtp event: the smtp and email objects, app_proto, and `"fileinfo":{"filename","gaps","state"
// (CLOSED, or TRUNCATED when the flow ended inside the message),"md5","sha1" (closed files),
// "sha256" (the hashes --force-hash asked for),"stored":false,"size","tx_id"}`.
std::string eve_fileinfo_event(uint64_t ts_ns, uint64_t flow_id, uint64_t pcap_cnt, const FlowKey& key, bool client_lo,
                               const SmtpTx& t, const MimeFile& f);
// An HTTP transaction's files (HttpTx::files: the request's, side 0, the response's, side 1),
// written with its http event, before it: the http object, app_proto and the fileinfo object as
// above, from the file's sender.
std::string eve_fileinfo_event(uint64_t ts_ns, uint64_t flow_id, uint64_t pcap_cnt, const FlowKey& key, bool client_lo,
                               const HttpTx& t, int side, const MimeFile& f);

}  // namespace gaspp
