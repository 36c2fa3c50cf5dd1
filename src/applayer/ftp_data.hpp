// applayer/ftp_data.hpp — FTP data connections (Suricata's ftp-data), tied to the control
// connection that announced them.
//
// The control connection's parser (ftp.hpp) turns each transfer command (RETR, STOR, APPE, STOU,
// LIST, NLST, MLSD) sent after a data port was learned into an FtpTransfer: the application layer
// keeps it as an expectation of its IP address pair (FtpExpectations, at most kFtpMaxExpectations
// per pair: a new one pushes the oldest out, as Suricata's EXPECTATION_MAX_LEVEL does; at most
// kFtpMaxExpectationPairs pairs: a transfer past it is not expected, counted). A TCP connection
// between the same two addresses whose server port is the transfer's port, and whose first data in
// the transfer's direction came after the command and did not look like another protocol, is that
// transfer's data connection (Suricata's protocol detection consults expectations last, after its
// patterns and probing parsers): its app_proto is "ftp-data", the expectation is used up.
//
// Its one transaction (FtpDataTx) holds the command, the file name and the transferred bytes as a
// file (MimeFile: the first kMimeFileKeep bytes kept for inspection, every byte in its size and
// hashes) of the direction the data goes; data the other way is ignored (as Suricata's parser
// does). The file closes when that direction's stream ends; a gap in it leaves it truncated.
// Signatures of `ftp-data` read the file (file_data, file.name, fileext, filesize, hashes) and
// `ftpdata_command`; EVE writes an `ftp_data` event ({"filename", "command"}) once the file closed
// and a `fileinfo` event for the file.
//
// Example:
//   FtpDataConn c(transfer, stats, hashes);   // the FtpTransfer the control connection announced
//   c.feed(1, data, n);                       // a passive RETR: the data goes to the client
//   c.end(1);                                 // the file closes; c.tx().done
#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "applayer/addr_pair.hpp"
#include "applayer/app_tx.hpp"
#include "applayer/digest.hpp"
#include "applayer/ftp.hpp"
#include "applayer/mime.hpp"

namespace gaspp {

constexpr size_t kFtpMaxExpectations = 10;          // per address pair (Suricata's EXPECTATION_MAX_LEVEL)
constexpr size_t kFtpMaxExpectationPairs = 65536;   // address pairs with expectations waiting

struct FtpDataStats {
  uint64_t flows = 0;               // data connections tied to their control connection
  uint64_t expectations = 0;        // transfers expected
  uint64_t expectations_pushed_out = 0;  // the oldest of a pair pushed out by an eleventh
  uint64_t expectations_refused = 0;     // past kFtpMaxExpectationPairs pairs: not expected
  uint64_t bytes_other_way = 0;     // data against the transfer's direction (ignored)
  uint64_t files_truncated = 0;     // a gap in the data
};

struct FtpDataTx : AppTx {
  std::string command;      // RETR, STOR, APPE, STOU, LIST, NLST, MLSD
  std::string file_name;    // when has_file
  bool has_file = false;
  uint8_t data_dir = 0;     // the direction the data goes (0 to the server, 1 to the client)
  std::vector<MimeFile> files[2];  // the file, on its direction's side (at most one)
  bool done = false;        // the data's direction ended
  bool other_side_seen = false;  // handed out for the other direction once (app_layer.cpp)
};

class FtpDataConn {
 public:
  FtpDataConn(const FtpTransfer& x, FtpDataStats& st, uint8_t hashes);
  // In-order data of direction dir (0 client → server); gap: bytes were lost before them.
  void feed(int dir, const uint8_t* p, size_t n, bool gap = false);
  // Direction dir's stream ended: the transfer's direction closes the file.
  void end(int dir);
  FtpDataTx& tx() { return tx_; }
  bool changed() const { return changed_; }
  void clear_changed() { changed_ = false; }

 private:
  FtpDataStats& st_;
  uint8_t hashes_;
  FtpDataTx tx_;
  FileDigests hash_;
  bool gap_ = false;
  bool changed_ = false;
};

// The transfers expected per address pair (the pair's two addresses in the FlowKey's order:
// endpoint 0's first), oldest first.
class FtpExpectations {
 public:
  explicit FtpExpectations(FtpDataStats& st) : st_(st) {}
  void add(const uint32_t (&a)[4], const uint32_t (&b)[4], uint8_t family, const FtpTransfer& x);
  // The expectation a connection between a and b (family) to server port `port` with its first data
  // in direction `dir` fulfils: moved to out, true; none: false.
  bool take(const uint32_t (&a)[4], const uint32_t (&b)[4], uint8_t family, uint16_t port, int dir, FtpTransfer& out);
  bool empty() const { return pairs_.empty(); }

 private:
  struct Pair {
    uint32_t a[4], b[4];
    uint8_t family;
    bool operator==(const Pair&) const = default;
  };
  struct PairHash {
    size_t operator()(const Pair& p) const;
  };
  static Pair pair_of(const uint32_t (&a)[4], const uint32_t (&b)[4], uint8_t family);
  FtpDataStats& st_;
  std::unordered_map<Pair, std::deque<FtpTransfer>, PairHash> pairs_;
};

}  // namespace gaspp
