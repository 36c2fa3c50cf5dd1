// core/config.cpp — see config.hpp.
#include "core/config.hpp"

#include "applayer/mime.hpp"
#include "applayer/smtp.hpp"
#include "modules/firewall/rules.hpp"

#include <yaml-cpp/yaml.h>

#include <strings.h>

#include <cctype>
#include <stdexcept>

namespace gaspp {
namespace {

FileConfig read_config(const std::string& path, const YAML::Node& root);

[[noreturn]] void fail(const std::string& path, const YAML::Node& n, const std::string& why) {
  const YAML::Mark m = n.Mark();
  throw std::runtime_error(path + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1) + ": " + why);
}

std::string scalar(const std::string& path, const YAML::Node& n, const std::string& key) {
  if (!n.IsScalar()) fail(path, n, key + ": expected a value");
  return n.as<std::string>();
}

uint64_t number(const std::string& path, const YAML::Node& n, const std::string& key, uint64_t max) {
  const std::string s = scalar(path, n, key);
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 0);
  if (s.empty() || *end || s[0] == '-' || v > max) fail(path, n, key + ": expected 0.." + std::to_string(max) + ", got '" + s + "'");
  return v;
}

// A module option: a scalar, or a list of scalars (joined by commas, as rule file lists are).
std::string option_text(const std::string& path, const YAML::Node& n, const std::string& key) {
  if (n.IsScalar()) return n.as<std::string>();
  if (!n.IsSequence()) fail(path, n, key + ": expected a value or a list of values");
  std::string s;
  for (const auto& x : n) s += (s.empty() ? "" : ",") + scalar(path, x, key);
  return s;
}

// Top-level sections of Suricata's suricata.yaml that gaspp reads nothing from (yet).
constexpr const char* kSuricataSections[] = {
    "suricata-version", "default-log-dir", "stats", "plugins", "heartbeat", "logging", "af-packet",
    "af-xdp", "dpdk", "pcap", "pcap-file", "security", "coredump", "host-mode",
    "unix-command", "legacy", "engine-analysis", "pcre", "host-os-policy",
    "livedev", "host", "decoder", "detect", "mpm-algo", "spm-algo", "threading", "profiling",
    "nfq", "nflog", "capture", "netmap", "pfring", "ipfw", "napatech", "default-rule-path", "rule-files",
    "classification-file", "reference-config-file", "firewall", "include", "run-as", "max-pending-packets",
    "runmode", "autofp-scheduler", "sensor-name", "pid-file", "asn1-max-frames", "mqtt", "magic",
    "geoip-database", "ja3-fingerprints", "ja4-fingerprints", "iprep", "lua", "luajit", "app-layer-protocols"};

// An exception policy value (Suricata's names).
std::string exception_policy(const std::string& path, const YAML::Node& n, const std::string& key) {
  const std::string t = scalar(path, n, key);
  for (const char* ok : {"auto", "drop-packet", "drop-flow", "pass-packet", "pass-flow", "bypass", "reject", "rejectboth", "ignore"})
    if (t == ok) return t;
  fail(path, n, key + ": auto, drop-packet, drop-flow, pass-packet, pass-flow, bypass, reject, rejectboth or ignore, not '" + t + "'");
}

// suricata.yaml's flow section: memcap-policy is read; the rest (memcap, hash-size, prealloc,
// emergency-recovery, ...: gaspp sizes its table with --flow-capacity) is listed as ignored.
void flow_section(const std::string& path, const YAML::Node& v, FileConfig& c) {
  if (v.IsNull()) return;
  if (!v.IsMap()) fail(path, v, "flow: expected a map");
  bool other = false;
  for (const auto& kv : v) {
    if (kv.first.as<std::string>() == "memcap-policy") c.flow_memcap_policy = exception_policy(path, kv.second, "flow.memcap-policy");
    else other = true;
  }
  if (other) c.ignored.push_back("flow (all but memcap-policy)");
}

// A size as suricata.yaml writes it: a number of bytes, then optionally (after spaces) kb, mb, gb
// or KiB, MiB, GiB, any case, all 1024-based as Suricata reads them.
uint64_t size_value(const std::string& path, const YAML::Node& n, const std::string& key) {
  std::string s = scalar(path, n, key);
  for (auto& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  uint64_t mult = 1;
  for (const auto& [suffix, m] : {std::pair<std::string, uint64_t>{"kib", 1ull << 10}, {"mib", 1ull << 20}, {"gib", 1ull << 30},
                                  {"kb", 1ull << 10}, {"mb", 1ull << 20}, {"gb", 1ull << 30}})
    if (s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0) {
      mult = m;
      s.resize(s.size() - suffix.size());
      break;
    }
  while (!s.empty() && s.back() == ' ') s.pop_back();
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (s.empty() || *end || s[0] == '-' || s[0] == ' ' || v > (1ull << 40) / mult)
    fail(path, n, key + ": expected a size such as 33554432, 32mb or 32 MiB (at most 1 TiB)");
  return v * mult;
}

// A yes/no switch as suricata.yaml writes them (yes/no, true/false, on/off, 1/0).
bool yes_no(const std::string& path, const YAML::Node& n, const std::string& key) {
  const std::string t = scalar(path, n, key);
  if (t == "yes" || t == "true" || t == "on" || t == "1") return true;
  if (t == "no" || t == "false" || t == "off" || t == "0") return false;
  fail(path, n, key + ": yes or no, not '" + t + "'");
  return false;
}

// app-layer: the HTTP parser's limits from protocols.http.libhtp.default-config and
// protocols.tls.ja3-fingerprints and smtp.mime.body-md5 (given to the rules' parsers: `requires:
// feature ja3`, the email.body_md5 keyword), protocols.ftp.max-tx; the rest is listed as ignored.
void app_layer_section(const std::string& path, const YAML::Node& v, FileConfig& c) {
  // Walked with const nodes: a missing level must not create (or invalidate) anything.
  const auto child = [](const YAML::Node& n, const char* k) -> YAML::Node {
    if (!n || !n.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
    const YAML::Node c = n[k];
    return c ? c : YAML::Node(YAML::NodeType::Undefined);
  };
  const YAML::Node protocols = child(v, "protocols");
  const YAML::Node d = child(child(child(protocols, "http"), "libhtp"), "default-config");
  bool other = false;
  if (d && d.IsMap()) {
    for (const auto& kv : d) {
      const std::string k = kv.first.as<std::string>();
      // A body limit of 0 is Suricata's "unlimited", where its stream reassembly depth (1 MiB by
      // default) still bounds what a body can hold; gaspp has no stream depth, so that bound is the
      // limit here (bodies_truncated counts what it cuts).
      constexpr uint64_t kUnlimitedBody = 1 << 20;
      const auto body_limit = [&](const std::string& key) {
        const uint64_t n = size_value(path, kv.second, key);
        return uint32_t(std::min<uint64_t>(n == 0 ? kUnlimitedBody : n, 0xffffffffu));
      };
      if (k == "request-body-limit") c.http_request_body_limit = body_limit(k);
      else if (k == "response-body-limit") c.http_response_body_limit = body_limit(k);
      else if (k == "response-body-decompress-layer-limit") c.http_decompress_layer_limit = uint32_t(std::min<uint64_t>(size_value(path, kv.second, k), 0xffffffffu));
      else if (k == "lzma-enabled") c.http_lzma_enabled = yes_no(path, kv.second, k);
      else if (k == "lzma-memlimit") c.http_lzma_memlimit = size_value(path, kv.second, k);
      else if (k == "request-body-minimal-inspect-size" || k == "request-body-inspect-window" ||
               k == "response-body-minimal-inspect-size" || k == "response-body-inspect-window") {
        const uint64_t n = size_value(path, kv.second, k);
        // Suricata keeps these in 32 bits; a window of 0 would inspect nothing old before new data.
        if (n == 0 || n > 0xffffffffu) fail(path, kv.second, k + " must be 1 byte .. 4 GiB");
        std::optional<uint32_t>& to = k == "request-body-minimal-inspect-size" ? c.http_request_inspect_min
                                      : k == "request-body-inspect-window"     ? c.http_request_inspect_window
                                      : k == "response-body-minimal-inspect-size" ? c.http_response_inspect_min
                                                                                  : c.http_response_inspect_window;
        to = uint32_t(n);
      } else if (k == "http-body-inline") {
        const std::string t = scalar(path, kv.second, k);
        c.http_body_inline = t == "auto" ? "auto" : yes_no(path, kv.second, k) ? "yes" : "no";
      } else other = true;
    }
  }
  // smtp.mime.body-md5: no turns email.body_md5 off (yes, auto: computed when a rule asks).
  const YAML::Node md5 = child(child(child(protocols, "smtp"), "mime"), "body-md5");
  if (md5) {
    const std::string t = scalar(path, md5, "app-layer.protocols.smtp.mime.body-md5");
    c.vars["smtp-body-md5"] = t == "auto" ? "auto" : yes_no(path, md5, "app-layer.protocols.smtp.mime.body-md5") ? "yes" : "no";
  }
  // Detection ports: PROTO.detection-ports.dp for every transport, PROTO.udp/.tcp.detection-ports.dp
  // for one (the more specific wins, as Suricata looks it up first).
  const auto ports = [&](const char* proto, const char* transport, std::optional<PortRanges>& out) {
    for (const YAML::Node& base : {child(child(protocols, proto), transport), child(protocols, proto)}) {
      const YAML::Node dp = child(child(base, "detection-ports"), "dp");
      if (!dp) continue;
      const std::string key = std::string("app-layer.protocols.") + proto + ".detection-ports.dp";
      const std::string text = dp.IsSequence() ? [&] {
        std::string t;
        for (const auto& e : dp) t += (t.empty() ? "" : ",") + scalar(path, e, key);
        return t;
      }()
                                               : scalar(path, dp, key);
      PortRanges r;
      const std::string why = parse_port_ranges(text, r);
      if (!why.empty()) fail(path, dp, key + ": " + why);
      out = r;
      return;
    }
  };
  ports("dns", "udp", c.dns_udp_ports);
  ports("dns", "tcp", c.dns_tcp_ports);
  ports("sip", "udp", c.sip_udp_ports);
  const YAML::Node ftp_max = child(child(protocols, "ftp"), "max-tx");
  if (ftp_max) {
    const uint64_t n = size_value(path, ftp_max, "app-layer.protocols.ftp.max-tx");
    if (n == 0 || n > 0xffffffffu) fail(path, ftp_max, "app-layer.protocols.ftp.max-tx: 1 to 4294967295");
    c.ftp_max_tx = uint32_t(n);
  }
  // ssh.hassh: yes logs HASSH in EVE ssh events (Suricata's default, and auto, leave it to rules
  // that read it).
  const YAML::Node hassh = child(child(protocols, "ssh"), "hassh");
  if (hassh) {
    const std::string t = scalar(path, hassh, "app-layer.protocols.ssh.hassh");
    c.ssh_hassh = t != "auto" && yes_no(path, hassh, "app-layer.protocols.ssh.hassh");
  }
  const YAML::Node ja3 = child(child(protocols, "tls"), "ja3-fingerprints");
  if (ja3) {
    const std::string t = scalar(path, ja3, "app-layer.protocols.tls.ja3-fingerprints");
    if (t == "auto") c.vars["ja3-fingerprints"] = "auto";
    else c.vars["ja3-fingerprints"] = yes_no(path, ja3, "app-layer.protocols.tls.ja3-fingerprints") ? "yes" : "no";
  }
  if (other || !d || !v.IsMap() || v.size() > 1 || !protocols || protocols.size() > 1)
    c.ignored.push_back("app-layer (all but the HTTP body and decompression limits, body inspection sizes, http-body-inline, lzma, tls.ja3-fingerprints, smtp.mime.body-md5, "
                        "ftp.max-tx, ssh.hassh and the DNS and SIP detection ports)");
}

// suricata.yaml's defrag section (defrag/defrag.hpp): memcap, trackers, max-frags and timeout are
// read, and gaspp's own `policy` (an overlap policy or host-os-policy name) and `enabled`;
// hash-size, prealloc and memcap-policy are listed as ignored.
void defrag_section(const std::string& path, const YAML::Node& v, FileConfig& c) {
  DefragConfig d = c.defrag.value_or(DefragConfig{});
  if (!v.IsNull() && !v.IsMap()) fail(path, v, "defrag: expected a map");
  bool other = false;
  if (v.IsMap())
    for (const auto& kv : v) {
      const std::string k = kv.first.as<std::string>();
      const YAML::Node& x = kv.second;
      if (k == "memcap") d.memcap = size_value(path, x, "defrag.memcap");
      // 0: the default, as in Suricata.
      else if (k == "trackers") d.trackers = uint32_t(number(path, x, "defrag.trackers", 1u << 24)) ?: DefragConfig{}.trackers;
      else if (k == "max-frags") d.max_frags = uint32_t(number(path, x, "defrag.max-frags", 1u << 24)) ?: DefragConfig{}.max_frags;
      else if (k == "timeout") {
        d.timeout_s = uint32_t(number(path, x, "defrag.timeout", 86400));  // Suricata's bounds: 1 s .. 24 h
        if (d.timeout_s == 0) fail(path, x, "defrag.timeout: expected 1..86400 seconds");
      } else if (k == "policy") {
        if (!parse_defrag_policy(scalar(path, x, "defrag.policy"), d.policy))
          fail(path, x, "defrag.policy: bsd, bsd-right, linux, old-linux, windows, windows2k3, vista, solaris, old-solaris, "
                        "macos, hpux10, hpux11, irix, first or last");
      } else if (k == "enabled") {
        const std::string t = scalar(path, x, "defrag.enabled");
        if (t == "yes" || t == "true" || t == "on") d.enabled = true;
        else if (t == "no" || t == "false" || t == "off") d.enabled = false;
        else fail(path, x, "defrag.enabled: yes or no");
      } else other = true;
    }
  if (other) c.ignored.push_back("defrag (hash-size, prealloc, memcap-policy and other keys)");
  c.defrag = d;
}

// suricata.yaml's stream section: reassembly.urgent.{policy, oob-limit-policy} are read; anything
// else in it is listed as ignored.
void stream_section(const std::string& path, const YAML::Node& v, FileConfig& c) {
  if (v.IsNull()) return;
  if (!v.IsMap()) fail(path, v, "stream: expected a map");
  const auto policy = [&](const YAML::Node& n, const std::string& key, bool oob_allowed) {
    const std::string t = scalar(path, n, key);
    if (t == "inline") return UrgentPolicy::inline_;
    if (t == "gap") return UrgentPolicy::gap;
    if (t == "drop") return UrgentPolicy::drop;
    if (t == "oob" && oob_allowed) return UrgentPolicy::oob;
    fail(path, n, key + (oob_allowed ? ": inline, oob, gap or drop" : ": inline, gap or drop") + ", not '" + t + "'");
    return UrgentPolicy::inline_;
  };
  bool other = false;
  for (const auto& kv : v) {
    const std::string k = kv.first.as<std::string>();
    if (k != "reassembly" || !kv.second.IsMap()) {
      other = true;
      continue;
    }
    for (const auto& r : kv.second) {
      const std::string rk = r.first.as<std::string>();
      if (rk != "urgent") {
        other = true;
        continue;
      }
      if (!r.second.IsMap()) fail(path, r.second, "stream.reassembly.urgent: expected policy and oob-limit-policy");
      for (const auto& u : r.second) {
        const std::string uk = u.first.as<std::string>();
        if (uk == "policy") c.urgent = policy(u.second, "stream.reassembly.urgent.policy", true);
        else if (uk == "oob-limit-policy") c.urgent_oob_limit = policy(u.second, "stream.reassembly.urgent.oob-limit-policy", false);
        else fail(path, u.first, "stream.reassembly.urgent: policy or oob-limit-policy, not '" + uk + "'");
      }
    }
  }
  if (other) c.ignored.push_back("stream (all but reassembly.urgent)");
}

// eve-log alert xff (Suricata's HttpXFFGetCfg): off unless enabled; mode overwrite or extra-data,
// deployment forward or reverse, the header X-Forwarded-For unless named. Suricata falls back to
// extra-data and reverse on other values with a warning: so does this.
void xff_config(const std::string& path, const YAML::Node& n, FileConfig& c) {
  const std::string key = "outputs.eve-log.types.alert.xff";
  if (!n.IsMap()) fail(path, n, key + ": expected a map (enabled, mode, deployment, header)");
  if (!n["enabled"] || !yes_no(path, n["enabled"], key + ".enabled")) return;
  const auto text = [&](const char* k) { return n[k] ? scalar(path, n[k], key + "." + k) : std::string(); };
  std::string mode = text("mode"), deployment = text("deployment"), header = text("header");
  if (strcasecmp(mode.c_str(), "overwrite") != 0 && strcasecmp(mode.c_str(), "extra-data") != 0) {
    c.warnings.push_back(path + ": " + key + ".mode '" + mode + "' is not overwrite or extra-data: extra-data");
    mode = "extra-data";
  }
  if (strcasecmp(deployment.c_str(), "forward") != 0 && strcasecmp(deployment.c_str(), "reverse") != 0) {
    c.warnings.push_back(path + ": " + key + ".deployment '" + deployment + "' is not forward or reverse: reverse");
    deployment = "reverse";
  }
  for (std::string* s : {&mode, &deployment})
    for (char& ch : *s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  c.eve_xff = {{"xff", mode}, {"xff-deployment", deployment}, {"xff-header", header.empty() ? "X-Forwarded-For" : header}};
}

// eve-log alert `metadata` (Suricata's JsonAlertLogSetupMetadata): false leaves out the flow
// object, the application-layer object and the rule's metadata; a map sets each of them (flow,
// app-layer, rule: {metadata, raw}). Written as the modules' options metadata.flow, ...
void alert_metadata(const std::string& path, const YAML::Node& n, std::map<std::string, std::string>& out) {
  const std::string where = "outputs.eve-log.types.alert.metadata";
  if (n.IsNull()) return;
  if (n.IsScalar()) {
    const std::string v = yes_no(path, n, where) ? "on" : "off";
    for (const char* k : {"metadata.flow", "metadata.app-layer", "metadata.rule.metadata"}) out[k] = v;
    return;
  }
  if (!n.IsMap()) fail(path, n, where + ": yes, no, or a map of flow, app-layer and rule");
  for (const auto& kv : n) {
    const std::string k = kv.first.as<std::string>();
    if (k == "flow" || k == "app-layer") {
      out["metadata." + k] = yes_no(path, kv.second, where + "." + k) ? "on" : "off";
    } else if (k == "rule") {
      if (kv.second.IsNull()) continue;
      if (!kv.second.IsMap()) fail(path, kv.second, where + ".rule: a map of metadata, raw and reference");
      for (const auto& r : kv.second) {
        const std::string rk = r.first.as<std::string>();
        if (rk == "metadata" || rk == "raw") out["metadata.rule." + rk] = yes_no(path, r.second, where + ".rule." + rk) ? "on" : "off";
        else if (rk != "reference") fail(path, r.first, where + ".rule: metadata, raw or reference, not '" + rk + "'");
        // reference (the rule's references, which need reference.config): not written; listed as ignored.
      }
    } else {
      fail(path, kv.first, where + ": flow, app-layer or rule, not '" + k + "'");
    }
  }
}

// suricata.yaml's outputs: of the eve-log outputs, ethernet, the alert type's payload, packet and verdict
// switches (yes/no, true/false), the files type's force-hash list and the smtp type's md5 list are
// read; everything else in the section is listed as ignored.
void outputs_section(const std::string& path, const YAML::Node& v, FileConfig& c) {
  if (!v.IsSequence()) fail(path, v, "outputs: expected a list of outputs");
  const auto yes = [&](const YAML::Node& n, const std::string& key) { return yes_no(path, n, key); };
  for (const auto& out : v) {
    if (!out.IsMap()) continue;
    for (const auto& kv : out) {
      if (kv.first.as<std::string>() != "eve-log" || !kv.second.IsMap() || !kv.second["types"]) continue;
      const YAML::Node en = kv.second["enabled"];
      if (en && en.IsScalar() && !yes(en, "outputs.eve-log.enabled")) continue;
      if (kv.second["ethernet"]) c.eve_ethernet = yes(kv.second["ethernet"], "outputs.eve-log.ethernet");
      if (kv.second["metadata"] && kv.second["metadata"].IsScalar())
        c.eve_metadata = yes(kv.second["metadata"], "outputs.eve-log.metadata");
      if (kv.second["ipv6-compress"])
        c.eve_ipv6_compress = yes(kv.second["ipv6-compress"], "outputs.eve-log.ipv6-compress");
      const YAML::Node types = kv.second["types"];
      if (!types.IsSequence()) continue;
      for (const auto& t : types) {
        if (t.IsMap() && t["files"] && t["files"].IsMap() && t["files"]["force-hash"]) {
          const YAML::Node fh = t["files"]["force-hash"];
          if (!fh.IsSequence()) fail(path, fh, "outputs.eve-log.types.files.force-hash: a list of md5, sha1, sha256");
          uint8_t bits = 0;
          for (const auto& h : fh) {
            const uint8_t bit = h.IsScalar() ? file_hash_bit(h.as<std::string>()) : 0;
            if (!bit) fail(path, h, "outputs.eve-log.types.files.force-hash: md5, sha1 or sha256");
            bits |= bit;
          }
          c.file_hashes = bits;
        }
        if (t.IsMap() && t["smtp"] && t["smtp"].IsMap() && t["smtp"]["md5"]) {
          // The email object's body_md5 and subject_md5 (Suricata's eve-log smtp md5 list).
          const YAML::Node md5 = t["smtp"]["md5"];
          if (!md5.IsSequence()) fail(path, md5, "outputs.eve-log.types.smtp.md5: a list of body, subject");
          uint8_t bits = 0;
          for (const auto& h : md5) {
            const std::string v = h.IsScalar() ? h.as<std::string>() : "";
            if (v != "body" && v != "subject") fail(path, h, "outputs.eve-log.types.smtp.md5: body or subject");
            bits |= v == "body" ? kMailMd5Body : kMailMd5Subject;
          }
          c.mail_md5_log = bits;
        }
        if (t.IsMap() && t["anomaly"] && t["anomaly"].IsMap()) {
          // Suricata's anomaly log: on unless enabled: no; its decode type off unless types: decode:
          // yes, its applayer type on unless types: applayer: no.
          const YAML::Node a = t["anomaly"];
          const bool on = !a["enabled"] || yes(a["enabled"], "outputs.eve-log.types.anomaly.enabled");
          const YAML::Node ty = a["types"];
          const bool types = ty && ty.IsMap();
          c.eve_anomaly_decode = on && types && ty["decode"] && yes(ty["decode"], "outputs.eve-log.types.anomaly.types.decode");
          c.eve_anomaly_applayer =
              on && (!types || !ty["applayer"] || yes(ty["applayer"], "outputs.eve-log.types.anomaly.types.applayer"));
        }
        if (!t.IsMap() || !t["alert"] || !t["alert"].IsMap()) continue;
        for (const auto& o : t["alert"]) {
          const std::string k = o.first.as<std::string>();
          if (k == "payload") c.eve_payload = yes(o.second, "outputs.eve-log.types.alert.payload");
          else if (k == "packet") c.eve_packet = yes(o.second, "outputs.eve-log.types.alert.packet");
          else if (k == "verdict") c.eve_verdict = yes(o.second, "outputs.eve-log.types.alert.verdict");
          else if (k == "tagged-packets") c.eve_tagged_packets = yes(o.second, "outputs.eve-log.types.alert.tagged-packets");
          else if (k == "metadata") alert_metadata(path, o.second, c.eve_alert_metadata);
          else if (k == "xff") xff_config(path, o.second, c);
        }
      }
    }
  }
  c.ignored.push_back("outputs (all but eve-log's ethernet, metadata, ipv6-compress, alert payload, packet, verdict, tagged-packets, metadata and xff, anomaly decode, files force-hash and smtp md5)");
}

bool is_suricata_section(const std::string& key) {
  for (const char* k : kSuricataSections)
    if (key == k) return true;
  return false;
}

// suricata.yaml's flow-timeouts: per protocol (tcp, udp, icmp, default) new / established /
// closed and their emergency- variants, in seconds. Keys left out keep Suricata's defaults;
// bypassed and emergency-bypassed are accepted and unused (gaspp has no flow bypass).
FlowTimeouts flow_timeouts(const std::string& path, const YAML::Node& v) {
  FlowTimeouts t;
  if (!v.IsMap()) fail(path, v, "flow-timeouts: expected tcp, udp, icmp and default sections");
  for (const auto& proto : v) {
    const std::string name = proto.first.as<std::string>();
    const int row = name == "tcp" ? int(FlowProto::tcp) : name == "udp" ? int(FlowProto::udp)
                    : name == "icmp" ? int(FlowProto::icmp) : name == "default" ? int(FlowProto::other) : -1;
    if (row < 0) fail(path, proto.first, "flow-timeouts: tcp, udp, icmp or default, not '" + name + "'");
    if (!proto.second.IsMap()) fail(path, proto.second, "flow-timeouts." + name + ": expected new, established, ...");
    for (const auto& kv : proto.second) {
      const std::string key = kv.first.as<std::string>();
      const bool emergency = key.rfind("emergency-", 0) == 0;
      const std::string state = emergency ? key.substr(10) : key;
      const int col = state == "new" ? 0 : state == "established" ? 1 : state == "closed" ? 2 : state == "bypassed" ? 3 : -1;
      if (col < 0)
        fail(path, kv.first, "flow-timeouts." + name + ": new, established, closed, bypassed or their emergency- forms, not '" + key + "'");
      const uint32_t secs = uint32_t(number(path, kv.second, "flow-timeouts." + name + "." + key, 0xffffffffull));
      if (col == 3) continue;
      (emergency ? t.emergency : t.normal)[row][col] = secs;
    }
  }
  return t;
}

// Suricata's --set: "a.b.c=value" sets root[a][b][c], making maps on the way; a number indexes a
// list, and a list it goes past, or one that does not exist yet, grows to it with empty entries (as
// Suricata's ConfSet makes the node "1" of `outputs.1.eve-log...` on a configuration without one).
void apply_set(YAML::Node root, const std::string& set) {
  const size_t eq = set.find('=');
  if (eq == std::string::npos || eq == 0) throw std::runtime_error("--set: expected KEY=VALUE, got '" + set + "'");
  const std::string path = set.substr(0, eq), value = set.substr(eq + 1);
  std::vector<std::string> keys;
  for (size_t at = 0; at <= path.size();) {
    const size_t dot = std::min(path.find('.', at), path.size());
    if (dot == at) throw std::runtime_error("--set: empty key in '" + path + "'");
    keys.push_back(path.substr(at, dot - at));
    at = dot + 1;
  }
  auto index_of = [](const std::string& k, unsigned long& i) {
    char* end = nullptr;
    i = std::strtoul(k.c_str(), &end, 10);
    return !k.empty() && std::isdigit(static_cast<unsigned char>(k[0])) && !*end && i < 4096;
  };
  // A node about to be gone through: a list when the next key is an index and it holds nothing yet.
  auto step = [&](YAML::Node parent_child, size_t next) {
    unsigned long i;
    if (index_of(keys[next], i) && (!parent_child.IsDefined() || parent_child.IsNull()))
      parent_child = YAML::Node(YAML::NodeType::Sequence);
  };
  std::vector<YAML::Node> chain{root};  // yaml-cpp nodes are handles: keep each level alive
  for (size_t k = 0; k < keys.size(); ++k) {
    YAML::Node cur = chain.back();
    const bool last = k + 1 == keys.size();
    if (cur.IsSequence()) {
      unsigned long i;
      if (!index_of(keys[k], i)) throw std::runtime_error("--set: '" + keys[k] + "' is not an index of the list at '" + path + "'");
      while (cur.size() <= i) cur.push_back(YAML::Node(YAML::NodeType::Null));
      if (last) {
        cur[i] = value;
      } else {
        step(cur[i], k + 1);
        chain.push_back(cur[i]);
      }
    } else {
      if (cur.IsDefined() && !cur.IsMap() && !cur.IsNull()) throw std::runtime_error("--set: '" + path + "' goes through a value");
      if (last) {
        cur[keys[k]] = value;
      } else {
        step(cur[keys[k]], k + 1);
        chain.push_back(cur[keys[k]]);
      }
    }
  }
}

}  // namespace

FileConfig load_config(const std::string& path, const std::vector<std::string>& sets) {
  YAML::Node root;
  const std::string where = path.empty() ? "--set" : path;
  try {
    if (!path.empty()) root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw std::runtime_error(path + ": cannot be read");
  } catch (const YAML::Exception& e) {
    throw std::runtime_error(path + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                             ": " + e.msg);
  }
  if (!sets.empty() && !root.IsMap() && !root.IsNull()) throw std::runtime_error(where + ": --set needs a map of settings");
  if (!sets.empty() && root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  for (const auto& s : sets) apply_set(root, s);
  return read_config(where, root);
}

namespace {

FileConfig read_config(const std::string& path, const YAML::Node& root) {
  FileConfig c;
  if (root.IsNull()) return c;
  if (!root.IsMap()) fail(path, root, "expected a map of settings");
  ModuleOptions& vars = c.vars;
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    const YAML::Node& v = kv.second;
    if (key == "backend") c.backend = scalar(path, v, key);
    else if (key == "batch") c.batch = uint32_t(number(path, v, key, 1u << 24));
    else if (key == "threads") c.threads = int(number(path, v, key, 1024));
    else if (key == "schedule") {
      c.schedule = scalar(path, v, key);
      if (*c.schedule != "on" && *c.schedule != "off" && *c.schedule != "auto") fail(path, v, "schedule: on, off or auto");
    } else if (key == "slice") {
      c.slice = scalar(path, v, key);
      if (*c.slice != "on" && *c.slice != "off" && *c.slice != "auto") fail(path, v, "slice: on, off or auto");
    } else if (key == "gather_sms") {
      const std::string t = scalar(path, v, key);
      c.gather_sms = t == "-1" ? -1 : int(number(path, v, key, 4096));
    } else if (key == "cuda_device") {
      c.cuda_device = int(number(path, v, key, 1023));
    } else if (key == "gpus") {
      const std::string t = scalar(path, v, key);
      c.gpus = t == "all" ? -1 : int(number(path, v, key, 1024));
      if (*c.gpus == 0) fail(path, v, "gpus: a number of devices (1 or more) or all");
    } else if (key == "shards") {
      c.shards = int(number(path, v, key, 1024));
      if (*c.shards == 0) fail(path, v, "shards: 1 or more");
    } else if (key == "vars") {
      if (!v.IsMap()) fail(path, v, "vars: expected address-groups and port-groups");
      for (const auto& g : v) {
        const std::string group = g.first.as<std::string>();
        if (group != "address-groups" && group != "port-groups") fail(path, g.first, "vars: address-groups or port-groups, not '" + group + "'");
        if (g.second.IsNull()) continue;
        if (!g.second.IsMap()) fail(path, g.second, group + ": expected NAME: value");
        for (const auto& var : g.second)
          vars[(group == "address-groups" ? "address." : "port.") + var.first.as<std::string>()] =
              scalar(path, var.second, var.first.as<std::string>());
      }
    } else if (key == "modules") {
      if (!v.IsSequence()) fail(path, v, "modules: expected a list");
      for (const auto& m : v) {
        if (m.IsNull()) continue;  // an entry --set made on its way to a later index
        if (!m.IsMap() || !m["name"]) fail(path, m, "a module needs a name");
        std::pair<std::string, ModuleOptions> spec{scalar(path, m["name"], "name"), {}};
        for (const auto& o : m) {
          const std::string k = o.first.as<std::string>();
          if (k != "name") spec.second[k] = option_text(path, o.second, k);
        }
        c.modules.push_back(spec);
      }
    } else if (key == "classes") {
      if (!v.IsSequence()) fail(path, v, "classes: expected a list of module orders");
      for (const auto& order : v) {
        if (!order.IsSequence()) fail(path, order, "a class is a list of module numbers, e.g. [1, 0]");
        std::vector<uint16_t> o;
        for (const auto& x : order) o.push_back(uint16_t(number(path, x, "classes", 255)));
        c.classes.push_back(o);
      }
    } else if (key == "outputs") {
      outputs_section(path, v, c);
    } else if (key == "packet-alert-max") {
      // As Suricata: 1..255, anything else keeps the default (15) with a warning.
      const std::string t = scalar(path, v, key);
      char* end = nullptr;
      const long long n = std::strtoll(t.c_str(), &end, 10);
      if (t.empty() || *end || n <= 0 || n > 255)
        c.warnings.push_back(path + ": packet-alert-max '" + t + "' is not 1..255: the default (15) is kept");
      else
        c.packet_alert_max = uint32_t(n);
    } else if (key == "action-order") {
      // Given to the firewall and the signature engine as their action-order option (rules.hpp).
      if (!v.IsSequence()) fail(path, v, "action-order: expected a list (pass, drop, reject, alert)");
      std::string order;
      for (const auto& x : v) order += (order.empty() ? "" : ",") + scalar(path, x, key);
      ActionOrder parsed;
      const std::string why = parse_action_order(order, parsed);
      if (!why.empty()) fail(path, v, "action-order: " + why);
      vars["action-order"] = order;
    } else if (key == "reputation-categories-file" || key == "default-reputation-path") {
      // Suricata's IP reputation, for the signature engine's iprep (modules/detect/iprep.hpp).
      vars[key == "default-reputation-path" ? "iprep-path" : "iprep-categories"] = scalar(path, v, key);
    } else if (key == "reputation-files") {
      std::string files;
      if (v.IsSequence())
        for (const auto& x : v) files += (files.empty() ? "" : ",") + scalar(path, x, key);
      else
        files = scalar(path, v, key);
      vars["iprep-files"] = files;
    } else if (key == "vlan") {
      // Suricata's vlan.use-for-tracking: whether VLAN ids are part of the flow key (--flow-vlan).
      if (!v.IsMap()) fail(path, v, "vlan: expected use-for-tracking");
      for (const auto& kv : v) {
        const std::string k = kv.first.as<std::string>();
        if (k != "use-for-tracking") fail(path, kv.first, "vlan: use-for-tracking, not '" + k + "'");
        c.vlan_in_key = yes_no(path, kv.second, "vlan.use-for-tracking");
      }
    } else if (key == "datasets") {
      // Of Suricata's datasets section, rules.allow-absolute-filenames (to the signature engine's
      // rules: modules/detect/dataset.hpp); the defaults and limits are listed as ignored.
      if (v.IsMap() && v["rules"] && v["rules"].IsMap() && v["rules"]["allow-absolute-filenames"])
        vars["datasets-allow-absolute"] =
            yes_no(path, v["rules"]["allow-absolute-filenames"], "datasets.rules.allow-absolute-filenames") ? "yes" : "no";
      c.ignored.push_back("datasets (all but rules.allow-absolute-filenames)");
    } else if (key == "threshold-file") {
      // Suricata's threshold.config, for every firewall and signature engine (threshold.hpp).
      vars["threshold-file"] = scalar(path, v, key);
    } else if (key == "flow-timeouts") {
      c.flow_timeouts = flow_timeouts(path, v);
    } else if (key == "stream") {
      stream_section(path, v, c);
    } else if (key == "exception-policy") {
      c.exception_policy = exception_policy(path, v, key);
    } else if (key == "flow") {
      flow_section(path, v, c);
    } else if (key == "defrag") {
      defrag_section(path, v, c);
    } else if (key == "app-layer") {
      app_layer_section(path, v, c);
    } else if (is_suricata_section(key)) {
      c.ignored.push_back(key);
    } else {
      fail(path, kv.first, "unknown setting '" + key + "' (backend, batch, threads, schedule, slice, gather_sms, cuda_device, gpus, shards, vars, modules, classes, flow-timeouts, or a suricata.yaml section)");
    }
  }
  return c;
}

}  // namespace

}  // namespace gaspp
