// applayer/smtp.cpp — see smtp.hpp.
#include "applayer/smtp.hpp"

#include <strings.h>

#include <algorithm>
#include <cctype>
#include <utility>

namespace gaspp {

namespace {

bool starts_nocase(std::string_view l, const char* p) {
  const size_t n = std::char_traits<char>::length(p);
  return l.size() >= n && strncasecmp(l.data(), p, n) == 0;
}

// Suricata's SMTPParseCommandWithParam: past the command (prefix_len bytes) and one more (the
// colon, or the space after HELO), spaces skipped, up to the next space.
std::string param(std::string_view l, size_t prefix_len) {
  size_t i = prefix_len + 1;
  while (i < l.size() && l[i] == ' ') ++i;
  size_t e = i;
  while (e < l.size() && l[e] != ' ') ++e;
  return i < l.size() ? std::string(l.substr(i, e - i)) : std::string();
}

std::string trim(std::string_view v) {
  size_t a = 0, b = v.size();
  while (a < b && (v[a] == ' ' || v[a] == '\t' || v[a] == '\r' || v[a] == '\n')) ++a;
  while (b > a && (v[b - 1] == ' ' || v[b - 1] == '\t' || v[b - 1] == '\r' || v[b - 1] == '\n')) --b;
  return std::string(v.substr(a, b - a));
}

constexpr const char* kEventNames[] = {
#define GASPP_SMTP_EVENT_NAME(id, name) name,
    GASPP_SMTP_EVENTS(GASPP_SMTP_EVENT_NAME)
#undef GASPP_SMTP_EVENT_NAME
};

// The reply codes of Suricata's smtp_reply_map: another code is an invalid reply.
bool known_reply_code(int code) {
  static constexpr int kCodes[] = {211, 214, 220, 221, 235, 250, 251, 252, 334, 354, 401, 402, 421,
                                   435, 450, 451, 452, 454, 455, 500, 501, 502, 503, 504, 511, 521,
                                   522, 525, 530, 534, 535, 541, 543, 550, 551, 552, 553, 554, 555};
  return std::find(std::begin(kCodes), std::end(kCodes), code) != std::end(kCodes);
}

void split_list(std::string_view v, std::vector<std::string>& out, SmtpStats& st) {
  size_t a = 0;
  while (a <= v.size()) {
    size_t c = v.find(',', a);
    if (c == std::string_view::npos) c = v.size();
    std::string item = trim(v.substr(a, c - a));
    if (!item.empty() && out.size() < kSmtpMaxRcpt) out.push_back(std::move(item));
    else if (!item.empty()) ++st.fields_dropped;
    a = c + 1;
  }
}

// Appends to a header value up to its cap; what does not fit is counted.
void append_field(std::string& v, std::string_view add, SmtpStats& st) {
  const size_t room = kSmtpMaxLine * 4 - std::min(v.size(), kSmtpMaxLine * 4);
  if (add.size() > room) ++st.fields_dropped;
  v.append(add.substr(0, room));
}

}  // namespace

uint32_t smtp_event_bit(std::string_view name) {
  for (size_t i = 0; i < size_t(SmtpEventId::kCount); ++i)
    if (name.size() == std::char_traits<char>::length(kEventNames[i]) && strncasecmp(name.data(), kEventNames[i], name.size()) == 0)
      return uint32_t(1) << i;
  return 0;
}

std::vector<const char*> smtp_event_names(uint32_t events) {
  std::vector<const char*> out;
  for (size_t i = 0; i < size_t(SmtpEventId::kCount); ++i)
    if (events & (uint32_t(1) << i)) out.push_back(kEventNames[i]);
  return out;
}

void SmtpConn::event(uint32_t ev) {
  if (txs_.empty()) return;  // Suricata's: no current transaction yet, no event
  SmtpTx* t = txs_.back().get();
  if ((t->events & ev) == ev) return;
  t->events |= ev;
  touch(t);
}

void SmtpConn::mime_events(SmtpTx* t) {
  if (!t->mime) return;
  const uint32_t w = t->mime->take_warnings();
  if (!w) return;
  static constexpr std::pair<uint32_t, uint32_t> kMap[] = {
      {kMimeWarnInvalidBase64, kSmtpEvMimeInvalidBase64}, {kMimeWarnInvalidQp, kSmtpEvMimeInvalidQp},
      {kMimeWarnLongLine, kSmtpEvMimeLongLine},           {kMimeWarnLongEncLine, kSmtpEvMimeLongEncLine},
      {kMimeWarnLongHeaderName, kSmtpEvMimeLongHeaderName}, {kMimeWarnLongHeaderValue, kSmtpEvMimeLongHeaderValue},
      {kMimeWarnLongBoundary, kSmtpEvMimeLongBoundary},   {kMimeWarnLongFilename, kSmtpEvMimeLongFilename}};
  uint32_t ev = 0;
  for (const auto& [warn, bit] : kMap)
    if (w & warn) ev |= bit;
  event(ev);
}

const std::string* SmtpTx::header(std::string_view lower, size_t nth) const {
  for (const auto& [name, value] : headers)
    if (name.size() == lower.size() && strncasecmp(name.data(), lower.data(), lower.size()) == 0 && nth-- == 0) return &value;
  return nullptr;
}

void SmtpConn::body_hash(SmtpTx* t, std::string_view l, std::string_view eol) {
  if (!body_md5_ || !t->headers_done) return;
  if (!md5_active_) {
    if (!md5_) md5_.reset(EVP_MD_CTX_new());
    if (!md5_ || EVP_DigestInit_ex(md5_.get(), EVP_md5(), nullptr) != 1) return;
    md5_active_ = true;
  }
  EVP_DigestUpdate(md5_.get(), l.data(), l.size());
  EVP_DigestUpdate(md5_.get(), eol.data(), eol.size());
}

void SmtpConn::feed(int dir, const uint8_t* p, size_t n, bool gap) {
  if (tls_ || stopped_[dir]) return;
  if (gap) {
    // The line in progress and what follows cannot be told apart any more.
    stopped_[dir] = true;
    ++st_.gaps;
    return;
  }
  std::string& b = buf_[dir];
  for (size_t i = 0; i < n && !tls_; ++i) {
    if (dir == 0 && bdat_left_ > 0) {
      // A BDAT chunk's bytes: the message, counted, not commands.
      const size_t k = size_t(std::min<uint64_t>(bdat_left_, n - i));
      bdat_bytes(reinterpret_cast<const char*>(p + i), k);
      bdat_left_ -= k;
      i += k - 1;
      if (bdat_left_ == 0 && bdat_last_) bdat_end();
      continue;
    }
    const char c = char(p[i]);
    if (c == '\n') {
      if (!overlong_[dir]) {
        const bool cr = !b.empty() && b.back() == '\r';
        if (cr) b.pop_back();
        line(dir, b, cr ? "\r\n" : "\n");
      }
      overlong_[dir] = false;
      b.clear();
      continue;
    }
    if (overlong_[dir]) continue;
    b.push_back(c);
    if (b.size() >= kSmtpMaxLine) {
      // Cut: the first kSmtpMaxLine bytes are the line, the rest up to the LF is dropped.
      ++st_.lines_too_long;
      const bool command_or_reply = dir == 1 || !data_mode_;
      line(dir, b, "");
      if (command_or_reply) event(kSmtpEvTruncatedLine);  // (a message's lines are the MIME decoder's)
      b.clear();
      overlong_[dir] = true;
    }
  }
}

void SmtpConn::end() {
  SmtpTx* t = current(false);
  if (!t) return;
  if (data_mode_ && !t->headers_done) header_done();
  if (t->mime) t->mime->end(true);  // the flow ended inside the message
  complete(t);
}

SmtpTx* SmtpConn::current(bool create) {
  if (!txs_.empty() && !txs_.back()->complete) return txs_.back().get();
  if (!create) return nullptr;
  if (txs_.size() >= max_txs_) {
    // The oldest finished transaction goes (not one this feed handed out).
    const auto it = std::find_if(txs_.begin(), txs_.end(), [&](const std::unique_ptr<SmtpTx>& t) {
      return t->complete && std::find(touched_.begin(), touched_.end(), t.get()) == touched_.end();
    });
    if (it != txs_.end()) {
      txs_.erase(it);
      ++st_.txs_dropped;
    }
  }
  auto t = std::make_unique<SmtpTx>();
  t->id = next_id_++;
  t->helo = helo_;
  ++st_.txs;
  txs_.push_back(std::move(t));
  return txs_.back().get();
}

void SmtpConn::touch(SmtpTx* t) {
  if (std::find(touched_.begin(), touched_.end(), t) == touched_.end()) touched_.push_back(t);
}

void SmtpConn::complete(SmtpTx* t) {
  if (!t || t->complete) return;
  t->complete = true;
  touch(t);
}

void SmtpConn::line(int dir, std::string_view l, std::string_view eol) {
  if (dir == 1) reply(l, eol);
  else if (data_mode_) message_line(l, eol);
  else command(l);
}

void SmtpConn::command(std::string_view l) {
  Cmd kind = Cmd::other;
  if (starts_nocase(l, "quit")) {
    // ends nothing and starts nothing
  } else if (starts_nocase(l, "rset")) {
    complete(current(false));
  } else if (starts_nocase(l, "helo") || starts_nocase(l, "ehlo")) {
    // The session's HELO is kept; a second is an anomaly, on the mail it interrupts (Suricata's
    // current transaction), if any.
    if (!helo_.empty()) event(kSmtpEvDuplicateFields);
    if (helo_.empty()) helo_ = param(l, 4);
    SmtpTx* t = current(false);
    // A HELO within a mail resets it (RFC 5321 4.1.4, as Suricata).
    if (t && t->has_mail()) complete(t);
    t = current(true);
    if (t->helo.empty()) t->helo = helo_;
    kind = Cmd::ehlo;
  } else if (starts_nocase(l, "mail from")) {
    SmtpTx* t = current(true);
    if (t->mail_from.empty()) t->mail_from = param(l, 9);
    else event(kSmtpEvDuplicateFields);  // (t is the latest transaction: the event's)
    touch(t);
  } else if (starts_nocase(l, "rcpt to")) {
    SmtpTx* t = current(true);
    if (t->rcpt_to.size() < kSmtpMaxRcpt) t->rcpt_to.push_back(param(l, 7));
    else ++st_.fields_dropped;
    touch(t);
  } else if (starts_nocase(l, "bdat") && !data_mode_) {
    uint64_t size = 0;
    bool last = false;
    if (parse_bdat(l, size, last)) {
      SmtpTx* t = current(true);
      start_data(t);
      bdat_left_ = size;
      bdat_last_ = last;
      if (size == 0 && last) bdat_end();
    } else {
      ++st_.bdat_invalid;  // the server rejects it: no chunk follows
      current(true);
      event(kSmtpEvInvalidBdat);
    }
  } else if (starts_nocase(l, "starttls")) {
    kind = Cmd::starttls;
  } else if (starts_nocase(l, "data")) {
    SmtpTx* t = current(true);
    if (t->data_sent) {
      // DATA again in the same mail (Suricata's is_data, set when DATA is sent, accepted or not):
      // Suricata reads no more of the line.
      event(kSmtpEvUnparsableContent);
      return;
    }
    t->data_sent = true;
    kind = Cmd::data;
    if (pipelining_) {
      // Suricata enters data mode without waiting for the 354 when the server pipelines.
      data_mode_ = true;
      start_data(t);
      kind = Cmd::data_early;
    }
  } else {
    current(true);
  }
  if (!first_reply_seen_) event(kSmtpEvNoServerWelcomeMessage);
  queue(kind);
}

void SmtpConn::queue(Cmd kind) {
  // Suricata's SMTPInsertCommandIntoCommandBuffer: a command after a DATA or STARTTLS still
  // waiting for its reply breaks pipelining's rules (those end a group).
  if (!pending_.empty() && (pending_.back() == Cmd::data || pending_.back() == Cmd::data_early || pending_.back() == Cmd::starttls))
    event(kSmtpEvInvalidPipelinedSequence);
  pending_.push_back(kind);
  if (pending_.size() > 4096) pending_.pop_front();  // a client that never reads its replies
}

void SmtpConn::reply(std::string_view l, std::string_view eol) {
  if (l.empty() && eol == "\n") return;  // a bare LF (Suricata skips it)
  if (l.size() < 3 || !std::isdigit(uint8_t(l[0])) || !std::isdigit(uint8_t(l[1])) || !std::isdigit(uint8_t(l[2]))) {
    event(kSmtpEvInvalidReply);
    return;
  }
  const int code = (l[0] - '0') * 100 + (l[1] - '0') * 10 + (l[2] - '0');
  // A code outside Suricata's table is an invalid reply (there the parser errors); it still answers
  // its command here, so that the replies after it stay paired with their commands.
  if (!known_reply_code(code)) event(kSmtpEvInvalidReply);
  // The server's lines update a mail's anomalies to the client (Suricata inspects the transaction
  // at each of them).
  if (!txs_.empty() && txs_.back()->events) touch(txs_.back().get());
  const bool more = l.size() > 3 && l[3] == '-';
  if (!pending_.empty() && pending_.front() == Cmd::ehlo && l.size() > 4 && starts_nocase(l.substr(4), "pipelining"))
    pipelining_ = true;
  if (pending_.empty()) {
    // The greeting (a 220, which may take several lines), or a reply to nothing.
    if (!first_reply_seen_) {
      if (!more) first_reply_seen_ = true;
      if (code != 220) event(kSmtpEvInvalidReply);
    }
    return;
  }
  if (more) return;  // a continued reply
  const Cmd c = pending_.front();
  pending_.pop_front();
  if ((c == Cmd::data || c == Cmd::data_early) && code != 354) event(kSmtpEvDataCommandRejected);
  if (c == Cmd::starttls && code != 220) event(kSmtpEvTlsRejected);
  if (c == Cmd::data && code == 354 && !data_mode_) {
    data_mode_ = true;
    if (SmtpTx* t = current(false)) start_data(t);
  } else if (c == Cmd::data_early && code != 354 && data_mode_) {
    data_mode_ = false;  // entered at once (pipelining), but the server refused the message
    if (SmtpTx* t = current(false)) {
      t->data = false;
      t->mime.reset();
    }
  } else if (c == Cmd::starttls && code == 220) {
    tls_ = true;
    ++st_.starttls;
  }
}

void SmtpConn::start_data(SmtpTx* t) {
  t->data = true;
  md5_active_ = false;
  if (!t->mime) t->mime = std::make_unique<MimeDecoder>(st_.mime, hashes_);
  touch(t);
}

void SmtpConn::message_line(std::string_view l, std::string_view eol) {
  SmtpTx* t = current(true);
  if (l == ".") {
    message_end(t);
    data_mode_ = false;
    queue(Cmd::other);  // the server's reply to the message
    return;
  }
  body_hash(t, l, eol);
  if (!l.empty() && l[0] == '.') l.remove_prefix(1);  // dot-stuffing
  message_content(t, l, eol);
}

void SmtpConn::message_end(SmtpTx* t) {
  if (md5_active_) {
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    if (EVP_DigestFinal_ex(md5_.get(), d, &n) == 1) t->body_md5 = hex_of(d, n);
    t->log_body_md5 = md5_log_ & kMailMd5Body;
    md5_active_ = false;
  }
  if (t->mime) t->mime->end();
  if (!t->headers_done) header_done();
  t->headers_done = true;
  t->message_done = true;
  complete(t);
}

// Suricata's SMTPParseCommandBDAT: "BDAT", spaces, the chunk's size (decimal, 32 bits), and
// optionally spaces and LAST; anything else is invalid.
bool SmtpConn::parse_bdat(std::string_view l, uint64_t& size, bool& last) {
  size_t i = 4;
  while (i < l.size() && l[i] == ' ') ++i;
  if (i == 4 || i == l.size()) return false;
  const size_t d = i;
  while (i < l.size() && std::isdigit(uint8_t(l[i])) && i - d < 10) size = size * 10 + uint64_t(l[i++] - '0');
  if (i == d || size > 0xffffffffull || (i < l.size() && l[i] != ' ')) return false;
  while (i < l.size() && l[i] == ' ') ++i;
  last = l.size() - i == 4 && starts_nocase(l.substr(i), "last");
  return last || i == l.size();
}

void SmtpConn::bdat_bytes(const char* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] == '\n') {
      if (!bdat_overlong_) {
        const bool cr = !bdat_line_.empty() && bdat_line_.back() == '\r';
        if (cr) bdat_line_.pop_back();
        body_hash(current(true), bdat_line_, cr ? "\r\n" : "\n");
        message_content(current(true), bdat_line_, cr ? "\r\n" : "\n");
      }
      bdat_overlong_ = false;
      bdat_line_.clear();
      continue;
    }
    if (bdat_overlong_) continue;
    bdat_line_.push_back(p[i]);
    if (bdat_line_.size() >= kSmtpMaxLine) {
      ++st_.lines_too_long;
      body_hash(current(true), bdat_line_, "");
      message_content(current(true), bdat_line_, "");
      bdat_line_.clear();
      bdat_overlong_ = true;
    }
  }
}

void SmtpConn::bdat_end() {
  SmtpTx* t = current(true);
  // The message's last line, without a line break (chunks are cut anywhere).
  if (!bdat_line_.empty() && !bdat_overlong_) body_hash(t, bdat_line_, ""), message_content(t, bdat_line_, "");
  bdat_line_.clear();
  bdat_overlong_ = false;
  message_end(t);
}

void SmtpConn::message_content(SmtpTx* t, std::string_view l, std::string_view eol) {
  if (t->mime) {
    const size_t before = t->mime->files().size();
    t->mime->line(l, eol);
    mime_events(t);
    // A file's bytes are new data for file.data: the transaction is updated.
    if (t->mime->files().size() != before || (!t->mime->files().empty() && t->mime->files().back().open())) touch(t);
  }
  if (t->headers_done) return;
  if (l.empty()) {
    header_done();
    t->headers_done = true;
    if (md5_log_ & kMailMd5Subject)
      if (const std::string* s = t->header("subject")) t->subject_md5 = md5_hex(*s);
    touch(t);
  } else if (l[0] == ' ' || l[0] == '\t') {
    if (header_.size() < kSmtpMaxLine * 4) header_ += l;  // folded: the line break goes
    // Suricata's field keeps the folded line without its first character.
    if (!t->headers.empty()) append_field(t->headers.back().second, l.substr(1), st_);
  } else {
    header_done();
    header_ = l;
    if (const size_t colon = l.find(':'); colon != std::string_view::npos) {
      size_t v = colon + 1;
      while (v < l.size() && (l[v] == ' ' || l[v] == '\t' || l[v] == '\r' || l[v] == '\n')) ++v;
      if (t->headers.size() < kSmtpMaxRcpt) {
        t->headers.emplace_back(std::string(l.substr(0, colon)), std::string());
        append_field(t->headers.back().second, l.substr(v), st_);
      } else {
        ++st_.fields_dropped;
      }
    }
  }
}

void SmtpConn::header_done() {
  SmtpTx* t = current(false);
  const size_t colon = header_.find(':');
  if (t && colon != std::string::npos) {
    std::string name = header_.substr(0, colon);
    for (char& c : name) c = char(std::tolower(uint8_t(c)));
    const std::string value = trim(std::string_view(header_).substr(colon + 1));
    std::string* one = name == "from"         ? &t->from
                       : name == "subject"    ? &t->subject
                       : name == "date"       ? &t->date
                       : name == "message-id" ? &t->message_id
                       : name == "x-mailer"   ? &t->x_mailer
                                              : nullptr;
    if (one && one->empty()) *one = value;
    else if (name == "to") split_list(value, t->to, st_);
    else if (name == "cc") split_list(value, t->cc, st_);
  }
  header_.clear();
}

}  // namespace gaspp
