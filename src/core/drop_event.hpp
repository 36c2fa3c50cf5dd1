// core/drop_event.hpp — EVE `drop` events (Suricata's drop log) for dropped packets, and the names
// of drop reasons, for ModuleSet's verdict accounting (core/verdict_stats.cpp).
#pragma once
#include <cstdint>
#include <string>

#include "gaspp/module.hpp"

namespace gaspp {

// The stats key of a firewall drop reason (kDropReason*): "rules", "default_packet_policy",
// "default_app_policy", else "flow_drop".
const char* drop_reason_name(uint32_t r);
// A drop event's `reason` as Suricata writes it (PacketDropReasonToString: words, not the stats'
// key): "rules", "flow drop", "stream error", "default packet policy", ...
std::string drop_event_reason(const char* stats_key);
// An EVE `drop` event for a dropped packet (its HostPacket with the decoded fields and frame), with
// the fields Suricata's drop log writes from the IP header and the transport; ether: the `ether`
// object too (eve-log's ethernet: yes).
std::string drop_event_json(const HostPacket& hp, const std::string& reason, bool ether = false);

}  // namespace gaspp
