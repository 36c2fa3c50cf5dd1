// applayer/smtp.hpp — SMTP sessions as Suricata's SMTP parser reads them for its EVE `smtp` and
// `email` objects: the envelope of each mail (HELO/EHLO, MAIL FROM, RCPT TO) and the header fields
// of its message (From, To, Cc, Subject, Date, Message-ID, X-Mailer).
//
// The client's lines are commands until the server accepts DATA (reply 354; at once after the
// command when the server's EHLO reply announced PIPELINING, as Suricata enters data mode); then
// they are the message, dot-unstuffed, until the line ".". A transaction (one mail) starts with
// the first command after the previous one completed (QUIT and RSET start none); it completes at
// the end of its message, at RSET, at a HELO/EHLO within it, or at the flow's end. The parameter
// of MAIL FROM and RCPT TO is what follows the colon and spaces up to the next space (a SIZE=
// option after it is not part of it); HELO's is the session's, from its first HELO or EHLO. The
// header block is read up to its first empty line; folded lines are joined (the line break
// dropped, the leading white space kept); To and Cc are split at commas and trimmed. The whole
// message also goes through the MIME decoder (mime.hpp): its attachments, decoded, are the
// transaction's files (file.data, EVE fileinfo, email.attachment). BDAT (RFC 3030 CHUNKING): the
// command's size counts the chunk's bytes that follow it (the message, not commands, whatever the
// server replies), cut into lines across chunks, not dot-unstuffed; the mail's message ends with
// its LAST chunk (Suricata counts BDAT chunks but does not parse their message; gaspp reads it as
// DATA's). A BDAT line that does not parse (size, LAST) is counted (smtp_bdat_invalid) and no chunk
// is expected. After the server accepts STARTTLS (220) the rest of
// the session is TLS and is not read; a gap ends the direction's parsing.
//
// The message's header block is also kept as Suricata's MIME parser keeps it for the email.*
// buffers (SmtpTx::headers): each field's name as written (up to its colon) and its value from
// after the colon and its blanks, a folded line appended without its first character; lines with
// no colon are not fields. With body_md5 on (the email.body_md5 keyword, or suricata.yaml's
// smtp.mime.body-md5), the lines after the header block's empty line, each with its line break and
// as sent (dot-stuffing kept, as Suricata hashes them), give SmtpTx::body_md5 when the message ends.
//
// Anomalies, Suricata's SMTP decoder events (app-layer-event:smtp.NAME, EVE anomaly events with
// its upper-case names), on the session's latest transaction as Suricata sets them on its current
// one (none before the first): invalid_reply (a reply line under 3 bytes or whose code is not one
// of Suricata's table, or a first reply other than 220), tls_rejected and data_command_rejected
// (STARTTLS answered other than 220, DATA other than 354), invalid_pipelined_sequence (a command
// while the last one waiting for its reply is DATA or STARTTLS), invalid_bdat, duplicate_fields (a
// second HELO/EHLO in the session, a second MAIL FROM in a mail), unparsable_content (DATA again
// before the server accepted the first), no_server_welcome_message (a command before the server's
// first reply), truncated_line (a command or reply line cut at 4096 bytes), and the MIME
// decoder's mime_long_line (a message line over 998 bytes), mime_long_enc_line (a base64 or
// quoted-printable line over 76), mime_invalid_base64, mime_invalid_qp, mime_long_header_name,
// mime_long_header_value, mime_long_boundary and mime_long_filename (mime.hpp's warnings).
//
// Limits, each counted: a line longer than kSmtpMaxLine (4096, Suricata's default max-line-length)
// is cut there (smtp_lines_too_long); at most kSmtpMaxRcpt recipients, header list entries and
// header fields per mail and kSmtpMaxLine * 4 bytes a header value (the rest dropped,
// smtp_fields_dropped), and max_txs transactions per flow (older ones dropped, smtp_txs_dropped).
//
// Example:
//   SmtpStats st;
//   SmtpConn c(st);
//   c.feed(1, server_bytes, n);   c.feed(0, client_bytes, m);
//   for (SmtpTx* t : c.touched()) ... t->mail_from, t->rcpt_to, t->complete
#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "applayer/app_tx.hpp"
#include "applayer/mime.hpp"

namespace gaspp {

constexpr size_t kSmtpMaxLine = 4096;
constexpr size_t kSmtpMaxRcpt = 1024;
// A mail's file is inspected (file.data) once closed, or while open once this many bytes of it
// came (Suricata's smtp inspected-tracker content-inspect-min-size default).
constexpr uint64_t kSmtpFileInspectMinSize = 32768;
// The hashes EVE's email object logs (eve-log smtp md5: body, subject).
constexpr uint8_t kMailMd5Body = 1, kMailMd5Subject = 2;

#define GASPP_SMTP_EVENTS(X)                                          \
  X(InvalidReply, "INVALID_REPLY")                                   \
  X(InvalidPipelinedSequence, "INVALID_PIPELINED_SEQUENCE")          \
  X(InvalidBdat, "INVALID_BDAT")                                     \
  X(NoServerWelcomeMessage, "NO_SERVER_WELCOME_MESSAGE")             \
  X(TlsRejected, "TLS_REJECTED")                                     \
  X(DataCommandRejected, "DATA_COMMAND_REJECTED")                    \
  X(MimeInvalidBase64, "MIME_INVALID_BASE64")                        \
  X(MimeInvalidQp, "MIME_INVALID_QP")                                \
  X(MimeLongLine, "MIME_LONG_LINE")                                  \
  X(MimeLongEncLine, "MIME_LONG_ENC_LINE")                           \
  X(DuplicateFields, "DUPLICATE_FIELDS")                             \
  X(UnparsableContent, "UNPARSABLE_CONTENT")                         \
  X(TruncatedLine, "TRUNCATED_LINE")                                 \
  X(MimeLongHeaderName, "MIME_LONG_HEADER_NAME")                     \
  X(MimeLongHeaderValue, "MIME_LONG_HEADER_VALUE")                   \
  X(MimeLongBoundary, "MIME_LONG_BOUNDARY")                          \
  X(MimeLongFilename, "MIME_LONG_FILENAME")                          \
  /* Suricata's parser never raises these (no code sets them; a command line is at most 4,096 \
     bytes, so no parameter passes 65,535): their rules load and never match, as there. */   \
  X(UnableToMatchReplyWithRequest, "UNABLE_TO_MATCH_REPLY_WITH_REQUEST")                     \
  X(MaxReplyLineLenExceeded, "MAX_REPLY_LINE_LEN_EXCEEDED")                                 \
  X(MaxCommandLineLenExceeded, "MAX_COMMAND_LINE_LEN_EXCEEDED")                             \
  X(MimeParseFailed, "MIME_PARSE_FAILED")                                                   \
  X(MimeMalformedMsg, "MIME_MALFORMED_MSG")

enum class SmtpEventId : uint8_t {
#define GASPP_SMTP_EVENT_ID(id, name) id,
  GASPP_SMTP_EVENTS(GASPP_SMTP_EVENT_ID)
#undef GASPP_SMTP_EVENT_ID
  kCount
};
enum SmtpEvent : uint32_t {
#define GASPP_SMTP_EVENT_BIT(id, name) kSmtpEv##id = uint32_t(1) << unsigned(SmtpEventId::id),
  GASPP_SMTP_EVENTS(GASPP_SMTP_EVENT_BIT)
#undef GASPP_SMTP_EVENT_BIT
};
// The bit of Suricata's SMTP event NAME (without "smtp.", any case); 0 for those not raised here.
uint32_t smtp_event_bit(std::string_view name);
// The (upper-case) name of each bit set in `events`, in bit order.
std::vector<const char*> smtp_event_names(uint32_t events);

struct SmtpStats {
  uint64_t txs = 0, lines_too_long = 0, gaps = 0, txs_dropped = 0, starttls = 0, bdat_invalid = 0, fields_dropped = 0;
  MimeStats mime;
};

struct SmtpTx : AppTx {
  std::string helo, mail_from;
  std::vector<std::string> rcpt_to;
  bool data = false;          // the server accepted DATA: the message follows
  bool data_sent = false;     // the client sent DATA (accepted or not; BDAT aside)
  bool complete = false;      // the mail ended (its message's ".", RSET, HELO, the flow's end)
  bool message_done = false;  // its message ended with "."
  bool headers_done = false;
  std::string from, subject, date, message_id, x_mailer;
  std::vector<std::string> to, cc;
  std::unique_ptr<MimeDecoder> mime;  // from DATA's acceptance on: the message's files
  // The header block's fields (name as written, value), in order (the email.* buffers).
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body_md5;  // lowercase hex, once the message ended (with body_md5 on and a body line)
  bool log_body_md5 = false;  // EVE's email object logs it (kMailMd5Body)
  uint32_t events = 0;        // SmtpEvent bits raised on it
  uint32_t events_logged = 0;  // those the EVE anomaly log wrote
  std::string subject_md5;    // hex MD5 of the first Subject field's value, once the header block ended (kMailMd5Subject)
  // The nth field named `lower` (lowercase; names compare without case), or null.
  const std::string* header(std::string_view lower, size_t nth = 0) const;
  // Worth an event: something of a mail was seen.
  bool has_mail() const { return !mail_from.empty() || !rcpt_to.empty() || data || data_sent; }
};

class SmtpConn {
 public:
  // hashes: FileHash bits, the hashes each file gets (Suricata's force-hash).
  // body_md5: hash each mail's body (SmtpTx::body_md5); md5_log: kMailMd5* bits, the hashes EVE logs.
  SmtpConn(SmtpStats& st, size_t max_txs = 512, uint8_t hashes = 0, bool body_md5 = false, uint8_t md5_log = 0)
      : st_(st), max_txs_(max_txs ? max_txs : 1), hashes_(hashes), body_md5_(body_md5), md5_log_(md5_log) {}
  // dir 0: client → server, 1: server → client. gap: bytes before p are missing.
  void feed(int dir, const uint8_t* p, size_t n, bool gap = false);
  // The flow ended: an open transaction completes.
  void end();
  const std::vector<std::unique_ptr<SmtpTx>>& txs() const { return txs_; }
  const std::vector<SmtpTx*>& touched() const { return touched_; }
  void clear_touched() { touched_.clear(); }
  bool done(int dir) const { return stopped_[dir] || tls_; }

 private:
  // data_early: a DATA that entered data mode at once (pipelining)
  enum class Cmd : uint8_t { data, data_early, starttls, ehlo, other };
  void line(int dir, std::string_view l, std::string_view eol);
  void command(std::string_view l);
  void queue(Cmd kind);  // a command (or a message's end) waits for its reply
  void reply(std::string_view l, std::string_view eol);
  void message_line(std::string_view l, std::string_view eol);
  void message_content(SmtpTx* t, std::string_view l, std::string_view eol);  // unstuffed
  void body_hash(SmtpTx* t, std::string_view l, std::string_view eol);        // as sent
  void message_end(SmtpTx* t);
  static bool parse_bdat(std::string_view l, uint64_t& size, bool& last);
  void bdat_bytes(const char* p, size_t n);
  void bdat_end();
  void start_data(SmtpTx* t);
  void header_done();
  SmtpTx* current(bool create);
  void event(uint32_t ev);     // on the latest transaction (Suricata's current one), if any
  void mime_events(SmtpTx* t);  // the MIME decoder's warnings of its last line, as events
  void touch(SmtpTx* t);
  void complete(SmtpTx* t);
  SmtpStats& st_;
  size_t max_txs_;
  uint8_t hashes_;
  bool body_md5_;
  uint8_t md5_log_;
  bool md5_active_ = false;    // a body line was hashed since the message began
  DigestCtx md5_;              // the message's running MD5, from its first body line
  std::vector<std::unique_ptr<SmtpTx>> txs_;
  std::vector<SmtpTx*> touched_;
  uint64_t next_id_ = 0;
  std::string helo_;
  std::string buf_[2];
  bool overlong_[2] = {false, false};  // the line in buf_ was cut: the rest up to LF is dropped
  bool stopped_[2] = {false, false};   // a gap: nothing more of the direction is read
  std::deque<Cmd> pending_;            // commands whose final reply has not come
  bool pipelining_ = false, data_mode_ = false, tls_ = false;
  bool first_reply_seen_ = false;      // the server's first reply (its greeting) ended
  std::string header_;                 // the header field being read (folded lines joined)
  uint64_t bdat_left_ = 0;             // bytes of the current BDAT chunk still to come
  bool bdat_last_ = false;             // it is the LAST one
  std::string bdat_line_;              // the message line in progress across BDAT chunks
  bool bdat_overlong_ = false;
};

}  // namespace gaspp
