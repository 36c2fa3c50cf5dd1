// modules/firewall/alert_eve.hpp — the EVE `alert` event of a rule's match on a packet, as
// Suricata writes it (shared by the firewall and the signature engine): the packet's common fields
// (eve_packet_head), alert.action ("blocked" when the packet is dropped, else "allowed"), gid,
// signature_id, rev, signature, category (the class's description from classification.config, or
// the class name), severity (rule_priority), metadata, and the alert's flow object.
#pragma once
#include <string>

#include "gaspp/module.hpp"
#include "modules/firewall/rules.hpp"

namespace gaspp {

std::string eve_alert_line(const Rule& r, const Classifications& classes, const HostPacket& p, bool blocked);

}  // namespace gaspp
