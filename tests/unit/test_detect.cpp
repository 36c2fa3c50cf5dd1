// Signatures (modules/detect): the parser on the real rule sets, the inspection engine against a
// brute-force reference, and the detect module end to end.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "modules/detect/signature.hpp"
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
    EXPECT_EQ(one.sigs.size() + one.skipped() + one.errors.size(), read) << f;  // every rule has an outcome
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

TEST(Signatures, EverySnortCommunityRuleLoadsOrIsSkippedByReason) {
  const auto dir = test::shared_data_dir() / "rules" / "snort-community";
  GASPP_REQUIRE_PATH(dir);
  const LoadTotals t = load_dir(dir);
  EXPECT_GT(t.loaded, 0u);
}

}  // namespace
}  // namespace gaspp
