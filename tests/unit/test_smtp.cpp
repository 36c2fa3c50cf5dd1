// The SMTP parser (applayer/smtp.hpp): sessions written out with the mails Suricata's SMTP parser
// gives for them (envelope, header fields, where a mail ends), each fed whole, with the client's
// bytes cut at every position, and in 1-, 7- and 65536-byte pieces; the line limit and gaps; BDAT.
// The header fields as Suricata's MIME parser keeps them (the email.* buffers) and the body's MD5
// against OpenSSL's over the body as sent.
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <cctype>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "applayer/smtp.hpp"

namespace gaspp {
namespace {

struct Step {
  int dir;  // 0 client, 1 server
  std::string bytes;
};

struct Mail {
  std::string helo, mail_from;
  std::vector<std::string> rcpt_to;
  bool data, message_done;
  std::string from, subject;
  std::vector<std::string> to, cc;
  std::vector<std::pair<std::string, std::string>> fields;  // SmtpTx::headers
  std::string body;  // the body as sent, whose MD5 SmtpTx::body_md5 is ("": none)
};

struct Case {
  const char* name;
  std::vector<Step> steps;
  std::vector<Mail> mails;  // the transactions with a mail, in order
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"plain session",
       {{1, "220 mx ESMTP\r\n"},
        {0, "EHLO client.example\r\n"},
        {1, "250-mx\r\n250 SIZE 1000\r\n"},
        {0, "MAIL FROM:<a@example.com> SIZE=120\r\n"},
        {1, "250 ok\r\n"},
        {0, "RCPT TO:<b@example.org>\r\n"},
        {1, "250 ok\r\n"},
        {0, "RCPT TO: <c@example.org>\r\n"},
        {1, "250 ok\r\n"},
        {0, "DATA\r\n"},
        {1, "354 go\r\n"},
        {0, "From: A <a@example.com>\r\nTo: b@example.org,\r\n c@example.org\r\nCc: d@x\r\nSubject: hi\r\n\tthere\r\n\r\n"
            "..dot line\r\nbody\r\n.\r\n"},
        {1, "250 queued\r\n"},
        {0, "QUIT\r\n"},
        {1, "221 bye\r\n"}},
       {{"client.example", "<a@example.com>", {"<b@example.org>", "<c@example.org>"}, true, true, "A <a@example.com>",
         "hi\tthere", {"b@example.org", "c@example.org"}, {"d@x"},
         {{"From", "A <a@example.com>"}, {"To", "b@example.org,c@example.org"}, {"Cc", "d@x"}, {"Subject", "hithere"}},
         "..dot line\r\nbody\r\n"}}},
      {"two mails, RSET, refused DATA",
       {{1, "220 mx\r\n"},
        {0, "HELO h\r\n"},
        {1, "250 mx\r\n"},
        {0, "MAIL FROM:<x@a>\r\n"},
        {1, "250 ok\r\n"},
        {0, "RSET\r\n"},
        {1, "250 ok\r\n"},
        {0, "MAIL FROM:<y@a>\r\n"},
        {1, "250 ok\r\n"},
        {0, "RCPT TO:<z@b>\r\n"},
        {1, "550 no\r\n"},
        {0, "DATA\r\n"},
        {1, "554 no recipients\r\n"},
        {0, "MAIL FROM:<w@a>\r\n"},
        {1, "250 ok\r\n"}},
       {{"h", "<x@a>", {}, false, false, "", "", {}, {}, {}, ""},
        {"h", "<y@a>", {"<z@b>"}, false, false, "", "", {}, {}, {}, ""}}},
      {"pipelining: data mode at DATA",
       {{1, "220 mx\r\n"},
        {0, "EHLO p\r\n"},
        {1, "250-mx\r\n250-PIPELINING\r\n250 8BITMIME\r\n"},
        {0, "MAIL FROM:<p@q>\r\nRCPT TO:<r@s>\r\nDATA\r\nSubject: piped\r\n\r\nx\r\n.\r\n"},
        {1, "250 ok\r\n250 ok\r\n354 go\r\n250 queued\r\n"},
        {0, "QUIT\r\n"}},
       {{"p", "<p@q>", {"<r@s>"}, true, true, "", "piped", {}, {}, {{"Subject", "piped"}}, "x\r\n"}}},
      {"header fields as Suricata keeps them",
       {{1, "220 mx\r\n"},
        {0, "HELO f\r\nMAIL FROM:<f@g>\r\nRCPT TO:<h@i>\r\nDATA\r\n"},
        {1, "250 mx\r\n250 ok\r\n250 ok\r\n354 go\r\n"},
        {0, "Received: from a (a [10.0.0.1]) by b;\r\n\t Thu, 10 Apr 2025 12:00:00 -0000\r\nno colon here\r\n"
            "Received:from c\r\nX-Mailer: \t tool 1.0 \r\nSubject  : spaced name\r\n\r\nline one\nline two\r\n"},
        {0, ".\r\n"},
        {1, "250 queued\r\n"}},
       {{"f", "<f@g>", {"<h@i>"}, true, true, "", "", {}, {},
         {{"Received", "from a (a [10.0.0.1]) by b; Thu, 10 Apr 2025 12:00:00 -0000"}, {"Received", "from c"},
          {"X-Mailer", "tool 1.0 "}, {"Subject  ", "spaced name"}},
         "line one\nline two\r\n"}}},
      {"BDAT chunks: the message (a line cut across chunks), not commands",
       {{1, "220 mx\r\n"},
        {0, "EHLO b\r\n"},
        {1, "250-mx\r\n250 CHUNKING\r\n"},
        {0, "MAIL FROM:<a@b>\r\nRCPT TO:<c@d>\r\n"},
        {1, "250 ok\r\n250 ok\r\n"},
        {0, "BDAT 12\r\nSubject: chu"},
        {0, "BDAT 26 LAST\r\nnked\r\n\r\nMAIL FROM:<no@x>\r\n"},
        {1, "250 ok\r\n250 ok\r\n"},
        {0, "QUIT\r\n"}},
       {{"b", "<a@b>", {"<c@d>"}, true, true, "", "chunked", {}, {}, {{"Subject", "chunked"}}, "MAIL FROM:<no@x>\r\n"}}},
      {"STARTTLS: the rest is not read",
       {{1, "220 mx\r\n"},
        {0, "EHLO t\r\n"},
        {1, "250-mx\r\n250 STARTTLS\r\n"},
        {0, "STARTTLS\r\n"},
        {1, "220 go ahead\r\n"},
        {0, "MAIL FROM:<hidden@x>\r\n"}},
       {}},
  };
  return c;
}

std::string md5_hex(const std::string& s) {
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  EVP_Digest(s.data(), s.size(), d, &n, EVP_md5(), nullptr);
  std::string h;
  char b[3];
  for (unsigned i = 0; i < n; ++i) std::snprintf(b, sizeof b, "%02x", d[i]), h += b;
  return h;
}

void check(const SmtpConn& c, const Case& k, const std::string& how) {
  std::vector<const SmtpTx*> got;
  for (const auto& t : c.txs())
    if (t->has_mail()) got.push_back(t.get());
  ASSERT_EQ(got.size(), k.mails.size()) << k.name << " " << how;
  for (size_t i = 0; i < got.size(); ++i) {
    const SmtpTx& t = *got[i];
    const Mail& m = k.mails[i];
    EXPECT_EQ(t.helo, m.helo) << k.name << " " << how;
    EXPECT_EQ(t.mail_from, m.mail_from) << k.name << " " << how;
    EXPECT_EQ(t.rcpt_to, m.rcpt_to) << k.name << " " << how;
    EXPECT_EQ(t.data, m.data) << k.name << " " << how;
    EXPECT_EQ(t.message_done, m.message_done) << k.name << " " << how;
    EXPECT_EQ(t.from, m.from) << k.name << " " << how;
    EXPECT_EQ(t.subject, m.subject) << k.name << " " << how;
    EXPECT_EQ(t.to, m.to) << k.name << " " << how;
    EXPECT_EQ(t.cc, m.cc) << k.name << " " << how;
    EXPECT_EQ(t.headers, m.fields) << k.name << " " << how;
    EXPECT_EQ(t.body_md5, m.body.empty() ? "" : md5_hex(m.body)) << k.name << " " << how;
    EXPECT_EQ(t.log_body_md5, !m.body.empty()) << k.name << " " << how;
    const std::string* subject = t.header("subject");
    EXPECT_EQ(t.subject_md5, subject ? md5_hex(*subject) : "") << k.name << " " << how;
    if (!m.fields.empty()) {
      EXPECT_EQ(t.header(std::string(m.fields[0].first.size(), 'x')), nullptr);
      std::string lower = m.fields.back().first;
      for (char& ch : lower) ch = char(std::tolower(uint8_t(ch)));
      ASSERT_NE(t.header(lower), nullptr) << k.name;
      EXPECT_EQ(*t.header(lower), m.fields.back().second) << k.name;
    }
  }
}

// Feeds the steps with each client step cut into pieces of `piece` bytes, or, with cut >= 0, the
// whole client stream's bytes cut once at `cut` within their step.
void run(const Case& k, size_t piece, long cut, SmtpConn& c) {
  long at = 0;
  for (const Step& s : k.steps) {
    const auto* p = reinterpret_cast<const uint8_t*>(s.bytes.data());
    const size_t n = s.bytes.size();
    if (s.dir == 1) {
      c.feed(1, p, n);
      continue;
    }
    if (cut >= at && cut < at + long(n)) {
      const size_t h = size_t(cut - at);
      c.feed(0, p, h);
      c.feed(0, p + h, n - h);
    } else {
      for (size_t o = 0; o < n; o += piece) c.feed(0, p + o, std::min(piece, n - o));
    }
    at += long(n);
  }
}

TEST(Smtp, MailsAsSuricataReadsThemAtEveryCut) {
  for (const Case& k : cases()) {
    for (size_t piece : {size_t(1), size_t(7), size_t(65536)}) {
      SmtpStats st;
      SmtpConn c(st, 512, 0, true, kMailMd5Body | kMailMd5Subject);
      run(k, piece, -1, c);
      check(c, k, "pieces of " + std::to_string(piece));
    }
    size_t client = 0;
    for (const Step& s : k.steps) client += s.dir == 0 ? s.bytes.size() : 0;
    for (size_t cut = 0; cut <= client; ++cut) {
      SmtpStats st;
      SmtpConn c(st, 512, 0, true, kMailMd5Body | kMailMd5Subject);
      run(k, 65536, long(cut), c);
      check(c, k, "cut at " + std::to_string(cut));
    }
  }
}

TEST(Smtp, LongLinesAreCutAndGapsStopTheDirection) {
  SmtpStats st;
  SmtpConn c(st);
  const std::string greet = "220 mx\r\n";
  c.feed(1, reinterpret_cast<const uint8_t*>(greet.data()), greet.size());
  std::string mail = "MAIL FROM:<" + std::string(kSmtpMaxLine, 'a') + ">\r\nRCPT TO:<b@c>\r\n";
  c.feed(0, reinterpret_cast<const uint8_t*>(mail.data()), mail.size());
  EXPECT_EQ(st.lines_too_long, 1u);
  ASSERT_EQ(c.txs().size(), 1u);
  EXPECT_EQ(c.txs()[0]->mail_from.size(), kSmtpMaxLine - 10);  // the cut line's parameter
  EXPECT_EQ(c.txs()[0]->rcpt_to, std::vector<std::string>{"<b@c>"});  // the next line is read again
  c.feed(0, nullptr, 0, true);
  const std::string more = "RCPT TO:<d@e>\r\n";
  c.feed(0, reinterpret_cast<const uint8_t*>(more.data()), more.size());
  EXPECT_EQ(st.gaps, 1u);
  EXPECT_EQ(c.txs()[0]->rcpt_to.size(), 1u);
  c.end();
  EXPECT_TRUE(c.txs()[0]->complete);
}

// Each session raises Suricata's decoder events (app-layer-smtp.c's conditions) on its
// transactions, written per transaction in order.
TEST(Smtp, AnomaliesAsSuricataRaisesThem) {
  struct EvCase {
    const char* name;
    std::vector<Step> steps;
    std::vector<std::vector<std::string>> events;  // per transaction, Suricata's names
  };
  const std::string greet = "220 mx ESMTP\r\n";
  const std::string b64_long = std::string(80, 'Q') + "\r\n";
  const std::vector<EvCase> cases = {
      {"a clean mail", {{1, greet}, {0, "EHLO a\r\n"}, {1, "250 ok\r\n"}, {0, "MAIL FROM:<a@b>\r\n"}, {1, "250 ok\r\n"},
                        {0, "DATA\r\n"}, {1, "354 go\r\n"}, {0, "Subject: x\r\n\r\nhi\r\n.\r\n"}, {1, "250 ok\r\n"}},
       {{}}},
      {"a reply code Suricata does not know", {{1, greet}, {0, "EHLO a\r\n"}, {1, "299 what\r\n"}}, {{"INVALID_REPLY"}}},
      {"a reply of two bytes", {{1, greet}, {0, "EHLO a\r\n"}, {1, "25\r\n"}}, {{"INVALID_REPLY"}}},
      {"a greeting other than 220", {{0, "EHLO a\r\n"}, {1, "554 go away\r\n"}},
       {{"NO_SERVER_WELCOME_MESSAGE"}}},  // the 554 answers the EHLO: not the greeting
      {"a first reply other than 220", {{1, "421 busy\r\n"}, {0, "EHLO a\r\n"}}, {{}}},  // no transaction yet
      // The 220 answers the EHLO; the 250 after it answers nothing and is the first reply with
      // none waiting: Suricata takes it for a greeting that is not 220.
      {"a command before the greeting", {{0, "EHLO a\r\n"}, {1, "220 mx\r\n"}, {1, "250 ok\r\n"}},
       {{"INVALID_REPLY", "NO_SERVER_WELCOME_MESSAGE"}}},
      {"DATA refused", {{1, greet}, {0, "EHLO a\r\nMAIL FROM:<a@b>\r\n"}, {1, "250 ok\r\n250 ok\r\n"}, {0, "DATA\r\n"},
                        {1, "554 no\r\n"}},
       {{"DATA_COMMAND_REJECTED"}}},
      {"STARTTLS refused", {{1, greet}, {0, "EHLO a\r\n"}, {1, "250 ok\r\n"}, {0, "STARTTLS\r\n"}, {1, "454 no tls\r\n"}},
       {{"TLS_REJECTED"}}},
      // An unknown code still answers its command: the 354 after it is DATA's (the mail is read).
      {"an unknown code keeps the pairing", {{1, greet}, {0, "MAIL FROM:<a@b>\r\nRCPT TO:<c@d>\r\n"},
                                             {1, "250 ok\r\n556 odd\r\n"}, {0, "DATA\r\n"}, {1, "354 go\r\n"},
                                             {0, "Subject: x\r\n\r\nhi\r\n.\r\n"}, {1, "250 ok\r\n"}},
       {{"INVALID_REPLY"}}},
      {"DATA refused, then DATA again", {{1, greet}, {0, "MAIL FROM:<a@b>\r\n"}, {1, "250 ok\r\n"}, {0, "DATA\r\n"},
                                         {1, "451 later\r\n"}, {0, "DATA\r\n"}},
       {{"DATA_COMMAND_REJECTED", "UNPARSABLE_CONTENT"}}},
      // suricata-verify's smtp-ehlo-reset-after-rejected-data: an EHLO after a refused DATA resets
      // the transaction, so the next mail's DATA is no second one.
      {"an EHLO after a refused DATA", {{1, greet}, {0, "HELO a\r\n"}, {1, "250 ok\r\n"}, {0, "DATA\r\n"}, {1, "503 rcpt\r\n"},
                                         {0, "EHLO a\r\n"}, {1, "250 ok\r\n"}, {0, "MAIL FROM:<a@b>\r\n"}, {1, "250 ok\r\n"},
                                         {0, "DATA\r\n"}, {1, "354 go\r\n"}},
       {{"DATA_COMMAND_REJECTED", "DUPLICATE_FIELDS"}, {}}},
      // The second EHLO's anomaly is the mail's it interrupts (then a new transaction begins).
      {"an EHLO within a mail", {{1, greet}, {0, "EHLO a\r\n"}, {1, "250 ok\r\n"}, {0, "MAIL FROM:<a@b>\r\n"},
                                  {1, "250 ok\r\n"}, {0, "EHLO b\r\n"}},
       {{"DUPLICATE_FIELDS"}, {}}},
      {"a command after DATA before its reply", {{1, greet}, {0, "MAIL FROM:<a@b>\r\n"}, {1, "250 ok\r\n"}, {0, "DATA\r\nRSET\r\n"}},
       {{"INVALID_PIPELINED_SEQUENCE"}}},
      {"a second EHLO", {{1, greet}, {0, "EHLO a\r\n"}, {1, "250 ok\r\n"}, {0, "EHLO b\r\n"}, {1, "250 ok\r\n"}},
       {{"DUPLICATE_FIELDS"}}},
      {"a second MAIL FROM", {{1, greet}, {0, "MAIL FROM:<a@b>\r\n"}, {1, "250 ok\r\n"}, {0, "MAIL FROM:<c@d>\r\n"}},
       {{"DUPLICATE_FIELDS"}}},
      {"a BDAT that does not parse", {{1, greet}, {0, "MAIL FROM:<a@b>\r\n"}, {1, "250 ok\r\n"}, {0, "BDAT x\r\n"}},
       {{"INVALID_BDAT"}}},
      {"a command line cut", {{1, greet}, {0, "NOOP " + std::string(kSmtpMaxLine, 'x') + "\r\n"}}, {{"TRUNCATED_LINE"}}},
      {"long message lines", {{1, greet}, {0, "MAIL FROM:<a@b>\r\n"}, {1, "250 ok\r\n"}, {0, "DATA\r\n"}, {1, "354 go\r\n"},
                              {0, "Content-Type: text/plain\r\nContent-Transfer-Encoding: base64\r\n\r\n" + b64_long +
                                      std::string(1000, 'a') + "\r\n.\r\n"}},
       {{"MIME_LONG_LINE", "MIME_LONG_ENC_LINE"}}},
  };
  // Suricata's MIME limits: a field name over 75 bytes, a boundary over 254, a file name over 255,
  // a field value over 2,000 (its line is then over 998 too).
  const std::string boundary(260, 'b');
  const std::string mime_head = "X-" + std::string(80, 'n') + ": v\r\nContent-Type: multipart/mixed; boundary=\"" + boundary +
                                "\"\r\n\r\n--" + boundary + "\r\nContent-Disposition: attachment; filename=\"" +
                                std::string(300, 'f') + "\"\r\n\r\ndata\r\n--" + boundary + "--\r\n.\r\n";
  const std::vector<Step> mail_start = {{1, greet}, {0, "MAIL FROM:<a@b>\r\n"}, {1, "250 ok\r\n"}, {0, "DATA\r\n"}, {1, "354 go\r\n"}};
  std::vector<EvCase> all = cases;
  all.push_back({"long MIME names", mail_start, {{"MIME_LONG_HEADER_NAME", "MIME_LONG_BOUNDARY", "MIME_LONG_FILENAME"}}});
  all.back().steps.push_back({0, mime_head});
  all.push_back({"a long MIME value", mail_start, {{"MIME_LONG_LINE", "MIME_LONG_HEADER_VALUE"}}});
  all.back().steps.push_back({0, "Subject: " + std::string(2100, 's') + "\r\n\r\nhi\r\n.\r\n"});
  for (const EvCase& k : all) {
    SCOPED_TRACE(k.name);
    SmtpStats st;
    SmtpConn c(st);
    for (const Step& s : k.steps) c.feed(s.dir, reinterpret_cast<const uint8_t*>(s.bytes.data()), s.bytes.size());
    std::vector<std::vector<std::string>> got;
    for (const auto& t : c.txs()) {
      got.emplace_back();
      for (const char* n : smtp_event_names(t->events)) got.back().emplace_back(n);
    }
    EXPECT_EQ(got, k.events);
  }
  EXPECT_EQ(smtp_event_bit("invalid_reply"), uint32_t(kSmtpEvInvalidReply));
  EXPECT_NE(smtp_event_bit("unable_to_match_reply_with_request"), 0u);  // loads; never raised, as in Suricata
  EXPECT_EQ(smtp_event_bit("bdat_chunk_len_exceeded"), 0u);  // not raised here: its rule is skipped
}

}  // namespace
}  // namespace gaspp
