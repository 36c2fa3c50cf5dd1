// The MIME decoder (applayer/mime.hpp): messages written out with the files Suricata's SMTP MIME
// decoder (rust/src/mime/smtp.rs) gives for them, worked out by hand from its rules and, for the
// encoded ones, checked with Python's base64 and quopri modules; each message fed with CRLF line
// breaks. Then the limits, the hashes (against known digests) and a truncated file.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "applayer/mime.hpp"

namespace gaspp {
namespace {

struct File {
  std::string name, data;
  bool closed;
};

struct Case {
  const char* name;
  std::string message;  // lines separated by "\n", fed with "\r\n"
  std::vector<File> files;
  std::vector<std::string> attachments;
  uint64_t invalid_base64 = 0, invalid_qp = 0;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"single part attachment, base64 over lines",
       "From: a@b\nContent-Type: application/octet-stream\nContent-Disposition: attachment; filename=\"a.bin\"\n"
       "Content-Transfer-Encoding: base64\n\naGVsbG8g\nd29y bGQ=\n",
       {{"a.bin", "hello world", true}},
       {"a.bin"}},
      {"multipart: a text part (no file) and a named part",
       "Content-Type: multipart/mixed; boundary=\"XX\"\n\npreamble\n--XX\nContent-Type: text/plain\n\nbody text\n"
       "--XX\nContent-Type: text/plain; name=n.txt\nContent-Transfer-Encoding: base64\n\nQUJD\n--XX--\nepilogue\n",
       {{"n.txt", "ABC", true}},
       {"n.txt"}},
      {"quoted-printable: escapes, soft break, the last line's break kept",
       "Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Disposition: attachment; filename=q.txt\n"
       "Content-Transfer-Encoding: quoted-printable\n\na=3Db=\nc\nlast\n--b--\n",
       {{"q.txt", "a=bc\r\nlast\r\n", true}},
       {"q.txt"}},
      {"quoted-printable: an empty last line's break is not",
       "Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Disposition: attachment; filename=q.txt\n"
       "Content-Transfer-Encoding: quoted-printable\n\nx\n\ny\n\n--b--\n",
       {{"q.txt", "x\r\n\r\ny\r\n", true}},
       {"q.txt"}},
      {"quoted-printable: lower-case hex and a cut escape are invalid",
       "Content-Disposition: attachment; filename=q\nContent-Transfer-Encoding: quoted-printable\n\na=3db\nc=4\n",
       {{"q", "ab\r\nc\r\n", true}},
       {"q"},
       0,
       2},
      {"plain: the lines with the breaks between them",
       "Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Disposition: attachment; filename=p.txt\n\nl1\nl2\n\n"
       "--b\nContent-Disposition: attachment; filename=p2.txt\nContent-Transfer-Encoding: 7bit\n\nonly\n--b--\n",
       {{"p.txt", "l1\r\nl2\r\n", true}, {"p2.txt", "only", true}},
       {"p.txt", "p2.txt"}},
      {"nested multipart, the inner boundary popped",
       "Content-Type: multipart/mixed; boundary=A\n\n--A\nContent-Type: multipart/alternative; boundary=B\n\n--B\n"
       "Content-Type: text/plain\n\nt\n--B\nContent-Type: text/html\n\n<p>h</p>\n--B--\n--A\n"
       "Content-Type: image/png; name=i.png\nContent-Transfer-Encoding: base64\n\niVBORw==\n--A--\n",
       {{"i.png", "\x89PNG", true}},
       {"i.png"}},
      {"RFC 2231 sections joined; a folded header",
       "Content-Type: multipart/mixed;\n boundary=\"zz\"\n\n--zz\nContent-Disposition: attachment;\n\tfilename*0=\"long\";"
       " filename*1=\"name.doc\"\nContent-Transfer-Encoding: base64\n\nWA==\n--zz--\n",
       {{"longname.doc", "X", true}},
       {"longname.doc"}},
      {"the first of Content-Type's name and Content-Disposition's filename wins",
       "Content-Type: text/plain; name=first.txt\nContent-Disposition: attachment; filename=second.txt\n\nz\n",
       {{"first.txt", "z", true}},
       {"first.txt"}},
      {"an encapsulated message's attachment",
       "Content-Type: multipart/mixed; boundary=o\n\n--o\nContent-Type: message/rfc822\n\nSubject: inner\n"
       "Content-Type: multipart/mixed; boundary=i\n\n--i\nContent-Disposition: attachment; filename=in.txt\n"
       "Content-Transfer-Encoding: base64\n\nSU4=\n--i--\n--o--\n",
       {{"in.txt", "IN", true}},
       {"in.txt"}},
      {"base64: the group left at the boundary is padded; '=' mid-line ends a group only",
       "Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Disposition: attachment; filename=g\n"
       "Content-Transfer-Encoding: base64\n\nQQ==QUJD\nREVGRA\n--b--\n",
       {{"g", "AABCDEFD", true}},
       {"g"}},
      {"base64: a line with '=' first in a group adds nothing",
       "Content-Disposition: attachment; filename=e\nContent-Transfer-Encoding: base64\n\nQUJD\n=AAA\nREVG\n",
       {{"e", "ABCDEF", true}},
       {"e"},
       1},
      {"no boundary parameter: parts are not split; the body of the message is not a file",
       "Content-Type: multipart/mixed\n\n--x\nContent-Disposition: attachment; filename=f\n\nbody\n",
       {},
       {}},
      {"a part's headers without a file name: not a file",
       "Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: application/pdf\n"
       "Content-Transfer-Encoding: base64\n\nJVBERg==\n--b--\n",
       {},
       {}},
  };
  return c;
}

void feed(MimeDecoder& m, const std::string& message) {
  size_t a = 0;
  while (a < message.size()) {
    size_t e = message.find('\n', a);
    if (e == std::string::npos) e = message.size();
    m.line(std::string_view(message).substr(a, e - a), "\r\n");
    a = e + 1;
  }
}

TEST(Mime, DecodesTheFilesSuricataDoes) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    MimeStats st;
    MimeDecoder m(st);
    feed(m, c.message);
    m.end();
    ASSERT_EQ(m.files().size(), c.files.size());
    for (size_t i = 0; i < c.files.size(); ++i) {
      EXPECT_EQ(m.files()[i].name, c.files[i].name);
      EXPECT_EQ(m.files()[i].data, c.files[i].data);
      EXPECT_EQ(m.files()[i].size, c.files[i].data.size());
      EXPECT_EQ(m.files()[i].closed, c.files[i].closed);
    }
    EXPECT_EQ(m.attachments(), c.attachments);
    EXPECT_EQ(st.invalid_base64, c.invalid_base64);
    EXPECT_EQ(st.invalid_qp, c.invalid_qp);
    EXPECT_EQ(st.files, c.files.size());
  }
}

// email.url, as Suricata's extract-urls finds them (rust/src/mime/smtp.rs): "http://" in any case,
// up to a space, tab, quote, '<', '>' or ']' (a line break is part of a URL), the scheme dropped;
// text and untyped entities as sent, base64 ones and files decoded; a URL cut across two base64
// lines is found whole; entities of other types (a multipart's preamble too) are not read.
TEST(Mime, FindsTheUrlsSuricataDoes) {
  MimeStats st;
  MimeDecoder m(st);
  const std::string msg =
      "Content-Type: multipart/mixed; boundary=b\n\npre http://preamble.example/ (a multipart's: not read)\n--b\n"
      "Content-Type: text/plain\n\nsee http://a.example/x and HTTP://B.example/y<z>\nend http://eol.example/e\n--b\n"
      "Content-Type: text/html\n\n<a href=\"http://c.example/p?q=1\">c</a> [http://d.example]\n--b\n"
      "Content-Type: text/plain\nContent-Transfer-Encoding: base64\n\n"
      // base64 of "go http://split.example/abc now\n", cut inside the URL's bytes
      "Z28gaHR0cDovL3NwbGl0LmV4\nYW1wbGUvYWJjIG5vdwo=\n--b\n"
      "Content-Type: application/pdf\n\nhttp://not-read.example/\n--b\n"
      "Content-Disposition: attachment; filename=f.txt\n\nin a file http://file.example/f\t.\n--b--\n";
  feed(m, msg);
  m.end();
  EXPECT_EQ(m.urls(), (std::vector<std::string>{"a.example/x", "B.example/y", "eol.example/e\r\n",
                                                "c.example/p?q=1", "d.example", "split.example/abc", "file.example/f"}));
  EXPECT_EQ(st.urls, 7u);
}

TEST(Mime, HashesEveryByteAndKeepsTheFirstMegabyte) {
  MimeStats st;
  MimeDecoder m(st, kHashMd5 | kHashSha1 | kHashSha256);
  m.line("Content-Disposition: attachment; filename=h", "\r\n");
  m.line("", "\r\n");
  m.line("hello world", "\r\n");
  m.end();
  ASSERT_EQ(m.files().size(), 1u);
  // Known digests of "hello world".
  EXPECT_EQ(m.files()[0].md5, "5eb63bbbe01eeed093cb22bb8f5acdc3");
  EXPECT_EQ(m.files()[0].sha1, "2aae6c35c94fcfb415dbe95f408b9ce91ee846ed");
  EXPECT_EQ(m.files()[0].sha256, "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9");

  MimeStats st2;
  MimeDecoder big(st2);
  big.line("Content-Disposition: attachment; filename=big", "\r\n");
  big.line("", "\r\n");
  const std::string line(1000, 'x');
  const size_t lines = kMimeFileKeep / 1000 + 100;
  for (size_t i = 0; i < lines; ++i) big.line(line, "\r\n");
  big.end(true);  // the flow ended inside the message
  ASSERT_EQ(big.files().size(), 1u);
  const uint64_t size = lines * 1000 + (lines - 1) * 2;
  EXPECT_EQ(big.files()[0].size, size);
  EXPECT_EQ(big.files()[0].data.size(), kMimeFileKeep);
  EXPECT_EQ(st2.bytes_not_kept, size - kMimeFileKeep);
  EXPECT_TRUE(big.files()[0].truncated);
  EXPECT_FALSE(big.files()[0].closed);
}

TEST(Mime, CountsWhatItsLimitsDrop) {
  MimeStats st;
  MimeDecoder m(st);
  std::string msg = "Content-Type: multipart/mixed; boundary=b\n\n";
  for (size_t i = 0; i < kMimeMaxFiles + 3; ++i) msg += "--b\nContent-Disposition: attachment; filename=f" + std::to_string(i) + "\n\nx\n";
  msg += "--b--\n";
  feed(m, msg);
  m.end();
  EXPECT_EQ(m.files().size(), kMimeMaxFiles);
  EXPECT_EQ(st.files_dropped, 3u);
  EXPECT_EQ(m.attachments().size(), kMimeMaxFiles + 3);  // the names are all listed

  MimeStats st2;
  MimeDecoder h(st2);
  for (size_t i = 0; i < kMimeMaxHeaders + 2; ++i) h.line("X-H: v", "\r\n");
  h.line("X-Long: " + std::string(kMimeMaxHeaderValue + 5, 'v'), "\r\n");
  EXPECT_EQ(st2.headers_dropped, 3u);
}

TEST(Mime, AQuotedPrintableEscapeCutByTheLineLimitEndsOnTheNextLine) {
  MimeStats st;
  MimeDecoder m(st);
  m.line("Content-Disposition: attachment; filename=c", "\r\n");
  m.line("Content-Transfer-Encoding: quoted-printable", "\r\n");
  m.line("", "\r\n");
  m.line("ab=4", "");  // cut: no line break
  m.line("1cd", "\r\n");
  m.end();
  ASSERT_EQ(m.files().size(), 1u);
  EXPECT_EQ(m.files()[0].data, "abAcd\r\n");
  EXPECT_EQ(st.invalid_qp, 0u);
}

}  // namespace
}  // namespace gaspp
