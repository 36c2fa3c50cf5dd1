// modules/examples/stream_match.cpp — the stream_match module's host side (see stream_match.hpp).
#include "modules/examples/stream_match.hpp"

#include <cstdlib>
#include <stdexcept>

#include "core/eve_event.hpp"

namespace gaspp {

StreamMatchModule::Host::Host(const ModuleOptions& opt) {
  bool have = false;
  view_.action = kAlert;
  for (auto& [k, v] : opt) {
    if (k == "pattern") {
      std::string bytes;
      for (size_t i = 0; i < v.size(); ++i) {
        if (v[i] == '\\' && i + 3 < v.size() + 0 && v[i + 1] == 'x') {
          bytes += char(std::strtoul(v.substr(i + 2, 2).c_str(), nullptr, 16));
          i += 3;
        } else {
          bytes += v[i];
        }
      }
      if (bytes.empty() || bytes.size() > kMaxPattern)
        throw std::invalid_argument("stream_match: pattern must be 1.." + std::to_string(kMaxPattern) + " bytes");
      for (size_t i = 0; i < bytes.size(); ++i) view_.pattern[i] = uint8_t(bytes[i]);
      view_.len = uint32_t(bytes.size());
      have = true;
    } else if (k == "action") {
      if (v == "alert") view_.action = kAlert;
      else if (v == "drop_flow") view_.action = kDropFlow;
      else if (v == "none") view_.action = kNone;
      else throw std::invalid_argument("stream_match: action: alert, drop_flow or none, not '" + v + "'");
    } else {
      throw std::invalid_argument("stream_match: unknown option '" + k + "' (pattern, action)");
    }
  }
  if (!have) throw std::invalid_argument("stream_match: pattern=TEXT is required");
}

void StreamMatchModule::Host::on_event(const ModuleEvent& e, const HostPacket& p, ModuleOutput& out) {
  ++events_;
  out.eve(eve_packet_head(p, "stream_match") + ",\"stream_match\":{\"stream_offset\":" + std::to_string(e.value) +
          ",\"to_client\":" + (e.to_client ? "true" : "false") + "}}");
}

}  // namespace gaspp
