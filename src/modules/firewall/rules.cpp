#include "modules/firewall/rules.hpp"

#include "gaspp/module.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <functional>

#include "modules/firewall/policy.hpp"

namespace gaspp {
namespace {

const char* const kHeaderOnly[] = {"msg", "sid", "rev", "gid", "classtype", "reference", "metadata", "priority",
                                   "target", "threshold", "detection_filter"};

std::string trim(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return char(std::tolower(ch)); });
  return s;
}

// Splits a list body "a,b,[c,d]" at top-level commas.
std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(trim(cur));
  return out;
}

// Expands an address or port expression into items; `leaf` parses one plain item.
template <class Item>
bool expand(const std::string& text, bool neg, const std::map<std::string, std::string>& vars, int depth,
            std::vector<Item>& out, std::string& why, const std::function<bool(const std::string&, bool, Item&, std::string&)>& leaf) {
  if (depth > 16) {
    why = "variables nested too deep (a loop?)";
    return false;
  }
  std::string t = trim(text);
  if (t.empty()) {
    why = "empty address or port";
    return false;
  }
  while (!t.empty() && t[0] == '!') {
    neg = !neg;
    t = trim(t.substr(1));
  }
  if (t.empty()) {
    why = "'!' with nothing after it";
    return false;
  }
  if (t[0] == '$') {
    auto it = vars.find(t.substr(1));
    if (it == vars.end()) {
      why = "unknown variable " + t;
      return false;
    }
    return expand(it->second, neg, vars, depth + 1, out, why, leaf);
  }
  if (t[0] == '[') {
    if (t.back() != ']') {
      why = "unclosed list '" + t + "'";
      return false;
    }
    for (const std::string& part : split_list(t.substr(1, t.size() - 2)))
      if (!expand(part, neg, vars, depth + 1, out, why, leaf)) return false;
    return true;
  }
  Item it;
  if (!leaf(t, neg, it, why)) return false;
  out.push_back(it);
  return true;
}

bool parse_addr_leaf(const std::string& t, bool neg, AddrItem& it, std::string& why) {
  it.neg = neg;
  if (t == "any") {
    if (neg) {
      why = "'!any' matches nothing";
      return false;
    }
    it.any = true;
    return true;
  }
  // A range A-B (Suricata reads "10.0.0.1-10.0.0.9" and "2001:db8::1-2001:db8::ff").
  if (const size_t dash = t.find('-'); dash != std::string::npos && t.find('/') == std::string::npos) {
    AddrItem lo, hi;
    if (!parse_addr_leaf(t.substr(0, dash), neg, lo, why) || !parse_addr_leaf(t.substr(dash + 1), neg, hi, why))
      return false;
    if (lo.family != hi.family) {
      why = "address range '" + t + "' mixes IPv4 and IPv6";
      return false;
    }
    const int n = lo.family == 4 ? 4 : 16;
    if (std::memcmp(lo.bytes, hi.bytes, size_t(n)) > 0) {
      why = "address range '" + t + "' ends before it starts";
      return false;
    }
    it = lo;
    it.range = true;
    std::memcpy(it.hi, hi.bytes, 16);
    return true;
  }
  std::string a = t;
  int prefix = -1;
  const size_t slash = t.find('/');
  if (slash != std::string::npos) {
    a = t.substr(0, slash);
    const std::string p = t.substr(slash + 1);
    if (p.empty() || p.size() > 3 || !std::all_of(p.begin(), p.end(), ::isdigit)) {
      why = "bad prefix length in '" + t + "'";
      return false;
    }
    prefix = std::stoi(p);
  }
  if (inet_pton(AF_INET, a.c_str(), it.bytes) == 1) {
    it.family = 4;
    if (prefix > 32) {
      why = "prefix over 32 in '" + t + "'";
      return false;
    }
    it.prefix = uint8_t(prefix < 0 ? 32 : prefix);
  } else if (inet_pton(AF_INET6, a.c_str(), it.bytes) == 1) {
    it.family = 6;
    if (prefix > 128) {
      why = "prefix over 128 in '" + t + "'";
      return false;
    }
    it.prefix = uint8_t(prefix < 0 ? 128 : prefix);
  } else {
    why = "not an address: '" + t + "'";
    return false;
  }
  return true;
}

bool parse_port_number(const std::string& s, uint16_t& v) {
  if (s.empty() || s.size() > 5 || !std::all_of(s.begin(), s.end(), ::isdigit)) return false;
  const unsigned long n = std::stoul(s);
  if (n > 65535) return false;
  v = uint16_t(n);
  return true;
}

bool parse_port_leaf(const std::string& t, bool neg, PortItem& it, std::string& why) {
  it.neg = neg;
  if (t == "any") {
    if (neg) {
      why = "'!any' matches no port";
      return false;
    }
    return true;
  }
  const size_t colon = t.find(':');
  bool ok;
  if (colon == std::string::npos) {
    ok = parse_port_number(t, it.lo);
    it.hi = it.lo;
  } else {
    const std::string a = t.substr(0, colon), b = t.substr(colon + 1);
    it.lo = 0;
    it.hi = 65535;
    ok = (a.empty() || parse_port_number(a, it.lo)) && (b.empty() || parse_port_number(b, it.hi)) &&
         !(a.empty() && b.empty()) && it.lo <= it.hi;
  }
  if (!ok) why = "not a port or range: '" + t + "'";
  return ok;
}

template <class Set>
bool set_matches(const Set& s, const std::function<bool(const typename decltype(Set::items)::value_type&)>& hit) {
  bool positive = false, matched = false;
  for (const auto& it : s.items) {
    if (it.neg) {
      if (hit(it)) return false;
    } else {
      positive = true;
      matched = matched || hit(it);
    }
  }
  return !positive || matched;
}

// Splits "k:v; k2:v2; ..." at unescaped semicolons. Quotes do not protect a ';' (Suricata's
// parser does not track them either: a value holds `\;` or |3b|), so a pcre like "/^["']?x/" with
// a bare quote inside is one value.
bool split_options(const std::string& body, std::vector<std::pair<std::string, std::string>>& out, std::string& why) {
  // Options end at a ';' that is not escaped; escapes stay in the values (the option parsers read
  // them). Substrings, not a character at a time: this loop is most of the time of loading rules.
  size_t start = 0;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] == '\\' && i + 1 < body.size()) {
      ++i;
      continue;
    }
    if (body[i] != ';') continue;
    const std::string o = trim(body.substr(start, i - start));
    start = i + 1;
    if (o.empty()) continue;
    const size_t colon = o.find(':');
    out.emplace_back(trim(o.substr(0, colon)), colon == std::string::npos ? "" : trim(o.substr(colon + 1)));
  }
  if (!trim(body.substr(std::min(start, body.size()))).empty()) {
    why = "options do not end with ';'";
    return false;
  }
  return true;
}

std::string unquote(const std::string& v) {
  std::string s = v;
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  std::string o;
  for (size_t i = 0; i < s.size(); ++i) o += (s[i] == '\\' && i + 1 < s.size()) ? s[++i] : s[i];
  return o;
}

}  // namespace

std::string parse_addr_set(const std::string& text, const RuleVars& vars, AddrSet& out) {
  out.items.clear();
  std::string why;
  const std::function<bool(const std::string&, bool, AddrItem&, std::string&)> al = parse_addr_leaf;
  if (!expand(text, false, vars.addr, 0, out.items, why, al)) return why;
  // A positive "any" in the set leaves only its negations as the condition (as a rule's).
  bool any = false;
  for (const AddrItem& it : out.items) any = any || it.any;
  if (any) std::erase_if(out.items, [](const AddrItem& it) { return !it.neg; });
  return "";
}

bool AddrSet::matches(uint8_t family, const uint8_t bytes[16]) const {
  if (items.empty()) return true;
  // Per address family, as Suricata merges a set (DetectAddressMergeNot): a family with positive
  // items matches one of them; a family with only negated items is everything but them; a family
  // the set does not name matches nothing. So !10.0.0.0/8 (and $EXTERNAL_NET with an IPv4-only
  // $HOME_NET) matches no IPv6 address.
  bool pos_fam = false, neg_fam = false, hit = false;
  for (const AddrItem& it : items) {
    if (!it.any && it.family != family) continue;
    bool m = it.any;
    if (!m && it.range) {
      const size_t n = family == 4 ? 4 : 16;
      m = std::memcmp(it.bytes, bytes, n) <= 0 && std::memcmp(bytes, it.hi, n) <= 0;
    } else if (!m) {
      const int full = it.prefix / 8, rest = it.prefix % 8;
      m = std::memcmp(it.bytes, bytes, size_t(full)) == 0 &&
          (!rest || ((it.bytes[full] ^ bytes[full]) & uint8_t(0xff << (8 - rest))) == 0);
    }
    if (it.neg) {
      if (m) return false;
      neg_fam = true;
    } else {
      pos_fam = true;
      hit = hit || m;
    }
  }
  return pos_fam ? hit : neg_fam;
}

bool PortSet::matches(uint16_t port) const {
  return set_matches(*this, [&](const PortItem& it) { return port >= it.lo && port <= it.hi; });
}

RuleVars::RuleVars() {
  addr["HOME_NET"] = "[192.168.0.0/16,10.0.0.0/8,172.16.0.0/12]";
  addr["EXTERNAL_NET"] = "!$HOME_NET";
  for (const char* v : {"HTTP_SERVERS", "SMTP_SERVERS", "SQL_SERVERS", "DNS_SERVERS", "TELNET_SERVERS", "AIM_SERVERS",
                        "DC_SERVERS", "DNP3_SERVER", "DNP3_CLIENT", "MODBUS_CLIENT", "MODBUS_SERVER", "ENIP_CLIENT",
                        "ENIP_SERVER"})
    addr[v] = "$HOME_NET";
  port["HTTP_PORTS"] = "80";
  port["SHELLCODE_PORTS"] = "!80";
  port["ORACLE_PORTS"] = "1521";
  port["SSH_PORTS"] = "22";
  port["DNP3_PORTS"] = "20000";
  port["MODBUS_PORTS"] = "502";
  port["FILE_DATA_PORTS"] = "[$HTTP_PORTS,110,143]";
  port["FTP_PORTS"] = "21";
  port["GENEVE_PORTS"] = "6081";
  port["VXLAN_PORTS"] = "4789";
  port["TEREDO_PORTS"] = "3544";
}

uint64_t RuleSet::skipped() const {
  uint64_t n = 0;
  for (auto& [k, v] : skipped_by_reason) n += v;
  return n;
}

const char* rule_hook_name(RuleHook h) {
  static const char* const names[] = {"none", "all", "request_started", "request_line", "request_headers",
                                      "request_body", "request_trailer", "request_complete", "response_started",
                                      "response_line", "response_headers", "response_body", "response_trailer",
                                      "response_complete", "pre_flow", "pre_stream"};
  static_assert(sizeof(names) / sizeof(names[0]) == kRuleHooks, "a name per hook");
  return int(h) < kRuleHooks ? names[int(h)] : "?";
}

// A content string: text with |hex bytes| runs and \-escapes of ", ;, \ and |.
bool parse_content(const std::string& v, std::string& out, std::string& why) {
  const std::string t = trim(v);
  if (t.size() < 2 || t.front() != '"' || t.back() != '"') {
    why = "content must be quoted";
    return false;
  }
  out.clear();
  bool hex = false;
  std::string digits;
  for (size_t k = 1; k + 1 < t.size(); ++k) {
    const char c = t[k];
    if (c == '|') {
      if (hex && !digits.empty()) {
        why = "odd number of hex digits in content";
        return false;
      }
      hex = !hex;
      continue;
    }
    if (hex) {
      if (std::isspace(static_cast<unsigned char>(c))) continue;
      if (!std::isxdigit(static_cast<unsigned char>(c))) {
        why = std::string("bad hex digit '") + c + "' in content";
        return false;
      }
      digits += c;
      if (digits.size() == 2) {
        out += char(std::stoi(digits, nullptr, 16));
        digits.clear();
      }
      continue;
    }
    if (c == '\\' && k + 2 < t.size()) {
      out += t[++k];
      continue;
    }
    out += c;
  }
  if (hex) {
    why = "unterminated |hex| run in content";
    return false;
  }
  if (out.empty()) {
    why = "empty content";
    return false;
  }
  return true;
}

namespace {

// `flow:OPTIONS` or `tcp.session:PHASES` of a firewall packet rule into out.flow_dir,
// out.flow_est and out.session; "" or an "error:"/"skip:" verdict.
std::string parse_flow_keyword(const std::string& k, const std::string& v, Rule& out) {
  std::stringstream ss(v);
  for (std::string item; std::getline(ss, item, ',');) {
    const std::string o = trim(item);
    if (k == "tcp.session") {
      if (out.proto != 6) return "error:tcp.session needs protocol tcp";
      if (o == "setup") out.session |= kSessionSetup;
      else if (o == "established") out.session |= kSessionEstablished;
      else if (o == "closing") out.session |= kSessionClosing;
      else return "error:unknown tcp.session phase '" + o + "' (setup, established, closing)";
      continue;
    }
    const uint8_t dir = (o == "to_server" || o == "from_client") ? 1 : (o == "to_client" || o == "from_server") ? 2 : 0;
    const uint8_t est = o == "established" ? 1 : o == "not_established" ? 2 : 0;
    if (dir) {
      if (out.flow_dir && out.flow_dir != dir) return "error:flow: both directions given";
      out.flow_dir = dir;
    } else if (est) {
      if (out.flow_est && out.flow_est != est) return "error:flow: established and not_established";
      out.flow_est = est;
    } else if (o == "stateless") {
      // matches with or without a flow state: no condition
    } else if (o == "only_stream" || o == "no_stream" || o == "only_frag" || o == "no_frag") {
      return "skip:flow option " + o + " in a firewall rule";
    } else {
      return "error:unknown flow option '" + o + "'";
    }
  }
  return "";
}

RuleHook http1_hook(const std::string& s) {
  for (int h = int(RuleHook::request_started); h <= int(RuleHook::response_complete); ++h)
    if (s == rule_hook_name(RuleHook(h))) return RuleHook(h);
  return RuleHook::none;
}

}  // namespace

std::string parse_rule_head(const std::string& text, const RuleVars& vars, Rule& out,
                            std::vector<std::pair<std::string, std::string>>& opts, RuleFile kind) {
  out = Rule{};
  opts.clear();
  const size_t open = text.find('(');
  if (open == std::string::npos || text.find_last_of(')') == std::string::npos || text.find_last_of(')') < open)
    return "error:no option list '( ... )'";
  // `requires` first, as Suricata reads it: a rule for another version or build is skipped
  // whatever else it holds (a protocol or keyword this one does not know). The substring test
  // keeps the second split off every other rule.
  if (text.find("requires", open) != std::string::npos) {
    std::vector<std::pair<std::string, std::string>> all;
    std::string why;
    if (split_options(text.substr(open + 1, text.find_last_of(')') - open - 1), all, why))
      for (const auto& [k, v] : all)
        if (k == "requires")
          if (std::string r = check_requires(v, vars.features, out.requires_keywords); !r.empty()) return r;
  }
  const std::string header = text.substr(0, open);
  std::vector<std::string> f;
  {
    std::string cur;
    int depth = 0;
    for (char c : header) {
      if (c == '[') ++depth;
      if (c == ']') --depth;
      if (std::isspace(static_cast<unsigned char>(c)) && depth == 0) {
        if (!cur.empty()) f.push_back(cur);
        cur.clear();
      } else {
        cur += c;
      }
    }
    if (!cur.empty()) f.push_back(cur);
    if (depth != 0) return "error:unbalanced '[' and ']' in the header";
  }
  if (f.size() != 7) return "error:the header needs 7 fields (action proto src sport dir dst dport), found " + std::to_string(f.size());
  const bool fw = kind == RuleFile::firewall;
  std::string a = f[0];
  const size_t a_colon = a.find(':');
  if (fw != (a_colon != std::string::npos))
    return fw ? "error:a firewall rule needs ACTION:SCOPE (accept:hook, drop:flow, ...), not '" + a + "'"
              : "error:'" + a + "' is a firewall rule: load it as a firewall rule file (--firewall-rules)";
  if (fw) {
    const std::string scope = a.substr(a_colon + 1);
    a = a.substr(0, a_colon);
    if (scope == "packet") out.scope = RuleScope::packet;
    else if (scope == "flow") out.scope = RuleScope::flow;
    else if (scope == "hook") out.scope = RuleScope::hook;
    else if (scope == "tx") out.scope = RuleScope::tx;
    else return "error:unknown action scope '" + scope + "' (packet, flow, hook, tx)";
    if (a != "accept" && a != "drop") return "error:a firewall rule's action is accept or drop, not '" + a + "'";
  }
  if (a == "alert") out.action = RuleAction::alert;
  else if (a == "drop") out.action = RuleAction::drop;
  else if (a == "pass") out.action = RuleAction::pass;
  else if (a == "accept") out.action = RuleAction::accept;
  else if (a == "reject" || a == "rejectsrc" || a == "rejectdst" || a == "rejectboth") {
    out.action = RuleAction::reject;
    out.reject_dirs = a == "rejectdst" ? kRejectToDest : a == "rejectboth" ? kRejectToSource | kRejectToDest : kRejectToSource;
  }
  else return "error:unknown action '" + a + "'";
  std::string p = f[1];
  if (fw) {
    const size_t colon = p.find(':');
    if (colon == std::string::npos) return "error:a firewall rule needs PROTO:HOOK (tcp:all, http1:request_line, ...), not '" + p + "'";
    const std::string hook = p.substr(colon + 1);
    p = p.substr(0, colon);
    if (p == "http1") {
      out.hook = http1_hook(hook);
      if (out.hook == RuleHook::none) return "error:unknown http1 hook '" + hook + "'";
      if (out.scope == RuleScope::packet) return "error:an http1 hook takes scope hook, flow or tx, not packet";
      p = "tcp";
    } else if (hook == "all" || hook == "flow_start" || hook == "pre_flow" || hook == "pre_stream") {
      out.hook = hook == "pre_flow" ? RuleHook::packet_pre_flow : hook == "pre_stream" ? RuleHook::packet_pre_stream
                                                                                     : RuleHook::packet_all;
      out.flow_start = hook == "flow_start";
      if (out.scope == RuleScope::tx) return "error:scope tx needs an application-layer hook";
    } else if (p == "tcp" || p == "udp" || p == "ip" || p == "icmp" || p == "icmpv6") {
      return "error:unknown packet hook '" + hook + "' (all, flow_start, pre_flow, pre_stream)";
    }
  }
  if (p == "ip") out.proto = 0;
  else if (p == "tcp") out.proto = 6;
  else if (p == "tcp-pkt") {
    out.proto = 6;
    out.tcp_pkt = true;
  }
  else if (p == "pkthdr") {
    // Suricata's packet-header protocol: any packet, its payload options on the packet only (the
    // decoder-events rules are written for it).
    out.proto = 0;
    out.tcp_pkt = true;
  }
  else if (p == "udp") out.proto = 17;
  else if (p == "icmp") out.proto = 1;
  else if (p == "icmpv6") out.proto = 58;
  else if (p == "tcp-stream") {
    out.proto = 6;
    out.tcp_stream = true;
  } else {
    out.app_proto = p;
  }
  out.transactional = false;
  if (f[4] == "->") out.bidirectional = false;
  else if (f[4] == "<>") out.bidirectional = true;
  else if (f[4] == "=>") out.bidirectional = false, out.transactional = true;
  else return "error:direction must be ->, <> or =>, not '" + f[4] + "'";
  std::string why;
  const std::function<bool(const std::string&, bool, PortItem&, std::string&)> pl = parse_port_leaf;
  out.sport.items.clear();
  out.dport.items.clear();
  // "any" items mean no restriction: parse_addr_set drops them (a list with a positive "any"
  // matches everything its negations allow).
  if (why = parse_addr_set(f[2], vars, out.src); !why.empty()) return "error:source address: " + why;
  if (why = parse_addr_set(f[5], vars, out.dst); !why.empty()) return "error:destination address: " + why;
  if (!expand(f[3], false, vars.port, 0, out.sport.items, why, pl)) return "error:source port: " + why;
  if (!expand(f[6], false, vars.port, 0, out.dport.items, why, pl)) return "error:destination port: " + why;
  std::erase_if(out.sport.items, [](const PortItem& it) { return !it.neg && it.lo == 0 && it.hi == 65535; });
  std::erase_if(out.dport.items, [](const PortItem& it) { return !it.neg && it.lo == 0 && it.hi == 65535; });
  // Ports on an `ip` rule apply to packets that have ports (ET Open has such rules; Suricata loads
  // them); on ICMP they cannot mean anything.
  if ((out.sport.items.size() || out.dport.items.size()) && (out.proto == 1 || out.proto == 58))
    return "error:ports given for protocol " + p;
  const size_t close = text.find_last_of(')');
  if (!split_options(text.substr(open + 1, close - open - 1), opts, why)) return "error:" + why;
  return "";
}

bool rule_vars_option(const std::string& k, const std::string& v, RuleVars& vars, std::string& err) {
  if (k.rfind("address.", 0) == 0) vars.addr[k.substr(8)] = v;
  else if (k.rfind("port.", 0) == 0) vars.port[k.substr(5)] = v;
  else if (k == "datasets-allow-absolute" && v != "yes" && v != "no") err = k + " is yes or no, not '" + v + "'";
  else if (k == "datasets-allow-absolute") vars.datasets_allow_absolute = v == "yes";
  else if (k == "iprep-categories") vars.iprep_categories_file = v;
  else if (k == "iprep-path") vars.iprep_path = v;
  else if (k == "iprep-files") {
    std::stringstream ss(v);
    for (std::string f; std::getline(ss, f, ',');)
      if (!f.empty()) vars.iprep_files.push_back(f);
  }
  else if (k != "ja3-fingerprints" && k != "smtp-body-md5") return false;
  else if (v != "yes" && v != "no" && v != "auto") err = k + " is yes, no or auto, not '" + v + "'";
  else if (v == "no" && k == "ja3-fingerprints") std::erase(vars.features, "ja3");
  else if (v == "no") vars.keywords_off.push_back("email.body_md5");
  return true;
}

bool name_keyword(const std::string& k) {
  return std::any_of(std::begin(kHeaderOnly), std::end(kHeaderOnly), [&](const char* h) { return k == h; });
}

std::string check_requires(const std::string& v, const std::vector<std::string>& features, std::vector<std::string>& keywords) {
  // A version: 1 to 3 numbers separated by dots ("9", "7.0.3"); -1 when it does not parse.
  const auto version = [](const std::string& t, size_t& i, int out[3]) {
    out[0] = out[1] = out[2] = 0;
    for (int part = 0; part < 3; ++part) {
      size_t n = 0;
      int x = 0;
      while (i < t.size() && std::isdigit(uint8_t(t[i])) && n < 3) x = x * 10 + (t[i++] - '0'), ++n;
      if (!n || x > 255) return false;
      out[part] = x;
      if (i >= t.size() || t[i] != '.') break;
      ++i;
    }
    return true;
  };
  const int have[3] = {kRulesVersion[0], kRulesVersion[1], kRulesVersion[2]};
  const auto cmp = [&](const int w[3]) {
    for (int j = 0; j < 3; ++j)
      if (have[j] != w[j]) return have[j] < w[j] ? -1 : 1;
    return 0;
  };
  std::stringstream ss(v);
  bool versions = false;
  for (std::string item; std::getline(ss, item, ',');) {
    const std::string t = trim(item);
    if (t.empty()) continue;
    const size_t sp = t.find_first_of(" \t");
    const std::string key = t.substr(0, sp), val = sp == std::string::npos ? "" : trim(t.substr(sp));
    if (key == "keyword") {
      if (val.empty()) return "skip:requires: keyword without a name";
      keywords.push_back(val);
    } else if (key == "feature") {
      // The optional features of Suricata's builds that gaspp provides (ja4, file-store, lua, ... it has not).
      if (std::find(features.begin(), features.end(), val) == features.end()) return "skip:requires feature " + val;
    } else if (key == "version") {
      if (versions) return "skip:requires: version given twice";
      versions = true;
      // Alternatives separated by '|', each comparisons that must all hold.
      bool any = false;
      std::stringstream alts(val);
      for (std::string alt; std::getline(alts, alt, '|');) {
        const std::string a = trim(alt);
        size_t i = 0;
        bool all = true, parsed = false;
        while (i < a.size()) {
          while (i < a.size() && a[i] == ' ') ++i;
          if (i >= a.size()) break;
          std::string op;
          while (i < a.size() && (a[i] == '<' || a[i] == '>' || a[i] == '=')) op += a[i++];
          if (op != ">=" && op != ">" && op != "<=" && op != "<") return "skip:requires: bad version expression '" + val + "'";
          while (i < a.size() && a[i] == ' ') ++i;
          int w[3];
          if (!version(a, i, w)) return "skip:requires: bad version expression '" + val + "'";
          const int c = cmp(w);
          all = all && (op == ">=" ? c >= 0 : op == ">" ? c > 0 : op == "<=" ? c <= 0 : c < 0);
          parsed = true;
        }
        if (!parsed) return "skip:requires: bad version expression '" + val + "'";
        any = any || all;
      }
      if (!any) return "skip:requires version " + val;
    } else {
      return "skip:requires: unknown requirement '" + key + "'";
    }
  }
  return "";
}

bool apply_name_option(const std::string& k, const std::string& v, Rule& out, std::string& err) {
  if (!name_keyword(k)) return false;
  if (k == "msg") {
    if (v.size() < 2 || v.front() != '"' || v.back() != '"') {
      err = "msg must be a quoted string, not " + v;
      return true;
    }
    out.msg = unquote(v);
  }
  if (k == "sid") {
    if (v.empty() || !std::all_of(v.begin(), v.end(), ::isdigit)) {
      err = "sid must be a number, not '" + v + "'";
      return true;
    }
    out.sid = uint32_t(std::stoul(v));
  }
  if (k == "rev" && !v.empty() && std::all_of(v.begin(), v.end(), ::isdigit)) out.rev = uint32_t(std::stoul(v));
  if (k == "gid" && !v.empty() && std::all_of(v.begin(), v.end(), ::isdigit)) out.gid = uint32_t(std::stoul(v));
  if (k == "threshold" || k == "detection_filter") out.threshold = k + ":" + v;
  if (k == "classtype") out.classtype = trim(v);
  if (k == "metadata") {
    // "key value, key value": the first word is the key, the rest its value (Suricata's form).
    std::stringstream ss(v);
    for (std::string item; std::getline(ss, item, ',');) {
      const std::string t = trim(item);
      const size_t sp = t.find_first_of(" \t");
      if (t.empty()) continue;
      const std::string key = t.substr(0, sp), value = sp == std::string::npos ? std::string() : trim(t.substr(sp));
      auto it = std::find_if(out.metadata.begin(), out.metadata.end(), [&](const auto& e) { return e.first == key; });
      if (it == out.metadata.end()) out.metadata.push_back({key, {value}});
      else it->second.push_back(value);
    }
  }
  if (k == "priority" && !v.empty() && std::all_of(v.begin(), v.end(), ::isdigit)) out.priority = uint32_t(std::stoul(v));
  return true;
}

std::string parse_rule(const std::string& text, const RuleVars& vars, Rule& out, RuleFile kind) {
  std::vector<std::pair<std::string, std::string>> opts;
  const std::string head = parse_rule_head(text, vars, out, opts, kind);
  if (!head.empty()) return head;
  if (out.tcp_stream) return "skip:protocol tcp-stream (stream matching)";
  if (!out.app_proto.empty()) return "skip:app-layer protocol " + out.app_proto;
  if (out.transactional) return "error:=> (a transactional rule) needs an application-layer protocol";
  const bool fw = kind == RuleFile::firewall;
  std::string why;
  bool have_sid = false;
  bool have_content = false;
  for (auto& [k, v] : opts) {
    if (fw) {
      // Firewall rules: the alert keyword, one content on a supported sticky buffer, names.
      if (k == "alert") {
        out.alert = true;
        continue;
      }
      if (k == "http.method" || k == "http.stat_code") {
        const bool req = out.hook >= RuleHook::request_line && out.hook <= RuleHook::request_complete;
        const bool resp = out.hook >= RuleHook::response_line && out.hook <= RuleHook::response_complete;
        if (k == "http.method" ? !req : !resp)
          return "error:" + k + " is not available at hook " + rule_hook_name(out.hook);
        if (out.buffer != RuleBuffer::none) return "skip:more than one sticky buffer in a firewall rule";
        out.buffer = k == "http.method" ? RuleBuffer::http_method : RuleBuffer::http_stat_code;
        continue;
      }
      if (k == "content") {
        if (out.buffer == RuleBuffer::none) return "skip:content without a sticky buffer in a firewall rule";
        if (have_content) return "skip:more than one content in a firewall rule";
        if (!v.empty() && trim(v)[0] == '!') return "skip:negated content in a firewall rule";
        if (!parse_content(v, out.content, why)) return "error:" + why;
        have_content = true;
        continue;
      }
      if (k == "nocase") {
        if (!have_content) return "error:nocase without a content";
        out.nocase = true;
        continue;
      }
      if (k == "flow" || k == "tcp.session") {
        const bool packet_hook = out.hook == RuleHook::packet_all || out.hook == RuleHook::packet_pre_stream;
        if (out.hook == RuleHook::packet_pre_flow) return "error:" + k + " needs a flow: not available at hook pre_flow";
        if (!packet_hook) return "skip:keyword " + k + " at an application-layer hook";
        const std::string w = parse_flow_keyword(k, v, out);
        if (!w.empty()) return w;
        continue;
      }
      if (k == "threshold" || k == "detection_filter" || k == "flowbits")
        return "skip:keyword " + k + " in a firewall rule";
    }
    if (k == "requires") {
      // Versions and features held (parse_rule_head); the keywords are this parser's to know.
      for (const std::string& kw : out.requires_keywords) {
        static const char* const kFirewall[] = {"alert", "http.method", "http.stat_code", "content", "nocase", "flow", "tcp.session"};
        const bool known = name_keyword(kw) || kw == "flowbits" || kw == "requires" ||
                           (fw && std::any_of(std::begin(kFirewall), std::end(kFirewall), [&](const char* f) { return kw == f; }));
        if (!known) return "skip:requires keyword " + kw;
      }
      continue;
    }
    if (k == "flowbits") {
      const std::string cmd = trim(v.substr(0, v.find(',')));
      if (cmd == "isset" || cmd == "isnotset") return "skip:keyword flowbits " + cmd;
      if (cmd == "noalert") {
        out.noalert = true;
      } else {
        out.flowbits_change = out.flowbits_change || cmd != "set";
        std::string names = v.find(',') == std::string::npos ? "" : v.substr(v.find(',') + 1);
        for (char& c : names)
          if (c == '|' || c == '&') c = ',';
        std::stringstream ss(names);
        for (std::string n; std::getline(ss, n, ',');)
          if (!trim(n).empty()) out.flowbit_writes.push_back(trim(n));
      }
      continue;  // set, unset, toggle, noalert: effects after a match
    }
    std::string err;
    if (!apply_name_option(k, v, out, err)) return "skip:keyword " + k;
    if (!err.empty()) return "error:" + err;
    have_sid = have_sid || k == "sid";
  }
  if (!have_sid) return "error:no sid";
  if (out.buffer != RuleBuffer::none && !have_content) return "error:" + std::string(out.buffer == RuleBuffer::http_method ? "http.method" : "http.stat_code") + " without a content";
  return "";
}

std::string top_skip_reasons(const std::map<std::string, uint64_t>& skipped, const std::vector<RuleError>& errors) {
  std::map<std::string, uint64_t> why = skipped;
  for (const RuleError& e : errors) ++why[e.why.substr(0, e.why.find(':'))];
  std::vector<std::pair<uint64_t, std::string>> top;
  for (const auto& [w, n] : why) top.emplace_back(n, w);
  std::sort(top.begin(), top.end(), [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
  std::string reasons;
  for (size_t k = 0; k < top.size() && k < 3; ++k) reasons += (k ? ", " : " (") + top[k].second + ": " + std::to_string(top[k].first);
  if (!reasons.empty()) reasons += top.size() > 3 ? ", ...)" : ")";
  return reasons;
}

bool like_ip_only_addresses(const Rule& r) {
  const auto like = [](const AddrSet& a) {
    return std::any_of(a.items.begin(), a.items.end(), [](const AddrItem& x) { return x.neg || (x.range && x.family == 6); });
  };
  return like(r.src) || like(r.dst);
}

std::set<std::string> flowbits_read(const std::vector<std::string>& files, const RuleVars& vars) {
  std::set<std::string> read;
  std::vector<RuleError> errors;  // the loaders report them
  uint64_t lines = 0, comments = 0;
  for (const std::string& path : files)
    read_rule_texts(path, errors, lines, comments, [&](const std::string& text, uint32_t) {
      // Most rules have no flowbits: skip parsing them (a third of loading ET Open went here).
      if (text.find("flowbits") == std::string::npos) return;
      Rule r;
      std::vector<std::pair<std::string, std::string>> opts;
      if (!parse_rule_head(text, vars, r, opts).empty()) return;
      for (auto& [k, v] : opts) {
        if (k != "flowbits") continue;
        const size_t comma = v.find(',');
        const std::string cmd = trim(v.substr(0, comma));
        if ((cmd != "isset" && cmd != "isnotset") || comma == std::string::npos) continue;
        std::string names = v.substr(comma + 1);
        for (char& c : names)
          if (c == '|' || c == '&') c = ',';
        std::stringstream ss(names);
        for (std::string n; std::getline(ss, n, ',');)
          if (!trim(n).empty()) read.insert(trim(n));
      }
    });
  return read;
}

bool firewall_keeps(const Rule& r, const std::set<std::string>& read) {
  if (r.noalert) return false;
  for (const std::string& n : r.flowbit_writes)
    if (read.count(n)) return false;
  return true;
}

bool read_rule_texts(const std::string& path, std::vector<RuleError>& errors, uint64_t& lines, uint64_t& comments,
                     const std::function<void(const std::string& text, uint32_t line)>& each) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    errors.push_back({path, 0, "is a directory; name the rule files (e.g. " + path + "/*.rules)"});
    return false;
  }
  std::ifstream in(path);
  if (!in) {
    errors.push_back({path, 0, "cannot be read"});
    return false;
  }
  std::string line, text;
  uint32_t no = 0, first = 0;
  while (std::getline(in, line)) {
    ++no;
    ++lines;
    const std::string t = trim(line);
    if (text.empty() && (t.empty() || t[0] == '#')) {
      ++comments;
      continue;
    }
    if (text.empty()) first = no;
    if (!t.empty() && t.back() == '\\') {
      text += t.substr(0, t.size() - 1);
      continue;
    }
    text += t;
    each(text, first);
    text.clear();
  }
  if (!text.empty()) errors.push_back({path, first, "the file ends inside a continued line"});
  return true;
}

bool load_rules_file(const std::string& path, const RuleVars& vars, RuleSet& set, RuleFile kind) {
  return read_rule_texts(path, set.errors, set.lines, set.comments, [&](const std::string& text, uint32_t first) {
    Rule r;
    const std::string res = parse_rule(text, vars, r, kind);
    if (res.empty()) {
      r.file = path;
      r.line = first;
      r.text = text;
      add_keeping_newest_rev(set.rules, set.by_id, std::move(r), [](const Rule& x) -> const Rule& { return x; },
                             set.errors, set.duplicates_replaced);
    } else if (res.rfind("skip:", 0) == 0) {
      ++set.skipped_by_reason[res.substr(5)];
    } else {
      set.errors.push_back({path, first, res.substr(6)});
    }
  });
}

bool load_classification_file(const std::string& path, Classifications& c) {
  std::ifstream in(path);
  if (!in) {
    c.errors.push_back({path, 0, "cannot be read"});
    return false;
  }
  const std::string prefix = "config classification:";
  std::string line;
  for (uint32_t no = 1; std::getline(in, line); ++no) {
    const std::string t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    if (t.rfind(prefix, 0) != 0) {
      c.errors.push_back({path, no, "not a 'config classification:' line"});
      continue;
    }
    // NAME,DESCRIPTION,PRIORITY: the description may hold no comma in Suricata's format either.
    std::vector<std::string> f;
    std::stringstream ss(t.substr(prefix.size()));
    for (std::string x; std::getline(ss, x, ',');) f.push_back(trim(x));
    if (f.size() != 3 || f[0].empty() || f[2].empty() || !std::all_of(f[2].begin(), f[2].end(), ::isdigit) ||
        f[2].size() > 9) {
      c.errors.push_back({path, no, "expected NAME,DESCRIPTION,PRIORITY"});
      continue;
    }
    c.priority[lower(f[0])] = uint32_t(std::stoul(f[2]));
    c.description[lower(f[0])] = f[1];
  }
  return true;
}

const std::string* class_description(const Classifications& c, const std::string& classtype) {
  const auto d = c.description.find(lower(classtype));
  return d == c.description.end() ? nullptr : &d->second;
}

uint64_t apply_class_priorities(const Classifications& c, std::vector<Rule>& rules) {
  uint64_t n = 0;
  for (Rule& r : rules) {
    if (r.priority || r.classtype.empty()) continue;
    const auto it = c.priority.find(lower(r.classtype));
    if (it == c.priority.end()) continue;
    r.priority = it->second;
    ++n;
  }
  return n;
}

std::string parse_action_order(const std::string& text, ActionOrder& out) {
  ActionOrder o;
  uint8_t* slot[4] = {&o.pass, &o.drop, &o.reject, &o.alert};
  const char* names[4] = {"pass", "drop", "reject", "alert"};
  bool seen[4] = {};
  uint8_t place = 0;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    int k = 0;
    while (k < 4 && item != names[k]) ++k;
    if (k == 4) return "'" + item + "' is not an action (pass, drop, reject, alert)";
    if (seen[k]) return "'" + item + "' is given twice";
    seen[k] = true;
    *slot[k] = place++;
  }
  if (place != 4) return "it must name pass, drop, reject and alert, each once";
  out = o;
  return "";
}

}  // namespace gaspp
