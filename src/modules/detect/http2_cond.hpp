// modules/detect/http2_cond.hpp — the http2.* frame keywords (Http2Cond, signature.hpp): their
// values parsed as Suricata's (rust/src/http2/detect.rs, detect/uint.rs), and matched on a side of
// an HTTP/2 transaction's frames (applayer/http1.hpp HttpTx::h2_frames).
//
//   http2.frametype:HEADERS;            any frame of the side is a HEADERS (names or numbers)
//   http2.errorcode:!NO_ERROR;          a GOAWAY or RST_STREAM whose code is not NO_ERROR
//   http2.window:>36000,nb>1;           more than one WINDOW_UPDATE above 36000
//   http2.window:32768,all;             every WINDOW_UPDATE is 32768 (decided when the side ends)
//   http2.priority:>250;                http2.settings:SETTINGS_HEADER_TABLE_SIZE>1000;
//   http2.size_update:>4096;
#pragma once
#include <string>
#include <vector>

#include "applayer/http1.hpp"
#include "modules/detect/signature.hpp"

namespace gaspp {

// Keyword k (http2.frametype, ...) with value v: "" or why it is not one.
std::string parse_http2_cond(const std::string& k, const std::string& v, Http2Cond& out);

// Whether c holds on one side's frames; `complete`: that side of the transaction has ended.
bool http2_cond_holds(const Http2Cond& c, const std::vector<HttpTx::H2Frame>& frames, bool complete);

}  // namespace gaspp
