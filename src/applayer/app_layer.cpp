// applayer/app_layer.cpp — see app_layer.hpp.
#include "applayer/app_layer.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "flow/flow_record.hpp"

namespace gaspp {

namespace {
constexpr size_t kProbeBytes = 32;

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

// A TLS handshake record's start: 1, 0 not, -1 too few bytes.
int looks_like_tls(const std::string& s) {
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
}  // namespace

const char* app_proto_name(AppProto p) {
  switch (p) {
    case AppProto::http: return "http";
    case AppProto::tls: return "tls";
    case AppProto::dns: return "dns";
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

void AppLayer::detect(FlowApp& f, int dir, const uint8_t* p, size_t n) {
  std::string& pr = f.probe[dir];
  pr.append(reinterpret_cast<const char*>(p), std::min(n, kProbeBytes - std::min(kProbeBytes, pr.size())));
  if (f.key.port[0] == 53 || f.key.port[1] == 53) {
    // Suricata's DNS probe on its detection port (before the content patterns, as its probing
    // parsers run for the port).
    bool request = false;
    const int d = dns_probe_tcp(reinterpret_cast<const uint8_t*>(pr.data()), pr.size(), &request);
    if (d < 0 && pr.size() < kProbeBytes) return;
    if (d > 0) {
      f.reversed = (dir == 0) != request;
      f.proto = AppProto::dns;
      ++stats_.flows_dns;
      f.dns = std::make_unique<DnsConn>(stats_.dns, cfg_.http.max_txs);
      return;
    }
  }
  const int t = looks_like_tls(pr);
  if (t != 0) {
    if (t < 0) return;
    // A server that speaks first with a handshake is taken as the client's (turned around).
    f.reversed = dir == 1;
    f.proto = AppProto::tls;
    ++stats_.flows_tls;
    f.tls = std::make_unique<TlsConn>(&stats_.tls_certs_undecoded, &stats_.tls_raw_cut);
    return;
  }
  int r = dir == 0 ? looks_like_request(pr) : looks_like_response(pr);
  if (r == 0) {
    // The other role's start: a flow picked up the other way round (midstream, or its first
    // packet lost). The flow is turned around, as Suricata's protocol detection does.
    const int o = dir == 0 ? looks_like_response(pr) : looks_like_request(pr);
    if (o != 0) f.reversed = true;
    r = o;
  }
  if (r < 0) return;
  if (r == 0) {
    f.proto = AppProto::failed;
    ++stats_.flows_failed;
    f.probe[0].clear();
    f.probe[1].clear();
    return;
  }
  f.proto = AppProto::http;
  ++stats_.flows_http;
  f.http = std::make_unique<Http1Conn>(cfg_.http, stats_.http);
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
    if (it->second.dns) it->second.dns->release_done();
  }
  touched_.clear();
}

void AppLayer::datagram(const AppDatagram& d, const uint8_t* p, std::vector<AppUpdate>& out) {
  auto it = flows_.find(d.flow_id);
  if (it != flows_.end() && it->second.proto != AppProto::unknown && it->second.proto != AppProto::dns) return;
  FlowApp* fp = flow_for(d.flow_id);
  if (!fp) return;
  FlowApp& f = *fp;
  const int wire_dir = d.to_client ? 1 : 0;
  f.key = d.key;
  if (f.proto == AppProto::unknown) {
    bool request = false;
    if (dns_probe(p, d.len, d.len, &request) <= 0) {
      f.udp_failed[wire_dir] = true;
      if (f.udp_failed[0] && f.udp_failed[1]) {
        f.proto = AppProto::failed;
        ++stats_.flows_failed;
        decided(f, d.packet);
      }
      return;
    }
    f.reversed = (wire_dir == 0) != request;  // requests go to the server
    f.proto = AppProto::dns;
    ++stats_.flows_dns;
    f.dns = std::make_unique<DnsConn>(stats_.dns, cfg_.http.max_txs);
  }
  decided(f, d.packet);
  const int dir = wire_dir ^ (f.reversed ? 1 : 0);
  // The sender is the client when the datagram goes to the server.
  f.client_lo = d.from_lo == (dir == 0);
  f.dns->feed_datagram(dir, p, d.len);
  for (DnsTx* t : f.dns->touched())
    out.push_back(AppUpdate{d.flow_id, d.packet, uint8_t(t->request ? 0 : 1), uint8_t(f.client_lo), d.key,
                            AppProto::dns, t});
  f.dns->clear_touched();
}

void AppLayer::process(const std::vector<StreamChunk>& chunks, const std::vector<uint8_t>& bytes,
                       std::vector<AppUpdate>& out, const std::vector<AppDatagram>& datagrams,
                       const std::vector<uint8_t>& dgram_bytes) {
  release_touched();
  ++batch_;
  for (const AppDatagram& d : datagrams) datagram(d, dgram_bytes.data() + d.data, out);
  // Chunks come grouped by flow and direction; a flow's two directions are interleaved again in
  // the order their packets arrived (stream order within a direction is kept: a later piece of a
  // direction never comes with an earlier packet).
  std::vector<uint32_t> order(chunks.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const StreamChunk &x = chunks[a], &y = chunks[b];
    if (x.flow_id != y.flow_id) return x.flow_id < y.flow_id;
    return x.packet < y.packet;  // kNoFlow (no packet: released at the end) last
  });
  for (uint32_t ci : order) {
    const StreamChunk& c = chunks[ci];
    if (c.len == 0 && !flows_.count(c.flow_id)) continue;
    FlowApp* fp = flow_for(c.flow_id);
    if (!fp) continue;
    FlowApp& f = *fp;
    f.key = c.key;
    const int wire_dir = c.dir ? 1 : 0;
    const uint8_t* p = bytes.data() + c.data;
    const bool conflict = c.flags & kChunkConflict;
    if (f.proto == AppProto::unknown && c.len && !conflict) {
      const int dir = wire_dir;
      if (c.gap || c.off > f.probe[dir].size()) {
        // Picked up past the start of a direction: its first bytes are not known.
        f.proto = AppProto::failed;
        ++stats_.flows_failed;
      } else {
        const size_t had = f.probe[dir].size();
        detect(f, dir, p, c.len);
        // Feed what detection held to the parser, the other direction's first (in the parser's
        // roles), then this chunk.
        const auto feed_held = [&](auto& conn) {
          const int o = 1 - dir;
          const int r = f.reversed ? 1 : 0;
          if (!f.probe[o].empty()) conn.feed(o ^ r, reinterpret_cast<const uint8_t*>(f.probe[o].data()), f.probe[o].size());
          conn.feed(dir ^ r, reinterpret_cast<const uint8_t*>(f.probe[dir].data()), had);
          f.probe[0].clear();
          f.probe[1].clear();
          conn.feed(dir ^ r, p, c.len);
        };
        if (f.proto == AppProto::tls) feed_held(*f.tls);
        if (f.proto == AppProto::http) feed_held(*f.http);
        if (f.proto == AppProto::dns) feed_held(*f.dns);
      }
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
    } else if (f.proto == AppProto::dns && f.dns) {
      const int dir = wire_dir ^ (f.reversed ? 1 : 0);
      if (c.len && !conflict) f.dns->feed(dir, p, c.len, c.gap != 0);
      else if (conflict) f.dns->feed(dir, nullptr, 0, true);
    }
    decided(f, c.packet);
    // The parser's roles: a turned-around flow's client is the key's other endpoint.
    const int dir = wire_dir ^ (f.reversed ? 1 : 0);
    const uint8_t client_lo = uint8_t(((c.flags & kChunkClientLo) ? 1 : 0) ^ (f.reversed ? 1 : 0));
    f.key = c.key;
    f.client_lo = client_lo != 0;
    if (c.flags & kChunkEnd) {
      if (f.http) f.http->end(dir);
      f.ended[wire_dir] = true;  // the state stays until the flow leaves the table (forget)
    }
    if (f.http) {
      for (HttpTx* t : f.http->touched())
        out.push_back(AppUpdate{c.flow_id, c.packet, uint8_t(dir), client_lo, c.key, AppProto::http, t});
      f.http->clear_touched();
    }
    if (f.dns) {
      for (DnsTx* t : f.dns->touched())
        out.push_back(AppUpdate{c.flow_id, c.packet, uint8_t(t->request ? 0 : 1), client_lo, c.key, AppProto::dns, t});
      f.dns->clear_touched();
    }
    if (f.tls && f.tls->changed()) {
      stats_.tls_updates++;
      if (f.tls->tx().certificate && !f.tls_cert_counted) {
        f.tls_cert_counted = true;
        ++stats_.tls_certs;
      }
      out.push_back(AppUpdate{c.flow_id, c.packet, uint8_t(dir), client_lo, c.key, AppProto::tls, &f.tls->tx()});
      f.tls->clear_changed();
    }
  }
}

void AppLayer::forget(const std::vector<FlowRecordOut>& flows, const Unlogged& unlogged) {
  gone_.clear();
  for (const FlowRecordOut& r : flows) {
    const auto it = flows_.find(r.rec.flow_id);
    if (it == flows_.end()) continue;
    // Still undecided at the flow's end (too few bytes to tell): detection failed.
    gone_[r.rec.flow_id] = it->second.proto == AppProto::unknown ? AppProto::failed : it->second.proto;
    if (unlogged && it->second.http)
      for (const auto& t : it->second.http->txs())
        if (!t->logged && t->req_line) unlogged(r.rec.flow_id, it->second.key, it->second.client_lo, AppProto::http, *t);
    if (unlogged && it->second.tls && !it->second.tls->tx().logged && it->second.tls->tx().client_hello)
      unlogged(r.rec.flow_id, it->second.key, it->second.client_lo, AppProto::tls, it->second.tls->tx());
    flows_.erase(it);
  }
}

void AppLayer::report(std::map<std::string, uint64_t>& r) const {
  r["app_flows"] = stats_.flows;
  r["app_flows_http"] = stats_.flows_http;
  r["app_flows_tls"] = stats_.flows_tls;
  r["app_flows_dns"] = stats_.flows_dns;
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
}

}  // namespace gaspp
