// modules/detect/hs_cache.hpp — Hyperscan literal databases, compiled once and kept on disk.
//
// Compiling the fast patterns of a large rule set (ET Open: the packet and stream literals, and
// the HTTP buffers') takes most of the rule set's load time, and every run of the same rules
// compiles the same databases. As Suricata's sgh-mpm-caching does, a compiled database is saved
// in a cache directory under a hash of what it was compiled from (patterns, flags, ids, mode,
// Hyperscan's version and this machine's platform) and loaded from there next time.
//
// Directory: the detect module's `mpm-cache` option; default $XDG_CACHE_HOME/gaspp/hs, else
// $HOME/.cache/gaspp/hs; `off` compiles every time. A file that does not load (truncated, another
// Hyperscan) is compiled again and replaced; a cache that cannot be written only costs the
// compile (counted: hs_cache_hits, hs_cache_misses, hs_cache_write_errors).
#pragma once
#include <hs/hs.h>

#include <cstdint>
#include <string>
#include <vector>

namespace gaspp {

struct HsCacheStats {
  uint64_t hits = 0, misses = 0, write_errors = 0;
};

// The default directory ("" when neither XDG_CACHE_HOME nor HOME is set: no cache).
std::string hs_cache_default_dir();

// hs_compile_lit_multi in block mode through the cache dir ("" : none). Throws std::runtime_error
// with Hyperscan's message when the patterns do not compile.
hs_database_t* hs_compile_lit_cached(const std::vector<std::string>& pats, const std::vector<unsigned>& flags,
                                     const std::vector<unsigned>& ids, const std::string& dir, HsCacheStats& st);

}  // namespace gaspp
