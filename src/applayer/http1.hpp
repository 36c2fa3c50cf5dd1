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
#include "applayer/mime.hpp"

namespace gaspp {

struct HttpLimits {
  uint32_t request_body_limit = 100 * 1024;   // Suricata's request-body-limit default
  uint32_t response_body_limit = 100 * 1024;  // response-body-limit
  uint32_t header_limit = 18000;              // libhtp's field limit: a line, a header block
  uint32_t decompress_layer_limit = 2;        // response-body-decompress-layer-limit
  bool lzma_enabled = false;                  // lzma-enabled: lzma bodies decoded (else inspected as sent)
  uint64_t lzma_memlimit = 1u << 20;          // lzma-memlimit
  uint32_t max_txs = 512;                     // unfinished transactions kept per connection
  // How the detection engine inspects bodies (Suricata's body inspection windows, read by
  // detection from the parser's configuration as Suricata's htp cfg is): a body is inspected once
  // it has request-body-minimal-inspect-size / response-body-minimal-inspect-size bytes, is
  // complete, or reached its limit; after that each update inspects its new bytes with some of
  // the old before them (up to the inspect window). The defaults are suricata.yaml's.
  uint32_t request_inspect_min = 32 * 1024, request_inspect_window = 4 * 1024;
  uint32_t response_inspect_min = 40 * 1024, response_inspect_window = 16 * 1024;
  // http-body-inline: bodies inspected at every update from their first bytes, without waiting
  // for the minimal size (Suricata's inline mode; `auto` is on with --inline).
  bool body_inline = false;
  uint8_t file_hashes = 0;  // FileHash bits (mime.hpp): the hashes of each file (force-hash, file keywords)
  // The body limit of a message whose file a filestore signature matched (HttpTx::file_depth_set):
  // Suricata's file reassembly depth, its stream reassembly depth by default (1 MiB).
  uint32_t file_store_depth = 1u << 20;
};

struct HttpStats {
  uint64_t txs = 0, requests = 0, responses = 0;
  uint64_t gaps = 0;              // a direction stopped at missing data
  uint64_t not_http = 0;          // a direction whose data is not HTTP
  uint64_t lines_too_long = 0;    // a line or header block past header_limit
  uint64_t bodies_truncated = 0;  // a body past its limit (the rest is not kept)
  uint64_t decode_failures = 0;   // a Content-Encoding that did not decode (passed through)
  uint64_t txs_dropped = 0;       // past max_txs
  uint64_t files = 0;             // body files opened (a response's, a PUT's)
  uint64_t files_truncated = 0;   // body files cut by their body limit or by the stream's end
  MimeStats form;                 // multipart/form-data request bodies: their parts' files
};

struct HttpHeader {
  std::string name, value;
};

// The anomalies Suricata raises as HTTP app-layer events (`app-layer-event:http.NAME`, and EVE
// `anomaly` events of type applayer): what libhtp logs while parsing a message (its HtpLogCode)
// and flags on a request's headers (HTPErrorCheckTxRequestFlags), each set on the transaction
// whose message was being parsed, one bit each. Names as Suricata's http_decoder_event_table,
// lowercase. Where gaspp's parsing differs from libhtp's (applayer/http1.cpp says where), an event
// follows gaspp's reading of the message.
// libhtp's number_headers_limit (its default): a message with more header names than this
// raises request_too_many_headers / response_too_many_headers (libhtp then stops the message;
// gaspp reads on, its own header-size limits bounding it).
inline constexpr size_t kHttpHeadersLimit = 1024;

#define GASPP_HTTP_EVENTS(X)                                                        \
  X(InvalidTeRequest, "invalid_transfer_encoding_value_in_request")                 \
  X(InvalidClRequest, "invalid_content_length_field_in_request")                    \
  X(MissingHost, "missing_host_header")                                             \
  X(HostAmbiguous, "host_header_ambiguous")                                         \
  X(UriHostInvalid, "request_uri_host_invalid")                                     \
  X(HeaderHostInvalid, "request_header_host_invalid")                               \
  X(AuthUnrecognized, "request_auth_unrecognized")                                  \
  X(DuplicateClRequest, "duplicate_content_length_field_in_request")                \
  X(DuplicateClResponse, "duplicate_content_length_field_in_response")              \
  X(RequestHeaderRepetition, "request_header_repetition")                           \
  X(ResponseHeaderRepetition, "response_header_repetition")                         \
  X(RequestFieldMissingColon, "request_field_missing_colon")                        \
  X(ResponseFieldMissingColon, "response_field_missing_colon")                      \
  X(RequestInvalidEmptyName, "request_invalid_empty_name")                          \
  X(ResponseInvalidEmptyName, "response_invalid_empty_name")                        \
  X(RequestInvalidLwsAfterName, "request_invalid_lws_after_name")                   \
  X(ResponseInvalidLwsAfterName, "response_invalid_lws_after_name")                 \
  X(RequestHeaderInvalid, "request_header_invalid")                                 \
  X(ResponseHeaderNameNotToken, "response_header_name_not_token")                   \
  X(InvalidRequestFieldFolding, "invalid_request_field_folding")                    \
  X(InvalidResponseFieldFolding, "invalid_response_field_folding")                  \
  X(RequestFieldTooLong, "request_field_too_long")                                  \
  X(ResponseFieldTooLong, "response_field_too_long")                                \
  X(RequestLineLeadingWhitespace, "request_line_leading_whitespace")                \
  X(MethodDelimNonCompliant, "method_delim_non_compliant")                          \
  X(UriDelimNonCompliant, "uri_delim_non_compliant")                                \
  X(RequestLineUnknownMethod, "request_line_unknown_method")                        \
  X(RequestLineUnknownMethodNoProtocol, "request_line_unknown_method_no_protocol")  \
  X(RequestLineUnknownMethodInvalidProtocol, "request_line_unknown_method_invalid_protocol") \
  X(RequestLineMissingProtocol, "request_line_missing_protocol")                    \
  X(RequestChunkExtension, "request_chunk_extension")                               \
  X(ResponseChunkExtension, "response_chunk_extension")                             \
  X(InvalidRequestChunkLen, "invalid_request_chunk_len")                            \
  X(InvalidResponseChunkLen, "invalid_response_chunk_len")                          \
  X(RequestBodyUnexpected, "request_body_unexpected")                               \
  X(ResponseBodyUnexpected, "response_body_unexpected")                             \
  X(InvalidClResponse, "invalid_content_length_field_in_response")                  \
  X(ResponseAbnormalTransferEncoding, "response_abnormal_transfer_encoding")        \
  X(ResponseChunkedOldProto, "response_chunked_old_proto")                          \
  X(ResponseMultipartByteranges, "response_multipart_byteranges")                   \
  X(SwitchingProtoWithContentLength, "switching_proto_with_content_length")         \
  X(ContinueAlreadySeen, "100_continue_already_seen")                               \
  X(ResponseLineInvalidProtocol, "response_line_invalid_protocol")                  \
  X(ResponseLineInvalidResponseStatus, "response_line_invalid_response_status")     \
  X(UnableToMatchResponse, "unable_to_match_response_to_request")                   \
  X(RequestTooManyHeaders, "request_too_many_headers")                              \
  X(ResponseTooManyHeaders, "response_too_many_headers")                            \
  X(AbnormalCeHeader, "abnormal_ce_header")                                         \
  X(TooManyEncodingLayers, "too_many_encoding_layers")                              \
  /* Names Suricata's HTTP parser never raises (neither libhtp nor app-layer-htp.c sets them): \
     their rules load and never match, as there. */                                          \
  X(UnknownError, "unknown_error")                                                  \
  X(GzipDecompressionFailed, "gzip_decompression_failed")                           \
  X(InvalidTeResponse, "invalid_transfer_encoding_value_in_response")               \
  X(InvalidServerPortInRequest, "invalid_server_port_in_request")                   \
  X(InvalidAuthorityPort, "invalid_authority_port")                                 \
  X(ResponseHeaderInvalid, "response_header_invalid")                               \
  X(MultipartGenericError, "multipart_generic_error")                               \
  X(RequestServerPortTcpPortMismatch, "request_server_port_tcp_port_mismatch")      \
  X(ResponseInvalidProtocol, "response_invalid_protocol")                           \
  X(ResponseInvalidStatus, "response_invalid_status")                               \
  X(RequestLineInvalid, "request_line_invalid")                                     \
  X(LzmaMemlimitReached, "lzma_memlimit_reached")

enum class HttpEventId : uint8_t {
#define GASPP_HTTP_EVENT_ID(id, name) id,
  GASPP_HTTP_EVENTS(GASPP_HTTP_EVENT_ID)
#undef GASPP_HTTP_EVENT_ID
  kCount
};
static_assert(size_t(HttpEventId::kCount) <= 64, "HTTP events are bits of a uint64_t");
enum HttpEvent : uint64_t {
#define GASPP_HTTP_EVENT_BIT(id, name) kHttpEv##id = uint64_t(1) << unsigned(HttpEventId::id),
  GASPP_HTTP_EVENTS(GASPP_HTTP_EVENT_BIT)
#undef GASPP_HTTP_EVENT_BIT
};
// The bit of Suricata's HTTP event NAME (without "http."); 0 for the events not raised here.
uint64_t http_event_bit(const std::string& name);
// The name of each bit set in `events`, in bit order.
std::vector<const char*> http_event_names(uint64_t events);

// One transaction. Buffers hold what the detection buffers of the same names are (Suricata's).
struct HttpTx : AppTx {
  uint64_t events = 0;           // HttpEvent bits, set as the messages are parsed
  uint64_t events_logged = 0;    // those the EVE anomaly log wrote
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
  bool seen_100continue = false;  // an interim 100 response came
  uint64_t request_body_len = 0, response_body_len = 0;  // as framed on the wire
  bool body_cut[2] = {false, false};  // a body (request, response) reached its limit: the rest is not kept
  const HttpLimits* limits = nullptr;  // the connection's configuration (set by the parser)
  // Files (Suricata's HTTP files): side 1 the response body, named by Content-Disposition's
  // filename, else the URI's path; side 0 a POST's or PUT's body (the URI's path), or the parts
  // of a multipart/form-data POST body that carry a file name (form->files(): each part's own
  // decoded bytes). A body file's bytes are its body buffer (decoded, up to the body limit: a
  // body the limit cut, or the stream ended inside, is a truncated file, as Suricata's body
  // limits cut its files; docs/app-layer.md "Files"); its hashes (HttpLimits::file_hashes) are
  // taken when it closes.
  std::vector<MimeFile> body_files[2];  // at most one each
  // A filestore signature matched the side's file: its body is kept up to file_store_depth
  // instead of its body limit, from the next bytes on (set by detection between updates).
  bool file_depth_set[2] = {false, false};
  std::unique_ptr<MimeDecoder> form;
  size_t form_fed = 0;  // request_body bytes handed to form
  const std::vector<MimeFile>& files(int side) const { return side == 0 && form ? form->files() : body_files[side]; }
  // HTTP/2 (http2.hpp): the stream's transaction; its :authority (the host without a Host
  // header) and anomalies (Http2Event bits; those the EVE anomaly log wrote).
  bool http2 = false;
  uint32_t stream_id = 0;
  std::string authority;
  std::vector<HttpHeader> h2_fields[2];  // each side's header block as decoded (pseudo-fields too), for EVE
  uint32_t h2_events = 0, h2_events_logged = 0;
  // Each side's frames on the stream (Suricata's frames_ts / frames_tc, what the http2.* keywords
  // and the EVE http2 request / response objects read), at most kHttp2MaxFrames a side (more are
  // counted, http2_frames_not_kept). A connection-level frame (stream 0: SETTINGS, PING, GOAWAY,
  // WINDOW_UPDATE) is a transaction of its own, stream_id 0, with that one frame (h2_global).
  struct H2Frame {
    uint8_t type = 0, flags = 0;
    int16_t priority = -1;     // PRIORITY's weight, or HEADERS' with the PRIORITY flag; -1: none
    int64_t error = -1;        // GOAWAY's or RST_STREAM's error code; -1: none
    int64_t window = -1;       // WINDOW_UPDATE's size increment; -1: none
    int64_t size_update = -1;  // a header block's dynamic table size update (HPACK), the last; -1: none
    std::vector<std::pair<uint16_t, uint32_t>> settings;  // SETTINGS' (id, value) pairs
  };
  std::vector<H2Frame> h2_frames[2];
  uint32_t h2_frames_seen[2] = {0, 0};  // every frame of the side, kept or not (too_many_frames)
  bool h2_global = false;
  // Whether Suricata's HTTP/2 logger writes an event for it: header fields, or a side's SETTINGS,
  // error code or priority (a PING's or a WINDOW_UPDATE's transaction has none).
  bool h2_loggable() const {
    for (int s = 0; s < 2; ++s) {
      if (!h2_fields[s].empty()) return true;
      for (const H2Frame& f : h2_frames[s])
        if (!f.settings.empty() || f.error >= 0 || (f.priority >= 0 && s == 0)) return true;
    }
    return false;
  }
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

// Appends a message's body bytes (through its decoder, if any) to the side's body, up to limit;
// a body the limit cuts is body_cut, counted once in bodies_truncated (counted: already counted).
// Both HTTP versions' parsers call it. True when the body grew.
bool append_http_body(HttpTx& t, int dir, const uint8_t* p, size_t n, size_t limit, HttpBodyDecoder* dec,
                      bool& counted, HttpStats& st);

// A message's files after its body grew (HttpTx::files): opened with the body's first byte, a
// form's parts handed to its MIME decoder; done: the message ended (incomplete: inside its body),
// closed (hashes taken) or truncated. Both HTTP versions' parsers call it.
void update_http_files(HttpTx& t, int dir, bool done, bool incomplete, const HttpLimits& lim, HttpStats& st);

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
  // An upgrade to HTTP/2 (a 101 response to a request with Upgrade: h2c, both naming h2c): the
  // upgraded request's transaction. A CONNECT tunnel (a 2xx response to CONNECT): the CONNECT's
  // transaction; what follows is the tunneled protocol's. Either way HTTP/1 parsing has stopped,
  // and take_rest() gives the server's bytes after that response (taken once; later server bytes
  // given to feed() are kept for the taker too).
  const HttpTx* h2c_upgrade() const { return upgrade_tx_; }
  const HttpTx* connect_tunnel() const { return connect_tx_; }
  std::string take_rest() { return std::move(rest_); }

 private:
  enum Phase : uint8_t { kIdle, kLine, kHeaders, kBodyLen, kChunkSize, kChunkData, kChunkEnd, kTrailer, kBodyClose, kLost };
  struct Dir {
    Phase phase = kIdle;
    std::string line;        // the line being gathered
    uint64_t remain = 0;     // body or chunk bytes left
    HttpTx* tx = nullptr;    // the message being parsed
    std::unique_ptr<HttpBodyDecoder> dec;
    bool hit_limit = false;
    std::vector<std::string> names;  // the request headers' names as libhtp reads them (repetitions)
    size_t distinct_names = 0;       // of them, those not repeated
    bool maybe_09 = false;           // a request line without a protocol was just read
  };
  void touch(HttpTx* t);
  HttpTx* new_tx();
  HttpTx* tx_for_response();
  void on_line(int dir, std::string& line);
  void begin_request(const std::string& line);
  void end_headers(int dir);
  void body(int dir, const uint8_t* p, size_t n);
  void finish_message(int dir, bool incomplete = false);
  void lose(int dir, uint64_t& counter);
  void too_long(int dir);
  void request_host_events(HttpTx& t);
  // libhtp's request_finalize: a line after a finished request that starts with no method it
  // knows (or is only whitespace) is more of that request's body. True when it took the line.
  bool unexpected_body(const std::string& line, const std::string& raw);
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
  HttpTx* last_req_ = nullptr;   // the last finished request, until the next one starts
  const HttpTx* upgrade_tx_ = nullptr;  // h2c_upgrade()
  const HttpTx* connect_tx_ = nullptr;  // connect_tunnel()
  std::string rest_;
};

}  // namespace gaspp
