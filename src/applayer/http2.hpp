// applayer/http2.hpp — HTTP/2 (RFC 9113) over the two reassembled directions of a TCP connection
// that starts with the client's connection preface ("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", prior
// knowledge; Suricata's app_proto http2).
//
// Http2Conn reads each direction's frames (any split) and makes each stream a transaction, an
// HttpTx (http1.hpp) so that the HTTP buffers, files and EVE fields read it as Suricata's HTTP
// keywords read HTTP/2: method, path (:path, the URI), :authority (the host when there is no Host
// header), the regular header fields of each side, the request line "METHOD PATH HTTP/2" and the
// response line "HTTP/2 STATUS", the bodies from DATA frames (decoded per Content-Encoding as
// HTTP/1's, up to the same body limits), and the files of HTTP/1's rules (http1.hpp HttpTx::files).
// Header blocks (HEADERS, PUSH_PROMISE, CONTINUATION) are decompressed with nghttp2's HPACK
// decoder, one per direction, every block in order (a stream dropped still updates the table);
// SETTINGS_HEADER_TABLE_SIZE from one side sets the other side's decoder's limit (at most 64 KiB,
// Suricata's HTTP2_MAX_TABLESIZE). An informational response (1xx) is skipped; a later HEADERS on
// a stream whose headers came is a trailer (decoded, not kept). END_STREAM ends a side's message,
// RST_STREAM both.
//
// Anomalies (Suricata's HTTP2Event names, app-layer-event:http2.NAME and EVE anomaly events) are
// raised on the stream's transaction, or, with no stream (stream 0, the preface), on the
// connection's last transaction: invalid_client_magic, invalid_frame_header (a frame other than
// SETTINGS, PING, GOAWAY or WINDOW_UPDATE on stream 0), data_stream_zero, long_frame_data (a frame
// of 64 KiB or more that has not all come: its first bytes are read, the rest skipped),
// invalid_header (HPACK could not decode a block: that direction stops), too_many_streams,
// invalid_frame_length (GOAWAY under 8 bytes, RST_STREAM or WINDOW_UPDATE not 4, PRIORITY not 5),
// stream_id_reuse (a frame other than RST_STREAM, WINDOW_UPDATE or PRIORITY on a stream whose
// transaction is complete), and of a header block: userinfo_in_uri (an `@` in :authority) and
// authority_host_mismatch (:authority and host differ, any case). Suricata raises a frame's
// anomalies on the connection's last transaction, a header block's on its stream's; so does gaspp.
// too_many_frames: past Suricata's max-frames (65,536) frames on a transaction side (gaspp keeps
// 256 of them, kHttp2MaxFrames, and counts the rest). Not raised: the DNS-over-HTTP/2,
// decompression and range events.
//
// Limits: at most HttpLimits::max_txs unfinished streams (more: the oldest is dropped,
// txs_dropped); a header block of at most 256 KiB across its CONTINUATION frames (more: the block
// is dropped, invalid_header, and the direction stops, as its decoder's table is then unknown).
// A gap stops the direction (http_gaps).
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "applayer/http1.hpp"

struct nghttp2_hd_inflater;

namespace gaspp {

#define GASPP_HTTP2_EVENTS(X)                         \
  X(InvalidFrameHeader, "invalid_frame_header")        \
  X(InvalidClientMagic, "invalid_client_magic")        \
  X(InvalidHeader, "invalid_header")                   \
  X(LongFrameData, "long_frame_data")                  \
  X(TooManyStreams, "too_many_streams")                \
  X(DataStreamZero, "data_stream_zero")                \
  X(InvalidFrameLength, "invalid_frame_length")        \
  X(StreamIdReuse, "stream_id_reuse")                  \
  X(AuthorityHostMismatch, "authority_host_mismatch")  \
  X(UserinfoInUri, "userinfo_in_uri")                  \
  X(TooManyFrames, "too_many_frames")

enum class Http2EventId : uint8_t {
#define GASPP_HTTP2_EVENT_ID(id, name) id,
  GASPP_HTTP2_EVENTS(GASPP_HTTP2_EVENT_ID)
#undef GASPP_HTTP2_EVENT_ID
  kCount
};
enum Http2Event : uint32_t {
#define GASPP_HTTP2_EVENT_BIT(id, name) kHttp2Ev##id = uint32_t(1) << unsigned(Http2EventId::id),
  GASPP_HTTP2_EVENTS(GASPP_HTTP2_EVENT_BIT)
#undef GASPP_HTTP2_EVENT_BIT
};
// The bit of Suricata's HTTP/2 event NAME (without "http2."); 0 for the events not raised here.
uint32_t http2_event_bit(const std::string& name);
// The name of each bit set in `events`, in bit order.
std::vector<const char*> http2_event_names(uint32_t events);

// Frames kept a transaction side (HttpTx::h2_frames).
constexpr size_t kHttp2MaxFrames = 256;
// Suricata's app-layer.protocols.http2.max-frames default: more on a transaction side is too_many_frames.
constexpr uint32_t kHttp2TooManyFrames = 65536;

struct Http2Stats {
  uint64_t frames = 0, streams = 0, hpack_errors = 0, long_frames = 0, gaps = 0, txs_dropped = 0, bad_preface = 0;
  uint64_t frames_not_kept = 0;  // past kHttp2MaxFrames on a transaction side
};

// Suricata's names of the frame types (DATA .. CONTINUATION, 0..9) and error codes (NO_ERROR ..
// HTTP_1_1_REQUIRED, 0..13): nullptr for another value.
const char* http2_frame_type_name(uint32_t t);
const char* http2_error_name(uint32_t e);
// The SETTINGS parameter ids by Suricata's names (SETTINGS_HEADER_TABLE_SIZE .. 1..6,
// SETTINGS_ENABLE_CONNECT_PROTOCOL 8, SETTINGS_NO_RFC7540_PRIORITIES 9); nullptr for another id.
const char* http2_settings_name(uint32_t id);

class Http2Conn {
 public:
  Http2Conn(const HttpLimits& lim, HttpStats& http_stats, Http2Stats& stats);
  ~Http2Conn();
  Http2Conn(const Http2Conn&) = delete;
  Http2Conn& operator=(const Http2Conn&) = delete;
  // In-order bytes of direction dir (0 client → server); gap: bytes were lost before them.
  void feed(int dir, const uint8_t* p, size_t n, bool gap = false);
  // The direction ended: its open messages end (truncated files).
  void end(int dir);
  // An upgrade from HTTP/1 (Upgrade: h2c): stream 1 is the upgraded request's, its request side
  // copied from HTTP/1's transaction (Suricata's HTTP2MimicHttp1Request), its response to come.
  void adopt_upgrade(const HttpTx& h1);
  const std::vector<HttpTx*>& touched() const { return touched_; }
  void clear_touched() { touched_.clear(); }
  void release_done();
  const std::deque<std::unique_ptr<HttpTx>>& txs() const { return txs_; }

 private:
  struct Dir {
    std::string buf;          // bytes not yet parsed (at most one frame)
    bool preface = false;     // the client's preface was read (the server has none)
    bool lost = false;
    uint64_t skip = 0;        // bytes of a long frame still to skip
    std::string block;        // a header block gathered from HEADERS / PUSH_PROMISE and CONTINUATION
    uint32_t block_stream = 0;
    bool block_end_stream = false, block_push = false, in_block = false;
    nghttp2_hd_inflater* hd = nullptr;
  };
  struct Stream {
    HttpTx* tx = nullptr;
    std::unique_ptr<HttpBodyDecoder> dec[2];
    bool done[2] = {false, false};
  };
  void frame(int dir, uint8_t type, uint8_t flags, uint32_t sid, const uint8_t* p, size_t n, bool complete);
  void header_block(int dir, uint32_t sid, bool end_stream, bool push);
  void data(int dir, uint32_t sid, const uint8_t* p, size_t n);
  void end_side(int dir, uint32_t sid, bool incomplete);
  Stream* stream(uint32_t sid, bool create);
  HttpTx* global_tx();  // a connection-level frame's transaction (stream 0)
  void record(HttpTx* t, int dir, const HttpTx::H2Frame& f);
  void note_frame(int dir, uint8_t type, uint8_t flags, uint32_t sid, const uint8_t* p, size_t n);
  void event(uint32_t sid, uint32_t ev);
  void touch(HttpTx* t);
  void lose(int dir);

  HttpLimits lim_;
  HttpStats& hstats_;
  Http2Stats& st_;
  Dir d_[2];
  std::unordered_map<uint32_t, Stream> streams_;
  std::deque<std::unique_ptr<HttpTx>> txs_;
  std::vector<HttpTx*> touched_;
  uint64_t next_id_ = 0;
};

}  // namespace gaspp
