// core/app_eve.cpp — see app_eve.hpp.
#include "core/app_eve.hpp"

#include <cctype>

#include "core/eve_event.hpp"

namespace gaspp {

namespace {
std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
void str(std::string& j, const char* name, const std::string& v) {
  j += std::string(j.back() == '{' ? "" : ",") + "\"" + name + "\":\"" + json_escape(v) + "\"";
}
}  // namespace

std::string eve_http_object(const HttpTx& t) {
  std::string j = "\"http\":{";
  int port = -1;
  const std::string host = t.hostname(&port);
  if (!host.empty()) str(j, "hostname", host);
  if (port >= 0 && port <= 65535) j += std::string(j.back() == '{' ? "" : ",") + "\"http_port\":" + std::to_string(port);
  if (t.req_line) str(j, "url", t.uri_raw);
  if (t.has_req_header("User-Agent")) str(j, "http_user_agent", t.req_header("User-Agent"));
  std::string ct = t.resp_header("Content-Type");
  if (!ct.empty()) {
    const size_t semi = ct.find(';');
    if (semi != std::string::npos) ct = ct.substr(0, semi);
    while (!ct.empty() && (ct.back() == ' ' || ct.back() == '\t')) ct.pop_back();
    str(j, "http_content_type", lower(ct));
  }
  if (t.has_req_header("Referer")) str(j, "http_refer", t.req_header("Referer"));
  if (!t.method.empty()) str(j, "http_method", t.method);
  if (!t.protocol.empty()) str(j, "protocol", t.protocol);
  else if (!t.resp_protocol.empty()) str(j, "protocol", t.resp_protocol);
  if (t.stat_code.size() == 3 && std::isdigit(static_cast<unsigned char>(t.stat_code[0])) &&
      std::isdigit(static_cast<unsigned char>(t.stat_code[1])) && std::isdigit(static_cast<unsigned char>(t.stat_code[2])))
    j += std::string(j.back() == '{' ? "" : ",") + "\"status\":" + std::to_string(std::stoi(t.stat_code));
  const std::string loc = t.resp_header("Location");
  if (!loc.empty()) str(j, "redirect", loc);
  j += std::string(j.back() == '{' ? "" : ",") + "\"length\":" + std::to_string(t.response_body_len);
  return j + "}";
}

namespace {
// The head every transaction event shares: time, flow, the packet, the type, client to server.
std::string app_event_head(uint64_t ts_ns, uint64_t flow_id, uint64_t pcap_cnt, const char* type, const FlowKey& key,
                           bool client_lo) {
  std::string j = "{\"timestamp\":\"" + eve_timestamp(ts_ns) + "\",\"flow_id\":" + std::to_string(flow_id);
  if (pcap_cnt) j += ",\"pcap_cnt\":" + std::to_string(pcap_cnt);
  j += std::string(",\"event_type\":\"") + type + "\"" + flow_endpoints_json(key, client_lo ? 0 : 1);
  return j + ",\"pkt_src\":\"wire/pcap\"";
}
}  // namespace

std::string eve_http_event(uint64_t ts_ns, uint64_t flow_id, uint64_t pcap_cnt, const FlowKey& key, bool client_lo,
                           const HttpTx& t) {
  return app_event_head(ts_ns, flow_id, pcap_cnt, "http", key, client_lo) + ",\"tx_id\":" + std::to_string(t.id) + "," +
         eve_http_object(t) + "}";
}

std::string eve_tls_object(const TlsTx& t) {
  std::string j = "\"tls\":{";
  if (!t.sni.empty()) str(j, "sni", t.sni);
  const uint16_t v = t.server_hello ? t.server_version : t.client_version;
  str(j, "version", tls_version_name(v));
  return j + "}";
}

std::string eve_tls_event(uint64_t ts_ns, uint64_t flow_id, uint64_t pcap_cnt, const FlowKey& key, bool client_lo,
                          const TlsTx& t) {
  return app_event_head(ts_ns, flow_id, pcap_cnt, "tls", key, client_lo) + "," + eve_tls_object(t) + "}";
}

}  // namespace gaspp
