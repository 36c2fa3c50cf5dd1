// The DNS parser (applayer/dns.hpp): names against a reference decoder written here another way
// (recursive, with a visited set), over generated messages with compression pointers; Suricata's
// limits (loops, 255 labels, 1025 characters); header validity; record data; TCP framing cut at
// every byte and in 1-, 7- and 65536-byte pieces.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>
#include <vector>

#include "applayer/dns.hpp"

namespace gaspp {
namespace {

using Bytes = std::vector<uint8_t>;

void put16(Bytes& b, uint16_t v) {
  b.push_back(uint8_t(v >> 8));
  b.push_back(uint8_t(v));
}
void put32(Bytes& b, uint32_t v) {
  put16(b, uint16_t(v >> 16));
  put16(b, uint16_t(v));
}
void label_name(Bytes& b, const std::string& dotted) {
  size_t at = 0;
  while (at < dotted.size()) {
    size_t e = dotted.find('.', at);
    if (e == std::string::npos) e = dotted.size();
    b.push_back(uint8_t(e - at));
    b.insert(b.end(), dotted.begin() + long(at), dotted.begin() + long(e));
    at = e + 1;
  }
  b.push_back(0);
}
Bytes header(uint16_t id, uint16_t flags, uint16_t qd, uint16_t an, uint16_t ns = 0, uint16_t ar = 0) {
  Bytes b;
  put16(b, id);
  put16(b, flags);
  put16(b, qd);
  put16(b, an);
  put16(b, ns);
  put16(b, ar);
  return b;
}

// The reference: a name at off, following pointers recursively; a pointer to a place already
// visited is a loop. Returns false on a loop or a read past the end (names here stay short).
bool ref_name(const Bytes& m, size_t off, std::string& out, std::set<size_t>& seen) {
  while (true) {
    if (off >= m.size()) return false;
    const uint8_t len = m[off];
    if (len == 0) return true;
    if ((len & 0xc0) == 0xc0) {
      if (off + 1 >= m.size()) return false;
      const size_t to = size_t((len & 0x3f) << 8 | m[off + 1]);
      if (!seen.insert(to).second) return false;
      return ref_name(m, to, out, seen);
    }
    if (off + 1 + len > m.size()) return false;
    if (!out.empty()) out += '.';
    out.append(m.begin() + long(off) + 1, m.begin() + long(off) + 1 + len);
    off += 1 + len;
  }
}

// Random messages: a response whose questions and answers reuse earlier names' suffixes through
// pointers, as servers compress them; the parser's names must equal the reference's.
TEST(Dns, CompressedNamesMatchReferenceDecoder) {
  std::mt19937 rng(7);
  const char* const kLabels[] = {"www", "example", "com", "a", "mail", "x-1", "cdn", "org", "long-label-here", "b"};
  for (int round = 0; round < 500; ++round) {
    const int qd = 1 + int(rng() % 3), an = int(rng() % 5);
    Bytes m = header(uint16_t(round), 0x8180, uint16_t(qd), uint16_t(an));
    std::vector<size_t> name_offs;  // where each name written so far starts, label by label
    std::vector<size_t> starts;     // the start of every name field written (for the reference)
    const auto write_name = [&]() {
      starts.push_back(m.size());
      // Pointers go to labels of names written before this one (a pointer into the name being
      // written could make a loop).
      std::vector<size_t> own;
      const int labels = 1 + int(rng() % 4);
      for (int l = 0; l < labels; ++l) {
        if (!name_offs.empty() && rng() % 3 == 0) {  // the rest of the name: a pointer back
          put16(m, uint16_t(0xc000 | name_offs[rng() % name_offs.size()]));
          name_offs.insert(name_offs.end(), own.begin(), own.end());
          return;
        }
        own.push_back(m.size());
        const std::string lab = kLabels[rng() % std::size(kLabels)];
        m.push_back(uint8_t(lab.size()));
        m.insert(m.end(), lab.begin(), lab.end());
      }
      m.push_back(0);
      name_offs.insert(name_offs.end(), own.begin(), own.end());
    };
    for (int q = 0; q < qd; ++q) {
      write_name();
      put16(m, 1);
      put16(m, 1);
    }
    std::vector<size_t> cname_starts;
    for (int a = 0; a < an; ++a) {
      write_name();
      put16(m, 5);  // CNAME: the data is a name too
      put16(m, 1);
      put32(m, 300);
      const size_t len_at = m.size();
      put16(m, 0);
      cname_starts.push_back(m.size());
      write_name();
      starts.pop_back();
      const size_t len = m.size() - len_at - 2;
      m[len_at] = uint8_t(len >> 8);
      m[len_at + 1] = uint8_t(len);
    }
    DnsMessage msg;
    ASSERT_EQ(parse_dns_message(m.data(), m.size(), msg), DnsParse::ok) << "round " << round;
    ASSERT_EQ(msg.queries.size(), size_t(qd));
    ASSERT_EQ(msg.answers.size(), size_t(an));
    size_t k = 0;
    for (const DnsQuery& q : msg.queries) {
      std::string want;
      std::set<size_t> seen;
      ASSERT_TRUE(ref_name(m, starts[k++], want, seen));
      EXPECT_EQ(q.name, want) << "round " << round;
    }
    for (size_t a = 0; a < msg.answers.size(); ++a) {
      std::string owner, target;
      std::set<size_t> s1, s2;
      ASSERT_TRUE(ref_name(m, starts[k++], owner, s1));
      ASSERT_TRUE(ref_name(m, cname_starts[a], target, s2));
      EXPECT_EQ(msg.answers[a].name, owner);
      EXPECT_EQ(msg.answers[a].kind, DnsRecord::kName);
      EXPECT_EQ(msg.answers[a].data, target);
    }
  }
}

struct NameCase {
  const char* what;
  Bytes name;       // the question's name field as written after the header (pointers may go back)
  Bytes prefix;     // bytes placed between the header and the question (pointer targets)
  DnsParse result;
  const char* want;  // the name, when ok
  uint8_t flags;     // DnsNameFlags
};

TEST(Dns, NameLimitsAsSuricata) {
  // A name of 300 labels of 9 characters ("abcdefgh."): past 1025 characters, and past 255 labels.
  Bytes long_name;
  for (int i = 0; i < 300; ++i) {
    long_name.push_back(8);
    for (char c : std::string("abcdefgh")) long_name.push_back(uint8_t(c));
  }
  long_name.push_back(0);
  // Two pointers to each other, reached through a pointer: a loop stopped at 255 hops.
  // prefix at offset 12: [c0 0e] [c0 0c] — 12 points to 14, 14 to 12.
  const std::vector<NameCase> cases = {
      {"plain", {3, 'w', 'w', 'w', 3, 'c', 'o', 'm', 0}, {}, DnsParse::ok, "www.com", 0},
      {"root", {0}, {}, DnsParse::ok, "", 0},
      {"pointer to a prefix name", {1, 'a', 0xc0, 12}, {3, 'x', 'y', 'z', 0}, DnsParse::ok, "a.xyz", 0},
      {"pointer to itself first", {0xc0, 12}, {}, DnsParse::malformed, "", 0},
      {"loop after a pointer", {1, 'a', 0xc0, 12}, {0xc0, 14, 0xc0, 12}, DnsParse::ok, "a",
       kDnsNameLabelLimit | kDnsNameTruncated},
      {"pointer past the message", {0xc0, 0xff}, {}, DnsParse::malformed, "", 0},
      {"label type 01", {0x41, 'a', 0}, {}, DnsParse::malformed, "", 0},
      {"label past the end", {9, 'a', 'b'}, {}, DnsParse::malformed, "", 0},
  };
  for (const NameCase& c : cases) {
    Bytes m = header(1, 0x0100, 1, 0);
    if (!c.prefix.empty()) {
      // Pointer targets must sit somewhere a parser reads past: the prefix is the data of a NULL
      // answer (offset prefix_at), and the case's name is the owner of a second answer. The
      // cases' pointers name offsets 12 and up as if the prefix stood at 12: shifted here.
      Bytes r = header(1, 0x8180, 0, 2);
      r.push_back(0);  // root owner
      put16(r, 10);    // NULL
      put16(r, 1);
      put32(r, 0);
      put16(r, uint16_t(c.prefix.size()));
      const size_t prefix_at = r.size();
      const Bytes& body = c.prefix;
      r.insert(r.end(), body.begin(), body.end());
      Bytes name = c.name;
      for (size_t i = 0; i + 1 < name.size(); ++i)
        if ((name[i] & 0xc0) == 0xc0 && name[i + 1] != 0xff) {
          name[i + 1] = uint8_t(name[i + 1] - 12 + prefix_at);
          ++i;
        } else if ((name[i] & 0xc0) == 0) {
          i += name[i];
        }
      Bytes pre = body;
      for (size_t i = 0; i + 1 < pre.size(); i += 2)
        if ((pre[i] & 0xc0) == 0xc0) pre[i + 1] = uint8_t(pre[i + 1] - 12 + prefix_at);
      std::copy(pre.begin(), pre.end(), r.begin() + long(prefix_at));
      r.insert(r.end(), name.begin(), name.end());
      put16(r, 1);
      put16(r, 1);
      put32(r, 60);
      put16(r, 4);
      for (int i = 0; i < 4; ++i) r.push_back(uint8_t(i));
      DnsMessage msg;
      const DnsParse got = parse_dns_message(r.data(), r.size(), msg);
      EXPECT_EQ(got, c.result) << c.what;
      if (got == DnsParse::ok) {
        ASSERT_EQ(msg.answers.size(), 2u) << c.what;
        EXPECT_EQ(msg.answers[1].name, c.want) << c.what;
        EXPECT_EQ(msg.name_flags, c.flags) << c.what;
      }
      continue;
    }
    m.insert(m.end(), c.name.begin(), c.name.end());
    put16(m, 1);
    put16(m, 1);
    DnsMessage msg;
    const DnsParse got = parse_dns_message(m.data(), m.size(), msg);
    EXPECT_EQ(got, c.result) << c.what;
    if (got == DnsParse::ok) {
      EXPECT_EQ(msg.queries.at(0).name, c.want) << c.what;
      EXPECT_EQ(msg.name_flags, c.flags) << c.what;
    }
  }
  // 300 labels without a pointer: past 255 labels before any pointer is an error.
  Bytes m = header(1, 0x0100, 1, 0);
  m.insert(m.end(), long_name.begin(), long_name.end());
  put16(m, 1);
  put16(m, 1);
  DnsMessage msg;
  EXPECT_EQ(parse_dns_message(m.data(), m.size(), msg), DnsParse::malformed);
  // 120 labels of 9 characters (1079 characters, under 255 labels): cut at 1025, flagged.
  Bytes mid = header(1, 0x0100, 1, 0);
  for (int i = 0; i < 120; ++i) {
    mid.push_back(8);
    for (char ch : std::string("abcdefgh")) mid.push_back(uint8_t(ch));
  }
  mid.push_back(0);
  put16(mid, 1);
  put16(mid, 1);
  ASSERT_EQ(parse_dns_message(mid.data(), mid.size(), msg), DnsParse::ok);
  EXPECT_EQ(msg.queries[0].name.size(), kDnsMaxName);
  EXPECT_TRUE(msg.queries[0].truncated);
}

TEST(Dns, HeaderValidityAsSuricatasProbe) {
  struct Case {
    const char* what;
    Bytes msg;
    int probe;  // dns_probe's answer
    DnsParse parse;
  };
  Bytes q = header(7, 0x0100, 1, 0);
  label_name(q, "example.org");
  put16(q, 1);
  put16(q, 1);
  Bytes no_questions = header(7, 0x0100, 0, 0);
  Bytes formerr = header(7, 0x8181, 0, 0);  // a server's FORMERR: the header alone
  Bytes formerr_extra = formerr;
  formerr_extra.push_back(0);
  Bytes too_many = header(7, 0x0100, 1, 40);  // 41 records need at least 82 bytes
  label_name(too_many, "a.b");
  put16(too_many, 1);
  put16(too_many, 1);
  Bytes cut = q;
  cut.resize(cut.size() - 3);
  const std::vector<Case> cases = {
      {"query", q, 1, DnsParse::ok},
      {"request without a question", no_questions, 0, DnsParse::header_invalid},
      {"response with no record", formerr, 1, DnsParse::ok},
      {"no record but more bytes", formerr_extra, 0, DnsParse::header_invalid},
      {"counts past the message", too_many, 0, DnsParse::header_invalid},
      {"question cut short", cut, 0, DnsParse::malformed},
  };
  for (const Case& c : cases) {
    bool request = false;
    EXPECT_EQ(dns_probe(c.msg.data(), c.msg.size(), c.msg.size(), &request), c.probe) << c.what;
    DnsMessage m;
    EXPECT_EQ(parse_dns_message(c.msg.data(), c.msg.size(), m), c.parse) << c.what;
  }
  // Over TCP: the header of a longer message decides while the rest has not come.
  Bytes tcp;
  put16(tcp, uint16_t(q.size()));
  tcp.insert(tcp.end(), q.begin(), q.begin() + 14);
  bool request = false;
  EXPECT_EQ(dns_probe_tcp(tcp.data(), tcp.size(), &request), 1);
  EXPECT_TRUE(request);
  EXPECT_EQ(dns_probe_tcp(tcp.data(), 1, &request), -1);
}

TEST(Dns, RecordData) {
  Bytes m = header(9, 0x8580, 1, 6, 1, 1);
  label_name(m, "example.com");
  put16(m, 255);
  put16(m, 1);
  const auto rr = [&](uint16_t type, const Bytes& data) {
    put16(m, 0xc00c);
    put16(m, type);
    put16(m, 1);
    put32(m, 3600);
    put16(m, uint16_t(data.size()));
    m.insert(m.end(), data.begin(), data.end());
  };
  rr(1, {93, 184, 216, 34});
  Bytes v6(16, 0);
  v6[0] = 0x26;
  v6[1] = 0x06;
  v6[15] = 1;
  rr(28, v6);
  Bytes mx;
  put16(mx, 10);
  label_name(mx, "mx.example.com");
  rr(15, mx);
  rr(16, {5, 'h', 'e', 'l', 'l', 'o', 3, 'x', 'y', 'z'});
  Bytes srv;
  put16(srv, 1);
  put16(srv, 2);
  put16(srv, 5060);
  label_name(srv, "sip.example.com");
  rr(33, srv);
  rr(99, {1, 2, 3});  // SPF: kept as bytes
  Bytes soa;
  label_name(soa, "ns1.example.com");
  label_name(soa, "admin.example.com");
  for (uint32_t v : {2024u, 7200u, 900u, 1209600u, 86400u}) put32(soa, v);
  rr(6, soa);  // the authority
  // The additional: an EDNS OPT record with one option.
  m.push_back(0);
  put16(m, 41);
  put16(m, 4096);
  put32(m, 0);
  put16(m, 6);
  put16(m, 10);
  put16(m, 2);
  m.push_back(0xab);
  m.push_back(0xcd);
  DnsMessage msg;
  ASSERT_EQ(parse_dns_message(m.data(), m.size(), msg), DnsParse::ok);
  ASSERT_EQ(msg.answers.size(), 6u);
  EXPECT_EQ(msg.answers[0].kind, DnsRecord::kAddr);
  EXPECT_EQ(msg.answers[0].data, std::string("\x5d\xb8\xd8\x22", 4));
  EXPECT_EQ(msg.answers[1].data.size(), 16u);
  EXPECT_EQ(msg.answers[2].data, "mx.example.com");
  ASSERT_EQ(msg.answers[3].txt.size(), 2u);
  EXPECT_EQ(msg.answers[3].txt[1], "xyz");
  EXPECT_EQ(msg.answers[4].kind, DnsRecord::kSrv);
  EXPECT_EQ(msg.answers[4].port, 5060);
  EXPECT_EQ(msg.answers[4].data, "sip.example.com");
  EXPECT_EQ(msg.answers[5].kind, DnsRecord::kUnknown);
  ASSERT_EQ(msg.authorities.size(), 1u);
  EXPECT_EQ(msg.authorities[0].soa.rname, "admin.example.com");
  EXPECT_EQ(msg.authorities[0].soa.expire, 1209600u);
  ASSERT_EQ(msg.additionals.size(), 1u);
  ASSERT_EQ(msg.additionals[0].opt.size(), 1u);
  EXPECT_EQ(msg.additionals[0].opt[0].first, 10);
  EXPECT_EQ(msg.rcode(), 0);
  EXPECT_TRUE(msg.flags & 0x0400);  // aa
  // A broken authority section is flagged and left out; the answers stay.
  Bytes broken = m;
  broken[9] = 2;  // two authorities: the OPT record is read as the second, then none is left
  DnsMessage b;
  ASSERT_EQ(parse_dns_message(broken.data(), broken.size(), b), DnsParse::ok);
  EXPECT_EQ(b.answers.size(), 6u);
  EXPECT_EQ(b.authorities.size(), 2u);
  EXPECT_TRUE(b.invalid_additionals);
}

// Several messages over TCP, cut at every byte and in fixed pieces: the same transactions.
TEST(Dns, TcpFramingAtEverySplit) {
  Bytes stream;
  std::vector<std::string> names = {"one.example", "two.example.net", "three.test"};
  for (size_t i = 0; i < names.size(); ++i) {
    Bytes q = header(uint16_t(100 + i), 0x0100, 1, 0);
    label_name(q, names[i]);
    put16(q, 1);
    put16(q, 1);
    put16(stream, uint16_t(q.size()));
    stream.insert(stream.end(), q.begin(), q.end());
    if (i == 0) put16(stream, 0);  // an empty frame between: skipped
  }
  const auto run = [&](const std::vector<size_t>& cuts) {
    DnsStats st;
    DnsConn c(st);
    std::vector<std::string> got;
    size_t at = 0;
    std::vector<size_t> ends = cuts;
    ends.push_back(stream.size());
    for (size_t e : ends) {
      if (e <= at || e > stream.size()) continue;
      c.feed(0, stream.data() + at, e - at);
      for (DnsTx* t : c.touched()) got.push_back(t->msg.queries.at(0).name + "#" + std::to_string(t->msg.id));
      c.clear_touched();
      c.release_done();
      at = e;
    }
    EXPECT_EQ(st.requests, names.size());
    return got;
  };
  const std::vector<std::string> want = {"one.example#100", "two.example.net#101", "three.test#102"};
  EXPECT_EQ(run({}), want);
  for (size_t cut = 1; cut < stream.size(); ++cut) EXPECT_EQ(run({cut}), want) << "cut at " << cut;
  for (size_t piece : {size_t(1), size_t(7), size_t(65536)}) {
    std::vector<size_t> cuts;
    for (size_t p = piece; p < stream.size(); p += piece) cuts.push_back(p);
    EXPECT_EQ(run(cuts), want) << piece << "-byte pieces";
  }
  // A response sent the request's way is no request; over TCP the direction then stops.
  DnsStats st;
  DnsConn c(st);
  Bytes r = header(1, 0x8180, 1, 0);
  label_name(r, "x.y");
  put16(r, 1);
  put16(r, 1);
  Bytes framed;
  put16(framed, uint16_t(r.size()));
  framed.insert(framed.end(), r.begin(), r.end());
  c.feed(0, framed.data(), framed.size());
  c.feed(0, stream.data(), stream.size());
  EXPECT_EQ(st.not_request, 1u);
  EXPECT_EQ(st.requests, 0u);
  // After a gap, parsing resumes where a message starts.
  c.feed(0, stream.data(), stream.size(), true);
  EXPECT_EQ(st.requests, 3u);
  EXPECT_EQ(st.gaps, 1u);
}

TEST(Dns, Names) {
  EXPECT_EQ(dns_rrtype_name(28), "AAAA");
  EXPECT_EQ(dns_rrtype_name(65), "HTTPS");
  EXPECT_EQ(dns_rrtype_name(64), "64");
  EXPECT_EQ(dns_rcode_name(3), "NXDOMAIN");
  EXPECT_EQ(dns_rcode_name(12), "12");
}

}  // namespace
// Suricata's DNS app-layer events on each transaction (rust/src/dns/dns.rs): a message built per
// case with one header anomaly, or none, against the event bits it must raise (the name events
// come from the name flags NameLimitsAsSuricata checks); and the names Suricata's
// dns-events.rules use.
TEST(Dns, EventsAsSuricata) {
  struct Case {
    const char* name;
    int dir;
    uint16_t flags;
    int labels;  // labels of the question's name
    uint16_t want;
  };
  const Case cases[] = {
      {"a plain query", 0, 0x0100, 2, 0},
      {"a plain response", 1, 0x8180, 2, 0},
      {"the Z bit on a query", 0, 0x0140, 2, kDnsEvZFlagSet},
      {"the Z bit on a response", 1, 0x81c0, 2, kDnsEvZFlagSet},
      {"opcode 7", 0, 0x3900, 2, kDnsEvInvalidOpcode},
      {"opcode 6 is valid", 0, 0x3100, 2, 0},
      {"to the client without QR", 1, 0x0100, 2, kDnsEvNotResponse},
  };
  for (const Case& c : cases) {
    Bytes m = header(7, c.flags, 1, 0);
    std::string name;
    for (int i = 0; i < c.labels; ++i) name += (i ? ".a" : "a");
    label_name(m, name);
    put16(m, 1);
    put16(m, 1);
    DnsStats st;
    DnsConn conn(st);
    conn.feed_datagram(c.dir, m.data(), m.size());
    ASSERT_EQ(conn.touched().size(), 1u) << c.name;
    EXPECT_EQ(conn.touched()[0]->events, c.want) << c.name;
  }
  EXPECT_EQ(dns_event_bit("z_flag_set"), kDnsEvZFlagSet);
  EXPECT_EQ(dns_event_bit("invalid_additionals"), kDnsEvInvalidAdditionals);
  EXPECT_EQ(dns_event_bit("malformed_data"), 0);  // not raised: the rule is skipped, counted
}

}  // namespace gaspp
