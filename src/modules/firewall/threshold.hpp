// modules/firewall/threshold.hpp — Suricata's alert thresholding, for the firewall's and the
// signature engine's alerts: the rule keywords `threshold` and `detection_filter`, and the
// threshold.config file (suricata.yaml's `threshold-file`) with its `threshold`/`event_filter`,
// `rate_filter` and `suppress` lines. Applied on the host, in capture order, to a rule's matches.
//
// Rule keywords:
//   threshold: type limit, track T, count N, seconds S       at most N alerts per window of S s
//   threshold: type threshold, track T, count N, seconds S   an alert at every N-th match in a window
//   threshold: type both, track T, count N, seconds S        one alert per window, at the N-th match
//   threshold: type backoff, track by_flow, count N, multiplier M
//                                                            alerts at matches N, N*M, N*M*M, ... of a flow
//   detection_filter: track T, count N, seconds S            alerts for matches after the N-th in a window
//   detection_filter: track T, count N, seconds S, unique_on src_port|dst_port
//                                                            alerts once more than N distinct ports matched
// track: by_src, by_dst, by_rule, by_both (the address pair, either direction), by_flow. A window
// starts at the first match of a (rule, tracked key) and holds while the packet time is at most
// S seconds after it; the next match after it starts a new one. (Suricata's detect-engine-threshold.c,
// counts and window edges included.)
//
// threshold.config (Suricata's util-threshold-config.c), one entry a line (a trailing '\' continues
// it; '#' starts a comment):
//   threshold|event_filter gen_id G, sig_id S, type limit|threshold|both, track T, count N, seconds S
//   rate_filter gen_id G, sig_id S, track T, count N, seconds S, new_action alert|drop|pass|reject, timeout T
//   suppress gen_id G, sig_id S                                  the rule never alerts (noalert)
//   suppress gen_id G, sig_id S, track by_src|by_dst|by_either, ip ADDRESSES   (a list, a CIDR, $VAR)
// sig_id 0 applies the entry to every rule of gen_id G (gen_id 0: of every gid); a sig_id with
// gen_id 0 is an error. A `threshold` for one rule replaces the rule's own threshold or
// detection_filter; a `rate_filter` for one rule, or any entry for all rules, leaves a rule that
// already has one as it is (Suricata's precedence, bug 425). A suppression is checked first: a
// matching address silences the alert.
//
// Outcomes, as Suricata's: alert, no alert, or silent (no alert, the rule's action still taken).
// Both are "no alert" here. rate_filter: after N matches in a window, the new action holds for
// `timeout` seconds: new_action pass ends the packet's alerts and writes none; drop and reject
// make the match a drop, decided late on the host (LateVerdicts, gaspp/module.hpp); alert takes a
// drop rule's drop away where the host decides it (the signature engine makes such a signature's
// drop the host's), but not where the engine fixed it before the host saw the match (a firewall
// rule): the alert then keeps the verdict the packet really got (counted: rate_filter_unapplied).
//
// Limit: `max_entries` tracked (rule, key) windows (default 1 M); a match that needs a new one when
// the table is full alerts (it is not suppressed) and is counted (`threshold_table_full`). Flow
// windows are keyed by flow id and stay until the table fills, as the addresses' do.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "modules/firewall/rules.hpp"

namespace gaspp {

struct ThresholdSpec {
  enum Kind : uint8_t { none, limit, threshold, both, detection_filter, rate_filter, backoff } kind = none;
  enum Track : uint8_t { by_src, by_dst, by_rule, by_both, by_flow } track = by_src;
  enum NewAction : uint8_t { keep, alert, drop, reject, pass } new_action = keep;  // rate_filter
  uint32_t count = 1;
  uint32_t seconds = 60;
  uint32_t multiplier = 0;  // backoff
  uint32_t timeout = 0;     // rate_filter: seconds the new action holds
  // detection_filter's unique_on: count distinct source or destination ports, not matches.
  enum UniqueOn : uint8_t { no_unique, src_port, dst_port } unique_on = no_unique;
  // Suricata keeps a rule's `threshold` and its `detection_filter`/`rate_filter` in one list but
  // checks their kind when threshold.config entries are installed.
  bool is_filter() const { return kind == detection_filter || kind == rate_filter; }
};

// Parses a rule's option as the rule parser keeps it ("threshold:type limit, ..." or
// "detection_filter:track ..."); "" on success, else why not.
std::string parse_threshold(const std::string& text, ThresholdSpec& out);

struct SuppressSpec {
  enum Track : uint8_t { by_src, by_dst, by_either } track = by_src;
  AddrSet addrs;  // an empty set is `any`
};

// One line of a threshold.config.
struct ThresholdConfigEntry {
  enum Type : uint8_t { threshold, rate_filter, suppress } type = threshold;
  uint32_t gid = 1, sid = 0;  // sid 0: every rule of gid (gid 0: every rule)
  ThresholdSpec spec;         // threshold, rate_filter
  bool suppress_all = false;  // suppress without track: the rule never alerts
  SuppressSpec suppress_spec;
  std::string file;
  uint32_t line = 0;
};

// Reads a threshold.config. A line that does not parse is reported in `errors` (file, line, why)
// and skipped, as Suricata skips it. False (with the reason in errors) when the file cannot be read.
bool load_threshold_config(const std::string& path, const RuleVars& vars, std::vector<ThresholdConfigEntry>& out,
                           std::vector<RuleError>& errors);

// A rule's thresholding: its suppressions, then its thresholds, checked in that order.
struct RuleThresholds {
  std::vector<SuppressSpec> suppress;
  std::vector<ThresholdSpec> thresholds;
  bool noalert = false;  // suppressed without an address: never alerts
  bool empty() const { return suppress.empty() && thresholds.empty() && !noalert; }
};

// Installs the entries on rules (ids[k] is rule k's; out[k] holds its own threshold, if any, on
// entry), in file order, as Suricata's SetupThresholdRule/SetupSuppressRule do. `unmatched`: the
// entries for one rule that names no rule here (their indices into entries).
void apply_threshold_config(const std::vector<ThresholdConfigEntry>& entries, const std::vector<RuleId>& ids,
                            std::vector<RuleThresholds>& out, std::vector<size_t>& unmatched);

// Reads the threshold.config at `path` and installs it on rules `ids` (apply_threshold_config).
// Lines that do not parse are skipped. With `report`, they are reported on stderr (file:line:
// why), and so are the entries that name no rule of ids; a module that shares the file with one that reports (the firewall beside the
// signature engine) passes false, so each message is written once. `who` prefixes the error.
// Throws std::invalid_argument when the file cannot be read. Returns the entries installed.
size_t load_threshold_config_for(const std::string& path, const RuleVars& vars, const std::vector<RuleId>& ids,
                                 std::vector<RuleThresholds>& out, bool report, const char* who);

// Whether a rate_filter's new action `a` cannot be applied to a rule with action `rule` whose
// drop the engine decided: alert on a drop or reject rule (the packet was dropped already).
bool rate_filter_unapplied(ThresholdSpec::NewAction a, RuleAction rule);
// Where the answer to a packet the alert's action dropped goes (RejectDirs, gaspp/module.hpp): a
// reject rule's directions, a rate_filter's new_action reject's (the rule's, else the source, as
// Suricata's plain reject); 0 when the action is not a reject (or new_action replaced it).
uint8_t reject_dirs_for(const Rule& r, ThresholdSpec::NewAction a);

class ThresholdTable {
 public:
  enum Outcome : uint8_t { no_alert = 0, alert = 1, silent = 2 };
  struct Packet {
    const uint8_t* src;  // 16 bytes each, network order (IPv4 in the first 4)
    const uint8_t* dst;
    uint8_t family;      // 4 or 6
    uint64_t flow_id;    // 0: none (a by_flow threshold then does not alert, as Suricata's)
    uint64_t ts_ns;
    uint16_t sport = 0, dport = 0;  // for unique_on
  };
  explicit ThresholdTable(uint64_t max_entries = 1u << 20) : max_(max_entries) {}
  // Rule `rule`'s thresholding of a match: suppressions, then thresholds. `new_action`: a
  // rate_filter's action in force for this match (keep: none).
  Outcome check(const RuleThresholds& t, uint32_t rule, const Packet& p, ThresholdSpec::NewAction& new_action);
  uint64_t suppressed() const { return suppressed_; }
  uint64_t table_full() const { return full_; }
  uint64_t entries() const { return w_.size(); }

 private:
  struct Key {
    uint32_t rule;
    uint16_t spec;   // index in the rule's thresholds
    uint8_t track;
    uint8_t family;
    uint64_t flow;
    uint8_t a[16], b[16];
    bool operator<(const Key& o) const;
  };
  struct Window {
    uint64_t start_ns;
    uint32_t count;
    uint32_t next;        // backoff: the match count that alerts next
    uint64_t timeout_ns;  // rate_filter: when the new action took effect; 0: not in effect
    bool timeout_on;
    std::vector<uint64_t> ports;  // unique_on: the ports seen in the window, a bit each (8 KiB)
  };
  static void add_port(Window& w, const ThresholdSpec& s, const Packet& p);
  Outcome one(const ThresholdSpec& s, uint32_t rule, uint16_t spec, const Packet& p,
              ThresholdSpec::NewAction& new_action);
  std::map<Key, Window> w_;
  uint64_t max_;
  uint64_t suppressed_ = 0, full_ = 0;
};

}  // namespace gaspp
