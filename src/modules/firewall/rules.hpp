// modules/firewall/rules.hpp — Suricata/Snort rule headers for the firewall: the parser.
//
// A rule is `ACTION PROTO SRC SPORT DIR DST DPORT (OPTIONS)`:
//   ACTION   alert, drop, pass, reject
//   PROTO    ip, tcp, udp, icmp, icmpv6 (tcp-pkt is tcp). Application-layer protocols (http,
//            dns, tls, ...) and tcp-stream need other engines: such rules are skipped, by reason.
//   SRC/DST  any; an IPv4 or IPv6 address, with /prefix or not, or a range A-B (both ends in);
//            $VARIABLE; a list [a,b,...], nested; ! negates an item or a list
//   SPORT/DPORT  any; N; N:M, N: and :M ranges; $VARIABLE; lists; ! (on an `ip` rule they apply
//            to packets that have ports; not allowed on icmp/icmpv6)
//   DIR      -> or <> (both directions); => (transactional: signatures on both sides of a transaction)
// A rule becomes a firewall rule when its options only name it (msg, sid, rev, gid, classtype,
// reference, metadata, priority, target) or act after a match without conditioning it (threshold
// and detection_filter limit alerts; flowbits set/unset/toggle/noalert set flags). Any other option
// (content, flow, flags, dsize, flowbits:isset, ...) conditions the match on more than the header:
// the rule is skipped and counted under that keyword. Lines that do not parse are reported with
// file, line and why, and skipped; none is dropped silently.
//
// Variables: Suricata's defaults (HOME_NET = [192.168.0.0/16,10.0.0.0/8,172.16.0.0/12],
// EXTERNAL_NET = !$HOME_NET, the *_SERVERS = $HOME_NET, HTTP_PORTS = 80, ...), overridable.
//
// Matching semantics of a port set: it matches when no positive item exists or a positive item
// matches, and no negated item matches. An address set is merged per address family, as Suricata
// does (DetectAddressMergeNot): a family with positive items is their union without the negated
// ones ([10.0.0.0/8,!10.1.0.0/16] is 10/8 without 10.1/16); a family with only negated items is the
// whole family without them (![a,b] is neither a nor b); a family the set does not name matches
// nothing — so !10.0.0.0/8, and $EXTERNAL_NET while $HOME_NET is IPv4 only, match no IPv6 address.
//
// Example:
//   RuleVars vars;                                   // Suricata's defaults
//   RuleSet set;
//   load_rules_file("drop.rules", vars, set);        // set.rules, set.skipped_by_reason, set.errors
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace gaspp {

enum class RuleAction : uint8_t { alert, drop, pass, reject, accept };

// Firewall-mode rules (Suricata 8's firewall: `accept:hook tcp:all ...`, loaded from firewall rule
// files, docs/rules.md): the action's scope and the hook (table) the rule belongs to.
enum class RuleScope : uint8_t { none, packet, flow, hook, tx };
enum class RuleHook : uint8_t {
  none,
  packet_all,  // <proto>:all — every packet, after decoding and flow/stream tracking
  // http1:<state>, in progress order (a request's, then a response's)
  request_started, request_line, request_headers, request_body, request_trailer, request_complete,
  response_started, response_line, response_headers, response_body, response_trailer, response_complete,
  // <proto>:pre_flow and <proto>:pre_stream — packet tables evaluated before packet_all, default
  // accept:hook (see policy.hpp for what "before" means here)
  packet_pre_flow, packet_pre_stream,
};
constexpr int kRuleHooks = int(RuleHook::packet_pre_stream) + 1;
const char* rule_hook_name(RuleHook h);  // "request_line", ...
// The sticky buffer a firewall rule's content inspects.
enum class RuleBuffer : uint8_t { none, http_method, http_stat_code };

struct AddrItem {
  uint8_t family = 4;      // 4 or 6
  uint8_t bytes[16] = {};  // network order, IPv4 in the first 4 (as the decoder stores addresses)
  uint8_t prefix = 32;     // bits
  bool range = false;      // an address range A-B: bytes is A, hi B (inclusive), prefix unused
  uint8_t hi[16] = {};
  bool neg = false;
  bool any = false;        // "any" inside a list
};

struct AddrSet {
  std::vector<AddrItem> items;  // empty: any
  // family 4 or 6; bytes in network order (IPv4 in the first 4).
  bool matches(uint8_t family, const uint8_t bytes[16]) const;
};

struct PortItem {
  uint16_t lo = 0, hi = 65535;
  bool neg = false;
};

struct PortSet {
  std::vector<PortItem> items;  // empty: any
  bool matches(uint16_t port) const;
};

struct Rule {
  RuleAction action = RuleAction::alert;
  uint8_t reject_dirs = 0;  // reject actions: RejectDirs (reject and rejectsrc: source; rejectdst; rejectboth)
  uint8_t proto = 0;       // IP protocol number; 0 = any IP
  AddrSet src, dst;
  PortSet sport, dport;
  bool bidirectional = false;
  bool transactional = false;  // `=>` (Suricata 8): an application-layer transaction, request and response
  std::string msg;
  uint32_t sid = 0, rev = 0, gid = 1;
  std::string threshold;   // kept as written (threshold / detection_filter); the firewall applies it
  std::string classtype;
  uint32_t priority = 0;   // 0: not given
  // metadata: each key with its values, keys in first-seen order (EVE's alert.metadata).
  std::vector<std::pair<std::string, std::vector<std::string>>> metadata;
  // Firewall mode only:
  RuleScope scope = RuleScope::none;
  RuleHook hook = RuleHook::none;
  bool alert = false;      // the `alert` keyword: a match also raises an alert
  RuleBuffer buffer = RuleBuffer::none;
  std::string content;     // bytes the buffer must contain (with buffer)
  bool nocase = false;
  bool flow_start = false; // hook <proto>:flow_start: the first packet of each direction only
                           // (kept with packet_all, in file order)
  uint8_t flow_dir = 0;    // flow:to_server (1) / to_client (2); 0: either
  uint8_t flow_est = 0;    // flow:established (1) / not_established (2); 0: either
  uint8_t session = 0;     // tcp.session phases, kSession* bits (policy.hpp); 0: no condition
  // Detection rules only (the firewall skips such rules): `tcp-stream` as the protocol (tcp,
  // matched on the stream only), or the application-layer protocol named there (http, dns, ...).
  bool tcp_stream = false;
  bool tcp_pkt = false;  // protocol tcp-pkt or pkthdr: payload options inspect packets only (Suricata's DETECT_PROTO_ONLY_PKT)
  std::string app_proto;
  std::vector<std::string> flowbit_writes;  // names the rule's flowbits set, unset or toggle
  bool flowbits_change = false;             // a flowbits unset or toggle (not IP-only in Suricata)
  bool noalert = false;                     // flowbits:noalert
  std::string file;
  uint32_t line = 0;
  std::string text;  // the rule as written (continued lines joined): EVE's alert.rule
  // `requires: keyword K`: the keywords the rule needs; each parser checks them against the
  // keywords it knows (parse_rule_head checks versions and features).
  std::vector<std::string> requires_keywords;
};

// Whether a rule's addresses hold a negation or an IPv6 range (Suricata's contains_negation and
// contains_range, detect-engine-address.c: it flags ranges in IPv6 notation only): an IP-only
// rule with one is like-IP-only, inspected on every packet rather than the first of each
// direction of a flow.
bool like_ip_only_addresses(const Rule& r);

// A rule's identity, as threshold.config names it.
struct RuleId {
  uint32_t gid, sid;
};

struct RuleVars {
  std::map<std::string, std::string> addr, port;  // name without '$' → value text
  // The optional features of Suricata's builds this run provides (`requires: feature F`): ja3,
  // unless suricata.yaml's app-layer.protocols.tls.ja3-fingerprints is no (module option
  // ja3-fingerprints=no), as Suricata provides it.
  std::vector<std::string> features = {"ja3"};
  // Keywords this run's configuration turns off: email.body_md5 with smtp.mime.body-md5 no
  // (module option smtp-body-md5=no), as Suricata then does not register it.
  std::vector<std::string> keywords_off;
  // Dataset files named by absolute paths or with '..' are refused (a rule error), as Suricata 8's
  // default; suricata.yaml's datasets.rules.allow-absolute-filenames (module option
  // datasets-allow-absolute=yes) allows them.
  bool datasets_allow_absolute = false;
  // IP reputation (modules/detect/iprep.hpp): the categories file (module option iprep-categories)
  // and, once the signature engine read it, its categories by short name; the reputation files
  // (iprep-files) and the directory relative ones are read from (iprep-path).
  std::string iprep_categories_file;
  std::map<std::string, uint8_t> iprep_categories;
  std::vector<std::string> iprep_files;
  std::string iprep_path;
  RuleVars();                                     // Suricata's defaults
};

struct RuleError {
  std::string file;
  uint32_t line;
  std::string why;
};

struct RuleSet {
  std::vector<Rule> rules;
  std::map<std::string, uint64_t> skipped_by_reason;  // rules read but not firewall rules
  std::vector<RuleError> errors;                      // lines that did not parse
  uint64_t lines = 0, comments = 0;                   // comments: blank lines included
  // (gid, sid) -> index in rules while files load (add_keeping_newest_rev); stale once rules are sorted
  std::map<std::pair<uint32_t, uint32_t>, size_t> by_id;
  uint64_t duplicates_replaced = 0;
  uint64_t skipped() const;
};

// Adds a parsed rule (or a signature holding one: rule_of gives it) to items unless its (gid, sid)
// is there already: then, as Suricata's DetectEngineSignatureIsDuplicate, a higher rev replaces
// the one loaded (in place, counted in replaced) and an equal or lower rev is an error naming it.
template <class T, class RuleOf>
void add_keeping_newest_rev(std::vector<T>& items, std::map<std::pair<uint32_t, uint32_t>, size_t>& by_id, T&& item,
                            RuleOf rule_of, std::vector<RuleError>& errors, uint64_t& replaced) {
  const Rule& r = rule_of(item);
  const auto [it, fresh] = by_id.try_emplace({r.gid, r.sid}, items.size());
  if (fresh) {
    items.push_back(std::move(item));
    return;
  }
  T& old = items[it->second];
  const Rule& o = rule_of(old);
  if (r.rev > o.rev) {
    ++replaced;
    old = std::move(item);
    return;
  }
  errors.push_back({r.file, r.line,
                    "duplicate signature: gid " + std::to_string(r.gid) + " sid " + std::to_string(r.sid) + " rev " +
                        std::to_string(r.rev) + " is loaded already with rev " + std::to_string(o.rev) + " (" + o.file +
                        ":" + std::to_string(o.line) + ")"});
}

// Which kind of file a rule comes from: threat-detection rules (alert/drop/pass/reject) or
// firewall rules (ACTION:SCOPE with an explicit hook; Suricata's firewall-rule files).
enum class RuleFile : uint8_t { detection, firewall };

// A module option that sets the rules' parsing context: address.NAME, port.NAME (variables),
// ja3-fingerprints and smtp-body-md5 (yes, no, auto: what RuleVars::features and keywords_off
// say). False when `k` is none of them; a bad value sets `err`.
bool rule_vars_option(const std::string& k, const std::string& v, RuleVars& vars, std::string& err);

// Parses an address expression as a rule's source or destination ("any", a CIDR, a range, a
// [list], !negation, $VAR): "" on success, else why not.
std::string parse_addr_set(const std::string& text, const RuleVars& vars, AddrSet& out);

// Parses one rule. Returns "" and fills `out` for a rule we apply; otherwise the reason it is not
// one: "skip:<reason>" for a valid rule that needs more than we match, or "error:<why>".
std::string parse_rule(const std::string& text, const RuleVars& vars, Rule& out, RuleFile kind = RuleFile::detection);

// The first half of parse_rule, shared with the signature parser (modules/detect): the header
// into `out` and the options split into (keyword, value) pairs, values trimmed and still quoted.
// Returns "" or "error:<why>". tcp-stream and application-layer protocols are accepted here (out.
// tcp_stream, out.app_proto); parse_rule skips such rules.
std::string parse_rule_head(const std::string& text, const RuleVars& vars, Rule& out,
                            std::vector<std::pair<std::string, std::string>>& opts, RuleFile kind = RuleFile::detection);
// Suricata's `requires` option (rules for other versions or builds): the version of Suricata's
// rule language gaspp follows, and the optional features it has. A rule whose requirements do not
// hold is skipped ("skip:requires ...", counted, no error) whatever else it holds, as Suricata
// skips it before parsing the rest: `version >= 7 < 8 | >= 9.0.99` (alternatives separated by |,
// each a list of comparisons that must all hold), `feature F`, `keyword K` (the parser that
// reads the rule checks K), several separated by commas. An unknown requirement fails.
inline constexpr uint8_t kRulesVersion[3] = {8, 0, 7};
// "" when `v` (the option's value) holds for this build and run (features: RuleVars::features),
// else "skip:requires <why>"; the keywords it names are appended to `keywords`.
std::string check_requires(const std::string& v, const std::vector<std::string>& features, std::vector<std::string>& keywords);
// Whether `k` is a keyword that names a rule or limits its alerts (apply_name_option's).
bool name_keyword(const std::string& k);
// Applies an option that names a rule or limits its alerts (msg, sid, rev, gid, classtype,
// reference, metadata, priority, target, threshold, detection_filter) to `out`; false when `k` is
// not one of them. A bad value sets `err`.
bool apply_name_option(const std::string& k, const std::string& v, Rule& out, std::string& err);
// A quoted content value (text, |hex| runs, \-escapes) into its bytes; false with `why`.
bool parse_content(const std::string& v, std::string& out, std::string& why);

// The rules of a file as texts, for a parser: comments and blank lines skipped (counted in
// comments; every line in lines), a line ending in '\' joined with the next; each(text, first line).
// False, with an error, when the file cannot be read.
bool read_rule_texts(const std::string& path, std::vector<RuleError>& errors, uint64_t& lines, uint64_t& comments,
                     const std::function<void(const std::string& text, uint32_t line)>& each);

// Reads a rules file (comments and blank lines ignored; a line ending in '\' continues).
// Returns false, with an error, if the file cannot be read.
bool load_rules_file(const std::string& path, const RuleVars& vars, RuleSet& set, RuleFile kind = RuleFile::detection);

// The three commonest reasons rules were skipped (errors by their first words), as the loading
// summary prints them: " (reason: n, reason: n, reason: n, ...)", or "" when none was.
std::string top_skip_reasons(const std::map<std::string, uint64_t>& skipped, const std::vector<RuleError>& errors);

// With the signature engine (modules/detect) beside the firewall: the flowbit names some rule of
// `files` reads (flowbits isset/isnotset), and whether the firewall keeps a rule it parsed — one
// with no noalert whose flowbits only write names no rule reads (ET's IP lists set ET.Evil and
// ET.DROPIP, which nothing reads). The signature engine takes the others.
std::set<std::string> flowbits_read(const std::vector<std::string>& files, const RuleVars& vars);
bool firewall_keeps(const Rule& r, const std::set<std::string>& read);

// Suricata's classification.config: lines `config classification: NAME,DESCRIPTION,PRIORITY`
// (comments and blank lines ignored; a line that does not parse is reported in `errors` with file
// and line and skipped). Class names compare without regard to case, as Suricata's do.
struct Classifications {
  std::map<std::string, uint32_t> priority;  // lower-case class name → priority
  std::map<std::string, std::string> description;  // lower-case class name → description (EVE's category)
  std::vector<RuleError> errors;
};
// The description of a class (any case), or null when the file did not describe it.
const std::string* class_description(const Classifications& c, const std::string& classtype);
// Returns false, with an error, if the file cannot be read.
bool load_classification_file(const std::string& path, Classifications& c);
// A rule of `rules` with a classtype and no `priority` keyword takes its class's priority, as in
// Suricata; returns how many did.
uint64_t apply_class_priorities(const Classifications& c, std::vector<Rule>& rules);
// The priority Suricata orders alerts by and reports as `severity`: the rule's (explicit or from
// its class), else 3.
inline uint32_t rule_priority(const Rule& r) { return r.priority ? r.priority : 3; }

// The order in which matched actions are applied (suricata.yaml's `action-order`, default pass,
// drop, reject, alert): signatures are ranked by it first, and the first deciding match of a
// packet in rank order wins (a pass ends the packet's alerts). accept (firewall mode) ranks with
// pass.
struct ActionOrder {
  uint8_t pass = 0, drop = 1, reject = 2, alert = 3;  // places: 0 first
  int rank(RuleAction a) const {
    switch (a) {
      case RuleAction::pass:
      case RuleAction::accept: return pass;
      case RuleAction::drop: return drop;
      case RuleAction::reject: return reject;
      default: return alert;
    }
  }
};
// "pass,drop,reject,alert" (each of the four once, any order) into out; "" or why not.
std::string parse_action_order(const std::string& text, ActionOrder& out);

}  // namespace gaspp
