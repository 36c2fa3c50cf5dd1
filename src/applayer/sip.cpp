// applayer/sip.cpp — see sip.hpp.
#include "applayer/sip.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace gaspp {

namespace {

// RFC 3261's character classes as Suricata's parser has them (rust/src/sip/parser.rs).
bool is_token(uint8_t b) { return std::isalnum(b) || (b && std::strchr("!%'*+-._`~", b) != nullptr); }
bool is_uri(uint8_t b) { return is_token(b) || (b && std::strchr("~#@:;=?+&$,/", b) != nullptr); }
bool is_version(uint8_t b) { return std::isdigit(b) || b == '.'; }
bool is_reason(uint8_t b) { return is_token(b) || (b && std::strchr("$&(),/:;=?@[\\]^ ", b) != nullptr); }
bool is_value(uint8_t b) { return is_token(b) || (b && std::strchr("\"#$&(),/;:<=>?@[]{}()^|~\\\t\n\r ", b) != nullptr); }

const char* expand(const std::string& n) {
  if (n.size() != 1) return nullptr;
  switch (n[0]) {
    case 'i': return "Call-ID";
    case 'm': return "Contact";
    case 'e': return "Content-Encoding";
    case 'l': return "Content-Length";
    case 'c': return "Content-Type";
    case 'f': return "From";
    case 's': return "Subject";
    case 'k': return "Supported";
    case 't': return "To";
    case 'v': return "Via";
    default: return nullptr;
  }
}

// A cursor over [p, end): each step either matches, fails (bad), or runs out (more).
struct Cur {
  const uint8_t* p;
  const uint8_t* end;
  bool more = false;  // ran out of bytes: more may make it parse
  size_t left() const { return size_t(end - p); }
  // The run of bytes f accepts (empty when none; callers that need one check).
  template <class F>
  std::string take_while(F f) {
    const uint8_t* s = p;
    while (p < end && f(*p)) ++p;
    if (p == end) more = true;  // streaming: the run may go on
    return std::string(reinterpret_cast<const char*>(s), size_t(p - s));
  }
  bool lit(const char* w) {
    const size_t n = std::strlen(w);
    for (size_t i = 0; i < n; ++i) {
      if (p + i == end) {
        more = true;
        return false;
      }
      if (p[i] != uint8_t(w[i])) return false;
    }
    p += n;
    return true;
  }
};

// "SIP/" digits and dots.
bool version(Cur& c, std::string& out) {
  if (!c.lit("SIP/")) return false;
  const std::string v = c.take_while(is_version);
  if (v.empty() || c.more) return false;
  out = "SIP/" + v;
  return true;
}

// A header value as Suricata's parse_header_value reads it: up to a LF not followed by a space or
// a tab (a folded line goes on), trailing spaces and the CR left out; a byte outside the value's
// class fails. c is left at the line end (the CR or LF after the value).
bool header_value(Cur& c, std::string& out) {
  const uint8_t* s = c.p;
  size_t end_pos = 0, trail = 0, i = 0;
  const size_t n = c.left();
  while (i < n) {
    const uint8_t b = s[i];
    if (b == '\n') {
      if (++i >= n) {
        c.more = true;
        return false;
      }
      if (s[i] == ' ' || s[i] == '\t') {
        ++i;
        continue;
      }
      out.assign(reinterpret_cast<const char*>(s), end_pos);
      c.p = s + end_pos + trail;
      return true;
    }
    if (b == ' ' || b == '\t') {
      ++trail;
    } else if (b != '\r') {
      trail = 0;
      if (!is_value(b)) return false;
      end_pos = i + 1;
    }
    ++i;
  }
  c.more = true;
  return false;
}

}  // namespace

const std::string* SipTx::header(const char* name, size_t k) const {
  for (const auto& [n, v] : headers)
    if (n == name && k-- == 0) return &v;
  return nullptr;
}

size_t SipTx::header_count(const char* name) const {
  return size_t(std::count_if(headers.begin(), headers.end(), [&](const auto& h) { return h.first == name; }));
}

int sip_probe(const uint8_t* p, size_t n, bool* response) {
  // Suricata's patterns at offset 0, case-sensitive: these methods to the server, "SIP/2.0" to
  // the client.
  static const char* const kMethods[] = {"REGISTER", "INVITE", "BYE", "CANCEL", "REFER", "PRACK", "PUBLISH", "MESSAGE"};
  // Methods that other protocols share (OPTIONS, UPDATE: HTTP) or short ones: Suricata also asks
  // its probing parser ("SIP/" in the data); here the request-uri's scheme must follow.
  static const char* const kProbed[] = {"ACK", "INFO", "NOTIFY", "SUBSCRIBE", "OPTIONS", "UPDATE"};
  if (response) *response = false;
  if (n == 0) return -1;  // nothing yet (and no bytes to compare)
  bool wait = false;
  const auto starts = [&](const char* w) {
    const size_t k = std::strlen(w);
    const size_t m = std::min(n, k);
    if (std::memcmp(p, w, m) != 0) return 0;
    if (n < k) {
      wait = true;
      return 0;
    }
    return 1;
  };
  if (starts("SIP/2.0")) {
    if (response) *response = true;
    return 1;
  }
  for (const char* m : kMethods)
    if (starts(m)) return 1;
  for (const char* m : kProbed) {
    if (!starts(m)) continue;
    const size_t k = std::strlen(m);
    if (n == k) return -1;
    if (p[k] != ' ') continue;
    for (const char* scheme : {"sip:", "sips:", "tel:"}) {
      const size_t s = std::strlen(scheme);
      const size_t have = std::min(n - k - 1, s);
      bool same = true;
      for (size_t i = 0; i < have; ++i) same = same && std::tolower(p[k + 1 + i]) == scheme[i];
      if (!same) continue;
      if (have < s) return -1;
      return 1;
    }
  }
  return wait ? -1 : 0;
}

size_t parse_sip_head(const uint8_t* p, size_t n, SipTx& t, bool* incomplete) {
  Cur c{p, p + n};
  *incomplete = false;
  const auto fail = [&] {
    *incomplete = c.more;
    return size_t(0);
  };
  const bool response = n >= 4 && std::memcmp(p, "SIP/", 4) == 0;
  t.request = !response;
  if (response) {
    if (!version(c, t.version) || !c.lit(" ")) return fail();
    if (c.left() < 3) {
      c.more = true;
      return fail();
    }
    t.code.assign(reinterpret_cast<const char*>(c.p), 3);
    c.p += 3;
    if (!c.lit(" ")) return fail();
    t.reason = c.take_while(is_reason);
  } else {
    t.method = c.take_while([](uint8_t b) { return std::isalpha(b) != 0; });
    if (!c.lit(" ")) return fail();
    t.uri = c.take_while(is_uri);
    if (t.uri.empty() || c.more || !c.lit(" ") || !version(c, t.version)) return fail();
  }
  if (!c.lit("\r\n")) return fail();
  t.line_len = uint32_t(c.p - p);
  // The start line as Suricata's sip_take_line reads it: the reason-phrase characters from the
  // start (a request-uri's '#' or '~' ends it early, as there).
  {
    size_t k = 0;
    while (k < n && is_reason(p[k])) ++k;
    t.line.assign(reinterpret_cast<const char*>(p), k);
  }
  for (;;) {
    if (c.left() < 2) {
      c.more = true;
      return fail();
    }
    if (c.p[0] == '\r' && c.p[1] == '\n') break;
    std::string name = c.take_while(is_token);
    if (c.more) return fail();
    while (c.p < c.end && (*c.p == ' ' || *c.p == '\t')) ++c.p;
    if (!c.lit(":")) return fail();
    while (c.p < c.end && (*c.p == ' ' || *c.p == '\t')) ++c.p;
    std::string value;
    if (!header_value(c, value) || !c.lit("\r\n")) return fail();
    const char* full = expand(name);
    t.headers.emplace_back(full ? std::string(full) : std::move(name), std::move(value));
  }
  t.headers_len = uint32_t(c.p - p) - t.line_len;
  c.p += 2;
  return size_t(c.p - p);
}

bool sip_frame_span(const SipTx& t, int kind, size_t& off, size_t& len) {
  switch (kind) {
    case 0: off = 0, len = t.body_off() + t.body_len; return true;
    case 1: off = 0, len = t.line_len; return true;
    case 2: off = t.line_len, len = t.headers_len; return true;
    default: off = t.body_off(), len = t.body_len; return t.body_len != 0;
  }
}

void SipConn::number_frames(int dir, SipTx& t) {
  // pdu, start line, headers, and the body when there is one (Suricata makes no empty body frame).
  t.frame_id = frame_ids_[dir] + 1;
  frame_ids_[dir] += t.body_len ? 4 : 3;
}

void SipConn::add(std::unique_ptr<SipTx> t) {
  ++(t->request ? stats_.requests : stats_.responses);
  const size_t at = t->body_off();
  if (t->raw.size() > at) {
    t->has_sdp = parse_sdp(reinterpret_cast<const uint8_t*>(t->raw.data()) + at, t->raw.size() - at, t->sdp);
    stats_.sdp += t->has_sdp;
  }
  q_.add(std::move(t), &stats_.txs_dropped);
}

void SipConn::feed_datagram(int dir, const uint8_t* p, size_t n) {
  auto t = std::make_unique<SipTx>();
  bool more = false;
  const size_t head = parse_sip_head(p, n, *t, &more);
  // Suricata parses what goes to the server as a request, what comes back as a response.
  if (head == 0 || t->request != (dir == 0)) {
    ++stats_.invalid;
    return;
  }
  t->body_len = n - head;
  t->raw.assign(reinterpret_cast<const char*>(p), n);
  t->udp = true;
  number_frames(dir, *t);
  add(std::move(t));
}

void SipConn::feed(int dir, const uint8_t* p, size_t n, bool gap) {
  if (gap) {
    ++stats_.gaps;
    fed_[dir] = kSipNoOffset;  // how much the gap lost is not known here
    gap_[dir] = true;
    lost_[dir] = false;
    skip_[dir] = 0;
    buf_[dir].clear();
  }
  if (lost_[dir] || n == 0) return;
  const auto pass_over = [&](size_t k) {
    if (fed_[dir] != kSipNoOffset) fed_[dir] += k;
    p += k;
    n -= k;
  };
  if (skip_[dir]) {  // the rest of a body beyond the limit
    const size_t k = std::min(n, skip_[dir]);
    skip_[dir] -= k;
    pass_over(k);
    if (n == 0) return;
  }
  if (gap_[dir]) {
    // Resume only where a message starts.
    if (sip_probe(p, n, nullptr) == 0) return;
    gap_[dir] = false;
  }
  std::string& b = buf_[dir];
  b.append(reinterpret_cast<const char*>(p), n);
  size_t at = 0;
  while (at < b.size()) {
    auto t = std::make_unique<SipTx>();
    bool more = false;
    const auto* s = reinterpret_cast<const uint8_t*>(b.data() + at);
    size_t head = parse_sip_head(s, b.size() - at, *t, &more);
    if (head != 0 && t->request != (dir == 0)) head = 0, more = false;  // the wrong side's message
    if (head == 0) {
      if (more && b.size() - at <= kSipMaxHeaderBytes) break;  // wait for the rest of the head
      ++(more ? stats_.too_long : stats_.invalid);
      lost_[dir] = true;
      break;
    }
    // The body: Content-Length bytes (none without the field).
    size_t body = 0;
    if (const std::string* cl = t->header("Content-Length")) {
      const std::string v = cl->substr(0, cl->find_first_not_of("0123456789"));
      body = v.empty() || v.size() > 9 ? 0 : size_t(std::stoul(v));
    }
    const size_t have = b.size() - at - head;
    t->stream_offset = fed_[dir] == kSipNoOffset ? kSipNoOffset : fed_[dir] + at;
    if (body > kSipMaxBodyBytes) {
      // Not kept: the message is handed out with its head, the body passed over.
      ++stats_.too_long;
      t->body_len = body;
      t->raw.assign(b, at, head);
      number_frames(dir, *t);
      add(std::move(t));
      const size_t k = std::min(have, body);
      at += head + k;
      skip_[dir] = body - k;
      continue;
    }
    if (have < body) break;  // wait for the whole body
    t->body_len = body;
    t->raw.assign(b, at, head + body);
    number_frames(dir, *t);
    add(std::move(t));
    at += head + body;
  }
  if (lost_[dir]) {
    b.clear();
  } else {
    if (fed_[dir] != kSipNoOffset) fed_[dir] += at;
    b.erase(0, at);
  }
}

}  // namespace gaspp
