// output/summary.hpp — the end-of-run summary, as text (stdout) and as JSON (--stats-json).
//
// Both show the same numbers: packets and bytes, packets per link / L3 / L4 protocol, malformed
// packets by reason, packet outcomes (passed, dropped), capture issues, batches and transfers,
// elapsed time, packets/s and Gbit/s (wire bytes). The JSON keys are stable; docs/output.md lists them.
#pragma once
#include <cstdio>
#include <string>

#include "core/pipeline.hpp"

namespace gaspp {

void print_summary(std::FILE* out, const RunReport& r);
std::string summary_json(const RunReport& r);

}  // namespace gaspp
