// SIP (applayer/sip.hpp): messages parsed as Suricata's SIP parser reads them — start lines,
// header fields (compact names, folded lines, repeated names), the characters RFC 3261 allows —
// checked against the expected parts written out per case; the TCP framing (Content-Length
// bodies, several messages a piece) cut at every byte and in 1-, 7- and 65536-byte pieces, against
// the same messages fed whole; detection by Suricata's patterns; limits.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "applayer/sip.hpp"

using namespace gaspp;

namespace {

struct ParseCase {
  const char* name;
  std::string msg;
  bool ok;
  bool request;
  std::string a, b, c;  // method, uri, version (request) or version, code, reason (response)
  std::string line;
  std::vector<std::pair<std::string, std::string>> headers;
  size_t body;
};

const std::string kReg =
    "REGISTER sip:sip.example.com SIP/2.0\r\n"
    "v: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK1\r\n"
    "Via: SIP/2.0/UDP 192.0.2.9\r\n"
    "f: <sip:alice@example.com>;tag=1\r\n"
    "To:   <sip:alice@example.com>  \r\n"
    "Subject: first\r\n second\r\n"
    "l: 4\r\n\r\nbody";

}  // namespace

TEST(Sip, MessagesParseAsSuricatasParser) {
  const std::vector<ParseCase> cases = {
      {"request with compact, repeated, padded and folded fields", kReg, true, true, "REGISTER", "sip:sip.example.com",
       "SIP/2.0", "REGISTER sip:sip.example.com SIP/2.0",
       {{"Via", "SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK1"},
        {"Via", "SIP/2.0/UDP 192.0.2.9"},
        {"From", "<sip:alice@example.com>;tag=1"},
        {"To", "<sip:alice@example.com>"},
        {"Subject", "first\r\n second"},
        {"Content-Length", "4"}},
       4},
      {"response", "SIP/2.0 401 Unauthorized\r\nCall-ID: x@y\r\n\r\n", true, false, "SIP/2.0", "401", "Unauthorized",
       "SIP/2.0 401 Unauthorized", {{"Call-ID", "x@y"}}, 0},
      {"response with an empty reason", "SIP/2.0 200 \r\n\r\n", true, false, "SIP/2.0", "200", "", "SIP/2.0 200 ", {}, 0},
      {"request-uri with a tel scheme and parameters", "INVITE tel:+1-201-555-0123;phone-context=x SIP/2.0\r\n\r\n", true,
       true, "INVITE", "tel:+1-201-555-0123;phone-context=x", "SIP/2.0", "INVITE tel:+1-201-555-0123;phone-context=x SIP/2.0",
       {}, 0},
      {"request line ends early at a '#' (Suricata's sip_take_line)", "BYE sip:a#b@c SIP/2.0\r\n\r\n", true, true, "BYE",
       "sip:a#b@c", "SIP/2.0", "BYE sip:a", {}, 0},
      {"a value byte outside RFC 3261's classes", "BYE sip:a@b SIP/2.0\r\nFrom: caf\xc3\xa9\r\n\r\n", false, true, "", "", "",
       "", {}, 0},
      {"no space after the method", "BYE\tsip:a@b SIP/2.0\r\n\r\n", false, true, "", "", "", "", {}, 0},
      {"a version that is not SIP's", "BYE sip:a@b HTTP/1.1\r\n\r\n", false, true, "", "", "", "", {}, 0},
      {"bare LF line ends", "BYE sip:a@b SIP/2.0\n\n", false, true, "", "", "", "", {}, 0},
      {"no empty line after the fields", "BYE sip:a@b SIP/2.0\r\nTo: x\r\n", false, true, "", "", "", "", {}, 0},
  };
  for (const ParseCase& c : cases) {
    SCOPED_TRACE(c.name);
    SipTx t;
    bool more = false;
    const size_t head = parse_sip_head(reinterpret_cast<const uint8_t*>(c.msg.data()), c.msg.size(), t, &more);
    ASSERT_EQ(head != 0, c.ok);
    if (!c.ok) continue;
    EXPECT_EQ(t.request, c.request);
    if (c.request) {
      EXPECT_EQ(t.method, c.a);
      EXPECT_EQ(t.uri, c.b);
      EXPECT_EQ(t.version, c.c);
    } else {
      EXPECT_EQ(t.version, c.a);
      EXPECT_EQ(t.code, c.b);
      EXPECT_EQ(t.reason, c.c);
    }
    EXPECT_EQ(t.line, c.line);
    EXPECT_EQ(t.headers, c.headers);
    EXPECT_EQ(c.msg.size() - head, c.body);
  }
  // Lookups: by expanded name, each instance.
  SipTx t;
  bool more;
  ASSERT_NE(parse_sip_head(reinterpret_cast<const uint8_t*>(kReg.data()), kReg.size(), t, &more), 0u);
  ASSERT_NE(t.header("Via", 1), nullptr);
  EXPECT_EQ(*t.header("Via", 1), "SIP/2.0/UDP 192.0.2.9");
  EXPECT_EQ(t.header("Via", 2), nullptr);
  EXPECT_EQ(t.header_count("Via"), 2u);
  EXPECT_EQ(t.header("v"), nullptr) << "compact names are stored expanded";
}

TEST(Sip, ProbeAsSuricatasPatterns) {
  struct Case {
    std::string data;
    int want;
    bool response;
  };
  const std::vector<Case> cases = {
      {"REGISTER sip:x SIP/2.0", 1, false}, {"INVITE", 1, false},  {"SIP/2.0 200 OK", 1, true},
      {"SIP/2", -1, false},                 {"INV", -1, false},    {"OPTIONS sip:x@y SIP/2.0", 1, false},
      {"OPTIONS * HTTP/1.1", 0, false},     {"OPTIONS sI", -1, false}, {"UPDATE tel:+123 SIP/2.0", 1, false},
      {"GET / HTTP/1.1", 0, false},         {"register sip:x", 0, false}, {"     ", 0, false},
      {"", -1, false},
  };
  for (const Case& c : cases) {
    bool response = false;
    EXPECT_EQ(sip_probe(reinterpret_cast<const uint8_t*>(c.data.data()), c.data.size(), &response), c.want) << c.data;
    if (c.want > 0) {
      EXPECT_EQ(response, c.response) << c.data;
    }
  }
}

namespace {

struct Msg {
  bool request;
  std::string first;  // method or code
  size_t body;
};

std::vector<Msg> summary(const SipConn& c) {
  std::vector<Msg> out;
  for (const auto& t : c.txs()) out.push_back({t->request, t->request ? t->method : t->code, t->body_len});
  return out;
}

bool operator==(const Msg& a, const Msg& b) { return a.request == b.request && a.first == b.first && a.body == b.body; }

}  // namespace

// Several messages over TCP, cut at every byte and in fixed pieces: the same transactions as
// the messages fed one by one, bodies by Content-Length.
TEST(Sip, TcpFramingAtEverySplit) {
  const std::string a = "OPTIONS sip:c@example.org SIP/2.0\r\nVia: SIP/2.0/TCP h\r\nContent-Length: 0\r\n\r\n";
  const std::string b = "INVITE sip:c@example.org SIP/2.0\r\nl: 10\r\nc: application/sdp\r\n\r\nv=0\r\ns=x\r\n";
  const std::string c = "BYE sip:c@example.org SIP/2.0\r\nTo: <sip:c@example.org>\r\n\r\n";  // no Content-Length: no body
  const std::string stream = a + b + c;
  const std::vector<Msg> want = {{true, "OPTIONS", 0}, {true, "INVITE", 10}, {true, "BYE", 0}};
  // Each message's frames: its bytes, where it starts in the stream, its frame ids (pdu, line,
  // headers, and body when it has one: 3 or 4 ids a message, from 1), the start line's and the
  // header fields' lengths (the fields without the empty line after them).
  struct Frames {
    const std::string* text;
    uint64_t offset, id;
  };
  const Frames frames[] = {{&a, 0, 1}, {&b, a.size(), 4}, {&c, a.size() + b.size(), 8}};
  const auto check_frames = [&](const SipConn& conn, const std::string& where) {
    ASSERT_EQ(conn.txs().size(), 3u) << where;
    for (size_t i = 0; i < 3; ++i) {
      const SipTx& t = *conn.txs()[i];
      const std::string& m = *frames[i].text;
      EXPECT_EQ(t.raw, m) << where;
      EXPECT_EQ(t.stream_offset, frames[i].offset) << where;
      EXPECT_EQ(t.frame_id, frames[i].id) << where;
      EXPECT_EQ(t.line_len, m.find("\r\n") + 2) << where;
      EXPECT_EQ(t.headers_len, m.find("\r\n\r\n") + 2 - t.line_len) << where;
      size_t off, len;
      ASSERT_TRUE(sip_frame_span(t, 0, off, len));
      EXPECT_EQ(m.substr(off, len), m) << where;
      EXPECT_EQ(sip_frame_span(t, 3, off, len), t.body_len != 0);
      if (t.body_len) {
        EXPECT_EQ(m.substr(off, len), m.substr(m.find("\r\n\r\n") + 4)) << where;
      }
    }
  };
  for (size_t split = 0; split <= stream.size(); ++split) {
    SipStats st;
    SipConn conn(st);
    conn.feed(0, reinterpret_cast<const uint8_t*>(stream.data()), split);
    conn.feed(0, reinterpret_cast<const uint8_t*>(stream.data()) + split, stream.size() - split);
    ASSERT_EQ(summary(conn), want) << "split at " << split;
    EXPECT_EQ(st.invalid, 0u);
    check_frames(conn, "split at " + std::to_string(split));
  }
  for (const size_t piece : {size_t(1), size_t(7), size_t(65536)}) {
    SipStats st;
    SipConn conn(st);
    for (size_t at = 0; at < stream.size(); at += piece)
      conn.feed(0, reinterpret_cast<const uint8_t*>(stream.data()) + at, std::min(piece, stream.size() - at));
    EXPECT_EQ(summary(conn), want) << "pieces of " << piece;
    EXPECT_EQ(st.requests, 3u);
  }
}

TEST(Sip, TcpInvalidStopsTheDirectionUntilAGap) {
  SipStats st;
  SipConn conn(st);
  const std::string bad = "INVITE sip:a@b SIP/2.0\r\nFrom: \x01\r\n\r\n";
  const std::string good = "ACK sip:a@b SIP/2.0\r\n\r\n";
  conn.feed(0, reinterpret_cast<const uint8_t*>(bad.data()), bad.size());
  conn.feed(0, reinterpret_cast<const uint8_t*>(good.data()), good.size());
  EXPECT_EQ(st.invalid, 1u);
  EXPECT_TRUE(conn.txs().empty()) << "nothing after the message that did not parse";
  conn.feed(0, reinterpret_cast<const uint8_t*>(good.data()) + 3, good.size() - 3, true);  // a gap, then not a start
  EXPECT_TRUE(conn.txs().empty());
  conn.feed(0, reinterpret_cast<const uint8_t*>(good.data()), good.size());  // a message's start: resumed
  ASSERT_EQ(conn.txs().size(), 1u);
  EXPECT_EQ(conn.txs()[0]->method, "ACK");
  EXPECT_EQ(st.gaps, 1u);
  // After a gap the stream offset is not known.
  EXPECT_EQ(conn.txs()[0]->stream_offset, kSipNoOffset);
}

// As Suricata's parser: to the server a request only, to the client a response only; a message of
// the other kind is invalid (UDP: that datagram; TCP: the direction stops until a gap).
TEST(Sip, EachDirectionParsesItsOwnKind) {
  const std::string req = "REGISTER sip:x SIP/2.0\r\n\r\n", resp = "SIP/2.0 200 OK\r\n\r\n";
  struct Case {
    int dir;
    const std::string* msg;
    bool ok;
  };
  for (const Case& c : {Case{0, &req, true}, Case{1, &resp, true}, Case{1, &req, false}, Case{0, &resp, false}}) {
    for (const bool udp : {true, false}) {
      SipStats st;
      SipConn conn(st);
      const auto* d = reinterpret_cast<const uint8_t*>(c.msg->data());
      if (udp) conn.feed_datagram(c.dir, d, c.msg->size());
      else conn.feed(c.dir, d, c.msg->size());
      EXPECT_EQ(conn.txs().size(), c.ok ? 1u : 0u) << *c.msg << " dir " << c.dir << (udp ? " udp" : " tcp");
      EXPECT_EQ(st.invalid, c.ok ? 0u : 1u);
      if (c.ok) {
        EXPECT_EQ(conn.txs()[0]->udp, udp);
        EXPECT_EQ(conn.txs()[0]->raw, *c.msg);
      }
    }
  }
  // A datagram's body is the rest of it, its frames numbered on from the direction's last.
  SipStats st;
  SipConn conn(st);
  const std::string inv = "INVITE sip:x SIP/2.0\r\nl: 3\r\n\r\nv=0";
  conn.feed_datagram(0, reinterpret_cast<const uint8_t*>(req.data()), req.size());
  conn.feed_datagram(0, reinterpret_cast<const uint8_t*>(inv.data()), inv.size());
  ASSERT_EQ(conn.txs().size(), 2u);
  EXPECT_EQ(conn.txs()[0]->frame_id, 1u);
  EXPECT_EQ(conn.txs()[1]->frame_id, 4u);
  size_t off, len;
  ASSERT_TRUE(sip_frame_span(*conn.txs()[1], 3, off, len));
  EXPECT_EQ(inv.substr(off, len), "v=0");
  ASSERT_TRUE(sip_frame_span(*conn.txs()[1], 2, off, len));
  EXPECT_EQ(inv.substr(off, len), "l: 3\r\n");
}

TEST(Sip, LimitsAreCounted) {
  // A body over the limit: the message is handed out, its body passed over, the next one read.
  SipStats st;
  SipConn conn(st);
  const size_t big = kSipMaxBodyBytes + 10;
  const std::string head = "MESSAGE sip:a@b SIP/2.0\r\nContent-Length: " + std::to_string(big) + "\r\n\r\n";
  conn.feed(0, reinterpret_cast<const uint8_t*>(head.data()), head.size());
  const std::string chunk(64 * 1024, 'x');
  size_t sent = 0;
  while (sent < big) {
    const size_t n = std::min(chunk.size(), big - sent);
    conn.feed(0, reinterpret_cast<const uint8_t*>(chunk.data()), n);
    sent += n;
  }
  const std::string next = "BYE sip:a@b SIP/2.0\r\n\r\n";
  conn.feed(0, reinterpret_cast<const uint8_t*>(next.data()), next.size());
  ASSERT_EQ(conn.txs().size(), 2u);
  EXPECT_EQ(conn.txs()[0]->body_len, big);
  EXPECT_EQ(conn.txs()[1]->method, "BYE");
  EXPECT_EQ(st.too_long, 1u);
  // A header block that never ends: given up at the limit, counted.
  SipStats st2;
  SipConn conn2(st2);
  const std::string start = "INVITE sip:a@b SIP/2.0\r\n";
  conn2.feed(0, reinterpret_cast<const uint8_t*>(start.data()), start.size());
  const std::string field = "X-Pad: " + std::string(1000, 'p') + "\r\n";
  for (int k = 0; k < 80; ++k) conn2.feed(0, reinterpret_cast<const uint8_t*>(field.data()), field.size());
  EXPECT_TRUE(conn2.txs().empty());
  EXPECT_EQ(st2.too_long, 1u);
  // At most max_txs transactions wait: the oldest go, counted.
  SipStats st3;
  SipConn conn3(st3, 4);
  const std::string m = "SIP/2.0 100 Trying\r\n\r\n";
  for (int k = 0; k < 6; ++k) conn3.feed_datagram(1, reinterpret_cast<const uint8_t*>(m.data()), m.size());
  EXPECT_EQ(conn3.txs().size(), 4u);
  EXPECT_EQ(st3.txs_dropped, 2u);
  EXPECT_EQ(conn3.txs().front()->id, 2u);
}

namespace {

struct SdpCase {
  const char* name;
  std::string body;
  bool ok;
  std::string origin, session_name, connection;
  size_t times, attributes, media;
  std::string first_media;
};

}  // namespace

// SDP bodies read with Suricata's strict grammar (applayer/sdp.hpp): what fails the whole SDP (up
// to the first t=), what ends it early (after), and the values as Suricata stores them.
TEST(Sdp, BodiesParseAsSuricatasParser) {
  const std::string head = "v=0\r\no=alice  2890844526 2890844527 IN IP4 10.47.16.5\r\ns=SIP call\r\n";
  const std::vector<SdpCase> cases = {
      {"session with media", head + "c=IN IP4 224.2.17.12/127\r\nt=0 0\r\na=sendrecv\r\nm=audio 49170 RTP/AVP 0 8\r\na=rtpmap:0 PCMU/8000\r\n",
       true, "alice 2890844526 2890844527 IN IP4 10.47.16.5", "SIP call", "IN IP4 224.2.17.12/127", 1, 1, 1,
       "audio 49170 RTP/AVP 0 8"},
      {"LF line endings, IPv6 written back normalised", "v=0\no=- 1 2 IN IP6 x\ns=\nc=IN IP6 FF15:0:0::101/3\nt=1 2\n", true,
       "- 1 2 IN IP6 x", "", "IN IP6 ff15::101/3", 1, 0, 0, ""},
      {"s=- is not Suricata's text: no SDP", "v=0\r\no=a 1 2 IN IP4 1.2.3.4\r\ns=-\r\nt=0 0\r\n", false, "", "", "", 0, 0, 0, ""},
      {"v= other than 0", "v=1\r\no=a 1 2 IN IP4 1.2.3.4\r\ns=x\r\nt=0 0\r\n", false, "", "", "", 0, 0, 0, ""},
      {"an IPv4 multicast address without its TTL fails before t=",
       head + "c=IN IP4 224.2.17.12\r\nt=0 0\r\n", false, "", "", "", 0, 0, 0, ""},
      {"no t=", head + "a=x\r\n", false, "", "", "", 0, 0, 0, ""},
      {"an attribute name with a dash ends the SDP there", head + "t=0 0\r\na=sendonly\r\na=rtcp-mux\r\na=x\r\n", true,
       "alice 2890844526 2890844527 IN IP4 10.47.16.5", "SIP call", "", 1, 1, 0, ""},
      {"an m= of another proto ends it", head + "t=0 0\r\nm=audio 1 RTP/AVPF 0\r\n", true,
       "alice 2890844526 2890844527 IN IP4 10.47.16.5", "SIP call", "", 1, 0, 0, ""},
      {"two time descriptions, the port's leading zeros dropped", head + "t=1 2\r\nr=7d 1h 0 25h\r\nt=3 4\r\nm=video 0049 udp 31\r\n",
       true, "alice 2890844526 2890844527 IN IP4 10.47.16.5", "SIP call", "", 2, 0, 1, "video 49 udp 31"},
      {"a last line without its end is no line", head + "t=0 0", false, "", "", "", 0, 0, 0, ""},
  };
  for (const SdpCase& c : cases) {
    SdpMessage m;
    const bool ok = parse_sdp(reinterpret_cast<const uint8_t*>(c.body.data()), c.body.size(), m);
    EXPECT_EQ(ok, c.ok) << c.name;
    if (!ok || !c.ok) continue;
    EXPECT_EQ(m.origin, c.origin) << c.name;
    EXPECT_EQ(m.session_name, c.session_name) << c.name;
    EXPECT_EQ(m.connection, c.connection) << c.name;
    EXPECT_EQ(m.times.size(), c.times) << c.name;
    EXPECT_EQ(m.attributes.size(), c.attributes) << c.name;
    ASSERT_EQ(m.media.size(), c.media) << c.name;
    if (c.media) {
      EXPECT_EQ(m.media[0].media, c.first_media) << c.name;
    }
  }
  // A SIP message's body is read as SDP.
  SipStats st;
  SipConn conn(st);
  const std::string body = head + "t=0 0\r\n";
  const std::string msg = "INVITE sip:b@c SIP/2.0\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  conn.feed_datagram(0, reinterpret_cast<const uint8_t*>(msg.data()), msg.size());
  ASSERT_EQ(conn.txs().size(), 1u);
  EXPECT_TRUE(conn.txs()[0]->has_sdp);
  EXPECT_EQ(conn.txs()[0]->sdp.times[0].time, "0 0");
  EXPECT_EQ(st.sdp, 1u);
}
