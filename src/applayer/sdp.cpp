// applayer/sdp.cpp — see sdp.hpp.
#include "applayer/sdp.hpp"

#include <arpa/inet.h>

#include <cctype>
#include <string_view>

namespace gaspp {

namespace {

using SV = std::string_view;

bool all_of(SV s, bool (*ok)(char)) {
  for (char c : s)
    if (!ok(c)) return false;
  return true;
}
bool alpha(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }
bool alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }
bool digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }
bool text_char(char c) { return alnum(c) || c == ' ' || c == '\t'; }
bool blank(char c) { return c == ' ' || c == '\t'; }
bool uri_char(char c) {
  static const SV extra = "!#$%&'*+-.^_`{|}~~#@:;=?+&$,/";
  return alnum(c) || extra.find(c) != SV::npos;
}
bool time_char(char c) { return digit(c) || c == 'd' || c == 'h' || c == 'm' || c == 's' || c == '-'; }

// Splits s at runs of blanks into at most `max` fields (the last one the rest of s, as written,
// when `rest`); false when s starts with a blank.
std::vector<SV> fields(SV s, size_t max, bool rest) {
  std::vector<SV> out;
  size_t i = 0;
  while (i < s.size() && out.size() < max) {
    if (rest && out.size() + 1 == max) {
      out.push_back(s.substr(i));
      break;
    }
    const size_t start = i;
    while (i < s.size() && !blank(s[i])) ++i;
    out.push_back(s.substr(start, i - start));
    while (i < s.size() && blank(s[i])) ++i;
  }
  return out;
}

std::string join(const std::vector<SV>& v) {
  std::string s;
  for (size_t k = 0; k < v.size(); ++k) s += (k ? " " : "") + std::string(v[k]);
  return s;
}

// "/n": 1 to 255, no leading zero.
bool small_number(SV s) {
  if (s.empty() || s.size() > 3 || s[0] == '0' || !all_of(s, digit)) return false;
  return std::stoi(std::string(s)) <= 255;
}

bool parse_origin(SV v, std::string& out) {
  const std::vector<SV> f = fields(v, 6, true);
  if (f.size() != 6 || f[1].empty() || !all_of(f[1], digit) || f[2].empty() || !all_of(f[2], digit) || f[3].empty() ||
      !all_of(f[3], alpha) || f[4].empty() || !all_of(f[4], alnum) || f[5].empty())
    return false;
  out = join(f);
  return true;
}

bool parse_connection(SV v, std::string& out) {
  const std::vector<SV> f = fields(v, 3, false);
  if (f.size() != 3 || f[0].empty() || !all_of(f[0], alpha) || f[1].empty() || !all_of(f[1], alnum)) return false;
  // The address, then /ttl (IPv4) and /n.
  SV a = f[2];
  std::vector<SV> parts;
  for (size_t at; (at = a.find('/')) != SV::npos; a = a.substr(at + 1)) parts.push_back(a.substr(0, at));
  parts.push_back(a);
  const std::string addr(parts[0]);
  unsigned char buf[16];
  char text[INET6_ADDRSTRLEN];
  std::string norm;
  bool v4 = false;
  if (inet_pton(AF_INET, addr.c_str(), buf) == 1) {
    v4 = true;
    norm = inet_ntop(AF_INET, buf, text, sizeof text);
  } else if (inet_pton(AF_INET6, addr.c_str(), buf) == 1) {
    norm = inet_ntop(AF_INET6, buf, text, sizeof text);
  } else {
    return false;
  }
  if (parts.size() > 3) return false;
  for (size_t k = 1; k < parts.size(); ++k)
    if (!small_number(parts[k])) return false;
  if (v4 && (buf[0] & 0xf0) == 0xe0 && parts.size() < 2) return false;  // multicast needs its TTL
  out = std::string(f[0]) + " " + std::string(f[1]) + " " + norm;
  const size_t keep = v4 ? parts.size() : std::min<size_t>(parts.size(), 2);  // IPv6: one /n
  for (size_t k = 1; k < keep; ++k) out += "/" + std::string(parts[k]);
  return true;
}

bool parse_bandwidth(SV v, std::string& out) {
  const size_t c = v.find(':');
  if (c == SV::npos) return false;
  const SV type = v.substr(0, c), n = v.substr(c + 1);
  if ((type != "CT" && type != "AS" && type != "TIAS") || n.empty() || !all_of(n, digit)) return false;
  out = std::string(v);
  return true;
}

bool parse_time(SV v, std::string& out) {
  const std::vector<SV> f = fields(v, 3, false);
  if (f.size() != 2 || f[0].empty() || f[1].empty() || !all_of(f[0], digit) || !all_of(f[1], digit)) return false;
  out = join(f);
  return true;
}

// r= and z=: exactly four fields of [0-9dhms-].
bool parse_four(SV v, std::string& out) {
  const std::vector<SV> f = fields(v, 5, false);
  if (f.size() != 4) return false;
  for (SV x : f)
    if (x.empty() || !all_of(x, time_char)) return false;
  out = join(f);
  return true;
}

bool parse_attribute(SV v, std::string& out) {
  size_t i = 0;
  while (i < v.size() && alpha(v[i])) ++i;
  if (i == 0 || (i < v.size() && v[i] != ':')) return false;
  out = std::string(v);
  return true;
}

bool parse_media(SV v, std::string& out) {
  const std::vector<SV> f = fields(v, 64, false);
  if (f.size() < 4) return false;
  const SV type = f[0];
  if (type != "audio" && type != "video" && type != "text" && type != "application" && type != "message") return false;
  SV port = f[1], count;
  if (const size_t s = port.find('/'); s != SV::npos) {
    count = port.substr(s + 1);
    port = port.substr(0, s);
    if (count.empty() || count.size() > 5 || !all_of(count, digit)) return false;
  }
  if (port.empty() || port.size() > 5 || !all_of(port, digit) || std::stoul(std::string(port)) > 65535) return false;
  if (f[2] != "udp" && f[2] != "RTP/AVP" && f[2] != "RTP/SAVP") return false;
  out = std::string(type) + " " + std::to_string(std::stoul(std::string(port)));
  if (!count.empty() && std::stoul(std::string(count)) <= 65535) out += "/" + std::to_string(std::stoul(std::string(count)));
  out += " " + std::string(f[2]);
  for (size_t k = 3; k < f.size(); ++k) {
    if (f[k].empty() || !all_of(f[k], alnum)) return false;
    out += " " + std::string(f[k]);
  }
  return true;
}

}  // namespace

bool parse_sdp(const uint8_t* p, size_t n, SdpMessage& out) {
  out = SdpMessage{};
  // The lines, each with its ending (a last line without one is not a line).
  std::vector<SV> lines;
  const SV all(reinterpret_cast<const char*>(p), n);
  for (size_t at = 0; at < all.size();) {
    const size_t lf = all.find('\n', at);
    if (lf == SV::npos) break;
    SV l = all.substr(at, lf - at);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    lines.push_back(l);
    at = lf + 1;
  }
  size_t i = 0;
  const auto is = [&](char type) { return i < lines.size() && lines[i].size() >= 2 && lines[i][0] == type && lines[i][1] == '='; };
  const auto val = [&] { return lines[i].substr(2); };
  // Up to the first t=: any failure fails the whole SDP.
  const auto fail = [&] {
    out = SdpMessage{};
    return false;
  };
  if (!is('v') || val() != "0") return fail();
  ++i;
  if (!is('o') || !parse_origin(val(), out.origin)) return fail();
  ++i;
  if (!is('s') || !all_of(val(), text_char)) return fail();
  out.session_name = std::string(val());
  ++i;
  if (is('i')) {
    if (!all_of(val(), text_char)) return fail();
    out.session_info = std::string(val()), out.has_info = true, ++i;
  }
  if (is('u')) {
    if (val().empty() || !all_of(val(), uri_char)) return fail();
    out.uri = std::string(val()), out.has_uri = true, ++i;
  }
  if (is('e')) out.email = std::string(val()), out.has_email = true, ++i;
  if (is('p')) out.phone = std::string(val()), out.has_phone = true, ++i;
  if (is('c')) {
    if (!parse_connection(val(), out.connection)) return fail();
    out.has_connection = true, ++i;
  }
  for (std::string b; is('b'); ++i) {
    if (!parse_bandwidth(val(), b)) return fail();
    out.bandwidths.push_back(b);
  }
  SdpTime t;
  if (!is('t') || !parse_time(val(), t.time)) return fail();
  ++i;
  // From here a line that does not fit ends the SDP, what came before kept.
  const auto time_repeat = [&](SdpTime& x) {
    if (is('r') && parse_four(val(), x.repeat)) x.has_repeat = true, ++i;
  };
  time_repeat(t);
  out.times.push_back(t);
  while (is('t')) {
    SdpTime x;
    if (!parse_time(val(), x.time)) return true;
    ++i;
    time_repeat(x);
    out.times.push_back(x);
  }
  if (is('z')) {
    if (!parse_four(val(), out.timezone)) return true;
    out.has_timezone = true, ++i;
  }
  if (is('k')) out.key = std::string(val()), out.has_key = true, ++i;
  for (std::string a; is('a'); ++i) {
    if (!parse_attribute(val(), a)) return true;
    out.attributes.push_back(a);
  }
  while (is('m')) {
    SdpMedia m;
    if (!parse_media(val(), m.media)) return true;
    ++i;
    // A line that does not fit ends the media description (kept) and the SDP.
    bool ok = true;
    if (is('i')) {
      ok = all_of(val(), text_char);
      if (ok) m.info = std::string(val()), m.has_info = true, ++i;
    }
    if (ok && is('c')) {
      ok = parse_connection(val(), m.connection);
      if (ok) m.has_connection = true, ++i;
    }
    for (std::string b; ok && is('b');) {
      ok = parse_bandwidth(val(), b);
      if (ok) m.bandwidths.push_back(b), ++i;
    }
    if (ok && is('k')) m.key = std::string(val()), m.has_key = true, ++i;
    for (std::string a; ok && is('a');) {
      ok = parse_attribute(val(), a);
      if (ok) m.attributes.push_back(a), ++i;
    }
    out.media.push_back(std::move(m));
    if (!ok) break;
  }
  return true;
}

}  // namespace gaspp
