// FTP (applayer/ftp.hpp): control-connection sessions read as Suricata's FTP parser reads them —
// commands by its table (anywhere in the line, any case), command data, replies matched to the
// oldest waiting transaction, preliminary replies, the greeting, unrecognised requests, data
// ports from PORT/EPRT/PASV/EPSV, events, line limits — checked against the transactions written
// out per case; every session also cut at every byte and fed in 1-, 7- and 65536-byte pieces, which
// must give the same transactions.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "applayer/ftp.hpp"

using namespace gaspp;

namespace {

// One session: (direction, bytes) in order.
using Session = std::vector<std::pair<int, std::string>>;

struct WantTx {
  std::string command, data;
  std::vector<std::string> codes, replies;
  bool done;
  uint16_t port = 0;
  int mode = 0;  // 0 none, 1 active, 2 passive
  uint8_t events = 0;
};

struct Case {
  const char* name;
  Session session;
  std::vector<WantTx> want;
  // Whether any cut gives the same transactions: not where a line follows a completed reply,
  // which Suricata keeps only when the same packet brought it (later ones miss the event).
  bool any_cut = true;
};

// Transactions of a session fed in pieces of `piece` bytes (0: whole), each direction's bytes cut
// at `cut` too when not npos.
std::vector<WantTx> run(const Session& s, size_t piece, size_t cut = std::string::npos) {
  FtpStats st;
  FtpConn c(st);
  for (const auto& [dir, bytes] : s) {
    const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
    if (cut != std::string::npos && cut < bytes.size()) {
      c.feed(dir, p, cut);
      c.feed(dir, p + cut, bytes.size() - cut);
      continue;
    }
    const size_t n = piece ? piece : bytes.size();
    for (size_t at = 0; at < bytes.size(); at += n) c.feed(dir, p + at, std::min(n, bytes.size() - at));
  }
  std::vector<WantTx> out;
  for (const auto& t : c.txs())
    out.push_back(WantTx{t->command, t->command_data, t->codes, t->replies, t->done, t->dynamic_port,
                         t->mode_cmd ? (t->active ? 1 : 2) : 0, t->events});
  return out;
}

bool same(const std::vector<WantTx>& a, const std::vector<WantTx>& b, std::string& why) {
  if (a.size() != b.size()) {
    why = std::to_string(a.size()) + " transactions, want " + std::to_string(b.size());
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    const WantTx &x = a[i], &y = b[i];
    if (x.command != y.command || x.data != y.data || x.codes != y.codes || x.replies != y.replies || x.done != y.done ||
        x.port != y.port || x.mode != y.mode || x.events != y.events) {
      why = "transaction " + std::to_string(i) + ": command '" + x.command + "' data '" + x.data + "' " +
            std::to_string(x.codes.size()) + " lines (first '" + (x.replies.empty() ? "" : x.replies[0]) + "'), done " +
            std::to_string(x.done) + ", port " + std::to_string(x.port) + ", mode " + std::to_string(x.mode) +
            ", events " + std::to_string(x.events);
      return false;
    }
  }
  return true;
}

}  // namespace

TEST(Ftp, SessionsParseAsSuricatasParser) {
  const std::string long_line(5000, 'a');
  const std::vector<Case> cases = {
      {"greeting, login",
       {{1, "220 ready\r\n"}, {0, "USER anonymous\r\n"}, {1, "331 Password?\r\n"}, {0, "PASS x@y\r\n"},
        {1, "230 OK\r\n"}},
       {{"", "", {"220"}, {"ready"}, true},
        {"USER", "anonymous", {"331"}, {"Password?"}, true},
        {"PASS", "x@y", {"230"}, {"OK"}, true}}},
      {"a multi-line reply in one piece: its first line ('220-', no code) completes it, the rest kept",
       {{1, "220-Welcome\r\n220 ready\r\n"}},
       {{"", "", {"", "220"}, {"220-Welcome", "ready"}, true}},
       false},
      {"a line after the reply, in a later piece, is late: not kept",
       {{0, "HELP\r\n"}, {1, "214-help\r\n"}, {1, " more text\r\n214 end\r\n"}},
       {{"HELP", "", {""}, {"214-help"}, true}},
       false},
      {"command found anywhere and in any case; bare LF ends a line; trailing space trimmed",
       {{0, "xpwd  \n"}, {1, "257 \"/\"\n"}, {0, "retr file.txt\r\n"}},
       {{"PWD", "", {"257"}, {"\"/\""}, true}, {"RETR", "file.txt", {}, {}, false, 0, 0, kFtpFileBeforePort}}},
      {"a preliminary reply keeps the transaction waiting",
       {{0, "PASV\r\n"}, {1, "227 Entering Passive Mode (10,0,0,1,195,80).\r\n"}, {0, "LIST\r\n"},
        {1, "150 Here it comes\r\n"}, {1, "226 Done\r\n"}},
       {{"PASV", "", {"227"}, {"Entering Passive Mode (10,0,0,1,195,80)."}, true, 50000, 2},
        {"LIST", "", {"150", "226"}, {"Here it comes", "Done"}, true}}},
      {"PORT and EPRT give active ports when answered; EPSV a passive one",
       {{0, "PORT 192,168,0,13,234,10\r\n"}, {1, "200 PORT ok\r\n"}, {0, "EPRT |2|2001:db8::1|34325|\r\n"},
        {1, "200 EPRT ok\r\n"}, {0, "EPSV\r\n"}, {1, "229 Entering Extended Passive Mode (|||58612|)\r\n"},
        {0, "STOR up.bin\r\n"}, {1, "150 go\r\n226 stored\r\n"}},
       {{"PORT", "192,168,0,13,234,10", {"200"}, {"PORT ok"}, true, 59914, 1},
        {"EPRT", "|2|2001:db8::1|34325|", {"200"}, {"EPRT ok"}, true, 34325, 1},
        {"EPSV", "", {"229"}, {"Entering Extended Passive Mode (|||58612|)"}, true, 58612, 2},
        {"STOR", "up.bin", {"150", "226"}, {"go", "stored"}, true}}},
      {"a PORT that does not parse: the answer completes it, unstored (its mode passive, as Suricata logs it)",
       {{0, "PORT 1,2,3\r\n"}, {1, "500 bad\r\n"}},
       {{"PORT", "1,2,3", {}, {}, true, 0, 2}}},
      {"an unrecognised request makes no transaction; its answer goes to one without a command",
       {{0, "XYZZY magic\r\n"}, {1, "500 Unknown command\r\n"}},
       {{"", "", {"500"}, {"Unknown command"}, true}}},
      {"a reply line without a code is text only",
       {{0, "HELP\r\n"}, {1, "211-x\r\n EPRT\r\n211 End\r\n"}},
       {{"HELP", "", {"", "", "211"}, {"211-x", " EPRT", "End"}, true}},
       false},
      {"pipelined requests take the replies in order",
       {{0, "USER a\r\nPASS b\r\nSYST\r\n"}, {1, "331 p\r\n230 in\r\n215 UNIX\r\n"}},
       {{"USER", "a", {"331"}, {"p"}, true}, {"PASS", "b", {"230"}, {"in"}, true}, {"SYST", "", {"215"}, {"UNIX"}, true}}},
      {"RETR without a name",
       {{0, "RETR\r\n"}},
       {{"RETR", "", {}, {}, false, 0, 0, uint8_t(kFtpFileBeforePort | kFtpFileWithoutName)}}},
      {"a request longer than the limit is cut, its rest skipped",
       {{0, "STOR " + long_line + "\r\nNOOP\r\n"}, {1, "200 ok\r\n200 ok\r\n"}},
       {{"STOR", long_line.substr(0, kFtpMaxLine - 5), {"200"}, {"ok"}, true, 0, 0,
         uint8_t(kFtpRequestTooLong | kFtpFileBeforePort)},
        {"NOOP", "", {"200"}, {"ok"}, true}}},
  };
  for (const Case& c : cases) {
    std::string why;
    EXPECT_TRUE(same(run(c.session, 0), c.want, why)) << c.name << ": " << why;
    if (!c.any_cut) continue;
    for (const size_t piece : {size_t(1), size_t(7), size_t(65536)})
      EXPECT_TRUE(same(run(c.session, piece), c.want, why)) << c.name << ", pieces of " << piece << ": " << why;
    size_t longest = 0;
    for (const auto& m : c.session) longest = std::max(longest, m.second.size());
    for (size_t cut = 1; cut < longest; ++cut)
      if (!same(run(c.session, 0, cut), c.want, why)) {
        ADD_FAILURE() << c.name << ", cut at " << cut << ": " << why;
        break;
      }
  }
}

TEST(Ftp, PortParsersReadSuricatasForms) {
  struct P {
    uint16_t (*fn)(const std::string&);
    const char* line;
    uint16_t port;
  };
  const std::vector<P> cases = {
      {ftp_port_of_port, "PORT 192,168,0,13,234,10", 59914}, {ftp_port_of_port, "PORT 1,2,3,4,256,1", 0},
      {ftp_port_of_port, "port 1,2,3,4,5,6", 0},             {ftp_port_of_eprt, "EPRT |1|10.0.0.1|6275|", 6275},
      {ftp_port_of_eprt, "EPRT |1|10.0.0.1|", 0},            {ftp_port_of_pasv, "227 Entering Passive Mode (2,2,2,2,185,13).", 47373},
      {ftp_port_of_pasv, "227 =10,0,0,1,4,1", 0},            {ftp_port_of_pasv, "200 (1,2,3,4,5,6)", 0},
      {ftp_port_of_epsv, "229 Extended (|||58612|)", 58612}, {ftp_port_of_epsv, "229 Extended (|||x|)", 0},
  };
  for (const P& c : cases) EXPECT_EQ(c.fn(c.line), c.port) << c.line;
  uint8_t ip[4];
  EXPECT_TRUE(ftp_port_address("PORT 10,0,0,256,1,2", ip));  // 256 passes, as Suricata's ftpbounce lets it
  EXPECT_EQ(ip[0], 10);
  EXPECT_FALSE(ftp_port_address("PORT 10,0,0,257,1,2", ip));
  EXPECT_FALSE(ftp_port_address("PORT 1", ip));
}

TEST(Ftp, PastMaxTxTheOldestWaitingCompletesWithTheEventAndParsingStops) {
  FtpStats st;
  FtpConn c(st, 2);
  const std::string reqs = "NOOP\r\nNOOP\r\nNOOP\r\n";
  c.feed(0, reinterpret_cast<const uint8_t*>(reqs.data()), reqs.size());
  ASSERT_EQ(c.txs().size(), 3u);
  EXPECT_TRUE(c.txs()[0]->done);
  EXPECT_EQ(c.txs()[0]->events & kFtpTooManyTxs, kFtpTooManyTxs);
  EXPECT_FALSE(c.txs()[1]->done);
  EXPECT_EQ(st.txs_completed_unanswered, 1u);
  // The connection is parsed no further (Suricata's parser fails there).
  const std::string rep = "200 a\r\n200 b\r\n";
  c.feed(1, reinterpret_cast<const uint8_t*>(rep.data()), rep.size());
  EXPECT_TRUE(c.txs()[1]->replies.empty());
}
