// output/decode_rows.hpp — one text row per decoded packet (`gaspp -r FILE --decode-out PATH`).
//
// Tab-separated, in capture order, preceded by a `#`-comment header naming the columns. Used to
// compare our decoder with tshark and the CPU backend with the CUDA backend: two runs that decode
// alike write identical files. Absent values print as `-`.
#pragma once
#include <cstdio>
#include <string>

#include "decode/decoder.hpp"

namespace gaspp {

const char* decode_rows_header();
void format_decode_row(uint64_t frame_number, const DecodedPacket& p, std::string& out);
std::string format_address(const uint32_t* words, bool v6);

}  // namespace gaspp
