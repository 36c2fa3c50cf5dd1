// applayer/http1.hpp — HTTP/1.0 and 1.1 over the two reassembled directions of a TCP connection.
//
// Http1Conn takes each direction's in-order data as reassembly delivers it (any split, any number
// of pieces) and builds transactions: a request (line, headers, body) paired with the response
// that answers it (line, headers, body), in order, pipelining included. Bodies are framed as
// RFC 9112 says, with libhtp's leniency where evasions probe it (applayer/http1.cpp says where):
// Transfer-Encoding containing `chunked` wins over Content-Length; a response without either runs
// until the connection closes; HEAD, 1xx, 204 and 304 responses have none; `100 Continue` is an
// interim response. Response bodies are dechunked and decoded (http_body.hpp). A direction that
// loses data (a gap) or is not HTTP stops being parsed (counted).
//
// Limits (HttpLimits, Suricata's names and defaults): a line or header block longer than
// header_limit stops the direction (counted: lines_too_long); request and response bodies keep
// their first request_body_limit / response_body_limit bytes after decoding (counted:
// bodies_truncated); at most max_txs transactions of a connection are kept unfinished (more:
// the oldest are dropped, counted: txs_dropped).
//
// Example:
//   Http1Conn c(limits, stats);
//   c.feed(0, data, n, packet);                // client → server bytes
//   for (HttpTx* t : c.touched()) ...          // transactions this feed changed
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "applayer/app_tx.hpp"
#include "applayer/http_body.hpp"

namespace gaspp {

struct HttpLimits {
  uint32_t request_body_limit = 100 * 1024;   // Suricata's request-body-limit default
  uint32_t response_body_limit = 100 * 1024;  // response-body-limit
  uint32_t header_limit = 18000;              // libhtp's field limit: a line, a header block
  uint32_t decompress_layer_limit = 2;        // response-body-decompress-layer-limit
  bool lzma_enabled = false;                  // lzma-enabled: lzma bodies decoded (else inspected as sent)
  uint64_t lzma_memlimit = 1u << 20;          // lzma-memlimit
  uint32_t max_txs = 512;                     // unfinished transactions kept per connection
};

struct HttpStats {
  uint64_t txs = 0, requests = 0, responses = 0;
  uint64_t gaps = 0;              // a direction stopped at missing data
  uint64_t not_http = 0;          // a direction whose data is not HTTP
  uint64_t lines_too_long = 0;    // a line or header block past header_limit
  uint64_t bodies_truncated = 0;  // a body past its limit (the rest is not kept)
  uint64_t decode_failures = 0;   // a Content-Encoding that did not decode (passed through)
  uint64_t txs_dropped = 0;       // past max_txs
};

struct HttpHeader {
  std::string name, value;
};

// Request anomalies that libhtp flags on a transaction's headers (process_request_headers) and
// Suricata raises as app-layer events (`app-layer-event:http.NAME`), one bit each.
enum HttpEvent : uint32_t {
  kHttpEvInvalidTeRequest = 1,  // invalid_transfer_encoding_value_in_request: T-E without "chunked", or chunked below HTTP/1.1
  kHttpEvInvalidClRequest = 2,  // invalid_content_length_field_in_request: no T-E, and a C-L with no number
  kHttpEvMissingHost = 4,       // missing_host_header: HTTP/1.1 or later without a Host header
};
// The bit of Suricata's HTTP event NAME (without "http."); 0 for the events not raised here.
uint32_t http_event_bit(const std::string& name);

// One transaction. Buffers hold what the detection buffers of the same names are (Suricata's).
struct HttpTx : AppTx {
  uint32_t events = 0;           // HttpEvent bits, set when the request headers are done
  // Request
  std::string request_line, method, uri_raw, protocol;
  std::vector<HttpHeader> req_headers;
  std::string req_headers_raw;   // the header lines as received (CRLF-terminated), no request line
  std::string request_body;      // dechunked, first request_body_limit bytes
  bool req_line = false, req_headers_done = false, req_done = false;
  // Response
  std::string response_line, resp_protocol, stat_code, stat_msg;
  std::vector<HttpHeader> resp_headers;
  std::string resp_headers_raw;
  std::string response_body;     // dechunked, decoded, first response_body_limit bytes
  bool resp_line = false, resp_headers_done = false, resp_done = false;
  uint64_t request_body_len = 0, response_body_len = 0;  // as framed on the wire
  // Header values by name (case-insensitive; repeated headers joined with ", "), "" when absent.
  std::string req_header(const char* name) const;
  std::string resp_header(const char* name) const;
  bool has_req_header(const char* name) const;
  // Side 0 (request) or 1 (response): appends the joined value to out; false when absent.
  bool header(int side, const char* name, std::string& out) const;
  // The hostname as libhtp normalizes it (Suricata's http.host and EVE `hostname`): from an
  // absolute URI (user info dropped), else the Host header; lowercase, trailing dots dropped, the
  // port apart (*port: the port when one is given and valid, else -1). "" when there is none.
  std::string hostname(int* port = nullptr) const;
};

class Http1Conn {
 public:
  Http1Conn(const HttpLimits& lim, HttpStats& stats) : lim_(lim), stats_(stats) {}
  // In-order bytes of direction dir (0 client → server, 1 server → client); gap: bytes were lost
  // before them.
  void feed(int dir, const uint8_t* p, size_t n, bool gap = false);
  // The direction ended (FIN, RST, or the flow's end): a response body running to the close ends.
  void end(int dir);
  // The transactions the feeds and ends since the last clear_touched() changed, in order.
  const std::vector<HttpTx*>& touched() const { return touched_; }
  void clear_touched() { touched_.clear(); }
  // Drops the finished transactions (both sides done) that are not touched: their memory goes.
  void release_done();
  const std::deque<std::unique_ptr<HttpTx>>& txs() const { return txs_; }

 private:
  enum Phase : uint8_t { kIdle, kLine, kHeaders, kBodyLen, kChunkSize, kChunkData, kChunkEnd, kTrailer, kBodyClose, kLost };
  struct Dir {
    Phase phase = kIdle;
    std::string line;        // the line being gathered
    uint64_t remain = 0;     // body or chunk bytes left
    HttpTx* tx = nullptr;    // the message being parsed
    std::unique_ptr<HttpBodyDecoder> dec;
    bool hit_limit = false;
  };
  void touch(HttpTx* t);
  HttpTx* new_tx();
  HttpTx* tx_for_response();
  void on_line(int dir, std::string& line);
  void begin_request(const std::string& line);
  void end_headers(int dir);
  void body(int dir, const uint8_t* p, size_t n);
  void finish_message(int dir);
  void lose(int dir, uint64_t& counter);
  // The response side's line and header phases, libhtp's way, over the buffered bytes d_[1].line:
  // returns the bytes it used; 0 when it needs more (eof: none will come).
  size_t response_head(bool eof);
  void response_headers_done(size_t used);
  void drain_response(bool eof);
  HttpLimits lim_;
  HttpStats& stats_;
  Dir d_[2];
  std::deque<std::unique_ptr<HttpTx>> txs_;
  uint64_t next_id_ = 0;
  size_t answered_ = 0;  // txs_[answered_] is the oldest request without a finished response
  std::vector<HttpTx*> touched_;
  HttpTx* last_resp_ = nullptr;  // the last finished response: lines after its body still belong to it
};

}  // namespace gaspp
