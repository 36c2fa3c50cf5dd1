// applayer/dns.hpp — DNS messages over UDP (one per datagram) and TCP (2-byte length prefix), the
// way Suricata's DNS parser reads them.
//
// parse_dns_message() reads a whole message: the header, the questions, and the answer, authority
// and additional records, with their data decoded for A, AAAA, CNAME, NS, PTR, MX, SOA, SRV,
// TXT, NULL, SSHFP and OPT (others are kept as bytes). Names are decompressed with Suricata's
// limits: at most 255 labels and pointers (a loop stops there, or at once when a pointer points
// at itself) and 1025 characters (the rest is cut, flagged `truncated`); a name that loops before
// any pointer was followed is an error. A header is valid (probe) when its record counts fit the
// message (2 bytes each at least), a message with no record is only the header, and a request
// asks at least one question.
//
// Transactions (Suricata's since 7.0): every message is a transaction of its own, a request
// (client → server) or a response; requests and responses are not paired. DnsConn takes a flow's
// messages: feed_datagram() for UDP, feed() for a TCP direction's in-order data (messages split
// at any byte and several per piece). A message in the request direction with QR set is no
// request (counted: not_request) and a header that does not validate is skipped (UDP) or stops
// the TCP direction (counted: malformed), as does a TCP message that does not parse. After a gap a
// TCP direction resumes at the first piece that looks like a DNS message.
//
// Limits: at most max_txs transactions of a connection wait to be handed out (more: the oldest go,
// counted); a TCP message is at most 65,535 bytes by its framing.
//
// Example:
//   DnsConn c(stats);
//   c.feed_datagram(0, payload, n);      // a query
//   for (DnsTx* t : c.touched()) ... t->msg.queries[0].name
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "applayer/app_tx.hpp"
#include "applayer/tx_queue.hpp"

namespace gaspp {

constexpr size_t kDnsMaxName = 1025;   // characters of a name (dnsmasq's limit, Suricata's)
constexpr int kDnsMaxLabels = 255;     // labels and pointers followed in one name

enum DnsNameFlags : uint8_t { kDnsNameTruncated = 1, kDnsNameLoop = 2, kDnsNameLabelLimit = 4 };

struct DnsQuery {
  std::string name;
  bool truncated = false;
  uint16_t rrtype = 0, rrclass = 0;
};

struct DnsRecord {
  enum Kind : uint8_t { kAddr, kName, kTxt, kNull, kSoa, kSrv, kSshfp, kOpt, kUnknown };
  std::string name;
  bool name_truncated = false;
  uint16_t rrtype = 0, rrclass = 0;
  uint32_t ttl = 0;
  Kind kind = kUnknown;
  std::string data;         // kAddr: the address bytes; kName: the name (MX: the exchange); kNull,
                            // kUnknown: the bytes; kSrv: the target; kSshfp: the fingerprint
  bool data_truncated = false;
  std::vector<std::string> txt;  // kTxt: its strings
  struct Soa {
    std::string mname, rname;
    bool mname_truncated = false, rname_truncated = false;
    uint32_t serial = 0, refresh = 0, retry = 0, expire = 0, minimum = 0;
  } soa;
  uint16_t priority = 0, weight = 0, port = 0;  // kSrv
  uint8_t algo = 0, fp_type = 0;                // kSshfp
  std::vector<std::pair<uint16_t, std::string>> opt;  // kOpt: (code, data)
};

struct DnsMessage {
  uint16_t id = 0, flags = 0;
  uint16_t questions = 0, answer_rr = 0, authority_rr = 0, additional_rr = 0;
  std::vector<DnsQuery> queries;
  std::vector<DnsRecord> answers, authorities, additionals;
  bool invalid_authorities = false, invalid_additionals = false;
  uint8_t name_flags = 0;  // DnsNameFlags seen in any name
  bool is_response() const { return flags & 0x8000; }
  uint8_t opcode() const { return uint8_t((flags >> 11) & 0xf); }
  uint8_t rcode() const { return uint8_t(flags & 0xf); }
};

enum class DnsParse : uint8_t { ok, header_invalid, malformed };
// A whole message (the UDP payload, or a TCP message without its length prefix).
DnsParse parse_dns_message(const uint8_t* p, size_t n, DnsMessage& out);

// Suricata's DNS probe: whether p (a message announced as dlen bytes, of which n are here) looks
// like DNS. 1 yes (*request: QR clear), 0 no, -1 too few bytes to tell.
int dns_probe(const uint8_t* p, size_t n, size_t dlen, bool* request);
// The same over TCP data: a 2-byte length, then the message.
int dns_probe_tcp(const uint8_t* p, size_t n, bool* request);

// Suricata's names: "A", "AAAA", ... (else the number); "NOERROR", "NXDOMAIN", ... (else the number).
std::string dns_rrtype_name(uint16_t t);
std::string dns_rcode_name(uint8_t rcode);

// Suricata's DNS app-layer events on a transaction (dns-events.rules: app-layer-event:dns.NAME).
enum DnsEvent : uint16_t {
  kDnsEvNotResponse = 1,         // not_a_response: a message to the client with QR clear
  kDnsEvZFlagSet = 2,            // z_flag_set: the reserved Z bit (0x0040) set
  kDnsEvInvalidOpcode = 4,       // invalid_opcode: opcode 7 or more
  kDnsEvNameTooLong = 8,         // name_too_long: a name cut at the name limit
  kDnsEvInfiniteLoop = 16,       // infinite_loop: a compression pointer loop
  kDnsEvTooManyLabels = 32,      // too_many_labels: past the label limit
  kDnsEvInvalidAdditionals = 64, // invalid_additionals: the additional records do not parse
  kDnsEvInvalidAuthorities = 128 // invalid_authorities: the authority records do not parse
};
// The event's bit by Suricata's name (after "dns."), 0 for a name it does not know or gaspp does
// not raise (malformed_data and not_a_request: Suricata sets them on the previous transaction).
uint16_t dns_event_bit(const std::string& name);

struct DnsTx : AppTx {
  bool request = true;  // false: a response
  uint16_t events = 0;  // DnsEvent bits
  DnsMessage msg;
  // The message as sent (on TCP with its two-byte length): what the payload contents of an
  // `alert dns` signature inspect, as Suricata inspects the packet (or stream) of a DNS flow.
  std::string raw;
};

struct DnsStats {
  uint64_t requests = 0, responses = 0;
  uint64_t not_request = 0;     // a message with QR set in the request direction (no transaction)
  uint64_t header_invalid = 0;  // a header that does not validate (skipped; TCP: the direction stops)
  uint64_t malformed = 0;       // a message that does not parse (TCP: the direction stops)
  uint64_t gaps = 0;            // TCP data lost (parsing resumes at a message's start)
  uint64_t txs_dropped = 0;     // past max_txs before they were handed out
};

class DnsConn {
 public:
  explicit DnsConn(DnsStats& stats, uint32_t max_txs = 512) : stats_(stats), q_(max_txs) {}
  // One UDP datagram's payload, direction dir (0 client → server: a request; 1: a response).
  void feed_datagram(int dir, const uint8_t* p, size_t n);
  // In-order TCP data of direction dir; gap: bytes were lost before them.
  void feed(int dir, const uint8_t* p, size_t n, bool gap = false);
  // The transactions made since the last clear_touched(), in order.
  const std::vector<DnsTx*>& touched() const { return q_.touched(); }
  void clear_touched() { q_.clear_touched(); }
  // Drops the transactions that are not touched (every DNS transaction is complete when made:
  // once handed out, nothing waits on it).
  void release_done() { q_.release_done(); }
  const std::deque<std::unique_ptr<DnsTx>>& txs() const { return q_.txs(); }

 private:
  void message(int dir, const uint8_t* p, size_t n, bool tcp);
  DnsStats& stats_;
  TxQueue<DnsTx> q_;
  std::string buf_[2];           // TCP: a message not complete yet
  bool gap_[2] = {false, false}, lost_[2] = {false, false};
};

}  // namespace gaspp
