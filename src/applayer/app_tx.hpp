// applayer/app_tx.hpp — what every application-layer transaction carries for its consumers.
//
// A parser's transaction (HttpTx, TlsTx) derives from AppTx: its number within the connection,
// and what the modules that inspect it keep per transaction — the detection engine's matched
// signatures and prefilter scans (Suricata keeps its detect state in the transaction too), and
// whether an output logged it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace gaspp {

struct AppTx {
  uint64_t id = 0;  // 0, 1, ... per connection
  std::unordered_set<uint32_t> matched;  // signatures that matched this transaction
  struct Scan {
    size_t size = ~size_t(0);
    std::vector<uint32_t> hits;
  };
  std::unordered_map<uint16_t, Scan> scans;  // per buffer: the size last scanned and the hits then
  bool logged = false;  // an output wrote its event
};

}  // namespace gaspp
