// Signatures (modules/detect): the parser on the real rule sets, the inspection engine against a
// brute-force reference, and the detect module end to end.
#include <gtest/gtest.h>
#include <arpa/inet.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include <pcap/pcap.h>
#include <nlohmann/json.hpp>

#include "core/modules.hpp"
#include "decode/decoder.hpp"
#include "modules/detect/base64.hpp"
#include "modules/detect/dataset.hpp"
#include "modules/detect/iprep.hpp"
#include "modules/detect/tag.hpp"
#include "modules/detect/body_window.hpp"
#include "modules/detect/detect.hpp"
#include "modules/detect/signature.hpp"
#include "modules/detect/transform.hpp"
#include "pipeline/pipeline.hpp"
#include "test_support.hpp"

namespace gaspp {
namespace {

struct LoadTotals {
  uint64_t read = 0, loaded = 0, skipped = 0, app = 0, errors = 0;
  std::map<std::string, uint64_t> reasons;
};

// Loads every *.rules file of dir, printing a row per file; fails on any line that does not parse.
LoadTotals load_dir(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  for (auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".rules") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  LoadTotals t;
  std::printf("%-40s %8s %8s %8s %9s %7s\n", "file", "rules", "loaded", "skipped", "app-layer", "errors");
  for (const auto& f : files) {
    SignatureSet one;
    EXPECT_TRUE(load_signature_file(f.string(), RuleVars{}, one)) << f;
    const uint64_t read = one.lines - one.comments;
    // every rule has an outcome (one replaced by a newer rev of its sid is counted as that)
    EXPECT_EQ(one.sigs.size() + one.skipped() + one.errors.size() + one.duplicates_replaced, read) << f;
    std::printf("%-40s %8llu %8zu %8llu %9llu %7zu\n", f.filename().c_str(), (unsigned long long)read, one.sigs.size(),
                (unsigned long long)one.skipped(), (unsigned long long)one.skipped_app_layer(), one.errors.size());
    for (const auto& e : one.errors) ADD_FAILURE() << e.file << ":" << e.line << ": " << e.why;
    t.read += read;
    t.loaded += one.sigs.size();
    t.skipped += one.skipped();
    t.app += one.skipped_app_layer();
    t.errors += one.errors.size();
    for (auto& [k, v] : one.skipped_by_reason) t.reasons[k] += v;
  }
  std::printf("total: %llu rules, %llu loaded (%.1f%%), %llu skipped (%llu need the application layer), %llu errors\n",
              (unsigned long long)t.read, (unsigned long long)t.loaded, t.read ? 100.0 * double(t.loaded) / double(t.read) : 0.0,
              (unsigned long long)t.skipped, (unsigned long long)t.app, (unsigned long long)t.errors);
  std::vector<std::pair<uint64_t, std::string>> by;
  for (auto& [k, v] : t.reasons) by.emplace_back(v, k);
  std::sort(by.rbegin(), by.rend());
  std::printf("skipped by reason (top 25):\n");
  for (size_t i = 0; i < by.size() && i < 25; ++i) std::printf("  %8llu  %s\n", (unsigned long long)by[i].first, by[i].second.c_str());
  return t;
}

// Every ET Open file loads with no line in error. Of the rules that need nothing of the application
// layer, at least 85% load.
TEST(Signatures, EveryEtOpenFileLoads) {
  const auto dir = test::shared_data_dir() / "rules" / "et-open";
  GASPP_REQUIRE_PATH(dir);
  const LoadTotals t = load_dir(dir);
  EXPECT_EQ(t.errors, 0u);
  ASSERT_GT(t.read, t.app);
  const double share = double(t.loaded) / double(t.read - t.app);
  std::printf("loaded of the rules without application-layer keywords: %.1f%%\n", 100.0 * share);
  EXPECT_GE(share, 0.85);
}

// Each transform on the examples of Suricata's documentation and unit tests, and the digests of
// RFC 1321 / FIPS 180 ("abc").
TEST(Transforms, ApplyAsSuricataDoes) {
  struct Case {
    const char* kw;
    const char* arg;
    std::string in, out;
  };
  const std::string xored = "}k\xbb\x8c" "ze\xba\x9b" "0";  // "password=" xor 0d0ac8ff (detect-xor)
  const Case cases[] = {
      {"to_lowercase", "", "AbC/x%41", "abc/x%41"},
      {"to_uppercase", "", "AbC/x%41", "ABC/X%41"},
      {"strip_whitespace", "", " a b\tc\r\n\v\fd ", "abcd"},
      {"compress_whitespace", "", "a  \t b\r\nc", "a b\rc"},
      {"dotprefix", "", "hello.google.com", ".hello.google.com"},
      {"to_md5", "", "abc", "\x90\x01\x50\x98\x3c\xd2\x4f\xb0\xd6\x96\x3f\x7d\x28\xe1\x7f\x72"},
      {"to_sha1", "", "abc", "\xa9\x99\x3e\x36\x47\x06\x81\x6a\xba\x3e\x25\x71\x78\x50\xc2\x6c\x9c\xd0\xd8\x9d"},
      {"to_sha256", "", "abc",
       std::string("\xba\x78\x16\xbf\x8f\x01\xcf\xea\x41\x41\x40\xde\x5d\xae\x22\x23\xb0\x03\x61\xa3\x96\x17\x7a\x9c"
       "\xb4\x10\xff\x61\xf2\x00\x15\xad", 32)},
      {"to_sha256", "", "", ""},  // an empty buffer stays empty
      {"url_decode", "", "a+b%41%4g%%41%4", "a bA%4g%%41%4"},
      {"url_decode", "", "%2b%+%", "+%+%"},
      {"xor", "\"0d0ac8ff\"", xored, "password="},
      {"xor", "offset 2,\"0d0ac8ff\"", "AB" + xored, "ABpassword="},
      {"xor", "extract 1 0", "\x01\x01q`", std::string("\0\0pa", 4)},
      {"pcrexform", "\"[a-zA-Z]+\\s+(.*)\\s+HTTP\"", "GET /dropper.php HTTP/1.1", "/dropper.php"},
      {"pcrexform", "\"x=(\\d+)\"", "no match here", "no match here"},
      {"header_lowercase", "", "Host: A:B\r\nUser-Agent: XY\r\n", "host: A:B\r\nuser-agent: XY\r\n"},
      {"strip_pseudo_headers", "", ":method: GET\r\nHost: x\r\n:path: /\r\n", "Host: x\r\n"},
      {"from_base64", "", "VGhpcyBpcyBTdXJpY2F0YQ==", "This is Suricata"},
      {"from_base64", "offset 6, mode rfc4648", "/?arg=dGhpc2lzYXRlc3QK", "thisisatest\n"},
      {"from_base64", "offset 6, mode rfc2045", "/?arg=Zm 9v Ym Fy", "foobar"},
      {"from_base64", "offset 6, mode rfc4648", "/?arg=Zm 9v Ym Fy", "f"},
      {"from_base64", "offset 6, mode strict", "/?arg=Zm 9v Ym Fy", "/?arg=Zm 9v Ym Fy"},  // nothing decodes
      {"from_base64", "mode strict", "Zm9vYg==", "foob"},
      {"from_base64", "mode strict", "Zm9vYh==", "Zm9vYh=="},  // unused bits set: not canonical
      {"from_base64", "bytes 4", "Zm9vYmFy", "foo"},
      {"from_base64", "bytes 8", "Zm9vYmFy", "Zm9vYmFy"},  // bytes not below what is left: as it was
      {"from_base64", "offset 8", "Zm9vYmFy", "Zm9vYmFy"},
      // subslice: Suricata's own cases (rust/src/detect/transforms/subslice.rs tests)
      {"subslice", "1", "this is suricata", "his is suricata"},
      {"subslice", "00,9", "this is suricata", "this is s"},
      {"subslice", "3", "this is suricata", "s is suricata"},
      {"subslice", "1,12", "this is suricata", "his is suric"},
      {"subslice", "13,-12", "this is suricata", " is suric"},
      {"subslice", "2, 30", "this is suricata", ""},
      {"subslice", "2, 30, truncate", "this is suricata", "is is suricata"},
      {"subslice", "13,-15", "this is suricata", "his is suric"},
      {"subslice", "10,-5", "this is suricata", "r"},
      {"subslice", "-3", "this is suricata", "ata"},
      {"subslice", "-20", "this is suricata", ""},
      {"subslice", "-20, truncate", "this is suricata", "this is suricata"},
      // gunzip / zlib_deflate: streams Python's gzip.compress / zlib.compress made of "hello world"
      {"gunzip", "", std::string("\x1f\x8b\x08\x00\xab@\x0bk\x02\xff\xcbH\xcd\xc9\xc9W(\xcf/\xcaI\x01\x00\x85\x11J\r\x0b\x00\x00\x00", 31), "hello world"},
      {"gunzip", "max-size 5", std::string("\x1f\x8b\x08\x00\xab@\x0bk\x02\xff\xcbH\xcd\xc9\xc9W(\xcf/\xcaI\x01\x00\x85\x11J\r\x0b\x00\x00\x00", 31), "hello"},
      {"zlib_deflate", "", std::string("x\x9c\xcbH\xcd\xc9\xc9W(\xcf/\xcaI\x01\x00\x1a\x0b\x04]", 19), "hello world"},
      {"zlib_deflate", "max-size 1kb", std::string("x\x9c\xcbH\xcd\xc9\xc9W(\xcf/\xcaI\x01\x00\x1a\x0b\x04]", 19), "hello world"},
      {"gunzip", "", "not gzip at all", ""},
      {"zlib_deflate", "", std::string("\x1f\x8b\x08\x00", 4), ""},  // gzip is not zlib
  };
  for (const Case& c : cases) {
    Transform t;
    std::string why;
    ASSERT_TRUE(parse_transform(c.kw, c.arg, t, why)) << c.kw;
    ASSERT_EQ(why, "") << c.kw << " " << c.arg;
    std::string b = c.in;
    apply_transform(t, b);
    EXPECT_EQ(b, c.out) << c.kw << " " << c.arg << " on '" << c.in << "'";
  }
}

// Suricata's parse errors of subslice and the decompressions (subslice.rs, decompress.rs tests).
TEST(Transforms, MalformedArgumentsAreErrors) {
  const std::pair<const char*, const char*> bad[] = {
      {"subslice", "f, y"}, {"subslice", "0:-10"}, {"subslice", "1 1"}, {"subslice", "1,0"}, {"subslice", ""},
      {"subslice", "1, 2, nottruncate"}, {"subslice", "1, 2, 3, 4"}, {"subslice", "1, 2, truncate, extra"},
      {"gunzip", "max-size 0"}, {"gunzip", "max-size 17mb"}, {"zlib_deflate", "size 10"}, {"gunzip", "max-size"},
  };
  for (const auto& [kw, arg] : bad) {
    Transform t;
    std::string why;
    ASSERT_TRUE(parse_transform(kw, arg, t, why)) << kw;
    EXPECT_EQ(why.rfind("error:", 0), 0u) << kw << " " << arg << " -> '" << why << "'";
  }
}

// Suricata's `requires` (gaspp follows 8.0.7, rules.hpp): a rule whose requirements fail is
// skipped before the rest is read, whatever else it holds; the signature parser and the header
// rules' parser each check the keywords against what they read.
TEST(Requires, RulesForOtherVersionsAndBuildsAreSkipped) {
  struct Case {
    const char* rule;
    const char* signature;  // the start of parse_signature's answer
    const char* rule_only;  // the start of parse_rule's (the firewall's header rules)
  };
  const Case cases[] = {
      {"alert tcp any any -> any any (content:\"a\"; requires: version >= 8; sid:1;)", "", "skip:keyword content"},
      {"alert tcp any any -> any any (content:\"a\"; requires: version >= 7 < 8; sid:1;)", "skip:requires version", "skip:requires version"},
      {"alert tcp any any -> any any (requires: version >= 7.0.3 < 8 | >= 8.0.7; sid:1;)", "", ""},
      {"alert tcp any any -> any any (requires: version >= 7.0.3 < 8 | >= 8.0.8; sid:1;)", "skip:requires version", "skip:requires version"},
      {"alert tcp any any -> any any (requires: version > 8.0.6 <= 8.0.7; sid:1;)", "", ""},
      {"alert tcp any any -> any any (requires: version >= 9.0.0, keyword sid; sid:1;)", "skip:requires version", "skip:requires version"},
      {"alert tcp any any -> any any (requires: version >= 8.0.0, keyword sid; sid:1;)", "", ""},
      {"alert tcp any any -> any any (requires: version >= 8, keyword foobar; sid:1;)", "skip:requires keyword foobar", "skip:requires keyword foobar"},
      {"alert smtp any any -> any any (requires: keyword email.body_md5; email.body_md5; content:\"0\"; sid:1;)", "", "skip:"},
      {"alert tcp any any -> any any (requires: keyword asn1; sid:1;)", "skip:requires keyword asn1", "skip:requires keyword"},
      {"alert tls any any -> any any (requires: feature ja3; ja3.hash; content:\"a\"; sid:1;)", "", "skip:"},
      {"alert tcp any any -> any any (requires: feature ja4; sid:1;)", "skip:requires feature ja4", "skip:requires feature ja4"},
      {"alert tcp any any -> any any (requires: color blue; sid:1;)", "skip:requires: unknown requirement", "skip:requires: unknown requirement"},
      {"alert tcp any any -> any any (requires: version 9; sid:1;)", "skip:requires: bad version", "skip:requires: bad version"},
      {"alert tcp any any -> any any (requires: version >= 8, version < 9; sid:1;)", "skip:requires: version given twice", "skip:requires: version given twice"},
      // Skipped before what this version cannot read (Suricata's requires-ok test).
      {"alert vxlan any any -> any any (requires: version >= 10; sid:1;)", "skip:requires version", "skip:requires version"},
      {"alert udp any any -> any any (vxlan_vni:10; requires: version >= 10; sid:2;)", "skip:requires version", "skip:requires version"},
      {"alert http any any => any any (requires: version >= 10; sid:3;)", "skip:requires version", "skip:requires version"},
      {"alert tcp any any -> any any (frame:smtp.not_supported; requires: version >= 10; sid:4;)", "skip:requires version", "skip:requires version"},
  };
  for (const Case& c : cases) {
    Signature s;
    const std::string r = parse_signature(c.rule, RuleVars{}, s);
    EXPECT_EQ(r.substr(0, std::strlen(c.signature)), c.signature) << c.rule << " -> " << r;
    Rule h;
    const std::string f = parse_rule(c.rule, RuleVars{}, h);
    EXPECT_EQ(f.substr(0, std::strlen(c.rule_only)), c.rule_only) << c.rule << " -> " << f;
  }
}

TEST(Transforms, RulesAreCheckedAsSuricataChecksThem) {
  struct Case {
    const char* rule;
    const char* result;  // the start of parse_signature's answer
  };
  const Case cases[] = {
      {"alert http any any -> any any (http.uri; to_lowercase; content:\"ABC\"; sid:1;)", "error:content"},
      {"alert http any any -> any any (http.uri; to_lowercase; content:!\"ABC\"; content:\"a\"; sid:1;)", ""},
      {"alert http any any -> any any (http.uri; to_uppercase; content:\"abc\"; sid:1;)", "error:content"},
      {"alert http any any -> any any (http.uri; strip_whitespace; content:\"a b\"; sid:1;)", "error:content"},
      {"alert http any any -> any any (http.uri; compress_whitespace; content:\"a  b\"; sid:1;)", "error:content"},
      {"alert http any any -> any any (http.uri; compress_whitespace; content:\"a b\"; sid:1;)", ""},
      {"alert http any any -> any any (http.uri; to_lowercase; to_sha256; content:\"|41|\"; sid:1;)", "error:content"},
      {"alert http any any -> any any (http.uri; pcrexform:\"abc\"; content:\"a\"; sid:1;)", "error:pcrexform needs exactly one"},
      {"alert http any any -> any any (http.uri; pcrexform:\"(a\"; content:\"a\"; sid:1;)", "error:pcrexform"},
      {"alert http any any -> any any (http.uri; xor:\"abc\"; content:\"a\"; sid:1;)", "error:xor"},
      {"alert http any any -> any any (http.uri; xor:\"zz\"; content:\"a\"; sid:1;)", "error:xor"},
      {"alert http any any -> any any (http.uri; from_base64: mode foo; content:\"a\"; sid:1;)", "error:from_base64"},
      {"alert http any any -> any any (http.uri; from_base64: offset 70000; content:\"a\"; sid:1;)", "error:from_base64"},
      {"alert http any any -> any any (http.uri; to_lowercase:x; content:\"a\"; sid:1;)", "error:to_lowercase takes no value"},
      {"alert tcp any any -> any any (content:\"a\"; to_lowercase; content:\"b\"; sid:1;)", "skip:app-layer:to_lowercase without"},
      {"alert tls any any -> any any (tls.sni; domain; content:\"a\"; sid:1;)", "skip:app-layer:domain"},
  };
  for (const Case& c : cases) {
    Signature s;
    const std::string r = parse_signature(c.rule, RuleVars{}, s);
    EXPECT_EQ(r.substr(0, std::strlen(c.result)), c.result) << c.rule << " -> " << r;
  }
  // One (buffer, transforms) pair is one buffer id, whichever rule names it; its prefixes take none.
  Signature a, b;
  ASSERT_EQ(parse_signature("alert http any any -> any any (http.uri; url_decode; to_lowercase; content:\"a\"; sid:1;)", RuleVars{}, a), "");
  ASSERT_EQ(parse_signature("alert http any any -> any any (http.uri; url_decode; to_lowercase; content:\"b\"; sid:2;)", RuleVars{}, b), "");
  EXPECT_EQ(a.ops[0].buf, b.ops[0].buf);
  EXPECT_EQ(base_buf(a.ops[0].buf), uint8_t(kBufHttpUri));
  EXPECT_STREQ(sig_buf_name(a.ops[0].buf), "http.uri|url_decode|to_lowercase");
  ASSERT_NE(derived_buf(a.ops[0].buf), nullptr);
  EXPECT_EQ(derived_buf(a.ops[0].buf)->chain.size(), 2u);
  // A multi-instance buffer's keyword again is a buffer of its own (a copy, no transforms);
  // ftp.reply, which Suricata does not register as multi-instance, stays one buffer; a
  // single-instance buffer's keyword again adds to it.
  Signature m, f, h;
  ASSERT_EQ(parse_signature("alert http2 any any -> any any (http.request_header; content:\"a\"; http.request_header; content:\"b\"; sid:3;)",
                            RuleVars{}, m), "");
  ASSERT_EQ(m.ops.size(), 2u);
  EXPECT_EQ(m.ops[0].buf, uint8_t(kBufHttpRequestHeader));
  EXPECT_NE(m.ops[1].buf, m.ops[0].buf);
  EXPECT_EQ(base_buf(m.ops[1].buf), uint8_t(kBufHttpRequestHeader));
  ASSERT_NE(derived_buf(m.ops[1].buf), nullptr);
  EXPECT_EQ(derived_buf(m.ops[1].buf)->copy, 1u);
  EXPECT_TRUE(derived_buf(m.ops[1].buf)->chain.empty());
  ASSERT_EQ(parse_signature("alert ftp any any -> any any (ftp.reply; content:\"230\"; ftp.reply; content:\"anon\"; sid:4;)",
                            RuleVars{}, f), "");
  ASSERT_EQ(f.ops.size(), 2u);
  EXPECT_EQ(f.ops[0].buf, f.ops[1].buf);
  ASSERT_EQ(parse_signature("alert http any any -> any any (http.uri; content:\"a\"; http.uri; content:\"b\"; sid:5;)", RuleVars{}, h), "");
  EXPECT_EQ(h.ops[0].buf, h.ops[1].buf);
}

// A (gid, sid) loaded again, in one file or another: Suricata's DetectEngineSignatureIsDuplicate
// keeps the higher rev (a newer one replaces the older in place; the same or an older rev is an
// error naming the rule loaded); another gid is another rule.
// ssl_version and the certificate validity keywords parse as Suricata's DetectSslVersionParse and
// DetectTlsValiditySetup take them (a leading '!' negates the list; names in any case, each once).
TEST(Signatures, TlsStateKeywordsParseAsSuricata) {
  struct Case {
    const char* opts;
    const char* result;  // the start of parse_signature's answer
    uint8_t versions;
    bool neg;
  };
  const Case cases[] = {
      {"ssl_version:sslv3;", "", 0x02, false},
      {"ssl_version:!tls1.3,tls1.2;", "", 0x30, true},
      {"ssl_version: TLS1.0 , tls1.1;", "", 0x0c, false},
      {"ssl_version:sslv2 sslv3;", "", 0x03, false},
      {"ssl_version:tls1.4;", "error:ssl_version: unknown version 'tls1.4'", 0, false},
      {"ssl_version:tls1.0,tls1.0;", "error:ssl_version: 'tls1.0' twice", 0, false},
      {"ssl_version:;", "error:ssl_version: an empty value", 0, false},
      {"tls_cert_expired;", "", 0, false},
      {"tls_cert_valid:now;", "error:tls_cert_valid takes no value", 0, false},
  };
  for (const Case& c : cases) {
    Signature s;
    const std::string r = parse_signature(std::string("alert tcp any any -> any any (") + c.opts + " sid:1;)", RuleVars{}, s);
    EXPECT_EQ(r.substr(0, std::strlen(c.result)), c.result) << c.opts << ": " << r;
    if (!*c.result) {
      EXPECT_EQ(s.ssl_version, c.versions) << c.opts;
      EXPECT_EQ(s.ssl_version_neg, c.neg) << c.opts;
      EXPECT_EQ(s.app_proto, 2) << c.opts;  // a TLS signature whatever its header says
    }
  }
}

// Keywords by their Suricata 8 names and by their aliases parse alike.
TEST(Signatures, KeywordNamesAndAliasesAgree) {
  struct Case {
    const char *name, *alias;
  };
  const Case cases[] = {
      {"alert tcp any any -> any any (tcp.seq:7; tcp.ack:9; tcp.window:!100; sid:1;)",
       "alert tcp any any -> any any (seq:7; ack:9; window:!100; sid:1;)"},
      {"alert http any any -> any any (http.uri.normalized; content:\"/a\"; sid:1;)",
       "alert http any any -> any any (http.uri; content:\"/a\"; sid:1;)"},
      {"alert tls any any -> any any (ja3_string; content:\"771\"; sid:1;)",
       "alert tls any any -> any any (ja3.string; content:\"771\"; sid:1;)"},
  };
  for (const Case& c : cases) {
    Signature a, b;
    ASSERT_EQ(parse_signature(c.name, RuleVars{}, a), "") << c.name;
    ASSERT_EQ(parse_signature(c.alias, RuleVars{}, b), "") << c.alias;
    EXPECT_EQ(a.seq_on, b.seq_on) << c.name;
    EXPECT_EQ(a.seq, b.seq) << c.name;
    EXPECT_EQ(a.ack_on, b.ack_on) << c.name;
    EXPECT_EQ(a.ack, b.ack) << c.name;
    EXPECT_EQ(a.win_on, b.win_on) << c.name;
    ASSERT_EQ(a.ops.size(), b.ops.size()) << c.name;
    for (size_t i = 0; i < a.ops.size(); ++i) EXPECT_EQ(a.ops[i].buf, b.ops[i].buf) << c.name;
  }
  Signature s;
  ASSERT_EQ(parse_signature(cases[0].name, RuleVars{}, s), "");
  EXPECT_TRUE(s.seq_on && s.ack_on && s.win_on);
}

// Suricata 8's alert keyword: the rule alerts whatever noalert said before it.
TEST(Signatures, AlertKeywordUndoesNoalert) {
  struct Case {
    const char* rule;
    const char* result;  // the start of parse_signature's answer
    bool noalert;
  };
  const Case cases[] = {
      {"alert http1 any any -> any any (http.method; content:\"GET\"; alert; sid:1;)", "", false},
      {"alert tcp any any -> any any (flowbits:set,x; noalert; alert; sid:1;)", "", false},
      {"alert tcp any any -> any any (alert; flowbits:set,x; noalert; sid:1;)", "", true},
      {"drop tcp any any -> any any (content:\"x\"; alert; sid:1;)", "", false},
      {"pass tcp any any -> any any (content:\"x\"; alert; sid:1;)", "", false},
      {"alert tcp any any -> any any (alert:yes; sid:1;)", "error:alert takes no value", false},
  };
  for (const Case& c : cases) {
    Signature s;
    const std::string r = parse_signature(c.rule, RuleVars{}, s);
    EXPECT_EQ(r.substr(0, std::strlen(c.result)), c.result) << c.rule << ": " << r;
    if (*c.result) continue;
    EXPECT_EQ(s.noalert, c.noalert) << c.rule;
    EXPECT_EQ(s.pass_alerts, s.rule.action == RuleAction::pass) << c.rule;
  }
}

TEST(Signatures, DuplicateSidsKeepTheNewestRev) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(test::temp_path("dup_sids"));
  fs::create_directories(dir);
  std::ofstream(dir / "a.rules") << "alert tcp any any -> any any (msg:\"one\"; content:\"a\"; sid:1; rev:1;)\n"
                                 << "alert tcp any any -> any any (msg:\"two\"; content:\"b\"; sid:2; rev:5;)\n"
                                 << "alert tcp any any -> any any (msg:\"one new\"; content:\"c\"; sid:1; rev:2;)\n";
  std::ofstream(dir / "b.rules") << "alert tcp any any -> any any (msg:\"two old\"; content:\"d\"; sid:2; rev:4;)\n"
                                 << "alert tcp any any -> any any (msg:\"two same\"; content:\"e\"; sid:2; rev:5;)\n"
                                 << "alert tcp any any -> any any (msg:\"gid 3\"; content:\"f\"; gid:3; sid:2; rev:1;)\n";
  SignatureSet set;
  ASSERT_TRUE(load_signature_file((dir / "a.rules").string(), RuleVars{}, set));
  ASSERT_TRUE(load_signature_file((dir / "b.rules").string(), RuleVars{}, set));
  std::vector<std::string> msgs;
  for (const Signature& g : set.sigs) msgs.push_back(g.rule.msg);
  EXPECT_EQ(msgs, (std::vector<std::string>{"one new", "two", "gid 3"}));
  EXPECT_EQ(set.duplicates_replaced, 1u);
  ASSERT_EQ(set.errors.size(), 2u);
  EXPECT_EQ(set.errors[0].line, 1u);
  EXPECT_NE(set.errors[0].why.find("sid 2 rev 4 is loaded already with rev 5"), std::string::npos) << set.errors[0].why;
  EXPECT_NE(set.errors[1].why.find("a.rules:2"), std::string::npos) << set.errors[1].why;
}

TEST(Signatures, EverySnortCommunityRuleLoadsOrIsSkippedByReason) {
  const auto dir = test::shared_data_dir() / "rules" / "snort-community";
  GASPP_REQUIRE_PATH(dir);
  const LoadTotals t = load_dir(dir);
  EXPECT_GT(t.loaded, 0u);
}


// The inspection engine (an explicit stack) against a reference written the way Suricata's
// DetectEngineContentInspection is: recursive, content options only (negation, nocase, depth,
// offset, distance, within). Random chains of 1-4 contents over random buffers of a small
// alphabet (so that occurrences repeat and retries matter), with planted occurrences.
namespace ref {
struct C {
  std::string pat;
  bool neg = false, nocase = false, dist = false, within = false, depth = false, offset = false;
  int32_t d = 0, w = 0, dep = 0, off = 0;
  bool within_next = false, relative_next = false;
};
int find(const std::string& b, size_t from, size_t to, const C& c) {
  for (size_t i = from; i + c.pat.size() <= to; ++i) {
    bool ok = true;
    for (size_t k = 0; k < c.pat.size() && ok; ++k) {
      const char x = c.nocase ? char(std::tolower(static_cast<unsigned char>(b[i + k]))) : b[i + k];
      ok = x == c.pat[k];
    }
    if (ok) return int(i);
  }
  return -1;
}
// 1 match, 0 no match, -1 discontinue (Suricata's return values)
int inspect(const std::vector<C>& cs, size_t k, const std::string& b, uint32_t& bo) {
  const C& c = cs[k];
  const uint32_t pbo0 = bo;
  uint32_t prev = 0;
  for (;;) {
    int64_t depth = int64_t(b.size()), offset = 0;
    uint32_t pbo = pbo0;
    if (c.dist || c.within) {
      offset = pbo;
      int64_t dist = c.dist ? c.d : 0;
      if (c.dist) offset = (dist < 0 && -dist > offset) ? 0 : offset + dist;
      if (c.within && depth > int64_t(pbo) + c.w + dist) depth = int64_t(pbo) + c.w + dist;
    } else {
      if (c.depth) depth = c.dep;
      offset = c.offset ? c.off : 0;
    }
    if (prev) offset = prev;
    if (depth > int64_t(b.size())) depth = int64_t(b.size());
    if (offset > depth || depth == 0) {
      if (c.neg) return k + 1 == cs.size() ? 1 : inspect(cs, k + 1, b, bo);
      return 0;
    }
    const int f = int64_t(c.pat.size()) > depth - offset ? -1 : find(b, size_t(offset), size_t(depth), c);
    if (f < 0) {
      if (c.neg) return k + 1 == cs.size() ? 1 : inspect(cs, k + 1, b, bo);
      return (c.dist || c.within) ? 0 : -1;
    }
    if (c.neg) {
      const bool single = !(c.dist || c.within || c.relative_next || c.depth || c.offset);
      return single ? -1 : 0;
    }
    const uint32_t end = uint32_t(f) + uint32_t(c.pat.size());
    bo = end;
    if (k + 1 == cs.size()) return 1;
    const int r = inspect(cs, k + 1, b, bo);
    if (r != 0) return r;
    if (!c.within_next) return -1;
    prev = end - uint32_t(c.pat.size() - 1);
  }
}
}  // namespace ref

TEST(Signatures, InspectionMatchesARecursiveReferenceOnRandomChains) {
  std::mt19937 rng(20261125);
  auto pick = [&](int n) { return int(rng() % uint32_t(n)); };
  const std::string alpha = "abAB";
  uint64_t matched = 0, cases = 0;
  for (int it = 0; it < 20000; ++it) {
    const int nc = 1 + pick(4);
    std::vector<ref::C> cs{size_t(nc), ref::C{}};
    Signature sig;
    std::string text = "alert tcp any any -> any any (";
    for (int k = 0; k < nc; ++k) {
      ref::C& c = cs[size_t(k)];
      const int len = 1 + pick(3);
      for (int q = 0; q < len; ++q) c.pat += alpha[size_t(pick(int(alpha.size())))];
      c.neg = pick(6) == 0;
      c.nocase = pick(3) == 0;
      text += std::string("content:") + (c.neg ? "!" : "") + "\"" + c.pat + "\"; ";
      if (c.nocase) {
        text += "nocase; ";
        for (char& ch : c.pat) ch = char(std::tolower(static_cast<unsigned char>(ch)));
      }
      if (k > 0 && pick(2)) {
        if (pick(2)) {
          c.dist = true;
          c.d = pick(7) - 2;
          text += "distance:" + std::to_string(c.d) + "; ";
        }
        if (pick(2)) {
          c.within = true;
          c.w = int32_t(c.pat.size()) + pick(6);
          text += "within:" + std::to_string(c.w) + "; ";
        }
      } else if (pick(3) == 0) {
        c.offset = pick(2);
        c.off = pick(5);
        if (c.offset) text += "offset:" + std::to_string(c.off) + "; ";
        c.depth = true;
        c.dep = int32_t(c.pat.size()) + c.off + pick(8);  // the window's end from the buffer's start
        // The rule's depth counts from the offset (Suricata's).
        text += "depth:" + std::to_string(c.dep - (c.offset ? c.off : 0)) + "; ";
      }
    }
    text += "sid:1;)";
    // Suricata's flags on the previous content: within_next / relative_next (detect-within.c sets
    // WITHIN_NEXT; detect-distance.c DISTANCE_NEXT, or RELATIVE_NEXT, which holds the WITHIN_NEXT
    // bit, when the content is negated).
    for (size_t k = 1; k < cs.size(); ++k)
      if (cs[k].dist || cs[k].within) {
        cs[k - 1].relative_next = true;
        if (cs[k].within || (cs[k].dist && cs[k].neg)) cs[k - 1].within_next = true;
      }
    const std::string r = parse_signature(text, RuleVars{}, sig);
    if (!r.empty()) continue;  // e.g. depth below the content: refused as Suricata does
    std::string buf;
    const int blen = pick(24);
    for (int q = 0; q < blen; ++q) buf += alpha[size_t(pick(int(alpha.size())))];
    // Compile through the module's host side, as the engine sees it.
    const std::string path = test::temp_path("inspect_case.rules");
    {
      std::ofstream f(path);
      f << text << "\n";
    }
    DetectModule::Host host({{"rules", path}});
    struct Mem : TableMemory {
      const void* place(const void* h, size_t) override { return h; }
    } mem;
    const DetectView v = host.upload(mem);
    ASSERT_EQ(v.sig_n, 1u) << text;
    const int got = detect_inspect(v, v.sigs[0], reinterpret_cast<const uint8_t*>(buf.data()), uint32_t(buf.size()));
    uint32_t bo = 0;
    const int want = ref::inspect(cs, 0, buf, bo) == 1 ? kInspectMatch : kInspectNoMatch;
    ASSERT_EQ(got, want) << text << " on \"" << buf << "\"";
    matched += got == kInspectMatch;
    ++cases;
  }
  std::printf("%llu cases, %llu matched\n", (unsigned long long)cases, (unsigned long long)matched);
  EXPECT_GT(cases, 10000u);
  EXPECT_GT(matched, cases / 10);
}


// Whether a signature with these options (alert tcp, sid 1) matches buf, compiled through the
// module's host side as the engine sees it.
bool inspect_one(const std::string& opts, const std::string& buf, uint64_t base = 0) {
  struct Mem : TableMemory {
    const void* place(const void* h, size_t) override { return h; }
  } mem;
  const std::string path = test::temp_path("inspect_one.rules");
  {
    std::ofstream f(path);
    f << "alert tcp any any -> any any (" << opts << " sid:1;)\n";
  }
  DetectModule::Host host({{"rules", path}});
  const DetectView v = host.upload(mem);
  EXPECT_EQ(v.sig_n, 1u) << opts;
  if (v.sig_n != 1) return false;
  return detect_inspect(v, v.sigs[0], reinterpret_cast<const uint8_t*>(buf.data()), uint32_t(buf.size()), 0,
                        kInspectAnywhere, base) == kInspectMatch;
}

// byte_test, byte_jump and byte_extract as Suricata's DetectBytetestDoMatch, DetectBytejumpDoMatch
// and DetectByteExtractDoMatch compute them; each expectation is worked out by hand from that code
// on the buffer below (positions after "MARK" at 0..3: 4 onward).
TEST(Signatures, ByteOptionsMatchAsSuricatasCode) {
  // 0123 4    5    6    7    8    9    10   11   12 13 14 15 16 17 ...
  // MARK 0x00 0x02 0x10 0x20 0x05 'A'  'B'  'C'  '1' '2' 'f' 'f' 'x'  'y' 'z'
  const std::string buf = std::string("MARK") + std::string("\x00\x02\x10\x20\x05", 5) + "ABC12ffxyz";
  struct Row {
    const char* opts;
    bool match;
  };
  const Row rows[] = {
      {"content:\"MARK\"; byte_test:2,=,2,0,relative;", true},                   // 0x0002
      {"content:\"MARK\"; byte_test:2,=,512,0,relative,little;", true},          // 0x0200
      {"content:\"MARK\"; byte_test:1,>,15,2,relative;", true},                  // 0x10
      {"content:\"MARK\"; byte_test:1,&,0x20,3,relative;", true},
      {"content:\"MARK\"; byte_test:1,!=,0x20,3,relative;", false},
      {"content:\"MARK\"; byte_test:1,=,2,3,relative,bitmask 0x30;", true},     // 0x20 & 0x30 >> 4
      {"content:\"MARK\"; byte_test:2,=,12,8,relative,string,dec;", true},      // "12"
      {"content:\"MARK\"; byte_test:2,=,255,10,relative,string,hex;", true},    // "ff"
      {"byte_test:1,=,5,8;", true},                                                // absolute
      {"content:\"MARK\"; byte_test:2,=,0,15,relative;", false},                 // past the end
      {"content:\"MARK\"; byte_test:0,=,0,0,relative;", true},                   // nothing read: 0
      // byte_jump: 1 byte at +1 (2), then 2 more from after the read: content at 4+2+2 = 8
      {"content:\"MARK\"; byte_jump:1,1,relative; content:\"|05|\"; within:1;", true},
      {"content:\"MARK\"; byte_jump:1,1,relative,post_offset 1; content:\"A\"; within:1;", true},
      {"content:\"MARK\"; byte_jump:1,4,relative,multiplier 2; isdataat:!1,relative;", true},  // 9 + 5*2: the end
      {"content:\"MARK\"; byte_jump:1,4,relative,from_beginning; content:\"|02|\"; within:1;", true},  // to 5
      {"content:\"MARK\"; byte_jump:1,1,relative,align; content:\"B\"; within:1;", true},  // 6 + 4 (2 aligned)
      {"content:\"MARK\"; byte_jump:1,0,relative,from_end,post_offset -3; content:\"xyz\"; within:3;", true},
      // 0 bytes: the jump is the post_offset alone; before the buffer's start it stops at the start
      {"content:\"MARK\"; byte_jump:0,0,relative,post_offset -4; content:\"MARK\"; within:4;", true},
      {"content:\"MARK\"; byte_jump:0,0,relative,post_offset -9; content:\"MARK\"; within:4;", true},
      {"content:\"MARK\"; byte_jump:1,4,relative,post_offset 100;", false},     // past the end
      // byte_extract, and its variable as another option's byte count, offset or value
      {"content:\"MARK\"; byte_extract:1,1,n,relative; byte_test:n,=,0x1020,0,relative;", true},
      // byte_extract leaves the position after what it read (6): 2 bytes from 4 (0x0002), then 8
      {"content:\"MARK\"; byte_extract:1,1,n,relative; byte_jump:n,-2,relative; content:\"|05|\"; within:1;", true},
      {"content:\"MARK\"; byte_extract:1,1,n,relative; byte_jump:n,0,relative; content:\"|05|\"; within:1;", false},
      {"content:\"MARK\"; byte_extract:1,4,n,relative; byte_test:1,=,0x41,n,relative;", false},  // 9 + 5: 'f'
      {"content:\"MARK\"; byte_extract:1,4,n,relative; byte_test:1,=,0x66,n,relative;", true},
      {"content:\"MARK\"; byte_extract:1,2,n,relative; byte_test:n,=,0,0;", false},  // 16 bytes: more than 8
      {"content:\"MARK\"; byte_extract:1,4,n,relative; byte_test:1,=,n,8;", true},   // value from a variable
      {"content:\"MARK\"; byte_extract:1,4,n,relative; byte_test:1,=,n,4;", false},
      // byte_math (Suricata's DetectByteMathDoMatch): read, operate with rvalue, mask, store
      {"content:\"MARK\"; byte_math:bytes 1, offset 1, oper +, rvalue 3, result r, relative; byte_test:1,=,r,8;", true},  // 2+3
      {"content:\"MARK\"; byte_math:bytes 1, offset 2, oper *, rvalue 2, result r, relative; byte_test:1,=,r,7;", true},  // 0x10*2
      {"content:\"MARK\"; byte_math:bytes 1, offset 1, oper -, rvalue 2, result r, relative; byte_test:1,=,r,4;", true},  // 2-2
      {"content:\"MARK\"; byte_math:bytes 1, offset 1, oper /, rvalue 0, result r, relative;", false},  // division by 0
      {"content:\"MARK\"; byte_math:bytes 1, offset 2, oper /, rvalue 3, result r, relative; byte_test:1,=,r,8;", true},  // 16/3
      {"byte_math:bytes 1, offset 5, oper <<, rvalue 2, result r; byte_test:1,<,r,8;", true},  // 2<<2 = 8 > 5
      {"byte_math:bytes 1, offset 5, oper <<, rvalue 64, result r; byte_test:1,=,r,4;", true},  // shifted out: 0
      // 0x1020 >> 4 = 0x102, bitmask ff (hex, as Suricata reads it) = 2
      {"byte_math:bytes 2, offset 6, oper >>, rvalue 4, result r, bitmask ff; byte_test:1,=,r,5;", true},
      {"byte_math:bytes 2, offset 6, oper >>, rvalue 4, result r, bitmask 0xf0; byte_test:1,=,r,4;", true},  // 0x102 & 0xf0: 0
      {"byte_math:bytes 2, offset 4, oper +, rvalue 0, result r, endian little; byte_test:2,=,r,4,little;", true},  // 0x0200
      {"byte_math:bytes 2, offset 12, oper -, rvalue 10, result r, string dec; byte_test:1,=,r,5;", true},  // "12"-10
      {"byte_math:bytes 2, offset 14, oper +, rvalue 0, result r, string hex; byte_test:1,=,0x05,8;", true},  // "ff"
      {"byte_math:bytes 2, offset 9, oper +, rvalue 0, result r, string dec;", false},  // "AB": no number
      {"byte_math:bytes 5, offset 4, oper +, rvalue 0, result r;", false},  // binary: 4 bytes at most
      {"byte_math:bytes 1, offset -1, oper +, rvalue 0, result r;", false},  // before the buffer
      {"content:\"xyz\"; byte_math:bytes 1, offset 0, oper +, rvalue 1, result r, relative;", false},  // nothing after
      // the position moves past what it read: 4 + 2
      {"content:\"MARK\"; byte_math:bytes 2, offset 0, oper +, rvalue 1, result r, relative; content:\"|10|\"; within:1;", true},
      // variables as rvalue and as the byte count
      {"byte_extract:1,5,n; byte_math:bytes 1, offset 8, oper *, rvalue n, result r; byte_test:1,<,r,8;", true},  // 5 < 10
      {"byte_extract:1,5,n; byte_math:bytes n, offset 4, oper +, rvalue 0, result r; byte_test:1,=,r,5;", true},   // 0x0002
      // 5 - 2 = 3, then 2 + 3 = 5 (2 * 3 = 6 does not)
      {"byte_extract:1,5,n; byte_math:bytes 1, offset 8, oper -, rvalue n, result r; byte_math:bytes 1, offset 5, oper +, rvalue r, result q; byte_test:1,=,q,8;", true},
      {"byte_extract:1,5,n; byte_math:bytes 1, offset 8, oper -, rvalue n, result r; byte_math:bytes 1, offset 5, oper *, rvalue r, result q; byte_test:1,=,q,8;", false},
  };
  for (const Row& r : rows) EXPECT_EQ(inspect_one(r.opts, buf), r.match) << r.opts;
}

// Another occurrence of a content is tried when what follows depends on where it ended, as
// Suricata's DETECT_CONTENT_WITHIN_NEXT (part of RELATIVE_NEXT, which isdataat, byte_*, pcre /R
// and a negated relative content set on the content before them); a later occurrence is not tried
// for a content followed by one with only distance. On "ab1234ab12": the first "ab" fails what
// follows, the second passes.
TEST(Signatures, ContentRetriedWhenWhatFollowsDependsOnIt) {
  const std::string buf = "ab1234ab12";
  struct Row {
    const char* opts;
    bool match;
  };
  const Row rows[] = {
      {"content:\"ab\"; isdataat:!3,relative;", true},      // 8 bytes after the first, 2 after the second
      {"content:\"ab\"; isdataat:!9,relative;", true},
      {"content:\"ab\"; isdataat:!2,relative;", false},     // 2 bytes after the last one too
      {"content:\"ab\"; pcre:\"/^12$/R\";", true},
      {"content:\"ab\"; byte_test:1,=,0x31,1,relative;", false},  // '2' then '2'
      {"content:\"ab\"; byte_test:2,=,12,0,relative,string,dec;", true},  // "12" then "12"
      {"content:\"ab\"; byte_test:4,=,1234,0,relative,string,dec;", true},
      {"content:\"ab\"; content:!\"123\"; within:3;", true},   // the second "ab" is not followed by 123
      {"content:\"ab\"; content:!\"1\"; distance:0;", false},  // negated with distance: "1" follows both
      {"content:\"ab\"; content:\"12\"; within:2; isdataat:!1,relative;", true},
  };
  for (const Row& r : rows) EXPECT_EQ(inspect_one(r.opts, buf), r.match) << r.opts;
}

// A buffer that is part of a longer one (an HTTP body's inspection window, starting at base):
// a content's depth counts from the longer buffer's start, as Suricata's stream_start_offset
// handling; a depth ending before the window is no match, negated or not.
TEST(Signatures, DepthCountsFromTheWholeBodysStart) {
  const std::string win = "abcxyz";  // bytes 100..105 of the body
  struct Row {
    const char* opts;
    bool match;
  };
  const Row rows[] = {
      {"content:\"abc\"; depth:50;", false},
      {"content:!\"abc\"; depth:50;", false},   // before the window: no match, not a negated match
      {"content:!\"zz\"; depth:100;", false},
      {"content:\"abc\"; depth:103;", true},     // 3 bytes into the window
      {"content:\"xyz\"; depth:103;", false},
      {"content:!\"xyz\"; depth:103;", true},
      {"content:\"xyz\"; depth:500;", true},
      {"content:\"abc\";", true},
  };
  for (const Row& r : rows) EXPECT_EQ(inspect_one(r.opts, win, 100), r.match) << r.opts;
}

// byte_math's arguments as Suricata's parser takes and refuses them.
TEST(Signatures, ByteMathParsesAsSuricata) {
  struct Row {
    const char* opts;
    const char* want;  // "" loads, else the start of parse_signature's answer
  };
  const Row rows[] = {
      {"byte_math:bytes 4, offset 0, oper +, rvalue 1, result r;", ""},
      {"byte_math:result r, rvalue 1, oper +, offset 0, bytes 4;", ""},  // any order
      {"byte_math:bytes 10, offset 0, oper *, rvalue 4294967295, result r, string hex;", ""},
      {"byte_math:bytes 1, offset 0, oper +, rvalue 1, result r, relative, endian little, bitmask 0x1f;", ""},
      {"byte_math:bytes 4, offset 0, oper +, rvalue 1;", "error:"},  // no result
      {"byte_math:bytes 0, offset 0, oper +, rvalue 1, result r;", "error:"},
      {"byte_math:bytes 11, offset 0, oper +, rvalue 1, result r;", "error:"},
      {"byte_math:bytes 5, offset 0, oper <<, rvalue 1, result r;", "error:"},  // shifts: 1..4 bytes
      {"byte_math:bytes 1, offset 65536, oper +, rvalue 1, result r;", "error:"},
      {"byte_math:bytes 1, offset 0, oper %, rvalue 1, result r;", "error:"},
      {"byte_math:bytes 1, offset 0, oper +, rvalue 4294967296, result r;", "error:"},
      {"byte_math:bytes 1, offset 0, oper +, rvalue nosuch, result r;", "error:"},  // not a variable
      {"byte_math:bytes 1, offset 0, oper +, rvalue 1, result r, endian middle;", "error:"},
      {"byte_math:bytes 1, offset 0, oper +, rvalue 1, result r, bitmask zz;", "error:"},
      {"byte_math:bytes 1, offset 0, oper +, rvalue 1, result r, relative, relative;", "error:"},
      {"byte_math:bytes 1, offset 0, oper +, rvalue 1, result r, dce;", "skip:keyword byte_math dce"},
  };
  for (const Row& r : rows) {
    Signature sig;
    const std::string got =
        parse_signature(std::string("alert tcp any any -> any any (") + r.opts + " sid:1;)", RuleVars{}, sig);
    if (!*r.want) EXPECT_EQ(got, "") << r.opts;
    else EXPECT_EQ(got.rfind(r.want, 0), 0u) << r.opts << " -> " << got;
  }
}

// Datasets as Suricata's detect-dataset.c and datasets.c: the commands, a file relative to the rule
// file, subdomains, digests by length, reputations; a bad line is an error with its line.
TEST(Datasets, CommandsAndFilesBehaveAsSuricatas) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(test::temp_path("datasets_case"));
  fs::create_directories(dir);
  {
    std::ofstream(dir / "names.lst") << "ZXZpbC5jb20=\n\nLmV4YW1wbGUub3Jn\na,b,c\n";  // evil.com, .example.org
    std::ofstream(dir / "reps.lst") << "ZXZpbC5jb20=,200\nZ29vZC5jb20=,10\n";           // evil.com 200, good.com 10
    std::ofstream(dir / "md5.lst") << "0cc175b9c0f1b6a831c399e269772661\n";             // md5("a")
    std::ofstream(dir / "bad.lst") << "ZXZpbC5jb20=\nnot base64!\n";
  }
  const std::string rules = (dir / "x.rules").string();
  Datasets ds;
  auto add = [&](const std::string& opt, bool rep = false) {
    DatasetSpec sp;
    const std::string r = rep ? parse_datarep_option(opt, sp) : parse_dataset_option(opt, sp);
    EXPECT_EQ(r, "") << opt;
    return ds.add(sp, rules);
  };
  const uint32_t isset = add("isset,names,type string,load names.lst");
  const uint32_t notset = add("isnotset,names,type string,load names.lst");
  const uint32_t sub = add("isset,names,type string,match subdomain");
  const uint32_t set = add("set,seen,type string");
  const uint32_t unset = add("unset,seen,type string");
  const uint32_t seen = add("isset,seen,type string");
  const uint32_t md5 = add("isset,h,type md5,load md5.lst");
  const uint32_t gt = add("reps, >, 100, type string, load reps.lst", true);
  const uint32_t eq = add("reps, ==, 10, type string, load reps.lst", true);
  struct Row {
    uint32_t id;
    std::string data;
    bool match;
  };
  const std::string md5_a("\x0c\xc1\x75\xb9\xc0\xf1\xb6\xa8\x31\xc3\x99\xe2\x69\x77\x26\x61", 16);
  const Row rows[] = {
      {isset, "evil.com", true},   {isset, "evil.co", false},     {isset, "a", false},  // "a,b,c": passed over
      {notset, "evil.com", false}, {notset, "x.evil.com", true},  {isset, "", false},
      {sub, "www.example.org", true}, {sub, "example.org", false},  // ".example.org" is a suffix of the first only
      {sub, "a.b.example.org", true}, {isset, "www.example.org", false},
      {seen, "x", false},  {set, "x", true},   {set, "x", false},  {seen, "x", true},
      {unset, "x", true},  {unset, "x", false}, {seen, "x", false},
      {md5, md5_a, true},  {md5, md5_a.substr(0, 15), false}, {md5, "a", false},
      {gt, "evil.com", true}, {gt, "good.com", false}, {eq, "good.com", true}, {gt, "other.com", false},
  };
  for (const Row& r : rows)
    EXPECT_EQ(ds.match(r.id, reinterpret_cast<const uint8_t*>(r.data.data()), uint32_t(r.data.size())), r.match)
        << r.id << " " << r.data;
  DatasetSpec sp;
  EXPECT_EQ(parse_dataset_option("isset,b,type string,load bad.lst", sp), "");
  try {
    ds.add(sp, rules);
    ADD_FAILURE() << "a bad line loaded";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("bad.lst:2"), std::string::npos) << e.what();
  }
  EXPECT_EQ(parse_dataset_option("isset,names,type md5", sp), "");
  EXPECT_THROW(ds.add(sp, rules), std::invalid_argument);  // names is a string set
  EXPECT_EQ(parse_dataset_option("isset,n,type string,load nosuch.lst", sp), "");
  EXPECT_THROW(ds.add(sp, rules), std::invalid_argument);
  const std::pair<const char*, const char*> parses[] = {
      {"isset,n", "error:"}, {"frob,n,type string", "error:"}, {"isset,n,type ipv4", ""}, {"isset,n,type ip", ""},
      {"isset,n,type ipv6", ""}, {"isset,n,type ipv7", "error:"},
      {"isset,n,type string,state s.lst", "skip:"}, {"isset,n,type string,format ndjson", "error:"},
      {"isset,n,type string,value_key v", "error:"}, {"isset,n,type string,context_key c", "skip:"},
      {"isset,n,type string,format ndjson,value_key v,array_key a", "error:"},
      {"isset,n,type string,format json,value_key v,enrichment_key e", "skip:"},
      {"isset,n,type string,match prefix", "error:"}, {"isset,n,type string,memcap 10mb,hashsize 1024", ""},
  };
  for (const auto& [opt, want] : parses)
    EXPECT_EQ(parse_dataset_option(opt, sp).rfind(want, 0), 0u) << opt;
  EXPECT_EQ(parse_datarep_option("r, >=, 1, type string", sp).rfind("error:", 0), 0u);
  // Rule files: a file beside the rules loads; an absolute path or '..' is a rule error unless
  // allowed (Suricata 8's datasets.rules.allow-absolute-filenames); a missing file is one too.
  {
    std::ofstream(dir / "x.rules")
        << "alert dns any any -> any any (dns.query; dataset:isset,names,type string,load names.lst; sid:1;)\n"
        << "alert dns any any -> any any (dns.query; dataset:isset,abs,type string,load " << (dir / "names.lst").string() << "; sid:2;)\n"
        << "alert dns any any -> any any (dns.query; dataset:isset,up,type string,load ../" << dir.filename().string()
        << "/names.lst; sid:3;)\n"
        << "alert dns any any -> any any (dns.query; dataset:isset,gone,type string,load nosuch.lst; sid:4;)\n";
  }
  for (const bool allow : {false, true}) {
    RuleVars vars;
    vars.datasets_allow_absolute = allow;
    SignatureSet set;
    ASSERT_TRUE(load_signature_file(rules, vars, set));
    std::vector<uint32_t> sids, lines;
    for (const Signature& g : set.sigs) sids.push_back(g.rule.sid);
    for (const RuleError& e : set.errors) lines.push_back(e.line);
    EXPECT_EQ(sids, allow ? (std::vector<uint32_t>{1, 2, 3}) : (std::vector<uint32_t>{1})) << allow;
    EXPECT_EQ(lines, allow ? (std::vector<uint32_t>{4}) : (std::vector<uint32_t>{2, 3, 4})) << allow;
  }
  EXPECT_EQ(parse_datarep_option("r, >, 70000, type string", sp).rfind("error:", 0), 0u);
}

// IP reputation as Suricata's reputation.c and DetectIPRepMatch: a host listed by address has a
// value in every category (0 where not listed), a netblock only in its own category (longest
// prefix first, its address masked), sides any / src / dst / both, isset and isnotset.
TEST(Iprep, ListsAndConditionsBehaveAsSuricatas) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(test::temp_path("iprep_case"));
  fs::create_directories(dir);
  std::ofstream(dir / "cats.txt") << "1,Bad,bad hosts\n2,Scan,scanners\n# comment\n";
  std::ofstream(dir / "rep.list") << "ip,cat,score\n10.0.0.1,1,90\n10.0.0.1,2,5\n192.168.1.77/16,2,40\n192.168.3.0/24,2,7\n"
                                     "2001:db8::1,1,100\n";
  std::map<std::string, uint8_t> cats;
  ASSERT_EQ(load_iprep_categories((dir / "cats.txt").string(), cats), "");
  EXPECT_EQ(cats.at("Scan"), 2);
  IpReputation rep;
  ASSERT_EQ(rep.load((dir / "rep.list").string()), "");
  std::ofstream(dir / "bad.list") << "10.0.0.2,1,90\n10.0.0.3,1,200\n";
  EXPECT_NE(rep.load((dir / "bad.list").string()).find("bad.list:2"), std::string::npos);  // score over 127
  auto v4 = [](const char* a) {
    std::array<uint8_t, 16> b{};
    inet_pton(AF_INET, a, b.data());
    return b;
  };
  const auto host = v4("10.0.0.1"), other = v4("10.9.9.9"), in16 = v4("192.168.200.1"), in24 = v4("192.168.3.9");
  EXPECT_EQ(rep.score(4, host.data(), 1), 90);
  EXPECT_EQ(rep.score(4, host.data(), 2), 5);
  EXPECT_EQ(rep.score(4, host.data(), 3), 0);       // listed host: 0 elsewhere
  EXPECT_EQ(rep.score(4, other.data(), 1), -1);
  EXPECT_EQ(rep.score(4, in16.data(), 2), 40);      // 192.168.1.77/16 is 192.168.0.0/16
  EXPECT_EQ(rep.score(4, in24.data(), 2), 7);       // the longer prefix
  EXPECT_EQ(rep.score(4, in16.data(), 1), -1);      // netblocks answer in their category only
  struct Row {
    const char* opt;
    const std::array<uint8_t, 16>* src;
    const std::array<uint8_t, 16>* dst;
    bool match;
  };
  const Row rows[] = {
      {"src,Bad,>,50", &host, &other, true},   {"dst,Bad,>,50", &host, &other, false},
      {"any,Bad,>,50", &other, &host, true},   {"both,Bad,>,50", &host, &other, false},
      {"both,Scan,>,4", &host, &in24, true},   {"any,Scan,<,6", &in16, &host, true},  // src 40 fails, dst 5 holds
      {"src,Bad,isset", &host, &other, true},  {"src,Bad,isset", &other, &host, false},
      {"dst,Bad,isnotset", &host, &other, true}, {"any,Bad,isnotset", &host, &host, false},
      {"any,Bad,isnotset", &host, &other, true}, {"both,Bad,isnotset", &other, &in16, true},
      {"both,Bad,isnotset", &other, &host, false}, {"src,Scan,=,0", &other, &host, false},
      {"src,Bad,<,1", &in16, &host, false},    {"src,Bad,!=,90", &host, &other, false},
  };
  for (const Row& r : rows) {
    IprepCond c;
    ASSERT_EQ(parse_iprep(r.opt, cats, c), "") << r.opt;
    EXPECT_EQ(rep.holds(c, 4, r.src->data(), r.dst->data()), r.match) << r.opt;
  }
  IprepCond c;
  for (const char* bad : {"any,Nope,>,1", "up,Bad,>,1", "any,Bad,~,1", "any,Bad,>,256", "any,Bad", "any,Bad,maybe"})
    EXPECT_EQ(parse_iprep(bad, cats, c).rfind("error:", 0), 0u) << bad;
  EXPECT_EQ(parse_iprep("any,Bad,>,1", {}, c).rfind("error:", 0), 0u);  // no categories configured
}

// Suricata's header buffers (ipv4.hdr, ipv6.hdr, tcp.hdr, udp.hdr, icmpv4.hdr, icmpv6.hdr): each
// reads exactly its header's bytes, options and extension headers included, as the frames below
// were built; rules read them with contents taken from those bytes.
TEST(Signatures, HeaderBuffersReadThePacketsHeaders) {
  struct Built {
    const char* name;
    std::vector<uint8_t> frame;
    // where each header was put (0 length: absent), by DetHdrBuf
    std::pair<uint32_t, uint32_t> span[7];
  };
  auto eth = [](uint16_t type) {
    std::vector<uint8_t> f = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, uint8_t(type >> 8), uint8_t(type)};
    return f;
  };
  auto put = [](std::vector<uint8_t>& f, std::initializer_list<uint8_t> b) { f.insert(f.end(), b); };
  std::vector<Built> frames;
  {
    // IPv4 with 4 bytes of options (IHL 6), TCP with an MSS option (data offset 6), "GET /"
    Built b{"ipv4-tcp", eth(0x0800), {}};
    const uint16_t tot = 24 + 24 + 5;
    put(b.frame, {0x46, 0, uint8_t(tot >> 8), uint8_t(tot), 0, 1, 0, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
                  1, 1, 1, 0});
    put(b.frame, {0x30, 0x39, 0, 80, 0, 0, 0, 1, 0, 0, 0, 0, 0x60, 0x18, 0x20, 0, 0, 0, 0, 0, 2, 4, 5, 0xb4});
    put(b.frame, {'G', 'E', 'T', ' ', '/'});
    b.span[kHbIpv4] = {14, 24};
    b.span[kHbTcp] = {38, 24};
    frames.push_back(b);
  }
  {
    // IPv6, a hop-by-hop header (8 bytes), UDP, "abcd"
    Built b{"ipv6-hbh-udp", eth(0x86dd), {}};
    put(b.frame, {0x60, 0, 0, 0, 0, 20, 0, 64});
    for (int k = 0; k < 32; ++k) b.frame.push_back(uint8_t(k));
    put(b.frame, {17, 0, 1, 4, 0, 0, 0, 0});
    put(b.frame, {0x30, 0x39, 0, 53, 0, 12, 0, 0, 'a', 'b', 'c', 'd'});
    b.span[kHbIpv6] = {14, 48};
    b.span[kHbUdp] = {62, 8};
    frames.push_back(b);
  }
  {
    // IPv4, ICMP timestamp request (8 bytes and three 4-byte times: a 20-byte header)
    Built b{"ipv4-icmp-timestamp", eth(0x0800), {}};
    put(b.frame, {0x45, 0, 0, 40, 0, 1, 0, 0, 64, 1, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2});
    put(b.frame, {13, 0, 0, 0, 0, 7, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3});
    b.span[kHbIpv4] = {14, 20};
    b.span[kHbIcmpv4] = {34, 20};
    frames.push_back(b);
  }
  {
    // IPv4, ICMP echo with "ping": an 8-byte header
    Built b{"ipv4-icmp-echo", eth(0x0800), {}};
    put(b.frame, {0x45, 0, 0, 32, 0, 1, 0, 0, 64, 1, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2});
    put(b.frame, {8, 0, 0, 0, 0, 7, 0, 1, 'p', 'i', 'n', 'g'});
    b.span[kHbIpv4] = {14, 20};
    b.span[kHbIcmpv4] = {34, 8};
    frames.push_back(b);
  }
  {
    // IPv6, ICMPv6 echo request with "ping"
    Built b{"ipv6-icmpv6", eth(0x86dd), {}};
    put(b.frame, {0x60, 0, 0, 0, 0, 12, 58, 64});
    for (int k = 0; k < 32; ++k) b.frame.push_back(uint8_t(k));
    put(b.frame, {128, 0, 0, 0, 0, 7, 0, 1, 'p', 'i', 'n', 'g'});
    b.span[kHbIpv6] = {14, 40};
    b.span[kHbIcmpv6] = {54, 8};
    frames.push_back(b);
  }
  static const char* const kNames[7] = {"", "ipv4.hdr", "ipv6.hdr", "tcp.hdr", "udp.hdr", "icmpv4.hdr", "icmpv6.hdr"};
  struct Mem : TableMemory {
    const void* place(const void* h, size_t) override { return h; }
  } mem;
  const auto hex = [](const uint8_t* p, uint32_t n) {
    std::string s = "|";
    char b[4];
    for (uint32_t k = 0; k < n; ++k) {
      std::snprintf(b, sizeof b, "%02x ", p[k]);
      s += b;
    }
    return s + "|";
  };
  for (const Built& b : frames) {
    DecodedPacket d;
    clear(d);
    d.cap_len[0] = d.wire_len[0] = uint32_t(b.frame.size());
    decode_frame(b.frame.data(), uint32_t(b.frame.size()), LinkType::ethernet, d);
    const PacketHeaders h{d.cap_len[0], d.l3[0], d.l4[0], d.l3_off[0], d.l4_off[0], d.payload_off[0], d.payload_len[0]};
    uint32_t plen = 0;
    const uint8_t* payload = nullptr;
    if (d.payload_off[0] != kNoOffset && d.payload_off[0] < d.cap_len[0]) {
      payload = b.frame.data() + d.payload_off[0];
      plen = std::min<uint32_t>(d.cap_len[0] - d.payload_off[0], d.payload_len[0]);
    }
    for (uint8_t hb = kHbIpv4; hb <= kHbIcmpv6; ++hb) {
      const auto [want_off, want_len] = b.span[hb];
      uint32_t off = 0, len = 0;
      const bool have = det_header_span(hb, b.frame.data(), h, off, len);
      ASSERT_EQ(have, want_len > 0) << b.name << " " << kNames[hb];
      if (!have) continue;
      EXPECT_EQ(off, want_off) << b.name << " " << kNames[hb];
      EXPECT_EQ(len, want_len) << b.name << " " << kNames[hb];
      // Rules: the header's last two bytes end the buffer; its first two start it; the two bytes
      // after it (payload or the next header) are not in it; a byte_test on its first byte.
      const uint8_t* hp = b.frame.data() + want_off;
      const std::string last = hex(hp + want_len - 2, 2), first = hex(hp, 2);
      const std::string after = want_off + want_len + 2 <= b.frame.size() ? hex(hp + want_len, 2) : "";
      struct Case {
        std::string opts;
        bool match;
      };
      std::vector<Case> cases = {
          {std::string(kNames[hb]) + "; content:\"" + last + "\"; endswith;", true},
          {std::string(kNames[hb]) + "; content:\"" + first + "\"; startswith;", true},
          {std::string(kNames[hb]) + "; isdataat:" + std::to_string(want_len - 1) + "; isdataat:!" + std::to_string(want_len) + ";", true},
          {std::string(kNames[hb]) + "; byte_test:1,=," + std::to_string(hp[0]) + ",0;", true},
          {std::string(kNames[hb]) + "; byte_test:1,!=," + std::to_string(hp[0]) + ",0;", false},
      };
      if (!after.empty()) cases.push_back({std::string(kNames[hb]) + "; content:\"" + after + "\"; offset:" + std::to_string(want_len) + ";", false});
      // Another header buffer of the same packet, after it, with a variable carried across.
      for (uint8_t other = kHbIpv4; other <= kHbIcmpv6; ++other)
        if (other != hb && b.span[other].second) {
          const bool same = hp[0] == b.frame[b.span[other].first];
          cases.push_back({std::string(kNames[hb]) + "; byte_extract:1,0,v; " + kNames[other] + "; byte_test:1,=,v,0;", same});
          cases.push_back({std::string(kNames[hb]) + "; byte_extract:1,0,v; " + kNames[other] + "; byte_test:1,!=,v,0;", !same});
        }
      if (payload) cases.push_back({"content:\"" + hex(payload, std::min<uint32_t>(plen, 3)) + "\"; " + kNames[hb] + "; content:\"" + first + "\"; depth:2;", true});
      for (const Case& c : cases) {
        const std::string path = test::temp_path("hdr_case.rules");
        {
          std::ofstream f(path);
          f << "alert ip any any -> any any (" << c.opts << " sid:1;)\n";
        }
        DetectModule::Host host({{"rules", path}});
        const DetectView v = host.upload(mem);
        ASSERT_EQ(v.sig_n, 1u) << c.opts;
        EXPECT_EQ(v.sigs[0].mode & kSigStream, 0) << c.opts;  // a packet signature
        const int got = det_packet_lists(v, v.sigs[0], payload, plen, b.frame.data(), h);
        EXPECT_EQ(got == kInspectMatch, c.match) << b.name << ": " << c.opts;
      }
    }
  }
}

// The device's matchers (the hashed filter and Aho-Corasick) find exactly the signatures Hyperscan finds,
// also when several lanes share a buffer: all of ET Open's
// fast patterns, over every frame of real captures (whole frames as buffers) and over random
// buffers with planted patterns (case flipped for nocase ones). Run on the host: it is the same
// code the device runs.
TEST(Signatures, DeviceMatchersFindWhatHyperscanFinds) {
  const auto dir = test::shared_data_dir() / "rules" / "et-open";
  GASPP_REQUIRE_PATH(dir);
  std::string files;
  for (auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".rules") files += (files.empty() ? "" : ",") + e.path().string();
  DetectModule::Host hs({{"rules", files}});
  DetectModule::Host hash({{"rules", files}, {"prefilter", "hash"}});
  DetectModule::Host ac({{"rules", files}, {"prefilter", "hash"}, {"matcher", "ac"}});
  struct Mem : TableMemory {
    const void* place(const void* h, size_t) override { return h; }
  } mem;
  const DetectView vh = hs.upload(mem), vx = hash.upload(mem), va = ac.upload(mem);
  ASSERT_GT(vh.pat_n, 1000u);
  ASSERT_EQ(vh.pat_n, vx.pat_n);
  ASSERT_EQ(vh.pat_n, va.pat_n);
  ASSERT_EQ(va.matcher_ac, 1);
  std::printf("Aho-Corasick: %u states, %u byte classes\n", va.ac.states, va.ac.classes);
  std::vector<uint32_t> a, b, c;
  uint64_t buffers = 0, with_candidates = 0;
  auto check = [&](const uint8_t* p, uint32_t n, const std::string& what) {
    detect_host_candidates(vh, p, n, a);
    detect_host_candidates(vx, p, n, b);
    detect_host_candidates(va, p, n, c);
    ++buffers;
    with_candidates += !a.empty();
    ASSERT_EQ(a, b) << what;
    ASSERT_EQ(a, c) << what << " (Aho-Corasick)";
    // Lanes sharing the buffer (the device's bulk stream pass): together each candidate once,
    // the same set as one thread alone, for both matchers.
    FwPacket pk{};
    pk.family = 4;
    pk.proto = 6;
    pk.has_ports = true;
    pk.port[0] = 1025;
    pk.port[1] = 80;
    for (const DetectView* v : {&vx, &va}) {
      std::vector<uint32_t> one;
      DetectModule::for_candidates_split(*v, p, n, pk, 0, 1, [&](uint32_t i) { one.push_back(i); });
      std::sort(one.begin(), one.end());
      one.erase(std::unique(one.begin(), one.end()), one.end());
      for (uint32_t lanes : {2u, 7u, 32u}) {
        std::vector<uint32_t> all;
        for (uint32_t lane = 0; lane < lanes; ++lane)
          DetectModule::for_candidates_split(*v, p, n, pk, lane, lanes, [&](uint32_t i) { all.push_back(i); });
        std::sort(all.begin(), all.end());
        ASSERT_TRUE(std::adjacent_find(all.begin(), all.end()) == all.end())
            << what << ": a signature twice over " << lanes << " lanes" << (v == &va ? " (Aho-Corasick)" : "");
        ASSERT_EQ(all, one) << what << ", " << lanes << " lanes" << (v == &va ? " (Aho-Corasick)" : "");
      }
    }
  };
  for (const char* cap : {"zeek/http-bro.org.pcap", "zeek/wikipedia.pcap", "zeek/smtp.pcap", "zeek/ftp-ipv6.pcap"}) {
    const auto path = test::shared_data_dir() / "pcaps" / cap;
    if (!std::filesystem::exists(path)) continue;
    char err[PCAP_ERRBUF_SIZE];
    pcap_t* pc = pcap_open_offline(path.c_str(), err);
    ASSERT_NE(pc, nullptr) << err;
    pcap_pkthdr* h;
    const u_char* d;
    int k = 0;
    while (pcap_next_ex(pc, &h, &d) == 1) check(d, h->caplen, std::string(cap) + " frame " + std::to_string(++k));
    pcap_close(pc);
  }
  // Planted: one of the patterns (the fast pattern of a random signature) at a random place.
  std::mt19937 rng(7);
  const SignatureSet& set = hs.signatures();
  for (int it = 0; it < 3000; ++it) {
    const Signature& s = set.sigs[rng() % set.sigs.size()];
    std::string buf(rng() % 300, 'x');
    for (char& c : buf) c = char(rng() % 256);
    if (s.fast_pattern >= 0) {
      const SigOp& o = s.ops[size_t(s.fast_pattern)];
      std::string pat = o.bytes;
      if (o.nocase)
        for (char& c : pat)
          if (rng() % 2) c = char(std::toupper(static_cast<unsigned char>(c)));
      buf.insert(buf.size() ? rng() % buf.size() : 0, pat);
    }
    check(reinterpret_cast<const uint8_t*>(buf.data()), uint32_t(buf.size()), "planted buffer " + std::to_string(it));
  }
  std::printf("%llu buffers, %llu with fast-pattern candidates; %u fast patterns\n", (unsigned long long)buffers,
              (unsigned long long)with_candidates, vh.pat_n);
  EXPECT_GT(with_candidates, 3000u);
}


// flags, itype, icode, dsize as Suricata's documentation states them, one row per case: the rule's
// option, the packet's value, whether it holds.
TEST(Signatures, PacketConditionsHoldAsSuricataDocumentsThem) {
  struct Row {
    const char* opt;
    uint16_t value;
    bool holds;
  };
  // TCP flag bits: F 1, S 2, R 4, P 8, A 16, U 32, E 64, C 128.
  const Row rows[] = {
      {"flags:S;", 0x02, true},        {"flags:S;", 0x12, false},      {"flags:S,12;", 0xc2, true},
      {"flags:+S;", 0x12, true},       {"flags:+SA;", 0x02, false},    {"flags:*SA;", 0x10, true},
      {"flags:*SA;", 0x01, false},     {"flags:!SA;", 0x12, false},    {"flags:!SA;", 0x02, true},
      {"flags:0;", 0x00, true},        {"flags:0;", 0x10, false},      {"flags:SRAFPU,12;", 0x3f, true},
      {"flags:FPU,12;", 0x29, true},   {"flags:U+;", 0x30, true},      {"itype:8;", 8, true},
      {"itype:8;", 0, false},          {"itype:>3;", 4, true},         {"itype:<3;", 3, false},
      {"icode:>0;", 0, false},         {"icode:>0;", 1, true},         {"itype:3<>6;", 4, true},
      {"itype:3<>6;", 3, false},       {"itype:!8;", 8, false},        {"itype:!8;", 0, true},
      {"dsize:>10;", 11, true},        {"dsize:>10;", 10, false},      {"dsize:10<>20;", 20, false},
      {"dsize:<=5;", 5, true},         {"dsize:!0;", 0, false},
      // tcp.flags is Suricata 8's name for flags; prefilter changes nothing that matches.
      {"tcp.flags:S,12;", 0xc2, true}, {"tcp.flags:+SA;", 0x02, false}, {"itype:8; prefilter;", 8, true},
  };
  for (const Row& r : rows) {
    const std::string opt = r.opt;
    const bool icmp = opt.rfind("itype", 0) == 0 || opt.rfind("icode", 0) == 0;
    const std::string text = std::string("alert ") + (icmp ? "icmp" : "tcp") + " any any -> any any (" + opt + " sid:1;)";
    Signature sig;
    ASSERT_EQ(parse_signature(text, RuleVars{}, sig), "") << text;
    bool got;
    if (sig.has_flags) {
      got = det_flags_hold(DetFlags{1, sig.flags_mode, sig.flags_want, sig.flags_ignore}, r.value);
    } else {
      const NumCond& c = sig.dsize.on ? sig.dsize : sig.itype.on ? sig.itype : sig.icode;
      got = det_cond_holds(DetCond{uint8_t(c.range ? 2 : 1), c.cmp, uint8_t(c.neg), 0, c.lo, c.hi}, r.value);
    }
    EXPECT_EQ(got, r.holds) << r.opt << " on " << r.value;
  }
}


// Suricata's integer conditions (its detect/uint.rs and the tests there): what each form accepts,
// what it refuses, and which values it holds for.
TEST(Signatures, IntegerConditionsParseAndHoldAsSuricatasUint) {
  struct Row {
    const char* text;
    uint64_t max;
    bool ok;
    std::vector<std::pair<uint64_t, bool>> at;  // value, holds
  };
  const Row rows[] = {
      {"5", 255, true, {{5, true}, {4, false}}},
      {"=5", 255, true, {{5, true}, {6, false}}},
      {" 5 ", 255, true, {{5, true}}},
      {"!5", 255, true, {{5, false}, {4, true}}},
      {"!=5", 255, true, {{5, false}, {6, true}}},
      {"<5", 255, true, {{4, true}, {5, false}}},
      {"<=5", 255, true, {{5, true}, {6, false}}},
      {">5", 255, true, {{6, true}, {5, false}}},
      {">= 5", 255, true, {{5, true}, {4, false}}},
      {"1-5", 255, true, {{1, false}, {2, true}, {4, true}, {5, false}}},
      {"1<>5", 255, true, {{3, true}, {5, false}}},
      {"!1-5", 255, true, {{1, true}, {3, false}, {5, true}}},
      {"&0xf0=0x10", 255, true, {{0x1f, true}, {0x2f, false}}},
      {"&0xf0!=0x10", 255, true, {{0x1f, false}, {0x2f, true}}},
      {"0x1F", 255, true, {{31, true}}},
      {"2kb", 1 << 20, true, {{2048, true}, {2000, false}}},
      {">1MiB", 1ull << 32, true, {{(1 << 20) + 1, true}, {1 << 20, false}}},
      {"256", 255, false, {}},    // above the keyword's maximum
      {"1-2", 255, false, {}},    // an exclusive range with nothing inside
      {"5-3", 255, false, {}},
      {"<0", 255, false, {}},     // never holds
      {">=0", 255, false, {}},    // always holds
      {">255", 255, false, {}},
      {"&1=2", 255, false, {}},   // the value has bits outside the mask
      {"x", 255, false, {}},
      {"5x", 255, false, {}},
      {"", 255, false, {}},
      {"99999999999999999999", ~0ull, false, {}},  // overflows 64 bits
  };
  for (const Row& r : rows) {
    UintCond c;
    const std::string why = parse_uint_cond(r.text, r.max, c);
    EXPECT_EQ(why.empty(), r.ok) << "'" << r.text << "': " << why;
    for (const auto& [x, holds] : r.at) EXPECT_EQ(uint_cond_holds(c, x), holds) << "'" << r.text << "' at " << x;
  }
}

// vlan.id's index forms and vlan.layers, and the flow conditions' directions, on given tags and
// flow positions (uint_cond.hpp), as Suricata's multi-integer and detect-flow-pkts.c define them.
TEST(Signatures, VlanAndFlowConditionsHoldAsSuricatasDo) {
  struct Row {
    const char* opt;
    std::vector<uint16_t> tags;
    bool holds;
  };
  const Row vlan[] = {
      {"vlan.id:200;", {100, 200}, true},           {"vlan.id:200;", {}, false},
      {"vlan.id:200,any;", {100}, false},           {"vlan.id:>50,all;", {100, 200}, true},
      {"vlan.id:>150,all;", {100, 200}, false},     {"vlan.id:>150,all;", {}, false},
      {"vlan.id:>150,all_or_absent;", {}, true},    {"vlan.id:5,or_absent;", {}, true},
      {"vlan.id:5,or_absent;", {6}, false},         {"vlan.id:200,1;", {100, 200}, true},
      {"vlan.id:200,0;", {100, 200}, false},        {"vlan.id:200,-1;", {100, 200}, true},
      {"vlan.id:100,-2;", {100, 200}, true},        {"vlan.id:100,2;", {100, 200}, false},
      {"vlan.id:100,oob_or 2;", {100, 200}, true},  {"vlan.id:100,oob_or 1;", {100, 200}, false},
      {"vlan.layers:2;", {1, 2}, true},             {"vlan.layers:>0;", {}, false},
      {"vlan.layers:!1;", {}, true},
  };
  for (const Row& r : vlan) {
    Signature sig;
    ASSERT_EQ(parse_signature(std::string("alert ip any any -> any any (") + r.opt + " sid:1;)", RuleVars{}, sig), "") << r.opt;
    ASSERT_EQ(sig.int_conds.size(), 1u);
    EXPECT_EQ(int_cond_holds(sig.int_conds[0], nullptr, false, r.tags.data(), uint32_t(r.tags.size())), r.holds) << r.opt;
  }
  // flow.age counts whole seconds as Suricata's SCTIME_SECS(lastts) - SCTIME_SECS(startts): a
  // second boundary crossed counts, the time between does not.
  EXPECT_EQ(flow_age_s(900000000ull, 1100000000ull), 1u);
  EXPECT_EQ(flow_age_s(1100000000ull, 1900000000ull), 0u);
  EXPECT_EQ(flow_age_s(5000000000ull, 4000000000ull), 0u);  // out of order: no negative age
  EXPECT_EQ(flow_age_s(0, ~0ull), 0xffffffffu);               // clamped, as Suricata's u32
  FlowPosAt pos{{3, 1}, {120, 0}, {500, 60}, 1, {}, 21};
  struct FlowRow {
    const char* opt;
    bool tcp, session, holds;
  };
  const FlowRow flow[] = {
      {"flow.pkts:toserver,3;", true, true, true},    {"flow.pkts:toclient,3;", true, true, false},
      {"flow.pkts:either,1;", true, true, true},      {"flow.pkts:both,>0;", true, true, true},
      {"flow.pkts:both,>1;", true, true, false},      {"flow.pkts_toclient:1;", false, false, true},
      {"flow.bytes:toserver,>=500;", true, true, true}, {"flow.bytes_toclient:<60;", true, true, false},
      {"stream_size:client,=,120;", true, true, true}, {"stream_size:server,<,1;", true, true, true},
      {"stream_size:both,>,0;", true, true, false},   {"stream_size:either,>,100;", true, true, true},
      {"stream_size:client,=,120;", false, true, false},  // not TCP
      {"stream_size:client,=,120;", true, false, false},  // no session (Suricata: no TcpSession)
      // flow.age (Suricata's rules/flow_age cases on a 21-second flow), any protocol
      {"flow.age:19;", true, true, false},             {"flow.age:0x15;", false, false, true},
      {"flow.age:!0x14;", true, true, true},           {"flow.age:!=21;", true, true, false},
      {"flow.age:>21;", true, true, false},            {"flow.age:>=21;", true, true, true},
      {"flow.age:<22;", true, true, true},             {"flow.age:19-22;", true, true, true},
      {"flow.age:19-21;", true, true, false},
  };
  for (const FlowRow& r : flow) {
    Signature sig;
    ASSERT_EQ(parse_signature(std::string("alert ip any any -> any any (") + r.opt + " sid:1;)", RuleVars{}, sig), "") << r.opt;
    ASSERT_EQ(sig.int_conds.size(), 1u);
    FlowPosAt at = pos;
    at.tcp_session = r.session ? 1 : 0;
    EXPECT_EQ(int_cond_holds(sig.int_conds[0], &at, r.tcp, nullptr, 0), r.holds) << r.opt;
    EXPECT_FALSE(int_cond_holds(sig.int_conds[0], nullptr, r.tcp, nullptr, 0)) << r.opt << " without a flow";
  }
}

// hostbits are xbits tracked by host (detect-hostbits.c): source by default, dst on request,
// expiring after 300 s; noalert; the forms Suricata refuses are refused.
// Writes `text` to a rules file in the test directory; its path.
std::string rules_file(const std::string& name, const std::string& text) {
  const std::string path = test::temp_path(name);
  std::ofstream(path) << text;
  return path;
}

// The sids of a rules file in the order the engine evaluates them.
std::vector<uint32_t> evaluation_order(const DetectModule::Host& host) {
  std::vector<uint32_t> order;
  for (const Signature& g : host.signatures().sigs) order.push_back(g.rule.sid);
  return order;
}

// Suricata's host and address-pair bit roles (SCSigOrderByHostbitsCompare / ...IPPairbitsCompare
// over SCSigGetXbitsType): setters first, then set+test, then testers, then the rest; its tests
// are the xbits keyword's isset/isnotset and its writes the hostbits keyword's set/unset/toggle
// only, so a hostbits test and an xbits setter rank with the signatures that use neither.
TEST(Signatures, HostAndPairBitsFollowSuricatasOrder) {
  const std::string path = rules_file("xbits-order.rules",
         "alert ip any any -> any any (hostbits:isset,a; sid:1;)\n"
         "alert ip any any -> any any (xbits:isset,b,track ip_src; sid:2;)\n"
         "alert ip any any -> any any (xbits:set,b,track ip_src; sid:3;)\n"
         "alert ip any any -> any any (hostbits:set,a; sid:4;)\n"
         "alert ip any any -> any any (xbits:isset,c,track ip_src; hostbits:set,d; sid:5;)\n"
         "alert ip any any -> any any (xbits:isset,p,track ip_pair; sid:6;)\n"
         "alert ip any any -> any any (sid:7;)\n");
  DetectModule::Host host({{"rules", path}});
  const std::vector<uint32_t> order = evaluation_order(host);
  // Host roles: 4 (set), 5 (set+test), 2 (test), then 1, 3, 6, 7; among those the pair tester 6 first.
  EXPECT_EQ(order, (std::vector<uint32_t>{4, 5, 2, 6, 1, 3, 7}));
}

TEST(Signatures, HostbitsAreHostXbits) {
  struct Row {
    const char* opt;
    const char* error;  // "" parses; else what the result starts with
    int cmd, track;
  };
  const Row rows[] = {
      {"hostbits:set,abc;", "", XbitCmd::set, XbitCmd::ip_src},
      {"hostbits:isset,abc,src;", "", XbitCmd::isset, XbitCmd::ip_src},
      {"hostbits:isnotset,abc,dst;", "", XbitCmd::isnotset, XbitCmd::ip_dst},
      {"hostbits:toggle,abc;", "", XbitCmd::toggle, XbitCmd::ip_src},
      {"hostbits:unset,abc,dst;", "", XbitCmd::unset, XbitCmd::ip_dst},
      {"hostbits:noalert;", "", -1, -1},
      {"hostbits:set;", "error:", 0, 0},
      {"hostbits:noalert,abc;", "error:", 0, 0},
      {"hostbits:set,abc,sideways;", "error:", 0, 0},
      {"hostbits:flip,abc;", "error:", 0, 0},
      {"hostbits:set,abc,both;", "skip:", 0, 0},
  };
  for (const Row& r : rows) {
    const std::string text = std::string("alert ip any any -> any any (") + r.opt + " sid:1;)";
    Signature sig;
    const std::string res = parse_signature(text, RuleVars{}, sig);
    if (*r.error) {
      EXPECT_EQ(res.rfind(r.error, 0), 0u) << r.opt << ": " << res;
      continue;
    }
    ASSERT_EQ(res, "") << r.opt;
    if (r.cmd < 0) {
      EXPECT_TRUE(sig.noalert);
      EXPECT_TRUE(sig.xbits.empty());
      continue;
    }
    ASSERT_EQ(sig.xbits.size(), 1u) << r.opt;
    EXPECT_EQ(sig.xbits[0].cmd, r.cmd) << r.opt;
    EXPECT_EQ(sig.xbits[0].track, r.track) << r.opt;
    EXPECT_EQ(sig.xbits[0].expire, 300u) << r.opt;
    EXPECT_EQ(sig.xbits[0].name, "abc");
  }
}

// Suricata 8's transactional rules (`=>`): application-layer buffers of both sides, or refused.
TEST(Signatures, TransactionalRulesNeedBothSides) {
  struct Row {
    const char* text;
    const char* result;  // "" loads; else the start of why not
  };
  const Row rows[] = {
      {"alert http any any => any 80 (http.uri; content:\"/download\"; http.stat_code; content:\"200\"; sid:1;)", ""},
      {"alert tls any any => any any (ja3.hash; content:\"fae0\"; ja3s.hash; content:\"907b\"; sid:1;)", ""},
      {"alert http any any => any any (http.uri; content:\"/a\"; http.method; content:\"GET\"; sid:1;)",
       "error:=> with buffers of one direction"},
      {"alert http any any => any any (http.stat_code; content:\"200\"; sid:1;)", "error:=> with buffers of one direction"},
      {"alert tcp any any => any any (content:\"x\"; sid:1;)", "error:=> (a transactional rule) needs"},
      {"alert http any any => any any (http.content_type: to_server; content:\"json\"; http.content_type: to_client; "
       "content:\"xml\"; sid:1;)",
       "skip:"},
      {"alert http any any >> any any (http.uri; content:\"/\"; sid:1;)", "error:direction must be"},
  };
  for (const Row& r : rows) {
    Signature sig;
    const std::string res = parse_signature(r.text, RuleVars{}, sig);
    if (!*r.result) {
      EXPECT_EQ(res, "") << r.text;
      EXPECT_TRUE(sig.rule.transactional && sig.app) << r.text;
    } else {
      EXPECT_EQ(res.rfind(r.result, 0), 0u) << r.text << ": " << res;
    }
  }
  Rule fw;
  EXPECT_EQ(parse_rule("alert ip any any => any any (sid:1;)", RuleVars{}, fw).rfind("error:=>", 0), 0u);
  // file.data with a direction (Suricata 8): the body of that side.
  for (const auto& [dir, buf] : {std::pair{"to_server", kBufHttpRequestBody}, std::pair{"to_client", kBufHttpResponseBody}}) {
    Signature sig;
    const std::string text = std::string("alert http any any => any any (http.method; content:\"POST\"; http.stat_code; "
                                         "content:\"500\"; file.data: ") + dir + "; content:\"x\"; sid:1;)";
    ASSERT_EQ(parse_signature(text, RuleVars{}, sig), "") << text;
    EXPECT_EQ(sig.ops.back().buf, buf) << text;
  }
  Signature tcp_fd;
  EXPECT_EQ(parse_signature("alert smtp any any -> any any (file.data: to_client; content:\"x\"; sid:1;)", RuleVars{}, tcp_fd)
                .rfind("skip:keyword file.data with a direction", 0),
            0u);
}

// flowint and flowbits on the host, as Suricata evaluates them: signatures in its order (setters
// before readers), conditions with the match, changes after it. Eight packets of one flow, every
// signature's payload matching; the alerts per packet follow from Suricata's documented semantics
// (a bit set by an earlier signature of the packet is seen by a later one: sids 8 then 9 on the
// first packet).
TEST(Signatures, FlowintAndFlowbitsFollowSuricatasOrderAndSemantics) {
  const std::string path = test::temp_path("flowint.rules");
  {
    std::ofstream f(path);
    f << "alert ip any any -> any any (msg:\"read cnt==3\"; flowint:cnt,==,3; sid:2;)\n"
         "alert ip any any -> any any (msg:\"count\"; flowint:cnt,+,1; noalert; sid:1;)\n"
         "alert ip any any -> any any (msg:\"cnt>4\"; flowint:cnt,isset; flowint:cnt,>,4; sid:3;)\n"
         "alert ip any any -> any any (msg:\"other notset\"; flowint:other,notset; sid:4;)\n"
         "alert ip any any -> any any (msg:\"set x, sub unset y\"; flowint:x,=,7; flowint:y,-,1; noalert; sid:5;)\n"
         "alert ip any any -> any any (msg:\"y isset\"; flowint:y,isset; sid:6;)\n"
         "alert ip any any -> any any (msg:\"cnt>=x\"; flowint:cnt,>=,x; sid:7;)\n"
         "alert ip any any -> any any (msg:\"bit set once\"; flowbits:isnotset,seen; flowbits:set,seen; sid:8;)\n"
         "alert ip any any -> any any (msg:\"bit read\"; flowbits:isset,seen; sid:9;)\n"
         "alert ip any any -> any any (msg:\"toggle\"; flowbits:toggle,t; sid:10;)\n"
         "alert ip any any -> any any (msg:\"toggled read\"; flowbits:isset,t; sid:11;)\n";
  }
  DetectModule::Host host({{"rules", path}});
  const SignatureSet& set = host.signatures();
  ASSERT_EQ(set.sigs.size(), 11u);
  // Suricata's order (SCSigLessThan over its comparators): flowbits role first (setters 10 — a
  // toggle writes in Suricata 8 —, set+read 8, read 9 and 11, then those without flowbits), then
  // flowint role (setters 1, 5; readers), then load order.
  EXPECT_EQ(evaluation_order(host), (std::vector<uint32_t>{10, 8, 9, 11, 1, 5, 2, 3, 4, 6, 7}));
  struct Out : ModuleOutput {
    std::vector<uint32_t> sids;
    void eve(const std::string& line) override {
      const size_t at = line.find("\"signature_id\":");
      sids.push_back(uint32_t(std::stoul(line.substr(at + 15))));
    }
  } out;
  uint8_t frame[54] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x08, 0x00, 0x45, 0, 0, 40, 0, 1, 0, 0, 64, 6, 0, 0,
                       10, 0, 0, 1, 10, 0, 0, 2, 0x30, 0x39, 0, 80, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x10, 0x20, 0, 0, 0, 0, 0};
  DecodedPacket d;
  decode_frame(frame, sizeof frame, LinkType::ethernet, d);
  std::vector<std::vector<uint32_t>> got;
  for (uint64_t n = 1; n <= 8; ++n) {
    out.sids.clear();
    HostPacket hp{n, n * 1000, frame, sizeof frame, sizeof frame, &d, 77, false};
    for (uint32_t i = 0; i < set.sigs.size(); ++i)
      host.on_event(ModuleEvent{77, uint32_t(n - 1), i << 2, 0, DetectModule::kMatch, 0}, hp, out);
    std::sort(out.sids.begin(), out.sids.end());
    got.push_back(out.sids);
  }
  // t toggles on at odd packets, off at even ones: 11 reads it after 10 changed it.
  const std::vector<std::vector<uint32_t>> want = {
      {4, 8, 9, 10, 11}, {4, 9, 10}, {2, 4, 9, 10, 11}, {4, 9, 10}, {3, 4, 9, 10, 11}, {3, 4, 9, 10},
      {3, 4, 7, 9, 10, 11}, {3, 4, 7, 9, 10}};
  EXPECT_EQ(got, want);
}


// Rules the matcher cannot hold are skipped by reason, not fatal; bad module options are refused
// with the reason.
TEST(Signatures, OversizedRulesAreSkippedAndBadOptionsRefused) {
  std::string text = "alert tcp any any -> any any (";
  for (int k = 0; k < 65; ++k) text += "content:\"a" + std::to_string(k) + "\"; ";
  text += "sid:1;)";
  Signature sig;
  EXPECT_EQ(parse_signature(text, RuleVars{}, sig), "skip:more than 64 payload options");
  auto make = [](const ModuleOptions& o) { DetectModule::Host h(o); };
  EXPECT_THROW(make({{"packet-alert-max", "x"}}), std::invalid_argument);
  EXPECT_THROW(make({{"prefilter", "fast"}}), std::invalid_argument);
  EXPECT_THROW(make({{"matcher", "dfa"}}), std::invalid_argument);
  EXPECT_THROW(make({{"rules", testing::TempDir() + "/no-such.rules"}}), std::invalid_argument);
}

// pcre's capture names and uricontent's negation, as Suricata's DetectPcreParse,
// DetectPcreParseCapture and content parser read them (suricata-verify's eve-metadata,
// detect-pcre-06, http2-userinfo-authority, UriTestSig21).
TEST(Signatures, PcreCaptureNamesAndNegatedUricontentParse) {
  struct Row {
    const char* opts;
    const char* expr;      // the pcre expression kept ("" for none)
    const char* captures;  // the capture specs, "type:name" comma-joined (kv: "kv")
    bool negated_last;     // the last option is negated
  };
  const Row rows[] = {
      {"pcre:\"/uid=(\\d+)\\(([^)]+)\\)/, pkt:uid, pkt:username\";", "uid=(\\d+)\\(([^)]+)\\)", "pkt:uid,pkt:username", false},
      {"pcre: /:authority: ([^:]*:[^@]*)@/,flow:http2_userinfo;", ":authority: ([^:]*:[^@]*)@", "flow:http2_userinfo", false},
      {"pcre:\"/a(b)/i,alert:x\";", "a(b)", "alert:x", false},
      {"pcre:\"/^(.*)\\/(\\d+\\.\\d+)/G, flow:key,flow:value\";", "^(.*)\\/(\\d+\\.\\d+)", "flow:key,flow:value", false},
      {"pcre:\"/(\\w+)=(\\w+)/, pkt:key, pkt:value\";", "(\\w+)=(\\w+)", "kv", false},
      // Named groups (Suricata's PARSE_CAPTURE_REGEX): after the list; other prefixes capture nothing.
      {"pcre:\"/^(?P<alert_ua>[a-z]+) (?P<flow_os>\\w+)/\";", "^(?P<alert_ua>[a-z]+) (?P<flow_os>\\w+)", "alert:ua,flow:os", false},
      {"pcre:\"/(?P<q>[\\x22\\x27])x(?P=q)/\";", "(?P<q>[\\x22\\x27])x(?P=q)", "", false},
      // No separator before the name: part of the expression (Suricata's "missing separators").
      {"pcre:\"/xpkt:a/\";", "xpkt:a", "", false},
      {"pcre:\"/plain/\";", "plain", "", false},
      {"uricontent:\"fix\"; uricontent:!\"and\";", "", "", true},
      {"uricontent:! \"and\";", "", "", true},
  };
  const char* kTypes[] = {"pkt", "flow", "alert"};
  for (const Row& r : rows) {
    Signature sig;
    const std::string text = std::string("alert http any any -> any any (") + r.opts + " sid:1;)";
    ASSERT_EQ(parse_signature(text, RuleVars{}, sig), "") << r.opts;
    ASSERT_FALSE(sig.ops.empty()) << r.opts;
    const SigOp& last = sig.ops.back();
    if (*r.expr) {
      EXPECT_EQ(last.type, SigOpType::pcre) << r.opts;
      EXPECT_EQ(last.bytes, r.expr) << r.opts;
    }
    std::string caps;
    for (const PcreCaptureSpec& c : last.captures)
      caps += (caps.empty() ? "" : ",") +
              (c.type == PcreCaptureSpec::pkt_kv ? std::string("kv") : std::string(kTypes[c.type]) + ":" + c.name);
    EXPECT_EQ(caps, r.captures) << r.opts;
    EXPECT_EQ(last.negated, r.negated_last) << r.opts;
  }
  // Malformed lists do not load (Suricata's errors).
  for (const char* bad : {"pcre:\"/(a)(b)/, pkt:value\";", "pcre:\"/(a)(b)/, pkt:key, flow:x\";",
                          "pcre:\"/(a)/, pkt:a, host:b\";"}) {
    Signature sig;
    EXPECT_EQ(parse_signature(std::string("alert http any any -> any any (") + bad + " sid:1;)", RuleVars{}, sig)
                  .rfind("error:", 0),
              0u)
        << bad;
  }
}

// An Ethernet/IPv4/UDP frame 10.0.0.1:1000 -> 10.0.0.2:53 carrying `payload`.
std::vector<uint8_t> udp4_frame(const std::string& payload) {
  std::vector<uint8_t> f(14 + 20 + 8 + payload.size(), 0);
  f[0] = 0x02; f[6] = 0x02; f[12] = 0x08; f[13] = 0x00;
  uint8_t* ip = f.data() + 14;
  ip[0] = 0x45;
  const uint16_t tot = uint16_t(28 + payload.size());
  ip[2] = uint8_t(tot >> 8); ip[3] = uint8_t(tot);
  ip[8] = 64; ip[9] = 17;
  ip[12] = 10; ip[15] = 1; ip[16] = 10; ip[19] = 2;
  uint8_t* u = ip + 20;
  u[0] = 0x03; u[1] = 0xe8; u[3] = 53;
  const uint16_t ulen = uint16_t(8 + payload.size());
  u[4] = uint8_t(ulen >> 8); u[5] = uint8_t(ulen);
  std::copy(payload.begin(), payload.end(), u + 8);
  return f;
}

struct ActionRow {
  const char* name;
  const char* module;        // detect or firewall
  const char* rules;         // one rule a line
  const char* order;         // action-order option, "" for the default
  std::vector<std::string> payloads;  // one packet each, one UDP flow
  const char* want;          // per packet: D (dropped) or - , then the alerted sids; packets by '|'
};

// Suricata's PacketAlertFinalize, RuleActionToFlow and SignatureProperties, as rows: the first
// pass or drop in rank order decides; a pass ends the packet's alerts; an IP-only signature's
// decision takes the flow, a payload signature's the packet.
// clang-format off
const ActionRow kActionRows[] = {
  {"pass on a payload silences the packet only", "detect",
   "alert udp any any -> any any (content:\"Hi\"; sid:1;)\n"
   "pass udp any any -> any any (content:\"all\"; sid:2;)\n"
   "drop udp any any -> any any (content:\"again\"; sid:3;)\n", "",
   {"aaaa", "Hi all", "Hi again", "Hi"}, "-|-|D 3 1|- 1"},
  {"default order: a pass before a drop on one packet", "detect",
   "alert udp any any -> any any (content:\"Hi\"; sid:1;)\n"
   "pass udp any any -> any any (content:\"all\"; sid:2;)\n"
   "drop udp any any -> any any (content:\"again\"; sid:3;)\n", "",
   {"Hi all again", "Hi"}, "-|- 1"},
  {"drop first: the drop decides, the pass still ends the alerts", "detect",
   "alert udp any any -> any any (content:\"Hi\"; sid:1;)\n"
   "pass udp any any -> any any (content:\"all\"; sid:2;)\n"
   "drop udp any any -> any any (content:\"again\"; sid:3;)\n", "drop,pass,reject,alert",
   {"Hi all again", "Hi"}, "D 3|- 1"},
  {"alert first: alerts ranked before the pass stay", "detect",
   "alert udp any any -> any any (content:\"Hi\"; sid:1;)\n"
   "pass udp any any -> any any (content:\"all\"; sid:2;)\n", "alert,pass,drop,reject",
   {"Hi all", "Hi"}, "- 1|- 1"},
  {"an IP-only pass passes the flow", "detect",
   "pass udp any any -> any 53 (sid:4;)\n"
   "alert udp any any -> any any (content:\"Hi\"; sid:1;)\n", "",
   {"Hi", "Hi", "Hi"}, "-|-|-"},
  {"an IP-only drop drops the flow", "detect",
   "drop udp any any -> any 53 (sid:5;)\n"
   "alert udp any any -> any any (content:\"Hi\"; sid:1;)\n", "",
   {"Hi", "Hi", "aaaa"}, "D 5 1|D|D"},
  {"a payload drop drops the packet only", "detect",
   "drop udp any any -> any any (content:\"bad\"; sid:6;)\n", "",
   {"bad", "good", "bad"}, "D 6|-|D 6"},
  {"flowbits set stays IP-only", "detect",
   "drop udp any any -> any 53 (flowbits:set,x; sid:7;)\n", "",
   {"a", "b"}, "D 7|D"},
  {"firewall: default order, a pass wins", "firewall",
   "drop udp any any -> any 53 (sid:8;)\n"
   "pass udp 10.0.0.1 any -> any any (sid:9;)\n", "",
   {"a", "b"}, "-|-"},
  {"firewall: drop first, the drop wins and alerts", "firewall",
   "drop udp any any -> any 53 (sid:8;)\n"
   "pass udp 10.0.0.1 any -> any any (sid:9;)\n", "drop,pass,reject,alert",
   {"a", "b"}, "D 8|D"},
  {"firewall: alert first, the alert stays beside the pass", "firewall",
   "alert udp any any -> any 53 (sid:10;)\n"
   "pass udp 10.0.0.1 any -> any any (sid:9;)\n", "alert,pass,drop,reject",
   {"a", "b"}, "- 10|-"},
};
// clang-format on

TEST(Signatures, ActionsFollowSuricatasOrderAndScopes) {
  for (const ActionRow& row : kActionRows) {
    SCOPED_TRACE(row.name);
    const std::string path = test::temp_path("actions.rules");
    {
      std::ofstream f(path);
      f << row.rules;
    }
    test::PcapBuilder pb;
    uint32_t t = 1;
    for (const std::string& p : row.payloads) pb.record(udp4_frame(p), t++);
    const CaptureFile cap = CaptureFile::from_memory(pb.bytes(), "actions.pcap");
    ModuleOptions opt{{"rules", path}};
    if (*row.order) opt["action-order"] = row.order;
    ModuleSet mods;
    mods.add(make_module(row.module, opt));
    BackendConfig cfg;
    cfg.modules = mods.pointers();
    cfg.flow.module_state_bytes = mods.flow_state_bytes();
    RunOptions ro;
    auto be = test::make_backend(cfg);
    struct Out : ModuleOutput {
      std::map<uint64_t, std::vector<uint32_t>> sids;  // pcap_cnt -> alerted sids, in order
      void eve(const std::string& line) override {
        const size_t at = line.find("\"signature_id\":"), n = line.find("\"pcap_cnt\":");
        if (at == std::string::npos || n == std::string::npos) return;
        sids[std::stoull(line.substr(n + 11))].push_back(uint32_t(std::stoul(line.substr(at + 15))));
      }
    } out;
    std::vector<bool> dropped;
    run_capture(cap, *be, ro, [&](const PacketBatch& b) {
      for (uint32_t i = 0; i < b.count; ++i) dropped.push_back(b.h_verdict[i] & kVerdictDrop);
      mods.finish_batch(b, out);
    });
    std::string got;
    for (size_t i = 0; i < dropped.size(); ++i) {
      got += std::string(i ? "|" : "") + (dropped[i] ? "D" : "-");
      for (uint32_t sid : out.sids[i + 1]) got += " " + std::to_string(sid);
    }
    EXPECT_EQ(got, row.want);
  }
}

// Where a signature looks, by protocol and options (Suricata's SIG_FLAG_REQUIRE_PACKET/STREAM).
TEST(Signatures, ModeFollowsProtocolAndOptions) {
  const struct {
    const char* rule;
    uint8_t mode;
  } rows[] = {
      {"alert tcp any any -> any any (content:\"x\"; sid:1;)", kSigStream},
      {"alert tcp-pkt any any -> any any (content:\"x\"; sid:1;)", kSigPacket},
      {"alert tcp-stream any any -> any any (content:\"x\"; sid:1;)", kSigStream | kSigStreamOnly},
      {"alert tcp any any -> any any (content:\"x\"; depth:4; sid:1;)", kSigStream | kSigPacket},
      {"alert tcp any any -> any any (content:\"x\"; flow:no_stream; sid:1;)", kSigPacket},
      {"alert tcp any any -> any any (content:\"x\"; dsize:>2; sid:1;)", kSigPacket},
      {"alert udp any any -> any any (content:\"x\"; sid:1;)", kSigPacket},
      {"alert ip any any -> any any (content:\"x\"; sid:1;)", kSigStream},
  };
  for (const auto& r : rows) {
    Signature s;
    ASSERT_EQ(parse_signature(r.rule, RuleVars{}, s), "") << r.rule;
    EXPECT_EQ(s.mode, r.mode) << r.rule;
  }
}

// action-order takes each of the four actions once.
// base64_decode's decoder (Suricata's RFC 4648 mode, base64.hpp): its corner cases written out
// from Suricata's decoder, and random bytes encoded by a standard encoder written here.
TEST(Signatures, Base64DecodesAsSuricatasRfc4648Mode) {
  struct Case {
    const char* in;
    std::string out;
  };
  const Case cases[] = {
      {"QUJD", "ABC"},         {"QUJDRA==", "ABCD"},  {"QUJDRA", "ABCD"},   {"QQ", "A"},
      {"QUI", "AB"},           {"Q", ""},             {"QUJDQ", ""},        {"QUJD=QUJD", ""},
      {"QQ==QUE=", "AAA"},     {"QU=D", "A"},         {"QUJD\r\nQUJD", "ABC"}, {"QUJD&x", "ABC"},
      {"", ""},                {"&QUJD", ""},         {"====", ""},         {"QUJDQQ=", "ABCA"},
  };
  for (const Case& c : cases) {
    const std::string in = c.in;
    std::vector<uint8_t> out(in.size() + 1);
    const size_t n = base64_decode_rfc4648(reinterpret_cast<const uint8_t*>(in.data()), in.size(), out.data());
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(out.data()), n), c.out) << in;
  }
  static const char kAlpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::mt19937 rng(7);
  for (int t = 0; t < 2000; ++t) {
    std::string raw(rng() % 64, '\0');
    for (char& ch : raw) ch = char(rng());
    std::string enc;
    for (size_t i = 0; i < raw.size(); i += 3) {
      const uint32_t b0 = uint8_t(raw[i]), b1 = i + 1 < raw.size() ? uint8_t(raw[i + 1]) : 0,
                     b2 = i + 2 < raw.size() ? uint8_t(raw[i + 2]) : 0;
      const uint32_t w = b0 << 16 | b1 << 8 | b2;
      enc += kAlpha[w >> 18];
      enc += kAlpha[(w >> 12) & 63];
      enc += i + 1 < raw.size() ? kAlpha[(w >> 6) & 63] : '=';
      enc += i + 2 < raw.size() ? kAlpha[w & 63] : '=';
    }
    enc += (t % 3 == 0) ? "\"" : "";  // a stop byte after it changes nothing
    std::vector<uint8_t> out(enc.size() + 1);
    const size_t n = base64_decode_rfc4648(reinterpret_cast<const uint8_t*>(enc.data()), enc.size(), out.data());
    ASSERT_EQ(std::string(reinterpret_cast<const char*>(out.data()), n), raw) << enc;
  }
}

TEST(Signatures, ActionOrderParsesAndRefusesBadLists) {
  ActionOrder o;
  EXPECT_EQ(parse_action_order("drop, pass,reject,alert", o), "");
  EXPECT_LT(o.rank(RuleAction::drop), o.rank(RuleAction::pass));
  EXPECT_LT(o.rank(RuleAction::reject), o.rank(RuleAction::alert));
  EXPECT_NE(parse_action_order("drop,pass,reject", o), "");
  EXPECT_NE(parse_action_order("drop,pass,reject,alert,pass", o), "");
  EXPECT_NE(parse_action_order("drop,pass,reject,log", o), "");
  EXPECT_THROW(DetectModule::Host(ModuleOptions{{"action-order", "pass,alert"}}), std::invalid_argument);
}


// A set's command id (the option must parse).
uint32_t add_set(Datasets& ds, const std::string& opt, const std::string& rules) {
  DatasetSpec sp;
  EXPECT_EQ(parse_dataset_option(opt, sp), "") << opt;
  return ds.add(sp, rules);
}

// A set whose file does not load: the error names where (the file and line or entry).
void expect_load_error(Datasets& ds, const std::string& opt, const std::string& rules, const std::string& where) {
  DatasetSpec sp;
  ASSERT_EQ(parse_dataset_option(opt, sp), "") << opt;
  try {
    ds.add(sp, rules);
    ADD_FAILURE() << opt << " loaded";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(where), std::string::npos) << e.what();
  }
}

// Address sets (type ipv4, ipv6, ip) against Suricata's storage (datasets.c, datasets.rs): an
// ipv4 set holds 4-byte addresses; an ipv6 / ip set 16-byte ones, an IPv4 address (dotted, or
// ::ffff:-mapped in the file; a 4-byte buffer) as its 4 bytes then 12 zeros. Buffers are ip.src /
// ip.dst's bytes, as the packet carries them.
TEST(Datasets, AddressSetsHoldWhatSuricataStores) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(test::temp_path("datasets_ip"));
  fs::create_directories(dir);
  std::ofstream(dir / "v4.lst") << "192.0.2.7\n10.1.2.3,7\n";
  std::ofstream(dir / "ip.lst") << "192.0.2.7\n::ffff:10.1.2.3\n2001:db8::1\n";
  std::ofstream(dir / "ip.ndjson") << "{\"ip\":\"2001:db8::9\",\"who\":\"x\"}\n{\"ip\":\"198.51.100.1\"}\n";
  std::ofstream(dir / "bad4.lst") << "192.0.2.7\n2001:db8::1\n";
  std::ofstream(dir / "bad6.lst") << "2001:db8::1\nnot-an-address\n";
  const std::string rules = (dir / "x.rules").string();
  Datasets ds;
  auto add = [&](const std::string& opt) { return add_set(ds, opt, rules); };
  auto v4 = [](const char* a) {
    std::string b(4, '\0');
    EXPECT_EQ(inet_pton(AF_INET, a, b.data()), 1) << a;
    return b;
  };
  auto v6 = [](const char* a) {
    std::string b(16, '\0');
    EXPECT_EQ(inet_pton(AF_INET6, a, b.data()), 1) << a;
    return b;
  };
  const uint32_t s4 = add("isset,s4,type ipv4,load v4.lst");
  const uint32_t sip = add("isset,sip,type ip,load ip.lst");
  const uint32_t json = add("isset,sj,type ipv6,load ip.ndjson,format ndjson,value_key ip,context_key c");
  const uint32_t set6 = add("set,sip,type ip");
  const uint32_t unset6 = add("unset,sip,type ip");
  struct Row {
    uint32_t id;
    std::string data;
    bool match;
  };
  const std::string pad7 = v4("192.0.2.7") + std::string(12, '\0');
  const Row rows[] = {
      {s4, v4("192.0.2.7"), true},         {s4, v4("10.1.2.3"), true},         {s4, v4("10.1.2.4"), false},
      {s4, pad7, false},                   // a 16-byte buffer is never in an ipv4 set
      {sip, v4("192.0.2.7"), true},        {sip, pad7, true},                  // either form of the IPv4 address
      {sip, v4("10.1.2.3"), true},         {sip, v6("::ffff:10.1.2.3"), false},  // mapped in the file, not in a buffer
      {sip, v6("2001:db8::1"), true},      {sip, v6("2001:db8::2"), false},    {sip, "abc", false},
      {json, v6("2001:db8::9"), true},     {json, v4("198.51.100.1"), true},   {json, v4("198.51.100.2"), false},
      {set6, v4("203.0.113.5"), true},     {sip, v6("::cb00:7105"), false},    // 203.0.113.5 at the front, not the back
      {sip, v4("203.0.113.5") + std::string(12, '\0'), true},                  // set as its padded form
      {set6, v4("203.0.113.5"), false},    {unset6, v4("203.0.113.5"), true},  {sip, v4("203.0.113.5"), false},
  };
  for (const Row& r : rows)
    EXPECT_EQ(ds.match(r.id, reinterpret_cast<const uint8_t*>(r.data.data()), uint32_t(r.data.size())), r.match)
        << r.id << " " << r.data.size() << " bytes";
  for (const auto& [opt, where] : std::vector<std::pair<std::string, std::string>>{
           {"isset,b4,type ipv4,load bad4.lst", "bad4.lst:2"}, {"isset,b6,type ip,load bad6.lst", "bad6.lst:2"}}) {
    expect_load_error(ds, opt, rules, where);
  }
}

// JSON sets (Suricata 8's datajson): json (top array, or the array at array_key) and ndjson files,
// value_key as a dotted path, remove_key, and the matched value's object handed to alert.context
// (a value given twice: its first object); a value that is not a string or a file that is not JSON
// is an error naming the file and the entry; an entry without the key is passed over, counted.
TEST(Datasets, JsonSetsLoadAndGiveTheirObjects) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(test::temp_path("datasets_json"));
  fs::create_directories(dir);
  std::ofstream(dir / "arr.json")
      << R"([{"host":"evil.com","year":2005},{"host":"x.org","meta":{"k":1}},{"host":"evil.com","year":2006}])";
  std::ofstream(dir / "obj.json") << R"({"threat":[{"ioc":{"host":"bad.net","kind":"c2"},"level":3}]})";
  std::ofstream(dir / "md5.ndjson") << "{\"hash\":\"0cc175b9c0f1b6a831c399e269772661\",\"year\":2007}\n\n";
  std::ofstream(dir / "num.ndjson") << "{\"v\":\"ok\"}\n{\"v\":12345}\n";
  std::ofstream(dir / "broken.json") << "[{\"host\":";
  std::ofstream(dir / "nokey.json") << R"([{"name":"a"}])";
  const std::string rules = (dir / "x.rules").string();
  Datasets ds;
  auto add = [&](const std::string& opt) { return add_set(ds, opt, rules); };
  const uint32_t arr = add("isset,a,type string,load arr.json,format json,value_key host,context_key bad");
  const uint32_t nested = add("isset,o,type string,load obj.json,format json,array_key threat,value_key ioc.host,"
                              "context_key t,remove_key");
  const uint32_t md5 = add("isset,m,type md5,load md5.ndjson,format ndjson,value_key hash,context_key h");
  const uint32_t quiet = add("isset,a,type string,format json,value_key host");  // the same set, no context_key
  struct Row {
    uint32_t id;
    std::string data;
    bool match;
    std::string key;   // "" no context
    const char* json;  // the object handed over
  };
  const std::string md5_a("\x0c\xc1\x75\xb9\xc0\xf1\xb6\xa8\x31\xc3\x99\xe2\x69\x77\x26\x61", 16);
  const Row rows[] = {
      {arr, "evil.com", true, "bad", R"({"host":"evil.com","year":2005})"},
      {arr, "x.org", true, "bad", R"({"host":"x.org","meta":{"k":1}})"},
      {arr, "y.org", false, "", nullptr},
      {nested, "bad.net", true, "t", R"({"ioc":{"kind":"c2"},"level":3})"},
      {md5, md5_a, true, "h", R"({"hash":"0cc175b9c0f1b6a831c399e269772661","year":2007})"},
      {quiet, "evil.com", true, "", nullptr},
  };
  for (const Row& r : rows) {
    DatasetContexts& c = dataset_contexts();
    c.active = true;
    c.hits.clear();
    EXPECT_EQ(ds.match(r.id, reinterpret_cast<const uint8_t*>(r.data.data()), uint32_t(r.data.size())), r.match) << r.data;
    c.active = false;
    if (r.key.empty()) {
      EXPECT_TRUE(c.hits.empty()) << r.data;
      continue;
    }
    ASSERT_EQ(c.hits.size(), 1u) << r.data;
    EXPECT_EQ(c.hits[0].first, r.key);
    EXPECT_EQ(nlohmann::json::parse(c.hits[0].second), nlohmann::json::parse(r.json)) << r.data;
  }
  // An entry without the value is passed over and counted.
  EXPECT_EQ(ds.entries_without_value(), 0u);
  add("isset,n3,type string,load nokey.json,format json,value_key host");
  EXPECT_EQ(ds.entries_without_value(), 1u);
  // Outside an inspection nothing is collected.
  dataset_contexts().hits.clear();
  EXPECT_TRUE(ds.match(arr, reinterpret_cast<const uint8_t*>("evil.com"), 8));
  EXPECT_TRUE(dataset_contexts().hits.empty());
  for (const auto& [opt, where] : std::vector<std::pair<std::string, std::string>>{
           {"isset,n1,type string,load num.ndjson,format ndjson,value_key v", "num.ndjson:2"},
           {"isset,n2,type string,load broken.json,format json,value_key host", "broken.json"},
           {"isset,n4,type md5,load arr.json,format json,value_key host", "arr.json: entry 1"}}) {
    expect_load_error(ds, opt, rules, where);
  }
}

// The tag engine against Suricata's tag semantics (detect-engine-tag.c, its DetectTagTestPacket
// cases): the alerting packet is counted and not logged; a packets tag logs COUNT - 1 more, a bytes
// tag until the counted bytes pass COUNT, a seconds tag until more than COUNT whole seconds passed;
// an alert again restarts the tag (up to 10 times); host tags follow one address either way.
TEST(Tags, CountAsSuricatasTagEngine) {
  struct Pkt {
    int src, dst;     // host numbers (10.0.0.N)
    uint64_t sec;     // capture second
    uint32_t len;
    int alert_sid;    // 0: none; else the tagging signature alerts on this packet
    bool tagged;      // expected
  };
  struct Case {
    const char* name;
    const char* tag;  // the option's value
    std::vector<Pkt> pkts;
  };
  const std::vector<Case> cases = {
      {"session packets", "session,4,packets",
       {{1, 2, 0, 60, 1, false}, {2, 1, 0, 60, 0, true}, {1, 2, 0, 60, 0, true}, {1, 2, 0, 60, 0, true},
        {2, 1, 0, 60, 0, false}, {1, 3, 0, 60, 0, false}}},
      {"session default 256", "session",
       {{1, 2, 0, 60, 1, false}, {2, 1, 0, 60, 0, true}, {3, 4, 0, 60, 0, false}}},
      {"session bytes", "session,250,bytes",
       {{1, 2, 0, 100, 1, false}, {2, 1, 0, 100, 0, true}, {1, 2, 0, 100, 0, false}, {1, 2, 0, 100, 0, false}}},
      {"session seconds", "session,2,seconds",
       {{1, 2, 0, 60, 1, false}, {1, 2, 1, 60, 0, true}, {2, 1, 2, 60, 0, true}, {1, 2, 3, 60, 0, false}}},
      {"alert again restarts", "session,3,packets",
       {{1, 2, 0, 60, 1, false}, {1, 2, 0, 60, 0, true}, {1, 2, 0, 60, 1, true}, {1, 2, 0, 60, 0, true},
        {1, 2, 0, 60, 0, true}, {1, 2, 0, 60, 0, false}}},
      {"host src both ways, other hosts not", "host,3,packets,src",
       {{1, 2, 0, 60, 1, false}, {3, 4, 0, 60, 0, false}, {5, 1, 0, 60, 0, true}, {1, 6, 0, 60, 0, true},
        {1, 2, 0, 60, 0, false}}},
      {"host dst by default", "host,2,packets",
       {{1, 2, 0, 60, 1, false}, {1, 3, 0, 60, 0, false}, {2, 7, 0, 60, 0, true}, {2, 7, 0, 60, 0, false}}},
      {"host idle for 600 s ends", "host,10,seconds,src",
       {{1, 2, 0, 60, 1, false}, {1, 2, 5, 60, 0, true}, {1, 2, 700, 60, 0, false}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    TagSpec spec;
    ASSERT_EQ(parse_tag_option(c.tag, spec), "");
    TagTable t;
    for (size_t k = 0; k < c.pkts.size(); ++k) {
      const Pkt& p = c.pkts[k];
      TagPacket tp;
      tp.family = 4;
      tp.proto = 6;
      tp.src[0] = tp.dst[0] = 10;
      tp.src[3] = uint8_t(p.src);
      tp.dst[3] = uint8_t(p.dst);
      tp.sport = p.src < p.dst ? 40000 : 80;
      tp.dport = p.src < p.dst ? 80 : 40000;
      tp.ts_ns = p.sec * 1000000000ull;
      tp.len = p.len;
      if (p.alert_sid) t.add(spec, 1, uint32_t(p.alert_sid), tp);
      EXPECT_EQ(t.handle(tp), p.tagged) << "packet " << k + 1;
    }
  }
  // The match limit: the 2nd to 10th alerts of one signature restart its tag, the 11th does not.
  {
    TagSpec spec;
    ASSERT_EQ(parse_tag_option("session,2,packets", spec), "");
    TagTable t;
    TagPacket tp;
    tp.family = 4;
    tp.src[3] = 1;
    tp.dst[3] = 2;
    for (int k = 0; k < 10; ++k) {
      t.add(spec, 1, 7, tp);
      EXPECT_EQ(t.handle(tp), k > 0) << "alert " << k + 1;  // the first alert's packet is not logged
      EXPECT_TRUE(t.handle(tp)) << "alert " << k + 1;
    }
    t.add(spec, 1, 7, tp);  // the 11th: counts go on from where they were
    EXPECT_FALSE(t.handle(tp));
  }
  // At most 50 tags on one session: the 51st signature's is not kept, counted.
  {
    TagSpec spec;
    TagTable t;
    TagPacket tp;
    tp.family = 4;
    for (uint32_t sid = 1; sid <= 51; ++sid) t.add(spec, 1, sid, tp);
    EXPECT_EQ(t.full(), 1u);
  }
  // The option as Suricata parses it.
  TagSpec s;
  ASSERT_EQ(parse_tag_option("host", s), "");
  EXPECT_TRUE(s.host && !s.dir_src && s.metric == TagSpec::packets && s.count == 256);
  ASSERT_EQ(parse_tag_option(" Host , 1000 , PACKETS , src ", s), "");
  EXPECT_TRUE(s.host && s.dir_src && s.count == 256);  // packets are capped at 256
  ASSERT_EQ(parse_tag_option("session,5000,bytes", s), "");
  EXPECT_TRUE(!s.host && s.metric == TagSpec::bytes && s.count == 5000);
  for (const char* bad : {"", "flow", "session,10", "session,x,packets", "session,-1,packets", "session,1,minutes",
                          "host,10,packets,up", "host,1,packets,src,more", "session,99999999999,bytes"})
    EXPECT_EQ(parse_tag_option(bad, s).rfind("error:", 0), 0u) << bad;
}

}  // namespace
}  // namespace gaspp

// What each update inspects of an HTTP body (body_window.hpp): Suricata's FiledataGetDataCallback
// (response) and HttpRequestBodyGetDataCallback (request), worked through by hand for each step.
TEST(BodyWindow, AsSuricatasBodyCallbacks) {
  struct Step {
    uint64_t size;
    bool done, cut;
    bool inspect;
    uint64_t offset;
  };
  struct Case {
    const char* name;
    gaspp::BodyWindowCfg cfg;
    std::vector<Step> steps;
  };
  const gaspp::BodyWindowCfg resp{40960, 16384, false, false}, resp_inline{40960, 16384, false, true};
  const gaspp::BodyWindowCfg req{32768, 4096, true, false};
  const std::vector<Case> cases = {
      {"small response: waits for its end", resp, {{1000, false, false, false, 0}, {5000, true, false, true, 0}}},
      {"large response: minimal size, then windows",
       resp,
       {{41000, false, false, true, 0},
        {42400, false, false, true, 42400 - 16384},         // 1,400 new: a window in all
        {80000, false, false, true, 42400 - 4096},          // more than a window new: a quarter window of old
        {80000, false, false, false, 0}}},                  // nothing new
      {"response at its limit: inspected at once", resp, {{20000, false, true, true, 0}}},
      {"inline response: from the start until the minimal size",
       resp_inline,
       {{100, false, false, true, 0}, {200, false, false, true, 0}, {41000, false, false, true, 0},
        {42000, false, false, true, 41000 - (16384 - 1000)}}},
      {"request: from the start until more than the minimal size was inspected",
       req,
       {{10000, false, false, false, 0},
        {33000, false, false, true, 0},
        {34000, false, false, true, 33000 - (4096 - 1000)},
        {40000, false, false, true, 34000 - 1024}}},
      {"small request: at its end", req, {{10000, true, false, true, 0}}},
      // A window over four times the minimal size: the quarter window reaches before the body's
      // start, so the whole body is inspected (not an offset wrapped round).
      {"request with a window over four minimal sizes",
       gaspp::BodyWindowCfg{100, 1000, true, false},
       {{150, false, false, true, 0}, {1200, false, false, true, 0}, {1300, false, false, true, 1200 - 900}}},
  };
  for (const Case& c : cases) {
    uint64_t inspected = 0;
    for (size_t i = 0; i < c.steps.size(); ++i) {
      const Step& s = c.steps[i];
      const gaspp::BodyWindow w = gaspp::body_window(c.cfg, s.size, s.done, s.cut, inspected);
      EXPECT_EQ(w.inspect, s.inspect) << c.name << ", step " << i;
      if (s.inspect) {
        EXPECT_EQ(w.offset, s.offset) << c.name << ", step " << i;
      }
    }
  }
}
