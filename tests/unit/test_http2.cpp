// The HTTP/2 parser (applayer/http2.hpp): connections whose header blocks nghttp2's HPACK encoder
// wrote (the oracle for the decoding: what went in must come out), with CONTINUATION frames,
// padding, a 100 response, trailers, a gzip body (zlib), a pushed stream and a reset one; the
// transactions must be the same at every split of either direction; and an upgrade from HTTP/1
// through the application layer.
#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>
#include <zlib.h>

#include <string>
#include <vector>

#include "applayer/app_layer.hpp"
#include "applayer/http2.hpp"
#include "modules/detect/http2_cond.hpp"
#include "test_support.hpp"

namespace gaspp {
namespace {

using Fields = std::vector<std::pair<std::string, std::string>>;

// A header block as nghttp2's encoder writes it (one encoder per direction: its dynamic table
// carries over between blocks, as the decoder's must).
std::string hpack(nghttp2_hd_deflater* enc, const Fields& f) {
  std::vector<nghttp2_nv> nv;
  for (const auto& [n, v] : f)
    nv.push_back({(uint8_t*)n.data(), (uint8_t*)v.data(), n.size(), v.size(), NGHTTP2_NV_FLAG_NONE});
  std::string out(nghttp2_hd_deflate_bound(enc, nv.data(), nv.size()), '\0');
  const ssize_t n = nghttp2_hd_deflate_hd(enc, (uint8_t*)out.data(), out.size(), nv.data(), nv.size());
  out.resize(n > 0 ? size_t(n) : 0);
  return out;
}

std::string frame(uint8_t type, uint8_t flags, uint32_t sid, const std::string& payload) {
  std::string h(9, '\0');
  h[0] = char(payload.size() >> 16), h[1] = char(payload.size() >> 8), h[2] = char(payload.size());
  h[3] = char(type), h[4] = char(flags);
  h[5] = char(sid >> 24), h[6] = char(sid >> 16), h[7] = char(sid >> 8), h[8] = char(sid);
  return h + payload;
}

std::string gzip_of(const std::string& in) {
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, in.size()) + 32, '\0');
  z.next_in = (Bytef*)in.data();
  z.avail_in = uInt(in.size());
  z.next_out = (Bytef*)out.data();
  z.avail_out = uInt(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

struct Conn {
  std::string client, server;
};

// Client: preface, SETTINGS (header table 8192), a GET on stream 1 whose block goes on in a
// CONTINUATION, a padded POST with a body on stream 3, a GET on stream 5 reset by the client.
// Server: SETTINGS, 100 then 200 on stream 1 with a gzip body in two DATA frames and a trailer, a
// PUSH_PROMISE of stream 2 on stream 1, 404 on stream 3.
Conn connection(const std::string& body) {
  nghttp2_hd_deflater *ce, *se;
  nghttp2_hd_deflate_new(&ce, 4096);
  nghttp2_hd_deflate_new(&se, 4096);
  Conn c;
  c.client = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  c.client += frame(4, 0, 0, std::string("\x00\x01\x00\x00\x20\x00", 6));
  const std::string b1 = hpack(ce, {{":method", "GET"}, {":scheme", "http"}, {":path", "/dl/file.bin?x=1"},
                                    {":authority", "example.com:8080"}, {"user-agent", "t/1.0"}, {"accept", "*/*"}});
  c.client += frame(1, 0x1, 1, b1.substr(0, 5)) + frame(9, 0x4, 1, b1.substr(5));
  const std::string b3 = hpack(ce, {{":method", "POST"}, {":scheme", "http"}, {":path", "/up"}, {":authority", "example.com"},
                                    {"content-type", "text/plain"}});
  c.client += frame(1, 0x4 | 0x8, 3, std::string(1, '\x02') + b3 + std::string(2, '\0'));
  c.client += frame(0, 0x1 | 0x8, 3, std::string(1, '\x03') + "hello h2" + std::string(3, '\0'));
  const std::string b5 = hpack(ce, {{":method", "GET"}, {":scheme", "http"}, {":path", "/never"}, {":authority", "example.com"}});
  c.client += frame(1, 0x4 | 0x1, 5, b5);
  c.client += frame(3, 0, 5, std::string("\0\0\0\x08", 4));
  c.server = frame(4, 0, 0, "") + frame(4, 0x1, 0, "");
  c.server += frame(1, 0x4, 1, hpack(se, {{":status", "100"}}));
  c.server += frame(1, 0x4, 1, hpack(se, {{":status", "200"}, {"content-type", "application/octet-stream"},
                                            {"content-encoding", "gzip"}, {"server", "h2srv"}}));
  c.server += frame(5, 0x4, 1, std::string("\0\0\0\x02", 4) + hpack(se, {{":method", "GET"}, {":scheme", "http"},
                                                                         {":path", "/pushed.css"}, {":authority", "example.com"}}));
  const std::string gz = gzip_of(body);
  c.server += frame(0, 0, 1, gz.substr(0, gz.size() / 2)) + frame(0, 0, 1, gz.substr(gz.size() / 2));
  c.server += frame(1, 0x4 | 0x1, 1, hpack(se, {{"x-trailer", "t"}}));
  c.server += frame(1, 0x4 | 0x1, 3, hpack(se, {{":status", "404"}}));
  nghttp2_hd_deflate_del(ce);
  nghttp2_hd_deflate_del(se);
  return c;
}

std::string summary(const Http2Conn& c) {
  std::string s;
  for (const auto& t : c.txs()) {
    if (t->h2_global) continue;  // a connection-level frame's (FramesAsSuricataKeepsThem)
    s += "[" + std::to_string(t->stream_id) + "|" + t->request_line + "|" + t->hostname() + "|";
    for (const HttpHeader& h : t->req_headers) s += h.name + "=" + h.value + ";";
    s += "|" + t->request_body + "|" + t->response_line + "|";
    for (const HttpHeader& h : t->resp_headers) s += h.name + "=" + h.value + ";";
    s += "|" + t->response_body + "|" + (t->req_done ? "q" : "-") + (t->resp_done ? "r" : "-");
    for (const char* e : http2_event_names(t->h2_events)) s += std::string("|") + e;
    s += "]\n";
  }
  return s;
}

std::string run(const Conn& c, size_t cut_client, size_t cut_server) {
  HttpStats hs;
  Http2Stats st;
  Http2Conn conn(HttpLimits{}, hs, st);
  const auto feed = [&](int dir, const std::string& b, size_t cut) {
    const size_t k = cut && cut < b.size() ? cut : b.size();
    conn.feed(dir, (const uint8_t*)b.data(), k);
    if (k < b.size()) conn.feed(dir, (const uint8_t*)b.data() + k, b.size() - k);
  };
  // The client's frames first, then the server's: HPACK state is per direction, so the order of
  // the two directions does not change what is decoded.
  feed(0, c.client, cut_client);
  feed(1, c.server, cut_server);
  conn.end(0);
  conn.end(1);
  return summary(conn);
}

TEST(Http2, StreamsAsTransactionsAtEverySplit) {
  std::string body;
  for (int i = 0; i < 300; ++i) body += "h2 body line " + std::to_string(i) + "\n";
  const Conn c = connection(body);
  const std::string want =
      "[1|GET /dl/file.bin?x=1 HTTP/2|example.com|user-agent=t/1.0;accept=*/*;||HTTP/2 200\r\n|"
      "content-type=application/octet-stream;content-encoding=gzip;server=h2srv;|" + body + "|qr]\n"
      "[3|POST /up HTTP/2|example.com|content-type=text/plain;|hello h2|HTTP/2 404\r\n|||qr]\n"
      "[5|GET /never HTTP/2|example.com||||||qr]\n"
      "[2|GET /pushed.css HTTP/2|example.com||||||qr]\n";
  EXPECT_EQ(run(c, 0, 0), want);
  for (size_t k = 1; k < c.client.size(); ++k) ASSERT_EQ(run(c, k, 0), want) << "client split at " << k;
  for (size_t k = 1; k < c.server.size(); ++k) ASSERT_EQ(run(c, 0, k), want) << "server split at " << k;
}

// Each case raises its one anomaly (or none), Suricata's name for it.
TEST(Http2, AnomaliesAsSuricataNamesThem) {
  struct Case {
    const char* name;
    std::string client, server;
    std::string want_event;
  };
  const std::string preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  std::vector<Case> cases = {
      {"not the preface", "PRI * HTTP/1.1\r\n\r\nXX\r\n\r\n", "", "invalid_client_magic"},
      {"DATA on stream 0", preface + frame(0, 0, 0, "abc"), "", "data_stream_zero"},
      {"HEADERS on stream 0", preface + frame(1, 0x4, 0, std::string("\x82", 1)), "", "invalid_frame_header"},
      {"a header block HPACK cannot read", preface + frame(1, 0x4, 1, std::string("\xff\xff\xff\xff\xff", 5)), "",
       "invalid_header"},
      {"a long frame not all come", preface + frame(1, 0x5, 1, std::string("\x82\x86\x84\x41\x01\x61", 6)) +
                                        frame(0, 0, 1, std::string(70000, 'x')).substr(0, 9 + 1000),
       "", "long_frame_data"},
  };
  // Header blocks (each its own encoder, so that every block stands alone).
  const auto block = [](const Fields& f) {
    nghttp2_hd_deflater* enc;
    nghttp2_hd_deflate_new(&enc, 4096);
    const std::string b = hpack(enc, f);
    nghttp2_hd_deflate_del(enc);
    return b;
  };
  const Fields get = {{":method", "GET"}, {":scheme", "http"}, {":path", "/"}};
  const auto with = [&](Fields more) {
    Fields f = get;
    f.insert(f.end(), more.begin(), more.end());
    return f;
  };
  const std::string headers1 = frame(1, 0x4 | 0x1, 1, block(with({{":authority", "a.example"}})));
  const std::string status1 = frame(1, 0x4 | 0x1, 1, block({{":status", "200"}}));
  cases.push_back({"userinfo in :authority", preface + frame(1, 0x4 | 0x1, 1, block(with({{":authority", "u:p@a.example"}}))),
                   "", "userinfo_in_uri"});
  cases.push_back({":authority and host differ",
                   preface + frame(1, 0x4 | 0x1, 1, block(with({{":authority", "a.example"}, {"host", "b.example"}}))), "",
                   "authority_host_mismatch"});
  cases.push_back({":authority and host differ in case only",
                   preface + frame(1, 0x4 | 0x1, 1, block(with({{":authority", "A.example"}, {"host", "a.EXAMPLE"}}))), "",
                   ""});
  cases.push_back({"RST_STREAM of 5 bytes", preface + headers1 + frame(3, 0, 1, std::string(5, '\0')), "",
                   "invalid_frame_length"});
  cases.push_back({"PRIORITY of 4 bytes", preface + headers1 + frame(2, 0, 1, std::string(4, '\0')), "",
                   "invalid_frame_length"});
  cases.push_back({"GOAWAY of 7 bytes", preface + headers1 + frame(7, 0, 0, std::string(7, '\0')), "",
                   "invalid_frame_length"});
  cases.push_back({"WINDOW_UPDATE of 4 bytes", preface + headers1 + frame(8, 0, 1, std::string("\0\0\x10\0", 4)), "", ""});
  cases.push_back({"DATA on a finished stream", preface + headers1, status1 + frame(0, 0, 1, "late"), "stream_id_reuse"});
  {
    // Suricata's max-frames (65,536) a transaction side: the next one raises too_many_frames.
    std::string many = preface + frame(1, 0x4, 1, block(with({{":authority", "a.example"}})));
    for (uint32_t i = 1; i <= kHttp2TooManyFrames; ++i) many += frame(8, 0, 1, std::string("\0\0\x10\0", 4));
    cases.push_back({"65,537 frames on a stream", many, "", "too_many_frames"});
    many.resize(many.size() - 13);
    cases.push_back({"65,536 frames on a stream", many, "", ""});
  }
  cases.push_back({"WINDOW_UPDATE on a finished stream", preface + headers1,
                   status1 + frame(8, 0, 1, std::string("\0\0\x10\0", 4)), ""});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    HttpStats hs;
    Http2Stats st;
    Http2Conn conn(HttpLimits{}, hs, st);
    conn.feed(0, (const uint8_t*)c.client.data(), c.client.size());
    if (!c.server.empty()) conn.feed(1, (const uint8_t*)c.server.data(), c.server.size());
    uint32_t ev = 0;
    for (const auto& t : conn.txs()) ev |= t->h2_events;
    EXPECT_EQ(ev, http2_event_bit(c.want_event)) << summary(conn);
  }
}

// An upgrade from HTTP/1 (RFC 7540 §3.2, Upgrade: h2c) through the application layer, each side
// cut at every byte: the flow becomes http2; the upgraded request is HTTP/1's transaction and
// stream 1's, whose response comes in HTTP/2 after the 101.
TEST(Http2, UpgradeFromHttp1AtEverySplit) {
  nghttp2_hd_deflater* se;
  nghttp2_hd_deflate_new(&se, 4096);
  const std::string req = "GET /robots.txt HTTP/1.1\r\nHost: example.org\r\nConnection: Upgrade, HTTP2-Settings\r\n"
                          "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n"
                          "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, "");
  const std::string resp = "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n" +
                           frame(4, 0, 0, "") + frame(1, 0x4, 1, hpack(se, {{":status", "200"}, {"server", "s"}})) +
                           frame(0, 0x1, 1, "User-agent: *\n");
  nghttp2_hd_deflate_del(se);
  FlowKey k{};
  k.family = 4;
  k.proto = 6;
  k.port[0] = 40000;
  k.port[1] = 80;
  for (size_t cut = 1; cut < resp.size(); ++cut) {
    AppLayer app;
    std::vector<StreamChunk> chunks;
    std::vector<uint8_t> bytes;
    const auto add = [&](int dir, const std::string& b, size_t from, size_t to, uint32_t packet) {
      test::add_chunk(chunks, bytes, k, dir, b, from, to, packet, 9);
    };
    const size_t req_h1 = req.find("PRI");
    add(0, req, 0, req_h1, 0);
    add(1, resp, 0, cut, 1);
    add(0, req, req_h1, req.size(), 2);
    add(1, resp, cut, resp.size(), 3);
    std::vector<AppUpdate> out;
    app.process(chunks, bytes, out);
    ASSERT_STREQ(app_proto_name(app.proto(9)), "http2") << "cut " << cut;
    std::string got;
    for (const AppUpdate& u : out)
      if (const HttpTx* t = u.http(); t && t->resp_done && !t->h2_global)  // stream 1's, not a SETTINGS frame's
        got = std::string(app_proto_name(u.proto)) + " " + t->method + " " + t->uri_raw + " " + t->hostname() + " " +
              t->stat_code + " " + t->response_body;
    EXPECT_EQ(got, "http2 GET /robots.txt example.org 200 User-agent: *\n") << "cut " << cut;
  }
}

// The frames each transaction side keeps (the http2.* keywords' and EVE's view), at every split of
// the client's bytes: connection-level frames are transactions of their own (stream 0); a
// SETTINGS frame's parameters stop at an id Suricata does not know; HEADERS with a priority and a
// dynamic table size update at its block's start; PRIORITY, RST_STREAM and WINDOW_UPDATE on a
// known stream only.
TEST(Http2, FramesAsSuricataKeepsThem) {
  nghttp2_hd_deflater* ce;
  nghttp2_hd_deflate_new(&ce, 4096);
  const auto be32s = [](uint32_t v) { return std::string{char(v >> 24), char(v >> 16), char(v >> 8), char(v)}; };
  const auto setting = [&](uint16_t id, uint32_t v) { return std::string{char(id >> 8), char(id)} + be32s(v); };
  // A dynamic table size update of 4096 before the fields (001 11111, then 31 + 0x61 + (0x1f << 7)).
  const std::string block = std::string("\x3f\xe1\x1f", 3) + hpack(ce, {{":method", "GET"}, {":path", "/"}, {":authority", "a"}});
  nghttp2_hd_deflate_del(ce);
  const std::string client =
      "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" +
      frame(4, 0, 0, setting(1, 1000) + setting(4, 65535) + setting(0x99, 1) + setting(5, 16384)) +
      frame(8, 0, 0, be32s(1000000)) +
      frame(1, 0x4 | 0x1 | 0x20, 1, be32s(0) + std::string(1, char(200)) + block) +
      frame(8, 0, 1, be32s(32768)) + frame(2, 0, 1, be32s(0) + std::string(1, char(7))) +
      frame(8, 0, 9, be32s(5)) +  // an unknown stream: no transaction
      frame(3, 0, 1, be32s(8)) + frame(6, 0, 0, std::string(8, 'p')) + frame(7, 0, 0, be32s(1) + be32s(2));
  const std::string want =
      "0:SETTINGS[1=1000,4=65535]\n"
      "0:WINDOW_UPDATE(w1000000)\n"
      "1:HEADERS(p200,u4096) WINDOW_UPDATE(w32768) PRIORITY(p7) RST_STREAM(e8)\n"
      "0:PING\n"
      "0:GOAWAY(e2)\n";
  for (size_t cut = 1; cut <= client.size(); ++cut) {
    HttpStats hs;
    Http2Stats st;
    Http2Conn conn(HttpLimits{}, hs, st);
    conn.feed(0, (const uint8_t*)client.data(), cut);
    conn.feed(0, (const uint8_t*)client.data() + cut, client.size() - cut);
    std::string got;
    for (const auto& t : conn.txs()) {
      got += std::to_string(t->stream_id) + ":";
      for (size_t i = 0; i < t->h2_frames[0].size(); ++i) {
        const HttpTx::H2Frame& f = t->h2_frames[0][i];
        got += std::string(i ? " " : "") + http2_frame_type_name(f.type);
        std::string a;
        if (f.priority >= 0) a += ",p" + std::to_string(f.priority);
        if (f.size_update >= 0) a += ",u" + std::to_string(f.size_update);
        if (f.window >= 0) a += ",w" + std::to_string(f.window);
        if (f.error >= 0) a += ",e" + std::to_string(f.error);
        if (!a.empty()) got += "(" + a.substr(1) + ")";
        if (f.type == 4) {
          got += "[";
          for (const auto& [id, v] : f.settings) got += (got.back() == '[' ? "" : ",") + std::to_string(id) + "=" + std::to_string(v);
          got += "]";
        }
      }
      got += "\n";
      EXPECT_EQ(t->h2_global, t->stream_id == 0);
    }
    ASSERT_EQ(got, want) << "cut " << cut;
  }
}

// The http2.* keywords' values and their matching over a side's frames, against Suricata's
// multi-integer semantics (detect/uint.rs detect_uint_match_at_index) worked by hand.
TEST(Http2, FrameKeywordsAsSuricataMatchesThem) {
  using F = HttpTx::H2Frame;
  const auto win = [](int64_t w) { F f; f.type = 8; f.window = w; return f; };
  const auto hdr = [](int16_t p) { F f; f.type = 1; f.priority = p; return f; };
  const auto rst = [](int64_t e) { F f; f.type = 3; f.error = e; return f; };
  F set;
  set.type = 4;
  set.settings = {{1, 4096}, {3, 100}};
  // HEADERS(no priority), WINDOW_UPDATE 32768, WINDOW_UPDATE 40000, RST_STREAM CANCEL, SETTINGS.
  const std::vector<F> frames = {hdr(-1), win(32768), win(40000), rst(8), set};
  struct Case {
    const char* kw;
    const char* value;
    bool complete, want;
  };
  const Case cases[] = {
      {"http2.frametype", "HEADERS", false, true},
      {"http2.frametype", "GOAWAY", true, false},
      {"http2.frametype", "3", false, true},
      {"http2.frametype", "HEADERS,0", false, true},
      {"http2.frametype", "HEADERS,1", false, false},
      {"http2.frametype", "SETTINGS,-1", false, true},
      {"http2.window", "32768", false, true},
      {"http2.window", "32768,all", true, false},          // 40000 is not
      {"http2.window", ">30000,all", true, true},
      {"http2.window", ">30000,all", false, false},         // all: only once the side ended
      {"http2.window", ">30000,nb>1", false, true},
      {"http2.window", ">30000,nb 2", false, false},        // = : only once the side ended
      {"http2.window", ">30000,nb 2", true, true},
      {"http2.window", "40000,2", false, true},            // the frame at index 2
      {"http2.window", "40000,1", false, false},
      {"http2.window", "1,oob_or 9", false, false},        // out of range: only once ended
      {"http2.window", "1,oob_or 9", true, true},
      {"http2.window", "40000,0,2:3", false, true},        // index 0 of the frames 2..3
      {"http2.window", "32768,any,2:5", false, false},
      {"http2.window", "count>1", false, true},
      {"http2.window", "count 3", true, false},
      {"http2.priority", "5,or_absent", true, true},       // no priority anywhere: absent
      {"http2.priority", "5,or_absent", false, false},
      {"http2.errorcode", "CANCEL", false, true},
      {"http2.errorcode", "!NO_ERROR", false, true},
      {"http2.errorcode", "HTTP_1_1_REQUIRED", false, false},
      {"http2.settings", "SETTINGS_MAX_CONCURRENT_STREAMS", false, true},
      {"http2.settings", "SETTINGS_HEADER_TABLE_SIZE>4096", false, false},
      {"http2.settings", "SETTINGS_HEADER_TABLE_SIZE>=4096", false, true},
      {"http2.settings", "SETTINGS_ENABLE_PUSH", false, false},
      {"http2.size_update", ">0", false, false},
  };
  for (const Case& c : cases) {
    Http2Cond cond;
    ASSERT_EQ(parse_http2_cond(c.kw, c.value, cond), "") << c.kw << ":" << c.value;
    EXPECT_EQ(http2_cond_holds(cond, frames, c.complete), c.want) << c.kw << ":" << c.value << (c.complete ? " complete" : "");
  }
  for (const char* bad : {"NOT_A_FRAME", "HEADERS,1,3:2", "1,2,3,4"}) {
    Http2Cond cond;
    EXPECT_NE(parse_http2_cond("http2.frametype", bad, cond), "") << bad;
  }
  Http2Cond cond;
  EXPECT_NE(parse_http2_cond("http2.settings", "SETTINGS_NOPE", cond), "");
}

}  // namespace
}  // namespace gaspp
