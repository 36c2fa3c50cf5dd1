// modules/firewall/alert_eve.hpp — the EVE `alert` event of a rule's match on a packet, as
// Suricata writes it (shared by the firewall and the signature engine): the packet's common fields
// (eve_packet_head), alert.action ("blocked" when the packet is dropped, else "allowed"), gid,
// signature_id, rev, signature, category (the class's description from classification.config, or
// the class name), severity (rule_priority), metadata, the rule as written, and the alert's flow
// object, each as the metadata switches (AlertMetadata) say.
#pragma once
#include <string>

#include "gaspp/module.hpp"
#include "modules/firewall/rules.hpp"

namespace gaspp {

// What an alert line carries beyond the alert (Suricata's eve-log alert options): `payload`
// (base64), `payload_printable` (printable bytes, others as '.') and `stream` (1: the match was on
// the reassembled stream; the payload is then that of the packet that delivered the data).
// What an alert carries beside its fields (Suricata's eve-log alert `metadata` switches; module
// options metadata.flow, metadata.app-layer, metadata.rule.metadata, metadata.rule.raw = on|off).
struct AlertMetadata {
  bool flow = true;           // the `flow` object
  bool app_layer = true;      // a transaction's object (http, tls, dns, ...); tx_id and app_proto stay
  bool rule_metadata = true;  // alert.metadata
  bool rule_raw = false;      // alert.rule: the rule as written
};
// Reads option k=v into m when k is one of the switches above (true); throws std::invalid_argument
// on a value other than on/off.
bool alert_metadata_option(const std::string& k, const std::string& v, AlertMetadata& m);

struct AlertExtras {
  bool payload = false;  // payload, payload_printable, stream
  bool stream = false;   // the match was on the reassembled stream
  bool packet = false;   // packet (base64 of the frame) and packet_info.linktype
  bool verdict = false;  // verdict.action from HostPacket::verdict
  bool pass = false;     // the alert's own action is pass (verdict "pass" when not dropped)
  // A match on an application-layer transaction: `,"tx_id":N,"http":{...},"app_proto":"http"`
  // (written after the alert object; empty otherwise).
  std::string app;
  AlertMetadata meta;
  bool ether = false;    // ether: the frame's MAC addresses (eve-log's ethernet: yes)
  // alert.context's members (`"KEY":{...}`: JSON datasets' objects, detect/dataset.hpp); empty: none.
  std::string context;
  // The frame a frame signature matched (`,"frame":{...}`, eve_frame_json); empty: none.
  std::string frame;
  // An address from an HTTP transaction's X-Forwarded-For (eve-log alert xff): alert.xff, or, with
  // xff_overwrite, in place of the packet's source (1) or destination (2), as Suricata's
  // AlertJsonHeader / JsonAddrInfo write it.
  std::string xff;
  uint8_t xff_overwrite = 0;
  // The alert's reject rule rejected the packet (RejectDirs): verdict.reject_target and
  // verdict.reject, as Suricata's EveAddVerdict writes them.
  uint8_t reject_dirs = 0;
  // The flow's variables (`,"traffic":{...},"metadata":{...}`: the signature engine's
  // flow_eve_json), written after the flow's app_proto and tunnel; empty: none.
  std::string vars;
};

// An application-layer frame for Suricata's EVE `frame` object (its FrameJsonLogOneFrame).
inline constexpr uint64_t kEveNoOffset = ~uint64_t(0);
struct EveFrame {
  const char* type = "";      // the frame's name: "pdu", "request.headers", ...
  uint64_t id = 0;            // its id, numbered per flow direction from 1
  bool to_server = true;
  bool tcp = false;           // TCP (stream_offset, up to 4 KiB of payload) or UDP (up to 256 bytes)
  uint64_t stream_offset = kEveNoOffset;  // TCP: where it starts in the direction's stream, if known
  uint64_t length = 0;        // its length as sent
  const uint8_t* data = nullptr;  // its bytes, `have` of them (fewer than length: not complete)
  size_t have = 0;
  uint64_t tx_id = kEveNoOffset;  // the transaction Suricata ties it to, if any
};
// `,"frame":{"type","id","direction","stream_offset","length","payload","payload_printable",
// "complete","tx_id"}` as Suricata writes it for TCP, and for UDP `type, id, direction, length,
// complete, payload, payload_printable, tx_id`.
std::string eve_frame_json(const EveFrame& f);

// Suricata's EvePacket: `,"packet":BASE64,"packet_info":{"linktype":N,"linktype_name":NAME}` for
// a frame of the decoder's link type (alerts with packet=on, tagged packets).
// decoder_link 12 is DLT_RAW.
std::string eve_packet_json(const uint8_t* frame, uint32_t len, uint8_t decoder_link);
// The same for a decoded packet: its frame, or for a packet decoded out of a tunnel the tunnel's
// payload as a raw packet (Suricata's tunnel pseudo-packet, linktype RAW); empty without a frame.
std::string eve_packet_json(const HostPacket& p);
std::string eve_alert_line(const Rule& r, const Classifications& classes, const HostPacket& p, bool blocked,
                           const AlertExtras& x = {});

// The alert as a line of Suricata's fast.log (times UTC):
//   11/24/2026-10:00:00.123456  [**] [1:2100498:7] MSG [**] [Classification: DESC] [Priority: 2] {TCP} 10.0.0.1:80 -> 10.0.0.2:41000
// ("[Drop]" before the first "[**]" when the packet was dropped).
std::string fast_log_line(const Rule& r, const Classifications& classes, const HostPacket& p, bool blocked);

}  // namespace gaspp
