// applayer/mime.hpp — a mail's MIME structure as Suricata's SMTP MIME decoder reads it (decode-mime,
// decode-base64 and decode-quoted-printable on): its attachments, decoded, for the signatures'
// file.data, EVE `fileinfo` events and the email object's `attachment` list.
//
// Fed the message one line at a time, dot-unstuffed, with the line break it came with ("\r\n",
// "\n", or none for a line cut at the SMTP line limit), from its first header line to the line
// before ".". Each entity's header block (the message's, then each part's after a boundary line)
// runs up to its first empty line; a line starting with a space or tab continues the previous
// field (that one white space character dropped). From each block:
//   - the first of Content-Disposition's filename= and Content-Type's name= in the block names the
//     entity's file (and joins the mail's attachment list);
//   - Content-Type's boundary= pushes "--" + boundary on a stack (at most kMimeMaxBoundaries); a
//     message/* type makes the lines that follow headers again (the encapsulated message).
//   - Content-Transfer-Encoding: base64, quoted-printable, anything else as is.
// Parameters are read after the first ';' as name=value or name="value" (escapes kept as sent),
// names compared exactly; RFC 2231 sections (filename*0=, filename*1=, ...) are joined. Names are
// cut at kMimeMaxName bytes.
//
// A line that starts with the innermost boundary ends the entity (and pops the boundary when "--"
// follows it); the next lines are the next part's headers. An entity with a file name is a file: its
// body is decoded into it until that boundary or the message's end:
//   base64: characters outside the alphabet (line breaks, spaces) are skipped; each group of four
//     gives three bytes, one with '=' third or fourth one or two (decoding goes on after it); the
//     group left at a boundary is padded with '='. A line with an invalid group ('=' first or
//     second) adds nothing (mime_invalid_base64) and the group restarts.
//   quoted-printable: =XX gives its byte (hex digits in upper case, as Suricata's); an invalid escape drops its three bytes, and a '=' that
//     leaves fewer than two characters before a line break drops the rest of the line (both
//     mime_invalid_qp); a '=' ending the line joins it to the next (a soft break); every other line
//     keeps its line break as sent, the last one's too, except an empty last line's.
//   anything else: the lines as sent with the line breaks between them; the break before the
//     boundary (or the message's end) belongs to it and is not part of the file.
// A file open when the message ends with "." is closed; one open when the flow ends is truncated.
// Entities without a file name are not kept.
//
// URLs (email.url, Suricata's extract-urls with its default scheme list, http://): in the body
// lines of text/plain, text/html and untyped entities and of files — as sent for plain and
// quoted-printable text entities, decoded for base64 ones and for files — each case-insensitive
// "http://" starts one that runs to the next space, tab, '"', '\'', '<', '>' or ']' (a line's
// break included, as Suricata's), logged without the scheme; decoded bytes are cut into lines
// first (a URL across two base64 lines is found), and the message's end flushes the last one.
//
// Differences from Suricata: a plain line ending in a bare LF adds "\n" (Suricata adds two bytes,
// the LF and a stale one); an invalid base64 group restarts the group (Suricata keeps decoding from
// the half-decoded group).
//
// Limits, each counted (MimeStats): kMimeMaxFiles files per message (later ones not kept,
// files_dropped); each file keeps its first kMimeFileKeep decoded bytes for inspection (the rest
// is counted in its size and hashes, bytes_not_kept); kMimeMaxUrls URLs per message (urls_dropped);
// kMimeMaxHeaders fields per header block and
// kMimeMaxHeaderValue bytes per value (Suricata's header-value-depth), the excess dropped
// (headers_dropped).
//
// Example:
//   MimeStats st;
//   MimeDecoder m(st, kHashMd5);
//   m.line("Content-Type: text/plain; name=\"a.txt\"", "\r\n");
//   m.line("", "\r\n");
//   m.line("hello", "\r\n");
//   m.end();   // m.files()[0]: name "a.txt", data "hello", closed
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "applayer/digest.hpp"

namespace gaspp {

constexpr size_t kMimeMaxFiles = 256;
constexpr size_t kMimeFileKeep = 1u << 20;
constexpr size_t kMimeMaxHeaders = 256;
constexpr size_t kMimeMaxHeaderValue = 2000;
constexpr size_t kMimeMaxBoundaries = 64;
constexpr size_t kMimeMaxName = 255;
constexpr size_t kMimeMaxUrls = 1024;
constexpr size_t kMimeMaxUrlLine = 8192;  // Suricata's SMTP_MIME_MAX_DECODED_LINE_LENGTH

// Which hashes of each file to compute (Suricata's force-hash): bits.
enum FileHash : uint8_t { kHashMd5 = 1, kHashSha1 = 2, kHashSha256 = 4 };
// The bit of a hash's name (md5, sha1, sha256); 0 for another name.
uint8_t file_hash_bit(std::string_view name);

struct MimeStats {
  uint64_t files = 0, files_dropped = 0, bytes_not_kept = 0, invalid_base64 = 0, invalid_qp = 0,
           headers_dropped = 0, boundaries_dropped = 0, urls = 0, urls_dropped = 0;
};

struct MimeFile {
  std::string name;
  std::string data;   // the first kMimeFileKeep bytes
  uint64_t size = 0;  // every byte decoded
  bool closed = false;
  bool truncated = false;  // the flow ended before its message
  std::string md5, sha1, sha256;  // lowercase hex, once closed, those asked for
  bool open() const { return !closed && !truncated; }
};

inline constexpr uint32_t kMimeWarnInvalidBase64 = 1, kMimeWarnInvalidQp = 2, kMimeWarnLongLine = 4,
                          kMimeWarnLongEncLine = 8, kMimeWarnLongHeaderName = 16, kMimeWarnLongHeaderValue = 32,
                          kMimeWarnLongBoundary = 64, kMimeWarnLongFilename = 128;
// RFC 2045's line lengths (without the break), Suricata's MAX_LINE_LEN and MAX_ENC_LINE_LEN; its
// MAX_HEADER_NAME and MAX_BOUNDARY_LEN (a file name's, RS_MIME_MAX_TOKEN_LEN, is kMimeMaxName).
inline constexpr size_t kMimeMaxLine = 998, kMimeMaxEncLine = 76, kMimeLongHeaderName = 75, kMimeLongBoundary = 254;

class MimeDecoder {
 public:
  explicit MimeDecoder(MimeStats& st, uint8_t hashes = 0) : st_(st), hashes_(hashes) {}
  MimeDecoder(const MimeDecoder&) = delete;
  MimeDecoder& operator=(const MimeDecoder&) = delete;
  // One line of the message without its break (eol: the break, empty when there was none).
  void line(std::string_view l, std::string_view eol);
  // The message ended ("."; truncated: the flow ended first): an open file closes, or is truncated.
  void end(bool truncated = false);
  const std::vector<MimeFile>& files() const { return files_; }
  // Every file name the headers gave (email.attachment), files not kept included.
  const std::vector<std::string>& attachments() const { return attachments_; }
  // The URLs found (email.url), in the order found.
  const std::vector<std::string>& urls() const { return urls_; }
  // The anomalies of the lines since the last call (kMimeWarn* bits, Suricata's MIME_ANOM_*
  // warnings: a line over 998 bytes; a base64 or quoted-printable line over 76 that is decoded;
  // base64 that does not decode; a quoted-printable escape that is not one; a header field's
  // name over 75 bytes or value over 2,000 on its first line; a boundary over 254 bytes; a file
  // name over 255), cleared.
  uint32_t take_warnings() { return std::exchange(warnings_, 0u); }

 private:
  enum class State : uint8_t { start, header, body };
  enum class Enc : uint8_t { plain, base64, qp };
  enum class Type : uint8_t { message, text, other };  // no Content-Type; text/plain or text/html
  struct Header {
    std::string name, value;
  };
  bool headers_done();  // true: an encapsulated message follows (headers again)
  void restart();
  void open_file();
  void close_file(bool truncated);
  void append(const char* p, size_t n);
  void body_line(std::string_view l, std::string_view eol);
  std::string base64_line(std::string_view l, bool flush);  // the bytes decoded
  std::string qp_line(std::string_view l, std::string_view eol);
  void find_urls(std::string_view in);
  void extract_urls(std::string_view line);

  MimeStats& st_;
  uint8_t hashes_;
  State state_ = State::start;
  std::vector<Header> headers_;  // the current entity's
  std::vector<std::string> boundaries_;
  std::string name_;  // the current entity's file name (empty: not a file)
  Enc enc_ = Enc::plain;
  Type type_ = Type::message;
  std::string url_line_;  // decoded bytes after the last line break, waiting for the rest of their line
  int open_ = -1;  // the open file's index, if any
  FileDigests hash_;
  // base64: the group in progress; plain and quoted-printable: the line break held back (an
  // empty line's, or every plain line's) and, quoted-printable, a '=' escape cut by a line limit.
  char group_[4] = {};
  int group_n_ = 0;
  std::string held_eol_;
  std::string qp_carry_;
  std::vector<MimeFile> files_;
  std::vector<std::string> attachments_;
  std::vector<std::string> urls_;
  uint32_t warnings_ = 0;
};

}  // namespace gaspp
