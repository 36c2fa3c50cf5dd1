// modules/detect/hs_cache.cpp — see hs_cache.hpp.
#include "modules/detect/hs_cache.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace gaspp {

namespace {

// FNV-1a, 64 bits, over everything the database depends on.
struct Fnv {
  uint64_t h = 1469598103934665603ull;
  void add(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  }
  void add(const std::string& s) {
    const uint64_t n = s.size();
    add(&n, sizeof n);
    add(s.data(), s.size());
  }
};

}  // namespace

std::string hs_cache_default_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/gaspp/hs";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/gaspp/hs";
  return "";
}

hs_database_t* hs_compile_lit_cached(const std::vector<std::string>& pats, const std::vector<unsigned>& flags,
                                     const std::vector<unsigned>& ids, const std::string& dir, HsCacheStats& st) {
  hs_platform_info_t plat{};
  hs_populate_platform(&plat);
  std::string path;
  if (!dir.empty()) {
    Fnv f;
    f.add(std::string(hs_version()));
    f.add(&plat, sizeof plat);
    for (size_t i = 0; i < pats.size(); ++i) {
      f.add(pats[i]);
      f.add(&flags[i], sizeof flags[i]);
      f.add(&ids[i], sizeof ids[i]);
    }
    char name[40];
    std::snprintf(name, sizeof name, "lit-%016llx.hsdb", (unsigned long long)f.h);
    path = dir + "/" + name;
    std::ifstream in(path, std::ios::binary);
    if (in) {
      std::stringstream ss;
      ss << in.rdbuf();
      const std::string bytes = ss.str();
      hs_database_t* db = nullptr;
      if (hs_deserialize_database(bytes.data(), bytes.size(), &db) == HS_SUCCESS) {
        ++st.hits;
        return db;
      }
    }
  }
  ++st.misses;
  std::vector<const char*> ptr;
  std::vector<size_t> lens;
  for (const std::string& p : pats) {
    ptr.push_back(p.data());
    lens.push_back(p.size());
  }
  hs_database_t* db = nullptr;
  hs_compile_error_t* err = nullptr;
  if (hs_compile_lit_multi(ptr.data(), flags.data(), ids.data(), lens.data(), unsigned(ptr.size()), HS_MODE_BLOCK, &plat,
                           &db, &err) != HS_SUCCESS) {
    const std::string why = err && err->message ? err->message : "unknown error";
    if (err) hs_free_compile_error(err);
    throw std::runtime_error(why);
  }
  if (path.empty()) return db;
  // Written to a temporary name and renamed, so that a reader never sees half a file.
  char* bytes = nullptr;
  size_t n = 0;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  bool ok = !ec && hs_serialize_database(db, &bytes, &n) == HS_SUCCESS;
  if (ok) {
    std::ofstream out(tmp, std::ios::binary);
    out.write(bytes, std::streamsize(n));
    out.close();
    ok = bool(out) && std::rename(tmp.c_str(), path.c_str()) == 0;
    if (!ok) std::remove(tmp.c_str());
  }
  std::free(bytes);
  if (!ok) ++st.write_errors;
  return db;
}

}  // namespace gaspp
