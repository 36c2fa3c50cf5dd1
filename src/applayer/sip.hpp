// applayer/sip.hpp — SIP messages (RFC 3261) over UDP (one per datagram) and TCP, the way
// Suricata's SIP parser reads them (rust/src/sip/parser.rs), for the EVE `sip` event and the
// sip.* signature buffers.
//
// A message is a request ("METHOD request-uri SIP/x.y" CRLF) or a response ("SIP/x.y code
// reason" CRLF), then header fields ("name: value" CRLF, a value folded over lines that start
// with a space or tab; the compact names i m e l c f s k t v are expanded to Call-ID, Contact,
// Content-Encoding, Content-Length, Content-Type, From, Subject, Supported, To, Via), a CRLF, and
// a body. The characters allowed in each part are Suricata's (RFC 3261's tokens); a message that
// breaks them does not parse (counted: invalid). A header name may appear several times: each
// value is kept, in order (sip.via and the other header buffers are multi-buffers).
//
// Transactions (Suricata's): every message is a transaction of its own, a request (client →
// server) or a response; they are not paired. As in Suricata, what goes to the server parses as
// a request only and what comes back as a response only (else invalid). SipConn takes a flow's messages: feed_datagram()
// for UDP (the datagram is the message, its body what follows the header block), feed() for a TCP
// direction's in-order data, where a message ends after its Content-Length bytes of body (none
// without the field; Suricata frames TCP messages by the SDP body it parses instead). A TCP
// message that does not parse stops its direction until a gap (counted: invalid); after a gap a
// direction resumes at the first piece that starts like a SIP message.
//
// A body (as far as it is kept) is read as SDP, as Suricata's parser tries every body
// (applayer/sdp.hpp).
//
// Limits: a header block of at most kSipMaxHeaderBytes (64 KiB) and a body of at most
// kSipMaxBodyBytes (1 MiB, skipped past beyond) on TCP; at most max_txs transactions of a
// connection wait to be handed out (more: the oldest go, counted).
//
// Example:
//   SipConn c(stats);
//   c.feed_datagram(0, payload, n);       // "REGISTER sip:example.com SIP/2.0\r\n..."
//   for (SipTx* t : c.touched()) ... t->method, t->header("From")
#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "applayer/app_tx.hpp"
#include "applayer/sdp.hpp"
#include "applayer/tx_queue.hpp"

namespace gaspp {

constexpr size_t kSipMaxHeaderBytes = 64 * 1024;
constexpr size_t kSipMaxBodyBytes = 1024 * 1024;
constexpr uint64_t kSipNoOffset = ~uint64_t(0);

struct SipTx : AppTx {
  bool request = true;  // a request (client → server), else a response
  // The start line: a request's method, request-uri and version, or a response's version, code
  // (three characters) and reason phrase; the line itself up to its CR (request_line or
  // response_line, as Suricata's sip.request_line / sip.response_line).
  std::string method, uri, version, code, reason, line;
  std::vector<std::pair<std::string, std::string>> headers;  // names expanded, in order
  size_t body_len = 0;
  // The message as sent, for its frames (Suricata's SIP frames: pdu, the start line with its CRLF,
  // the header fields without the empty line after them, the body): raw holds the start line,
  // the header block, the empty line and the body as far as it was kept (a TCP body beyond
  // kSipMaxBodyBytes is not). On UDP the body is the rest of the datagram.
  std::string raw;
  uint32_t line_len = 0, headers_len = 0;
  size_t body_off() const { return size_t(line_len) + headers_len + 2; }
  bool udp = false;
  // TCP: where the message starts in its direction's stream (kSipNoOffset once a gap lost count).
  uint64_t stream_offset = 0;
  // Suricata's frame ids of the message, numbered per direction from 1: the pdu's; the start
  // line's, the headers' and the body's follow it.
  uint64_t frame_id = 0;
  // The body read as SDP (applayer/sdp.hpp), when it is one (has_sdp).
  SdpMessage sdp;
  bool has_sdp = false;
  // The value of the k-th field named `name` (case-sensitive after expansion, as Suricata looks
  // them up), or null.
  const std::string* header(const char* name, size_t k = 0) const;
  size_t header_count(const char* name) const;
};

struct SipStats {
  uint64_t requests = 0, responses = 0, invalid = 0, gaps = 0, txs_dropped = 0, too_long = 0;
  uint64_t sdp = 0;  // messages whose body is SDP
};

// What the first bytes of a direction say (Suricata's SIP patterns): 1 a SIP request method or
// "SIP/2.0" at the start, 0 not, -1 too few bytes to tell. *response: it was "SIP/2.0".
int sip_probe(const uint8_t* p, size_t n, bool* response);

// Parses one message from p[0, n): returns the bytes the start line and header block took
// (through the empty line), 0 when the bytes cannot be a message, and sets *incomplete when they
// may become one with more bytes. Sets t.line_len and t.headers_len, not t.raw.
size_t parse_sip_head(const uint8_t* p, size_t n, SipTx& t, bool* incomplete);

// A frame of message t: kind 0 the pdu (the whole message), 1 the start line with its CRLF, 2 the
// header fields (without the empty line), 3 the body: its offset in the message and its length as
// sent (t.raw may hold less of a TCP body cut at the limit); false for a body of no bytes.
bool sip_frame_span(const SipTx& t, int kind, size_t& off, size_t& len);

class SipConn {
 public:
  explicit SipConn(SipStats& stats, uint32_t max_txs = 512) : stats_(stats), q_(max_txs) {}
  // One UDP datagram's payload, direction dir (0 client → server).
  void feed_datagram(int dir, const uint8_t* p, size_t n);
  // In-order TCP data of direction dir; gap: bytes were lost before them.
  void feed(int dir, const uint8_t* p, size_t n, bool gap = false);
  // The transactions made since the last clear_touched(), in order.
  const std::vector<SipTx*>& touched() const { return q_.touched(); }
  void clear_touched() { q_.clear_touched(); }
  // Drops the transactions that are not touched (every SIP transaction is complete when made).
  void release_done() { q_.release_done(); }
  const std::deque<std::unique_ptr<SipTx>>& txs() const { return q_.txs(); }

 private:
  void add(std::unique_ptr<SipTx> t);
  SipStats& stats_;
  TxQueue<SipTx> q_;
  std::string buf_[2];          // TCP: a message not complete yet
  size_t skip_[2] = {0, 0};     // TCP: body bytes still to pass over (beyond the limit)
  bool gap_[2] = {false, false}, lost_[2] = {false, false};
  uint64_t fed_[2] = {0, 0};        // TCP: stream bytes before buf_ (kSipNoOffset after a gap)
  uint64_t frame_ids_[2] = {0, 0};  // the last frame id given in each direction
  void number_frames(int dir, SipTx& t);
};

}  // namespace gaspp
