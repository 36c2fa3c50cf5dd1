// modules/firewall/firewall_host.cpp — the firewall's host side: options, rule loading, alerts.
#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "decode/decoder.hpp"
#include "modules/firewall/firewall.hpp"
#include "output/eve.hpp"

namespace gaspp {

FirewallModule::Host::Host(const ModuleOptions& opt) : ModuleHost<FirewallModule>({}) {
  RuleVars vars;
  std::vector<std::string> files;
  for (auto& [k, v] : opt) {
    if (k == "rules") {
      std::stringstream ss(v);
      for (std::string f; std::getline(ss, f, ',');)
        if (!f.empty()) files.push_back(f);
    } else if (k.rfind("address.", 0) == 0) {
      vars.addr[k.substr(8)] = v;
    } else if (k.rfind("port.", 0) == 0) {
      vars.port[k.substr(5)] = v;
    } else {
      throw std::invalid_argument("firewall: unknown option '" + k + "' (rules, address.NAME, port.NAME)");
    }
  }
  for (const std::string& f : files)
    if (!load_rules_file(f, vars, set_)) throw std::invalid_argument("firewall: cannot read rule file " + f);
  // Rules that do not parse are reported and skipped; the run goes on.
  for (const RuleError& e : set_.errors) std::fprintf(stderr, "gaspp: %s:%u: rule skipped: %s\n", e.file.c_str(), e.line, e.why.c_str());
  tables_.compile(set_.rules);
  thresholds_.resize(set_.rules.size());
  for (size_t k = 0; k < set_.rules.size(); ++k) {
    const Rule& r = set_.rules[k];
    if (r.threshold.empty()) continue;
    const std::string why = parse_threshold(r.threshold, thresholds_[k]);
    if (!why.empty()) {
      // The rule still filters; its alerts are not thinned.
      std::fprintf(stderr, "gaspp: %s:%u: threshold ignored: %s\n", r.file.c_str(), r.line, why.c_str());
      thresholds_[k] = ThresholdSpec{};
      ++threshold_errors_;
    }
  }
}

FirewallView FirewallModule::Host::upload(TableMemory& mem) { return tables_.place(mem); }

void FirewallModule::Host::on_event(const ModuleEvent& e, const HostPacket& p, ModuleOutput& out) {
  if (e.kind == kAlertOverflow) {
    alert_overflow_ += e.value;
    return;
  }
  if (e.kind != kAlert || e.value >= set_.rules.size()) return;
  const Rule& r = set_.rules[e.value];
  const DecodedPacket& d = *static_cast<const DecodedPacket*>(p.decoded);
  if (!threshold_table_.alert(thresholds_[e.value], e.value, reinterpret_cast<const uint8_t*>(d.src_ip),
                              reinterpret_cast<const uint8_t*>(d.dst_ip), d.l3[0] == uint8_t(L3::ipv6) ? 6 : 4, p.ts_ns))
    return;
  const bool blocked = r.action == RuleAction::drop || r.action == RuleAction::reject;
  ++alerts_;
  alerts_blocked_ += blocked;
  std::string j = eve_packet_head(p, "alert");
  j += ",\"alert\":{\"action\":\"";
  j += blocked ? "blocked" : "allowed";
  j += "\",\"gid\":" + std::to_string(r.gid) + ",\"signature_id\":" + std::to_string(r.sid) +
       ",\"rev\":" + std::to_string(r.rev) + ",\"signature\":\"" + json_escape(r.msg) + "\"";
  if (!r.classtype.empty()) j += ",\"category\":\"" + json_escape(r.classtype) + "\"";
  j += ",\"severity\":" + std::to_string(r.priority ? r.priority : 3) + "}}";
  out.eve(j);
}

void FirewallModule::Host::report(std::map<std::string, uint64_t>& r) const {
  r["rules"] = set_.rules.size();
  r["rules_skipped"] = set_.skipped();
  r["rule_errors"] = set_.errors.size();
  r["alerts"] = alerts_;
  r["alerts_blocked"] = alerts_blocked_;
  r["alert_overflow"] = alert_overflow_;
  r["alerts_thresholded"] = threshold_table_.suppressed();
  r["threshold_table_full"] = threshold_table_.table_full();
  r["threshold_errors"] = threshold_errors_;
  r["table_bytes"] = tables_.bytes();
  r["hash_keys"] = tables_.hash_keys();
  r["intervals"] = tables_.elementary();
  r["wildcard_rules"] = tables_.wildcard_entries();
}

}  // namespace gaspp
