// modules/detect/detect.hpp — the signature engine (NIDS, GASPP §6): Suricata rules with content,
// pcre and the other payload options (signature.hpp) matched on packet payloads and on the
// reassembled TCP streams; alerts as EVE `alert` events.
//
// Configuration (module options): `--module detect:rules=a.rules,b.rules`
//   rules                rule files, comma-separated (docs/rules.md: what is read, what is skipped)
//   classification-file  Suricata's classification.config (default: beside the first rules file)
//   address.NAME, port.NAME   rule variables ($HOME_NET, $HTTP_PORTS, ...)
//   packet-alert-max     alerts kept per packet (Suricata's packet_alert_max, default 15)
//   payload              on: alerts carry payload, payload_printable and stream (--eve-payload)
//   packet               on: alerts carry the packet, base64, and packet_info.linktype (--eve-packet)
//   verdict              on: alerts carry verdict.action: drop, pass or alert (--eve-verdict)
//   ethernet             on: alerts carry ether.src_mac and ether.dest_mac (--eve-ethernet)
//   tagged-packets       on: an EVE `packet` event for each packet a `tag` tagged (--eve-tagged-packets)
//   firewall             on: header-only rules without flowbits are left to the firewall module
//                        (gaspp --rules loads the files into both)
//   prefilter            hyperscan (CPU default); hash: the CPU backend runs the device's matcher
//                        instead; device: that, and pcre left to the host handler as the device
//                        leaves it (the device's whole path, on the CPU)
//   matcher              the device's multi-literal matcher: hash (default; prefilter.hpp) or ac
//                        (Aho-Corasick, prefilter_ac.hpp)
//   mpm-cache            where compiled Hyperscan databases are kept (hs_cache.hpp; default
//                        ~/.cache/gaspp/hs), or off
//   action-order         pass,drop,reject,alert in the order to apply them (suricata.yaml's action-order)
//   metadata.flow, metadata.app-layer, metadata.rule.metadata, metadata.rule.raw   on|off: what
//                        an alert carries (suricata.yaml's eve-log alert metadata; alert_eve.hpp)
//   iprep-categories, iprep-files, iprep-path   Suricata's reputation-categories-file,
//                        reputation-files (comma-separated) and default-reputation-path (iprep.hpp)
//   threshold-file       Suricata's threshold.config (suricata.yaml's threshold-file): thresholds,
//                        rate filters and suppressions (modules/firewall/threshold.hpp)
//
// Per packet (on_ip) and per in-order stream piece (on_stream_bulk), both backends:
//   1. prefilter: the signatures whose fast pattern occurs in the buffer (CPU: Hyperscan over all
//      fast patterns at once; device: the hashed filter of prefilter.hpp), plus those without one;
//   2. each candidate, in Suricata's evaluation order: protocol, addresses and ports (the
//      firewall's header tables), flow direction and state, dsize, then its payload list
//      (inspect.hpp); a match raises event kMatch with the signature's index (its rank).
// A stream piece is inspected alone and, for matches across pieces, with the last
// DetectView::stream_carry bytes of its direction before it (a match must reach into the new
// piece, so none is found twice). The pieces of a batch are inspected at once, a thread each (the
// engine hands each the bytes before it: gaspp/stream_hook.hpp's bulk hook). Which buffers a signature inspects: SigMode (signature.hpp);
// a stream rule looks at a TCP packet's own payload only when the packet added nothing to the
// stream (no flow, or no payload).
// On the host, in capture order (events sort by packet, then rank): flowbits and flowints are
// tested and changed (Suricata: conditions with the match, changes after it),
// thresholds applied, and an alert is written for each matching signature unless it is noalert,
// the packet already has packet-alert-max alerts (counted), a pass ranked before it matched the
// packet (counted as matches_after_pass; the pass itself raises no alert), or a packet's stream and
// payload matches name the same signature (one alert).
// Actions, in rank order (the action order first: rules.hpp ActionOrder): the first drop or pass
// among a buffer's matches decides (DetVerdict, detect_tables.hpp) — an IP-only signature's for
// the flow, a payload signature's for the packet it matched, or for the flow on a stream match
// (Suricata's SignatureProperties). A signature that reads flowbits, has a pcre that did not
// compile for the device's regex search, or names a protocol the application layer only detects
// (`alert smtp`, ftp, ssh, smb: it matches only where the flow's app_proto is that protocol as of
// the packet, counted as app_proto_rejected otherwise), is decided on the host, after the
// verdicts: it only alerts (drop, action "allowed") or ends the packet's alerts (pass).
//
// State: per flow, the engine's StreamTail of both directions (2 x kDetStreamCarry bytes); on
// the host, flowbits and flowints per flow id (at most kDetFlowbitFlows flows; more are counted as
// flowbit_flows_full and their variables not kept), and xbits per host or address pair (at most
// kDetXbitKeys keys: when full, the keys whose bits all expired are dropped, and a bit that still
// finds no room is not kept, counted as xbits_full).
//
// pcre on the device: the expression's program for the regex search (regex.hpp, exactly PCRE2's
// match), compiled at load for the expressions that are regular (counted: pcre_device,
// pcre_host_only). The search runs in a second pass (on_ip_retry, on_stream_bulk_retry: kernels of
// their own on the GPU) over the packets and pieces whose candidates reached such a pcre in the
// first pass, which carries no search code (carried inline, it halved the stream stage's speed
// with no pcre reached: bench/results/2026-11-26-detect-stages-device-pcre.json). A pcre without a
// program, or a search past its step limit, cannot be finished there: on a packet the event asks
// the host to run the list again on the packet's payload with PCRE2 (pcre_host_rechecks, which
// also counts the packets a dataset on ip.src / ip.dst sent to the host: sets live there); on a
// stream piece the match is left undecided and counted (stream_pcre_undecided) — the one way the
// CUDA backend's alerts can differ from the CPU backend's.
#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "applayer/app_layer.hpp"
#include "decode/checksum.hpp"
#include "gaspp/module.hpp"
#include "gaspp/stream_hook.hpp"
#include "modules/detect/detect_tables.hpp"
#include "modules/detect/hs_cache.hpp"
#include "modules/detect/inspect.hpp"
#include "modules/detect/prefilter_compile.hpp"
#include "modules/detect/regex_compile.hpp"
#include "modules/detect/signature.hpp"
#include "modules/firewall/firewall.hpp"
#include "modules/firewall/firewall_compile.hpp"
#include "modules/firewall/threshold.hpp"

namespace gaspp {

struct DecodedPacket;

constexpr uint32_t kDetStreamCarry = 120;
constexpr size_t kDetFlowbitFlows = 1u << 20;
constexpr size_t kDetXbitKeys = 1u << 20;  // hosts and address pairs with xbits (then xbits_full)

// The CPU's candidate list for one buffer (detect_host.cpp): the signatures whose fast pattern
// occurs in buf, in rank order, without repeats (those without one: DetectModule::for_nofp).
void detect_host_candidates(const DetectView& v, const uint8_t* buf, uint32_t len, std::vector<uint32_t>& out);

struct DetectModule {
  static constexpr const char* kName = "detect";
  static constexpr uint32_t kLayers = kLayerIp | kLayerPayload | kLayerStream;
  static constexpr bool kChangesContext = false;
  // Stream pieces are inspected all at once (on_stream_bulk); the engine keeps the last
  // kDetStreamCarry bytes of each direction for the junctions.
  static constexpr uint32_t kStreamBefore = kDetStreamCarry;
  using FlowState = StreamTail<kDetStreamCarry>;
  using View = DetectView;
  // kMatch: value = signature index << 2, | 2 for a stream match, | 1 when the device could not
  // run a pcre of it (the host runs the list again on the packet's payload). kStreamNeedsHost: a stream match the device
  // could not decide (a pcre on stream data; value: the signature), counted, not alerted.
  enum Event : uint16_t { kMatch = 1, kStreamNeedsHost = 2 };

  // What the packet-only conditions read; a stream piece has none (the signatures with them are
  // packet signatures).
  struct PacketFacts {
    int64_t dsize = -1;   // -1: not a packet
    uint16_t tcp_flags = 0;
    uint8_t icmp_type = 0, icmp_code = 0;
    uint8_t ttl = 0;
    uint16_t tcp_win = 0, tcp_mss = 0;
    bool tcp_mss_set = false;  // the packet has an MSS option
    uint32_t tcp_seq = 0, tcp_ack = 0;
    uint8_t events[kDecodeEventSlots] = {};  // the decoder's events (DecodedView::events)
    bool icmp_has_id = false;                // an ICMP message with an identifier and sequence
    uint16_t icmp_id = 0, icmp_seq = 0;
    bool ipv4 = false;
    uint16_t ip_opts = 0;                    // IpOptBits
    uint8_t vlan_n = 0;                      // VLAN tags, outermost first
    uint16_t vlan[3] = {};
    // The flow as the packet left it (a stream piece: as the packet that delivered it did), when
    // a signature asks (DetectModule::Host::wants_flow_positions); null otherwise.
    const FlowPosAt* pos = nullptr;
    // The checksum keywords: the packet's frame and decoded fields (null where there are none),
    // its ChecksumBad bits computed at the first signature that asks (-1 until then).
    const uint8_t* frame = nullptr;
    const DecodedView* dec = nullptr;
    uint32_t k = 0;
    mutable int16_t csum = -1;
    GASPP_HD bool raised(uint8_t e) const {
      for (int k = 0; k < kDecodeEventSlots; ++k)
        if ((events[k] & 0x7f) == e) return true;
      return false;
    }
  };

  // Whether signature i's header, flow, dsize, flags, itype, icode and packet header conditions
  // (ttl, ip_proto, tcp.mss, seq, ack, window) and decode-event hold for a packet
  // (or a stream piece: pk from FirewallModule::stream_packet, established, no packet facts).
  GASPP_HD static bool sig_applies(const View& v, uint32_t i, const FwPacket& pk, bool has_flow, bool to_client,
                                   bool established, const PacketFacts& f) {
    const DetSig& s = v.sigs[i];
    if (s.proto && s.proto != pk.proto) return false;
    if (s.flow_dir && (!has_flow || (s.flow_dir == 2) != to_client)) return false;
    if (s.flow_est == 1 && !established) return false;
    if (s.flow_est == 2 && (established || !has_flow)) return false;
    if (f.dsize >= 0) {
      if (!det_cond_holds(s.dsize, f.dsize)) return false;
      if (s.flags.on && (pk.proto != 6 || !det_flags_hold(s.flags, f.tcp_flags))) return false;
      const bool icmp = pk.proto == 1 || pk.proto == 58;
      if ((s.itype.kind || s.icode.kind) && !icmp) return false;
      if (!det_cond_holds(s.itype, f.icmp_type) || !det_cond_holds(s.icode, f.icmp_code)) return false;
      if (!det_cond_holds(s.ttl, f.ttl) || !det_cond_holds(s.ip_proto, pk.proto)) return false;
      if ((s.hdr || s.mss.kind) && pk.proto != 6) return false;
      if (s.mss.kind && (!f.tcp_mss_set || !det_cond_holds(s.mss, f.tcp_mss))) return false;
      if ((s.hdr & kHdrSeq) && f.tcp_seq != s.seq) return false;
      if ((s.hdr & kHdrAck) && f.tcp_ack != s.ack) return false;
      if ((s.hdr & kHdrWin) && (f.tcp_win == s.win) == bool(s.hdr & kHdrWinNeg)) return false;
      if (s.decode_event && !f.raised(s.decode_event)) return false;
      if ((s.icmp_id.kind || s.icmp_seq.kind) && !f.icmp_has_id) return false;
      if (!det_cond_holds(s.icmp_id, f.icmp_id) || !det_cond_holds(s.icmp_seq, f.icmp_seq)) return false;
      if (s.ipopts && (!f.ipv4 || (f.ip_opts & s.ipopts) != s.ipopts)) return false;
      if ((s.csum_valid | s.csum_invalid) && !csum_holds(s, pk, f)) return false;
    }
    for (uint32_t q = 0; q < s.ic_n; ++q) {
      // On a stream piece only stream_size: the others make a packet signature.
      const IntCond& ic = v.int_conds[s.ic_off + q];
      if (f.dsize < 0 && ic.key != kIcStreamSize) continue;
      if (!int_cond_holds(ic, f.pos, pk.proto == 6, f.vlan, f.vlan_n)) return false;
    }
    if (fw_entry_matches(v.hdr, 2 * i, pk)) return true;
    return s.bidir && fw_entry_matches(v.hdr, 2 * i + 1, pk);
  }

  // The checksum keywords (Suricata's detect-csum.c): each applies to its family and transport
  // only (tcpv4-csum to IPv4 TCP, ...), and a packet it does not apply to does not match. The
  // checksums are computed here, whatever -k says (as Suricata's keywords compute them unless its
  // capture ignores checksums); one that cannot be checked (a fragment, a segment not captured
  // whole) counts as valid (decode/checksum.hpp).
  GASPP_HD static bool csum_holds(const DetSig& s, const FwPacket& pk, const PacketFacts& f) {
    const bool v4 = pk.family == 4;
    uint8_t applies = v4 ? kCkIpv4 : 0;
    if (pk.proto == 6) applies |= v4 ? kCkTcpv4 : kCkTcpv6;
    else if (pk.proto == 17) applies |= v4 ? kCkUdpv4 : kCkUdpv6;
    else if (pk.proto == 1 && v4) applies |= kCkIcmpv4;
    else if (pk.proto == 58 && !v4) applies |= kCkIcmpv6;
    const uint8_t want = s.csum_valid | s.csum_invalid;
    if ((want & applies) != want || !f.dec) return false;
    if (f.csum < 0) f.csum = checksum_status(f.frame, *f.dec, f.k);
    const uint8_t bad = uint8_t(((f.csum & kCsumBadIp) ? kCkIpv4 : 0) | ((f.csum & kCsumBadL4) ? (applies & ~kCkIpv4) : 0));
    return (bad & s.csum_valid) == 0 && (bad & s.csum_invalid) == s.csum_invalid;
  }

  // Suricata's icmp_id / icmp_seq: the identifier and sequence number of an ICMP message that has
  // them (echo and echo reply, timestamp, information and address-mask requests and replies;
  // ICMPv6 echo request and reply), read from the frame. false for any other packet.
  GASPP_HD static bool icmp_id_seq(const DecodedView& d, uint32_t k, const uint8_t* frame, uint16_t& id, uint16_t& seq) {
    const uint8_t l4 = d.l4[k], t = d.icmp_type[k];
    const bool v4 = l4 == uint8_t(L4::icmp) && (t == 0 || t == 8 || (t >= 13 && t <= 18));
    const bool v6 = l4 == uint8_t(L4::icmpv6) && (t == 128 || t == 129);
    const uint32_t off = d.l4_off[k];
    if (!(v4 || v6) || off == kNoOffset || off + 8 > d.cap_len[k]) return false;
    id = uint16_t(frame[off + 4] << 8 | frame[off + 5]);
    seq = uint16_t(frame[off + 6] << 8 | frame[off + 7]);
    return true;
  }

  // Where packet k's headers lie (the header buffers' bytes: det_header_span).
  GASPP_HD static PacketHeaders packet_headers(const DecodedView& d, uint32_t k) {
    return PacketHeaders{d.cap_len[k], d.l3[k], d.l4[k], d.l3_off[k], d.l4_off[k], d.payload_off[k], d.payload_len[k]};
  }

  // Runs each(i) for the signatures without a fast pattern whose header the packet (or piece) pk
  // matches, through the address and port index.
  template <class F>
  GASPP_HD static void for_nofp(const View& v, const FwPacket& pk, F&& each) {
    if (!v.nofp_n) return;
    fw_for_each_list(v.nofp_hdr, pk, [&](FwSpan s) {
      for (uint32_t k = 0; k < s.n; ++k) {
        const uint32_t entry = v.nofp_hdr.entries[s.off + k];
        if (!fw_entry_matches(v.nofp_hdr, entry, pk)) continue;
        if ((entry & 1) && fw_entry_matches(v.nofp_hdr, entry & ~1u, pk)) continue;  // `<>` both ways: once
        each(v.nofp[entry >> 1]);
      }
    });
  }

  // The device's candidates for buf, in any order, when `lanes` threads share the buffer and this
  // is lane `lane` (0..lanes-1): together the lanes run each(i) once for every signature whose fast
  // pattern occurs in buf (the lane that holds the pattern's first occurrence; alone, a thread
  // remembers the patterns it handled, up to kSeen, and beyond that may repeat a signature, whose
  // events are one on the host), and lane 0 for the signatures without a fast pattern. The engine
  // runs one lane (a warp a stream piece measured slower: backend/cuda/flow_kernels.cu).
  template <class F>
  GASPP_HD static void for_candidates_split(const View& v, const uint8_t* buf, uint32_t len, const FwPacket& pk,
                                            uint32_t lane, uint32_t lanes, F&& each) {
    constexpr uint32_t kSeen = 16;
    uint32_t seen[kSeen];
    uint32_t ns = 0;
    det_match_patterns(v, buf, len, lane, lanes, [&](uint32_t id, uint32_t start) {
      if (lanes == 1) {
        for (uint32_t k = 0; k < ns; ++k)
          if (seen[k] == id) return;
        if (ns < kSeen) seen[ns++] = id;
      } else if (start) {
        // Another lane may hold an earlier occurrence: only the first one's lane goes on.
        const uint32_t m = v.pf.pat_len[id];
        const int64_t first = det_find(buf, start + m - 1, v.pf.bytes + v.pf.pat_off[id], m, v.pf.pat_nocase[id] != 0);
        if (first >= 0 && first < int64_t(start)) return;
      }
      for (uint32_t k = v.pat_sig_off[id]; k < v.pat_sig_off[id + 1]; ++k) each(v.pat_sigs[k]);
    });
    if (lane == 0) for_nofp(v, pk, each);
  }

  // Runs `each(i)` for the candidate signatures of buf (their header still to check): on the CPU in
  // rank order, on the device in any order (the host sorts events).
  template <class F>
  GASPP_HD static void for_candidates(const View& v, const uint8_t* buf, uint32_t len, const FwPacket& pk, F&& each) {
#if defined(__CUDA_ARCH__)
    for_candidates_split(v, buf, len, pk, 0, 1, each);
#else
    thread_local std::vector<uint32_t> cand;
    detect_host_candidates(v, buf, len, cand);
    for_nofp(v, pk, [&](uint32_t i) { cand.push_back(i); });
    std::sort(cand.begin(), cand.end());
    cand.erase(std::unique(cand.begin(), cand.end()), cand.end());
    for (uint32_t i : cand) each(i);
#endif
  }

  // A packet, without the regex search first (as on_stream_bulk): a packet whose candidates reach
  // a pcre, or that matches more than kDetHeldEvents signatures, is retried with it (on_ip_retry).
  GASPP_HD static uint32_t on_ip(Packet& p, FlowState*, const View& v, uint32_t ctx) {
    ip_pass<false>(p, v);
    return ctx;
  }
  GASPP_HD static uint32_t on_ip_retry(Packet& p, FlowState*, const View& v, uint32_t ctx) {
    ip_pass<true>(p, v);
    return ctx;
  }

  template <bool kRetry>
  GASPP_HD static void ip_pass(Packet& p, const View& v) {
    if (v.sig_n == 0) return;
    const DecodedView& d = p.dec();
    const uint32_t k = p.index();
    const uint8_t* payload = nullptr;
    uint32_t len = 0;
    if (d.payload_off[k] != kNoOffset && d.payload_off[k] < d.cap_len[k]) {
      payload = p.frame() + d.payload_off[k];
      len = d.cap_len[k] - d.payload_off[k];
      if (len > d.payload_len[k]) len = d.payload_len[k];
    }
    const FwPacket pk = FirewallModule::packet_of(p);
    const bool tcp = pk.proto == 6;
    // A TCP segment with data that its session took went to the stream: stream rules inspect it
    // there. Others (no session, midstream off; an invalid segment) are inspected here, as
    // Suricata falls back to the packet's payload when a segment was not added to the stream.
    const bool stream_added = tcp && len > 0 && p.tcp_stream_taken();
    PacketFacts facts;
    facts.dsize = int64_t(len);
    facts.tcp_flags = d.tcp_flags[k];
    facts.icmp_type = d.icmp_type[k];
    facts.icmp_code = d.icmp_code[k];
    facts.ttl = d.ip_ttl[k];
    facts.tcp_win = d.tcp_win[k];
    facts.tcp_mss = d.tcp_mss[k];
    facts.tcp_mss_set = (d.tcp_opts[k] & kOptMss) != 0;
    facts.tcp_seq = d.tcp_seq[k];
    facts.tcp_ack = d.tcp_ack[k];
    for (int e = 0; e < kDecodeEventSlots; ++e) facts.events[e] = d.events[size_t(k) * kDecodeEventSlots + e];
    facts.ipv4 = d.l3[k] == uint8_t(L3::ipv4);
    facts.ip_opts = d.ip_opts[k];
    facts.icmp_has_id = icmp_id_seq(d, k, p.frame(), facts.icmp_id, facts.icmp_seq);
    facts.vlan_n = d.vlan_count[k];
    for (int t = 0; t < 3; ++t) facts.vlan[t] = d.vlan_id[size_t(k) * 3 + t];
    facts.pos = p.flow_pos();
    facts.frame = p.frame();
    facts.dec = &d;
    facts.k = k;
    Decision dec;
    // The first pass holds its events until it knows it keeps them (see stream_pass).
    constexpr uint32_t kHeld = kRetry ? 1 : kDetHeldEvents;
    uint32_t held[kHeld];
    uint32_t nh = 0;
    bool retry = false;
    uint32_t retry_sig = 0;
    for_candidates(v, payload, len, pk, [&](uint32_t i) {
      if (retry) return;
      const DetSig& s = v.sigs[i];
      if (!(s.mode & kSigPacket) && (!tcp || stream_added || (s.mode & kSigStreamOnly))) return;
      if (s.op_n && len == 0) return;
      if ((s.verdict & kDetFirstOnly) && p.has_flow() && !p.first_in_direction()) return;
      if (!sig_applies(v, i, pk, p.has_flow(), p.to_client(), p.flow_established(), facts)) return;
      const int r = s.hb[0] ? det_packet_lists<kRetry>(v, s, payload, len, p.frame(), packet_headers(d, k))
                            : detect_inspect<kRetry>(v, s, payload, len, 0);
      if (r == kInspectNoMatch) return;
      // A pcre the device cannot run: the host runs the whole list again on the packet.
      const uint32_t value = (i << 2) | (r == kInspectNeedsHost ? 1u : 0u);
      if constexpr (!kRetry) {
        if (r == kInspectRetry || nh == kHeld) {
          retry = true;
          retry_sig = i;
          return;
        }
        held[nh++] = value;
      } else {
        p.emit(kMatch, value);
      }
      if (r == kInspectMatch) dec.note(s.verdict, i);
    });
    if constexpr (!kRetry) {
      if (retry) {
        if (p.retry()) return;
        // No room (the queue holds the whole batch, so this does not happen): the host runs the
        // signature's list again with PCRE2, as for a pcre without a program.
        held[nh < kHeld ? nh++ : kHeld - 1] = (retry_sig << 2) | 1u;
      }
      for (uint32_t k = 0; k < nh; ++k) p.emit(kMatch, held[k]);
    }
    // Suricata's order of actions (PacketAlertFinalize): the first deciding match in rank order
    // wins, a pass ends the packet's list; a packet match decides the packet, an IP-only one the flow.
    if (dec.drop < dec.pass) {
      if (v.sigs[dec.drop].verdict & kDetFlowScope) p.drop_flow();
      else p.drop();
    } else if (dec.pass != Decision::kNone && (v.sigs[dec.pass].verdict & kDetFlowScope)) {
      p.pass_flow();
    }
    if (dec.alerts()) p.alerted();
  }

  // The first (lowest-ranked) drop and pass among a buffer's final matches; candidates come in
  // any order on the device.
  struct Decision {
    static constexpr uint32_t kNone = 0xffffffffu;
    uint32_t drop = kNone, pass = kNone, alert = kNone;
    GASPP_HD void note(uint8_t verdict, uint32_t rank) {
      if ((verdict & kDetDrop) && rank < drop) drop = rank;
      if ((verdict & kDetPass) && rank < pass) pass = rank;
      if ((verdict & kDetAlerts) && rank < alert) alert = rank;
    }
    // A sure alert that no pass ranked before it cancels (kDetAlerts).
    GASPP_HD bool alerts() const { return alert < pass; }
  };

  // One stream piece (every piece of the batch at once, gaspp/stream_hook.hpp): the piece alone,
  // then the junction of the bytes before it (at most kDetStreamCarry) and its first bytes.
  // Without the regex search first (on the device and the CPU's device path): a piece whose
  // candidates reach a pcre, or that matches more than kDetHeldEvents signatures, raises nothing and
  // is retried with the search (on_stream_bulk_retry, a kernel of its own on the GPU).
  GASPP_HD static void on_stream_bulk(StreamPiece& s, const uint8_t* before, uint32_t c, const View& v) {
    stream_pass<false>(s, before, c, v);
  }
  GASPP_HD static void on_stream_bulk_retry(StreamPiece& s, const uint8_t* before, uint32_t c, const View& v) {
    stream_pass<true>(s, before, c, v);
  }
  static constexpr uint32_t kDetHeldEvents = 8;

  template <bool kRetry>
  GASPP_HD static void stream_pass(StreamPiece& s, const uint8_t* before, uint32_t c, const View& v) {
    if (s.len() == 0 || v.sig_n == 0) return;
    const FwPacket pk = stream_packet_of(s);
    const uint32_t c_max = v.stream_carry < kDetStreamCarry ? v.stream_carry : kDetStreamCarry;
    if (c > c_max) {
      before += c - c_max;
      c = c_max;
    }
    // No packet facts on a stream piece but the flow as its packet left it (stream_size).
    FlowPosAt pos;
    PacketFacts piece;
    if (s.flow_pos(pos)) piece.pos = &pos;
    auto stream_match = [&](const uint8_t* buf, uint32_t len, uint32_t min_end, uint32_t max_start, uint32_t i) -> int {
      const DetSig& sg = v.sigs[i];
      if (!(sg.mode & kSigStream) || !sg.op_n) return kInspectNoMatch;
      if (!sig_applies(v, i, pk, true, s.to_client(), true, piece)) return kInspectNoMatch;
      return detect_inspect<kRetry>(v, sg, buf, len, min_end, max_start);
    };
    Decision dec;
    // The first pass holds its events (signature << 1 | needs host) until it knows it keeps them.
    constexpr uint32_t kHeld = kRetry ? 1 : kDetHeldEvents;
    uint32_t held[kHeld];
    uint32_t nh = 0;
    bool retry = false;
    uint32_t retry_sig = 0;
    auto emit = [&](uint32_t i, bool needs_host) {
      if (needs_host) s.emit(kStreamNeedsHost, i);  // not resolved: the host has no stream bytes (counted)
      else s.emit(kMatch, (i << 2) | 2u);
    };
    auto raise = [&](uint32_t i, int r) {
      if (r == kInspectNoMatch || retry) return;
      if constexpr (!kRetry) {
        if (r == kInspectRetry || nh == kHeld) {
          retry = true;
          retry_sig = i;
          return;
        }
        held[nh++] = (i << 1) | (r == kInspectNeedsHost ? 1u : 0u);
      } else {
        emit(i, r == kInspectNeedsHost);
      }
      if (r == kInspectMatch) dec.note(v.sigs[i].verdict, i);
    };
    for_candidates(v, s.data(), s.len(), pk, [&](uint32_t i) {
      if (retry) return;
      const DetSig& sg = v.sigs[i];
      // An IP-only pass or drop matches every packet of this direction, the one that delivered the
      // piece too (on_ip raised its event there): it takes part in the piece's decision, so that a
      // stream match ranked after it cannot overrule it (ranked before it, the drop wins).
      if (!sg.op_n) {
        if ((sg.verdict & kDetFlowScope) && (sg.verdict & (kDetDrop | kDetPass)) &&
            sig_applies(v, i, pk, true, s.to_client(), true, PacketFacts{}))
          dec.note(sg.verdict, i);
        return;
      }
      raise(i, stream_match(s.data(), s.len(), 0, kInspectAnywhere, i));
    });
    if (c && !retry) {
      // Matches across the junction: one option starts in the bytes before, one ends in the piece.
      uint8_t junction[2 * kDetStreamCarry];
      const uint32_t head = s.len() < c_max ? s.len() : c_max;
      for (uint32_t b = 0; b < c; ++b) junction[b] = before[b];
      for (uint32_t b = 0; b < head; ++b) junction[c + b] = s.data()[b];
      for_candidates(v, junction, c + head, pk, [&](uint32_t i) {
        if (!retry) raise(i, stream_match(junction, c + head, c, c, i));
      });
    }
    if constexpr (!kRetry) {
      if (retry) {
        if (s.retry()) return;
        // No room to retry (the queue holds every piece, so this does not happen): the signature
        // that needed it is left undecided, counted, with what was found before it.
        held[nh < kHeld ? nh++ : kHeld - 1] = (retry_sig << 1) | 1u;
      }
      for (uint32_t k = 0; k < nh; ++k) emit(held[k] >> 1, held[k] & 1u);
    }
    // A stream match decides the flow (Suricata: the action of a stateful match applies to it).
    if (dec.drop < dec.pass) s.drop_flow();
    else if (dec.pass != Decision::kNone) s.pass_flow();
    if (dec.alerts()) s.alerted();
  }

  GASPP_HD static FwPacket stream_packet_of(const StreamPiece& s) { return FirewallModule::stream_packet(s); }

  class Host : public ModuleHost<DetectModule> {
   public:
    explicit Host(const ModuleOptions& opt);
    ~Host();
    View upload(TableMemory& mem);
    void on_event(const ModuleEvent& e, const HostPacket& p, ModuleOutput& out);
    void report(std::map<std::string, uint64_t>& r) const;
    const SignatureSet& signatures() const { return set_; }
    // The prefilter's literals (bytes, nocase; pattern id = position), for benchmarks and tests.
    const std::vector<std::pair<std::string, bool>>& fast_patterns() const { return patterns_; }
    // HTTP transactions (detect_app.cpp): the application-layer signatures, matched on the host
    // per transaction update (applayer/app_layer.hpp); their matches are events of this module.
    // Also the signatures of the protocols it only detects (Signature::gate_proto).
    bool wants_app_layer() const { return !app_sigs_.empty() || gated_sigs_ > 0; }
    // flow.pkts, flow.bytes and stream_size read the flow as each packet left it.
    bool wants_flow_positions() const { return flow_positions_; }
    // What the signatures need of the application layer's parsers (email.body_md5).
    void amend_app_layer(AppLayerConfig& c) const {
      c.mail_body_md5 = c.mail_body_md5 || mail_body_md5_;
      c.file_hashes |= file_hash_bits_;  // the hashes filemd5/filesha1/filesha256 compare (Suricata's too)
      c.ssh_hassh_log = c.ssh_hassh_log || hassh_sigs_;  // Suricata's SCSshEnableHassh from the keywords
    }
    // on_app runs on several threads at once (ModuleInstance::on_app): each worker has its own
    // Hyperscan scratch, counters and alerts, merged by on_app_end.
    void set_app_workers(int n);
    void on_app(std::span<const AppUpdate> updates, std::vector<ModuleEvent>& out, int worker);
    void on_app_end();
    // The defragmenter's events on a fragment (ModuleInstance::on_host_events): the packet
    // signatures whose decode-event is one of them, matched here as the device would (header,
    // packet conditions); kMatch events as from the device. They only alert: the verdicts are out.
    void on_host_events(uint32_t packet, const DecodedPacket& d, uint16_t module, std::vector<ModuleEvent>& out) const;
    // Tags (tag.hpp): while a tag is pending or alive, every packet of the batch comes here after
    // its events (ModuleInstance::wants_packets): the alerts of the batch add their tags at their
    // packet, in capture order, and each packet is counted against the tags, a tagged one written
    // as an EVE `packet` event with tagged-packets=on. Tagged packets of a batch are written after
    // the batch's alerts.
    bool wants_packets() const { return !pending_tags_.empty() || !tags_.empty(); }
    void on_packet(const HostPacket& p, ModuleOutput& out);
    void on_packets_end();
    // The flows gone from the table: their flowbits and flowints go (a new flow of the same key
    // starts without them, and the table of kDetFlowbitFlows does not fill with ended flows).
    void on_flows_gone(const std::vector<uint64_t>& flow_ids);
    // The flow's variables as Suricata's EveAddMetadata writes them into its events (eve-log's
    // top-level metadata, on by default): `,"traffic":{"id":[...],"label":[...]}` from the flowbits
    // named traffic/id/NAME and traffic/label/NAME, then `,"metadata":{"flowbits":[...],
    // "flowints":{...}}` with the others, in the order they were set; empty when the flow has none.
    std::string flow_eve_json(uint64_t flow_id) const { return vars_eve_json(flow_id, nullptr); }
    // ... and with a packet's variables (pcre captures into pkt:NAME) in metadata.pktvars.
    using NamedValues = std::vector<std::pair<std::string, std::string>>;
    std::string vars_eve_json(uint64_t flow_id, const NamedValues* pkt_vars) const;
    // No signature: no hook runs and no state is kept (a rule set of IP lists costs nothing here).
    uint32_t layers() const { return sigs_.empty() ? 0u : kLayers; }
    uint32_t flow_state_bytes() const { return has_stream_sigs_ ? uint32_t(sizeof(FlowState)) : 0u; }

   private:
    View upload_to(TableMemory& mem);
    void add_ops(const Signature& s, const std::vector<size_t>& which, const std::vector<int>& rx, DetSig& d);
    // An application-layer signature: per buffer (SigBuf, its side resolved: kBufCount * side +
    // buffer), the options on it as a payload list of its own.
    struct AppPart {
      uint16_t key;  // side * kBufCount + buffer (side 0 for an `either` part of a side-2 signature)
      bool either;   // the side is the update's (a side-2 signature's buffer of either side)
      DetSig d;
    };
    struct AppSig {
      uint32_t sig;
      uint8_t proto;  // 1 http, 2 tls (Signature::app_proto)
      // 0: inspected on request data, 1: on response data (a response buffer, or to_client),
      // 2: on both (only buffers of either side and no flow direction: a match on either counts)
      uint8_t side;
      DetCond urilen;
      bool urilen_raw;
      uint64_t http_events;  // Signature's app-layer-event bits (HttpEvent): all on the transaction
      uint16_t dns_events;   // and its DNS ones (DnsEvent)
      bool tls_version_on, tls_version_raw;  // Signature's tls.version
      bool per_instance;  // reads a multi-buffer (instance_buf): inspected at every instance
      bool per_file = false;  // file keywords (or file.name): alerts once per file, not per transaction
      std::string ftpdata_command;  // ftpdata_command: the data connection's command (upper case), empty: any
      bool captures = false;        // a pcre stores captures (pcre_capture.hpp)
      bool multi_any;     // reads two different multi-buffers: each matched at any of its instances
      uint16_t tls_version;
      DetCond dns_opcode, dns_rcode;  // Signature's dns.opcode, dns.rcode
      DetCond ftp_dynamic_port;       // Signature's ftp.dynamic_port
      uint8_t ftp_mode = 0, ftp_reply_received = 0, ftp_events = 0;
      uint32_t smtp_events = 0;  // Signature's app-layer-event:smtp.*
      uint8_t ssh_events = 0;    // Signature's app-layer-event:ssh.*
      uint32_t tls_events = 0;  // Signature's app-layer-event:tls.*
      bool ftp_bounce = false;
      DetCond tls_chain_len;          // tls.cert_chain_len
      Signature::DateCond tls_notbefore, tls_notafter;  // tls_cert_notbefore, tls_cert_notafter
      uint8_t tls_expiry = 0;                           // tls_cert_expired 1, tls_cert_valid 2
      uint8_t ssl_version = 0;                          // Signature's ssl_version
      bool ssl_version_neg = false;
      IntCond dns_rrtype;             // and dns.rrtype
      const std::vector<Signature::FileHashCond>* file_hashes = nullptr;  // the signature's (set_ holds them)
      UintCond filesize;                                                  // and its filesize
      uint8_t http_version = 0;  // Signature's: 1 HTTP/1's transactions only, 2 HTTP/2's
      uint32_t http2_events = 0;  // Signature's app-layer-event:http2.* (Http2Event bits): all on the transaction
      std::vector<Http2Cond> http2_conds;  // Signature's http2.* frame keywords: all on the inspected side
      struct Size {
        uint16_t key;
        bool either;
        DetCond cond;
      };
      std::vector<Size> bsize;  // bsize conditions on their buffers
      struct Absent {
        uint16_t key;
        bool either, or_else;
      };
      std::vector<Absent> absent;  // absent on their buffers (Signature::absent)
      std::vector<AppPart> parts;
    };
    struct AppPrefilter;  // Hyperscan databases of the parts' fast patterns, per buffer
    void add_app_sig(uint32_t i);
    // Signature s's base64_data options (which) compiled as a list of their own: its index in the
    // host's table (DetOp::pat_off of the base64_decode op).
    uint32_t add_base64_list(const Signature& s, const std::vector<size_t>& which);
    void build_app_prefilter();
    std::vector<AppSig> app_sigs_;
    bool smtp_envelope_sigs_ = false;
    bool hassh_sigs_ = false;
    bool eve_flow_vars_ = true;  // option flow-vars (eve-log's top-level metadata): events carry them  // a signature reads ssh.hassh* (HASSH then goes into EVE too)  // an app signature reads a mail's fields (app_proto 6)
    bool smtp_event_sigs_ = false;     // an app signature tests a mail's anomalies (app-layer-event:smtp.*)
    bool mail_body_md5_ = false;       // ... its body's MD5 (email.body_md5): the parser computes it
    bool http_header_sigs_ = false;    // one reads http.request_header or http.response_header
    bool http_file_sigs_ = false;      // one reads an HTTP transaction's files (file.name, file conditions)
    uint8_t file_hash_bits_ = 0;       // FileHash bits the signatures' file hash lists need
    std::shared_ptr<AppPrefilter> app_pf_;  // shared: its type is complete in detect_app.cpp only
    uint64_t app_updates_ = 0, app_candidates_ = 0, app_matches_ = 0;
    // The transactions of this batch's app-layer matches, for their alerts (tx_id, http object):
    // (flow id, packet index, signature) -> the alert's app members; filled by on_app_end.
    // (flow, packet, signature) -> the alert's transaction fields (`,"tx_id":...`) and its
    // alert.context members (JSON datasets' objects; empty: none).
    struct AppAlertText {
      std::string app, context, frame;  // frame: `,"frame":{...}` of a frame signature's match
      std::string xff;                  // the address the transaction's XFF header names (xff on)
      bool to_client = false;           // the update's packet went to the client
      std::vector<CapturedVar> captures;  // the signature's pcre captures (pcre_capture.hpp)
    };
    // (flow, packet, signature, seq): seq counts the signature's transactions matched on the packet.
    using AppAlerts = std::map<std::tuple<uint64_t, uint32_t, uint32_t, uint8_t>, AppAlertText>;
    AppAlerts app_alerts_;
    // What one on_app worker keeps apart from the others (its scratch: AppPrefilter::scratch).
    struct alignas(64) AppWorker {
      std::vector<uint32_t> hits, cand;
      uint64_t updates = 0, candidates = 0, matches = 0;
      AppAlerts alerts;
    };
    std::vector<AppWorker> app_workers_;
    std::string hs_cache_dir_ = hs_cache_default_dir();  // mpm-cache (hs_cache.hpp)
    HsCacheStats hs_cache_;

   private:
    // Per flow (flowbits and flowints), at most kDetFlowbitFlows flows.
    struct FlowVars {
      std::vector<uint64_t> bits;
      std::vector<uint32_t> bits_order;  // the set bits' ids, in the order they were set
      std::vector<std::pair<std::string, std::string>> strs;  // flow variables (pcre captures), as first set
      std::vector<std::pair<uint32_t, uint32_t>> ints;  // (flowint id, value)
    };
    FlowVars* flow_vars(uint64_t flow_id, bool create);
    // xbits (signature.hpp XbitCmd): per host or address pair, at most kDetXbitKeys keys.
    struct PacketAddrs {
      uint8_t src[16] = {}, dst[16] = {};
      uint8_t fam = 4;
      uint16_t sport = 0, dport = 0;
    };
    struct XbitEntry {
      uint32_t id;
      uint64_t expire_ns;  // capture time after which the bit is not set
    };
    static PacketAddrs packet_addrs(const HostPacket& p);
    static std::string xbit_key(const XbitCmd& c, const PacketAddrs& a);
    bool xbits_hold(const Signature& s, const PacketAddrs& a, uint64_t ts_ns);
    void xbits_apply(const Signature& s, const PacketAddrs& a, uint64_t ts_ns);
    std::map<std::string, uint32_t> xbit_ids_;
    std::unordered_map<std::string, std::vector<XbitEntry>> xbits_;
    uint64_t xbits_rejected_ = 0, xbits_full_ = 0;
    IpReputation iprep_;            // iprep's hosts and netblocks (iprep.hpp)
    uint64_t iprep_rejected_ = 0;   // matches an iprep condition turned down
    bool flow_conditions_hold(const Signature& s, uint64_t flow_id);
    void flow_effects_apply(const Signature& s, uint64_t flow_id);
    SignatureSet set_;                       // in rank order after construction
    View host_view_{};                       // the tables in host memory (re-checks on the host)
    Classifications classes_;
    FirewallTables hdr_;
    FirewallTables nofp_hdr_;
    PrefilterTables pf_tables_;
    AcTables ac_tables_;
    RegexTables regex_;                     // pcres compiled for the device's search
    uint64_t pcre_device_ = 0, pcre_host_only_ = 0;  // pcre options with and without a program
    bool matcher_ac_ = false;
    bool hash_prefilter_ = false;           // prefilter=hash: the device's prefilter on the CPU too
    bool defer_pcre_ = false;
    bool has_stream_sigs_ = false;               // prefilter=device: also pcre left to the host handler
    std::vector<DetSig> sigs_;
    std::vector<IntCond> int_conds_;             // DetSig::ic_off
    bool flow_positions_ = false;                // a signature reads flow.pkts, flow.bytes or stream_size
    std::vector<DetOp> ops_;
    std::vector<uint8_t> bytes_;
    std::vector<uint32_t> pat_sig_off_, pat_sigs_, nofp_;
    std::vector<std::pair<std::string, bool>> patterns_;  // fast patterns (bytes, nocase)
    std::unique_ptr<DetectHostMatchers> matchers_;
    std::map<std::string, uint32_t> flowbit_ids_;
    std::map<std::string, uint32_t> flowint_ids_;
    // The packet variables of the packet being handled (pcre captures into pkt:NAME).
    NamedValues pkt_vars_;
    uint64_t pkt_vars_packet_ = 0;
    uint64_t captures_not_kept_ = 0;  // a stream match's captures (the stream is not at hand)
    // A match's pcre captures: stored (flow, packet) and returned (alert variables as context).
    // app: the match's transaction alert (on_app's), null for a packet or stream match.
    std::string apply_captures(const AppAlertText* app, const ModuleEvent& ev, uint32_t sig, const HostPacket& p);
    std::vector<uint8_t> sig_captures_;  // per signature: a pcre stores captures
    // A signature's packet lists on a decoded packet's payload, on the host (kInspectMatch, ...).
    int packet_lists_on_host(uint32_t sig, const HostPacket& p) const;
    std::vector<std::string> flowbit_names_, flowint_names_;  // by id
    std::unordered_map<uint64_t, FlowVars> flow_vars_;  // flow id -> its flowbits and flowints
    AlertMetadata alert_meta_;  // metadata.* options
    std::vector<RuleThresholds> thresholds_;  // per signature: its own and threshold.config's
    uint64_t threshold_config_ = 0, rate_filter_pass_ = 0, rate_filter_unapplied_ = 0;
    // Drops decided here after the device's verdicts (LateVerdicts), and those with no packet.
    uint64_t late_drops_ = 0, drops_without_packet_ = 0;
    ThresholdTable threshold_table_;
    uint32_t packet_alert_max_ = 15;
    bool payload_ = false;
    bool eve_packet_ = false, eve_verdict_ = false, eve_ether_ = false;  // packet=on, verdict=on, ethernet=on
    bool tagged_packets_ = false;  // tagged-packets=on: EVE packet events for tagged packets
    // eve-log alert xff (options xff=extra-data|overwrite, xff-deployment=reverse|forward,
    // xff-header): an HTTP transaction's alert carries the address its header names.
    uint8_t xff_mode_ = 0;  // 0 off, 1 extra-data (alert.xff), 2 overwrite (the packet's sender or receiver)
    bool xff_forward_ = false;
    std::string xff_header_ = "X-Forwarded-For";
    struct PendingTag {
      uint64_t number;  // the alerted packet's pcap_cnt
      uint32_t sig;
      TagPacket pkt;
    };
    std::vector<PendingTag> pending_tags_;  // the batch's alerts with tags, in capture order
    size_t pending_at_ = 0;                 // the first not yet added
    TagTable tags_;
    uint64_t tagged_written_ = 0;
    static TagPacket tag_packet(const HostPacket& p);
    uint64_t last_number_ = ~0ull, last_flow_ = 0;
    uint32_t last_sig_ = ~0u, packet_alerts_ = 0;
    uint8_t last_seq_ = 0;  // the last match's ModuleEvent::seq (its transaction among the signature's on the packet)
    bool packet_passed_ = false;  // a pass signature matched the current packet
    // What the current packet's earlier alerts decided on the host (a late drop, reject
    // directions): its later alerts' verdict is the packet's, as Suricata's EveAddVerdict reads it.
    bool packet_late_drop_ = false;
    uint8_t packet_reject_dirs_ = 0;
    uint64_t pass_matches_ = 0, after_pass_ = 0;
    uint64_t gated_sigs_ = 0, app_proto_rejected_ = 0;  // signatures with gate_proto; their matches on other flows
    uint64_t host_rechecks_ = 0, host_recheck_matches_ = 0, stream_unresolved_ = 0;
    uint64_t alerts_ = 0, alerts_blocked_ = 0, alert_overflow_ = 0, matches_ = 0, flowbits_rejected_ = 0,
             noalert_ = 0, flowbit_flows_full_ = 0, threshold_suppressed_ = 0;
    double load_seconds_ = 0;
  };
};

}  // namespace gaspp
