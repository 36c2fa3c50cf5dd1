// modules/firewall/policy.hpp — firewall mode (Suricata 8's `accept:hook` rules): per-hook rule
// tables with a default policy of drop, and the HTTP/1 progress tracker that reaches the
// application-layer hooks. Host+device code; the firewall module (firewall.hpp) calls it.
//
// Tables: the firewall rules are compiled like detection rules (firewall_tables.hpp: address
// intervals, port ranges) but sorted by hook, file order kept within a hook, and evaluated in that
// order: the first rule whose header (and content, if any) matches decides the hook:
//   accept:hook    the hook passes; later hooks are evaluated as they come
//   accept:packet  (packet hook) the packet passes
//   accept:tx      (http1 hook) the hooks left in this message pass
//   accept:flow    the flow passes (pass_flow): later packets skip the modules
//   drop:packet    the packet is dropped; drop:flow/hook/tx: the flow is dropped
//   no rule        the default policy: drop:packet at the packet filter (reason
//                  default_packet_policy), accept:hook at pre_flow and pre_stream, drop:flow at an
//                  application hook (reason default_app_policy)
// A matching rule with the `alert` keyword also raises an alert.
//
// Packet tables, per packet in this order: pre_flow, pre_stream, then the filter (`all` and
// `flow_start` rules together, in file order; a flow_start rule is only tried on the first packet
// of each direction of its flow). accept:packet in a pre table skips the filter. Modules run after
// flow tracking and reassembly, so pre_flow and pre_stream decide on the packet, not on the flow
// update: a packet they drop is still counted in its flow record and its bytes reached the
// stream (the drop keeps it off the wire and out of -w; a drop:flow stops the flow from there).
// Flow conditions (`flow:established|not_established|to_server|to_client`, `tcp.session:setup|
// established|closing`) read what flow tracking recorded for the packet (FlowPacketFlags,
// flow/flow_table.hpp), as Suricata reads them: flow:established for TCP from the session's state
// before the segment (Suricata's flow update sets it before the stream engine runs), closing from
// the state after it. They are refused at pre_flow (no flow yet) and skipped at application hooks.
//
// HTTP/1 hooks (per TCP direction, on the reassembled stream, in order, once per message):
// request_started when a request's method is read (a token of capital letters and a space: the
// flow is HTTP), request_line at the end of its line (http.method is the method), request_headers
// at the empty line, request_body and request_trailer when the body (Content-Length or chunked)
// and the trailer are done, or at once when there is none, request_complete with them. Responses
// alike after "HTTP/" (http.stat_code: the 3-digit status), with a body until the connection ends
// when there is no length, and none for 1xx, 204, 304 or an answer to HEAD. Bytes after a gap
// cannot be parsed: that direction's hooks stop (no verdict is made on what was not seen). A flow
// whose first client bytes are not an HTTP request is not HTTP: no application hook runs for it.
#pragma once
#include <cstdint>
#include <type_traits>

#include "gaspp/hd.hpp"
#include "modules/firewall/firewall_tables.hpp"

namespace gaspp {

// Why a packet was dropped, as the firewall reports it (kEventDropReason's value; Suricata's names).
enum FwPolicyAction : uint8_t { kFwPolicyAccept = 0, kFwPolicyDrop = 1 };
enum FwPolicyScope : uint8_t { kFwScopePacket = 1, kFwScopeFlow = 2, kFwScopeHook = 3, kFwScopeTx = 4 };
enum FwPolicyBuffer : uint8_t { kFwBufNone = 0, kFwBufMethod = 1, kFwBufStatCode = 2 };
constexpr int kFwHooks = 16;                 // RuleHook values (rules.hpp)
constexpr uint8_t kFwHookPacket = 1;         // RuleHook::packet_all (and flow_start rules)
constexpr uint8_t kFwHookRequestStarted = 2; // RuleHook::request_started; responses start at +6
constexpr uint8_t kFwHookResponseStarted = 8;
constexpr uint8_t kFwHookPreFlow = 14;       // RuleHook::packet_pre_flow
constexpr uint8_t kFwHookPreStream = 15;     // RuleHook::packet_pre_stream

struct FwPolicyRule {
  uint32_t sid;
  uint32_t content_off;   // into the content bytes
  uint16_t content_len;
  uint8_t action;         // FwPolicyAction
  uint8_t scope;          // FwPolicyScope
  uint8_t hook;           // RuleHook
  uint8_t alert;          // 1: a match raises an alert
  uint8_t buffer;         // FwPolicyBuffer
  uint8_t nocase;
  uint8_t flow_start;     // only the first packet of each direction of its flow
  uint8_t flow_dir;       // 1 to_server, 2 to_client, 0 either
  uint8_t flow_est;       // 1 established, 2 not established, 0 either
  uint8_t session;        // tcp.session phases (kSession*), 0: no condition
};
// tcp.session's phases (Suricata's detect-tcp-session): a packet is in setup or established
// (flow:established), and also closing when its session is in a FIN state; it matches when one
// of its phases is among the rule's.
enum FwSessionPhase : uint8_t { kSessionSetup = 1, kSessionEstablished = 2, kSessionClosing = 4 };

// What a packet rule's flow conditions read: the packet's place in its flow (FlowPacketFlags of
// the walk, through Packet). Application hooks pass none.
struct FwFlowCtx {
  uint8_t has_flow;
  uint8_t to_client;
  uint8_t established;    // kPktEstablished
  uint8_t closing;        // kPktClosing
  uint8_t first;          // kPktDirFirst
};

GASPP_HD GASPP_FORCEINLINE bool fw_flow_ok(const FwPolicyRule& r, const FwFlowCtx& f) {
  if (r.flow_start && !(f.has_flow && f.first)) return false;
  if (r.flow_dir && !(f.has_flow && r.flow_dir == (f.to_client ? 2 : 1))) return false;
  if (r.flow_est && !(f.has_flow && r.flow_est == (f.established ? 1 : 2))) return false;
  if (r.session) {
    const uint8_t phase = uint8_t((f.established ? kSessionEstablished : kSessionSetup) | (f.closing ? kSessionClosing : 0));
    if (!(f.has_flow && (r.session & phase))) return false;
  }
  return true;
}

struct FwPolicyView {
  FirewallView t;              // the rules' headers, in hook order (rule k here is t.rules[k])
  const FwPolicyRule* rule;
  const uint8_t* content;
  uint32_t hook_off[kFwHooks]; // rules of hook h: [hook_off[h], hook_off[h] + hook_n[h])
  uint32_t hook_n[kFwHooks];
  uint8_t on;                  // firewall mode: firewall rules were loaded
  uint8_t app;                 // some rule has an http1 hook: the stream hook parses HTTP/1
};
static_assert(std::is_trivially_copyable_v<FwPolicyView>, "FwPolicyView is a kernel argument");

GASPP_HD GASPP_FORCEINLINE uint8_t fw_lower(uint8_t c) { return (c >= 'A' && c <= 'Z') ? uint8_t(c + 32) : c; }

GASPP_HD inline bool fw_contains(const uint8_t* hay, uint32_t n, const uint8_t* needle, uint32_t m, bool nocase) {
  if (m > n) return false;
  for (uint32_t a = 0; a + m <= n; ++a) {
    uint32_t k = 0;
    while (k < m && (nocase ? fw_lower(hay[a + k]) == fw_lower(needle[k]) : hay[a + k] == needle[k])) ++k;
    if (k == m) return true;
  }
  return false;
}

// The first rule of `hook` that matches (flow conditions, header both ways for `<>`, and content on
// buf), or -1.
GASPP_HD inline int32_t fw_policy_eval(const FwPolicyView& v, uint8_t hook, const FwPacket& p, const FwFlowCtx& f,
                                       const uint8_t* buf, uint32_t buf_len) {
  const uint32_t end = v.hook_off[hook] + v.hook_n[hook];
  for (uint32_t k = v.hook_off[hook]; k < end; ++k) {
    const FwPolicyRule& r = v.rule[k];
    if (!fw_flow_ok(r, f)) continue;
    const bool hit = fw_entry_matches(v.t, k * 2, p) || ((v.t.rules[k].flags & kFwBidir) && fw_entry_matches(v.t, k * 2 + 1, p));
    if (!hit) continue;
    if (r.buffer != kFwBufNone && !fw_contains(buf, buf_len, v.content + r.content_off, r.content_len, r.nocase)) continue;
    return int32_t(k);
  }
  return -1;
}

// HTTP/1 progress of one direction.
enum FwHttpPhase : uint8_t {
  kHttpIdle = 0,     // between messages (leading CR/LF skipped)
  kHttpToken,        // the first token (method, or "HTTP/...")
  kHttpLineRest,     // rest of the first line (a response's status code is read here)
  kHttpHeaders,      // header lines
  kHttpBodyLen,      // Content-Length body
  kHttpChunkSize,    // chunked: size line
  kHttpChunkData,
  kHttpChunkEnd,     // CRLF after a chunk's data
  kHttpTrailer,      // trailer lines
  kHttpBodyClose,    // response body until the connection ends
  kHttpLost,         // gap, or not HTTP: no more hooks in this direction
};

struct FwHttpDir {
  uint64_t remain;   // body or chunk bytes left
  uint8_t phase;     // FwHttpPhase
  uint8_t progress;  // hooks passed in this message: 0 none .. 6 complete
  uint8_t tok_len;   // bytes kept in tok
  uint8_t field;     // response: space-separated field index on the status line
  uint8_t hdr;       // current header: 0 unknown, 1 content-length, 2 transfer-encoding, 3 other
  uint8_t name_len;  // header name bytes read (0xff: in the value)
  uint8_t line_len;  // bytes on the current header/trailer line (capped)
  uint8_t chunked_at;  // Transfer-Encoding: how much of "chunked" matched
  uint8_t flags;     // FwHttpFlags
  uint8_t accept_tx; // accept:tx: hooks left in this message pass
  char tok[16];      // method (request) or status code (response)
  char name[18];     // header name, lower case
};
enum FwHttpFlags : uint8_t { kHttpHasLength = 1, kHttpChunked = 2, kHttpSeenCr = 4 };

struct FwHttpState {
  FwHttpDir dir[2];   // [0] requests (client → server), [1] responses
  uint8_t proto;      // 0 unknown, 1 HTTP/1, 2 not HTTP
  uint8_t last_head;  // the last request was HEAD (its response has no body)
  uint8_t done;       // the flow's application layer is decided (dropped or accept:flow)
};
static_assert(sizeof(FwHttpState) == 120, "per-flow state of the firewall with http1 hooks (docs say 120 bytes)");

namespace fw_detail {

GASPP_HD GASPP_FORCEINLINE bool name_is(const FwHttpDir& h, const char* want, uint8_t n) {
  if (h.name_len != n) return false;
  for (uint8_t k = 0; k < n; ++k)
    if (h.name[k] != want[k]) return false;
  return true;
}

GASPP_HD GASPP_FORCEINLINE void reset_message(FwHttpDir& h) {
  h.phase = kHttpIdle;
  h.progress = 0;
  h.tok_len = 0;
  h.field = 0;
  h.hdr = 0;
  h.name_len = 0;
  h.line_len = 0;
  h.chunked_at = 0;
  h.flags = 0;
  h.accept_tx = 0;
  h.remain = 0;
}

// Passes the hooks up to `level` (1 started .. 6 complete), in order; false: the flow was decided.
template <class Hook>
GASPP_HD inline bool reach(FwHttpDir& h, uint8_t level, Hook& hook) {
  while (h.progress < level) {
    ++h.progress;
    if (!hook(h.progress)) {
      h.phase = kHttpLost;
      return false;
    }
  }
  return true;
}

template <class Hook>
GASPP_HD inline bool finish(FwHttpDir& h, Hook& hook) {
  if (!reach(h, 6, hook)) return false;
  reset_message(h);
  return true;
}

// After the header block: where the body goes.
template <class Hook>
GASPP_HD inline bool begin_body(FwHttpState& st, int d, Hook& hook) {
  FwHttpDir& h = st.dir[d];
  bool none = false;
  if (d == 1) {
    const bool info = h.tok_len == 3 && h.tok[0] == '1';
    const bool empty = h.tok_len == 3 && ((h.tok[0] == '2' && h.tok[1] == '0' && h.tok[2] == '4') ||
                                          (h.tok[0] == '3' && h.tok[1] == '0' && h.tok[2] == '4'));
    none = info || empty || st.last_head;
  }
  if (!none && (h.flags & kHttpChunked)) {
    h.phase = kHttpChunkSize;
    h.remain = 0;
    h.field = 0;
    return true;
  }
  if (!none && (h.flags & kHttpHasLength) && h.remain > 0) {
    h.phase = kHttpBodyLen;
    return true;
  }
  if (!none && d == 1 && !(h.flags & kHttpHasLength)) {
    h.phase = kHttpBodyClose;
    return true;
  }
  return finish(h, hook);
}

}  // namespace fw_detail

// Feeds n in-order bytes of direction d (0 requests, 1 responses); hook(level) runs for each
// hook reached and returns false when the flow was decided (parsing stops).
template <class Hook>
GASPP_HD inline void fw_http_feed(FwHttpState& st, int d, const uint8_t* p, uint32_t n, Hook& hook) {
  using namespace fw_detail;
  FwHttpDir& h = st.dir[d];
  for (uint32_t k = 0; k < n; ++k) {
    const uint8_t c = p[k];
    switch (h.phase) {
      case kHttpLost:
        return;
      case kHttpIdle:
        if (c == '\r' || c == '\n') continue;
        h.phase = kHttpToken;
        h.tok_len = 0;
        [[fallthrough]];
      case kHttpToken:
        if (d == 0) {
          if (c == ' ' && h.tok_len > 0) {
            st.proto = 1;
            st.last_head = h.tok_len == 4 && h.tok[0] == 'H' && h.tok[1] == 'E' && h.tok[2] == 'A' && h.tok[3] == 'D';
            h.phase = kHttpLineRest;
            if (!reach(h, 1, hook)) return;
            continue;
          }
          if (!((c >= 'A' && c <= 'Z') || c == '-' || c == '_') || h.tok_len == sizeof(h.tok) - 1) {
            if (st.proto == 0) st.proto = 2;  // the flow's first request is not HTTP/1
            h.phase = kHttpLost;
            return;
          }
          h.tok[h.tok_len++] = char(c);
          continue;
        }
        if (st.proto != 1 || c != uint8_t("HTTP/"[h.tok_len])) {  // responses follow a request
          h.phase = kHttpLost;
          return;
        }
        if (++h.tok_len == 5) {
          h.phase = kHttpLineRest;
          h.tok_len = 0;
          h.field = 0;
          if (!reach(h, 1, hook)) return;
        }
        continue;
      case kHttpLineRest:
        if (c == '\n') {
          h.phase = kHttpHeaders;
          h.line_len = h.name_len = h.hdr = 0;
          if (!reach(h, 2, hook)) return;
          continue;
        }
        if (d == 1) {
          if (c == ' ') ++h.field;
          else if (h.field == 1 && h.tok_len < 3) h.tok[h.tok_len++] = char(c);
        }
        continue;
      case kHttpHeaders:
      case kHttpTrailer:
        if (c == '\n') {
          if (h.line_len == 0) {
            if (h.phase == kHttpTrailer) {
              if (!finish(h, hook)) return;
            } else {
              if (!reach(h, 3, hook) || !begin_body(st, d, hook)) return;
            }
            continue;
          }
          h.line_len = h.name_len = h.hdr = 0;
          continue;
        }
        if (c == '\r') continue;
        if (h.line_len < 255) ++h.line_len;
        if (h.phase == kHttpTrailer) continue;
        if (h.name_len != 0xff) {
          if (c == ':') {
            h.hdr = name_is(h, "content-length", 14) ? 1 : name_is(h, "transfer-encoding", 17) ? 2 : 3;
            h.name_len = 0xff;
            if (h.hdr == 1) {
              h.remain = 0;
              h.flags |= kHttpHasLength;
            }
            h.chunked_at = 0;
          } else if (h.name_len < sizeof(h.name)) {
            h.name[h.name_len++] = char(fw_lower(c));
          } else {
            h.name_len = sizeof(h.name);  // too long to be one we read
          }
          continue;
        }
        if (h.hdr == 1 && c >= '0' && c <= '9' && h.remain < (1ull << 56)) h.remain = h.remain * 10 + (c - '0');
        if (h.hdr == 2 && !(h.flags & kHttpChunked)) {
          const uint8_t l = fw_lower(c);
          if (l == uint8_t("chunked"[h.chunked_at])) {
            if (++h.chunked_at == 7) h.flags |= kHttpChunked;
          } else {
            h.chunked_at = l == 'c' ? 1 : 0;
          }
        }
        continue;
      case kHttpBodyLen: {
        const uint64_t take = h.remain < uint64_t(n - k) ? h.remain : uint64_t(n - k);
        h.remain -= take;
        k += uint32_t(take) - 1;
        if (h.remain == 0 && !finish(h, hook)) return;
        continue;
      }
      case kHttpChunkSize: {
        if (c == '\n') {
          if (h.remain == 0) {  // the last chunk: the body is done, a trailer follows
            h.phase = kHttpTrailer;
            h.line_len = 0;
            if (!reach(h, 4, hook)) return;
          } else {
            h.phase = kHttpChunkData;
          }
          continue;
        }
        const uint8_t l = fw_lower(c);
        const bool hex = (l >= '0' && l <= '9') || (l >= 'a' && l <= 'f');
        if (h.field == 0 && hex && h.remain < (1ull << 56)) h.remain = h.remain * 16 + uint64_t(l <= '9' ? l - '0' : l - 'a' + 10);
        else if (!hex) h.field = 1;  // extensions, CR
        continue;
      }
      case kHttpChunkData: {
        const uint64_t take = h.remain < uint64_t(n - k) ? h.remain : uint64_t(n - k);
        h.remain -= take;
        k += uint32_t(take) - 1;
        if (h.remain == 0) h.phase = kHttpChunkEnd;
        continue;
      }
      case kHttpChunkEnd:
        if (c == '\n') {
          h.phase = kHttpChunkSize;
          h.remain = 0;
          h.field = 0;
        }
        continue;
      case kHttpBodyClose:
        return;  // the rest of the connection is the body
      default:
        return;
    }
  }
}

// The direction ended: a body that runs to the end of the connection is complete.
template <class Hook>
GASPP_HD inline void fw_http_end(FwHttpState& st, int d, Hook& hook) {
  if (st.dir[d].phase == kHttpBodyClose) fw_detail::finish(st.dir[d], hook);
}

}  // namespace gaspp
