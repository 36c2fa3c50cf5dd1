// FTP data connections (applayer/ftp_data.hpp): the transfers the control connection announces,
// against Suricata's rules for them (app-layer-ftp.c FTPParseRequest), and the data connections the
// application layer ties to them, at every split of the file and across batches, against the bytes
// sent and OpenSSL's MD5 of them; and the capture-order parsing of one address pair's flows that
// the tie needs (a flow's updates still handed before the flow is parsed further).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "applayer/app_layer.hpp"
#include "applayer/digest.hpp"
#include "applayer/ftp.hpp"
#include "applayer/ftp_data.hpp"
#include "test_support.hpp"

namespace gaspp {
namespace {

struct TransferCase {
  const char* name;
  std::vector<std::pair<int, std::string>> lines;  // (direction, line) in order
  bool want;                                        // a transfer is announced
  uint16_t port;
  uint8_t data_dir;
  const char* command;
  bool has_file;
  const char* file_name;
};

TEST(FtpData, TransfersAreAnnouncedAsSuricatasFtpTransferCmd) {
  const std::string pasv = "227 Entering Passive Mode (10,0,0,2,4,1).\r\n";  // port 1025
  const std::vector<TransferCase> cases = {
      {"passive RETR: to the client", {{0, "PASV\r\n"}, {1, pasv}, {0, "RETR a.txt\r\n"}}, true, 1025, 1, "RETR", true, "a.txt"},
      {"passive STOR: to the server", {{0, "PASV\r\n"}, {1, pasv}, {0, "STOR up.bin\r\n"}}, true, 1025, 0, "STOR", true, "up.bin"},
      {"active RETR: to the server (the FTP server connects)",
       {{0, "PORT 10,0,0,1,7,208\r\n"}, {1, "200 ok\r\n"}, {0, "RETR x\r\n"}}, true, 2000, 0, "RETR", true, "x"},
      {"active APPE: to the client", {{0, "PORT 10,0,0,1,7,208\r\n"}, {1, "200 ok\r\n"}, {0, "APPE log\r\n"}}, true, 2000,
       1, "APPE", true, "log"},
      {"EPSV then RETR", {{0, "EPSV\r\n"}, {1, "229 Entering Extended Passive Mode (|||3000|)\r\n"}, {0, "RETR f\r\n"}},
       true, 3000, 1, "RETR", true, "f"},
      {"EPRT then STOR", {{0, "EPRT |1|10.0.0.1|4000|\r\n"}, {1, "200 ok\r\n"}, {0, "STOR g\r\n"}}, true, 4000, 1, "STOR",
       true, "g"},
      {"LIST: no file", {{0, "PASV\r\n"}, {1, pasv}, {0, "LIST\r\n"}}, true, 1025, 1, "LIST", false, ""},
      {"passive STOU without a name", {{0, "PASV\r\n"}, {1, pasv}, {0, "STOU\r\n"}}, true, 1025, 0, "STOU", true, "<stou>"},
      {"RETR before any port", {{0, "RETR a\r\n"}}, false, 0, 0, "", false, ""},
      {"RETR without a name", {{0, "PASV\r\n"}, {1, pasv}, {0, "RETR\r\n"}}, false, 0, 0, "", false, ""},
      {"a PASV refused", {{0, "PASV\r\n"}, {1, "500 no\r\n"}, {0, "RETR a\r\n"}}, false, 0, 0, "", false, ""},
  };
  for (const TransferCase& c : cases) {
    FtpStats st;
    FtpConn conn(st);
    for (const auto& [dir, l] : c.lines) conn.feed(dir, reinterpret_cast<const uint8_t*>(l.data()), l.size());
    ASSERT_EQ(conn.transfers().size(), c.want ? 1u : 0u) << c.name;
    if (!c.want) continue;
    const FtpTransfer& x = conn.transfers()[0];
    EXPECT_EQ(x.port, c.port) << c.name;
    EXPECT_EQ(x.data_dir, c.data_dir) << c.name;
    EXPECT_EQ(x.command, c.command) << c.name;
    EXPECT_EQ(x.has_file, c.has_file) << c.name;
    EXPECT_EQ(x.file_name, c.file_name) << c.name;
  }
  // The port is used up: a second transfer needs a new one.
  FtpStats st;
  FtpConn conn(st);
  for (const std::string& l : {std::string("PASV\r\n"), pasv, std::string("RETR a\r\n"), std::string("RETR b\r\n")})
    conn.feed(l == pasv ? 1 : 0, reinterpret_cast<const uint8_t*>(l.data()), l.size());
  EXPECT_EQ(conn.transfers().size(), 1u);
}

// A control connection (client 10.0.0.1:40000, server 10.0.0.2:21) announcing a passive RETR of
// port 1025, and a data connection (10.0.0.1:40001 -> 10.0.0.2:1025) carrying `file` to the client.
struct Link {
  FlowKey ctl{}, data{};
  std::vector<std::string> ctl_lines = {"220 hi\r\n", "USER a\r\n", "331 pw\r\n", "PASS b\r\n", "230 ok\r\n", "PASV\r\n",
                                        "227 Entering Passive Mode (10,0,0,2,4,1).\r\n", "RETR dir/file.bin\r\n",
                                        "150 here\r\n"};
  Link() {
    for (FlowKey* k : {&ctl, &data}) {
      k->family = 4;
      k->proto = 6;
      k->addr[0][0] = 0x0a000001;
      k->addr[1][0] = 0x0a000002;
    }
    ctl.port[0] = 40000, ctl.port[1] = 21;
    data.port[0] = 40001, data.port[1] = 1025;
  }
};

// Runs the control connection, then the data connection's `file` (cut at `cut`, the second part
// in a later batch when two_batches), flow ids chosen so that the data connection comes first in
// flow id order; returns the data flow's protocol and its transaction's file.
struct LinkRun {
  AppProto proto = AppProto::unknown;
  FtpDataTx tx;
  bool got_tx = false;
  size_t updates_other_way = 0;
};
LinkRun run_link(const Link& l, const std::string& file, size_t cut, bool two_batches, bool data_first = false,
             uint16_t data_port = 1025) {
  AppLayerConfig cfg;
  cfg.file_hashes = kHashMd5;
  AppLayer app(cfg);
  FlowKey dk = l.data;
  dk.port[1] = data_port;
  const uint64_t kCtl = 9, kData = 3;
  std::vector<StreamChunk> chunks;
  std::vector<uint8_t> bytes;
  std::vector<AppUpdate> out;
  uint32_t packet = data_first ? 1 : 0;
  uint64_t off[2] = {0, 0};
  for (const std::string& s : l.ctl_lines) {
    const int dir = s[0] >= '0' && s[0] <= '9' ? 1 : 0;
    test::add_chunk(chunks, bytes, l.ctl, dir, s, 0, s.size(), packet++, kCtl);
    chunks.back().off = off[dir];
    off[dir] += s.size();
  }
  LinkRun r;
  const auto take = [&](const std::vector<AppUpdate>& us) {
    for (const AppUpdate& u : us)
      if (u.flow_id == kData && u.ftp_data()) {
        r.tx.command = u.ftp_data()->command;
        r.tx.file_name = u.ftp_data()->file_name;
        r.tx.files[1] = u.ftp_data()->files[1];
        r.tx.done = u.ftp_data()->done;
        r.got_tx = true;
        r.updates_other_way += u.dir != u.ftp_data()->data_dir;
      }
  };
  uint32_t dpacket = data_first ? 0 : packet;
  const auto data_chunk = [&](size_t from, size_t to, bool end) {
    if (from == to && !end) return;
    test::add_chunk(chunks, bytes, dk, 1, file, from, to, dpacket, kData);
    dpacket = dpacket + (data_first ? 100 : 1);
    if (end) chunks.back().flags |= kChunkEnd;
  };
  data_chunk(0, cut, false);
  if (two_batches) {
    app.process(chunks, bytes, out);
    take(out);
    chunks.clear();
    bytes.clear();
  }
  data_chunk(cut, file.size(), true);
  app.process(chunks, bytes, out);
  take(out);
  r.proto = app.proto(kData);
  return r;
}

TEST(FtpData, DataConnectionsAreTiedToTheirTransferAtEverySplit) {
  const Link l;
  std::string file = "MZ\x90";
  for (int i = 0; i < 40; ++i) file += char('a' + i % 26);
  for (size_t cut = 0; cut <= file.size(); ++cut)
    for (bool two : {false, true}) {
      const LinkRun r = run_link(l, file, cut, two);
      const std::string where = "cut " + std::to_string(cut) + (two ? ", two batches" : ", one batch");
      ASSERT_EQ(app_proto_name(r.proto), std::string("ftp-data")) << where;
      ASSERT_TRUE(r.got_tx) << where;
      EXPECT_EQ(r.tx.command, "RETR") << where;
      EXPECT_EQ(r.tx.file_name, "dir/file.bin") << where;
      ASSERT_EQ(r.tx.files[1].size(), 1u) << where;
      const MimeFile& f = r.tx.files[1][0];
      EXPECT_EQ(f.data, file) << where;
      EXPECT_EQ(f.size, file.size()) << where;
      EXPECT_TRUE(f.closed) << where;
      EXPECT_EQ(f.md5, md5_hex(file)) << where;
      EXPECT_TRUE(r.tx.done) << where;
      EXPECT_GE(r.updates_other_way, 1u) << where;  // the command's signatures the other way
    }
}

TEST(FtpData, OnlyTheAnnouncedConnectionAfterItsCommandIsFtpData) {
  const Link l;
  const std::string file = "plain bytes of a file\n";
  // Another server port: nothing expected there.
  EXPECT_NE(run_link(l, file, 5, false, false, 1026).proto, AppProto::ftp_data);
  // Data before the command (in capture order, whatever the flow ids): not that transfer's.
  EXPECT_NE(run_link(l, file, 5, false, true).proto, AppProto::ftp_data);
  // Data whose first chunk looks like another protocol is that protocol (Suricata looks at
  // expectations after its patterns); a first chunk too short to tell is looked up at once (as
  // Suricata's expectations are, on a direction's first data).
  const std::string http = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
  EXPECT_EQ(run_link(l, http, http.size(), false).proto, AppProto::http);
  EXPECT_EQ(run_link(l, http, 3, false).proto, AppProto::ftp_data);
}

TEST(FtpData, ExpectationsAreBoundedPerAddressPair) {
  FtpDataStats st;
  FtpExpectations ex(st);
  const uint32_t a[4] = {0x0a000001, 0, 0, 0}, b[4] = {0x0a000002, 0, 0, 0};
  for (uint16_t p = 1; p <= kFtpMaxExpectations + 2; ++p) {
    FtpTransfer x;
    x.port = p;
    x.data_dir = 1;
    x.command = "RETR";
    ex.add(a, b, 4, x);
  }
  EXPECT_EQ(st.expectations, kFtpMaxExpectations + 2);
  EXPECT_EQ(st.expectations_pushed_out, 2u);
  FtpTransfer got;
  EXPECT_FALSE(ex.take(a, b, 4, 1, 1, got));  // the oldest two went
  EXPECT_FALSE(ex.take(b, a, 4, 3, 0, got));  // the other direction
  EXPECT_TRUE(ex.take(b, a, 4, 3, 1, got));   // either order names the pair
  EXPECT_EQ(got.port, 3);
  EXPECT_FALSE(ex.take(a, b, 4, 3, 1, got));  // used up
}

}  // namespace
}  // namespace gaspp

namespace gaspp {
namespace {

// The flows of one address pair are parsed in capture order, interleaved: a flow's updates must
// still reach the step before that flow is parsed further (here: flow A's request update is
// inspected before A's response is parsed, though flow B's request came between them).
TEST(AppLayerOrder, InterleavedFlowsHandTheirUpdatesBeforeParsingFurther) {
  FlowKey a{}, b{};
  for (FlowKey* k : {&a, &b}) {
    k->family = 4;
    k->proto = 6;
    k->addr[0][0] = 0x0a000001;
    k->addr[1][0] = 0x0a000002;
    k->port[1] = 80;
  }
  a.port[0] = 40000;
  b.port[0] = 40001;
  const std::string req_a = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n", req_b = "GET /b HTTP/1.1\r\nHost: x\r\n\r\n";
  const std::string resp_a = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
  for (const bool a_first_by_id : {true, false}) {
    const uint64_t ida = a_first_by_id ? 3 : 9, idb = a_first_by_id ? 9 : 3;
    AppLayer app;
    std::vector<StreamChunk> chunks;
    std::vector<uint8_t> bytes;
    test::add_chunk(chunks, bytes, a, 0, req_a, 0, req_a.size(), 0, ida);
    test::add_chunk(chunks, bytes, b, 0, req_b, 0, req_b.size(), 1, idb);
    test::add_chunk(chunks, bytes, a, 1, resp_a, 0, resp_a.size(), 2, ida);
    std::vector<AppUpdate> out;
    int checked = 0;
    app.process(chunks, bytes, out, {}, {}, [&](std::span<AppUpdate> us) {
      for (const AppUpdate& u : us)
        if (u.flow_id == ida && u.packet == 0) {
          ASSERT_NE(u.http(), nullptr);
          EXPECT_FALSE(u.http()->resp_done) << "flow A's request update handed after its response was parsed";
          ++checked;
        }
    });
    EXPECT_EQ(checked, 1) << (a_first_by_id ? "A first by id" : "B first by id");
  }
}

}  // namespace
}  // namespace gaspp
