// applayer/app_layer.hpp — the application layer: protocol detection and parsers over the
// reassembled TCP streams, shared by the modules that inspect transactions (the signature engine's
// http buffers, and the outputs).
//
// AppLayer::process() takes a batch's stream chunks (PacketBatch::stream_chunks, which the
// pipeline gathers when some module asks for the application layer), in the order their packets
// arrived within each flow, so that a response follows the request it answers, and hands each
// flow direction's data to the flow's parser. It returns an update for every transaction a chunk
// changed, attributed to the packet that delivered the chunk (none for data released at a flow's
// end: those updates are flow-only).
//
// Protocol detection is by content, not by port (Suricata's app-layer patterns and probing
// parsers), on the first 32 bytes of each direction: a flow is HTTP/1 when its first client data
// starts with one of Suricata's probe methods (GET, POST, ..., 28 of them) and a space or tab, or
// its first server data with "HTTP/"; TLS when a direction starts with a handshake record (0x16
// 0x03 0x00..0x04); DNS over TCP when a port is 53 (Suricata's detection port) and the data is a
// length-prefixed DNS message (dns_probe_tcp); SSH when a direction starts with "SSH-"; SMB when
// one starts with a NetBIOS session message holding an SMB1, SMB2 or SMB3-transform header; SMTP
// when the client starts with EHLO or HELO (QUIT: SMTP, FTP where a port is 21); SIP when a
// direction starts with one of Suricata's SIP patterns (a SIP method, "SIP/2.0": sip.hpp); FTP when it
// starts with FEAT, "USER " or "PORT ", or the server with "220 (". Another server greeting "220 "
// or "220-" leaves the protocol to the client's first bytes; when those say nothing, it is FTP's
// where a port is 21, SMTP's where one is 25 or 465 (their probing parsers' ports), else failed. When a direction starts with the other role's data (an
// HTTP response from the flow's first sender, an SMB response header, a flow picked up midstream
// or its first packet lost) the flow is turned around: the parser's client is the key's other
// endpoint, and updates carry the parser's direction and client. A direction whose start says
// nothing leaves the decision to the other one (Suricata waits for both directions); when neither
// says anything, detection failed, and a flow still undecided at its end is "failed" too. Names
// are Suricata's app_proto values. HTTP, TLS, DNS, SSH (its identification strings, ssh.hpp),
// SMTP (envelopes and message headers, smtp.hpp), SIP (sip.hpp) and FTP's control connection
// (ftp.hpp) flows are parsed; SMB is detected only (flow records, and signatures of the protocol:
// docs/rules.md). A connection whose first data in a direction says nothing of the above and that
// an FTP control connection of the same address pair announced (a RETR, STOR, ... after PASV or
// PORT: ftp_data.hpp) is "ftp-data", its data a file; so that the announcement always comes
// first, the chunks of flows between the same two addresses are parsed in capture order (the
// flows of other pairs may come between), and the pipeline keeps a pair's flows in one shard.
//
// UDP: the datagrams the app-udp module brings to the host (AppDatagram: the payload of a packet to
// or from port 53 or 5060) are probed as Suricata probes them, DNS on port 53, then SIP's patterns;
// the first that is one decides the flow (a response in the flow's first direction turns it around,
// so that requests go to the server); a flow whose datagrams in both directions failed the probes
// is "failed". Every message is a transaction (applayer/dns.hpp, applayer/sip.hpp).
//
// Parsing runs on the host, after the batch, over the chunks the backend returns (both backends
// return the same chunks); an AppLayer is one thread's, and the pipeline runs 64 of them, the
// flows split by flow id (core/app_shards.hpp). State: per flow id, at most max_flows flows (more
// are counted as flows_full and not parsed); a flow's state goes when the flow leaves the flow
// table (forget()).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <span>
#include <vector>

#include "applayer/addr_pair.hpp"
#include "applayer/detection_ports.hpp"
#include "applayer/dns.hpp"
#include "applayer/http1.hpp"
#include "applayer/http2.hpp"
#include "applayer/ftp.hpp"
#include "applayer/ftp_data.hpp"
#include "applayer/sip.hpp"
#include "applayer/smtp.hpp"
#include "applayer/ssh.hpp"
#include "applayer/tls.hpp"
#include "gaspp/stream_chunk.hpp"

namespace gaspp {

struct FlowRecordOut;

struct AppLayerConfig {
  HttpLimits http;
  uint8_t file_hashes = 0;  // FileHash bits (mime.hpp): the hashes of each file (Suricata's force-hash)
  bool mail_body_md5 = false;  // each mail's body MD5 (smtp.hpp; email.body_md5, smtp.mime.body-md5)
  uint8_t mail_md5_log = 0;    // kMailMd5* bits: the hashes EVE's email object logs (eve-log smtp md5)
  uint32_t ftp_max_txs = 1024; // FTP transactions waiting for their reply (app-layer.protocols.ftp.max-tx)
  bool ssh_hassh_log = false;  // EVE ssh events carry HASSH (app-layer.protocols.ssh.hassh, or rules reading it)
  // The ports DNS (over UDP, over TCP) and SIP (over UDP) are probed on: Suricata's detection-ports.
  PortRanges dns_udp_ports = PortRanges::one(53), dns_tcp_ports = PortRanges::one(53);
  PortRanges sip_udp_ports = PortRanges::one(5060);
  size_t max_flows = 1u << 20;
};

// Suricata's app_proto values. smb is detected (for flow records and the signatures of the
// protocol) but not parsed; ssh's banners and smtp's envelopes and message headers are read; sip's
// messages (start line and header fields) and ftp's commands and replies are.
enum class AppProto : uint8_t { unknown, http, tls, dns, smtp, ftp, ssh, smb, failed, sip, http2, ftp_data };
const char* app_proto_name(AppProto p);

// A transaction some chunk changed: the chunk's flow, direction and delivering packet.
struct AppUpdate {
  uint64_t flow_id;
  uint32_t packet;   // batch packet index, kNoFlow: none (flow-only)
  uint8_t dir;       // 0 client → server, 1 server → client (the parser's roles)
  uint8_t client_lo; // key endpoint 0 is the client (the parser's)
  FlowKey key;
  AppProto proto;    // http: tx is an HttpTx; tls: a TlsTx; dns: a DnsTx; ssh: an SshTx; smtp: an SmtpTx
  AppTx* tx;         // valid until the next process() or forget()
  // HTTP/2's streams are HttpTx too (http2.hpp): the HTTP buffers read both versions.
  HttpTx* http() const { return proto == AppProto::http || proto == AppProto::http2 ? static_cast<HttpTx*>(tx) : nullptr; }
  TlsTx* tls() const { return proto == AppProto::tls ? static_cast<TlsTx*>(tx) : nullptr; }
  DnsTx* dns() const { return proto == AppProto::dns ? static_cast<DnsTx*>(tx) : nullptr; }
  SshTx* ssh() const { return proto == AppProto::ssh ? static_cast<SshTx*>(tx) : nullptr; }
  SmtpTx* smtp() const { return proto == AppProto::smtp ? static_cast<SmtpTx*>(tx) : nullptr; }
  SipTx* sip() const { return proto == AppProto::sip ? static_cast<SipTx*>(tx) : nullptr; }
  FtpTx* ftp() const { return proto == AppProto::ftp ? static_cast<FtpTx*>(tx) : nullptr; }
  FtpDataTx* ftp_data() const { return proto == AppProto::ftp_data ? static_cast<FtpDataTx*>(tx) : nullptr; }
  // The capture time of the packet that delivered it (ns since the epoch), filled in by whoever
  // hands the update on with the batch at hand; 0: unknown (a flow's end, a test).
  uint64_t ts_ns = 0;
  // The transaction was complete for its log right after this update (tx_complete then): the
  // event is written at the packet of the first such update, as the parser saw the transaction at
  // that packet, not as the batch's end left it.
  bool complete = false;
};

// Whether an update's transaction is complete for its EVE event: HTTP when the response finished
// (HTTP/2: and Suricata's logger writes it, HttpTx::h2_loggable);
// TLS when the handshake was read as far as Suricata logs it (TlsTx::handshake_done); SSH when both
// identification strings were read; SMTP when the mail completed; FTP when the reply came; DNS
// and SIP at each message.
bool tx_complete(const AppUpdate& u);

// A UDP packet's payload for the application layer: its flow, batch packet index, whether it
// goes to the flow's client (the flow's first packet came from the client), its key and which
// key endpoint sent it; the payload is at bytes + data.
struct AppDatagram {
  uint64_t flow_id;
  uint32_t packet;
  bool to_client, from_lo;
  FlowKey key;
  size_t data, len;
};

struct AppLayerStats {
  HttpStats http;
  Http2Stats http2;
  DnsStats dns;
  SmtpStats smtp;
  SipStats sip;
  FtpStats ftp;
  FtpDataStats ftp_data;
  uint64_t flows = 0, flows_http = 0, flows_tls = 0, flows_dns = 0, flows_failed = 0, flows_full = 0;
  uint64_t flows_smtp = 0, flows_ftp = 0, flows_ssh = 0, flows_smb = 0, flows_sip = 0, flows_http2 = 0;
  uint64_t connect_tunnels = 0;  // HTTP CONNECT tunnels handed back to detection (their flows count twice above)
  uint64_t ssh_banners_bad = 0;  // a direction without a readable SSH banner (too long, a gap)
  uint64_t tls_updates = 0, tls_malformed = 0, tls_certs = 0, tls_certs_undecoded = 0, tls_raw_cut = 0;
};

class AppLayer {
 public:
  // The HTTP parsers' files take the configured hashes (HttpLimits::file_hashes).
  explicit AppLayer(const AppLayerConfig& cfg = {}) : cfg_(cfg) { cfg_.http.file_hashes |= cfg_.file_hashes; }
  // A batch's stream chunks (their bytes in `bytes`) and UDP datagrams (theirs in `dgram_bytes`),
  // in capture order; the updates of the previous call are no longer valid. With `step`, the
  // updates are also handed to it as they come, each before its flow's next chunk or datagram is
  // parsed: what step reads of a transaction is its state as of the update's packet (so that a
  // signature matches at the packet that completed its buffers, as Suricata inspects each packet),
  // while the flows of a batch are still parsed in one pass (a flow's updates wait while other
  // flows are parsed).
  using Step = std::function<void(std::span<AppUpdate>)>;
  void process(const std::vector<StreamChunk>& chunks, std::span<const uint8_t> bytes, std::vector<AppUpdate>& out,
               const std::vector<AppDatagram>& datagrams = {}, const std::vector<uint8_t>& dgram_bytes = {},
               const Step& step = nullptr);
  // The flows that left the flow table: their state goes; unlogged(flow id, key, client_lo, tx)
  // is called first for each transaction no output logged yet (the flow's last word on it).
  using Unlogged = std::function<void(uint64_t, const FlowKey&, bool, AppProto, AppTx&)>;
  void forget(const std::vector<FlowRecordOut>& flows, const Unlogged& unlogged = nullptr);
  // forget() one flow at a time: forget_begin(), then forget_flow() for each (a caller that splits
  // flows over several AppLayers keeps the unlogged transactions in the flows' order).
  void forget_begin() {
    gone_.clear();
    gone_orig_.clear();
  }
  void forget_flow(uint64_t flow_id, const Unlogged& unlogged = nullptr);
  // A flow's protocol; a flow the last forget() released is still answered for (its flow record
  // is written after it). unknown: the flow had no data the application layer saw.
  AppProto proto(uint64_t flow_id) const;
  bool holds(uint64_t flow_id) const { return flows_.count(flow_id) != 0; }  // has the flow's state
  // The protocol a CONNECT tunnel followed (http; Suricata's app_proto_orig), unknown without one.
  AppProto proto_orig(uint64_t flow_id) const;
  // The flow's protocol as of batch packet `packet` of the last process(): unknown when it was
  // decided by a later packet of that batch (kNoFlow: as of the batch's end).
  AppProto proto_at(uint64_t flow_id, uint32_t packet) const;
  const AppLayerStats& stats() const { return stats_; }
  void report(std::map<std::string, uint64_t>& r) const;

 private:
  struct FlowApp {
    AppProto proto = AppProto::unknown;
    std::string probe[2];  // the first bytes of each direction while detection waits for more
    std::unique_ptr<Http1Conn> http;
    std::unique_ptr<Http2Conn> http2;
    std::unique_ptr<TlsConn> tls;
    std::unique_ptr<DnsConn> dns;
    std::unique_ptr<SshConn> ssh;
    std::unique_ptr<SmtpConn> smtp;
    std::unique_ptr<SipConn> sip;
    std::unique_ptr<FtpConn> ftp;
    std::unique_ptr<FtpDataConn> ftp_data;
    bool pe_done[2] = {false, false};  // a direction's first data was looked up in the expectations
    bool ended[2] = {false, false};
    // A direction whose first bytes said nothing (1) or were a greeting that leaves the protocol
    // to the client (2): the other direction decides; lost: its later bytes were not held.
    uint8_t settled[2] = {0, 0};
    bool lost[2] = {false, false};
    bool udp_failed[2] = {false, false};  // a datagram of this direction failed the DNS and SIP probes
    uint8_t tls_certs_counted = 0;  // bit d: side d's Certificate message counted (tls_certs)
    uint64_t decided_batch = ~0ull;  // when proto stopped being unknown: process() call, packet
    uint32_t decided_packet = 0;
    bool reversed = false;  // the flow's first packet came from the server: roles turned around
    // Each direction's stream offset after its last chunk, and where detection's view of it
    // starts: 0, or a CONNECT tunnel's first byte (the HTTP parser that read the CONNECT kept in
    // tunnel_http: its transactions stay valid).
    uint64_t end_off[2] = {0, 0}, base[2] = {0, 0};
    std::unique_ptr<Http1Conn> tunnel_http;
    FlowKey key{};
    bool client_lo = false;  // the parser's client is key endpoint 0
  };
  void detect(FlowApp& f, int dir, const uint8_t* p, size_t n);
  // A chunk of wire direction dir while the protocol is unknown: detection, then the held bytes
  // and the chunk to the parser it chose.
  void detect_chunk(FlowApp& f, int dir, const uint8_t* p, size_t n, uint64_t off, bool gap);
  void decide(FlowApp& f, AppProto proto, bool turn);  // the flow's protocol found (turn: roles turned around)
  FlowApp* flow_for(uint64_t flow_id);  // null: the table is full (counted)
  void datagram(const AppDatagram& d, const uint8_t* p, std::vector<AppUpdate>& out);
  void release_touched();
  AppLayerConfig cfg_;
  AppLayerStats stats_;
  FtpExpectations expect_{stats_.ftp_data};  // FTP transfers waiting for their data connection
  std::unordered_map<uint64_t, FlowApp> flows_;
  std::vector<uint64_t> touched_;  // flows the last process() fed: their handed-out state is released
  std::unordered_map<uint64_t, AppProto> gone_;  // the protocols of the flows the last forget() released
  std::unordered_map<uint64_t, AppProto> gone_orig_;  // ... of those of them that tunneled (proto_orig)
  uint64_t batch_ = 0;  // process() calls
  std::unordered_set<uint64_t> pending_flows_;  // process(): flows with updates not yet handed to step
  void decided(FlowApp& f, uint32_t packet) {
    if (f.proto != AppProto::unknown && f.decided_batch == ~0ull) {
      f.decided_batch = batch_;
      f.decided_packet = packet;
    }
  }
};

}  // namespace gaspp
