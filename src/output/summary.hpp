// output/summary.hpp — the end-of-run summary, as text (stdout) and as JSON (--stats-json).
//
// Both show the same numbers: packets and bytes, packets per link / L3 / L4 protocol, malformed
// packets by reason, packet outcomes (passed, dropped), capture issues, batches and transfers,
// elapsed time, packets/s and Gbit/s (wire bytes). The JSON keys are stable; docs/usage.md lists them.
#pragma once
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "pipeline/pipeline.hpp"

namespace gaspp {

void print_summary(std::FILE* out, const RunReport& r);
// The --stats-json document (keys in a fixed order); write it with json_text().
nlohmann::ordered_json summary_json(const RunReport& r);
// A JSON document as one line of text. Strings that are not valid UTF-8 (a capture's path, a
// message quoting a file) get U+FFFD for each bad byte instead of failing the write.
std::string json_text(const nlohmann::ordered_json& j);

}  // namespace gaspp
