// modules/firewall/firewall_host.cpp — the firewall's host side: options, rule loading, alerts.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <stdexcept>

#include "decode/decoder.hpp"
#include "modules/firewall/firewall.hpp"
#include "core/eve_event.hpp"
#include "modules/firewall/alert_eve.hpp"

namespace gaspp {

FirewallModule::Host::Host(const ModuleOptions& opt) : ModuleHost<FirewallModule>({}) {
  RuleVars vars;
  std::vector<std::string> files, policy_files;
  std::string class_file;
  std::string threshold_file;
  bool class_file_given = false;
  bool with_detect = false;  // detect=on: the signature engine loads the same files
  ActionOrder action_order;
  for (auto& [k, v] : opt) {
    if (k == "classification-file") {
      class_file = v;
      class_file_given = true;
    } else if (k == "payload") {
      payload_ = v == "on";
    } else if (k == "packet") {
      eve_packet_ = v == "on";
    } else if (k == "verdict") {
      eve_verdict_ = v == "on";
    } else if (k == "ethernet") {
      eve_ether_ = v == "on";
    } else if (k == "detect") {
      with_detect = v == "on";
    } else if (k == "rules" || k == "firewall-rules") {
      std::stringstream ss(v);
      for (std::string f; std::getline(ss, f, ',');)
        if (!f.empty()) (k == "rules" ? files : policy_files).push_back(f);
    } else if (k == "action-order") {
      const std::string why = parse_action_order(v, action_order);
      if (!why.empty()) throw std::invalid_argument("firewall: action-order: " + why);
    } else if (k == "threshold-file") {
      threshold_file = v;
    } else if (alert_metadata_option(k, v, alert_meta_)) {
    } else if (std::string err; rule_vars_option(k, v, vars, err)) {
      // (iprep-* and datasets-allow-absolute are the signature engine's: read, unused here)
      if (!err.empty()) throw std::invalid_argument("firewall: " + err);
    } else {
      throw std::invalid_argument("firewall: unknown option '" + k +
                                  "' (rules, firewall-rules, classification-file, threshold-file, ja3-fingerprints, smtp-body-md5, metadata.flow|app-layer|rule.metadata|rule.raw, detect, payload, packet, verdict, action-order, address.NAME, port.NAME)");
    }
  }
  for (const std::string& f : files)
    if (!load_rules_file(f, vars, set_)) throw std::invalid_argument("firewall: rule file " + f + ": " + set_.errors.back().why);
  if (with_detect) {
    // The signature engine keeps flowbits: a rule that writes a bit some rule reads (or has
    // noalert) goes there with every rule that needs more than a header (rules.hpp, firewall_keeps).
    const std::set<std::string> read = flowbits_read(files, vars);
    const size_t before = set_.rules.size();
    std::erase_if(set_.rules, [&](const Rule& r) { return !firewall_keeps(r, read); });
    to_detect_ = before - set_.rules.size();
  }
  for (const std::string& f : policy_files)
    if (!load_rules_file(f, vars, policy_set_, RuleFile::firewall))
      throw std::invalid_argument("firewall: firewall rule file " + f + ": " + policy_set_.errors.back().why);
  // Firewall mode is on when firewall rule files were given, whatever they hold: with no rule
  // loaded every packet is dropped (default drop), never passed.
  firewall_mode_ = !policy_files.empty();
  // Rules that do not parse are reported and skipped; the run goes on.
  for (const RuleSet* s : {&set_, &policy_set_})
    for (const RuleError& e : s->errors) std::fprintf(stderr, "gaspp: %s:%u: rule skipped: %s\n", e.file.c_str(), e.line, e.why.c_str());
  // Suricata's summary of the loading: files, rules loaded, skipped, and the commonest reasons.
  const auto loading = [](const char* what, size_t nfiles, const RuleSet& s) {
    const std::string reasons = top_skip_reasons(s.skipped_by_reason, s.errors);
    std::fprintf(stderr, "gaspp: %s: %zu rule file%s processed; %zu rules loaded, %llu skipped%s\n", what, nfiles,
                 nfiles == 1 ? "" : "s", s.rules.size(), (unsigned long long)(s.skipped() + s.errors.size()), reasons.c_str());
  };
  // With the signature engine, the firewall takes the header-only rules: the engine reports the load.
  if (!files.empty() && !with_detect) loading("firewall", files.size(), set_);
  if (!policy_files.empty()) loading("firewall mode", policy_files.size(), policy_set_);
  if (firewall_mode_ && policy_set_.rules.empty())
    std::fprintf(stderr, "gaspp: FIREWALL MODE WITH NO RULE LOADED: every packet will be dropped (default drop)\n");
  // Class priorities (a rule's classtype gives its priority when it has no `priority`): the file
  // named, else a classification.config beside the first rules file, as rule sets ship it (none
  // there is no error).
  if (!class_file_given && !files.empty())
    class_file = std::filesystem::path(files[0]).replace_filename("classification.config").string();
  if (!class_file.empty()) {
    if (load_classification_file(class_file, classes_)) {
      for (const RuleError& e : classes_.errors)
        std::fprintf(stderr, "gaspp: %s:%u: classification skipped: %s\n", e.file.c_str(), e.line, e.why.c_str());
      class_priorities_ = apply_class_priorities(classes_, set_.rules);
    } else if (class_file_given) {
      throw std::invalid_argument("firewall: cannot read classification file " + class_file);
    } else {
      classes_ = Classifications{};  // no class file beside the rules
    }
  }
  for (const auto& [why, n] : policy_set_.skipped_by_reason)
    std::fprintf(stderr, "gaspp: firewall rules: %llu skipped (%s): packets they would accept are dropped by default\n",
                 (unsigned long long)n, why.c_str());
  tables_.compile(set_.rules, FirewallLimits{}, action_order);
  compile_policy();
  thresholds_.resize(set_.rules.size());
  std::vector<RuleId> ids;
  for (size_t k = 0; k < set_.rules.size(); ++k) {
    const Rule& r = set_.rules[k];
    ids.push_back({r.gid, r.sid});
    if (r.threshold.empty()) continue;
    ThresholdSpec t;
    const std::string why = parse_threshold(r.threshold, t);
    if (!why.empty()) {
      // The rule still filters; its alerts are not thinned.
      std::fprintf(stderr, "gaspp: %s:%u: threshold ignored: %s\n", r.file.c_str(), r.line, why.c_str());
      ++threshold_errors_;
      continue;
    }
    thresholds_[k].thresholds.push_back(t);
  }
  if (!threshold_file.empty()) {
    // With the signature engine the file is read there too; it reports the entries that name no
    // rule of either module.
    threshold_config_ = load_threshold_config_for(threshold_file, vars, ids, thresholds_, !with_detect, "firewall");
  }
}

void FirewallModule::Host::compile_policy() {
  // Hook order, file order within a hook (stable sort): rule k of the tables is policy_[k].
  std::stable_sort(policy_set_.rules.begin(), policy_set_.rules.end(),
                   [](const Rule& a, const Rule& b) { return a.hook < b.hook; });
  for (const Rule& r : policy_set_.rules) {
    FwPolicyRule p{};
    p.sid = r.sid;
    p.action = r.action == RuleAction::accept ? kFwPolicyAccept : kFwPolicyDrop;
    p.scope = r.scope == RuleScope::packet ? kFwScopePacket
              : r.scope == RuleScope::flow ? kFwScopeFlow
              : r.scope == RuleScope::tx   ? kFwScopeTx
                                           : kFwScopeHook;
    p.hook = uint8_t(r.hook);
    p.alert = r.alert;
    p.buffer = r.buffer == RuleBuffer::http_method ? kFwBufMethod : r.buffer == RuleBuffer::http_stat_code ? kFwBufStatCode : kFwBufNone;
    p.nocase = r.nocase;
    p.flow_start = r.flow_start;
    p.flow_dir = r.flow_dir;
    p.flow_est = r.flow_est;
    p.session = r.session;
    p.content_off = uint32_t(policy_content_.size());
    p.content_len = uint16_t(std::min<size_t>(r.content.size(), 0xffff));
    policy_content_.insert(policy_content_.end(), r.content.begin(), r.content.begin() + p.content_len);
    ++hook_n_[p.hook];
    policy_app_ = policy_app_ || (r.hook >= RuleHook::request_started && r.hook <= RuleHook::response_complete);
    policy_.push_back(p);
  }
  for (int h = 1; h < kFwHooks; ++h) hook_off_[h] = hook_off_[h - 1] + hook_n_[h - 1];
  policy_tables_.compile(policy_set_.rules);
}

FirewallModule::View FirewallModule::Host::upload(TableMemory& mem) {
  View v{};
  v.td = tables_.place(mem);
  v.policy.t = policy_tables_.place(mem);
  v.policy.rule = mem.place(policy_);
  v.policy.content = mem.place(policy_content_);
  for (int h = 0; h < kFwHooks; ++h) {
    v.policy.hook_off[h] = hook_off_[h];
    v.policy.hook_n[h] = hook_n_[h];
  }
  v.policy.on = firewall_mode_;
  v.policy.app = policy_app_;
  return v;
}

void FirewallModule::Host::on_event(const ModuleEvent& e, const HostPacket& p, ModuleOutput& out) {
  if (e.kind == kAlertOverflow) {
    alert_overflow_ += e.value;
    return;
  }
  if (e.kind == kPolicyAlert) {
    if (e.value >= policy_set_.rules.size()) return;
    ++policy_alerts_;
    const Rule& r = policy_set_.rules[e.value];
    write_alert(r, p, out, r.action == RuleAction::drop || r.action == RuleAction::reject);
    return;
  }
  if (e.kind != kAlert || e.value >= set_.rules.size()) return;
  const Rule& r = set_.rules[e.value];
  const DecodedPacket& d = *static_cast<const DecodedPacket*>(p.decoded);
  if (!thresholds_[e.value].empty()) {
    const ThresholdTable::Packet tp{reinterpret_cast<const uint8_t*>(d.src_ip), reinterpret_cast<const uint8_t*>(d.dst_ip),
                                    uint8_t(d.l3[0] == uint8_t(L3::ipv6) ? 6 : 4), e.flow_id, p.ts_ns, d.sport[0], d.dport[0]};
    ThresholdSpec::NewAction act;
    if (threshold_table_.check(thresholds_[e.value], e.value, tp, act) != ThresholdTable::alert) return;
    // A rate_filter's pass ends the alert; the verdict stays the rule's (threshold.hpp).
    if (act == ThresholdSpec::pass) {
      ++rate_filter_pass_;
      return;
    }
    rate_filter_unapplied_ += rate_filter_unapplied(act, r.action);
    if ((act == ThresholdSpec::drop || act == ThresholdSpec::reject) && r.action != RuleAction::drop &&
        r.action != RuleAction::reject && p.late) {
      // A rate_filter made an alert rule's match a drop: the device let the packet through, so
      // the drop is decided here (LateVerdicts), for the flow (the rules here are IP-only).
      p.late->drop(p, true, LateVerdicts::threshold);
      HostPacket q = p;
      q.verdict |= kVerdictDrop;
      ++alerts_;
      ++alerts_blocked_;
      const uint8_t dirs = reject_dirs_for(r, act);
      if (dirs) p.late->reject(p, dirs);
      write_alert(r, q, out, true, dirs);
      return;
    }
  }
  ++alerts_;
  const bool blocked = r.action == RuleAction::drop || r.action == RuleAction::reject;
  alerts_blocked_ += blocked;
  // A reject rule that dropped the packet answers it (its rule decided the drop on the device).
  const uint8_t dirs = blocked && (p.verdict & kVerdictDrop) && p.number ? r.reject_dirs : 0;
  if (dirs && p.late) p.late->reject(p, dirs);
  write_alert(r, p, out, blocked, dirs);
}

void FirewallModule::Host::write_alert(const Rule& r, const HostPacket& p, ModuleOutput& out, bool blocked,
                                       uint8_t reject_dirs) {
  AlertExtras x{payload_, false, eve_packet_, eve_verdict_, false, {}, alert_meta_, eve_ether_, {}, {}, {}, 0};
  x.reject_dirs = reject_dirs;
  if (p.vars && p.flow_id) x.vars = p.vars->flow_eve_json(p.flow_id);  // the signature engine's flowbits, ...
  out.eve(eve_alert_line(r, classes_, p, blocked, x));
  out.fast_log(fast_log_line(r, classes_, p, blocked));
}

void FirewallModule::Host::report(std::map<std::string, uint64_t>& r) const {
  r["rules"] = set_.rules.size();
  if (!policy_set_.rules.empty() || policy_set_.skipped() || !policy_set_.errors.empty()) {
    r["firewall_rules"] = policy_set_.rules.size();
    r["firewall_rules_skipped"] = policy_set_.skipped();
    r["firewall_rule_errors"] = policy_set_.errors.size();
    r["firewall_alerts"] = policy_alerts_;
  }
  if (!classes_.priority.empty() || !classes_.errors.empty()) {
    r["classtypes"] = classes_.priority.size();
    r["classtype_errors"] = classes_.errors.size();
    r["rules_priority_from_classtype"] = class_priorities_;
  }
  r["rules_skipped"] = set_.skipped();
  r["rule_errors"] = set_.errors.size();
  r["rules_replaced_by_newer_rev"] = set_.duplicates_replaced + policy_set_.duplicates_replaced;
  r["alerts"] = alerts_;
  r["alerts_blocked"] = alerts_blocked_;
  r["alert_overflow"] = alert_overflow_;
  r["alerts_thresholded"] = threshold_table_.suppressed();
  r["threshold_table_full"] = threshold_table_.table_full();
  r["threshold_errors"] = threshold_errors_;
  r["threshold_table_entries"] = threshold_table_.entries();
  r["rate_filter_unapplied"] = rate_filter_unapplied_;
  r["rate_filter_pass"] = rate_filter_pass_;
  if (threshold_config_) r["threshold_config_entries"] = threshold_config_;
  r["table_bytes"] = tables_.bytes();
  r["hash_keys"] = tables_.hash_keys();
  r["intervals"] = tables_.elementary();
  r["wildcard_rules"] = tables_.wildcard_entries();
}

}  // namespace gaspp
