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
}

FirewallView FirewallModule::Host::upload(TableMemory& mem) { return tables_.place(mem); }

void FirewallModule::Host::on_event(const ModuleEvent& e, const HostPacket& p, ModuleOutput& out) {
  if (e.kind == kAlertOverflow) {
    alert_overflow_ += e.value;
    return;
  }
  if (e.kind != kAlert || e.value >= set_.rules.size()) return;
  const Rule& r = set_.rules[e.value];
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
  r["table_bytes"] = tables_.bytes();
  r["hash_keys"] = tables_.hash_keys();
  r["intervals"] = tables_.elementary();
  r["wildcard_rules"] = tables_.wildcard_entries();
}

}  // namespace gaspp
