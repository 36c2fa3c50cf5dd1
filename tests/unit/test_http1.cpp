// The HTTP/1 parser (applayer/http1.hpp): transactions are the same however the streams are cut
// (every split position, and 1-, 7- and 65536-byte pieces); bodies dechunked and decoded equal
// the original (compressed here with zlib, the oracle); libhtp's leniencies that evasions probe.
#include <gtest/gtest.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <lzma.h>
#include <zlib.h>

#include <string>
#include <vector>

#include "applayer/app_layer.hpp"
#include "applayer/http1.hpp"
#include "applayer/ssh.hpp"
#include "applayer/tls.hpp"
#include "test_support.hpp"

namespace gaspp {
namespace {

// What a connection's transactions say, as one comparable string.
std::string summary(const Http1Conn& c) {
  std::string s;
  for (const auto& t : c.txs()) {
    s += "[" + t->method + "|" + t->uri_raw + "|" + t->protocol + "|";
    for (const HttpHeader& h : t->req_headers) s += h.name + "=" + h.value + ";";
    s += "|" + t->request_body + "|" + t->stat_code + "|" + t->stat_msg + "|";
    for (const HttpHeader& h : t->resp_headers) s += h.name + "=" + h.value + ";";
    s += "|" + t->response_body + "|" + (t->req_done ? "q" : "-") + (t->resp_done ? "r" : "-");
    for (int side = 0; side < 2; ++side)
      for (const MimeFile& f : t->files(side))
        s += "|file " + std::to_string(side) + " " + f.name + " " + std::to_string(f.size) + (f.closed ? " closed " : f.truncated ? " truncated " : " open ") + f.md5;
    s += "]";
  }
  return s;
}

// Feeds the client bytes, then the server bytes, each cut at the given positions.
std::string run(const std::string& req, const std::string& resp, const std::vector<size_t>& cuts_req,
                const std::vector<size_t>& cuts_resp) {
  HttpStats st;
  HttpLimits lim;
  lim.file_hashes = kHashMd5;
  Http1Conn c(lim, st);
  auto feed = [&](int dir, const std::string& s, const std::vector<size_t>& cuts) {
    size_t at = 0;
    for (size_t cut : cuts) {
      if (cut <= at || cut >= s.size()) continue;
      c.feed(dir, reinterpret_cast<const uint8_t*>(s.data()) + at, cut - at);
      at = cut;
    }
    c.feed(dir, reinterpret_cast<const uint8_t*>(s.data()) + at, s.size() - at);
  };
  feed(0, req, cuts_req);
  feed(1, resp, cuts_resp);
  c.end(0);
  c.end(1);
  return summary(c);
}

std::vector<size_t> every(size_t n, size_t len) {
  std::vector<size_t> v;
  for (size_t k = n; k < len; k += n) v.push_back(k);
  return v;
}

std::string compress(const std::string& in, int bits) {  // 15+16 gzip, 15 zlib, -15 raw deflate
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 9, Z_DEFLATED, bits, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(in.size() + 1024, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = uInt(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = uInt(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string chunked(const std::string& body, size_t piece) {
  std::string s;
  char hex[32];
  for (size_t at = 0; at < body.size(); at += piece) {
    const std::string p = body.substr(at, piece);
    std::snprintf(hex, sizeof hex, "%zx\r\n", p.size());
    s += hex + p + "\r\n";
  }
  return s + "0\r\n\r\n";
}

struct Case {
  const char* name;
  std::string req, resp;
  std::string want_body;  // the first response's body after decoding
  // Pieces of the body shorter than this may decode differently, as in libhtp: a decoder that
  // fails restarts with the next format on the current piece only (a zlib-wrapped body under
  // `deflate` decodes after its raw-deflate attempt fails, unless that piece was too short to show the error: under 6 bytes).
  size_t min_piece = 0;
  size_t body_at = 0;     // where the body starts in resp (for min_piece)
};

std::vector<Case> cases() {
  std::string body;
  for (int i = 0; i < 400; ++i) body += "line " + std::to_string(i) + " of the EICAR-like test body\n";
  const std::string head = "GET /a/b?c=d HTTP/1.1\r\nHost: example.com\r\nUser-Agent: t\r\n\r\n";
  std::vector<Case> v;
  v.push_back({"content-length", head, "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body, body});
  v.push_back({"chunked", head, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(body, 333), body});
  v.push_back({"gzip", head, "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: " +
                                 std::to_string(compress(body, 31).size()) + "\r\n\r\n" + compress(body, 31), body});
  {
    const std::string h = "HTTP/1.1 200 OK\r\nContent-Encoding: deflate\r\nConnection: close\r\n\r\n";
    v.push_back({"deflate (zlib-wrapped, after a restart)", head, h + compress(body, 15), body, 6, h.size()});
  }
  v.push_back({"gzip, deflate layered and chunked", head,
               "HTTP/1.1 200 OK\r\nContent-Encoding: gzip, deflate\r\nTransfer-Encoding: chunked\r\n\r\n" +
                   chunked(compress(compress(body, 31), -15), 100), body});
  v.push_back({"close-delimited with folded headers", head,
               "HTTP/1.1 200 OK\r\nX-A: one\r\n two\r\nContent-Type: text/plain\r\n\r\n" + body, body});
  v.push_back({"lone CR line ends", head, "HTTP/1.1 200 OK\rTransfer-Encoding: chunked\r\r" + chunked(body, 50), body});
  v.push_back({"100 continue, then the response", head,
               "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body, body});
  v.push_back({"pipelined", head + "POST /p HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello",
               "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcHTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", "abc"});
  v.push_back({"a name folded before its colon (libhtp reads Transfer-Encoding)", head,
               "HTTP/1.1 200 OK\r\nTransfer-Encoding\r\n :\r\n chunked\r\nX: y\r\n\r\n" + chunked(body, 77), body});
  v.push_back({"a one-space continuation ends the block", head,
               "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\n \n\n" + body, body});
  v.push_back({"invalid chunk size: the rest is the body", head,
               "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + body, body});
  return v;
}

TEST(Http1, SameTransactionsAtEverySplitAndPieceSize) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const std::string whole = run(c.req, c.resp, {}, {});
    HttpStats st;
    Http1Conn one(HttpLimits{}, st);
    one.feed(0, reinterpret_cast<const uint8_t*>(c.req.data()), c.req.size());
    one.feed(1, reinterpret_cast<const uint8_t*>(c.resp.data()), c.resp.size());
    one.end(0);
    one.end(1);
    ASSERT_FALSE(one.txs().empty());
    EXPECT_EQ(one.txs().front()->response_body, c.want_body);
    EXPECT_EQ(one.txs().front()->uri_raw, "/a/b?c=d");
    for (size_t piece : {size_t(1), size_t(7), size_t(65536)}) {
      if (piece < c.min_piece) continue;
      EXPECT_EQ(run(c.req, c.resp, every(piece, c.req.size()), every(piece, c.resp.size())), whole) << "pieces of " << piece;
    }
    // Every single split position of the response head and the start of its body.
    for (size_t k = 1; k < std::min<size_t>(c.resp.size(), 160); ++k) {
      if (c.min_piece && k > c.body_at && k < c.body_at + c.min_piece) continue;
      EXPECT_EQ(run(c.req, c.resp, {k % c.req.size()}, {k}), whole) << "split at " << k;
    }
  }
}

TEST(Http1, PipelinedRequestsPairWithTheirResponses) {
  HttpStats st;
  Http1Conn c(HttpLimits{}, st);
  const std::string req = "GET /1 HTTP/1.1\r\n\r\nGET /2 HTTP/1.1\r\n\r\n";
  const std::string resp = "HTTP/1.1 200 A\r\nContent-Length: 1\r\n\r\naHTTP/1.1 301 B\r\nContent-Length: 1\r\n\r\nb";
  c.feed(0, reinterpret_cast<const uint8_t*>(req.data()), req.size());
  c.feed(1, reinterpret_cast<const uint8_t*>(resp.data()), resp.size());
  ASSERT_EQ(c.txs().size(), 2u);
  EXPECT_EQ(c.txs()[0]->uri_raw, "/1");
  EXPECT_EQ(c.txs()[0]->stat_code, "200");
  EXPECT_EQ(c.txs()[0]->response_body, "a");
  EXPECT_EQ(c.txs()[1]->uri_raw, "/2");
  EXPECT_EQ(c.txs()[1]->stat_code, "301");
  EXPECT_EQ(c.txs()[1]->response_body, "b");
}

// The anomalies libhtp logs or flags and Suricata raises as app-layer events (http1.hpp
// GASPP_HTTP_EVENTS), on the first transaction, at every split of the request and of the response.
// Expected values: libhtp's own test files where one covers the case (rust/htp/src/test/files,
// named), else libhtp's code read case by case (request.rs, response.rs, transaction.rs).
TEST(Http1, EventsAsLibhtp) {
  struct Case {
    const char* request;
    const char* response;
    uint64_t events;
  };
  const char* const ok = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
  const Case cases[] = {
      {"GET / HTTP/1.1\r\nHost: a\r\n\r\n", ok, 0},
      {"GET / HTTP/1.1\r\n\r\n", "", kHttpEvMissingHost},
      {"GET / HTTP/1.0\r\n\r\n", "", 0},                                    // 1.0 needs no Host
      {"GET /\r\n", "", 0},                                                    // HTTP/0.9
      {"GET / HTTP/ 01.1 \r\n\r\n", "", kHttpEvMissingHost},                // spaces and zeros: still 1.1
      {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", "", kHttpEvInvalidTeRequest},
      {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, CHUNKED\r\n\r\n0\r\n\r\n", "", 0},
      {"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "", kHttpEvInvalidTeRequest},  // chunked below 1.1
      {"POST / HTTP/2.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "", kHttpEvInvalidTeRequest},  // not a version libhtp knows
      {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: abc\r\n\r\n", "", kHttpEvInvalidClRequest},
      {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: x1\r\n\r\nb", "", 0},         // digits after junk: a length
      {"POST / HTTP/1.1\r\nTransfer-Encoding: x\r\nContent-Length: abc\r\n\r\n", "",  // T-E wins: C-L not checked
       kHttpEvInvalidTeRequest | kHttpEvMissingHost},
      // Hosts: 20-ambiguous-host.t, 32/33/34-invalid-hostname.t
      {"GET http://example.com/1 HTTP/1.1\r\nHost: example.com\r\n\r\n", "", 0},
      {"GET http://example.com/2 HTTP/1.1\r\nHost: foo.com\r\n\r\n", "", kHttpEvHostAmbiguous},
      {"GET http://www.example.com:8001/3 HTTP/1.1\r\nHost: www.example.com:8001\r\n\r\n", "", 0},
      {"GET http://www.example.com:8002/4 HTTP/1.1\r\nHost: www.example.com:8003\r\n\r\n", "", kHttpEvHostAmbiguous},
      {"GET http://www.example.com:80/5 HTTP/1.1\r\nHost: www.example.com\r\n\r\n", "", 0},
      {"GET http://www..example.com/?p=%20 HTTP/1.0\r\nHost: www example.com\r\n\r\n", "",
       kHttpEvUriHostInvalid | kHttpEvHeaderHostInvalid | kHttpEvHostAmbiguous},
      {"GET http://www.example.com:XXX/?p=%20 HTTP/1.0\r\nHost: www.example.com\r\n\r\n", "", kHttpEvUriHostInvalid},
      {"GET /?p=%20 HTTP/1.0\r\nHost: www.example.com:\r\n\r\n", "", kHttpEvHeaderHostInvalid},
      {"CONNECT a.b:99999 HTTP/1.1\r\nHost: a.b\r\n\r\n", "", kHttpEvUriHostInvalid},
      {"GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n", "", 0},
      // Content-Encoding lists, libhtp's slow path (response.rs / request.rs): exact tokens only;
      // more than the layer limit (2).
      {"GET / HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Encoding: gzip, GZIP\r\nContent-Length: 0\r\n\r\n",
       kHttpEvAbnormalCeHeader},
      {"GET / HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Encoding: identity, br\r\nContent-Length: 0\r\n\r\n",
       kHttpEvAbnormalCeHeader},
      {"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
       "HTTP/1.1 200 OK\r\nContent-Encoding: gzip, deflate, gzip\r\nContent-Length: 0\r\n\r\n", kHttpEvTooManyEncodingLayers},
      {"GET / HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Encoding: GZIP\r\nContent-Length: 0\r\n\r\n", 0},
      {"GET / HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Encoding: x-gzip, none\r\nContent-Length: 0\r\n\r\n", 0},
      {"POST / HTTP/1.1\r\nHost: a\r\nContent-Encoding: x-gzip, foo\r\nContent-Length: 0\r\n\r\n", "", kHttpEvAbnormalCeHeader},
      // A request's repeated fields are joined (libhtp): "gzip, foo".
      {"POST / HTTP/1.1\r\nHost: a\r\nContent-Encoding: gzip\r\nContent-Encoding: foo\r\nContent-Length: 0\r\n\r\n", "",
       kHttpEvAbnormalCeHeader | kHttpEvRequestHeaderRepetition},
      {"GET / HTTP/1.1\r\nHost: [::g]\r\n\r\n", "", kHttpEvHeaderHostInvalid},
      // Authorization: 47-auth-unrecognized.t; Basic, Digest and Bearer are known (even malformed)
      {"GET / HTTP/1.1\r\nHost: www.example.com\r\nAuthorization: Turbo customAuthDataHere\r\n\r\n", "", kHttpEvAuthUnrecognized},
      {"GET / HTTP/1.1\r\nHost: a\r\nAuthorization: basic !!\r\n\r\n", "", 0},
      {"GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer x\r\n\r\n", "", 0},
      // Request line
      {" GET / HTTP/1.1\r\nHost: a\r\n\r\n", "", kHttpEvRequestLineLeadingWhitespace},
      {"GET\t/ HTTP/1.1\r\nHost: a\r\n\r\n", "", kHttpEvMethodDelimNonCompliant},
      {"GET /a\tb HTTP/1.1\r\nHost: a\r\n\r\n", "", kHttpEvUriDelimNonCompliant},
      {"FOO\r\n", "", kHttpEvRequestLineUnknownMethod},
      {"FOO /\r\n", "", kHttpEvRequestLineUnknownMethodNoProtocol},
      {"FOO / XTTP/1.1\r\nHost: a\r\n\r\n", "", kHttpEvRequestLineUnknownMethodInvalidProtocol},
      {"FOO / HTTP/1.1\r\nHost: a\r\n\r\n", "", 0},                           // an unknown method alone is fine
      // Request headers: names (headers.rs flags), repetitions, Content-Length duplicates
      {"GET / HTTP/1.1\r\nHost: a\r\nNo Colon\r\n\r\n", "", kHttpEvRequestFieldMissingColon},
      {"GET / HTTP/1.1\r\nHost: a\r\n: Empty\r\n\r\n", "", kHttpEvRequestInvalidEmptyName},
      {"GET / HTTP/1.1\r\nHost: a\r\nLws : v\r\n\r\n", "", kHttpEvRequestInvalidLwsAfterName},
      {"GET / HTTP/1.1\r\nHost: a\r\nHeader@Name: v\r\n\r\n", "", kHttpEvRequestHeaderInvalid},
      {"GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\nx: 2\r\n\r\n", "", kHttpEvRequestHeaderRepetition},
      {"GET / HTTP/1.1\r\nHost: a\r\nA\r\nB\r\n\r\n", "", kHttpEvRequestFieldMissingColon | kHttpEvRequestHeaderRepetition},
      {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx", "", kHttpEvRequestHeaderRepetition},
      {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nx", "",
       kHttpEvRequestHeaderRepetition | kHttpEvDuplicateClRequest},
      // Chunked request bodies
      {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1;ext=1\r\nx\r\n0\r\n\r\n", "", kHttpEvRequestChunkExtension},
      // Responses: 48/49-invalid-response-headers.t, then libhtp's response.rs case by case
      {"GET / HTTP/1.0\r\n\r\n",
       "HTTP/1.0 200 OK\r\nContent-Length: 12\r\nNo Colon\r\nLws : After Header Name\r\nHeader@Name: Not Token\r\n\r\nHello World!",
       kHttpEvResponseFieldMissingColon | kHttpEvResponseInvalidLwsAfterName | kHttpEvResponseHeaderNameNotToken},
      {"GET / HTTP/1.0\r\n\r\n", "HTTP/1.0 200 OK\r\nContent-Length: 12\r\n: Empty Name\r\n\r\nHello World!", kHttpEvResponseInvalidEmptyName},
      {"GET / HTTP/1.0\r\n\r\n", "HTTP/1.0 200 OK\r\nA: 1\r\na: 2\r\nContent-Length: 0\r\n\r\n", kHttpEvResponseHeaderRepetition},
      {"GET / HTTP/1.0\r\n\r\n", "HTTP/1.0 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nx",
       kHttpEvResponseHeaderRepetition | kHttpEvDuplicateClResponse},
      {"GET / HTTP/1.0\r\n\r\n", "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", kHttpEvResponseChunkedOldProto},
      {"GET / HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 200 OK\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n",
       kHttpEvResponseAbnormalTransferEncoding},
      {"GET / HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1 ; a\r\nx\r\n0\r\n\r\n",
       kHttpEvResponseChunkExtension},
      {"GET / HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", kHttpEvInvalidResponseChunkLen},
      {"GET / HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", kHttpEvInvalidClResponse},
      {"GET / HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 204 OK\r\nContent-Length: 1\r\n\r\nx", kHttpEvResponseBodyUnexpected},
      {"HEAD / HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 204 OK\r\nContent-Length: 1\r\n\r\n", 0},
      {"GET / HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 101 Up\r\nContent-Length: 0\r\n\r\n",
       kHttpEvSwitchingProtoWithContentLength | kHttpEvResponseBodyUnexpected},  // a 1xx with a length, too
      {"GET / HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\n" "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
       kHttpEvContinueAlreadySeen},
      {"GET / HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Type: multipart/byteranges; boundary=x\r\n\r\n",
       kHttpEvResponseMultipartByteranges},
      {"GET / HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n", kHttpEvResponseLineInvalidProtocol},
      {"GET / HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n", kHttpEvResponseLineInvalidResponseStatus},
      {"", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", kHttpEvUnableToMatchResponse},
  };
  const auto run = [](const std::string& req, const std::string& resp, size_t cut_req, size_t cut_resp) {
    HttpStats st;
    Http1Conn c(HttpLimits{}, st);
    const auto* q = reinterpret_cast<const uint8_t*>(req.data());
    const auto* r = reinterpret_cast<const uint8_t*>(resp.data());
    c.feed(0, q, cut_req);
    c.feed(0, q + cut_req, req.size() - cut_req);
    c.feed(1, r, cut_resp);
    c.feed(1, r + cut_resp, resp.size() - cut_resp);
    c.end(0);
    c.end(1);
    return c.txs().empty() ? ~uint64_t(0) : c.txs()[0]->events;
  };
  const auto names = [](uint64_t ev) {
    std::string out;
    for (const char* n : http_event_names(ev)) out += std::string(out.empty() ? "" : ",") + n;
    return out;
  };
  for (const Case& k : cases) {
    const std::string req = k.request, resp = k.response;
    for (size_t cut = 0; cut <= req.size() + resp.size(); ++cut) {
      const uint64_t got = cut <= req.size() ? run(req, resp, cut, 0) : run(req, resp, 0, cut - req.size());
      EXPECT_EQ(names(got), names(k.events)) << req << resp << " cut at " << cut;
      if (got != k.events) break;  // one failure per case
    }
  }
  EXPECT_EQ(http_event_bit("invalid_transfer_encoding_value_in_request"), uint64_t(kHttpEvInvalidTeRequest));
  EXPECT_EQ(http_event_bit("100_continue_already_seen"), uint64_t(kHttpEvContinueAlreadySeen));
  // libhtp's number_headers_limit (1024): a new header name once more than it are held, either
  // side; a repeated name is no new one.
  for (const size_t names_n : {size_t(1025), size_t(1026)}) {
    std::string req = "GET / HTTP/1.1\r\nHost: a\r\nX-1: w\r\n", resp = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n";
    for (size_t i = 1; i < names_n; ++i) req += "X-" + std::to_string(i) + ": v\r\n", resp += "Y-" + std::to_string(i) + ": v\r\n";
    req += "\r\n", resp += "\r\n";
    const uint64_t want = names_n > kHttpHeadersLimit + 1 ? kHttpEvRequestTooManyHeaders | kHttpEvResponseTooManyHeaders : 0;
    EXPECT_EQ(names(run(req, resp, req.size(), resp.size()) & ~uint64_t(kHttpEvRequestHeaderRepetition)), names(want))
        << names_n << " names";
  }
  EXPECT_EQ(http_event_bit("gzip_decompression_failed"), uint64_t(kHttpEvGzipDecompressionFailed));  // loads, never raised (as in Suricata)
  EXPECT_EQ(http_event_bit("double_encoded_uri"), 0u);  // not raised here: such rules are skipped
  EXPECT_EQ(http_event_names(kHttpEvMissingHost | kHttpEvUnableToMatchResponse),
            (std::vector<const char*>{"missing_host_header", "unable_to_match_response_to_request"}));
}

// A request line too long starts a transaction holding libhtp's field-too-long; a line after a
// finished request that starts with no method libhtp knows is more of that request's body.
TEST(Http1, TooLongLinesAndUnexpectedBodies) {
  {
    HttpStats st;
    HttpLimits lim;
    lim.header_limit = 64;
    Http1Conn c(lim, st);
    const std::string req = "GET /" + std::string(100, 'a') + " HTTP/1.1\r\n";
    c.feed(0, reinterpret_cast<const uint8_t*>(req.data()), req.size());
    ASSERT_EQ(c.txs().size(), 1u);
    EXPECT_EQ(c.txs()[0]->events, uint64_t(kHttpEvRequestFieldTooLong));
    EXPECT_EQ(st.lines_too_long, 1u);
  }
  {
    // A request line without a protocol is HTTP/0.9 unless more than whitespace follows it in the
    // same data (libhtp's request_protocol): then its headers are read.
    const std::string req = "GET /\nFakeHeader\nHost: localhost\nUser-Agent: myscript\n\n";
    for (const size_t cut : {req.size(), size_t(6)}) {
      HttpStats st;
      Http1Conn c(HttpLimits{}, st);
      c.feed(0, reinterpret_cast<const uint8_t*>(req.data()), cut);
      c.feed(0, reinterpret_cast<const uint8_t*>(req.data()) + cut, req.size() - cut);
      ASSERT_GE(c.txs().size(), 1u);
      const HttpTx& t = *c.txs()[0];
      if (cut == req.size()) {
        EXPECT_EQ(t.events, uint64_t(kHttpEvRequestLineMissingProtocol | kHttpEvRequestFieldMissingColon));
        EXPECT_EQ(t.req_header("user-agent"), "myscript");
        EXPECT_EQ(c.txs().size(), 1u);
      } else {
        EXPECT_EQ(t.events, 0u);  // the line ended the data: HTTP/0.9
        EXPECT_TRUE(t.req_headers.empty());
      }
    }
  }
  const std::string req = "GET / HTTP/1.1\r\nHost: a\r\n\r\nlogin=foo&password=bar\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n";
  for (size_t cut = 0; cut <= req.size(); ++cut) {
    HttpStats st;
    Http1Conn c(HttpLimits{}, st);
    c.feed(0, reinterpret_cast<const uint8_t*>(req.data()), cut);
    c.feed(0, reinterpret_cast<const uint8_t*>(req.data()) + cut, req.size() - cut);
    ASSERT_EQ(c.txs().size(), 2u) << "cut at " << cut;
    EXPECT_EQ(c.txs()[0]->events, uint64_t(kHttpEvRequestBodyUnexpected)) << "cut at " << cut;
    EXPECT_EQ(c.txs()[0]->request_body, "login=foo&password=bar\r\n") << "cut at " << cut;
    EXPECT_EQ(c.txs()[1]->uri_raw, "/2");
    EXPECT_EQ(c.txs()[1]->events, 0u);
  }
}

// The MD5 of bytes, as the oracle for a file's hash (OpenSSL's EVP one-shot digest).
std::string md5_of(const std::string& b) {
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  EVP_Digest(b.data(), b.size(), d, &n, EVP_md5(), nullptr);
  static const char kHex[] = "0123456789abcdef";
  std::string h;
  for (unsigned i = 0; i < n; ++i) h += kHex[d[i] >> 4], h += kHex[d[i] & 15];
  return h;
}

// HTTP's files (HttpTx::files) as Suricata names and bounds them: the response body named by
// Content-Disposition's filename or else the URI's path; a POST's or PUT's body; a form's parts
// with a file name (their own bytes, the CRLF before a boundary not theirs); a body cut by its limit or by
// the stream's end is truncated (no hash). Each case also at every split of the request and the
// response, which must not change the files.
TEST(Http1, FilesAsSuricataNamesThem) {
  struct File {
    int side;
    std::string name, bytes;
    const char* state;  // "closed" or "truncated"
  };
  struct FileCase {
    const char* name;
    std::string req, resp;
    std::vector<File> want;
    bool end_early = false;  // the response stream ends before its Content-Length
  };
  const std::string body = "MZ\x90\x00 not really an executable\r\n\r\n--not-a-boundary\r\n";
  const std::string form_a = "toto est dans un bateau\n", form_b = std::string("\x00\x01bin\r\nary\xff", 12);
  const std::string form = "--XyZ\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\nfield value\r\n"
                           "--XyZ\r\nContent-Disposition: form-data; name=\"u1\"; filename=\"toto.txt\"\r\n"
                           "Content-Type: text/plain\r\n\r\n" + form_a + "\r\n"
                           "--XyZ\r\nContent-Disposition: form-data; name=\"u2\"; filename=\"b.bin\"\r\n\r\n" + form_b +
                           "\r\n--XyZ--\r\n";
  const auto ok = [](const std::string& b) {
    return "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(b.size()) + "\r\n\r\n" + b;
  };
  std::vector<FileCase> cases = {
      {"the URI's path names a response's file", "GET /dl/a%20b.exe?x=1#f HTTP/1.1\r\nHost: h\r\n\r\n", ok(body),
       {{1, "/dl/a%20b.exe", body, "closed"}}},
      {"an absolute URI's path", "GET http://h.example:8080/p/q.zip?z HTTP/1.1\r\n\r\n", ok(body),
       {{1, "/p/q.zip", body, "closed"}}},
      {"Content-Disposition's filename wins", "GET /x HTTP/1.1\r\n\r\n",
       "HTTP/1.1 200 OK\r\nContent-Disposition: attachment; filename=\"report.pdf\"\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body,
       {{1, "report.pdf", body, "closed"}}},
      {"no body, no file", "GET /x HTTP/1.1\r\n\r\n", "HTTP/1.1 204 No Content\r\n\r\n", {}},
      {"a PUT's body", "PUT /up/f.txt HTTP/1.1\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body,
       ok(""), {{0, "/up/f.txt", body, "closed"}}},
      {"a POST's plain body is a file too", "POST /p?x HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello", ok("ok"),
       {{0, "/p", "hello", "closed"}, {1, "/p", "ok", "closed"}}},
      {"a GET's body is none", "GET /g HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello", ok(""), {}},
      {"a form's parts with a file name", "POST /upload.cgi HTTP/1.1\r\nContent-Type: multipart/form-data; boundary=XyZ\r\n"
       "Content-Length: " + std::to_string(form.size()) + "\r\n\r\n" + form, ok(""),
       {{0, "toto.txt", form_a, "closed"}, {0, "b.bin", form_b, "closed"}}},
      {"cut by the body limit", "GET /big HTTP/1.1\r\n\r\n", ok(std::string(300, 'A')),
       {{1, "/big", std::string(200, 'A'), "truncated"}}},
      {"the stream ends inside the body", "GET /short HTTP/1.1\r\n\r\n",
       "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + body, {{1, "/short", body, "truncated"}}, true},
  };
  for (const FileCase& fc : cases) {
    SCOPED_TRACE(fc.name);
    const auto files_at = [&](size_t cut_req, size_t cut_resp) {
      HttpStats st;
      HttpLimits lim;
      lim.file_hashes = kHashMd5;
      lim.response_body_limit = 200;
      Http1Conn c(lim, st);
      const auto feed = [&](int dir, const std::string& b, size_t cut) {
        const size_t k = cut && cut < b.size() ? cut : b.size();
        c.feed(dir, reinterpret_cast<const uint8_t*>(b.data()), k);
        if (k < b.size()) c.feed(dir, reinterpret_cast<const uint8_t*>(b.data()) + k, b.size() - k);
      };
      feed(0, fc.req, cut_req);
      feed(1, fc.resp, cut_resp);
      c.end(0);
      c.end(1);
      std::string got;
      for (const auto& t : c.txs())
        for (int side = 0; side < 2; ++side)
          for (const MimeFile& f : t->files(side))
            got += std::to_string(side) + " " + f.name + " " + std::to_string(f.size) + " " +
                   (f.closed ? "closed" : f.truncated ? "truncated" : "open") + " " + f.md5 + "\n";
      return got;
    };
    std::string want;
    for (const File& f : fc.want)
      want += std::to_string(f.side) + " " + f.name + " " + std::to_string(f.bytes.size()) + " " + f.state + " " +
              (std::string(f.state) == "closed" ? md5_of(f.bytes) : "") + "\n";
    EXPECT_EQ(files_at(0, 0), want);
    for (size_t k = 1; k < fc.req.size(); ++k) EXPECT_EQ(files_at(k, 0), want) << "request split at " << k;
    for (size_t k = 1; k < fc.resp.size(); ++k) EXPECT_EQ(files_at(0, k), want) << "response split at " << k;
  }
}

TEST(Http1, BodyLimitCutsAndCounts) {
  HttpStats st;
  HttpLimits lim;
  lim.response_body_limit = 10;
  Http1Conn c(lim, st);
  const std::string req = "GET / HTTP/1.1\r\n\r\n";
  const std::string resp = "HTTP/1.1 200 OK\r\nContent-Length: 26\r\n\r\nabcdefghijklmnopqrstuvwxyz";
  c.feed(0, reinterpret_cast<const uint8_t*>(req.data()), req.size());
  c.feed(1, reinterpret_cast<const uint8_t*>(resp.data()), resp.size());
  ASSERT_EQ(c.txs().size(), 1u);
  EXPECT_EQ(c.txs()[0]->response_body, "abcdefghij");
  EXPECT_EQ(c.txs()[0]->response_body_len, 26u);
  EXPECT_TRUE(c.txs()[0]->resp_done);
  EXPECT_EQ(st.bodies_truncated, 1u);
}

// lzma (lzma-enabled): the body compressed here with liblzma's .lzma encoder (the oracle) decodes
// to the original at every piece size; with lzma off (Suricata's default) the body is inspected as
// sent, and with a memory limit under the stream's dictionary it passes through from the piece
// where decoding failed.
std::string lzma_alone(const std::string& in, uint32_t dict_size, bool size_known) {
  lzma_options_lzma o;
  EXPECT_FALSE(lzma_lzma_preset(&o, 6));
  o.dict_size = dict_size;
  lzma_stream z = LZMA_STREAM_INIT;
  EXPECT_EQ(lzma_alone_encoder(&z, &o), LZMA_OK);
  std::string out(in.size() + 4096, '\0');
  z.next_in = reinterpret_cast<const uint8_t*>(in.data());
  z.avail_in = in.size();
  z.next_out = reinterpret_cast<uint8_t*>(out.data());
  z.avail_out = out.size();
  EXPECT_EQ(lzma_code(&z, LZMA_FINISH), LZMA_STREAM_END);
  out.resize(z.total_out);
  lzma_end(&z);
  if (size_known)  // the .lzma header's size field (the encoder writes "unknown"): libhtp ignores it
    for (int k = 0; k < 8; ++k) out[5 + k] = char(k < 4 ? (in.size() >> (8 * k)) & 0xff : 0);
  return out;
}

// The first response's body after the request and the response went through a connection in
// pieces of `piece` bytes, with lzma on or off; "<no transaction>" when none came out.
std::string lzma_response_body(bool enabled, uint64_t memlimit, const std::string& req, const std::string& resp,
                               size_t piece, HttpStats& st) {
  HttpLimits lim;
  lim.lzma_enabled = enabled;
  lim.lzma_memlimit = memlimit;
  lim.response_body_limit = 1u << 20;
  Http1Conn conn(lim, st);
  conn.feed(0, reinterpret_cast<const uint8_t*>(req.data()), req.size());
  for (size_t at = 0; at < resp.size(); at += piece)
    conn.feed(1, reinterpret_cast<const uint8_t*>(resp.data()) + at, std::min(piece, resp.size() - at));
  conn.end(0);
  conn.end(1);
  return conn.txs().size() == 1 ? conn.txs()[0]->response_body : "<no transaction>";
}

TEST(Http1, LzmaBodiesAsLibhtp) {
  std::string body;
  for (int i = 0; i < 400; ++i) body += "line " + std::to_string(i) + " of the EICAR-like test body\n";
  const std::string req = "GET /x HTTP/1.1\r\nHost: example.com\r\n\r\n";
  struct Case {
    const char* name;
    bool enabled;
    uint64_t memlimit;
    uint32_t dict;
    bool size_known;
    std::string coding;
    bool decoded;  // else the body as sent
  };
  const std::vector<Case> cases = {
      {"lzma", true, 1u << 20, 1u << 16, false, "lzma", true},
      {"lzma with its size in the header", true, 1u << 20, 1u << 16, true, "lzma", true},
      {"lzma as a token", true, 1u << 20, 1u << 16, false, "identity, lzma", true},
      {"lzma off (the default)", false, 1u << 20, 1u << 16, false, "lzma", false},
      {"declared dictionary past the memory limit, output under it", true, 1u << 20, 8u << 20, false, "lzma", true},
      {"a memory limit of exactly the dictionary", true, 1u << 16, 1u << 16, false, "lzma", true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string z = lzma_alone(body, c.dict, c.size_known);
    const std::string resp = "HTTP/1.1 200 OK\r\nContent-Encoding: " + c.coding +
                             "\r\nContent-Length: " + std::to_string(z.size()) + "\r\n\r\n" + z;
    for (size_t piece : {size_t(1), size_t(7), size_t(13), size_t(100), resp.size()}) {
      HttpStats st;
      EXPECT_EQ(lzma_response_body(c.enabled, c.memlimit, req, resp, piece, st), c.decoded ? body : z)
          << "piece " << piece;
    }
  }
}

TEST(Http1, LzmaOutputHeldToTheMemoryLimit) {
  // A stream whose dictionary is past lzma-memlimit decodes until its output reaches the limit,
  // then the layer ends with what it made (libhtp: its dictionary cannot grow further).
  std::string body;
  for (int i = 0; i < 800; ++i) body += "line " + std::to_string(i) + " of a body longer than the limit\n";
  const std::string z = lzma_alone(body, 1u << 16, false);
  const std::string req = "GET /x HTTP/1.1\r\nHost: example.com\r\n\r\n";
  const std::string resp = "HTTP/1.1 200 OK\r\nContent-Encoding: lzma\r\nContent-Length: " + std::to_string(z.size()) +
                           "\r\n\r\n" + z;
  for (size_t piece : {size_t(1), size_t(64), resp.size()}) {
    HttpStats st;
    EXPECT_EQ(lzma_response_body(true, 8192, req, resp, piece, st), body.substr(0, 8192)) << "piece " << piece;
    EXPECT_EQ(st.decode_failures, 1u) << "piece " << piece;
  }
}

TEST(Http1, ContentCodingTokensAsLibhtp) {
  struct T {
    const char* value;
    uint32_t limit;
    std::vector<HttpCoding> want;
  } ts[] = {
      {"gzip", 2, {HttpCoding::gzip}},
      {"X-GZIP", 2, {HttpCoding::gzip}},
      {"gzip, deflate", 2, {HttpCoding::gzip, HttpCoding::deflate}},
      {"gzip,deflate,gzip", 2, {HttpCoding::gzip, HttpCoding::deflate}},
      {"gzip,deflate,gzip", 3, {HttpCoding::gzip, HttpCoding::deflate, HttpCoding::gzip}},
      {"foo, gzip", 1, {}},
      {"identity", 2, {}},
      {"x_gzip", 2, {HttpCoding::gzip}},
  };
  for (const T& t : ts) {
    std::vector<HttpCoding> got;
    parse_content_codings_htp(t.value, t.limit, got);
    EXPECT_EQ(got, t.want) << t.value << " limit " << t.limit;
  }
  // lzma only when enabled, one layer at most.
  const T lz[] = {
      {"lzma", 2, {HttpCoding::lzma}},
      {"LZMA", 2, {HttpCoding::lzma}},
      {"lzma, gzip", 2, {HttpCoding::lzma, HttpCoding::gzip}},
      {"lzma, lzma", 2, {HttpCoding::lzma}},
  };
  for (const T& t : lz) {
    std::vector<HttpCoding> got, off;
    parse_content_codings_htp(t.value, t.limit, got, true);
    EXPECT_EQ(got, t.want) << t.value;
    parse_content_codings_htp(t.value, t.limit, off, false);
    for (HttpCoding c : off) EXPECT_NE(c, HttpCoding::lzma) << t.value;
  }
}

}  // namespace
}  // namespace gaspp

// TLS (applayer/tls.hpp): a ClientHello with a server name and a ServerHello, split anywhere.
namespace gaspp {
namespace {

std::string tls_record(uint8_t hs_type, const std::string& body) {
  std::string m;
  m += char(hs_type);
  m += char(body.size() >> 16), m += char(body.size() >> 8), m += char(body.size());
  m += body;
  std::string r = "\x16\x03\x01";
  r += char(m.size() >> 8), r += char(m.size());
  return r + m;
}

std::string client_hello(const std::string& sni) {
  std::string b = "\x03\x03" + std::string(32, 'r');
  b += '\0';                                  // session id
  b += std::string("\x00\x02\x13\x01", 4);    // one cipher suite
  b += std::string("\x01\x00", 2);            // null compression
  std::string name = std::string("\x00", 1) + char(sni.size() >> 8) + char(sni.size()) + sni;
  std::string list = std::string(1, char(name.size() >> 8)) + char(name.size()) + name;
  std::string ext = std::string("\x00\x00", 2) + char(list.size() >> 8) + char(list.size()) + list;
  b += std::string(1, char(ext.size() >> 8)) + char(ext.size()) + ext;
  return tls_record(1, b);
}

TEST(Tls, ServerNameAndVersionAtEverySplit) {
  const std::string ch = client_hello("www.example.org");
  std::string sh_body = "\x03\x03" + std::string(32, 's');
  sh_body += '\0';
  sh_body += std::string("\x13\x01\x00", 3);
  sh_body += std::string("\x00\x06\x00\x2b\x00\x02\x03\x04", 8);  // supported_versions: TLS 1.3
  const std::string sh = tls_record(2, sh_body);
  for (size_t k = 0; k <= ch.size(); ++k) {
    TlsConn c;
    c.feed(0, reinterpret_cast<const uint8_t*>(ch.data()), k);
    c.feed(0, reinterpret_cast<const uint8_t*>(ch.data()) + k, ch.size() - k);
    c.feed(1, reinterpret_cast<const uint8_t*>(sh.data()), sh.size());
    ASSERT_TRUE(c.tx().client_hello) << "split at " << k;
    EXPECT_EQ(c.tx().sni, "www.example.org") << "split at " << k;
    EXPECT_TRUE(c.tx().server_hello);
    EXPECT_EQ(c.tx().server_version, 0x0304);
    EXPECT_STREQ(tls_version_name(c.tx().server_version), "TLS 1.3");
  }
  // The TLS 1.3 drafts' ServerHellos (Suricata's TLSDecodeHSHelloVersion and the
  // SSL_AL_FLAG_LOG_WITHOUT_CERT layout: a version field of 0x7fNN or 0x0304 means no session id
  // and no compression method; before draft 16 the version is Suricata's "draft-<16").
  struct Draft {
    std::string version;
    bool legacy_layout;  // with session id and compression
    const char* name;
  };
  const Draft drafts[] = {{"\x7f\x12", false, "TLS 1.3 draft-18"},
                          {"\x7f\x0e", false, "TLS 1.3 draft-<16"},
                          {"\x03\x04", false, "TLS 1.3 draft-<16"},
                          {"\x03\x03", true, "TLS 1.2"}};
  for (const Draft& dr : drafts) {
    std::string body = dr.version + std::string(32, 's');
    if (dr.legacy_layout) body += '\0';
    body += std::string("\x13\x01", 2);
    if (dr.legacy_layout) body += '\0';
    body += std::string("\x00\x00", 2);  // no extensions
    const std::string msg = tls_record(2, body);
    TlsConn c;
    c.feed(0, reinterpret_cast<const uint8_t*>(ch.data()), ch.size());
    c.feed(1, reinterpret_cast<const uint8_t*>(msg.data()), msg.size());
    ASSERT_TRUE(c.tx().server_hello) << dr.name;
    EXPECT_STREQ(tls_version_name(c.tx().server_version), dr.name);
    EXPECT_EQ(c.tx().ja3s_string.substr(c.tx().ja3s_string.find(',') + 1, 4), "4865") << dr.name;  // the suite read right
  }
  // Application data first: done with the direction, no hello.
  TlsConn d;
  const std::string app = std::string("\x17\x03\x03\x00\x02zz", 7);
  EXPECT_EQ(d.feed(0, reinterpret_cast<const uint8_t*>(app.data()), app.size()), 1);
  EXPECT_FALSE(d.tx().client_hello);
}

// A certificate made here (OpenSSL: key, names, serial, validity, self-signed by an issuer name of
// its own), sent in a TLS 1.2 server flight (ServerHello, Certificate with a chain of two,
// ServerHelloDone) cut at every byte: the first certificate's fields equal what it was made with
// (names in Suricata's "C=.., O=.., CN=.." form, the serial's content octets, SHA-1 of the DER).
std::string make_cert(const unsigned char* serial, int serial_len, const char* cn, const char* issuer_cn) {
  EVP_PKEY* key = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
  X509* x = X509_new();
  X509_set_version(x, 2);
  ASN1_INTEGER* sn = ASN1_INTEGER_new();
  BIGNUM* bn = BN_bin2bn(serial, serial_len, nullptr);
  BN_to_ASN1_INTEGER(bn, sn);
  X509_set_serialNumber(x, sn);
  ASN1_TIME_set(X509_getm_notBefore(x), 1700000000);
  ASN1_TIME_set(X509_getm_notAfter(x), 1800000000);
  X509_NAME* subj = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(subj, "C", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("US"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(subj, "O", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("Example Org"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(subj, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn), -1, -1, 0);
  X509_NAME* iss = X509_get_issuer_name(x);
  X509_NAME_add_entry_by_txt(iss, "C", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("DE"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(iss, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(issuer_cn), -1, -1, 0);
  X509_set_pubkey(x, key);
  X509_sign(x, key, EVP_sha256());
  unsigned char* der = nullptr;
  const int n = i2d_X509(x, &der);
  std::string out(reinterpret_cast<const char*>(der), size_t(n));
  OPENSSL_free(der);
  BN_free(bn);
  ASN1_INTEGER_free(sn);
  X509_free(x);
  EVP_PKEY_free(key);
  return out;
}

TEST(Tls, ServerCertificateAtEverySplit) {
  const unsigned char serial[] = {0x80, 0x01, 0xab};  // high bit set: DER puts a 00 before it
  const std::string cert = make_cert(serial, 3, "www.example.org", "Example CA");
  const unsigned char serial2[] = {0x05};
  const std::string ca = make_cert(serial2, 1, "Example CA", "Example Root");
  std::string sh_body = "\x03\x03" + std::string(32, 's');
  sh_body += '\0';
  sh_body += std::string("\xc0\x2f\x00", 3);  // a TLS 1.2 suite, no extensions
  const auto u24 = [](size_t n) { return std::string{char(n >> 16), char(n >> 8), char(n)}; };
  const std::string chain = u24(cert.size()) + cert + u24(ca.size()) + ca;
  const std::string cert_msg = u24(chain.size()) + chain;
  // One record holding ServerHello; the Certificate message over two records; ServerHelloDone.
  std::string flight = tls_record(2, sh_body);
  const std::string whole = tls_record(11, cert_msg);  // header + message, split across records below
  const std::string msg = whole.substr(5);
  const size_t half = msg.size() / 2;
  for (const std::string& part : {msg.substr(0, half), msg.substr(half)})
    flight += std::string("\x16\x03\x03", 3) + char(part.size() >> 8) + char(part.size()) + part;
  flight += tls_record(14, "");
  unsigned char sha[EVP_MAX_MD_SIZE];
  unsigned int sha_len = 0;
  EVP_Digest(cert.data(), cert.size(), sha, &sha_len, EVP_sha1(), nullptr);
  std::string fp;
  for (unsigned i = 0; i < sha_len; ++i) {
    char b[4];
    std::snprintf(b, sizeof b, "%s%02x", i ? ":" : "", sha[i]);
    fp += b;
  }
  const std::string ch = client_hello("www.example.org");
  for (size_t k = 0; k <= flight.size(); ++k) {
    uint64_t undecoded = 0;
    TlsConn c(&undecoded);
    c.feed(0, reinterpret_cast<const uint8_t*>(ch.data()), ch.size());
    c.feed(1, reinterpret_cast<const uint8_t*>(flight.data()), k);
    c.feed(1, reinterpret_cast<const uint8_t*>(flight.data()) + k, flight.size() - k);
    const TlsTx& t = c.tx();
    const TlsCert& sc = t.cert[1];
    ASSERT_TRUE(sc.present) << "split at " << k;
    ASSERT_TRUE(sc.decoded);
    EXPECT_TRUE(t.handshake_done);
    EXPECT_FALSE(t.cert[0].present);
    EXPECT_EQ(t.server_version, 0x0303);
    ASSERT_EQ(sc.chain.size(), 2u);
    EXPECT_EQ(sc.chain[0], cert);
    EXPECT_EQ(sc.chain[1], ca);
    EXPECT_EQ(sc.subject, "C=US, O=Example Org, CN=www.example.org");
    EXPECT_EQ(sc.issuer, "C=DE, CN=Example CA");
    EXPECT_EQ(sc.serial, "00:80:01:AB");
    EXPECT_EQ(sc.fingerprint, fp);
    EXPECT_EQ(sc.not_before, 1700000000);
    EXPECT_EQ(sc.not_after, 1800000000);
    EXPECT_EQ(undecoded, 0u);
  }
  // A certificate that is not DER: kept as bytes, counted, no fields.
  const std::string junk = "not a certificate";
  const std::string bad_chain = u24(junk.size()) + junk;
  const std::string bad = tls_record(2, sh_body) + tls_record(11, u24(bad_chain.size()) + bad_chain);
  uint64_t undecoded = 0;
  TlsConn d(&undecoded);
  d.feed(1, reinterpret_cast<const uint8_t*>(bad.data()), bad.size());
  EXPECT_TRUE(d.tx().cert[1].present);
  EXPECT_FALSE(d.tx().cert[1].decoded);
  EXPECT_EQ(d.tx().cert[1].chain.at(0), junk);
  EXPECT_EQ(undecoded, 1u);
  EXPECT_TRUE(d.tx().handshake_done);
}

// Mutual TLS: the server asks for a certificate (CertificateRequest); the handshake is done when
// the client's arrives, not at the server's, and each side's certificate is its own.
TEST(Tls, ClientCertificateWhenAskedAtEverySplit) {
  const unsigned char s1[] = {0x11};
  const unsigned char s2[] = {0x22, 0x33};
  const std::string server_cert = make_cert(s1, 1, "server.example.org", "Server CA");
  const std::string client_cert = make_cert(s2, 2, "client-7", "Client CA");
  const auto u24 = [](size_t n) { return std::string{char(n >> 16), char(n >> 8), char(n)}; };
  const auto cert_msg = [&](const std::string& der) {
    const std::string chain = der.empty() ? "" : u24(der.size()) + der;
    return u24(chain.size()) + chain;
  };
  std::string sh_body = "\x03\x03" + std::string(32, 's');
  sh_body += '\0';
  sh_body += std::string("\xc0\x2f\x00", 3);
  const std::string server_flight = tls_record(2, sh_body) + tls_record(11, cert_msg(server_cert)) +
                                    tls_record(13, std::string("\x01\x01\x00\x00", 4)) + tls_record(14, "");
  const std::string ccs("\x14\x03\x03\x00\x01\x01", 6);
  const std::string ch = client_hello("server.example.org");
  for (const bool with_cert : {true, false}) {
    const std::string second = tls_record(11, cert_msg(with_cert ? client_cert : "")) +
                               tls_record(16, std::string("\x00\x02\xab\xcd", 4)) + ccs;
    for (size_t k = 0; k <= second.size(); ++k) {
      TlsConn c;
      c.feed(0, reinterpret_cast<const uint8_t*>(ch.data()), ch.size());
      c.feed(1, reinterpret_cast<const uint8_t*>(server_flight.data()), server_flight.size());
      const TlsTx& t = c.tx();
      ASSERT_TRUE(t.cert_requested);
      ASSERT_TRUE(t.cert[1].decoded);
      EXPECT_EQ(t.cert[1].subject, "C=US, O=Example Org, CN=server.example.org");
      EXPECT_FALSE(t.handshake_done) << "the client's certificate is awaited";
      c.feed(0, reinterpret_cast<const uint8_t*>(second.data()), k);
      c.feed(0, reinterpret_cast<const uint8_t*>(second.data()) + k, second.size() - k);
      ASSERT_TRUE(t.handshake_done) << "split at " << k;
      ASSERT_TRUE(t.cert[0].present);
      EXPECT_EQ(t.cert[0].decoded, with_cert);
      if (with_cert) {
        EXPECT_EQ(t.cert[0].subject, "C=US, O=Example Org, CN=client-7");
        EXPECT_EQ(t.cert[0].issuer, "C=DE, CN=Client CA");
        EXPECT_EQ(t.cert[0].serial, "22:33");
        ASSERT_EQ(t.cert[0].chain.size(), 1u);
        EXPECT_EQ(t.cert[0].chain[0], client_cert);
      }
      EXPECT_EQ(t.cert[1].chain.at(0), server_cert);
      EXPECT_FALSE(c.done(0) && c.done(1));
    }
  }
}

// An HTTP CONNECT tunnel through the application layer: after the proxy's 200 the flow's protocol
// is found again by the tunnel's first bytes (Suricata's protocol change): TLS (the client's hello
// after the 200, the server's after it), SSH (the server's banner in the 200's chunk) and plain
// HTTP (a new HTTP parser's transaction 0). The server's first chunk is cut at every byte. The
// CONNECT's own transaction is complete; proto_orig says http.
TEST(AppLayerTunnel, ConnectThenAnotherProtocolAtEverySplit) {
  const std::string connect = "CONNECT www.example.org:443 HTTP/1.1\r\nHost: www.example.org:443\r\n\r\n";
  const std::string ok = "HTTP/1.1 200 Connection established\r\nProxy-Agent: p/1\r\n\r\n";
  std::string sh_body = "\x03\x03" + std::string(32, 's');
  sh_body += '\0';
  sh_body += std::string("\xc0\x2f\x00", 3);
  struct Case {
    const char* name;
    std::string server_first;  // after the 200, in its chunk
    std::string client, server_then;
    const char* proto;
  };
  const Case cases[] = {
      {"tls", "", client_hello("www.example.org"), tls_record(2, sh_body), "tls"},
      {"ssh", "SSH-2.0-srv_1.0\r\n", "SSH-2.0-cli_2.0\r\n", "", "ssh"},
      {"http", "", "GET /in HTTP/1.1\r\nHost: inner\r\n\r\n", "HTTP/1.1 204 No Content\r\n\r\n", "http"},
  };
  FlowKey k{};
  k.family = 4;
  k.proto = 6;
  k.port[0] = 40000;
  k.port[1] = 3128;
  for (const Case& c : cases) {
    const std::string server = ok + c.server_first + c.server_then;
    const size_t first = ok.size() + c.server_first.size();
    const std::string client = connect + c.client;
    for (size_t cut = 1; cut <= first; ++cut) {
      SCOPED_TRACE(std::string(c.name) + " cut " + std::to_string(cut));
      AppLayer app;
      std::vector<StreamChunk> chunks;
      std::vector<uint8_t> bytes;
      test::add_chunk(chunks, bytes, k, 0, client, 0, connect.size(), 0, 9);
      test::add_chunk(chunks, bytes, k, 1, server, 0, cut, 1, 9);
      if (cut < first) test::add_chunk(chunks, bytes, k, 1, server, cut, first, 2, 9);
      test::add_chunk(chunks, bytes, k, 0, client, connect.size(), client.size(), 3, 9);
      if (first < server.size()) test::add_chunk(chunks, bytes, k, 1, server, first, server.size(), 4, 9);
      std::vector<AppUpdate> out;
      app.process(chunks, bytes, out);
      ASSERT_STREQ(app_proto_name(app.proto(9)), c.proto);
      EXPECT_EQ(app.proto_orig(9), AppProto::http);
      EXPECT_EQ(app.stats().connect_tunnels, 1u);
      bool connect_done = false, inner = false;
      for (const AppUpdate& u : out) {
        if (const HttpTx* t = u.http(); t && t->method == "CONNECT") connect_done = connect_done || (t->resp_done && u.complete);
        if (const HttpTx* t = u.http(); t && t->method == "GET")
          inner = inner || (t->id == 0 && t->uri_raw == "/in" && t->stat_code == "204" && u.complete);
        if (const TlsTx* t = u.tls(); t && t->sni == "www.example.org" && t->server_hello) inner = true;
        if (const SshTx* t = u.ssh(); t && t->software[0] == "cli_2.0" && t->software[1] == "srv_1.0") inner = true;
      }
      EXPECT_TRUE(connect_done);
      EXPECT_TRUE(inner);
    }
  }
}

}  // namespace
}  // namespace gaspp
