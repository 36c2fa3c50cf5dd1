// The firewall module against a brute-force reference written here: random rule sets (written as
// rule text and parsed) over addresses and ports taken from the traffic, matched by the compiled
// tables and by checking every rule with the parser's own set semantics (AddrSet/PortSet::matches).
// Then the whole pipeline on the backend under test: every packet's verdict, with flow decisions
// in capture order, and every alert, against the reference run in capture order; `-w`-style output
// selection; and the probe module's actions, context keys and per-flow state.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <tuple>

#include <unistd.h>

#include "core/module_stage.hpp"
#include "core/modules.hpp"
#include "pipeline/pipeline.hpp"
#include "decode/decoder.hpp"
#include "modules/firewall/firewall.hpp"
#include "modules/firewall/threshold.hpp"
#include "output/decode_rows.hpp"
#include "output/eve.hpp"
#include "test_support.hpp"

using namespace gaspp;

namespace {

struct Pkt {
  uint8_t family, proto;
  uint8_t a[2][16];  // src, dst bytes
  bool ports;
  uint16_t port[2];
};

Pkt pkt_of(const DecodedPacket& d) {
  Pkt p{};
  p.family = d.l3[0] == uint8_t(L3::ipv6) ? 6 : 4;
  p.proto = d.ip_proto[0];
  std::memcpy(p.a[0], d.src_ip, 16);
  std::memcpy(p.a[1], d.dst_ip, 16);
  p.ports = (d.l4[0] == uint8_t(L4::tcp) || d.l4[0] == uint8_t(L4::udp)) &&
            !((d.ip_frag[0] & kFragIsFragment) && !(d.ip_frag[0] & kFragFirst));
  p.port[0] = d.sport[0];
  p.port[1] = d.dport[0];
  return p;
}

FwPacket fw_of(const Pkt& p) {
  FwPacket f{};
  f.family = p.family;
  uint32_t w[2][4];
  std::memcpy(w, p.a, 32);
  f.addr[0] = addr_number(w[0], p.family);
  f.addr[1] = addr_number(w[1], p.family);
  f.proto = p.proto;
  f.has_ports = p.ports;
  f.port[0] = p.port[0];
  f.port[1] = p.port[1];
  return f;
}

// The reference: every rule, in order, with the parser's set semantics.
bool rule_matches_dir(const Rule& r, const Pkt& p, int s, int d) {
  if (!r.src.matches(p.family, p.a[s]) || !r.dst.matches(p.family, p.a[d])) return false;
  if (r.sport.items.empty() && r.dport.items.empty()) return true;
  if (!p.ports) return false;
  return r.sport.matches(p.port[s]) && r.dport.matches(p.port[d]);
}
// Every rule tried in turn; the alerts kept are the first kFwMaxAlerts in Suricata's order: action
// (drop, reject, alert), then priority (3 when not given), then file order.
FwMatch reference_match(const std::vector<Rule>& rules, const Pkt& p) {
  FwMatch m;
  std::vector<std::tuple<int, uint32_t, uint32_t>> hits;  // (action order, priority, rule)
  for (uint32_t k = 0; k < rules.size(); ++k) {
    const Rule& r = rules[k];
    if (r.proto && r.proto != p.proto) continue;
    if (!rule_matches_dir(r, p, 0, 1) && !(r.bidirectional && rule_matches_dir(r, p, 1, 0))) continue;
    if (r.action == RuleAction::pass) {
      m.pass = true;
      continue;
    }
    const int8_t act = r.action == RuleAction::drop ? kFwDrop : r.action == RuleAction::reject ? kFwReject : kFwAlert;
    m.action = std::max(m.action, act);
    const int order = r.action == RuleAction::drop ? 1 : r.action == RuleAction::reject ? 2 : 3;
    hits.emplace_back(order, r.priority ? r.priority : 3u, k);
  }
  std::sort(hits.begin(), hits.end());
  for (const auto& h : hits) {
    if (m.n < kFwMaxAlerts) m.rule[m.n++] = std::get<2>(h);
    else ++m.overflow;
  }
  return m;
}

std::string addr_text(const uint8_t* b, uint8_t family) {
  char s[64];
  if (family == 4) std::snprintf(s, sizeof s, "%u.%u.%u.%u", b[0], b[1], b[2], b[3]);
  else {
    std::string o;
    for (int k = 0; k < 16; k += 2) {
      char x[8];
      std::snprintf(x, sizeof x, "%s%x", k ? ":" : "", (b[k] << 8) | b[k + 1]);
      o += x;
    }
    return o;
  }
  return s;
}

// Random rules over the addresses and ports seen in the traffic (so that they match it).
struct RuleGen {
  std::mt19937_64 rng;
  std::vector<std::pair<std::array<uint8_t, 16>, uint8_t>> addrs;
  std::vector<uint16_t> ports;
  std::vector<std::string> rule_text;
  uint32_t any_pct = 0;  // share of address sets that are a plain `any` (besides addr_item's own)
  std::mt19937_64 prio_rng{99};  // priorities drawn apart, so that the rules are as without them
  uint64_t pick(uint64_t n) { return rng() % n; }
  std::string addr_item() {
    const uint64_t k = pick(10);
    if (k == 0) return "any";
    if (k == 1) return "$HOME_NET";
    if (k == 2) return "$EXTERNAL_NET";
    const auto& [b, fam] = addrs[pick(addrs.size())];
    const std::string a = addr_text(b.data(), fam);
    if (k <= 5) return a;
    const int bits = fam == 4 ? int(8 + pick(25)) : int(16 + pick(113));
    return a + "/" + std::to_string(bits);  // the parser keeps the host bits; the prefix decides
  }
  std::string addr() {
    if (pick(100) < any_pct) return "any";
    const uint64_t k = pick(8);
    if (k < 5) return addr_item();
    std::string s = std::string(pick(4) == 0 ? "!" : "") + "[";
    const int n = 1 + int(pick(4));
    int written = 0;
    for (int j = 0; j < n; ++j) {
      const std::string it = addr_item();
      if (it == "any") continue;  // "any" inside a list is tested by the parser's own cases
      s += (written ? "," : "") + std::string(pick(5) == 0 && written > 0 ? "!" : "") + it;
      ++written;
    }
    if (!written) s += "$HOME_NET";
    return s + "]";
  }
  std::string port_item() {
    const uint16_t p = ports[pick(ports.size())];
    const uint64_t k = pick(4);
    if (k == 0) return std::to_string(p);
    if (k == 1) return std::to_string(p > 100 ? p - 100 : 0) + ":" + std::to_string(p);
    if (k == 2) return std::to_string(p) + ":";
    return std::to_string(p);
  }
  std::string port(const std::string& proto) {
    if (proto == "icmp" || pick(3) == 0) return "any";
    if (pick(3) == 0) {
      std::string s = "[" + port_item() + "," + std::string(pick(3) == 0 ? "!" : "") + port_item() + "]";
      return s;
    }
    return std::string(pick(6) == 0 ? "!" : "") + port_item();
  }
  std::string rule(uint32_t sid) {
    static const char* acts[] = {"alert", "alert", "alert", "drop", "reject", "pass"};
    static const char* protos[] = {"ip", "tcp", "udp", "icmp", "tcp", "ip"};
    const std::string proto = protos[pick(6)];
    return std::string(acts[pick(6)]) + " " + proto + " " + addr() + " " + port(proto) + (pick(4) == 0 ? " <> " : " -> ") +
           addr() + " " + port(proto) + " (msg:\"r" + std::to_string(sid) + "\"; sid:" + std::to_string(sid) + ";" +
           (prio_rng() % 3 == 0 ? " priority:" + std::to_string(1 + prio_rng() % 4) + ";" : "") + ")";
  }
};

std::vector<DecodedPacket> decode_all(const CaptureFile& cap) {
  std::vector<DecodedPacket> out;
  RecordWalker w(cap);
  RecordInfo ri;
  while (w.next(ri)) {
    DecodedPacket d;
    decode_record(cap.data() + ri.offset, cap.size() - ri.offset, cap.format(), cap.link(), d);
    out.push_back(d);
  }
  return out;
}

CaptureFile traffic(uint64_t seed, uint64_t packets = 4000) {
  GenConfig g;
  g.mode = GenMode::mix;
  g.packets = packets;
  g.flows = 200;
  g.seed = seed;
  g.ipv6_share = 0.3;
  g.vlan_share = 0.1;
  return test::generated_capture(g, "firewall-traffic.pcap");
}

RuleGen rule_gen(const std::vector<DecodedPacket>& pk, uint64_t seed) {
  RuleGen g{std::mt19937_64(seed), {}, {}, {}};
  std::set<std::vector<uint8_t>> seen;
  for (const DecodedPacket& d : pk) {
    if (d.l3[0] != uint8_t(L3::ipv4) && d.l3[0] != uint8_t(L3::ipv6)) continue;
    const uint8_t fam = d.l3[0] == uint8_t(L3::ipv6) ? 6 : 4;
    for (const uint32_t* w : {d.src_ip, d.dst_ip}) {
      std::array<uint8_t, 16> b{};
      std::memcpy(b.data(), w, 16);
      if (seen.insert(std::vector<uint8_t>(b.begin(), b.end())).second) g.addrs.push_back({b, fam});
    }
    g.ports.push_back(d.sport[0]);
    g.ports.push_back(d.dport[0]);
  }
  return g;
}

}  // namespace

TEST(Firewall, TablesEqualBruteForceOnRandomRuleSets) {
  const CaptureFile cap = traffic(11);
  const std::vector<DecodedPacket> pk = decode_all(cap);
  ASSERT_GT(pk.size(), 3000u);
  uint64_t matched = 0, compared = 0, wildcard = 0;
  for (uint64_t round = 0; round < 12; ++round) {
    RuleGen g = rule_gen(pk, 100 + round);
    const uint32_t n = round < 4 ? 40 : 2000;  // few rules and many
    // The last rounds: half the address sets `any`, so that many rules have `any` on both sides
    // and are indexed by port (or not at all).
    if (round >= 8) g.any_pct = 50;
    std::vector<Rule> rules;
    for (uint32_t k = 0; k < n; ++k) {
      Rule r;
      const std::string text = g.rule(k + 1);
      g.rule_text.push_back(text);
      ASSERT_EQ(parse_rule(text, RuleVars{}, r), "") << text;
      rules.push_back(r);
    }
    FirewallTables t;
    t.compile(rules);
    wildcard += t.wildcard_entries();
    const FirewallView v = t.host_view();
    for (const DecodedPacket& d : pk) {
      if (d.l3[0] != uint8_t(L3::ipv4) && d.l3[0] != uint8_t(L3::ipv6)) continue;
      const Pkt p = pkt_of(d);
      FwMatch got;
      firewall_match(v, fw_of(p), got);
      const FwMatch want = reference_match(rules, p);
      ASSERT_EQ(got.pass, want.pass);
      ASSERT_EQ(got.action, want.action);
      if (got.n != want.n) {
        for (int k = 0; k < got.n; ++k) std::printf("got %u: %s\n", got.rule[k], g.rule_text[got.rule[k]].c_str());
        for (int k = 0; k < want.n; ++k) std::printf("want %u\n", want.rule[k]);
        std::printf("pkt fam %d proto %d %s -> %s ports %d %u %u\n", p.family, p.proto, addr_text(p.a[0], p.family).c_str(),
                    addr_text(p.a[1], p.family).c_str(), p.ports, p.port[0], p.port[1]);
      }
      ASSERT_EQ(got.n, want.n);
      ASSERT_EQ(got.overflow, want.overflow);
      for (int k = 0; k < got.n; ++k) ASSERT_EQ(got.rule[k], want.rule[k]) << "round " << round;
      matched += want.n + want.pass;
      ++compared;
    }
  }
  std::printf("firewall: %llu packets x 12 rule sets, %llu matches, equal to the brute force; %llu entries with any "
              "address on both sides\n",
              (unsigned long long)compared, (unsigned long long)matched, (unsigned long long)wildcard);
  EXPECT_GT(matched, compared);  // the rules do hit the traffic
  EXPECT_GT(wildcard, 1000u);    // and the port index is exercised
}

// Which alerts a packet keeps when more rules match than Suricata's packet_alert_max, and in what
// order: action (drop, reject, alert), then priority (explicit, else the classtype's from
// classification.config, else 3), then file order. The expected order is written out by hand.
TEST(Firewall, AlertsKeepSuricatasOrderWithClassPriorities) {
  const auto dir = std::filesystem::path(test::temp_path("alert-order"));
  std::filesystem::create_directories(dir);
  auto write = [&](const char* name, const std::string& text) {
    std::FILE* f = std::fopen((dir / name).c_str(), "w");
    ASSERT_TRUE(f);
    std::fputs(text.c_str(), f);
    std::fclose(f);
  };
  write("classification.config",
        "# comment\nconfig classification: bad-thing,Bad Thing,1\nconfig classification: Meh,Meh,4\n"
        "config classification: broken\n");
  std::string rules;
  auto add = [&](const char* action, uint32_t sid, const std::string& extra) {
    rules += std::string(action) + " ip any any -> any any (msg:\"s" + std::to_string(sid) + "\"; sid:" +
             std::to_string(sid) + ";" + extra + ")\n";
  };
  add("alert", 1, "");
  add("alert", 2, " priority:1;");
  add("drop", 3, " classtype:meh;");                 // 4 from its class
  add("reject", 4, " priority:2;");
  add("drop", 5, " priority:1;");
  add("alert", 6, " classtype:bad-thing;");          // 1 from its class
  add("drop", 7, "");
  add("pass", 8, "");                                // decides the verdict, never an alert
  for (uint32_t sid = 9; sid <= 20; ++sid) add("alert", sid, " priority:5;");
  add("alert", 21, " classtype:bad-thing; priority:3;");  // the keyword wins over the class
  write("order.rules", rules);

  ModuleSet mods;
  mods.add(make_module("firewall", {{"rules", (dir / "order.rules").string()}}));  // the class file is found beside
  std::map<std::string, uint64_t> rep;
  mods.at(0).report(rep);
  EXPECT_EQ(rep["rules"], 21u);
  EXPECT_EQ(rep["classtypes"], 2u);
  EXPECT_EQ(rep["classtype_errors"], 1u);
  EXPECT_EQ(rep["rules_priority_from_classtype"], 2u);

  RuleSet set;
  ASSERT_TRUE(load_rules_file((dir / "order.rules").string(), RuleVars{}, set));
  Classifications c;
  ASSERT_TRUE(load_classification_file((dir / "classification.config").string(), c));
  EXPECT_EQ(apply_class_priorities(c, set.rules), 2u);
  FirewallTables t;
  t.compile(set.rules);
  const FirewallView v = t.host_view();
  FwPacket p{};
  p.family = 4;
  p.proto = 6;
  p.has_ports = true;
  p.port[0] = 1234;
  p.port[1] = 80;
  FwMatch m;
  firewall_match(v, p, m);
  EXPECT_TRUE(m.pass);
  const std::vector<uint32_t> want = {5, 7, 3, 4, 2, 6, 1, 21, 9, 10, 11, 12, 13, 14, 15};
  std::vector<uint32_t> got;
  for (int k = 0; k < m.n; ++k) got.push_back(set.rules[m.rule[k]].sid);
  EXPECT_EQ(got, want);
  EXPECT_EQ(m.overflow, 5u);  // sids 16..20
  // Without the class file the two class priorities fall back to 3.
  RuleSet plain;
  ASSERT_TRUE(load_rules_file((dir / "order.rules").string(), RuleVars{}, plain));
  FirewallTables t2;
  t2.compile(plain.rules);
  FwMatch m2;
  firewall_match(t2.host_view(), p, m2);
  std::vector<uint32_t> got2;
  for (int k = 0; k < m2.n; ++k) got2.push_back(plain.rules[m2.rule[k]].sid);
  EXPECT_EQ(got2, (std::vector<uint32_t>{5, 3, 7, 4, 2, 1, 6, 21, 9, 10, 11, 12, 13, 14, 15}));
  std::filesystem::remove_all(dir);
}

TEST(Firewall, EtOpenIpListsCompileAndMatchLikeBruteForce) {
  const auto dir = test::shared_data_dir() / "rules" / "et-open";
  GASPP_REQUIRE_PATH(dir);
  RuleSet set;
  for (const char* f : {"drop.rules", "compromised.rules", "ciarmy.rules", "tor.rules", "dshield.rules"})
    ASSERT_TRUE(load_rules_file((dir / f).string(), RuleVars{}, set));
  ASSERT_GT(set.rules.size(), 1000u);
  FirewallTables t;
  t.compile(set.rules);
  const FirewallView v = t.host_view();
  // Packets from and to addresses the lists name (and their neighbours), plus random ones.
  std::mt19937_64 rng(5);
  uint64_t hits = 0;
  for (int k = 0; k < 20000; ++k) {
    Pkt p{};
    p.family = 4;
    p.proto = k % 3 ? 6 : 17;
    p.ports = true;
    p.port[0] = uint16_t(rng());
    p.port[1] = uint16_t(rng());
    const Rule& r = set.rules[rng() % set.rules.size()];
    const AddrSet& s = rng() % 2 ? r.src : r.dst;
    if (!s.items.empty() && k % 4) {
      const AddrItem& it = s.items[rng() % s.items.size()];
      std::memcpy(p.a[0], it.bytes, 16);
      if (k % 5 == 0) p.a[0][3] ^= uint8_t(1 + rng() % 3);
    } else {
      for (int b = 0; b < 4; ++b) p.a[0][b] = uint8_t(rng());
    }
    p.a[1][0] = 10;
    p.a[1][3] = uint8_t(rng());
    if (k % 2) std::swap(p.a[0], p.a[1]);
    FwMatch got;
    firewall_match(v, fw_of(p), got);
    const FwMatch want = reference_match(set.rules, p);
    ASSERT_EQ(got.n, want.n);
    ASSERT_EQ(got.action, want.action);
    for (int j = 0; j < got.n; ++j) ASSERT_EQ(got.rule[j], want.rule[j]);
    hits += want.n > 0;
  }
  std::printf("ET IP lists: %zu rules, %u exact keys, %u intervals, %.1f KiB; %llu of 20000 packets matched\n",
              set.rules.size(), t.hash_keys(), t.elementary(), double(t.bytes()) / 1024.0, (unsigned long long)hits);
  EXPECT_GT(hits, 1000u);
}

namespace {

// The pipeline's verdicts and alerts, and the reference's, for one run.
struct Outcome {
  std::vector<uint8_t> drop;                            // per packet
  std::vector<std::tuple<uint64_t, uint32_t>> alerts;   // (packet number, rule index)
  uint64_t batches = 0, sliced = 0;
};

class Collect final : public ModuleOutput {
 public:
  void eve(const std::string&) override {}
};

// The backend under test with these modules, and options for batches of `batch` packets.
// header_only: reassembly off, nothing reads payload, and CUDA slices (reads through the mapping).
std::unique_ptr<Backend> backend_with(const ModuleSet& mods, uint32_t batch, RunOptions& ro, bool header_only = false) {
  BackendConfig cfg;
  cfg.batch_packets = batch;
  cfg.stream.enabled = !header_only;
  if (header_only) cfg.slice = BackendConfig::Slice::on;  // whatever the packets' size
  cfg.modules = mods.pointers();
  cfg.flow.module_state_bytes = mods.flow_state_bytes();
  ro.policy.max_packets = batch;
  return test::make_backend(cfg);
}

Outcome run_pipeline(const CaptureFile& cap, ModuleSet& mods, uint32_t batch, bool header_only = false) {
  RunOptions ro;
  auto be = backend_with(mods, batch, ro, header_only);
  Outcome o;
  Collect out;
  const RunReport rep = run_capture(cap, *be, ro, [&](const PacketBatch& b) {
    for (uint32_t i = 0; i < b.count; ++i) o.drop.push_back(b.h_verdict[i] & kVerdictDrop);
    for (const ModuleEvent& e : b.events)
      if (e.kind == FirewallModule::kAlert && !(b.h_verdict[e.packet] & kVerdictFlowDecided))
        o.alerts.emplace_back(b.first_index + e.packet, e.value);
    mods.finish_batch(b, out);
  });
  std::sort(o.alerts.begin(), o.alerts.end());
  o.batches = rep.batches;
  o.sliced = rep.transfer.batches_sliced;
  return o;
}

// Flow identity for the reference: the canonical 5-tuple (+ VLAN); the generated traffic never
// reuses one for a second connection.
std::vector<uint8_t> flow_key(const DecodedPacket& d) {
  std::vector<uint8_t> a(reinterpret_cast<const uint8_t*>(d.src_ip), reinterpret_cast<const uint8_t*>(d.src_ip) + 16);
  std::vector<uint8_t> b(reinterpret_cast<const uint8_t*>(d.dst_ip), reinterpret_cast<const uint8_t*>(d.dst_ip) + 16);
  a.push_back(uint8_t(d.sport[0] >> 8)), a.push_back(uint8_t(d.sport[0]));
  b.push_back(uint8_t(d.dport[0] >> 8)), b.push_back(uint8_t(d.dport[0]));
  if (b < a) std::swap(a, b);
  a.insert(a.end(), b.begin(), b.end());
  a.push_back(d.ip_proto[0]);
  a.push_back(uint8_t(d.vlan_id[0]));
  a.push_back(uint8_t(d.vlan_id[0] >> 8));
  return a;
}

Outcome reference_run(const std::vector<DecodedPacket>& pk, const std::vector<Rule>& rules) {
  Outcome o;
  std::map<std::vector<uint8_t>, int> decided;  // 1 drop, 2 pass
  for (uint64_t i = 0; i < pk.size(); ++i) {
    const DecodedPacket& d = pk[i];
    const bool ip = d.l3[0] == uint8_t(L3::ipv4) || d.l3[0] == uint8_t(L3::ipv6);
    if (!ip) {
      o.drop.push_back(0);
      continue;
    }
    const bool has_flow = !(d.ip_frag[0] & kFragIsFragment) && !d.malformed[0];
    const auto key = flow_key(d);
    if (has_flow && decided.count(key)) {
      o.drop.push_back(decided[key] == 1);
      continue;
    }
    const FwMatch m = reference_match(rules, pkt_of(d));
    if (m.pass) {
      if (has_flow) decided[key] = 2;
      o.drop.push_back(0);
      continue;
    }
    const bool drop = m.action == kFwDrop || m.action == kFwReject;
    if (drop && has_flow) decided[key] = 1;
    o.drop.push_back(drop);
    for (int k = 0; k < m.n; ++k) o.alerts.emplace_back(i, m.rule[k]);
  }
  std::sort(o.alerts.begin(), o.alerts.end());
  return o;
}

}  // namespace

TEST(Firewall, PipelineVerdictsStickToFlowsLikeTheReference) {
  const CaptureFile cap = traffic(21, 6000);
  const std::vector<DecodedPacket> pk = decode_all(cap);
  RuleGen g = rule_gen(pk, 80);  // a seed whose rule set drops neither few packets nor nearly all (asserted below)
  std::string text;
  std::vector<Rule> rules;
  for (uint32_t k = 0; k < 300; ++k) {
    const std::string r = g.rule(k + 1);
    text += r + "\n";
    Rule x;
    ASSERT_EQ(parse_rule(r, RuleVars{}, x), "");
    rules.push_back(x);
  }
  const auto path = std::filesystem::path(test::temp_path("firewall.rules"));
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_TRUE(f);
    std::fputs(text.c_str(), f);
    std::fclose(f);
  }
  const Outcome want = reference_run(pk, rules);
  uint64_t drops = 0;
  for (uint8_t x : want.drop) drops += x;
  ASSERT_GT(drops, 100u);
  ASSERT_LT(drops, pk.size() - 100);
  // The last two runs are header-only: on CUDA every batch is sliced (read through the mapping).
  const std::pair<uint32_t, bool> runs[] = {{1, false}, {7, false}, {64, false}, {65536, false}, {7, true}, {65536, true}};
  for (const auto& [batch, header_only] : runs) {
    SCOPED_TRACE(header_only ? "header-only" : "with reassembly");
    ModuleSet mods;
    mods.add(make_module("firewall", {{"rules", path.string()}}));
    const Outcome got = run_pipeline(cap, mods, batch, header_only);
    ASSERT_EQ(got.drop.size(), want.drop.size());
    for (size_t i = 0; i < got.drop.size(); ++i) ASSERT_EQ(got.drop[i], want.drop[i]) << "packet " << i + 1 << " batch " << batch;
    EXPECT_EQ(got.alerts, want.alerts) << "batch " << batch;
    EXPECT_EQ(mods.counts()[0][mc_events_lost], 0u);
    if (test::backend_under_test() == "cuda") {
      EXPECT_EQ(got.sliced, header_only ? got.batches : 0u);
    }
  }
  std::printf("firewall pipeline: %zu packets, %llu dropped, %zu alerts, equal at batch sizes 1, 7, 64, 65536, "
              "and header-only at 7 and 65536\n",
              pk.size(), (unsigned long long)drops, want.alerts.size());
}

// --eve-drops: a packet its flow's earlier decision dropped gets the flow's id from the host's memory
// of dropped flows. The memory holds at most N flows and is cleared when a new one would not fit.
// A reference of that policy says how many ids are recalled and how many flows are forgotten, at
// the default size (nothing forgotten) and at small ones. The rule drops everything, so a flow's
// first packet is dropped by the rule and its module event carries the flow id; so does the first
// packet of the other direction when it comes in the same batch (the module stage runs before the
// verdict walk applies the flow's decision; Suricata's IP-only engine, which the rule belongs to,
// inspects only a direction's first packet); every other packet is dropped by the decision alone,
// without a module event, and its id must be recalled.
TEST(Firewall, DropEventsRecallFlowIdsWithinTheMemoryLimit) {
  const CaptureFile cap = traffic(5, 3000);
  const std::vector<DecodedPacket> pk = decode_all(cap);
  const auto path = std::filesystem::path(test::temp_path("drop-all.rules"));
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_TRUE(f);
    std::fputs("drop ip any any -> any any (msg:\"all\"; sid:1;)\n", f);
    std::fclose(f);
  }
  struct Want {
    uint64_t recalled = 0, forgotten = 0, with_id = 0, drops = 0;
  };
  // batch_of[i]: the batch packet i went in (the run's own batching).
  auto reference = [&](size_t max, const std::vector<uint64_t>& batch_of) {
    Want w;
    std::map<std::vector<uint8_t>, uint64_t> first_batch;  // flow -> the batch of its first packet
    std::set<std::vector<uint8_t>> memory;
    std::set<std::vector<uint8_t>> dirs;  // (flow, direction) seen
    for (size_t i = 0; i < pk.size(); ++i) {
      const DecodedPacket& d = pk[i];
      const bool ip = d.l3[0] == uint8_t(L3::ipv4) || d.l3[0] == uint8_t(L3::ipv6);
      if (!ip) continue;
      ++w.drops;
      if ((d.ip_frag[0] & kFragIsFragment) || d.malformed[0]) continue;  // no flow: its own event, no id kept
      const auto key = flow_key(d);
      const uint64_t fb = first_batch.emplace(key, batch_of[i]).first->second;
      std::vector<uint8_t> dir = key;
      dir.insert(dir.end(), reinterpret_cast<const uint8_t*>(d.src_ip), reinterpret_cast<const uint8_t*>(d.src_ip) + 16);
      dir.push_back(uint8_t(d.sport[0] >> 8));
      dir.push_back(uint8_t(d.sport[0]));
      const bool first_in_dir = dirs.insert(dir).second;
      if (fb == batch_of[i] && first_in_dir) {  // a module event with the flow id: remembered
        if (memory.size() >= max && !memory.count(key)) {
          w.forgotten += memory.size();
          memory.clear();
        }
        memory.insert(key);
        ++w.with_id;
      } else if (memory.count(key)) {
        ++w.recalled;
        ++w.with_id;
      }
    }
    return w;
  };
  class Lines final : public ModuleOutput {
   public:
    uint64_t drops = 0, with_id = 0;
    void eve(const std::string& line) override {
      if (line.find("\"event_type\":\"drop\"") == std::string::npos) return;
      ++drops;
      with_id += line.find("\"flow_id\":") != std::string::npos;
    }
  };
  uint64_t forgotten_small = 0, recalled_full = 0, recalled_small = 0;
  for (const uint32_t batch : {1u, 5u, 65536u}) {
    for (const size_t max : {ModuleSet::kDroppedFlowsDefault, size_t(64), size_t(7), size_t(1)}) {
      SCOPED_TRACE("memory " + std::to_string(max) + ", batch " + std::to_string(batch));
      ModuleSet mods;
      mods.add(make_module("firewall", {{"rules", path.string()}}));
      mods.set_drop_events(true);
      mods.set_dropped_flows_max(max);
      RunOptions ro;
      auto be = backend_with(mods, batch, ro);
      Lines out;
      std::vector<uint64_t> batch_of;
      run_capture(cap, *be, ro, [&](const PacketBatch& b) {
        batch_of.insert(batch_of.end(), b.count, batch_of.empty() ? 0 : batch_of.back() + 1);
        mods.finish_batch(b, out);
      });
      ASSERT_EQ(batch_of.size(), pk.size());
      const Want want = reference(max, batch_of);
      EXPECT_EQ(out.drops, want.drops);
      EXPECT_EQ(mods.drop_flow_ids_recalled(), want.recalled);
      EXPECT_EQ(mods.dropped_flows_forgotten(), want.forgotten);
      EXPECT_EQ(out.with_id, want.with_id);
      if (max == ModuleSet::kDroppedFlowsDefault) {
        EXPECT_EQ(want.forgotten, 0u);
        EXPECT_EQ(want.with_id, want.drops);  // every drop event has its flow's id
        if (batch == 1) recalled_full = want.recalled;
      } else if (max == 7 && batch == 1) {
        forgotten_small = want.forgotten;
        recalled_small = want.recalled;
      }
    }
  }
  EXPECT_GT(forgotten_small, 0u);  // the small memories were exercised
  std::printf("drop events at batch size 1: %zu packets; flow ids recalled %llu with the default memory, %llu with "
              "7 flows (%llu forgotten); equal to the reference at batch sizes 1, 5, 65536\n",
              pk.size(), (unsigned long long)recalled_full, (unsigned long long)recalled_small,
              (unsigned long long)forgotten_small);
}

TEST(Modules, ProbeActionsContextKeysAndFlowState) {
  const CaptureFile cap = traffic(31, 3000);
  const std::vector<DecodedPacket> pk = decode_all(cap);
  // The busiest port of the traffic is the one the probes select ("P").
  std::map<uint16_t, uint64_t> hist;
  for (const DecodedPacket& d : pk)
    if (d.l4[0] == uint8_t(L4::tcp) || d.l4[0] == uint8_t(L4::udp)) ++hist[d.sport[0]], ++hist[d.dport[0]];
  uint16_t port = 0;
  for (auto& [p, n] : hist)
    if (n > hist[port]) port = p;
  const std::string ps = std::to_string(port);
  // Stage 0 tags port-P packets with context 7; stage 1 sends only context-7 packets to the host;
  // stage 2 drops port-P packets whatever their context; stage 3 (after the drop) must not see them.
  ModuleSet mods;
  mods.add(make_module("probe", {{"dport", ps}, {"set_ctx", "7"}}));
  mods.add(make_module("probe", {{"ctx", "7"}, {"action", "to_host"}}));
  mods.add(make_module("probe", {{"dport", ps}, {"action", "drop"}}));
  mods.add(make_module("probe", {{"action", "to_dump"}}));
  uint64_t dns = 0, ip = 0;  // dns: packets to or from port P
  for (const DecodedPacket& d : pk) {
    const bool isip = d.l3[0] == uint8_t(L3::ipv4) || d.l3[0] == uint8_t(L3::ipv6);
    ip += isip;
    dns += isip && (d.sport[0] == port || d.dport[0] == port);
  }
  ASSERT_GT(dns, 20u);
  for (uint32_t batch : {5u, 65536u}) {
    Collect out;
    RunOptions ro;
    auto be = backend_with(mods, batch, ro);
    uint64_t dropped = 0, dumped = 0, host = 0, host_value_ok = 0;
    run_capture(cap, *be, ro, [&](const PacketBatch& b) {
      for (uint32_t i = 0; i < b.count; ++i) {
        const uint8_t v = b.h_verdict[i];
        const DecodedPacket& d = pk[b.first_index + i];
        const bool isdns = (d.l3[0] == 1 || d.l3[0] == 2) && (d.sport[0] == port || d.dport[0] == port);
        EXPECT_EQ(bool(v & kVerdictDrop), isdns) << "packet " << b.first_index + i + 1;
        EXPECT_EQ(bool(v & kVerdictToDump), (d.l3[0] == 1 || d.l3[0] == 2) && !isdns);
        dropped += (v & kVerdictDrop) != 0;
        dumped += (v & kVerdictToDump) != 0;
      }
      std::vector<ModuleEvent> e(b.events.begin(), b.events.end());
      std::sort(e.begin(), e.end(), [](auto& x, auto& y) { return x.packet < y.packet; });
      for (const ModuleEvent& x : e) {
        EXPECT_EQ(x.kind, kEventToHost);
        EXPECT_EQ(x.module, 1);
        const DecodedPacket& d = pk[b.first_index + x.packet];
        EXPECT_TRUE(d.sport[0] == port || d.dport[0] == port);
        // The value is the flow's count of selected packets at stage 1: each DNS packet of a flow
        // adds one, so over the flow the values are 1..n in some order within a batch.
        ++host;
        host_value_ok += x.value >= 1;
      }
      mods.finish_batch(b, out);
    });
    EXPECT_EQ(dropped, dns);
    EXPECT_EQ(dumped, ip - dns);
    EXPECT_EQ(host, dns);
    EXPECT_EQ(host_value_ok, dns);
  }
  // Counters summed over both runs: stage 3 never saw a dropped packet.
  EXPECT_EQ(mods.counts()[2][mc_drop], 2 * dns);
  EXPECT_EQ(mods.counts()[3][mc_packets], 2 * (ip - dns));
  EXPECT_EQ(mods.counts()[1][mc_to_host], 2 * dns);
}

TEST(Modules, ClassOrdersAndSchedulingGiveTheSameResults) {
  const CaptureFile cap = traffic(41, 4000);
  const std::vector<DecodedPacket> pk = decode_all(cap);
  std::map<uint16_t, uint64_t> hist;
  for (const DecodedPacket& d : pk)
    if (d.l4[0] == uint8_t(L4::tcp) || d.l4[0] == uint8_t(L4::udp)) ++hist[d.dport[0]];
  uint16_t port = 0;
  for (auto& [p, n] : hist)
    if (n > hist[port]) port = p;
  // Module 0 drops port-P packets, module 1 dumps every packet it sees, module 2 is a firewall.
  // Class 0 runs 0,1,2 (the dump never sees port-P packets); class 1 runs 1,0,2 (it sees them all).
  auto make = [&](ModuleSet& m) {
    m.add(make_module("probe", {{"dport", std::to_string(port)}, {"action", "drop"}, {"set_ctx", "3"}}));
    m.add(make_module("probe", {{"action", "to_dump"}}));
    m.add(make_module("pass", {}));
  };
  struct Run {
    std::vector<uint8_t> verdict;
  };
  auto run = [&](BackendConfig::Schedule sched, uint32_t batch) {
    ModuleSet mods;
    make(mods);
    BackendConfig cfg;
    cfg.batch_packets = batch;
    cfg.modules = mods.pointers();
    cfg.flow.module_state_bytes = mods.flow_state_bytes();
    cfg.class_orders = {{0, 1, 2}, {1, 0, 2}};
    cfg.schedule = sched;
    auto be = test::make_backend(cfg);
    RunOptions ro;
    ro.policy.max_packets = batch;
    Run r;
    Collect out;
    run_capture(cap, *be, ro, [&](const PacketBatch& b) {
      for (uint32_t i = 0; i < b.count; ++i) r.verdict.push_back(b.h_verdict[i] & (kVerdictDrop | kVerdictToDump));
      mods.finish_batch(b, out);
    });
    return std::make_pair(r, mods.counts());
  };
  uint64_t selected = 0;
  const auto [base, base_counts] = run(BackendConfig::Schedule::off, 65536);
  for (size_t i = 0; i < pk.size(); ++i) {
    const DecodedPacket& d = pk[i];
    const bool ip = d.l3[0] == uint8_t(L3::ipv4) || d.l3[0] == uint8_t(L3::ipv6);
    const bool sel = ip && (d.l4[0] == uint8_t(L4::tcp) || d.l4[0] == uint8_t(L4::udp)) && (d.sport[0] == port || d.dport[0] == port);
    const uint32_t cls = d.flow_hash[0] % 2;
    const uint8_t want = uint8_t((sel ? kVerdictDrop : 0) | (ip && (!sel || cls == 1) ? kVerdictToDump : 0));
    ASSERT_EQ(base.verdict[i], want) << "packet " << i + 1 << " class " << cls;
    selected += sel;
  }
  ASSERT_GT(selected, 20u);
  for (auto sched : {BackendConfig::Schedule::on, BackendConfig::Schedule::automatic})
    for (uint32_t batch : {7u, 65536u}) {
      const auto [r, counts] = run(sched, batch);
      EXPECT_EQ(r.verdict, base.verdict) << "schedule " << int(sched) << " batch " << batch;
      EXPECT_EQ(counts, base_counts);
    }
}

// EVE lines the modules' host handlers write, kept.
class EveLines final : public ModuleOutput {
 public:
  void eve(const std::string& line) override { lines.push_back(line); }
  std::vector<std::string> lines;
};

// The text of member `key` in a one-line JSON object: a string's contents or a number's digits;
// empty when absent (no nesting or escapes needed for the fields read here).
std::string json_member(const std::string& line, const std::string& key) {
  const std::string k = "\"" + key + "\":";
  const size_t at = line.find(k);
  if (at == std::string::npos) return "";
  size_t b = at + k.size();
  if (line[b] == '"') return line.substr(b + 1, line.find('"', b + 1) - b - 1);
  size_t e = b;
  while (e < line.size() && line[e] != ',' && line[e] != '}') ++e;
  return line.substr(b, e - b);
}

TEST(Modules, StreamHookSeesEveryByteInOrderAcrossBatches) {
  // HTTP with reordering, duplicates and loss, a string planted in payloads: what stream_match's
  // host handler receives (one EVE event per match, at the stream offset just past it) equals a
  // scan of the reassembled pieces written here (matches do not span gaps or ends), at batch sizes
  // 1, 7 and 65536 -- the matches in data that only the end-of-run flush delivers included, handed
  // over flow-only (no packet) with their flow's addresses in the event's direction.
  GenConfig g;
  g.mode = GenMode::http;
  g.packets = 6000;
  g.flows = 12;
  g.seed = 3;
  g.reorder = 0.03;
  g.duplicate = 0.02;
  g.loss = 0.005;
  g.plant = "needle";
  g.plant_rate = 0.05;
  // The generator's receivers acknowledge what the capture missed (tap loss), and acknowledged
  // holes are skipped at once (docs/streams.md); here they acknowledge only what the capture holds,
  // as after a loss on the path, so data behind a hole waits to the end of the run.
  const CaptureFile cap = test::generated_capture_acking_received(g, "stream-hook.pcap");
  uint64_t total = 0, at_flush = 0;
  for (uint32_t batch : {1u, 7u, 65536u}) {
    ModuleSet mods;
    mods.add(make_module("probe", {}));  // a packet module first: stream modules keep their own order
    mods.add(make_module("stream_match", {{"pattern", "needle"}}));
    RunOptions ro;
    auto be = backend_with(mods, batch, ro);
    ro.want_streams = true;
    using Match = std::tuple<uint64_t, int, uint64_t>;  // (flow id, direction, offset past the match)
    std::multiset<Match> got, want, want_flush;
    std::map<std::pair<uint64_t, int>, std::string> carry;  // the reference's last bytes per direction
    std::map<uint64_t, FlowRecord> flows;                   // every flow, by id, as it left the table
    bool batch_pending = false;
    EveLines out;
    run_capture(
        cap, *be, ro,
        [&](const PacketBatch& b) {
          // The pipeline hands a batch's chunks over right after the batch, when it has any; chunks
          // that come with no batch before them are the end-of-run flush.
          batch_pending = !b.stream_chunks.empty();
          mods.finish_batch(b, out);
        },
        [&](const std::vector<FlowRecordOut>& recs) {
          for (const FlowRecordOut& r : recs) flows[r.rec.flow_id] = r.rec;
        },
        [&](const std::vector<StreamChunk>& chunks, std::span<const uint8_t> bytes) {
          const bool final_flush = !batch_pending;
          batch_pending = false;
          for (const StreamChunk& c : chunks) {
            if (c.flags & kChunkConflict) continue;
            std::string& t = carry[{c.flow_id, int(c.dir)}];
            if (c.gap || (c.flags & kChunkEnd)) t.clear();
            const std::string text = t + std::string(reinterpret_cast<const char*>(bytes.data()) + c.data, c.len);
            for (size_t at = text.find("needle"); at != std::string::npos; at = text.find("needle", at + 1)) {
              const size_t end = at + 6;
              if (end <= t.size()) continue;
              const Match m{c.flow_id, int(c.dir), uint32_t(c.off + (end - t.size()))};
              want.insert(m);
              if (final_flush) want_flush.insert(m);
            }
            t = text.size() > 5 ? text.substr(text.size() - 5) : text;
          }
        },
        [&](const StreamFlushModules& m, const std::vector<FlowRecordOut>& open) {
          mods.finish_flush(m.events, m.module_counts, open, out);
        });
    std::multiset<Match> got_flow_only;
    for (const std::string& line : out.lines) {
      if (json_member(line, "event_type") != "stream_match") continue;
      const uint64_t id = std::stoull(json_member(line, "flow_id"));
      const int dir = json_member(line, "to_client") == "true";
      const Match m{id, dir, std::stoull(json_member(line, "stream_offset"))};
      got.insert(m);
      ASSERT_EQ(json_member(line, "direction"), dir ? "to_client" : "to_server") << line;
      if (!json_member(line, "pcap_cnt").empty()) {  // a packet's event
        EXPECT_EQ(json_member(line, "pkt_src"), "wire/pcap") << line;
        continue;
      }
      // Flow-only: no packet number; the flow's addresses and ports, sender first.
      got_flow_only.insert(m);
      EXPECT_EQ(json_member(line, "pkt_src"), "stream (flow timeout)");
      ASSERT_EQ(flows.count(id), 1u) << line;
      const FlowRecord& r = flows[id];
      const int sender = (r.client_lo ? 0 : 1) ^ dir;
      // Addresses compared parsed: EVE writes IPv6 in Suricata's unshortened form.
      const bool v6 = r.key.family == 6;
      EXPECT_EQ(test::parsed_address(json_member(line, "src_ip"), v6), test::parsed_address(format_address(r.key.addr[sender], v6), v6)) << line;
      EXPECT_EQ(test::parsed_address(json_member(line, "dest_ip"), v6), test::parsed_address(format_address(r.key.addr[sender ^ 1], v6), v6)) << line;
      EXPECT_EQ(json_member(line, "src_port"), std::to_string(r.key.port[sender])) << line;
      EXPECT_EQ(json_member(line, "dest_port"), std::to_string(r.key.port[sender ^ 1])) << line;
    }
    EXPECT_EQ(got, want) << "batch " << batch;
    // What only the end-of-run flush delivered reached the handler flow-only (events on data
    // released at a flow's expiry would too; this capture is short of any timeout).
    for (const Match& m : want_flush) EXPECT_EQ(got_flow_only.count(m), want_flush.count(m)) << "batch " << batch;
    EXPECT_EQ(got_flow_only.size(), want_flush.size()) << "batch " << batch;
    EXPECT_EQ(mods.events_flow_only(), got_flow_only.size());
    EXPECT_EQ(mods.events_unattributed(), 0u);
    EXPECT_EQ(mods.counts()[1][mc_events_lost], 0u);
    EXPECT_EQ(mods.counts()[1][mc_events], want.size());  // the flush's counters are summed too
    EXPECT_EQ(mods.counts()[1][mc_packets], 0u);  // no packet hooks: no packet stage
    EXPECT_GT(mods.counts()[1][mc_stream_pieces], 500u);
    total = want.size();
    at_flush = want_flush.size();
  }
  EXPECT_GT(total, 20u);
  EXPECT_GT(at_flush, 0u);
  std::printf("stream_match: %llu matches (%llu in data the end-of-run flush delivered), equal to the reference scan "
              "at batch sizes 1, 7, 65536\n",
              (unsigned long long)total, (unsigned long long)at_flush);
}

TEST(Modules, StreamEventOnDataReleasedAtExpiryReachesTheHostWithItsFlow) {
  // A client sends 10 bytes, then 20 bytes after a 10-byte hole that never fills, "needle" at
  // bytes 5..10 of them: the 20 bytes wait in the out-of-order buffer until the flow has expired
  // (200 s later another flow's packets move the clock on) and only then reach stream_match, which
  // matches at stream offset 20 + 11 = 31. No packet delivered that piece: the event reaches the
  // host handler flow-only, with the first flow's record. The sweep that removes the flow runs
  // after the walk, so the data comes out in the next walk: after the next batch when the other
  // flow has packets after the first one, at the end-of-run flush when it has only the one.
  auto frame = [](uint8_t src_last, uint32_t seq, const std::string& data, uint8_t flags) {
    std::vector<uint8_t> f = test::tcp4_frame(seq, uint16_t(data.size()), flags);
    f[14 + 15] = src_last;  // the IPv4 source's last byte: 10.0.0.<src_last>
    std::memcpy(f.data() + 54, data.data(), data.size());
    return f;
  };
  const uint32_t t0 = 1'700'000'000;
  for (uint32_t later : {4u, 1u}) {
    test::PcapBuilder pb(1, false, true, 262144);
    pb.record(frame(1, 1000, "", 0x02), t0);
    pb.record(frame(1, 1001, "0123456789", 0x18), t0, 1000);
    pb.record(frame(1, 1021, "abcd-needle-efghijkl", 0x18), t0, 2000);
    for (uint32_t k = 0; k < later; ++k) pb.record(frame(3, 5000 + k, "", k ? 0x10 : 0x02), t0 + 200 + k);
    const CaptureFile cap = CaptureFile::from_memory(pb.bytes(), "expiry.pcap");
    for (uint32_t batch : {1u, 2u, 65536u}) {
      SCOPED_TRACE("batch " + std::to_string(batch) + ", other flow's packets " + std::to_string(later));
      ModuleSet mods;
      mods.add(make_module("stream_match", {{"pattern", "needle"}}));
      RunOptions ro;
      auto be = backend_with(mods, batch, ro);
      EveLines out;
      size_t before_flush = 0;
      std::map<uint64_t, FlowRecord> flows;
      run_capture(
          cap, *be, ro, [&](const PacketBatch& b) { mods.finish_batch(b, out); },
          [&](const std::vector<FlowRecordOut>& recs) {
            for (const FlowRecordOut& r : recs) flows[r.rec.flow_id] = r.rec;
          },
          nullptr,
          [&](const StreamFlushModules& m, const std::vector<FlowRecordOut>& open) {
            before_flush = out.lines.size();
            mods.finish_flush(m.events, m.module_counts, open, out);
          });
      ASSERT_EQ(out.lines.size(), 1u);
      EXPECT_EQ(before_flush, later > 1 ? 1u : 0u);
      const std::string& line = out.lines[0];
      EXPECT_EQ(json_member(line, "event_type"), "stream_match");
      EXPECT_EQ(json_member(line, "stream_offset"), "31");
      EXPECT_EQ(json_member(line, "pkt_src"), "stream (flow timeout)");
      EXPECT_EQ(json_member(line, "pcap_cnt"), "");
      EXPECT_EQ(json_member(line, "src_ip"), "10.0.0.1");
      EXPECT_EQ(json_member(line, "src_port"), "12345");
      EXPECT_EQ(json_member(line, "dest_ip"), "10.0.0.2");
      EXPECT_EQ(json_member(line, "dest_port"), "80");
      EXPECT_EQ(json_member(line, "direction"), "to_server");
      EXPECT_EQ(json_member(line, "timestamp"), eve_timestamp(uint64_t(t0) * 1'000'000'000ull + 2000));
      const uint64_t id = std::stoull(json_member(line, "flow_id"));
      ASSERT_EQ(flows.count(id), 1u);
      EXPECT_EQ(flows[id].last_ts, uint64_t(t0) * 1'000'000'000ull + 2000);
      EXPECT_EQ(mods.events_flow_only(), 1u);
      EXPECT_EQ(mods.events_unattributed(), 0u);
      EXPECT_EQ(mods.counts()[0][mc_events], 1u);
    }
  }
}

TEST(Firewall, EveryEtOpenThresholdParses) {
  const auto dir = test::shared_data_dir() / "rules" / "et-open";
  GASPP_REQUIRE_PATH(dir);
  std::map<int, uint64_t> kinds;
  uint64_t with = 0;
  for (const auto& f : std::filesystem::directory_iterator(dir)) {
    if (f.path().extension() != ".rules") continue;
    RuleSet set;
    load_rules_file(f.path().string(), RuleVars{}, set);
    for (const Rule& r : set.rules) {
      if (r.threshold.empty()) continue;
      ThresholdSpec s;
      EXPECT_EQ(parse_threshold(r.threshold, s), "") << r.file << ":" << r.line << " " << r.threshold;
      ++kinds[s.kind];
      ++with;
    }
  }
  std::printf("ET Open firewall rules with thresholds: %llu (limit %llu, threshold %llu, both %llu, detection_filter %llu)\n",
              (unsigned long long)with, (unsigned long long)kinds[ThresholdSpec::limit],
              (unsigned long long)kinds[ThresholdSpec::threshold], (unsigned long long)kinds[ThresholdSpec::both],
              (unsigned long long)kinds[ThresholdSpec::detection_filter]);
  EXPECT_GT(with, 1000u);
  ThresholdSpec s;
  EXPECT_NE(parse_threshold("threshold: type sometimes, track by_src, count 1, seconds 1", s), "");
  EXPECT_NE(parse_threshold("threshold: type limit, count 1, seconds 1", s), "");  // no track
  EXPECT_NE(parse_threshold("detection_filter: track by_src, count 0, seconds 1", s), "");
}

TEST(Firewall, ThresholdsThinAlertsLikeTheReference) {
  // The reference rebuilds each match's window from the history of its (rule, tracked key): the first
  // match opens a window of T seconds, the first match after its end opens the next.
  std::mt19937_64 rng(9);
  const char* specs[] = {"threshold: type limit, track by_src, count 2, seconds 10",
                         "threshold: type threshold, track by_dst, count 3, seconds 20",
                         "threshold: type both, track by_both, count 2, seconds 15",
                         "detection_filter: track by_rule, count 4, seconds 5",
                         "threshold:type limit,track by_src,count 1,seconds 3600"};
  std::vector<ThresholdSpec> sp(5);
  for (int k = 0; k < 5; ++k) ASSERT_EQ(parse_threshold(specs[k], sp[size_t(k)]), "");
  ThresholdTable table;
  std::map<std::tuple<int, int, int>, std::vector<uint64_t>> history;  // (rule, a, b) -> match times
  uint64_t ts = 0, alerts = 0, matches = 0;
  for (int n = 0; n < 20000; ++n) {
    ts += rng() % 3'000'000'000ull;  // 0..3 s apart
    const int rule = int(rng() % 5), src = int(rng() % 4), dst = int(rng() % 3);
    uint8_t a[16] = {10, 0, 0, uint8_t(src)}, b[16] = {192, 168, 0, uint8_t(dst)};
    RuleThresholds rt;
    rt.thresholds.push_back(sp[size_t(rule)]);
    ThresholdSpec::NewAction act;
    const bool got = table.check(rt, uint32_t(rule), {a, b, 4, 1, ts}, act) == ThresholdTable::alert;
    const ThresholdSpec& s = sp[size_t(rule)];
    const int ka = s.track == ThresholdSpec::by_src || s.track == ThresholdSpec::by_both ? src
                   : s.track == ThresholdSpec::by_dst ? dst : -1;
    const int kb = s.track == ThresholdSpec::by_both ? dst : -1;
    auto& h = history[{rule, ka, kb}];
    h.push_back(ts);
    uint64_t start = h[0], index = 0;  // position of this match in its window (1-based)
    for (uint64_t t : h) {
      if (t > start + uint64_t(s.seconds) * 1'000'000'000ull) start = t, index = 0;
      ++index;
    }
    const bool want = s.kind == ThresholdSpec::limit       ? index <= s.count
                      : s.kind == ThresholdSpec::threshold ? index % s.count == 0
                      : s.kind == ThresholdSpec::both      ? index == s.count
                                                           : index > s.count;
    ASSERT_EQ(got, want) << "match " << n << " rule " << rule;
    alerts += want;
    ++matches;
  }
  EXPECT_EQ(table.suppressed(), matches - alerts);
  EXPECT_GT(alerts, 1000u);
  EXPECT_GT(matches - alerts, 1000u);
}

// Suricata's backoff: a flow's matches N, N*M, N*M*M, ... alert (detect-engine-threshold.c), the
// rest are silent; the counts of suricata-verify's threshold-rule-flow-backoff-single-flow.
TEST(Thresholds, BackoffAlertsAtGeometricCounts) {
  struct Case {
    const char* spec;
    uint32_t matches;
    std::vector<uint32_t> alerting;  // 1-based match numbers that alert
  };
  const Case cases[] = {
      {"threshold: type backoff, track by_flow, count 1, multiplier 2", 6676,
       {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096}},
      {"threshold: type backoff, track by_flow, count 3, multiplier 2", 6676,
       {3, 6, 12, 24, 48, 96, 192, 384, 768, 1536, 3072, 6144}},
      {"threshold: type backoff, track by_flow, count 5, multiplier 5", 6676, {5, 25, 125, 625, 3125}},
  };
  for (const Case& c : cases) {
    RuleThresholds rt;
    rt.thresholds.resize(1);
    ASSERT_EQ(parse_threshold(c.spec, rt.thresholds[0]), "") << c.spec;
    ThresholdTable table;
    uint8_t a[16] = {10, 0, 0, 1}, b[16] = {10, 0, 0, 2};
    std::vector<uint32_t> got, other_flow;
    ThresholdSpec::NewAction act;
    for (uint32_t n = 1; n <= c.matches; ++n) {
      if (table.check(rt, 0, {a, b, 4, 7, n * 1000ull}, act) == ThresholdTable::alert) got.push_back(n);
      // Another flow's matches are counted apart.
      if (n <= 30 && table.check(rt, 0, {a, b, 4, 8, n * 1000ull}, act) == ThresholdTable::alert) other_flow.push_back(n);
    }
    EXPECT_EQ(got, c.alerting) << c.spec;
    std::vector<uint32_t> first30;
    for (uint32_t n : c.alerting)
      if (n <= 30) first30.push_back(n);
    EXPECT_EQ(other_flow, first30) << c.spec;
  }
  ThresholdSpec s;
  for (const char* bad : {"threshold: type backoff, track by_src, count 1, multiplier 2",   // by_flow only
                          "threshold: type backoff, track by_flow, count 1, multiplier 1",  // multiplier 2..65535
                          "threshold: type backoff, track by_flow, count 1, multiplier 2, seconds 3",
                          "threshold: type backoff, track by_flow, count 70000, multiplier 2",
                          "threshold: type limit, track by_flow, count 1, seconds 3, multiplier 2"})
    EXPECT_NE(parse_threshold(bad, s), "") << bad;
}

// detection_filter's unique_on: distinct ports in the window, against a set kept by the test.
TEST(Thresholds, UniqueOnCountsDistinctPorts) {
  std::mt19937_64 rng(5);
  for (const char* text : {"detection_filter: track by_dst, count 3, seconds 10, unique_on dst_port",
                           "detection_filter: track by_src, count 1, seconds 4, unique_on src_port"}) {
    RuleThresholds rt;
    rt.thresholds.resize(1);
    ASSERT_EQ(parse_threshold(text, rt.thresholds[0]), "") << text;
    const ThresholdSpec& s = rt.thresholds[0];
    ThresholdTable table;
    uint8_t a[16] = {10, 0, 0, 1}, b[16] = {10, 0, 0, 2};
    std::set<uint16_t> seen;
    uint64_t ts = 0, start = 0;
    bool first = true;
    ThresholdSpec::NewAction act;
    for (int n = 0; n < 3000; ++n) {
      ts += rng() % 1'500'000'000ull;
      const uint16_t sp = uint16_t(rng() % 6), dp = uint16_t(1000 + rng() % 7);
      if (first || ts > start + uint64_t(s.seconds) * 1'000'000'000ull) start = ts, seen.clear();
      first = false;
      seen.insert(s.unique_on == ThresholdSpec::src_port ? sp : dp);
      const bool want = seen.size() > s.count;
      const auto got = table.check(rt, 0, {a, b, 4, 1, ts, sp, dp}, act);
      ASSERT_EQ(got == ThresholdTable::alert, want) << text << " match " << n;
    }
  }
  ThresholdSpec s;
  EXPECT_NE(parse_threshold("detection_filter: track by_dst, count 3, seconds 10, unique_on proto", s), "");
  EXPECT_NE(parse_threshold("threshold: type limit, track by_dst, count 3, seconds 10, unique_on dst_port", s), "");
}

// Suricata's flow tracking: a by_flow threshold counts each flow apart; with no flow it does not alert.
TEST(Thresholds, ByFlowCountsEachFlow) {
  RuleThresholds rt;
  rt.thresholds.resize(1);
  ASSERT_EQ(parse_threshold("threshold: type limit, track by_flow, count 2, seconds 3600", rt.thresholds[0]), "");
  ThresholdTable table;
  uint8_t a[16] = {10, 0, 0, 1}, b[16] = {10, 0, 0, 2};
  ThresholdSpec::NewAction act;
  std::vector<int> got;
  for (uint64_t flow : {1, 1, 2, 1, 2, 2, 3, 0})
    got.push_back(table.check(rt, 0, {a, b, 4, flow, 1000}, act));
  EXPECT_EQ(got, (std::vector<int>{1, 1, 1, 2, 1, 2, 1, 0}));  // alert, ..., silent past the limit, no flow: no alert
}

// threshold.config lines as Suricata's util-threshold-config.c reads them, and how the entries are
// installed on rules (SetupThresholdRule, SetupSuppressRule): replace, keep, wildcard, noalert.
TEST(Thresholds, ConfigInstallsAsSuricata) {
  const auto dir = std::filesystem::temp_directory_path() / ("gaspp-thr-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "threshold.config").string();
  {
    std::ofstream f(path);
    f << "# comment\n"
         "\n"
         "threshold gen_id 1, sig_id 10, type limit, track by_src, count 1, seconds 60\n"       // replaces 10's own
         "rate_filter gen_id 1, sig_id 11, track by_rule, count 5, seconds 1, new_action drop, timeout 9\n"  // 11 has one: kept
         "event_filter gen_id 1, sig_id 12, type both, track by_flow, count 3, seconds 7\n"
         "rate_filter gen_id 1, sig_id 12, track by_src, count 2, seconds 3, \\\n"
         "   new_action pass, timeout 30\n"                                                        // 12 has one now: skipped
         "suppress gen_id 1, sig_id 13\n"
         "suppress gen_id 1, sig_id 14, track by_either, ip [10.0.0.0/8, $DNS]\n"
         "threshold gen_id 0, sig_id 0, type threshold, track by_dst, count 4, seconds 2\n"      // every rule still without one
         "suppress gen_id 1, sig_id 99\n"                                                          // no such rule
         "threshold gen_id 0, sig_id 5, type limit, track by_src, count 1, seconds 1\n"          // error: sid with gid 0
         "threshold gen_id 1, sig_id 15, type sometimes, track by_src, count 1, seconds 1\n"     // error
         "suppress gen_id 1, sig_id 15, track by_src, ip $NOPE\n"                                  // error: unknown var
         "rate_filter gen_id 1, sig_id 15, track by_src, count 0, seconds 1, new_action alert, timeout 1\n";  // count 0
  }
  RuleVars vars;
  vars.addr["DNS"] = "192.168.1.53";
  std::vector<ThresholdConfigEntry> entries;
  std::vector<RuleError> errors;
  ASSERT_TRUE(load_threshold_config(path, vars, entries, errors));
  std::vector<uint32_t> error_lines;
  for (const RuleError& e : errors) error_lines.push_back(e.line);
  EXPECT_EQ(error_lines, (std::vector<uint32_t>{12, 13, 14, 15}));
  ASSERT_EQ(entries.size(), 8u);
  EXPECT_EQ(entries[3].line, 6u);  // the continued entry has its first line's number
  EXPECT_EQ(entries[3].spec.new_action, ThresholdSpec::pass);
  EXPECT_EQ(entries[3].spec.timeout, 30u);

  const std::vector<RuleId> ids = {{1, 10}, {1, 11}, {1, 12}, {1, 13}, {1, 14}, {1, 16}, {3, 17}};
  std::vector<RuleThresholds> out(ids.size());
  ThresholdSpec own;
  ASSERT_EQ(parse_threshold("threshold: type both, track by_dst, count 9, seconds 9", own), "");
  out[0].thresholds.push_back(own);
  ASSERT_EQ(parse_threshold("detection_filter: track by_src, count 2, seconds 9", own), "");
  out[1].thresholds.push_back(own);
  std::vector<size_t> unmatched;
  apply_threshold_config(entries, ids, out, unmatched);
  EXPECT_EQ(unmatched, (std::vector<size_t>{7}));
  auto kinds = [&](size_t k) {
    std::vector<int> v;
    for (const ThresholdSpec& t : out[k].thresholds) v.push_back(t.kind * 10 + t.track);
    return v;
  };
  EXPECT_EQ(kinds(0), (std::vector<int>{ThresholdSpec::limit * 10 + ThresholdSpec::by_src}));
  EXPECT_EQ(kinds(1), (std::vector<int>{ThresholdSpec::detection_filter * 10 + ThresholdSpec::by_src}));
  EXPECT_EQ(kinds(2), (std::vector<int>{ThresholdSpec::both * 10 + ThresholdSpec::by_flow}));
  EXPECT_TRUE(out[3].noalert);
  EXPECT_EQ(kinds(3), (std::vector<int>{ThresholdSpec::threshold * 10 + ThresholdSpec::by_dst}));
  ASSERT_EQ(out[4].suppress.size(), 1u);
  EXPECT_EQ(kinds(5), (std::vector<int>{ThresholdSpec::threshold * 10 + ThresholdSpec::by_dst}));
  EXPECT_EQ(kinds(6), (std::vector<int>{ThresholdSpec::threshold * 10 + ThresholdSpec::by_dst}));  // gen_id 0: any gid

  // The suppression of sid 14: either address on the list silences it.
  ThresholdTable table;
  ThresholdSpec::NewAction act;
  RuleThresholds only_suppress;
  only_suppress.suppress = out[4].suppress;
  struct Hit {
    uint8_t src3, dst3, src0, dst0;
    int want;
  };
  for (const Hit& h : {Hit{1, 2, 10, 172, 2}, Hit{1, 53, 172, 192, 2}, Hit{1, 2, 172, 172, 1}, Hit{53, 1, 192, 172, 2}}) {
    uint8_t a[16] = {h.src0, uint8_t(h.src0 == 192 ? 168 : 0), uint8_t(h.src0 == 192 ? 1 : 0), h.src3};
    uint8_t b[16] = {h.dst0, uint8_t(h.dst0 == 192 ? 168 : 0), uint8_t(h.dst0 == 192 ? 1 : 0), h.dst3};
    EXPECT_EQ(table.check(only_suppress, 4, {a, b, 4, 1, 1000}, act), h.want)
        << int(h.src0) << "." << int(h.src3) << " -> " << int(h.dst0) << "." << int(h.dst3);
  }
  std::filesystem::remove_all(dir);
}

// rate_filter: matches past `count` in a window switch to the new action, which holds until more
// than `timeout` whole seconds after it took effect; the alerts themselves are all written.
TEST(Thresholds, RateFilterHoldsItsActionForTheTimeout) {
  RuleThresholds rt;
  ThresholdSpec s;
  s.kind = ThresholdSpec::rate_filter;
  s.track = ThresholdSpec::by_rule;
  s.count = 2;
  s.seconds = 10;
  s.new_action = ThresholdSpec::drop;
  s.timeout = 5;
  rt.thresholds.push_back(s);
  ThresholdTable table;
  uint8_t a[16] = {1}, b[16] = {2};
  const uint64_t sec = 1'000'000'000ull;
  struct Step {
    uint64_t ts;
    ThresholdSpec::NewAction want;
  };
  const Step steps[] = {{0, ThresholdSpec::keep},        {1 * sec, ThresholdSpec::keep},  // 1st, 2nd: count not passed
                        {2 * sec, ThresholdSpec::drop},        // 3rd in the window: the new action
                        {6 * sec, ThresholdSpec::drop},        // 4 s after: held
                        {7 * sec + 5, ThresholdSpec::drop},    // 5 whole seconds: still held
                        {8 * sec, ThresholdSpec::keep},        // 6 > 5: timeout over, this match counts nothing
                        {9 * sec, ThresholdSpec::drop},        // the old window (from 0) still holds 4 > 2 matches
                        {30 * sec, ThresholdSpec::keep},       // held until 14 s; off now
                        {41 * sec, ThresholdSpec::keep},       // a new window opens (41 > 0 + 10)
                        {42 * sec, ThresholdSpec::keep},       // 2nd of it
                        {43 * sec, ThresholdSpec::drop}};
  for (const Step& st : steps) {
    ThresholdSpec::NewAction act;
    EXPECT_EQ(table.check(rt, 0, {a, b, 4, 1, st.ts}, act), ThresholdTable::alert);
    EXPECT_EQ(act, st.want) << "at " << st.ts;
  }
}

namespace {

// The hooks fw_http_feed reaches on a stream, as "q1".."q6" (request levels) and "r1".."r6",
// fed in pieces of `step` bytes (0: whole), with the connection's end after the last piece.
std::string http_hooks(const std::string& req, const std::string& resp, size_t step) {
  FwHttpState st{};
  std::string got;
  for (int d = 0; d < 2; ++d) {
    const std::string& s = d ? resp : req;
    auto hook = [&](uint8_t level) {
      got += std::string(d ? "r" : "q") + char('0' + level) + " ";
      if (level == 2 && !d) got += "[" + std::string(st.dir[0].tok, st.dir[0].tok_len) + "] ";
      if (level == 2 && d) got += "[" + std::string(st.dir[1].tok, st.dir[1].tok_len) + "] ";
      return true;
    };
    const size_t n = step ? step : std::max<size_t>(1, s.size());
    for (size_t at = 0; at < s.size(); at += n)
      fw_http_feed(st, d, reinterpret_cast<const uint8_t*>(s.data()) + at, uint32_t(std::min(n, s.size() - at)), hook);
    fw_http_end(st, d, hook);
  }
  return got;
}

}  // namespace

TEST(FirewallPolicy, HttpHooksFollowMessagesWhateverTheSegmentation) {
  // Expected hook sequences from HTTP/1.1's message framing (RFC 9112 §6): a body has a
  // Content-Length or is chunked; a response without either runs to the end of the connection;
  // 1xx/204/304 and answers to HEAD have none. Every split of the bytes must reach the same hooks.
  struct Case {
    const char* name;
    std::string req, resp, want;
  };
  const std::string all6 = "q1 q2 [GET] q3 q4 q5 q6 ";
  const Case cases[] = {
      {"get, response with length", "GET / HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
       all6 + "r1 r2 [200] r3 r4 r5 r6 "},
      {"post with a body, two requests pipelined", "POST /x HTTP/1.1\r\ncontent-LENGTH: 3\r\n\r\nabcGET /y HTTP/1.1\r\n\r\n", "",
       "q1 q2 [POST] q3 q4 q5 q6 " + all6},
      {"chunked request with a trailer", "PUT / HTTP/1.1\r\nTransfer-Encoding: gzip, CHUNKED\r\n\r\n4;ext=1\r\nWiki\r\n5\r\npedia\r\n0\r\nX-T: 1\r\n\r\n",
       "", "q1 q2 [PUT] q3 q4 q5 q6 "},
      {"chunked body not finished", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nabc", "",
       "q1 q2 [POST] q3 "},
      {"response until the connection ends", "GET / HTTP/1.0\r\n\r\n", "HTTP/1.0 200 OK\r\nServer: x\r\n\r\nall of this is body",
       all6 + "r1 r2 [200] r3 r4 r5 r6 "},
      {"answer to HEAD has no body", "HEAD / HTTP/1.1\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n",
       "q1 q2 [HEAD] q3 q4 q5 q6 r1 r2 [200] r3 r4 r5 r6 "},
      {"204 and 100 have no body", "GET / HTTP/1.1\r\n\r\n", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
       all6 + "r1 r2 [100] r3 r4 r5 r6 r1 r2 [204] r3 r4 r5 r6 "},
      {"request line only so far", "GET /index.html HTTP/1.1\r\nHost: exa", "", "q1 q2 [GET] "},
      {"leading blank lines are skipped", "\r\n\r\nGET / HTTP/1.1\r\n\r\n", "", all6},
      {"not HTTP: no hooks, responses ignored", "SSH-2.0-OpenSSH_9.6\r\n", "HTTP/1.1 200 OK\r\n\r\n", ""},
      {"lower-case method is not HTTP/1", "get / HTTP/1.1\r\n\r\n", "", ""},
  };
  for (const Case& c : cases) {
    for (size_t step : {size_t(0), size_t(1), size_t(2), size_t(3), size_t(7)})
      EXPECT_EQ(http_hooks(c.req, c.resp, step), c.want) << c.name << ", pieces of " << step;
  }
}

TEST(FirewallPolicy, RulesParseWithScopesHooksAndReasons) {
  RuleVars vars;
  Rule r;
  EXPECT_EQ(parse_rule("accept:hook tcp:all any any -> any 80 (sid:1;)", vars, r, RuleFile::firewall), "");
  EXPECT_EQ(r.hook, RuleHook::packet_all);
  EXPECT_EQ(r.scope, RuleScope::hook);
  EXPECT_EQ(parse_rule("accept:tx http1:request_line any any -> any any (http.method; content:\"P|4f|ST\"; nocase; alert; sid:2;)",
                       vars, r, RuleFile::firewall), "");
  EXPECT_EQ(r.content, "POST");
  EXPECT_TRUE(r.nocase && r.alert);
  EXPECT_EQ(r.buffer, RuleBuffer::http_method);
  EXPECT_EQ(parse_rule("drop:flow http1:response_line any any -> any any (http.stat_code; content:\"404\"; sid:3;)", vars, r,
                       RuleFile::firewall), "");
  // Mistakes name what is wrong.
  EXPECT_EQ(parse_rule("accept tcp:all any any -> any any (sid:4;)", vars, r, RuleFile::firewall).rfind("error:a firewall rule needs ACTION:SCOPE", 0), 0u);
  EXPECT_EQ(parse_rule("accept:hook tcp any any -> any any (sid:5;)", vars, r, RuleFile::firewall).rfind("error:a firewall rule needs PROTO:HOOK", 0), 0u);
  EXPECT_EQ(parse_rule("accept:hook http1:request_line any any -> any any (http.stat_code; content:\"2\"; sid:6;)", vars, r,
                       RuleFile::firewall).rfind("error:http.stat_code is not available", 0), 0u);
  EXPECT_EQ(parse_rule("accept:hook tcp:all any any -> any any (sid:7;)", vars, r).rfind("error:'accept:hook' is a firewall rule", 0), 0u);
  EXPECT_EQ(parse_rule("accept:hook tcp:pre_flow any any -> any any (sid:8;)", vars, r, RuleFile::firewall), "");
  EXPECT_EQ(r.hook, RuleHook::packet_pre_flow);
  EXPECT_EQ(parse_rule("drop:packet udp:pre_stream any any -> any any (flow:to_client; sid:10;)", vars, r, RuleFile::firewall), "");
  EXPECT_EQ(r.hook, RuleHook::packet_pre_stream);
  EXPECT_EQ(r.flow_dir, 2);
  EXPECT_EQ(parse_rule("accept:hook tcp:flow_start any any -> any any (flow:established,from_client; tcp.session:closing,setup; sid:11;)",
                       vars, r, RuleFile::firewall), "");
  EXPECT_EQ(r.hook, RuleHook::packet_all);
  EXPECT_TRUE(r.flow_start);
  EXPECT_EQ(r.flow_dir, 1);
  EXPECT_EQ(r.flow_est, 1);
  EXPECT_EQ(r.session, kSessionClosing | kSessionSetup);
  EXPECT_EQ(parse_rule("accept:hook tcp:all any any -> any any (flow:only_stream; sid:12;)", vars, r, RuleFile::firewall),
            "skip:flow option only_stream in a firewall rule");
  EXPECT_EQ(parse_rule("accept:hook http1:request_line any any -> any any (flow:to_server; sid:13;)", vars, r, RuleFile::firewall),
            "skip:keyword flow at an application-layer hook");
  EXPECT_EQ(parse_rule("accept:hook http1:request_headers any any -> any any (http.user_agent; content:\"curl\"; sid:9;)", vars, r,
                       RuleFile::firewall), "skip:keyword http.user_agent");
}

TEST(FirewallPolicy, DefaultDropAndAppHooksGiveTheSameVerdictsAtEveryBatchSize) {
  // HTTP traffic with reordering, duplicates and loss. Firewall rules accept TCP packets to port 80
  // (not from it: servers' packets meet the default packet policy) and every HTTP hook, except
  // that a request line must be a POST: the generator sends GETs, so each flow whose first request
  // line is seen is dropped there (default_app_policy), its later packets by the flow decision.
  // Verdicts and the accounting must not depend on batch boundaries.
  GenConfig g;
  g.mode = GenMode::http;
  g.packets = 6000;
  g.flows = 40;
  g.reorder = 0.02;
  g.duplicate = 0.02;
  g.loss = 0.01;
  g.seed = 21;
  const CaptureFile cap = test::generated_capture(g, "fw-policy");
  const std::filesystem::path rules = std::filesystem::path(test::temp_path("fw-policy.rules"));
  {
    std::FILE* f = std::fopen(rules.string().c_str(), "w");
    std::fputs("accept:hook tcp:all any any -> any 80 (sid:1;)\n"
               "accept:hook http1:request_started any any -> any any (sid:10;)\n"
               "accept:hook http1:request_line any any -> any any (http.method; content:\"POST\"; alert; sid:11;)\n",
               f);
    for (const char* h : {"request_headers", "request_body", "request_trailer", "request_complete", "response_started",
                          "response_line", "response_headers", "response_body", "response_trailer", "response_complete"})
      std::fprintf(f, "accept:hook http1:%s any any -> any any (sid:%d;)\n", h, 100 + int(std::strlen(h)));
    std::fclose(f);
  }
  std::vector<uint8_t> first;
  ModuleSet::VerdictStats first_stats;
  for (uint32_t batch : {65536u, 7u, 1u}) {
    ModuleSet mods;
    mods.add(make_module("firewall", {{"firewall-rules", rules.string()}}));
    ASSERT_TRUE(mods.firewall_mode());
    RunOptions ro;
    auto be = backend_with(mods, batch, ro);
    Collect out;
    std::vector<uint8_t> drop;
    run_capture(cap, *be, ro, [&](const PacketBatch& b) {
      for (uint32_t i = 0; i < b.count; ++i) drop.push_back(b.h_verdict[i] & kVerdictDrop);
      mods.finish_batch(b, out);
    });
    const ModuleSet::VerdictStats& s = mods.verdict_stats();
    SCOPED_TRACE("batch " + std::to_string(batch));
    EXPECT_EQ(s.fw_accepted + s.fw_blocked, drop.size());
    EXPECT_EQ(s.ips_accepted, s.fw_accepted);
    EXPECT_GT(s.reason[kDropReasonDefaultAppPolicy], 20u);  // most of the 40 flows
    EXPECT_GT(s.reason[ModuleSet::VerdictStats::kFlowDrop], s.reason[kDropReasonDefaultAppPolicy]);
    EXPECT_GT(s.reason[kDropReasonDefaultPacketPolicy], 0u);
    if (first.empty()) {
      first = drop;
      first_stats = s;
      continue;
    }
    ASSERT_EQ(drop.size(), first.size());
    for (size_t i = 0; i < drop.size(); ++i) ASSERT_EQ(drop[i], first[i]) << "packet " << i + 1;
    for (int r = 1; r <= int(ModuleSet::VerdictStats::kFlowDrop); ++r) EXPECT_EQ(s.reason[r], first_stats.reason[r]) << "reason " << r;
    EXPECT_EQ(s.fw_accepted, first_stats.fw_accepted);
  }
  std::printf("firewall policy: %zu packets, %llu accepted, %llu flows dropped at the request line, %llu packets by "
              "flow decision, %llu by the packet policy; equal at batch sizes 65536, 7, 1\n",
              first.size(), (unsigned long long)first_stats.fw_accepted,
              (unsigned long long)first_stats.reason[kDropReasonDefaultAppPolicy], (unsigned long long)first_stats.reason[ModuleSet::VerdictStats::kFlowDrop],
              (unsigned long long)first_stats.reason[kDropReasonDefaultPacketPolicy]);
}
