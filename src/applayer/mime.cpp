// applayer/mime.cpp — see mime.hpp.
#include "applayer/mime.hpp"

#include <strings.h>

#include <cstring>

#include <map>

namespace gaspp {

namespace {

bool mime_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

bool ieq(std::string_view a, const char* b) {
  const size_t n = std::char_traits<char>::length(b);
  return a.size() == n && strncasecmp(a.data(), b, n) == 0;
}

// Suricata's mime_parse_header_tokens: the parameters after the first ';'. A name is everything up
// to the next '=' (after leading white space); a value is quoted (up to the first unescaped '"')
// or runs to the next ';' (trailing white space dropped). A later duplicate replaces an earlier.
std::map<std::string, std::string, std::less<>> header_params(std::string_view v) {
  std::map<std::string, std::string, std::less<>> out;
  const size_t semi = v.find(';');
  if (semi == std::string_view::npos) return out;
  v.remove_prefix(semi + 1);
  while (!v.empty()) {
    size_t i = 0;
    while (i < v.size() && mime_space(v[i])) ++i;
    const size_t eq = v.find('=', i);
    if (eq == std::string_view::npos) break;
    const std::string_view name = v.substr(i, eq - i);
    std::string_view rest = v.substr(eq + 1), value;
    bool quoted = false;
    if (!rest.empty() && rest[0] == '"') {
      bool esc = false;
      for (size_t k = 1; k < rest.size(); ++k) {
        if (rest[k] == '\\') {
          esc = true;
        } else {
          if (rest[k] == '"' && !esc) {
            value = rest.substr(1, k - 1);
            rest.remove_prefix(k + 1);
            quoted = true;
            break;
          }
          esc = false;
        }
      }
    }
    if (!quoted) {
      // No closing quote: the value runs to the ';' like an unquoted one (the quote kept).
      size_t e = rest.find(';');
      if (e == std::string_view::npos) e = rest.size();
      value = rest.substr(0, e);
      while (!value.empty() && mime_space(value.back())) value.remove_suffix(1);
      rest.remove_prefix(e);
    }
    size_t k = 0;
    while (k < rest.size() && mime_space(rest[k])) ++k;
    if (k < rest.size() && rest[k] == ';') ++k;
    out[std::string(name)] = std::string(value);
    v = rest.substr(k);
  }
  return out;
}

// Suricata's mime_find_header_token: the parameter, or its RFC 2231 sections name*0, name*1, ...
// joined; false when neither is there.
bool find_param(std::string_view header_value, const std::string& name, std::string& out) {
  const auto params = header_params(header_value);
  if (const auto it = params.find(name); it != params.end()) {
    out = it->second;
    return true;
  }
  auto it = params.find(name + "*0");
  if (it == params.end()) return false;
  out = it->second;
  for (int n = 1; (it = params.find(name + "*" + std::to_string(n))) != params.end(); ++n) out += it->second;
  return true;
}

int b64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// Suricata's hex(): digits and upper-case A-F only.
int qp_hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}


}  // namespace

uint8_t file_hash_bit(std::string_view name) {
  return name == "md5" ? kHashMd5 : name == "sha1" ? kHashSha1 : name == "sha256" ? kHashSha256 : 0;
}

void MimeDecoder::line(std::string_view l, std::string_view eol) {
  if (l.size() > kMimeMaxLine) warnings_ |= kMimeWarnLongLine;
  if (state_ == State::body) {
    body_line(l, eol);
    return;
  }
  if (l.empty()) {
    if (headers_done()) {
      restart();  // an encapsulated message: its headers follow
      return;
    }
    state_ = State::body;
    if (!name_.empty()) open_file();
    return;
  }
  if (state_ == State::header && (l[0] == ' ' || l[0] == '\t')) {
    if (!headers_.empty()) {
      std::string& v = headers_.back().value;
      const size_t room = kMimeMaxHeaderValue > v.size() ? kMimeMaxHeaderValue - v.size() : 0;
      if (l.size() - 1 > room) ++st_.headers_dropped;
      v.append(l.substr(1, room));
    }
    return;
  }
  // Suricata's mime_parse_header_line: the name up to ':', the value after it and white space.
  const size_t colon = l.find(':');
  if (colon == std::string_view::npos) return;  // not a header: ignored
  state_ = State::header;
  if (headers_.size() >= kMimeMaxHeaders) {
    ++st_.headers_dropped;
    return;
  }
  size_t v = colon + 1;
  while (v < l.size() && mime_space(l[v])) ++v;
  std::string_view value = l.substr(v);
  if (colon > kMimeLongHeaderName) warnings_ |= kMimeWarnLongHeaderName;
  if (value.size() > kMimeMaxHeaderValue) warnings_ |= kMimeWarnLongHeaderValue;
  if (value.size() > kMimeMaxHeaderValue) {
    ++st_.headers_dropped;
    value = value.substr(0, kMimeMaxHeaderValue);
  }
  headers_.push_back(Header{std::string(l.substr(0, colon)), std::string(value)});
}

bool MimeDecoder::headers_done() {
  bool encap = false;
  for (const Header& h : headers_) {
    std::string v;
    if (ieq(h.name, "content-disposition")) {
      if (name_.empty() && find_param(h.value, "filename", v)) {
        if (v.size() > kMimeMaxName) warnings_ |= kMimeWarnLongFilename;
        name_ = v.substr(0, kMimeMaxName);
        attachments_.push_back(name_);
      }
    } else if (ieq(h.name, "content-transfer-encoding")) {
      if (ieq(h.value, "base64")) enc_ = Enc::base64, group_n_ = 0;
      else if (ieq(h.value, "quoted-printable")) enc_ = Enc::qp;
    } else if (ieq(h.name, "content-type")) {
      if (name_.empty() && find_param(h.value, "name", v)) {
        if (v.size() > kMimeMaxName) warnings_ |= kMimeWarnLongFilename;
        name_ = v.substr(0, kMimeMaxName);
        attachments_.push_back(name_);
      }
      if (find_param(h.value, "boundary", v)) {
        if (v.size() > kMimeLongBoundary) warnings_ |= kMimeWarnLongBoundary;
        if (boundaries_.size() < kMimeMaxBoundaries) boundaries_.push_back("--" + v);
        else ++st_.boundaries_dropped;
      }
      const std::string_view ct = std::string_view(h.value).substr(0, h.value.find(';'));
      if (ct.substr(0, 8) == "message/") encap = true;
      type_ = ct == "text/plain" || ct == "text/html" ? Type::text : Type::other;
    }
  }
  headers_.clear();
  return encap;
}

void MimeDecoder::restart() {
  state_ = State::start;
  headers_.clear();
  enc_ = Enc::plain;
  type_ = Type::message;
  url_line_.clear();
  group_n_ = 0;
  name_.clear();
  held_eol_.clear();
  qp_carry_.clear();
}

void MimeDecoder::open_file() {
  if (files_.size() >= kMimeMaxFiles) {
    ++st_.files_dropped;
    return;
  }
  ++st_.files;
  files_.emplace_back();
  files_.back().name = name_;
  open_ = int(files_.size() - 1);
  hash_.start(hashes_);
}

void MimeDecoder::close_file(bool truncated) {
  if (open_ < 0) return;
  MimeFile& f = files_[size_t(open_)];
  f.closed = !truncated;
  f.truncated = truncated;
  hash_.finish(f.md5, f.sha1, f.sha256);
  open_ = -1;
}

void MimeDecoder::append(const char* p, size_t n) {
  if (open_ < 0 || n == 0) return;
  MimeFile& f = files_[size_t(open_)];
  f.size += n;
  const size_t keep = f.data.size() < kMimeFileKeep ? std::min(n, kMimeFileKeep - f.data.size()) : 0;
  f.data.append(p, keep);
  st_.bytes_not_kept += n - keep;
  hash_.update(p, n);
}

void MimeDecoder::end(bool truncated) {
  if (!truncated) find_urls("\n");  // the last line, unfinished (Suricata's mime_smtp_complete)
  close_file(truncated);
  state_ = State::start;
}

// Suricata's mime_smtp_find_url_strings: whole lines to extract_urls, the rest held.
void MimeDecoder::find_urls(std::string_view in) {
  std::string_view all = in;
  if (!url_line_.empty()) {
    url_line_.append(in);
    all = url_line_;
  }
  if (all.empty()) return;
  if (all.back() == '\n' || all.size() > kMimeMaxUrlLine) {
    extract_urls(all);
    url_line_.clear();
    return;
  }
  // The last line break among the new bytes: what is before it is whole lines.
  const size_t nl = in.rfind('\n');
  if (nl == std::string_view::npos) {
    if (url_line_.empty()) url_line_.assign(in);
    return;
  }
  const size_t x = all.size() - in.size() + nl;
  extract_urls(all.substr(0, x));
  url_line_ = std::string(all.substr(x));
}

void MimeDecoder::extract_urls(std::string_view line) {
  static constexpr std::string_view kScheme = "http://";
  size_t at = 0;
  while (true) {
    // Case-insensitive search for the scheme.
    size_t start = std::string_view::npos;
    for (size_t i = at; i + kScheme.size() <= line.size(); ++i)
      if (strncasecmp(line.data() + i, kScheme.data(), kScheme.size()) == 0) {
        start = i;
        break;
      }
    if (start == std::string_view::npos) return;
    size_t end = start;
    while (end < line.size() && !std::strchr(" \"'<>]\t", line[end])) ++end;
    if (urls_.size() < kMimeMaxUrls) {
      urls_.emplace_back(line.substr(start + kScheme.size(), end - start - kScheme.size()));
      ++st_.urls;
    } else {
      ++st_.urls_dropped;
    }
    at = end;
  }
}

void MimeDecoder::body_line(std::string_view l, std::string_view eol) {
  if (!boundaries_.empty()) {
    const std::string& b = boundaries_.back();
    if (l.size() >= b.size() && l.compare(0, b.size(), b) == 0) {
      if (enc_ == Enc::base64 && group_n_ > 0 && open_ >= 0) {
        const std::string out = base64_line(std::string_view(), true);
        append(out.data(), out.size());
      }
      if (l.size() >= b.size() + 2 && l[b.size()] == '-' && l[b.size() + 1] == '-') boundaries_.pop_back();
      close_file(false);
      restart();
      return;
    }
  }
  if (name_.empty()) {
    // Not a file: text entities (and untyped ones) are read for URLs only, as sent unless base64.
    if (type_ == Type::other) return;
    if (enc_ == Enc::base64 && l.size() > kMimeMaxEncLine) warnings_ |= kMimeWarnLongEncLine;
    if (enc_ == Enc::base64) find_urls(base64_line(l, false));
    else find_urls(std::string(l) + std::string(eol));
    return;
  }
  switch (enc_) {
    case Enc::plain: {
      find_urls(std::string(l) + std::string(eol));
      append(held_eol_.data(), held_eol_.size());
      append(l.data(), l.size());
      held_eol_ = eol;
      break;
    }
    case Enc::base64: {
      if (l.size() > kMimeMaxEncLine) warnings_ |= kMimeWarnLongEncLine;
      const std::string out = base64_line(l, false);
      find_urls(out);
      append(out.data(), out.size());
      break;
    }
    case Enc::qp: {
      if (l.size() > kMimeMaxEncLine) warnings_ |= kMimeWarnLongEncLine;
      const std::string out = qp_line(l, eol);
      find_urls(out);
      append(out.data(), out.size());
      break;
    }
  }
}

std::string MimeDecoder::base64_line(std::string_view l, bool flush) {
  std::string out;
  out.reserve(l.size() * 3 / 4 + 3);
  const auto group = [&]() {
    const int a = b64_value(group_[0]), b = b64_value(group_[1]);
    group_n_ = 0;
    if (a < 0 || b < 0) return false;  // '=' first or second
    out += char((a << 2) | (b >> 4));
    if (group_[2] == '=') return true;
    const int c = b64_value(group_[2]);
    out += char(((b & 15) << 4) | (c >> 2));
    if (group_[3] == '=') return true;
    out += char(((c & 3) << 6) | b64_value(group_[3]));
    return true;
  };
  if (flush) {
    while (group_n_ < 4) group_[group_n_++] = '=';
    // A lone character left ("X===") decodes to nothing, as in Suricata (not counted there either).
    if (!group()) out.clear();
    return out;
  }
  for (const char c : l) {
    if (b64_value(c) < 0 && c != '=') continue;
    group_[group_n_++] = c;
    if (group_n_ == 4 && !group()) {
      ++st_.invalid_base64;
      warnings_ |= kMimeWarnInvalidBase64;
      return std::string();  // the line adds nothing
    }
  }
  return out;
}

std::string MimeDecoder::qp_line(std::string_view in, std::string_view eol) {
  std::string line;
  std::string_view l = in;
  if (!qp_carry_.empty()) {
    line = qp_carry_ + std::string(in);
    qp_carry_.clear();
    l = line;
  }
  std::string out = std::move(held_eol_);
  held_eol_.clear();
  bool soft = false;
  size_t c = 0;
  while (c < l.size()) {
    if (l[c] != '=') {
      out += l[c++];
      continue;
    }
    if (c == l.size() - 1 && !eol.empty()) {
      soft = true;
      break;
    }
    if (c + 2 >= l.size()) {
      if (!eol.empty()) ++st_.invalid_qp, warnings_ |= kMimeWarnInvalidQp;  // the rest of the line is dropped
      else qp_carry_ = std::string(l.substr(c));  // cut by the line limit: finished on the next line
      break;
    }
    const int h1 = qp_hex(l[c + 1]), h2 = qp_hex(l[c + 2]);
    if (h1 >= 0 && h2 >= 0) {
      out += char((h1 << 4) | h2);
    } else {
      ++st_.invalid_qp;
      warnings_ |= kMimeWarnInvalidQp;
    }
    c += 3;
  }
  if (in.empty() && qp_carry_.empty()) held_eol_ = eol;
  else if (!soft) out += eol;
  return out;
}

}  // namespace gaspp
