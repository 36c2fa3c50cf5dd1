// The device's regex search (modules/detect/regex.hpp) against PCRE2, the oracle: whether there is
// a match, and its start and end, from a start offset — on hand-picked cases for each construct, on
// random expressions over a small alphabet (where priorities of greedy, lazy and alternation show),
// and on every pcre of ET Open that compiles, over payloads built from its own bytes.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <gtest/gtest.h>
#include <pcre2.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>

#include "modules/detect/regex_compile.hpp"
#include "modules/detect/signature.hpp"
#include "test_support.hpp"

namespace gaspp {
namespace {

struct InPlace : TableMemory {
  const void* place(const void* h, size_t) override { return h; }
};

// PCRE2's answer: -1 no match, else ov0/ov1. `ok` false when it does not compile.
struct Pcre {
  pcre2_code* code = nullptr;
  pcre2_match_data* md = nullptr;
  Pcre(const std::string& re, uint32_t opts) {
    int err = 0;
    PCRE2_SIZE off = 0;
    code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(re.data()), re.size(), opts, &err, &off, nullptr);
    if (code) md = pcre2_match_data_create_from_pattern(code, nullptr);
  }
  ~Pcre() {
    if (md) pcre2_match_data_free(md);
    if (code) pcre2_code_free(code);
  }
  int run(const std::string& s, uint32_t start, uint32_t& ov0, uint32_t& ov1) const {
    const int rc = pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), start, 0, md, nullptr);
    if (rc < 0) return rc == PCRE2_ERROR_NOMATCH ? 0 : -1;
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    ov0 = uint32_t(ov[0]);
    ov1 = uint32_t(ov[1]);
    return 1;
  }
};

// Compares the device search with PCRE2 on one subject from every start offset; returns the
// number of matches seen (to show the cases are not all misses).
int compare(const RegexView& v, int prog, const Pcre& pc, const std::string& re, uint32_t opts, const std::string& s) {
  int matches = 0;
  for (uint32_t start = 0; start <= s.size(); ++start) {
    uint32_t a0 = 0, a1 = 0, b0 = 0, b1 = 0;
    const int want = pc.run(s, start, a0, a1);
    if (want < 0) continue;  // PCRE2's own limits: nothing to compare
    const int got = rx_search(v, uint32_t(prog), reinterpret_cast<const uint8_t*>(s.data()), uint32_t(s.size()), start, b0, b1);
    EXPECT_NE(got, kRxUnknown) << re;
    EXPECT_EQ(got, want) << "/" << re << "/ options " << std::hex << opts << std::dec << " on " << testing::PrintToString(s)
                         << " from " << start;
    if (got == want && want == 1) {
      EXPECT_EQ(b0, a0) << "/" << re << "/ on " << testing::PrintToString(s) << " from " << start << ": start";
      EXPECT_EQ(b1, a1) << "/" << re << "/ on " << testing::PrintToString(s) << " from " << start << ": end";
    }
    matches += want == 1;
    if (::testing::Test::HasFailure()) break;
  }
  return matches;
}

TEST(Regex, EachConstructAsPcre2) {
  struct Case {
    const char* re;
    uint32_t opts;
    std::vector<std::string> subjects;
  };
  const uint32_t I = PCRE2_CASELESS, S = PCRE2_DOTALL, M = PCRE2_MULTILINE, X = PCRE2_EXTENDED, A = PCRE2_ANCHORED,
                 E = PCRE2_DOLLAR_ENDONLY, G = PCRE2_UNGREEDY;
  const std::vector<Case> cases = {
      {"abc", 0, {"abc", "xxabcxx", "ab", "ABC", ""}},
      {"abc", I, {"xAbC", "ABC", "abd"}},
      {"a.c", 0, {"abc", "a\nc", "ac"}},
      {"a.c", S, {"abc", "a\nc"}},
      {"a*", 0, {"", "aaa", "baaa"}},
      {"a*?b", 0, {"aaab", "b", "aa"}},
      {"a+?", 0, {"aaa"}},
      {"a{2,4}", 0, {"a", "aa", "aaaaaa", "baaab"}},
      {"a{2,4}?", 0, {"aaaa"}},
      {"a{3}", 0, {"aa", "aaaa"}},
      {"a{2,}b", 0, {"ab", "aab", "aaaaab"}},
      {"x{", 0, {"x{", "x"}},
      {"a{1,2", 0, {"a{1,2", "aa"}},
      {"a|ab", 0, {"ab", "b"}},
      {"ab|a", 0, {"ab"}},
      {"(a|ab)(c|bcd)(d*)", 0, {"abcd", "abcdd"}},
      {"(?:x|y)+z", 0, {"xyxyz", "z"}},
      {"^ab", 0, {"ab", "xab", "x\nab"}},
      {"^ab", M, {"x\nab", "ab\n", "x\n"}},
      {"^", M, {"a\n", "a\nb", "\n"}},
      {"ab$", 0, {"ab", "ab\n", "ab\n\n", "abx"}},
      {"ab$", E, {"ab", "ab\n"}},
      {"ab$", M, {"ab\ncd", "ab\n"}},
      {"$", 0, {"", "x\n", "\n\n"}},
      {"\\bfoo\\b", 0, {"foo", "a foo b", "afoo", "foo_"}},
      {"\\Boo", 0, {"foo", " oo"}},
      {"\\Aab\\z", 0, {"ab", "ab\n"}},
      {"ab\\Z", 0, {"ab\n", "ab", "ab\nx"}},
      {"\\Gab", 0, {"abab", "xab"}},
      {"[a-c]+", 0, {"xbcaz", "ABC"}},
      {"[a-c]+", I, {"xBCaz"}},
      {"[^a-c]+", I, {"AbXyz"}},
      {"[]a]+", 0, {"]a]"}},
      {"[^]a]", 0, {"]ab"}},
      {"[a-]+", 0, {"-a-"}},
      {"[\\d.]+", 0, {"ip 1.2.3.4 x"}},
      {"[\\w-]+@", 0, {"my-name@host"}},
      {"[[:digit:][:upper:]]+", 0, {"abC12d"}},
      {"[[:^alpha:]]+", 0, {"ab12;c"}},
      {"\\d+\\s\\w+\\S", 0, {"12 ab;", "1\tx_y"}},
      {"\\D\\W\\H\\V", 0, {"a; \n", "a;xy"}},
      {"\\x41\\x{42}\\0103\\t", 0, {"ABC\t", "ABCD"}},
      {"\\.\\*\\?\\/", 0, {"a.*?/b"}},
      {"(?i)abc", 0, {"ABC"}},
      {"a(?i)bc|d", 0, {"aBC", "D", "d"}},
      {"(a(?i)b)c", 0, {"aBc", "aBC"}},
      {"(?i:a)b", 0, {"Ab", "AB"}},
      {"(?-i:a)b", I, {"aB", "AB"}},
      {"(?s:.)x", 0, {"\nx"}},
      {"(?m)^x", 0, {"a\nx"}},
      {"a b # comment\n c", X, {"abc", "a b c"}},
      {"a\\ b", X, {"a b"}},
      {"[ ]x", X, {" x"}},
      {"(?<name>ab)+", 0, {"ababx"}},
      {"(?P<n>a)b", 0, {"ab"}},
      {"(?'n'a)b", 0, {"ab"}},
      {"a(?#note)b", 0, {"ab"}},
      {"ab", A, {"ab", "xab", "abab"}},
      {"a+", G, {"aaa"}},
      {"a+?", G, {"aaa"}},
      {".*foo", 0, {"xfooyfoo", "foo"}},
      {".*?foo", 0, {"xfooyfoo"}},
      {"(a*)b", 0, {"aaab"}},
      {"(ab|a)(bc|c)?", 0, {"abc"}},
      {"www.[0-9a-z]{4,25}.com", 0, {"GET http://www.abcdef.com/", "www.ab.com", "www.abcdefgh.comwww.xyzw.com"}},
      {"^[A-Z]{3,}\\s+\\d+\\r?$", M, {"ABC 123\r\nxyz", "ab 1"}},
  };
  RegexTables t;
  std::vector<int> progs;
  for (const Case& c : cases) {
    std::string why;
    progs.push_back(t.add(c.re, c.opts, why));
    ASSERT_GE(progs.back(), 0) << c.re << ": " << why;
  }
  InPlace mem;
  const RegexView v = t.place(mem);
  int matches = 0;
  for (size_t k = 0; k < cases.size(); ++k) {
    Pcre pc(cases[k].re, cases[k].opts);
    ASSERT_NE(pc.code, nullptr) << cases[k].re;
    for (const std::string& s : cases[k].subjects) matches += compare(v, progs[k], pc, cases[k].re, cases[k].opts, s);
  }
  EXPECT_GT(matches, 100);
}

TEST(Regex, RefusesWhatItCannotRunExactly) {
  const std::vector<std::pair<const char*, const char*>> refused = {
      {"(a)\\1", "back-reference"},
      {"a(?=b)", "group kind"},
      {"(?<=a)b", "group kind"},
      {"(?>a+)b", "group kind"},
      {"a++", "possessive"},
      {"\\Qa.b\\E", "escape"},
      {"\\p{L}", "escape"},
      {"(a*)*", "empty string"},
      {"(a|)+", "empty string"},
      {"a{,3}", "{,n}"},
      {"x{1000}", "instructions"},
      {"(*UTF)a", "verb"},
      {"\\cA", "escape"},
      {"[[:foo:]]", "POSIX"},
      {"(ab", "unclosed"},
      {"ab)", "unbalanced"},
  };
  RegexTables t;
  for (const auto& [re, why_part] : refused) {
    std::string why;
    EXPECT_EQ(t.add(re, 0, why), -1) << re;
    EXPECT_NE(why.find(why_part), std::string::npos) << re << ": " << why;
  }
  EXPECT_EQ(t.programs(), 0u);
}

// Random expressions over {a, b, newline}: nesting, alternation, every quantifier greedy and lazy,
// anchors, under random options; subjects over the same bytes.
TEST(Regex, RandomExpressionsAsPcre2) {
  std::mt19937 rng(7);
  auto pick = [&](int n) { return int(rng() % uint32_t(n)); };
  std::function<std::string(int)> gen = [&](int depth) -> std::string {
    std::string out;
    const int items = 1 + pick(3);
    for (int k = 0; k < items; ++k) {
      std::string atom;
      switch (depth > 2 ? pick(4) : pick(8)) {
        case 0: atom = "a"; break;
        case 1: atom = "b"; break;
        case 2: atom = "[ab]"; break;
        case 3: atom = "."; break;
        case 4: atom = "(" + gen(depth + 1) + "|" + gen(depth + 1) + ")"; break;
        case 5: atom = "(?:" + gen(depth + 1) + ")"; break;
        case 6: atom = pick(2) ? "^" : "$"; break;
        default: atom = pick(2) ? "\\n" : "\\b"; break;
      }
      const bool assertion = atom == "^" || atom == "$" || atom == "\\b";
      if (!assertion) {
        static const char* q[] = {"", "", "*", "+", "?", "{2}", "{1,3}", "{2,}"};
        atom += q[pick(8)];
        if (atom.back() != ')' && atom.back() != 'a' && atom.back() != 'b' && atom.back() != ']' && atom.back() != '.' &&
            atom.back() != 'n' && pick(2))
          atom += "?";
      }
      out += atom;
    }
    return out;
  };
  const uint32_t option_sets[] = {0, PCRE2_MULTILINE, PCRE2_DOTALL, PCRE2_CASELESS, PCRE2_UNGREEDY, PCRE2_ANCHORED,
                                  PCRE2_DOLLAR_ENDONLY, PCRE2_MULTILINE | PCRE2_DOTALL};
  int compiled = 0, refused = 0, matches = 0;
  for (int round = 0; round < 1500 && !::testing::Test::HasFailure(); ++round) {
    const std::string re = gen(0);
    const uint32_t opts = option_sets[pick(8)];
    RegexTables t;
    std::string why;
    const int p = t.add(re, opts, why);
    Pcre pc(re, opts);
    if (!pc.code) {
      EXPECT_EQ(p, -1) << re << " compiles here but not in PCRE2";
      continue;
    }
    if (p < 0) {
      ++refused;
      continue;
    }
    ++compiled;
    InPlace mem;
    const RegexView v = t.place(mem);
    for (int s = 0; s < 6; ++s) {
      std::string subject;
      const int len = pick(9);
      for (int k = 0; k < len; ++k) subject += "abAB\n"[pick(5)];
      matches += compare(v, p, pc, re, opts, subject);
    }
  }
  std::printf("random expressions: %d compiled, %d refused, %d matches compared\n", compiled, refused, matches);
  EXPECT_GT(compiled, 1000);
  EXPECT_GT(matches, 5000);
}

// Every pcre in ET Open (the rules the engine loads and the application-layer ones alike): the
// share that compiles, and the search against PCRE2 on subjects made of the expression's own bytes
// (so that some match) and of HTTP-like text.
TEST(Regex, EtOpenPcresAsPcre2) {
  const auto dir = test::shared_data_dir() / "rules" / "et-open";
  GASPP_REQUIRE_PATH(dir);
  const std::regex pcre_opt(R"re(pcre:\s*"((?:[^"\\]|\\.)*)")re");
  std::mt19937 rng(11);
  std::map<std::string, int> why_count;
  int total = 0, compiled = 0, matches = 0;
  std::set<std::string> seen;
  for (auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".rules") continue;
    std::ifstream in(e.path());
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] == '#') continue;
      for (auto it = std::sregex_iterator(line.begin(), line.end(), pcre_opt); it != std::sregex_iterator(); ++it) {
        const std::string value = (*it)[1];
        if (!seen.insert(value).second) continue;
        // The engine's own reading of the option: a one-option rule through the signature parser.
        Signature sig;
        RuleVars vars;
        if (!parse_signature("alert tcp any any -> any any (pcre:\"" + value + "\"; sid:1;)", vars, sig).empty()) continue;
        if (sig.ops.size() != 1 || sig.ops[0].type != SigOpType::pcre) continue;
        const std::string re = sig.ops[0].bytes;
        const uint32_t opts = sig.ops[0].pcre_options;
        ++total;
        RegexTables t;
        std::string why;
        const int p = t.add(re, opts, why);
        if (p < 0) {
          ++why_count[why.substr(0, why.find('\''))];
          continue;
        }
        ++compiled;
        Pcre pc(re, opts);
        ASSERT_NE(pc.code, nullptr) << re;
        InPlace mem;
        const RegexView v = t.place(mem);
        std::vector<std::string> subjects = {"GET /index.php?id=1 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: x\r\n\r\n"};
        for (int s = 0; s < 4; ++s) {
          std::string subject;
          const int pieces = 1 + int(rng() % 6);
          for (int k = 0; k < pieces; ++k) {
            // A run of the expression's bytes with the escapes' backslashes, plus filler.
            const size_t a = rng() % (re.size() + 1), n = rng() % 12;
            for (size_t j = a; j < a + n && j < re.size(); ++j)
              if (re[j] != '\\') subject += re[j];
            subject += "aZ09 /=.\r\n"[rng() % 10];
          }
          subjects.push_back(subject);
        }
        for (const std::string& s : subjects) matches += compare(v, p, pc, re, opts, s);
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
  std::printf("ET Open pcres: %d distinct, %d compiled for the device (%.1f%%), %d matches compared; not compiled:\n", total,
              compiled, total ? 100.0 * compiled / total : 0.0, matches);
  for (const auto& [w, n] : why_count) std::printf("  %5d  %s\n", n, w.c_str());
  EXPECT_GT(total, 1500);
  EXPECT_GT(compiled * 10, total * 8);  // most ET expressions are regular
}

}  // namespace
}  // namespace gaspp
