// applayer/app_tx.hpp — what every application-layer transaction carries for its consumers.
//
// A parser's transaction (HttpTx, TlsTx) derives from AppTx: its number within the connection,
// and what the modules that inspect it keep per transaction — the detection engine's matched
// signatures and prefilter scans (Suricata keeps its detect state in the transaction too), and
// whether an output logged it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace gaspp {

struct AppTx {
  uint64_t id = 0;  // 0, 1, ... per connection
  std::unordered_set<uint32_t> matched;  // signatures that matched this transaction (sig << 1 | direction)
  // File signatures (the file keywords) match once per file: (sig << 33 | direction << 32 | the
  // file's index in its side's list), Suricata's MATCH_MORE_FILES.
  std::unordered_set<uint64_t> matched_files;
  struct Scan {
    size_t size = ~size_t(0);
    bool append_only = false;  // when scanned, the buffer could only grow by appending
    std::vector<uint32_t> hits;
  };
  std::unordered_map<uint32_t, Scan> scans;  // per buffer: the size last scanned and the hits then
  // A body's prefilter hits per buffer, with where each signature's last one ended (bodies are
  // inspected in windows: modules/detect/body_window.hpp), and how much of each direction's body
  // was inspected.
  struct WindowScan {
    size_t size = 0;  // scanned up to here
    std::vector<std::pair<uint32_t, uint64_t>> hits;  // (signature, where its last hit ended)
  };
  std::unordered_map<uint16_t, WindowScan> window_scans;
  uint64_t body_inspected[2] = {0, 0};
  // Buffers built from the transaction that only grow once built (an HTTP message once its
  // headers are done: start line, headers, then the body as it comes), kept between updates so
  // that each update appends what is new instead of copying the whole again; and the buffers of
  // a finished request, which later (response) updates read again.
  struct Built {
    std::string bytes;
    size_t tail = 0;      // how much of the growing part (the body) bytes holds
    bool stable = false;  // the part before it is final
    bool present = true;  // a final buffer the transaction does not have
  };
  std::unordered_map<uint16_t, Built> built;
  // A multi-buffer's instances before this one are final and were inspected so (a mail's closed
  // files): later updates start after them.
  size_t instances_final = 0;
  bool logged = false;  // an output wrote its event
};

}  // namespace gaspp
