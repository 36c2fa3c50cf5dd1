// applayer/ftp.hpp — FTP's control connection (RFC 959), read the way Suricata's FTP parser reads
// it (app-layer-ftp.c, rust/src/ftp), for the EVE `ftp` event and the ftp.* signature keywords.
//
// Lines end at LF (a CR before it is dropped); a line longer than kFtpMaxLine (4096 bytes, as
// Suricata's max-line-length) is cut there, the rest of it skipped, and the transaction marked
// truncated. A client line is a request: its trailing white space removed, it is recognised by the
// first command of Suricata's table (USER, PASS, PORT, EPRT, PASV, EPSV, RETR, STOR, ...) found in
// it, case-insensitive and anywhere in the line (the one whose match ends first); the command data
// is what follows the table name and one character. A line with no command of the table makes no
// transaction. A recognised request is a transaction; every server line is added to the oldest
// transaction still waiting for its reply (a new one, without a command, for a line before any
// request: the greeting) as a completion code (three digits before a space, else none) and a reply
// text. A line ends the transaction's wait (reply_received) unless it is a positive preliminary
// reply ("1xx "). When none waits, the line goes to the last transaction if its reply completed
// in the same piece of data (Suricata logs a transaction after the packet that completed it:
// later lines never reach its event; they are counted as replies_late). A waiting transaction
// that gets a line after an unrecognised request loses its command, as in Suricata.
//
// Data connections: PORT and EPRT (parsed when the server answers them) and the answers to PASV
// ("227 ...(h,h,h,h,p1,p2)") and EPSV ("229 ...(|||port|)") give the transaction its dynamic port
// and mode (active for PORT/EPRT, passive otherwise). A transfer command (RETR, STOR, APPE, STOU,
// LIST, NLST, MLSD) after a data port was learned takes it: it becomes an FtpTransfer (transfers():
// the port, the way the data will go, the command and the file name, as Suricata's
// FtpTransferCmd), which the application layer keeps as an expectation for the data connection
// (ftp_data.hpp); the port is then used up.
//
// Limits: kFtpMaxLine per line; at most max_txs transactions per connection wait for their reply
// (Suricata's app-layer.protocols.ftp.max-tx, default 1024: past it the oldest waiting one is
// completed without its reply, with the too_many_transactions event, counted, and the connection
// is parsed no further, as Suricata's parser then fails); at most kFtpMaxKept
// kept (more: the oldest goes, counted as txs_dropped).
//
// Example:
//   FtpConn c(stats);
//   c.feed(1, "220 ready\r\n", 11);   // the greeting: a transaction without a command
//   c.feed(0, "USER anonymous\r\n", 16);
//   for (FtpTx* t : c.touched()) ... t->command, t->command_data, t->codes
#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "applayer/app_tx.hpp"

namespace gaspp {

constexpr size_t kFtpMaxLine = 4096;
constexpr size_t kFtpMaxKept = 4096;  // transactions kept per connection (memory)

// Suricata's FTP events (rules/ftp-events.rules), on the transaction that raised them.
enum FtpEvent : uint8_t {
  kFtpRequestTooLong = 1,   // request_command_too_long: the request line was cut at kFtpMaxLine
  kFtpResponseTooLong = 2,  // response_command_too_long: a reply line was
  kFtpTooManyTxs = 4,       // too_many_transactions: completed unanswered, more than max_txs were waiting
  kFtpFileBeforePort = 8,   // file_before_port: RETR, STOR or APPE before a data port was known
  kFtpFileWithoutName = 16, // file_without_name: RETR, STOR or APPE without a name
};
// The event's bit by its name ("request_command_too_long", ...), 0 for another.
uint8_t ftp_event_bit(const std::string& name);

struct FtpTx : AppTx {
  // The request's command as Suricata's table names it ("USER", upper case), empty for a
  // transaction without one (the greeting, replies after an unrecognised request); its data: what
  // follows the name and one character, trailing white space removed.
  std::string command, command_data;
  bool command_truncated = false;
  // One entry per server line: its completion code ("" when the line has none) and its text.
  std::vector<std::string> codes, replies;
  bool reply_truncated = false;
  bool done = false;  // reply_received: a line other than a positive preliminary reply came
  uint64_t done_piece = 0;  // the FtpConn::feed() call (piece of data) that completed it
  uint16_t dynamic_port = 0;
  bool active = false;  // PORT/EPRT (true) or PASV/EPSV: meaningful when mode_cmd
  bool mode_cmd = false;  // the command is PORT, EPRT, PASV or EPSV (the EVE event's mode)
  bool has_command() const { return !command.empty(); }
  uint8_t events = 0;  // FtpEvent bits
  // A PORT request's IPv4 address, read as Suricata's ftpbounce reads it (the first four numbers
  // of the line, comma-separated, each at most 256), network order; port_ip_ok when it read one.
  uint8_t port_ip[4] = {0, 0, 0, 0};
  bool port_ip_ok = false;
};

// Reads a PORT line's address the way Suricata's ftpbounce does (DetectFtpbounceMatchArgs): past
// what is not a digit, four numbers separated by commas, each at most 256, the line at least 7
// bytes; false when it does not read one.
bool ftp_port_address(const std::string& line, uint8_t ip[4]);

// A data transfer the control connection announced (Suricata's FtpTransferCmd): the data
// connection's server port (the dynamic port), which way its data goes in the data connection's
// own roles (to_server: 0, to_client: 1; Suricata's rule: a passive RETR, LIST, NLST or MLSD and an
// active STOR, APPE or STOU send to the client), the command, and the file name (what follows
// "RETR " on the line, at most kFtpMaxFileName bytes; "<stou>" for a STOU without one; none for
// listings).
constexpr size_t kFtpMaxFileName = 4095;  // Suricata's SC_FILENAME_MAX less its NUL
struct FtpTransfer {
  uint16_t port = 0;
  uint8_t data_dir = 0;
  std::string command;
  std::string file_name;
  bool has_file = false;
};

struct FtpStats {
  uint64_t requests = 0, unknown_commands = 0, replies = 0, lines_too_long = 0, gaps = 0, txs_dropped = 0;
  uint64_t replies_late = 0;  // lines after the last transaction's reply was complete and logged
  uint64_t txs_completed_unanswered = 0;  // past max_txs waiting: the oldest completed without its reply
};

// Suricata's FTP command table entry found first in line (case-insensitive, anywhere; the match
// that ends first, the table's order between equals), or null.
const char* ftp_command_of(const std::string& line);

// A PORT line's port ("PORT h,h,h,h,p1,p2"), an EPRT line's ("EPRT |1|addr|port|"), a 227
// reply's ("... (h,h,h,h,p1,p2)") and a 229 reply's ("... (|||port|)"); 0 when it does not parse.
uint16_t ftp_port_of_port(const std::string& line);
uint16_t ftp_port_of_eprt(const std::string& line);
uint16_t ftp_port_of_pasv(const std::string& line);
uint16_t ftp_port_of_epsv(const std::string& line);

class FtpConn {
 public:
  explicit FtpConn(FtpStats& stats, uint32_t max_txs = 1024) : stats_(stats), max_txs_(max_txs ? max_txs : 1) {}
  // In-order TCP data of direction dir (0 client → server); gap: bytes were lost before them (the
  // line they cut is dropped).
  void feed(int dir, const uint8_t* p, size_t n, bool gap = false);
  // The transactions changed since the last clear_touched(), in order of their first change.
  const std::vector<FtpTx*>& touched() const { return touched_; }
  void clear_touched() { touched_.clear(); }
  // Drops the transactions that got their reply and were handed out, but the last one (a late
  // reply line still goes there).
  void release_done();
  const std::deque<std::unique_ptr<FtpTx>>& txs() const { return txs_; }
  // The transfers announced since the last clear_transfers(), in order.
  const std::vector<FtpTransfer>& transfers() const { return transfers_; }
  void clear_transfers() { transfers_.clear(); }

 private:
  void line(int dir, std::string l, bool truncated);
  void request(std::string l, bool truncated);
  void reply(std::string l, bool truncated);
  FtpTx& add();
  void touch(FtpTx* t);
  FtpStats& stats_;
  uint32_t max_txs_;
  uint64_t next_id_ = 0;
  std::deque<std::unique_ptr<FtpTx>> txs_;
  std::vector<FtpTx*> touched_;
  std::string buf_[2];
  bool skipping_[2] = {false, false};  // past kFtpMaxLine: the rest of the line is skipped
  // The last request's command ("" when unrecognised), and a PORT/EPRT line waiting for its answer.
  std::string last_command_;
  bool any_request_ = false;
  std::string port_line_;
  uint16_t dyn_port_ = 0;  // the last data port the session learned, until a transfer uses it
  bool active_ = false;    // ... and whether PORT/EPRT (true) or PASV/EPSV named it
  std::vector<FtpTransfer> transfers_;
  uint64_t piece_ = 0;     // feed() calls so far
  bool stopped_ = false;   // past max_txs: nothing more is parsed
};

}  // namespace gaspp
