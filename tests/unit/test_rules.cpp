// The firewall's rule parser (modules/firewall/rules.hpp): a table of syntax cases with what each
// must match, and every rule file of ET Open loading with its rules counted by outcome.
#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "modules/firewall/rules.hpp"
#include "test_support.hpp"

using namespace gaspp;

namespace {

struct Addr {
  uint8_t family;
  uint8_t b[16] = {};
  explicit Addr(const char* s) {
    family = inet_pton(AF_INET, s, b) == 1 ? 4 : 6;
    if (family == 6) inet_pton(AF_INET6, s, b);
  }
};

bool src_matches(const Rule& r, const char* a) { Addr x(a); return r.src.matches(x.family, x.b); }
bool dst_matches(const Rule& r, const char* a) { Addr x(a); return r.dst.matches(x.family, x.b); }

Rule parse_ok(const std::string& text) {
  Rule r;
  const std::string res = parse_rule(text, RuleVars{}, r);
  EXPECT_EQ(res, "") << text;
  return r;
}

}  // namespace

TEST(Rules, HeaderSyntaxAndWhatItMatches) {
  {
    const Rule r = parse_ok(R"(alert ip any any -> any any (msg:"all"; sid:1; rev:2;))");
    EXPECT_EQ(r.proto, 0);
    EXPECT_EQ(r.msg, "all");
    EXPECT_EQ(r.sid, 1u);
    EXPECT_EQ(r.rev, 2u);
    EXPECT_TRUE(src_matches(r, "1.2.3.4"));
    EXPECT_TRUE(dst_matches(r, "2001:db8::1"));
    EXPECT_TRUE(r.dport.matches(0) && r.dport.matches(65535));
  }
  {
    const Rule r = parse_ok(R"(drop tcp 10.0.0.0/8 any -> !10.1.0.0/16 [80,443,8000:8100] (msg:"a \"q\"\; b"; sid:2;))");
    EXPECT_EQ(r.action, RuleAction::drop);
    EXPECT_EQ(r.proto, 6);
    EXPECT_EQ(r.msg, "a \"q\"; b");
    EXPECT_TRUE(src_matches(r, "10.255.0.1"));
    EXPECT_FALSE(src_matches(r, "11.0.0.1"));
    EXPECT_FALSE(dst_matches(r, "10.1.2.3"));
    EXPECT_TRUE(dst_matches(r, "10.2.2.3"));
    for (uint16_t p : {80, 443, 8000, 8050, 8100}) EXPECT_TRUE(r.dport.matches(p)) << p;
    for (uint16_t p : {81, 7999, 8101}) EXPECT_FALSE(r.dport.matches(p)) << p;
  }
  {
    // Address ranges, both ends included, as Suricata reads them; negated inside a list.
    const Rule r = parse_ok(R"(alert ip 10.0.0.5-10.0.1.2 any -> [2001:db8::1-2001:db8::ff,!2001:db8::10] any (sid:9;))");
    EXPECT_FALSE(src_matches(r, "10.0.0.4"));
    EXPECT_TRUE(src_matches(r, "10.0.0.5"));
    EXPECT_TRUE(src_matches(r, "10.0.0.255"));
    EXPECT_TRUE(src_matches(r, "10.0.1.2"));
    EXPECT_FALSE(src_matches(r, "10.0.1.3"));
    EXPECT_TRUE(dst_matches(r, "2001:db8::1"));
    EXPECT_TRUE(dst_matches(r, "2001:db8::ff"));
    EXPECT_FALSE(dst_matches(r, "2001:db8::10"));
    EXPECT_FALSE(dst_matches(r, "2001:db8::100"));
    Rule bad;
    EXPECT_EQ(parse_rule("alert ip 10.0.0.9-10.0.0.1 any -> any any (sid:1;)", RuleVars{}, bad).rfind("error:source address: address range", 0), 0u);
    EXPECT_EQ(parse_rule("alert ip 10.0.0.1-2001:db8::1 any -> any any (sid:1;)", RuleVars{}, bad).rfind("error:source address: address range", 0), 0u);
  }
  {
    const Rule r = parse_ok(R"(pass udp [10.0.0.0/8,!10.1.0.0/16] :1023 <> $HOME_NET !53 (sid:3;))");
    EXPECT_TRUE(r.bidirectional);
    EXPECT_TRUE(src_matches(r, "10.2.0.1"));
    EXPECT_FALSE(src_matches(r, "10.1.0.1"));
    EXPECT_TRUE(r.sport.matches(1023));
    EXPECT_FALSE(r.sport.matches(1024));
    EXPECT_TRUE(dst_matches(r, "192.168.7.7"));
    EXPECT_FALSE(dst_matches(r, "8.8.8.8"));
    EXPECT_FALSE(r.dport.matches(53));
    EXPECT_TRUE(r.dport.matches(54));
  }
  {
    const Rule r = parse_ok(R"(alert ip 2001:db8::/32 any -> $EXTERNAL_NET any (sid:4;))");
    EXPECT_TRUE(src_matches(r, "2001:db8:ffff::1"));
    EXPECT_FALSE(src_matches(r, "2001:db9::1"));
    EXPECT_FALSE(src_matches(r, "32.1.13.184"));  // an IPv4 address never matches an IPv6 prefix
    EXPECT_TRUE(dst_matches(r, "8.8.8.8"));
    EXPECT_FALSE(dst_matches(r, "172.16.0.1"));
  }
  {
    const Rule r = parse_ok(R"(reject tcp ![1.1.1.1,2.2.2.0/24] 1024: -> [any,!3.3.3.3] [$HTTP_PORTS,![81,82]] (sid:5;))");
    EXPECT_EQ(r.action, RuleAction::reject);
    EXPECT_FALSE(src_matches(r, "1.1.1.1"));
    EXPECT_FALSE(src_matches(r, "2.2.2.9"));
    EXPECT_TRUE(src_matches(r, "1.1.1.2"));
    EXPECT_TRUE(r.sport.matches(1024) && !r.sport.matches(1023));
    EXPECT_FALSE(dst_matches(r, "3.3.3.3"));
    EXPECT_TRUE(dst_matches(r, "3.3.3.4"));
    EXPECT_TRUE(r.dport.matches(80));
    EXPECT_FALSE(r.dport.matches(81));
  }
  {  // limits and flag-setting options keep a rule a firewall rule; threshold is kept for alerts
    const Rule r = parse_ok(
        R"(alert ip [5.42.64.0/22] any -> $HOME_NET any (msg:"x"; threshold: type limit, track by_src, seconds 3600, count 1; flowbits:set,ET.Evil; classtype:misc-attack; sid:6; metadata:a b;))");
    EXPECT_EQ(r.threshold, "threshold:type limit, track by_src, seconds 3600, count 1");
  }
}

TEST(Rules, SkippedAndBrokenRulesSayWhy) {
  const struct {
    const char* text;
    const char* want;
  } cases[] = {
      {R"(alert tcp any any -> any any (content:"x"; sid:1;))", "skip:keyword content"},
      {R"(alert tcp any any -> any 80 (flow:established; sid:1;))", "skip:keyword flow"},
      {R"(alert ip any any -> any any (flowbits:isset,x; sid:1;))", "skip:keyword flowbits isset"},
      {R"(alert http any any -> any any (sid:1;))", "skip:app-layer protocol http"},
      {R"(alert tcp-stream any any -> any any (sid:1;))", "skip:protocol tcp-stream (stream matching)"},
      {R"(alert ip $NOPE any -> any any (sid:1;))", "error:source address: unknown variable $NOPE"},
      {R"(alert ip 300.1.1.1 any -> any any (sid:1;))", "error:source address: not an address: '300.1.1.1'"},
      {R"(alert ip 10.0.0.0/33 any -> any any (sid:1;))", "error:source address: prefix over 32 in '10.0.0.0/33'"},
      {R"(alert ip !any any -> any any (sid:1;))", "error:source address: '!any' matches nothing"},
      {R"(alert tcp any 70000 -> any any (sid:1;))", "error:source port: not a port or range: '70000'"},
      {R"(alert tcp any 90:80 -> any any (sid:1;))", "error:source port: not a port or range: '90:80'"},
      {R"(alert ip any any => any any (sid:1;))", "error:=> (a transactional rule) needs an application-layer protocol"},
      {R"(alert ip any any >> any any (sid:1;))", "error:direction must be ->, <> or =>, not '>>'"},
      {R"(alert ip any any -> any (sid:1;))", "error:the header needs 7 fields (action proto src sport dir dst dport), found 6"},
      {R"(alert ip any any -> any any (msg:"x";))", "error:no sid"},
      {R"(alert ip any any -> any any (msg:"x; sid:1;))", "error:msg must be a quoted string, not \"x"},
      {R"(block ip any any -> any any (sid:1;))", "error:unknown action 'block'"},
      {R"(alert icmp any 80 -> any any (sid:1;))", "error:ports given for protocol icmp"},
      {R"(alert ip [1.1.1.1 any -> any any (sid:1;))", "error:unbalanced '[' and ']' in the header"},
      {R"(alert ip any any -> [2.2.2.2]] any (sid:1;))", "error:unbalanced '[' and ']' in the header"},
  };
  for (const auto& c : cases) {
    Rule r;
    EXPECT_EQ(parse_rule(c.text, RuleVars{}, r), c.want) << c.text;
  }
}

// Header rules loaded twice keep the newest rev, as the signature engine's do (Suricata's
// DetectEngineSignatureIsDuplicate; test_detect.cpp has the cases across files).
TEST(Rules, DuplicateSidsKeepTheNewestRev) {
  const std::filesystem::path f = std::filesystem::path(test::temp_path("dup_header.rules"));
  {
    std::ofstream o(f);
    o << "alert ip 10.0.0.1 any -> any any (msg:\"old\"; sid:7; rev:1;)\n"
      << "alert ip 10.0.0.2 any -> any any (msg:\"new\"; sid:7; rev:3;)\n"
      << "alert ip 10.0.0.3 any -> any any (msg:\"stale\"; sid:7; rev:2;)\n";
  }
  RuleSet set;
  ASSERT_TRUE(load_rules_file(f.string(), RuleVars{}, set));
  ASSERT_EQ(set.rules.size(), 1u);
  EXPECT_EQ(set.rules[0].msg, "new");
  EXPECT_EQ(set.duplicates_replaced, 1u);
  ASSERT_EQ(set.errors.size(), 1u);
  EXPECT_EQ(set.errors[0].line, 3u);
  EXPECT_NE(set.errors[0].why.find("rev 2 is loaded already with rev 3"), std::string::npos) << set.errors[0].why;
}

// Every ET Open rule file loads. Header-only rules (the IP lists among them) become firewall rules;
// the others are counted by the keyword or protocol that needs more than the header; no line fails
// to parse. The table of counts is printed.
TEST(Rules, EveryEtOpenFileLoads) {
  const auto dir = test::shared_data_dir() / "rules" / "et-open";
  GASPP_REQUIRE_PATH(dir);
  std::vector<std::filesystem::path> files;
  for (auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".rules") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  RuleSet all;
  const RuleVars vars;
  std::printf("%-40s %8s %10s %8s %7s\n", "file", "rules", "firewall", "skipped", "errors");
  for (const auto& f : files) {
    RuleSet one;
    ASSERT_TRUE(load_rules_file(f.string(), vars, one)) << f;
    const uint64_t read = one.lines - one.comments;
    // every rule has an outcome (one replaced by a newer rev of its sid is counted as that)
    EXPECT_EQ(one.rules.size() + one.skipped() + one.errors.size() + one.duplicates_replaced, read) << f;
    std::printf("%-40s %8llu %10zu %8llu %7zu\n", f.filename().c_str(), (unsigned long long)read, one.rules.size(),
                (unsigned long long)one.skipped(), one.errors.size());
    for (const auto& e : one.errors) ADD_FAILURE() << e.file << ":" << e.line << ": " << e.why;
    all.rules.insert(all.rules.end(), one.rules.begin(), one.rules.end());
    for (auto& [k, v] : one.skipped_by_reason) all.skipped_by_reason[k] += v;
    const std::string name = f.filename().string();
    if (name == "drop.rules" || name == "tor.rules" || name == "ciarmy.rules" || name == "compromised.rules") {
      EXPECT_GT(one.rules.size(), 0u) << name;
      EXPECT_EQ(one.skipped(), 0u) << name << ": an IP list rule needs only its header";
    }
  }
  std::printf("firewall rules: %zu; skipped by reason (top 12):\n", all.rules.size());
  std::vector<std::pair<uint64_t, std::string>> by;
  for (auto& [k, v] : all.skipped_by_reason) by.emplace_back(v, k);
  std::sort(by.rbegin(), by.rend());
  for (size_t i = 0; i < by.size() && i < 12; ++i) std::printf("  %8llu  %s\n", (unsigned long long)by[i].first, by[i].second.c_str());
  EXPECT_GT(all.rules.size(), 1000u);
}
