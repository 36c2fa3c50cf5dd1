// Protocol detection by content (applayer/app_layer.hpp), table-driven over the first bytes of each
// direction as Suricata's detection patterns and probing parsers define them (app-layer-smtp.c,
// app-layer-ftp.c, app-layer-ssh.c, app-layer-ssl.c, app-layer-htp.c, rust/src/smb/smb.rs): each
// case is fed with the first direction's bytes cut at every position, in one batch and in two,
// and must come out the same; the reversal a case implies is checked through the HTTP parser's
// roles where the protocol has one.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "applayer/app_layer.hpp"
#include "test_support.hpp"
#include "applayer/digest.hpp"
#include "applayer/ssh.hpp"

namespace gaspp {
namespace {

struct Case {
  const char* name;
  uint16_t client_port, server_port;
  std::string first;   // the bytes of the direction that speaks first
  bool server_first;   // the server (the flow's responder) speaks first
  std::string second;  // then the other direction's (may be empty)
  AppProto want;
};

std::string smb1(uint8_t flags) {
  std::string s("\x00\x00\x00\x2f\xffSMB\x72\x00\x00\x00\x00", 13);
  s.push_back(char(flags));
  s.append(20, '\0');
  return s;
}
std::string smb2(uint8_t flags0) {
  std::string s("\x00\x00\x00\x44\xfeSMB\x40\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", 20);
  s.push_back(char(flags0));
  s.append(40, '\0');
  return s;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"http request", 40000, 80, "GET / HTTP/1.1\r\nHost: a\r\n\r\n", false, "HTTP/1.1 200 OK\r\n\r\n", AppProto::http},
      {"http response first (turned around)", 80, 40000, "HTTP/1.1 200 OK\r\n", false, "", AppProto::http},
      {"tls client hello", 40000, 443, std::string("\x16\x03\x01\x00\x05\x01\x00\x00\x01\x00", 10), false, "", AppProto::tls},
      {"tls application data from the server", 40000, 443, std::string("\x17\x03\x03\x00\x10", 5), true,
       std::string("\x17\x03\x03\x00\x10", 5), AppProto::tls},
      {"tls alert picked up at the client (turned around)", 40000, 443, std::string("\x15\x03\x03\x00\x02\x01\x00", 7),
       false, "", AppProto::tls},
      {"ssh client", 40000, 22, "SSH-2.0-OpenSSH_9.6\r\n", false, "", AppProto::ssh},
      {"ssh server first", 40000, 2222, "SSH-2.0-dropbear_2020.81\r\n", true, "", AppProto::ssh},
      {"smtp greeting then EHLO", 40000, 25, "220 mail.example.com ESMTP\r\n", true, "EHLO client.example.com\r\n",
       AppProto::smtp},
      {"smtp greeting then helo, another port", 40000, 2525, "220-mail.example.com\r\n", true, "helo x\r\n",
       AppProto::smtp},
      {"smtp EHLO first", 40000, 587, "EHLO x\r\n", false, "", AppProto::smtp},
      {"QUIT away from port 21 is smtp", 40000, 2525, "QUIT\r\n", false, "", AppProto::smtp},
      {"QUIT on port 21 is ftp", 40000, 21, "QUIT\r\n", false, "", AppProto::ftp},
      {"ftp greeting then USER", 40000, 2121, "220 ProFTPD Server\r\n", true, "USER anonymous\r\n", AppProto::ftp},
      {"ftp greeting with a parenthesis", 40000, 2121, "220 (vsFTPd 3.0.3)\r\n", true, "", AppProto::ftp},
      {"FEAT", 40000, 21, "FEAT\r\n", false, "", AppProto::ftp},
      {"http2 connection preface", 40000, 8080, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", false, "", AppProto::http2},
      {"http2, the server's SETTINGS first", 40000, 80, std::string("\x00\x00\x00\x04\x00\x00\x00\x00\x00", 9), true,
       "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", AppProto::http2},
      {"PORT", 40000, 21, "PORT 10,0,0,1,4,1\r\n", false, "", AppProto::ftp},
      {"user in lower case is no FTP command (case-sensitive)", 40000, 2121, "user x\r\n", false, "", AppProto::unknown},
      {"greeting on port 21, client unknown", 40000, 21, "220 hello\r\n", true, "SYST\r\n", AppProto::ftp},
      {"greeting on port 25, client unknown", 40000, 25, "220 hello\r\n", true, "XYZZY\r\n", AppProto::smtp},
      {"greeting elsewhere, client unknown", 40000, 8025, "220 hello\r\n", true, "XYZZY\r\n", AppProto::failed},
      {"smb1 request", 40000, 445, smb1(0x18), false, "", AppProto::smb},
      {"smb1 response first (turned around)", 445, 40000, smb1(0x98), false, "", AppProto::smb},
      {"smb2 request", 40000, 445, smb2(0x00), false, "", AppProto::smb},
      {"smb2 response first (turned around)", 445, 40000, smb2(0x01), false, "", AppProto::smb},
      {"netbios session request is not smb", 40000, 139, std::string("\x81\x00\x00\x44 CKFDENECFDEFFCFGEFFCCACACACACACA\x00", 38),
       false, std::string("\x82\x00\x00\x00", 4), AppProto::failed},
      {"both directions unknown", 40000, 6667, "NICK someone\r\n", false, ":irc.example NOTICE * :hi\r\n", AppProto::failed},
      {"server speaks first, unknown, then a request", 40000, 8080, "* hello\r\n", true, "GET / HTTP/1.0\r\n\r\n",
       AppProto::http},
  };
  return c;
}

FlowKey key_of(const Case& c) {
  FlowKey k{};
  k.family = 4;
  k.proto = 6;
  k.addr[0][0] = 0x0a000001;
  k.addr[1][0] = 0x0a000002;
  k.port[0] = c.client_port;  // endpoint 0 is the client (kChunkClientLo)
  k.port[1] = c.server_port;
  return k;
}

using test::add_chunk;

// Feeds a case with the first direction cut at `cut`, in one batch or two; returns the protocol at
// the end (before the flow ends: unknown while undecided) and the HTTP updates' client_lo.
AppProto run_case(const Case& c, size_t cut, bool two_batches, std::vector<uint8_t>* client_lo) {
  AppLayer app;
  const FlowKey k = key_of(c);
  const int d1 = c.server_first ? 1 : 0;
  std::vector<StreamChunk> chunks;
  std::vector<uint8_t> bytes;
  std::vector<AppUpdate> out;
  uint32_t packet = 0;
  if (cut) add_chunk(chunks, bytes, k, d1, c.first, 0, cut, packet++);
  if (two_batches) {
    app.process(chunks, bytes, out);
    for (const AppUpdate& u : out) client_lo->push_back(u.client_lo);
    chunks.clear();
    bytes.clear();
  }
  if (cut < c.first.size()) add_chunk(chunks, bytes, k, d1, c.first, cut, c.first.size(), packet++);
  if (!c.second.empty()) add_chunk(chunks, bytes, k, 1 - d1, c.second, 0, c.second.size(), packet++);
  app.process(chunks, bytes, out);
  for (const AppUpdate& u : out) client_lo->push_back(u.client_lo);
  return app.proto(7);
}

TEST(AppDetect, FirstBytesDecideAsSuricatasPatternsAtEveryCut) {
  for (const Case& c : cases()) {
    for (size_t cut = 0; cut <= c.first.size(); ++cut) {
      for (bool two : {false, true}) {
        std::vector<uint8_t> lo;
        const AppProto got = run_case(c, cut, two, &lo);
        ASSERT_EQ(app_proto_name(got), std::string(app_proto_name(c.want)))
            << c.name << " (cut at " << cut << (two ? ", two batches)" : ", one batch)");
        // HTTP has a parser: its updates name the client. A response first turns the flow around
        // (the parser's client is key endpoint 1).
        if (c.want == AppProto::http) {
          ASSERT_FALSE(lo.empty()) << c.name;
          const bool turned = c.first.rfind("HTTP/", 0) == 0;
          for (uint8_t v : lo) ASSERT_EQ(v, turned ? 0 : 1) << c.name << " cut " << cut;
        }
      }
    }
  }
}

TEST(AppDetect, DetectedOnlyProtocolsAreNamedAndCounted) {
  EXPECT_STREQ(app_proto_name(AppProto::smtp), "smtp");
  EXPECT_STREQ(app_proto_name(AppProto::ftp), "ftp");
  EXPECT_STREQ(app_proto_name(AppProto::ssh), "ssh");
  EXPECT_STREQ(app_proto_name(AppProto::smb), "smb");
  // One flow per case through one AppLayer: each protocol's counter counts its cases' flows.
  AppLayer app;
  std::vector<AppUpdate> out;
  std::map<std::string, uint64_t> want;
  uint64_t id = 100;
  for (const Case& c : cases()) {
    std::vector<StreamChunk> chunks;
    std::vector<uint8_t> bytes;
    const FlowKey k = key_of(c);
    const int d1 = c.server_first ? 1 : 0;
    add_chunk(chunks, bytes, k, d1, c.first, 0, c.first.size(), 0);
    if (!c.second.empty()) add_chunk(chunks, bytes, k, 1 - d1, c.second, 0, c.second.size(), 1);
    for (StreamChunk& ch : chunks) ch.flow_id = id;
    ++id;
    app.process(chunks, bytes, out);
    if (c.want != AppProto::unknown) ++want[std::string("app_flows_") + app_proto_name(c.want)];
  }
  std::map<std::string, uint64_t> r;
  app.report(r);
  for (const char* p : {"http", "tls", "ssh", "smtp", "ftp", "smb", "failed"})
    EXPECT_EQ(r[std::string("app_flows_") + p], want[std::string("app_flows_") + p]) << p;
}

// SSH identification strings (applayer/ssh.hpp), against the fields RFC 4253 §4.2 defines
// (SSH-protoversion-softwareversion SP comments CR LF), at every split of the direction's bytes.
TEST(SshBanner, ReadAsSuricataAtEverySplit) {
  static const std::string kSoftware247(247, 's');  // (its CR is not the line's: no long_banner)
  struct Case {
    const char* name;
    std::string bytes;
    bool banner;
    const char *proto, *software;
    uint8_t events;  // Suricata's SSH events (its parse_banner)
  };
  const Case cases[] = {
      {"plain", "SSH-2.0-OpenSSH_9.6\r\n", true, "2.0", "OpenSSH_9.6", 0},
      {"comments after a space", "SSH-2.0-OpenSSH_7.6p1 Ubuntu-4ubuntu0.3\r\n", true, "2.0", "OpenSSH_7.6p1", 0},
      {"LF only", "SSH-1.99-Cisco-1.25\n", true, "1.99", "Cisco-1.25", 0},
      {"lines before the banner", "Welcome\r\nto here\r\nSSH-2.0-dropbear_2020.81\r\n", true, "2.0",
       "dropbear_2020.81", kSshEvInvalidBanner},  // Suricata stops at the first line
      {"then binary key exchange", std::string("SSH-2.0-x\r\n\x00\x00\x01\x2c\x0a\x14", 17), true, "2.0", "x", 0},
      {"no line end yet", "SSH-2.0-OpenSSH", false, "", "", 0},
      {"a line too long", std::string(300, 'a') + "\r\nSSH-2.0-late\r\n", false, "", "", kSshEvInvalidBanner},
      {"no dash after the version", "SSH-2.0\r\n", true, "2.0", "", kSshEvInvalidBanner},
      {"a long banner", "SSH-2.0-" + std::string(300, 's') + "\r\n", true, "2.0", "", kSshEvLongBanner},
      {"a banner of 255 bytes", "SSH-2.0-" + std::string(247, 's') + "\r\n", true, "2.0", kSoftware247.c_str(), 0},
  };
  for (const Case& c : cases) {
    for (size_t cut = 0; cut <= c.bytes.size(); ++cut) {
      uint64_t bad = 0;
      SshConn conn(&bad);
      const auto* p = reinterpret_cast<const uint8_t*>(c.bytes.data());
      conn.feed(1, p, cut);
      conn.feed(1, p + cut, c.bytes.size() - cut);
      ASSERT_EQ(conn.tx().banner[1], c.banner) << c.name << " cut " << cut;
      EXPECT_EQ(conn.tx().proto[1], c.proto) << c.name << " cut " << cut;
      if (std::string(c.name) != "a long banner") EXPECT_EQ(conn.tx().software[1], c.software) << c.name << " cut " << cut;
      else EXPECT_EQ(conn.tx().software[1], std::string(kSshMaxBanner + 1 - 8, 's')) << "cut " << cut;  // cut at 256 bytes
      EXPECT_EQ(conn.tx().events, c.events) << c.name << " cut " << cut;
      EXPECT_FALSE(conn.tx().banner[0]);
      EXPECT_EQ(bad, std::string(c.name) == "a line too long" ? 1u : 0u) << c.name;
    }
  }
  // A gap before the banner: the direction gives up, counted.
  uint64_t bad = 0;
  SshConn g(&bad);
  g.feed(0, nullptr, 0, true);
  const std::string b = "SSH-2.0-x\r\n";
  g.feed(0, reinterpret_cast<const uint8_t*>(b.data()), b.size());
  EXPECT_FALSE(g.tx().banner[0]);
  EXPECT_EQ(bad, 1u);
}

// An SSH binary packet (RFC 4253 §6) around payload, with pad bytes of padding.
std::string ssh_packet(const std::string& payload, uint8_t pad = 4) {
  const uint32_t len = uint32_t(payload.size()) + 1 + pad;
  std::string p = {char(len >> 24), char(len >> 16), char(len >> 8), char(len), char(pad)};
  return p + payload + std::string(pad, '\0');
}

// SSH_MSG_KEXINIT with the ten name-lists given (kex, host key, enc c2s, enc s2c, mac c2s, mac
// s2c, comp c2s, comp s2c, languages c2s, s2c), then first_kex_packet_follows and reserved.
std::string kexinit(const std::vector<std::string>& lists) {
  std::string p = "\x14" + std::string(16, 'c');
  for (const std::string& l : lists) {
    const uint32_t n = uint32_t(l.size());
    p += std::string{char(n >> 24), char(n >> 16), char(n >> 8), char(n)} + l;
  }
  return p + std::string(5, '\0');
}

// HASSH as Salesforce defines it and Suricata's ssh.hassh keywords read it: the client's
// "kex;enc c2s;mac c2s;comp c2s" and the server's with the s2c lists, and their MD5s (the
// reference: OpenSSL's MD5 over the string the test builds from the lists), at every split; and
// the direction finished at its NEWKEYS (Suricata's SshStateFinished), the key exchange between.
TEST(SshHassh, ReadFromEachSidesKexinitAtEverySplit) {
  const std::vector<std::string> lists = {"curve25519-sha256,ecdh-sha2-nistp256", "ssh-ed25519",
                                          "aes128-ctr,aes256-gcm@openssh.com", "chacha20-poly1305@openssh.com",
                                          "umac-64-etm@openssh.com,hmac-sha2-256", "hmac-sha1",
                                          "none,zlib@openssh.com", "none", "", ""};
  const std::string client = lists[0] + ";" + lists[2] + ";" + lists[4] + ";" + lists[6];
  const std::string server = lists[0] + ";" + lists[3] + ";" + lists[5] + ";" + lists[7];
  const std::string banner = "SSH-2.0-OpenSSH_9.6\r\n";
  struct Case {
    const char* name;
    std::string bytes;
    bool kex;      // a HASSH is read
    bool newkeys;  // the direction finished
    bool done;     // nothing more is read of it (finished, or given up)
  };
  const std::string kex_dh = ssh_packet(std::string("\x1e") + std::string(300, 'k'));  // KEXDH_INIT
  const Case cases[] = {
      {"KEXINIT right after the banner", banner + ssh_packet(kexinit(lists)), true, false, false},
      {"KEXINIT, the key exchange, NEWKEYS", banner + ssh_packet(kexinit(lists)) + kex_dh + ssh_packet("\x15"), true,
       true, true},
      {"another packet first (ignored)", banner + ssh_packet("\x02ignored", 7) + ssh_packet(kexinit(lists), 9), true,
       false, false},
      {"NEWKEYS before any KEXINIT", banner + ssh_packet("\x15") + ssh_packet(kexinit(lists)), false, true, true},
      {"a packet length past the limit", banner + std::string("\x00\x01\x00\x00\x04", 5) + kexinit(lists), false,
       false, true},
      {"a KEXINIT cut inside its lists, then NEWKEYS", banner + ssh_packet(kexinit(lists).substr(0, 40)) + ssh_packet("\x15"),
       false, true, true},
      {"not all of it yet", banner + ssh_packet(kexinit(lists)).substr(0, 60), false, false, false},
  };
  for (const Case& c : cases) {
    for (int dir = 0; dir < 2; ++dir) {
      for (size_t cut = 0; cut <= c.bytes.size(); ++cut) {
        SshConn conn;
        const auto* p = reinterpret_cast<const uint8_t*>(c.bytes.data());
        conn.feed(dir, p, cut);
        conn.feed(dir, p + cut, c.bytes.size() - cut);
        const SshTx& t = conn.tx();
        ASSERT_TRUE(t.banner[dir]) << c.name << " cut " << cut;
        ASSERT_EQ(t.kex[dir], c.kex) << c.name << " dir " << dir << " cut " << cut;
        EXPECT_FALSE(t.kex[1 - dir]);
        EXPECT_EQ(t.newkeys[dir], c.newkeys) << c.name << " cut " << cut;
        EXPECT_EQ(conn.done(dir), c.done) << c.name << " cut " << cut;
        EXPECT_FALSE(t.done());  // the other direction did not finish
        if (!c.kex) continue;
        const std::string& want = dir == 0 ? client : server;
        EXPECT_EQ(t.hassh_string[dir], want) << c.name << " cut " << cut;
        EXPECT_EQ(t.hassh[dir], md5_hex(want)) << c.name;
      }
    }
  }
}

}  // namespace
}  // namespace gaspp
