// modules/firewall/alert_eve.cpp — an EVE alert line for a rule (alert_eve.hpp).
#include "modules/firewall/alert_eve.hpp"

#include "core/eve_event.hpp"

namespace gaspp {

std::string eve_alert_line(const Rule& r, const Classifications& classes_, const HostPacket& p, bool blocked) {
  std::string j = eve_packet_head(p, "alert");
  j += ",\"alert\":{\"action\":\"";
  j += blocked ? "blocked" : "allowed";
  j += "\",\"gid\":" + std::to_string(r.gid) + ",\"signature_id\":" + std::to_string(r.sid) +
       ",\"rev\":" + std::to_string(r.rev) + ",\"signature\":\"" + json_escape(r.msg) + "\"";
  if (!r.classtype.empty()) {
    // The class's description from classification.config, as Suricata writes it; the class name
    // when no file describes it.
    const std::string* d = class_description(classes_, r.classtype);
    j += ",\"category\":\"" + json_escape(d ? *d : r.classtype) + "\"";
  }
  j += ",\"severity\":" + std::to_string(rule_priority(r));
  if (!r.metadata.empty()) {
    // key → [values], grouped when the rule was read, as Suricata groups them.
    const auto& md = r.metadata;
    j += ",\"metadata\":{";
    for (size_t a = 0; a < md.size(); ++a) {
      j += (a ? ",\"" : "\"") + json_escape(md[a].first) + "\":[";
      for (size_t b = 0; b < md[a].second.size(); ++b) j += (b ? ",\"" : "\"") + json_escape(md[a].second[b]) + "\"";
      j += "]";
    }
    j += "}";
  }
  j += "}";
  j += eve_alert_flow_json(p);
  j += "}";
  return j;
}

}  // namespace gaspp
