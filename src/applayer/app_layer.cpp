// applayer/app_layer.cpp — see app_layer.hpp.
#include "applayer/app_layer.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "flow/flow_record.hpp"

namespace gaspp {

namespace {
constexpr size_t kProbeBytes = 32;
constexpr size_t kHoldBytes = 4096;

// Suricata's HTTP probe methods (app-layer-htp.c), each followed by a space or a tab.
constexpr const char* kMethods[] = {"GET", "PUT", "POST", "HEAD", "TRACE", "OPTIONS", "CONNECT", "DELETE", "PATCH",
                                    "PROPFIND", "PROPPATCH", "MKCOL", "COPY", "MOVE", "LOCK", "UNLOCK", "CHECKOUT",
                                    "UNCHECKOUT", "CHECKIN", "UPDATE", "LABEL", "REPORT", "MKWORKSPACE", "MKACTIVITY",
                                    "MERGE", "INVALID", "VERSION-CONTROL", "BASELINE-CONTROL"};

// 1: a request line's start (a known method and a space or tab), 0: not, -1: too few bytes yet.
int looks_like_request(const std::string& s) {
  bool wait = false;
  for (const char* m : kMethods) {
    const size_t n = std::strlen(m);
    const bool prefix = s.compare(0, std::min(s.size(), n), m, std::min(s.size(), n)) == 0;
    if (!prefix) continue;
    if (s.size() <= n) {
      wait = true;  // a method's start: more bytes decide
      continue;
    }
    if (s[n] == ' ' || s[n] == '\t') return 1;
  }
  return wait ? -1 : 0;
}

// A TLS handshake record's start, or an SSLv2-format ClientHello's (a 2-byte header with the high
// bit set, CLIENT-HELLO, then SSL 2.0's version or SSL 3.0 to TLS 1.3's): 1, 0 not, -1 too few bytes.
int looks_like_tls(const std::string& s) {
  if (!s.empty() && (uint8_t(s[0]) & 0x80)) {
    if (s.size() >= 3 && uint8_t(s[2]) != 1) return 0;
    if (s.size() >= 4 && uint8_t(s[3]) != 0x00 && uint8_t(s[3]) != 0x03) return 0;
    if (s.size() >= 5 && (uint8_t(s[3]) == 0 ? uint8_t(s[4]) != 0x02 : uint8_t(s[4]) > 0x04)) return 0;
    return s.size() >= 5 ? 1 : -1;
  }
  if (s.size() >= 1 && uint8_t(s[0]) != 0x16) return 0;
  if (s.size() >= 2 && uint8_t(s[1]) != 0x03) return 0;
  if (s.size() >= 3 && uint8_t(s[2]) > 0x04) return 0;
  return s.size() >= 3 ? 1 : -1;
}

int looks_like_response(const std::string& s) {
  static const char kWant[] = "HTTP/";
  for (size_t i = 0; i < 5; ++i) {
    if (i == s.size()) return -1;
    if (std::toupper(static_cast<unsigned char>(s[i])) != kWant[i]) return 0;
  }
  return 1;
}

// Whether s starts with `want` (case-insensitive unless `cs`): 1, 0 not, -1 too few bytes yet.
int starts(const std::string& s, const char* want, bool cs = false) {
  const size_t n = std::strlen(want);
  for (size_t i = 0; i < n; ++i) {
    if (i == s.size()) return -1;
    const unsigned char a = static_cast<unsigned char>(s[i]), b = static_cast<unsigned char>(want[i]);
    if (cs ? a != b : std::toupper(a) != std::toupper(b)) return 0;
  }
  return 1;
}

bool has_port(const FlowKey& k, uint16_t p) { return k.port[0] == p || k.port[1] == p; }

// What a direction's first bytes say (Suricata's detection patterns and probing parsers for the
// protocols gaspp knows; see app_layer.hpp).
struct Probe {
  enum State : uint8_t { wait, none, banner, found } state;
  AppProto proto = AppProto::unknown;
  bool turn = false;  // the bytes are the other role's: the flow is turned around
};

// SMB over NetBIOS: a session message whose record starts with \xffSMB, \xfeSMB or \xfdSMB. The
// header says whether it is a request or a response (SMB1: flags bit 0x80 at byte 9; SMB2: flags
// bit SERVER_TO_REDIR at bytes 16..19), which turns the flow around when it is the other role's.
Probe probe_smb(const std::string& s, int dir) {
  const auto b = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
  if (!s.empty() && b(0) != 0x00) return {Probe::none};
  if (s.size() < 8) return {Probe::wait};
  if ((b(4) != 0xff && b(4) != 0xfe && b(4) != 0xfd) || s.compare(5, 3, "SMB") != 0) return {Probe::none};
  bool response = false;
  if (b(4) == 0xff) {
    if (s.size() < 14) return {Probe::wait};
    response = (b(13) & 0x80) != 0;
  } else if (b(4) == 0xfe) {
    if (s.size() < 21) return {Probe::wait};
    response = (b(20) & 0x01) != 0;
  } else {
    return {Probe::found, AppProto::smb, false};  // SMB3 transform: no direction in the header
  }
  return {Probe::found, AppProto::smb, response == (dir == 0)};
}

// The client role's first bytes: an HTTP request, or SMTP's and FTP's commands.
Probe probe_client(const std::string& s, const FlowKey& k) {
  // HTTP/2 with prior knowledge: the client's connection preface (Suricata's http2 pattern).
  const int h2 = starts(s, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", true);
  if (h2 > 0) return {Probe::found, AppProto::http2};
  if (h2 < 0) return {Probe::wait};
  const int r = looks_like_request(s);
  if (r > 0) return {Probe::found, AppProto::http};
  bool wait = r < 0;
  const auto is = [&](const char* w, AppProto p, bool cs = false) {
    const int m = starts(s, w, cs);
    wait = wait || m < 0;
    return m > 0 ? p : AppProto::unknown;
  };
  for (AppProto p : {is("EHLO", AppProto::smtp), is("HELO", AppProto::smtp), is("FEAT", AppProto::ftp),
                     is("USER ", AppProto::ftp, true), is("PORT ", AppProto::ftp),
                     // QUIT: FTP on FTP's port, SMTP elsewhere (SMTPClientProbingParserCheckPort)
                     is("QUIT", has_port(k, 21) ? AppProto::ftp : AppProto::smtp)})
    if (p != AppProto::unknown) return {Probe::found, p};
  return {wait ? Probe::wait : Probe::none};
}

// The server role's first bytes: an HTTP response, a TLS record, FTP's "220 (" greeting. Another
// "220 " or "220-" greeting leaves the protocol to the client's first bytes (banner), as SMTP's
// and FTP's probing parsers wait for the client's.
Probe probe_server(const std::string& s) {
  const int r = looks_like_response(s);
  if (r > 0) return {Probe::found, AppProto::http};
  // A TLS alert or application data record (Suricata's TLS patterns to the client): a flow picked
  // up after its handshake.
  const auto u = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
  const bool tls_rec = (s.empty() || u(0) == 0x15 || u(0) == 0x17) && (s.size() < 2 || u(1) == 0x03) &&
                       (s.size() < 3 || u(2) <= 0x03);
  if (tls_rec && s.size() >= 3) return {Probe::found, AppProto::tls};
  const int ftp = starts(s, "220 (");
  if (ftp > 0) return {Probe::found, AppProto::ftp};
  const int g = starts(s, "220");
  if (g > 0 && s.size() < 4) return {Probe::wait};
  if (g > 0 && (s[3] == ' ' || s[3] == '-')) return {ftp < 0 ? Probe::wait : Probe::banner};
  return {r < 0 || g < 0 || tls_rec ? Probe::wait : Probe::none};
}

// Direction dir's first bytes (0: the flow's first sender's).
Probe probe_direction(const std::string& s, int dir, const FlowKey& k) {
  // SIP's patterns first: two of its methods (OPTIONS, UPDATE) are HTTP's too, and sip_probe only
  // takes them with a SIP request-uri after them.
  bool sip_response = false;
  const int sip = sip_probe(reinterpret_cast<const uint8_t*>(s.data()), s.size(), &sip_response);
  if (sip > 0) return {Probe::found, AppProto::sip, sip_response == (dir == 0)};
  const int t = looks_like_tls(s);
  if (t > 0) return {Probe::found, AppProto::tls, dir == 1};  // a server's handshake: turned around
  const int ssh = starts(s, "SSH-");
  if (ssh > 0) return {Probe::found, AppProto::ssh};
  const Probe smb = probe_smb(s, dir);
  if (smb.state == Probe::found) return smb;
  Probe own = dir == 0 ? probe_client(s, k) : probe_server(s);
  if (own.state == Probe::found || own.state == Probe::banner) return own;
  // The other role's start: a flow picked up the other way round (midstream, or its first packet
  // lost). It is turned around, as Suricata's protocol detection does.
  Probe other = dir == 0 ? probe_server(s) : probe_client(s, k);
  if (other.state == Probe::found) {
    other.turn = true;
    return other;
  }
  const bool wait = sip < 0 || t < 0 || ssh < 0 || smb.state == Probe::wait || own.state == Probe::wait ||
                    other.state == Probe::wait;
  return {wait ? Probe::wait : Probe::none};
}
}  // namespace

const char* app_proto_name(AppProto p) {
  switch (p) {
    case AppProto::http: return "http";
    case AppProto::http2: return "http2";
    case AppProto::tls: return "tls";
    case AppProto::dns: return "dns";
    case AppProto::smtp: return "smtp";
    case AppProto::ftp: return "ftp";
    case AppProto::ssh: return "ssh";
    case AppProto::smb: return "smb";
    case AppProto::sip: return "sip";
    case AppProto::ftp_data: return "ftp-data";
    case AppProto::failed: return "failed";
    default: return "unknown";
  }
}

AppProto AppLayer::proto(uint64_t flow_id) const {
  const auto it = flows_.find(flow_id);
  if (it != flows_.end()) return it->second.proto;
  const auto g = gone_.find(flow_id);
  return g == gone_.end() ? AppProto::unknown : g->second;
}

AppProto AppLayer::proto_orig(uint64_t flow_id) const {
  const auto it = flows_.find(flow_id);
  if (it != flows_.end()) return it->second.tunnel_http ? AppProto::http : AppProto::unknown;
  const auto g = gone_orig_.find(flow_id);
  return g == gone_orig_.end() ? AppProto::unknown : g->second;
}

void AppLayer::detect(FlowApp& f, int dir, const uint8_t* p, size_t n) {
  // A direction's bytes are held until the protocol is decided (up to kHoldBytes: a server's
  // greeting whole, for the parser the client's bytes will choose); what does not fit is lost (the
  // parser sees a gap there). Detection reads the first kProbeBytes.
  std::string& pr = f.probe[dir];
  if (f.lost[dir]) return;
  if (pr.size() + n > kHoldBytes) {
    f.lost[dir] = true;
    pr.append(reinterpret_cast<const char*>(p), kHoldBytes - std::min(kHoldBytes, pr.size()));
  } else {
    pr.append(reinterpret_cast<const char*>(p), n);
  }
  if (f.settled[dir]) return;  // its start said nothing: the other direction decides
  if (cfg_.dns_tcp_ports.has(f.key.port[0]) || cfg_.dns_tcp_ports.has(f.key.port[1])) {
    // Suricata's DNS probe on its detection ports (before the content patterns, as its probing
    // parsers run for the port).
    bool request = false;
    const int d = dns_probe_tcp(reinterpret_cast<const uint8_t*>(pr.data()), pr.size(), &request);
    if (d < 0 && pr.size() < kProbeBytes) return;
    if (d > 0) {
      decide(f, AppProto::dns, (dir == 0) != request);
      return;
    }
  }
  const Probe pb = probe_direction(pr, int(dir), f.key);
  Probe::State st = pb.state;
  if (st == Probe::found) {
    decide(f, pb.proto, pb.turn);
    return;
  }
  if (!f.pe_done[dir]) {
    // The direction's first data said nothing yet: an FTP data connection its control connection
    // announced? (Suricata's expectations, looked up once per direction after its patterns and
    // probing parsers.) Its server port is the transfer's; dir is in the client's roles here.
    f.pe_done[dir] = true;
    FtpTransfer x;
    const int server_ep = f.client_lo ? 1 : 0;
    if (f.key.proto == 6 && !expect_.empty() &&
        expect_.take(f.key.addr[0], f.key.addr[1], f.key.family, f.key.port[server_ep], dir, x)) {
      f.ftp_data = std::make_unique<FtpDataConn>(x, stats_.ftp_data, cfg_.file_hashes);
      decide(f, AppProto::ftp_data, false);
      return;
    }
  }
  if (st == Probe::wait && pr.size() >= kProbeBytes) st = Probe::none;  // no protocol's start
  if (st == Probe::wait) return;
  // This direction's start is no protocol's (or a greeting that leaves it to the client): the
  // other direction's first bytes decide. When neither did, a greeting still decides on FTP's port
  // (21) and SMTP's (25, 465), as their probing parsers do; otherwise detection failed.
  f.settled[dir] = uint8_t(st);
  if (!f.settled[1 - dir]) return;
  const bool greeting = f.settled[1] == Probe::banner;
  if (greeting && has_port(f.key, 21)) decide(f, AppProto::ftp, false);
  else if (greeting && (has_port(f.key, 25) || has_port(f.key, 465))) decide(f, AppProto::smtp, false);
  else decide(f, AppProto::failed, false);
}

void AppLayer::detect_chunk(FlowApp& f, int dir, const uint8_t* p, size_t n, uint64_t off, bool gap) {
  if (!f.settled[dir] && (gap || off - f.base[dir] > f.probe[dir].size())) {
    // Picked up past the start of a direction: its first bytes are not known.
    decide(f, AppProto::failed, false);
    return;
  }
  const size_t had = f.probe[dir].size();
  detect(f, dir, p, n);
  // Feed what detection held to the parser, the other direction's first (in the parser's roles),
  // then this chunk.
  const auto feed_held = [&](auto& conn) {
    const int o = 1 - dir;
    const int r = f.reversed ? 1 : 0;
    if (!f.probe[o].empty()) conn.feed(o ^ r, reinterpret_cast<const uint8_t*>(f.probe[o].data()), f.probe[o].size());
    if (f.lost[o]) conn.feed(o ^ r, nullptr, 0, true);
    conn.feed(dir ^ r, reinterpret_cast<const uint8_t*>(f.probe[dir].data()), had);
    f.probe[0].clear();
    f.probe[1].clear();
    conn.feed(dir ^ r, p, n);
  };
  if (f.proto == AppProto::tls) feed_held(*f.tls);
  if (f.proto == AppProto::http) feed_held(*f.http);
  if (f.proto == AppProto::http2) feed_held(*f.http2);
  if (f.proto == AppProto::dns) feed_held(*f.dns);
  if (f.proto == AppProto::ssh) feed_held(*f.ssh);
  if (f.proto == AppProto::smtp) feed_held(*f.smtp);
  if (f.proto == AppProto::sip) feed_held(*f.sip);
  if (f.proto == AppProto::ftp) feed_held(*f.ftp);
  if (f.proto == AppProto::ftp_data) feed_held(*f.ftp_data);
}

void AppLayer::decide(FlowApp& f, AppProto proto, bool turn) {
  f.reversed = turn;
  f.proto = proto;
  switch (proto) {
    case AppProto::tls:
      ++stats_.flows_tls;
      f.tls = std::make_unique<TlsConn>(&stats_.tls_certs_undecoded, &stats_.tls_raw_cut);
      break;
    case AppProto::http2:
      ++stats_.flows_http2;
      f.http2 = std::make_unique<Http2Conn>(cfg_.http, stats_.http, stats_.http2);
      break;
    case AppProto::http:
      ++stats_.flows_http;
      f.http = std::make_unique<Http1Conn>(cfg_.http, stats_.http);
      break;
    case AppProto::smtp:
      ++stats_.flows_smtp;
      f.smtp = std::make_unique<SmtpConn>(stats_.smtp, cfg_.http.max_txs, cfg_.file_hashes,
                                          cfg_.mail_body_md5 || (cfg_.mail_md5_log & kMailMd5Body), cfg_.mail_md5_log);
      break;
    case AppProto::ftp:
      ++stats_.flows_ftp;
      f.ftp = std::make_unique<FtpConn>(stats_.ftp, cfg_.ftp_max_txs);
      break;
    case AppProto::dns:
      ++stats_.flows_dns;
      f.dns = std::make_unique<DnsConn>(stats_.dns, cfg_.http.max_txs);
      break;
    case AppProto::ssh:
      ++stats_.flows_ssh;
      f.ssh = std::make_unique<SshConn>(&stats_.ssh_banners_bad, cfg_.ssh_hassh_log);
      break;
    case AppProto::smb: ++stats_.flows_smb; break;
    case AppProto::ftp_data: break;  // FtpDataConn counts it (ftp_data_flows)
    case AppProto::sip:
      ++stats_.flows_sip;
      f.sip = std::make_unique<SipConn>(stats_.sip, cfg_.http.max_txs);
      break;
    case AppProto::failed:
      ++stats_.flows_failed;
      f.probe[0].clear();
      f.probe[1].clear();
      break;
    default: break;
  }
}

AppProto AppLayer::proto_at(uint64_t flow_id, uint32_t packet) const {
  const auto it = flows_.find(flow_id);
  if (it == flows_.end()) return AppProto::unknown;
  const FlowApp& f = it->second;
  if (f.proto == AppProto::unknown) return AppProto::unknown;
  if (f.decided_batch < batch_) return f.proto;
  // Decided in this batch: from its packet on (data released with no packet: at the batch's end).
  if (f.decided_packet == kNoFlow) return packet == kNoFlow ? f.proto : AppProto::unknown;
  return packet >= f.decided_packet ? f.proto : AppProto::unknown;
}

AppLayer::FlowApp* AppLayer::flow_for(uint64_t flow_id) {
  auto it = flows_.find(flow_id);
  if (it == flows_.end()) {
    if (flows_.size() >= cfg_.max_flows) {
      ++stats_.flows_full;
      return nullptr;
    }
    it = flows_.emplace(flow_id, FlowApp{}).first;
    ++stats_.flows;
  }
  touched_.push_back(flow_id);
  return &it->second;
}

void AppLayer::release_touched() {
  // What the last call handed out is released: finished HTTP transactions, DNS transactions.
  std::sort(touched_.begin(), touched_.end());
  touched_.erase(std::unique(touched_.begin(), touched_.end()), touched_.end());
  for (uint64_t id : touched_) {
    const auto it = flows_.find(id);
    if (it == flows_.end()) continue;
    if (it->second.http) it->second.http->release_done();
    if (it->second.http2) it->second.http2->release_done();
    if (it->second.dns) it->second.dns->release_done();
    if (it->second.sip) it->second.sip->release_done();
    if (it->second.ftp) it->second.ftp->release_done();
  }
  touched_.clear();
}

void AppLayer::datagram(const AppDatagram& d, const uint8_t* p, std::vector<AppUpdate>& out) {
  auto it = flows_.find(d.flow_id);
  if (it != flows_.end() && it->second.proto != AppProto::unknown && it->second.proto != AppProto::dns &&
      it->second.proto != AppProto::sip)
    return;
  FlowApp* fp = flow_for(d.flow_id);
  if (!fp) return;
  FlowApp& f = *fp;
  const int wire_dir = d.to_client ? 1 : 0;
  f.key = d.key;
  if (f.proto == AppProto::unknown) {
    // DNS on its port (Suricata's probing parser for the port), then SIP's patterns on any port.
    bool request = false, response = false;
    const bool dns_port = cfg_.dns_udp_ports.has(f.key.port[0]) || cfg_.dns_udp_ports.has(f.key.port[1]);
    if (dns_port && dns_probe(p, d.len, d.len, &request) > 0) {
      decide(f, AppProto::dns, (wire_dir == 0) != request);  // requests go to the server
    } else if (sip_probe(p, d.len, &response) > 0) {
      decide(f, AppProto::sip, (wire_dir == 0) == response);
    } else {
      f.udp_failed[wire_dir] = true;
      if (f.udp_failed[0] && f.udp_failed[1]) {
        decide(f, AppProto::failed, false);
        decided(f, d.packet);
      }
      return;
    }
  }
  decided(f, d.packet);
  const int dir = wire_dir ^ (f.reversed ? 1 : 0);
  // The sender is the client when the datagram goes to the server.
  f.client_lo = d.from_lo == (dir == 0);
  if (f.sip) {
    f.sip->feed_datagram(dir, p, d.len);
    for (SipTx* t : f.sip->touched())
      out.push_back(AppUpdate{d.flow_id, d.packet, uint8_t(t->request ? 0 : 1), uint8_t(f.client_lo), d.key,
                              AppProto::sip, t, 0, true});
    f.sip->clear_touched();
    return;
  }
  f.dns->feed_datagram(dir, p, d.len);
  for (DnsTx* t : f.dns->touched())
    out.push_back(AppUpdate{d.flow_id, d.packet, uint8_t(t->request ? 0 : 1), uint8_t(f.client_lo), d.key,
                            AppProto::dns, t, 0, true});
  f.dns->clear_touched();
}

bool tx_complete(const AppUpdate& u) {
  return u.http()   ? u.http()->resp_done && (!u.http()->http2 || u.http()->h2_loggable())
         : u.tls()  ? u.tls()->handshake_done
         : u.ssh()  ? u.ssh()->done()
         : u.ftp()  ? u.ftp()->done
         : u.ftp_data() ? u.ftp_data()->done
         : u.smtp() ? u.smtp()->complete && u.smtp()->has_mail()
                    : u.dns() != nullptr || u.sip() != nullptr;
}

void AppLayer::process(const std::vector<StreamChunk>& chunks, std::span<const uint8_t> bytes,
                       std::vector<AppUpdate>& out, const std::vector<AppDatagram>& datagrams,
                       const std::vector<uint8_t>& dgram_bytes, const Step& step) {
  release_touched();
  ++batch_;
  // The updates not yet handed to step; they go before their flow is parsed further (the flows
  // of one address pair are interleaved: a flow's updates may wait behind another flow's).
  size_t handed = out.size();
  pending_flows_.clear();
  const auto hand = [&](uint64_t next_flow, bool last) {
    if (!step || handed == out.size() || (!last && !pending_flows_.count(next_flow))) return;
    step(std::span<AppUpdate>(out).subspan(handed));
    handed = out.size();
    pending_flows_.clear();
  };
  const auto note_pending = [&](size_t before) {
    for (size_t i = before; i < out.size(); ++i) pending_flows_.insert(out[i].flow_id);
  };
  for (const AppDatagram& d : datagrams) {
    hand(d.flow_id, false);
    const size_t before = out.size();
    datagram(d, dgram_bytes.data() + d.data, out);
    note_pending(before);
  }
  // Chunks come grouped by flow and direction; a flow's two directions are interleaved again in
  // the order their packets arrived (stream order within a direction is kept: a later piece of a
  // direction never comes with an earlier packet), and so are the flows between the same two
  // addresses (an FTP control connection announces its data connections before their data
  // comes); the flows of other pairs stay apart.
  std::vector<uint32_t> order(chunks.size());
  std::vector<uint64_t> pair(chunks.size());
  for (size_t i = 0; i < chunks.size(); ++i) pair[i] = app_pair_hash(chunks[i].key);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const StreamChunk &x = chunks[a], &y = chunks[b];
    if (pair[a] != pair[b]) return pair[a] < pair[b];
    if (x.packet != y.packet) return x.packet < y.packet;  // kNoFlow (no packet: released at the end) last
    return x.flow_id < y.flow_id;
  });
  size_t noted = out.size();  // the updates up to here are in pending_flows_ (or handed)
  for (uint32_t ci : order) {
    const StreamChunk& c = chunks[ci];
    note_pending(noted);
    hand(c.flow_id, false);
    noted = out.size();
    if (c.len == 0 && !flows_.count(c.flow_id)) continue;
    FlowApp* fp = flow_for(c.flow_id);
    if (!fp) continue;
    FlowApp& f = *fp;
    f.key = c.key;
    if (f.proto == AppProto::unknown) f.client_lo = (c.flags & kChunkClientLo) != 0;  // for the expectations
    const int wire_dir = c.dir ? 1 : 0;
    const uint8_t* p = bytes.data() + c.data;
    const bool conflict = c.flags & kChunkConflict;
    if (f.proto == AppProto::unknown && c.len && !conflict) {
      detect_chunk(f, wire_dir, p, c.len, c.off, c.gap != 0);
    } else if (f.proto == AppProto::tls) {
      const int dir = wire_dir ^ (f.reversed ? 1 : 0);
      if (!f.tls->done(dir) && (c.len || conflict)) {
        const int r = f.tls->feed(dir, p, conflict ? 0 : c.len, c.gap != 0 || conflict);
        stats_.tls_malformed += r < 0;
      }
    } else if (f.proto == AppProto::http) {
      const int dir = wire_dir ^ (f.reversed ? 1 : 0);
      if (c.len && !conflict) f.http->feed(dir, p, c.len, c.gap != 0);
      else if (conflict) f.http->feed(dir, nullptr, 0, true);
    } else if (f.proto == AppProto::http2) {
      const int dir = wire_dir ^ (f.reversed ? 1 : 0);
      if (c.len && !conflict) f.http2->feed(dir, p, c.len, c.gap != 0);
      else if (conflict) f.http2->feed(dir, nullptr, 0, true);
    } else if (f.proto == AppProto::ssh || f.proto == AppProto::smtp) {
      // Line protocols: a conflict, like a gap, ends the direction's parsing.
      const int dir = wire_dir ^ (f.reversed ? 1 : 0);
      const auto feed = [&](auto& conn) {
        if (!conn.done(dir) && (c.len || conflict)) conn.feed(dir, p, conflict ? 0 : c.len, c.gap != 0 || conflict);
      };
      if (f.proto == AppProto::ssh) feed(*f.ssh);
      else feed(*f.smtp);
    } else if (f.proto == AppProto::dns && f.dns) {
      const int dir = wire_dir ^ (f.reversed ? 1 : 0);
      if (c.len && !conflict) f.dns->feed(dir, p, c.len, c.gap != 0);
      else if (conflict) f.dns->feed(dir, nullptr, 0, true);
    } else if (f.proto == AppProto::sip && f.sip) {
      const int dir = wire_dir ^ (f.reversed ? 1 : 0);
      if (c.len && !conflict) f.sip->feed(dir, p, c.len, c.gap != 0);
      else if (conflict) f.sip->feed(dir, nullptr, 0, true);
    } else if (f.proto == AppProto::ftp && f.ftp) {
      const int dir = wire_dir ^ (f.reversed ? 1 : 0);
      if (c.len && !conflict) f.ftp->feed(dir, p, c.len, c.gap != 0);
      else if (conflict) f.ftp->feed(dir, nullptr, 0, true);
    } else if (f.proto == AppProto::ftp_data && f.ftp_data) {
      const int dir = wire_dir ^ (f.reversed ? 1 : 0);
      if (c.len && !conflict) f.ftp_data->feed(dir, p, c.len, c.gap != 0);
      else if (conflict) f.ftp_data->feed(dir, nullptr, 0, true);
    }
    if (f.ftp && !f.ftp->transfers().empty()) {
      // The transfers this chunk announced wait for their data connections (same address pair).
      for (const FtpTransfer& x : f.ftp->transfers()) expect_.add(c.key.addr[0], c.key.addr[1], c.key.family, x);
      f.ftp->clear_transfers();
    }
    bool adopted = false;
    if (f.proto == AppProto::http && f.http->h2c_upgrade() && !f.http2) {
      // Upgraded to HTTP/2: the flow is http2 from here on; its parser takes stream 1 from the
      // upgraded request and the server's bytes after the 101 (the client's come with its preface).
      ++stats_.flows_http2;
      f.http2 = std::make_unique<Http2Conn>(cfg_.http, stats_.http, stats_.http2);
      f.http2->adopt_upgrade(*f.http->h2c_upgrade());
      const std::string rest = f.http->take_rest();
      if (!rest.empty()) f.http2->feed(1, reinterpret_cast<const uint8_t*>(rest.data()), rest.size());
      f.proto = AppProto::http2;
      adopted = true;
    }
    decided(f, c.packet);
    // The parser's roles: a turned-around flow's client is the key's other endpoint.
    const int dir = wire_dir ^ (f.reversed ? 1 : 0);
    const uint8_t client_lo = uint8_t(((c.flags & kChunkClientLo) ? 1 : 0) ^ (f.reversed ? 1 : 0));
    f.key = c.key;
    f.client_lo = client_lo != 0;
    if (c.flags & kChunkEnd) {
      if (f.http) f.http->end(dir);
      if (f.http2) f.http2->end(dir);
      if (f.smtp) f.smtp->end();
      if (f.ftp_data) f.ftp_data->end(dir);
      f.ended[wire_dir] = true;  // the state stays until the flow leaves the table (forget)
    }
    const size_t fresh = out.size();  // this chunk's updates start here
    if (f.http) {
      for (HttpTx* t : f.http->touched())
        out.push_back(AppUpdate{c.flow_id, c.packet, uint8_t(dir), client_lo, c.key, AppProto::http, t});
      f.http->clear_touched();
    }
    if (f.http2) {
      // The upgraded request, now stream 1's: its request side is inspected too.
      if (adopted && !f.http2->txs().empty())
        out.push_back(AppUpdate{c.flow_id, c.packet, 0, client_lo, c.key, AppProto::http2, f.http2->txs().front().get()});
      for (HttpTx* t : f.http2->touched())
        out.push_back(AppUpdate{c.flow_id, c.packet, uint8_t(dir), client_lo, c.key, AppProto::http2, t});
      f.http2->clear_touched();
    }
    if (f.dns) {
      for (DnsTx* t : f.dns->touched())
        out.push_back(AppUpdate{c.flow_id, c.packet, uint8_t(t->request ? 0 : 1), client_lo, c.key, AppProto::dns, t});
      f.dns->clear_touched();
    }
    if (f.sip) {
      for (SipTx* t : f.sip->touched())
        out.push_back(AppUpdate{c.flow_id, c.packet, uint8_t(t->request ? 0 : 1), client_lo, c.key, AppProto::sip, t});
      f.sip->clear_touched();
    }
    if (f.ftp) {
      // A reply also updates the transaction's request side: Suricata inspects a transaction to
      // the server again once the reply changed it (its data port, mode), at the client's next
      // packet; here at the reply's.
      for (FtpTx* t : f.ftp->touched()) {
        out.push_back(AppUpdate{c.flow_id, c.packet, uint8_t(dir), client_lo, c.key, AppProto::ftp, t});
        if (dir == 1 && t->has_command())
          out.push_back(AppUpdate{c.flow_id, c.packet, 0, client_lo, c.key, AppProto::ftp, t});
      }
      f.ftp->clear_touched();
    }
    if (f.ftp_data && f.ftp_data->changed()) {
      // The transaction in the data's direction; the other direction's progress is complete from
      // the start (Suricata's FTPDataGetAlstateProgress), so a signature of that direction reading
      // the command matches too: inspected when the transaction appears and when it ends.
      FtpDataTx& t = f.ftp_data->tx();
      const bool first = !t.other_side_seen;
      out.push_back(AppUpdate{c.flow_id, c.packet, t.data_dir, client_lo, c.key, AppProto::ftp_data, &t});
      if (first || t.done) out.push_back(AppUpdate{c.flow_id, c.packet, uint8_t(1 - t.data_dir), client_lo, c.key, AppProto::ftp_data, &t});
      t.other_side_seen = true;
      f.ftp_data->clear_changed();
    }
    if (f.smtp) {
      for (SmtpTx* t : f.smtp->touched())
        out.push_back(AppUpdate{c.flow_id, c.packet, uint8_t(dir), client_lo, c.key, AppProto::smtp, t});
      f.smtp->clear_touched();
    }
    if (f.ssh && f.ssh->changed()) {
      out.push_back(AppUpdate{c.flow_id, c.packet, uint8_t(dir), client_lo, c.key, AppProto::ssh, &f.ssh->tx()});
      f.ssh->clear_changed();
    }
    if (f.tls && f.tls->changed()) {
      stats_.tls_updates++;
      for (int d = 0; d < 2; ++d)
        if (f.tls->tx().cert[d].present && !(f.tls_certs_counted >> d & 1)) {
          f.tls_certs_counted |= uint8_t(1 << d);
          ++stats_.tls_certs;
        }
      out.push_back(AppUpdate{c.flow_id, c.packet, uint8_t(dir), client_lo, c.key, AppProto::tls, &f.tls->tx()});
      f.tls->clear_changed();
    }
    for (size_t i = fresh; i < out.size(); ++i) out[i].complete = tx_complete(out[i]);
    f.end_off[wire_dir] = c.off + c.len;
    if (f.proto == AppProto::http && f.http->connect_tunnel()) {
      // A CONNECT tunnel (a 2xx to CONNECT): what follows is another protocol's, found again by
      // its first bytes (Suricata's protocol change after HTPHandleConnect). The HTTP parser, with
      // the CONNECT's transaction (its updates above point into it), stays until the flow goes;
      // each direction's tunnel starts after what HTTP read of it.
      ++stats_.connect_tunnels;
      const std::string rest = f.http->take_rest();
      const int server_wire = 1 ^ (f.reversed ? 1 : 0);
      f.base[server_wire] = f.end_off[server_wire] - rest.size();
      f.base[1 - server_wire] = f.end_off[1 - server_wire];
      f.tunnel_http = std::move(f.http);
      f.proto = AppProto::unknown;
      f.reversed = false;
      f.decided_batch = ~0ull;
      for (int d = 0; d < 2; ++d) f.probe[d].clear(), f.settled[d] = 0, f.lost[d] = false;
      if (!rest.empty())
        detect_chunk(f, server_wire, reinterpret_cast<const uint8_t*>(rest.data()), rest.size(), f.base[server_wire], false);
      decided(f, c.packet);
    }
  }
  hand(0, true);
}

void AppLayer::forget(const std::vector<FlowRecordOut>& flows, const Unlogged& unlogged) {
  forget_begin();
  for (const FlowRecordOut& r : flows) forget_flow(r.rec.flow_id, unlogged);
}

void AppLayer::forget_flow(uint64_t flow_id, const Unlogged& unlogged) {
  const auto it = flows_.find(flow_id);
  if (it == flows_.end()) return;
  // Still undecided at the flow's end (too few bytes to tell): detection failed.
  gone_[flow_id] = it->second.proto == AppProto::unknown ? AppProto::failed : it->second.proto;
  if (it->second.tunnel_http) gone_orig_[flow_id] = AppProto::http;
  if (unlogged && it->second.http)
    for (const auto& t : it->second.http->txs())
      if (!t->logged && t->req_line) unlogged(flow_id, it->second.key, it->second.client_lo, AppProto::http, *t);
  if (unlogged && it->second.http2)
    for (const auto& t : it->second.http2->txs())
      if (!t->logged && (t->req_line || t->h2_events)) unlogged(flow_id, it->second.key, it->second.client_lo, AppProto::http2, *t);
  if (unlogged && it->second.tls && !it->second.tls->tx().logged && it->second.tls->tx().client_hello)
    unlogged(flow_id, it->second.key, it->second.client_lo, AppProto::tls, it->second.tls->tx());
  if (unlogged && it->second.ssh && !it->second.ssh->tx().logged &&
      (it->second.ssh->tx().banner[0] || it->second.ssh->tx().banner[1]))
    unlogged(flow_id, it->second.key, it->second.client_lo, AppProto::ssh, it->second.ssh->tx());
  if (unlogged && it->second.ftp)
    for (const auto& t : it->second.ftp->txs())
      if (!t->logged) unlogged(flow_id, it->second.key, it->second.client_lo, AppProto::ftp, *t);
  if (unlogged && it->second.ftp_data && !it->second.ftp_data->tx().logged) {
    FtpDataConn& d = *it->second.ftp_data;
    d.end(d.tx().data_dir);  // the flow's end ends the transfer
    unlogged(flow_id, it->second.key, it->second.client_lo, AppProto::ftp_data, d.tx());
  }
  if (unlogged && it->second.smtp)
    for (const auto& t : it->second.smtp->txs())
      if (!t->logged && t->has_mail()) {
        t->complete = true;  // the flow's end
        if (t->mime && !t->message_done) t->mime->end(true);
        unlogged(flow_id, it->second.key, it->second.client_lo, AppProto::smtp, *t);
      }
  flows_.erase(it);
}

void AppLayer::report(std::map<std::string, uint64_t>& r) const {
  r["app_flows"] = stats_.flows;
  r["app_flows_http"] = stats_.flows_http;
  r["app_flows_tls"] = stats_.flows_tls;
  r["app_flows_dns"] = stats_.flows_dns;
  r["app_flows_smtp"] = stats_.flows_smtp;
  r["app_flows_ftp"] = stats_.flows_ftp;
  r["app_flows_ssh"] = stats_.flows_ssh;
  r["app_flows_smb"] = stats_.flows_smb;
  r["app_flows_sip"] = stats_.flows_sip;
  r["app_flows_http2"] = stats_.flows_http2;
  r["app_connect_tunnels"] = stats_.connect_tunnels;
  r["http2_frames"] = stats_.http2.frames;
  r["http2_streams"] = stats_.http2.streams;
  r["http2_hpack_errors"] = stats_.http2.hpack_errors;
  r["http2_long_frames"] = stats_.http2.long_frames;
  r["http2_gaps"] = stats_.http2.gaps;
  r["http2_txs_dropped"] = stats_.http2.txs_dropped;
  r["http2_bad_preface"] = stats_.http2.bad_preface;
  r["http2_frames_not_kept"] = stats_.http2.frames_not_kept;
  r["sip_requests"] = stats_.sip.requests;
  r["sip_responses"] = stats_.sip.responses;
  r["sip_invalid"] = stats_.sip.invalid;
  r["sip_gaps"] = stats_.sip.gaps;
  r["sip_too_long"] = stats_.sip.too_long;
  r["sip_txs_dropped"] = stats_.sip.txs_dropped;
  r["sip_sdp_bodies"] = stats_.sip.sdp;
  r["ftp_requests"] = stats_.ftp.requests;
  r["ftp_data_flows"] = stats_.ftp_data.flows;
  r["ftp_data_expectations"] = stats_.ftp_data.expectations;
  r["ftp_data_expectations_pushed_out"] = stats_.ftp_data.expectations_pushed_out;
  r["ftp_data_expectations_refused"] = stats_.ftp_data.expectations_refused;
  r["ftp_data_bytes_other_way"] = stats_.ftp_data.bytes_other_way;
  r["ftp_data_files_truncated"] = stats_.ftp_data.files_truncated;
  r["ftp_unknown_commands"] = stats_.ftp.unknown_commands;
  r["ftp_replies"] = stats_.ftp.replies;
  r["ftp_lines_too_long"] = stats_.ftp.lines_too_long;
  r["ftp_gaps"] = stats_.ftp.gaps;
  r["ftp_txs_dropped"] = stats_.ftp.txs_dropped;
  r["ftp_replies_late"] = stats_.ftp.replies_late;
  r["ftp_txs_completed_unanswered"] = stats_.ftp.txs_completed_unanswered;
  const DnsStats& d = stats_.dns;
  r["dns_requests"] = d.requests;
  r["dns_responses"] = d.responses;
  r["dns_not_request"] = d.not_request;
  r["dns_header_invalid"] = d.header_invalid;
  r["dns_malformed"] = d.malformed;
  r["dns_gaps"] = d.gaps;
  r["dns_txs_dropped"] = d.txs_dropped;
  r["tls_updates"] = stats_.tls_updates;
  r["tls_malformed"] = stats_.tls_malformed;
  r["tls_certs"] = stats_.tls_certs;
  r["tls_certs_undecoded"] = stats_.tls_certs_undecoded;
  r["tls_raw_cut"] = stats_.tls_raw_cut;
  r["ssh_banners_bad"] = stats_.ssh_banners_bad;
  r["smtp_txs"] = stats_.smtp.txs;
  r["smtp_lines_too_long"] = stats_.smtp.lines_too_long;
  r["smtp_gaps"] = stats_.smtp.gaps;
  r["smtp_txs_dropped"] = stats_.smtp.txs_dropped;
  r["smtp_starttls"] = stats_.smtp.starttls;
  r["smtp_bdat_invalid"] = stats_.smtp.bdat_invalid;
  r["smtp_fields_dropped"] = stats_.smtp.fields_dropped;
  const MimeStats& mm = stats_.smtp.mime;
  r["smtp_files"] = mm.files;
  r["smtp_files_dropped"] = mm.files_dropped;
  r["smtp_file_bytes_not_kept"] = mm.bytes_not_kept;
  r["smtp_mime_invalid_base64"] = mm.invalid_base64;
  r["smtp_mime_invalid_qp"] = mm.invalid_qp;
  r["smtp_mime_headers_dropped"] = mm.headers_dropped;
  r["smtp_mime_boundaries_dropped"] = mm.boundaries_dropped;
  r["smtp_mime_urls"] = mm.urls;
  r["smtp_mime_urls_dropped"] = mm.urls_dropped;
  r["app_flows_failed"] = stats_.flows_failed;
  r["app_flows_full"] = stats_.flows_full;
  const HttpStats& h = stats_.http;
  r["http_txs"] = h.txs;
  r["http_requests"] = h.requests;
  r["http_responses"] = h.responses;
  r["http_gaps"] = h.gaps;
  r["http_lines_too_long"] = h.lines_too_long;
  r["http_bodies_truncated"] = h.bodies_truncated;
  r["http_decode_failures"] = h.decode_failures;
  r["http_txs_dropped"] = h.txs_dropped;
  r["http_files"] = h.files + h.form.files;
  r["http_files_truncated"] = h.files_truncated;
  r["http_form_files_dropped"] = h.form.files_dropped;
  r["http_form_file_bytes_not_kept"] = h.form.bytes_not_kept;
}

}  // namespace gaspp
