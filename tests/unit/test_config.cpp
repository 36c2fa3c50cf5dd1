// The YAML configuration: suricata.yaml's flow-timeouts, --set overrides, and a real
// suricata.yaml (../shared/data/eve/suricata.yaml.in) read for what gaspp uses.
#include <gtest/gtest.h>

#include "applayer/smtp.hpp"

#include <fstream>
#include <regex>

#include "applayer/mime.hpp"
#include "core/config.hpp"
#include "test_support.hpp"

using namespace gaspp;

namespace {

std::string write_yaml(const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("gaspp_config_" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(path) << text;
  return path.string();
}

std::string error_of(const std::string& path, const std::vector<std::string>& sets = {}) {
  try {
    load_config(path, sets);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// Suricata's defaults, as suricata.yaml.in writes them (new, established, closed; emergency-).
TEST(Config, FlowTimeoutDefaultsAreSuricatas) {
  const FlowTimeouts t;
  const uint32_t normal[4][3] = {{60, 600, 60}, {30, 300, 0}, {30, 300, 0}, {30, 300, 0}};
  const uint32_t emergency[4][3] = {{5, 100, 10}, {10, 100, 0}, {10, 100, 0}, {10, 100, 0}};
  for (int p = 0; p < 4; ++p)
    for (int s = 0; s < 3; ++s) {
      EXPECT_EQ(t.normal[p][s], normal[p][s]) << p << "," << s;
      EXPECT_EQ(t.emergency[p][s], emergency[p][s]) << p << "," << s;
    }
}

TEST(Config, FlowTimeoutsEveryKey) {
  struct Case {
    const char* proto;
    FlowProto row;
  };
  const Case protos[] = {{"tcp", FlowProto::tcp}, {"udp", FlowProto::udp}, {"icmp", FlowProto::icmp}, {"default", FlowProto::other}};
  const char* states[] = {"new", "established", "closed"};
  for (const auto& pc : protos)
    for (int s = 0; s < 3; ++s)
      for (bool emergency : {false, true}) {
        const std::string key = std::string(emergency ? "emergency-" : "") + states[s];
        const std::string path = write_yaml("flow-timeouts:\n  " + std::string(pc.proto) + ":\n    " + key + ": 1234\n");
        const FileConfig c = load_config(path);
        ASSERT_TRUE(c.flow_timeouts) << key;
        FlowTimeouts want;
        (emergency ? want.emergency : want.normal)[int(pc.row)][s] = 1234;
        for (int p = 0; p < 4; ++p)
          for (int k = 0; k < 3; ++k) {
            EXPECT_EQ(c.flow_timeouts->normal[p][k], want.normal[p][k]) << pc.proto << "." << key;
            EXPECT_EQ(c.flow_timeouts->emergency[p][k], want.emergency[p][k]) << pc.proto << "." << key;
          }
      }
}

TEST(Config, FlowTimeoutErrorsNameLineAndKey) {
  const std::string path = write_yaml("flow-timeouts:\n  tcp:\n    new: 5\n    establised: 9\n");
  const std::string e = error_of(path);
  EXPECT_NE(e.find(":4:5:"), std::string::npos) << e;
  EXPECT_NE(e.find("establised"), std::string::npos) << e;
  EXPECT_NE(error_of(write_yaml("flow-timeouts:\n  sctp:\n    new: 5\n")).find("sctp"), std::string::npos);
  EXPECT_NE(error_of(write_yaml("flow-timeouts:\n  tcp:\n    new: -5\n")).find("expected 0..4294967295"), std::string::npos);
  EXPECT_NE(error_of(write_yaml("flow-timeouts:\n  tcp:\n    new: 4294967296\n")).find("expected 0..4294967295"), std::string::npos);
  // bypassed is Suricata's and accepted, though gaspp has no bypass.
  EXPECT_EQ(error_of(write_yaml("flow-timeouts:\n  udp:\n    bypassed: 5\n    emergency-bypassed: 1\n")), "");
}

TEST(Config, SetOverridesAndBuildsTheTree) {
  const FileConfig a = load_config("", {"flow-timeouts.udp.new=7", "flow-timeouts.tcp.emergency-closed=3", "batch=4096"});
  ASSERT_TRUE(a.flow_timeouts);
  EXPECT_EQ(a.flow_timeouts->normal[int(FlowProto::udp)][0], 7u);
  EXPECT_EQ(a.flow_timeouts->emergency[int(FlowProto::tcp)][2], 3u);
  EXPECT_EQ(a.flow_timeouts->normal[int(FlowProto::tcp)][1], 600u);
  ASSERT_TRUE(a.batch);
  EXPECT_EQ(*a.batch, 4096u);
  // Over a file: the --set value wins over the file's.
  const std::string path = write_yaml("batch: 100\nflow-timeouts:\n  udp:\n    new: 1\n");
  const FileConfig b = load_config(path, {"flow-timeouts.udp.new=99"});
  EXPECT_EQ(b.flow_timeouts->normal[int(FlowProto::udp)][0], 99u);
  EXPECT_EQ(*b.batch, 100u);
  // Into a list by index.
  const std::string lp = write_yaml("modules:\n  - name: probe\n    dport: 53\n");
  const FileConfig c = load_config(lp, {"modules.0.dport=80"});
  ASSERT_EQ(c.modules.size(), 1u);
  EXPECT_EQ(c.modules[0].second.at("dport"), "80");
  EXPECT_NE(error_of(lp, {"modules.x.dport=80"}).find("not an index"), std::string::npos);
  // A list grows to the index (Suricata's ConfSet makes the node), with no list there yet too:
  // outputs.1.eve-log... on no configuration file turns the alert's packet on.
  const FileConfig d = load_config("", {"outputs.1.eve-log.types.0.alert.packet=yes"});
  ASSERT_TRUE(d.eve_packet);
  EXPECT_TRUE(*d.eve_packet);
  const FileConfig e = load_config(lp, {"modules.2.name=probe", "modules.2.dport=7"});
  ASSERT_EQ(e.modules.size(), 2u);  // the empty entry between is no module
  EXPECT_EQ(e.modules[1].second.at("dport"), "7");
  EXPECT_NE(error_of("", {"novalue"}).find("KEY=VALUE"), std::string::npos);
  EXPECT_NE(error_of("", {"batch=3", "batch.x=1"}).find("goes through a value"), std::string::npos);
}

TEST(Config, UnknownSettingIsAnErrorButSuricataSectionsAreListed) {
  EXPECT_NE(error_of(write_yaml("bacth: 5\n")).find("unknown setting 'bacth'"), std::string::npos);
  const FileConfig c = load_config(write_yaml("outputs:\n  - fast:\n      enabled: yes\naf-packet:\n  - interface: eth0\nbatch: 8\n"));
  EXPECT_EQ(c.ignored, (std::vector<std::string>{"outputs (all but eve-log's ethernet, metadata, ipv6-compress, alert payload, packet, verdict, tagged-packets, metadata and xff, anomaly decode, files force-hash and smtp md5)", "af-packet"}));
}

// suricata.yaml's action-order, packet-alert-max and eve-log alert switches, as Suricata reads them.
TEST(Config, ActionOrderAlertMaxAndEveAlertSwitches) {
  const FileConfig c = load_config(write_yaml(
      "outputs:\n  - fast:\n      enabled: yes\n  - eve-log:\n      enabled: yes\n      ethernet: yes\n      ipv6-compress: yes\n      types:\n        - alert:\n"
      "            payload: yes\n            packet: yes\n            verdict: no\n            tagged-packets: yes\n        - flow\n"
      "action-order:\n  - drop\n  - pass\n  - reject\n  - alert\npacket-alert-max: 6\n"
      "threshold-file: /etc/suricata/threshold.config\n"));
  EXPECT_EQ(c.vars.at("action-order"), "drop,pass,reject,alert");
  EXPECT_EQ(c.vars.at("threshold-file"), "/etc/suricata/threshold.config");  // to the firewall and detect
  EXPECT_EQ(c.packet_alert_max.value_or(0), 6u);
  EXPECT_EQ(c.eve_payload.value_or(false), true);
  EXPECT_EQ(c.eve_packet.value_or(false), true);
  EXPECT_EQ(c.eve_verdict.value_or(true), false);
  EXPECT_EQ(c.eve_ethernet.value_or(false), true);
  EXPECT_EQ(c.eve_ipv6_compress.value_or(false), true);
  EXPECT_EQ(c.eve_tagged_packets.value_or(false), true);
  // vlan.use-for-tracking (--flow-vlan) and datasets.rules.allow-absolute-filenames (to the rules).
  const FileConfig vl = load_config(write_yaml("vlan:\n  use-for-tracking: false\ndatasets:\n  rules:\n    allow-absolute-filenames: true\n"));
  EXPECT_EQ(vl.vlan_in_key.value_or(true), false);
  EXPECT_EQ(vl.vars.at("datasets-allow-absolute"), "yes");
  EXPECT_NE(error_of(write_yaml("vlan:\n  use-for-trackin: no\n")).find("use-for-tracking"), std::string::npos);
  // A disabled eve-log's switches are not taken.
  const FileConfig off = load_config(write_yaml("outputs:\n  - eve-log:\n      enabled: no\n      types:\n        - alert:\n            packet: yes\n"));
  EXPECT_FALSE(off.eve_packet);
  // packet-alert-max outside 1..255 keeps the default, with a warning (Suricata's behaviour).
  for (const char* bad : {"0", "256", "-1", "many"}) {
    const FileConfig w = load_config(write_yaml(std::string("packet-alert-max: ") + bad + "\n"));
    EXPECT_FALSE(w.packet_alert_max) << bad;
    EXPECT_EQ(w.warnings.size(), 1u) << bad;
  }
  EXPECT_NE(error_of(write_yaml("action-order:\n  - drop\n  - pass\n")).find("action-order"), std::string::npos);
  EXPECT_NE(error_of(write_yaml("action-order:\n  - drop\n  - pass\n  - reject\n  - log\n")).find("'log'"), std::string::npos);
}

// eve-log's files force-hash, as Suricata's list: the hashes each extracted file gets.
// The settings that decide what rules may require: tls.ja3-fingerprints (`requires: feature ja3`)
// and smtp.mime.body-md5 (the email.body_md5 keyword), given to the rules' parsers as options.
TEST(Config, Ja3FingerprintsAndBodyMd5ReachTheRuleParsers) {
  const FileConfig c = load_config(write_yaml(
      "app-layer:\n  protocols:\n    tls:\n      ja3-fingerprints: no\n    smtp:\n      mime:\n        body-md5: auto\n"));
  EXPECT_EQ(c.vars.at("ja3-fingerprints"), "no");
  EXPECT_EQ(c.vars.at("smtp-body-md5"), "auto");
  EXPECT_EQ(load_config(write_yaml("app-layer:\n  protocols:\n    tls:\n      ja3-fingerprints: yes\n")).vars.at("ja3-fingerprints"), "yes");
  EXPECT_EQ(load_config(write_yaml("app-layer:\n  protocols:\n    http:\n      enabled: yes\n")).vars.count("ja3-fingerprints"), 0u);
  EXPECT_NE(error_of(write_yaml("app-layer:\n  protocols:\n    smtp:\n      mime:\n        body-md5: maybe\n")).find("body-md5"),
            std::string::npos);
}

// eve-log smtp md5: the email object's body_md5 and subject_md5.
TEST(Config, SmtpMd5) {
  EXPECT_EQ(load_config(write_yaml("outputs:\n  - eve-log:\n      types:\n        - smtp:\n            md5: [body, subject]\n"))
                .mail_md5_log.value_or(0),
            kMailMd5Body | kMailMd5Subject);
  EXPECT_NE(error_of(write_yaml("outputs:\n  - eve-log:\n      types:\n        - smtp:\n            md5: [headers]\n")).find("smtp.md5"),
            std::string::npos);
}

// eve-log anomaly: Suricata's anomaly log writes decoder events only with types: decode: yes, and
// nothing when the anomaly type is disabled.
TEST(Config, AnomalyDecode) {
  const auto anomaly = [](const std::string& body) {
    return load_config(write_yaml("outputs:\n  - eve-log:\n      types:\n        - anomaly:\n" + body)).eve_anomaly_decode;
  };
  EXPECT_EQ(anomaly("            enabled: yes\n            types:\n              decode: yes\n").value_or(false), true);
  EXPECT_EQ(anomaly("            types:\n              decode: yes\n              stream: no\n").value_or(false), true);
  EXPECT_EQ(anomaly("            enabled: yes\n            types:\n              stream: yes\n").value_or(true), false);
  EXPECT_EQ(anomaly("            enabled: no\n            types:\n              decode: yes\n").value_or(true), false);
  EXPECT_NE(error_of(write_yaml("outputs:\n  - eve-log:\n      types:\n        - anomaly:\n            types:\n"
                                "              decode: often\n")).find("anomaly.types.decode"),
            std::string::npos);
}

TEST(Config, AnomalyApplayerOnUnlessNo) {
  const auto applayer = [](const std::string& body) {
    return load_config(write_yaml("outputs:\n  - eve-log:\n      types:\n        - anomaly:\n" + body)).eve_anomaly_applayer;
  };
  EXPECT_EQ(applayer("            enabled: yes\n").value_or(false), true);
  EXPECT_EQ(applayer("            enabled: yes\n            types:\n              decode: yes\n").value_or(false), true);
  EXPECT_EQ(applayer("            types:\n              applayer: no\n").value_or(true), false);
  EXPECT_EQ(applayer("            enabled: no\n").value_or(true), false);
}

// Suricata's port lists: a port, a range, any, a bracketed list; errors say why.
TEST(Config, DetectionPorts) {
  struct Case {
    const char* text;
    const char* back;  // port_ranges_text of what parsed; null: an error
  };
  const Case cases[] = {
      {"53", "53"},           {"[53, 5353]", "53,5353"}, {"1000:2000", "1000:2000"}, {"any", "0:65535"},
      {"[53,any]", "53,0:65535"}, {"65536", nullptr},   {"2000:1000", nullptr},      {"x", nullptr},
      {"", nullptr},          {"[1,2,3,4,5,6,7,8,9]", nullptr},
  };
  for (const Case& k : cases) {
    PortRanges p;
    const std::string why = parse_port_ranges(k.text, p);
    if (k.back) {
      EXPECT_EQ(why, "") << k.text;
      EXPECT_EQ(port_ranges_text(p), k.back) << k.text;
    } else {
      EXPECT_NE(why, "") << k.text;
    }
  }
  PortRanges p;
  ASSERT_EQ(parse_port_ranges("[53, 5353]", p), "");
  EXPECT_TRUE(p.has(53) && p.has(5353) && !p.has(54));
  // Every transport, then one transport's own (more specific wins).
  const FileConfig c = load_config(write_yaml("app-layer:\n  protocols:\n    dns:\n      detection-ports:\n        dp: 5353\n"
                                              "      tcp:\n        detection-ports:\n          dp: [53, 5300]\n"
                                              "    sip:\n      detection-ports:\n        dp: 5070\n"));
  ASSERT_TRUE(c.dns_udp_ports && c.dns_tcp_ports && c.sip_udp_ports);
  EXPECT_EQ(port_ranges_text(*c.dns_udp_ports), "5353");
  EXPECT_EQ(port_ranges_text(*c.dns_tcp_ports), "53,5300");
  EXPECT_EQ(port_ranges_text(*c.sip_udp_ports), "5070");
  EXPECT_NE(error_of(write_yaml("app-layer:\n  protocols:\n    dns:\n      detection-ports:\n        dp: 70000\n"))
                .find("detection-ports.dp"),
            std::string::npos);
}

TEST(Config, FilesForceHash) {
  const FileConfig c = load_config(write_yaml(
      "outputs:\n  - eve-log:\n      types:\n        - files:\n            force-hash: [md5, sha256]\n"));
  EXPECT_EQ(c.file_hashes.value_or(0), kHashMd5 | kHashSha256);
  EXPECT_FALSE(load_config(write_yaml("outputs:\n  - eve-log:\n      types:\n        - files:\n            force-magic: no\n")).file_hashes);
  EXPECT_NE(error_of(write_yaml("outputs:\n  - eve-log:\n      types:\n        - files:\n            force-hash: [md4]\n"))
                .find("force-hash"),
            std::string::npos);
}

TEST(Config, RealSuricataYaml) {
  const auto path = gaspp::test::shared_data_dir() / "eve" / "suricata.yaml.in";
  GASPP_REQUIRE_PATH(path);
  // The template as `configure` fills it: its @placeholders@ replaced (the comment markers that
  // switch optional plugins off become '#').
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string filled = std::regex_replace(text, std::regex("@[A-Za-z_]+_comment@"), "#");
  filled = std::regex_replace(filled, std::regex("@[A-Za-z_]+@"), "/usr/local");
  const FileConfig c = load_config(write_yaml(filled));
  // Its vars are read; its flow-timeouts are Suricata's defaults, which are ours.
  EXPECT_EQ(c.vars.at("address.HOME_NET"), "[192.168.0.0/16,10.0.0.0/8,172.16.0.0/12]");
  EXPECT_EQ(c.vars.at("address.EXTERNAL_NET"), "!$HOME_NET");
  EXPECT_EQ(c.vars.at("port.HTTP_PORTS"), "80");
  ASSERT_TRUE(c.flow_timeouts);
  const FlowTimeouts d;
  for (int p = 0; p < 4; ++p)
    for (int s = 0; s < 3; ++s) {
      EXPECT_EQ(c.flow_timeouts->normal[p][s], d.normal[p][s]);
      EXPECT_EQ(c.flow_timeouts->emergency[p][s], d.emergency[p][s]);
    }
  for (const char* s : {"outputs (all but eve-log's ethernet, metadata, ipv6-compress, alert payload, packet, verdict, tagged-packets, metadata and xff, anomaly decode, files force-hash and smtp md5)", "af-packet", "app-layer (all but the HTTP body and decompression limits, body inspection sizes, http-body-inline, lzma, tls.ja3-fingerprints, smtp.mime.body-md5, ftp.max-tx, ssh.hassh and the DNS and SIP detection ports)",
                        "stream (all but reassembly.urgent)", "detect"})
    EXPECT_NE(std::find(c.ignored.begin(), c.ignored.end(), s), c.ignored.end()) << s;
  // Its defrag section, in Suricata's size syntax ("32 MiB"): the defaults, which are ours.
  ASSERT_TRUE(c.defrag);
  EXPECT_EQ(c.defrag->memcap, 32ull << 20);
  EXPECT_EQ(c.defrag->trackers, 65535u);
  EXPECT_EQ(c.defrag->max_frags, 65535u);
  EXPECT_EQ(c.defrag->timeout_s, 60u);
  EXPECT_EQ(c.defrag->policy, DefragPolicy::bsd);
  EXPECT_TRUE(c.defrag->enabled);
  // The master switch, auto; flow.memcap-policy is commented out there.
  ASSERT_TRUE(c.exception_policy);
  EXPECT_EQ(*c.exception_policy, "auto");
  EXPECT_FALSE(c.flow_memcap_policy);
  EXPECT_NE(std::find(c.ignored.begin(), c.ignored.end(), "flow (all but memcap-policy)"), c.ignored.end());
  // The template's urgent policy (the engine's default, without it, is inline).
  ASSERT_TRUE(c.urgent && c.urgent_oob_limit);
  EXPECT_EQ(*c.urgent, UrgentPolicy::oob);
  EXPECT_EQ(*c.urgent_oob_limit, UrgentPolicy::drop);
  // Its HTTP body inspection sizes (Suricata's defaults without it are other: 32 KiB / 4 KiB both).
  EXPECT_EQ(c.http_request_inspect_min.value_or(0), 32u << 10);
  EXPECT_EQ(c.http_request_inspect_window.value_or(0), 4u << 10);
  EXPECT_EQ(c.http_response_inspect_min.value_or(0), 40u << 10);
  EXPECT_EQ(c.http_response_inspect_window.value_or(0), 16u << 10);
  EXPECT_EQ(c.http_body_inline.value_or(""), "auto");
}

// eve-log alert xff as Suricata's HttpXFFGetCfg reads it: off unless enabled; other modes and
// deployments fall back to extra-data and reverse, with a warning.
TEST(Config, EveAlertXff) {
  const auto xff = [](const std::string& body) {
    return load_config(write_yaml("outputs:\n  - eve-log:\n      types:\n        - alert:\n            xff:\n" + body));
  };
  EXPECT_TRUE(xff("              enabled: no\n              mode: overwrite\n").eve_xff.empty());
  const FileConfig a = xff("              enabled: yes\n              mode: overwrite\n              deployment: forward\n");
  EXPECT_EQ(a.eve_xff, (std::map<std::string, std::string>{{"xff", "overwrite"}, {"xff-deployment", "forward"},
                                                           {"xff-header", "X-Forwarded-For"}}));
  EXPECT_TRUE(a.warnings.empty());
  const FileConfig b = xff("              enabled: yes\n              mode: sideways\n              header: X-Real-IP\n");
  EXPECT_EQ(b.eve_xff, (std::map<std::string, std::string>{{"xff", "extra-data"}, {"xff-deployment", "reverse"},
                                                           {"xff-header", "X-Real-IP"}}));
  EXPECT_EQ(b.warnings.size(), 2u);  // the mode, and no deployment
}

TEST(Config, HttpBodyInspection) {
  const std::string k = "app-layer.protocols.http.libhtp.default-config.";
  const FileConfig c = load_config("", {k + "response-body-inspect-window=2kb", k + "http-body-inline=yes"});
  EXPECT_EQ(c.http_response_inspect_window.value_or(0), 2048u);
  EXPECT_EQ(c.http_body_inline.value_or(""), "yes");
  EXPECT_NE(error_of("", {k + "request-body-inspect-window=0"}).find("request-body-inspect-window must be"), std::string::npos);
  EXPECT_NE(error_of("", {k + "http-body-inline=maybe"}).find("http-body-inline"), std::string::npos);
  // Body limits: a size, or 0 (Suricata's unlimited: its default stream depth, 1 MiB, bounds it).
  const FileConfig l = load_config("", {k + "request-body-limit=3kb", k + "response-body-limit=0"});
  EXPECT_EQ(l.http_request_body_limit.value_or(1), 3072u);
  EXPECT_EQ(l.http_response_body_limit.value_or(1), 1u << 20);
}

TEST(Config, ExceptionPolicies) {
  for (const char* v : {"auto", "drop-packet", "drop-flow", "pass-packet", "pass-flow", "bypass", "reject", "rejectboth", "ignore"}) {
    const FileConfig c = load_config("", {std::string("exception-policy=") + v, std::string("flow.memcap-policy=") + v});
    ASSERT_TRUE(c.exception_policy && c.flow_memcap_policy) << v;
    EXPECT_EQ(*c.exception_policy, v);
    EXPECT_EQ(*c.flow_memcap_policy, v);
    EXPECT_TRUE(c.ignored.empty()) << v;
  }
  EXPECT_NE(error_of("", {"exception-policy=drop"}).find("exception-policy: auto, drop-packet"), std::string::npos);
  EXPECT_NE(error_of("", {"flow.memcap-policy=pass"}).find("flow.memcap-policy: auto, drop-packet"), std::string::npos);
}

TEST(Config, DefragSection) {
  struct Row {
    const char* set;
    uint64_t memcap;     // expected, when accepted
    const char* error;   // "" when accepted
  };
  const Row rows[] = {
      {"defrag.memcap=33554432", 32ull << 20, ""},
      {"defrag.memcap=64mb", 64ull << 20, ""},
      {"defrag.memcap=1 GiB", 1ull << 30, ""},
      {"defrag.memcap=512KiB", 512ull << 10, ""},
      {"defrag.memcap=lots", 0, "defrag.memcap: expected a size"},
      {"defrag.memcap=-1mb", 0, "defrag.memcap: expected a size"},
      {"defrag.timeout=0", 0, "defrag.timeout: expected 1..86400"},
      {"defrag.timeout=86401", 0, "defrag.timeout: expected 0..86400"},
      {"defrag.policy=vista", 0, ""},
      {"defrag.trackers=0", 0, ""},  // 0: the default, as in Suricata
      {"defrag.policy=bsdx", 0, "defrag.policy: bsd, bsd-right"},
      {"defrag.enabled=maybe", 0, "defrag.enabled: yes or no"},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.set);
    const std::string e = error_of("", {r.set});
    if (*r.error) {
      EXPECT_NE(e.find(r.error), std::string::npos) << e;
      continue;
    }
    EXPECT_EQ(e, "");
    const FileConfig c = load_config("", {r.set});
    ASSERT_TRUE(c.defrag);
    if (r.memcap) {
      EXPECT_EQ(c.defrag->memcap, r.memcap);
    }
  }
  const FileConfig c = load_config("", {"defrag.policy=vista", "defrag.trackers=10", "defrag.max-frags=20", "defrag.timeout=5",
                                        "defrag.enabled=no", "defrag.hash-size=1024"});
  EXPECT_EQ(c.defrag->policy, DefragPolicy::windows);
  EXPECT_EQ(c.defrag->trackers, 10u);
  EXPECT_EQ(c.defrag->max_frags, 20u);
  EXPECT_EQ(c.defrag->timeout_s, 5u);
  EXPECT_FALSE(c.defrag->enabled);
  EXPECT_EQ(c.ignored.size(), 1u);  // hash-size
  EXPECT_EQ(load_config("", {"defrag.trackers=0"}).defrag->trackers, DefragConfig{}.trackers);
  // Suricata's host-os-policy names map as its DefragGetOsPolicy does.
  for (const auto& [name, pol] : std::vector<std::pair<const char*, DefragPolicy>>{
           {"macos", DefragPolicy::first}, {"old-solaris", DefragPolicy::first}, {"hpux11", DefragPolicy::first},
           {"bsd-right", DefragPolicy::bsd_right}, {"irix", DefragPolicy::bsd}, {"old-linux", DefragPolicy::linux},
           {"windows2k3", DefragPolicy::windows}, {"solaris", DefragPolicy::solaris}, {"last", DefragPolicy::last}})
    EXPECT_EQ(load_config("", {std::string("defrag.policy=") + name}).defrag->policy, pol) << name;
}

TEST(Config, StreamUrgentPolicies) {
  struct Row {
    const char* set;
    int urgent, limit;  // UrgentPolicy, -1: not set
    const char* error;  // "" when accepted
  };
  const Row rows[] = {
      {"stream.reassembly.urgent.policy=inline", 0, -1, ""},
      {"stream.reassembly.urgent.policy=oob", 1, -1, ""},
      {"stream.reassembly.urgent.policy=gap", 2, -1, ""},
      {"stream.reassembly.urgent.policy=drop", 3, -1, ""},
      {"stream.reassembly.urgent.oob-limit-policy=inline", -1, 0, ""},
      {"stream.reassembly.urgent.oob-limit-policy=gap", -1, 2, ""},
      {"stream.reassembly.urgent.oob-limit-policy=drop", -1, 3, ""},
      {"stream.reassembly.urgent.oob-limit-policy=oob", -1, -1, "oob-limit-policy: inline, gap or drop, not 'oob'"},
      {"stream.reassembly.urgent.policy=OOB", -1, -1, "policy: inline, oob, gap or drop, not 'OOB'"},
      {"stream.reassembly.urgent.polcy=oob", -1, -1, "policy or oob-limit-policy, not 'polcy'"},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.set);
    const std::string e = error_of("", {r.set});
    if (*r.error) {
      EXPECT_NE(e.find(r.error), std::string::npos) << e;
      continue;
    }
    ASSERT_EQ(e, "");
    const FileConfig c = load_config("", {r.set});
    EXPECT_EQ(c.urgent ? int(*c.urgent) : -1, r.urgent);
    EXPECT_EQ(c.urgent_oob_limit ? int(*c.urgent_oob_limit) : -1, r.limit);
    EXPECT_TRUE(c.ignored.empty());  // nothing else in the stream section
  }
}

// eve-log alert `metadata` as Suricata's JsonAlertLogSetupMetadata reads it: false turns the flow
// object, the transaction's object and the rule's metadata off; a map sets each, rule.raw adds the rule.
TEST(Config, EveAlertMetadataSwitches) {
  struct Row {
    const char* yaml;  // the alert type's options
    std::map<std::string, std::string> want;
  };
  const std::string head = "outputs:\n  - eve-log:\n      enabled: yes\n      types:\n        - alert:\n";
  const Row rows[] = {
      {"            metadata: false\n",
       {{"metadata.flow", "off"}, {"metadata.app-layer", "off"}, {"metadata.rule.metadata", "off"}}},
      {"            metadata: yes\n",
       {{"metadata.flow", "on"}, {"metadata.app-layer", "on"}, {"metadata.rule.metadata", "on"}}},
      {"            metadata:\n              rule:\n                raw: true\n", {{"metadata.rule.raw", "on"}}},
      {"            metadata:\n              flow: no\n              app-layer: yes\n              rule:\n"
       "                metadata: no\n                reference: yes\n",
       {{"metadata.flow", "off"}, {"metadata.app-layer", "on"}, {"metadata.rule.metadata", "off"}}},
  };
  for (const Row& r : rows) {
    const FileConfig c = load_config(write_yaml(head + r.yaml));
    EXPECT_EQ(c.eve_alert_metadata, r.want) << r.yaml;
  }
  EXPECT_NE(error_of(write_yaml(head + "            metadata:\n              flows: no\n")).find("flow, app-layer or rule"),
            std::string::npos);
  EXPECT_NE(error_of(write_yaml(head + "            metadata:\n              rule:\n                raws: yes\n")).find("raws"),
            std::string::npos);
}
