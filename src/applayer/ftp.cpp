// applayer/ftp.cpp — see ftp.hpp.
#include "applayer/ftp.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace gaspp {

namespace {

// Suricata's FTP_COMMANDS (rust/src/ftp/ftp.rs), in its order; "AUTH_TLS" as it spells it.
constexpr const char* kFtpCommands[] = {
    "PORT", "EPRT", "AUTH_TLS", "PASV", "EPSV", "RETR", "STOR", "ABOR", "ACCT", "ALLO", "APPE", "CDUP", "CHMOD",
    "CWD",  "DELE", "HELP",     "IDLE", "LIST", "MAIL", "MDTM", "MKD",  "MLFL", "MLSD", "MODE", "MRCP", "MRSQ",
    "MSAM", "MSND", "MSOM",     "NLST", "NOOP", "PASS", "PWD",  "QUIT", "REIN", "REST", "RMD",  "RNFR", "RNTO",
    "SITE", "SIZE", "SMNT",     "STAT", "STOU", "STRU", "SYST", "TYPE", "UMASK", "USER", "UNKNOWN"};

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

void trim_end(std::string& s) {
  while (!s.empty() && is_space(s.back())) s.pop_back();
}

// The decimal number at s[i...] (at most 5 digits), advancing i; -1 without one.
long number_at(const std::string& s, size_t& i) {
  const size_t start = i;
  long v = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) && i - start < 6) v = v * 10 + (s[i++] - '0');
  return i == start ? -1 : v;
}

// "h,h,h,h,p1,p2" at s[i...]: the port, 0 when it does not parse (each part at most 255).
uint16_t six_numbers(const std::string& s, size_t i) {
  long v[6];
  for (int k = 0; k < 6; ++k) {
    v[k] = number_at(s, i);
    if (v[k] < 0 || v[k] > 255) return 0;
    if (k < 5) {
      if (i >= s.size() || s[i] != ',') return 0;
      ++i;
    }
  }
  return uint16_t(v[4] * 256 + v[5]);
}

}  // namespace

uint8_t ftp_event_bit(const std::string& name) {
  return name == "request_command_too_long"    ? kFtpRequestTooLong
         : name == "response_command_too_long" ? kFtpResponseTooLong
         : name == "too_many_transactions"     ? kFtpTooManyTxs
         : name == "file_before_port"          ? kFtpFileBeforePort
         : name == "file_without_name"         ? kFtpFileWithoutName
                                               : 0;
}

const char* ftp_command_of(const std::string& line) {
  const char* best = nullptr;
  size_t best_end = ~size_t(0);
  for (const char* c : kFtpCommands) {
    const size_t n = std::strlen(c);
    for (size_t at = 0; at + n <= line.size() && at + n < best_end; ++at) {
      size_t k = 0;
      while (k < n && std::toupper(static_cast<unsigned char>(line[at + k])) == c[k]) ++k;
      if (k == n) {
        best = c;
        best_end = at + n;
        break;
      }
    }
  }
  return best;
}

bool ftp_port_address(const std::string& line, uint8_t ip[4]) {
  if (line.size() < 7) return false;
  size_t i = 0;
  while (i < line.size() && !std::isdigit(static_cast<unsigned char>(line[i]))) ++i;
  for (int k = 0; k < 4; ++k) {
    const long v = number_at(line, i);
    if (v < 0 || v > 256) return false;  // 256 passes, as Suricata's check lets it
    ip[k] = uint8_t(v);
    if (k < 3) {
      if (i >= line.size() || line[i] != ',') return false;
      ++i;
    }
  }
  return true;
}

uint16_t ftp_port_of_port(const std::string& line) {
  // Suricata's SCFTPParsePort: "PORT" (as written), spaces, then the six numbers.
  if (line.compare(0, 4, "PORT") != 0) return 0;
  size_t i = 4;
  while (i < line.size() && line[i] == ' ') ++i;
  return six_numbers(line, i);
}

uint16_t ftp_port_of_eprt(const std::string& line) {
  // "EPRT |proto|address|port|": the third field between delimiters.
  const size_t d = line.find('|');
  if (d == std::string::npos) return 0;
  size_t at = d;
  for (int k = 0; k < 2; ++k) {
    at = line.find('|', at + 1);
    if (at == std::string::npos) return 0;
  }
  size_t i = at + 1;
  const long p = number_at(line, i);
  return p > 0 && p <= 65535 && i < line.size() && line[i] == '|' ? uint16_t(p) : 0;
}

uint16_t ftp_port_of_pasv(const std::string& line) {
  // "227 Entering Passive Mode (h,h,h,h,p1,p2)" (the parentheses optional).
  if (line.compare(0, 4, "227 ") != 0) return 0;
  for (size_t i = 4; i < line.size(); ++i)
    if (std::isdigit(static_cast<unsigned char>(line[i])) && (line[i - 1] == '(' || line[i - 1] == ' ')) {
      const uint16_t p = six_numbers(line, i);
      if (p) return p;
    }
  return 0;
}

uint16_t ftp_port_of_epsv(const std::string& line) {
  // "229 Entering Extended Passive Mode (|||port|)".
  if (line.compare(0, 4, "229 ") != 0) return 0;
  const size_t at = line.find("|||");
  if (at == std::string::npos) return 0;
  size_t i = at + 3;
  const long p = number_at(line, i);
  return p > 0 && p <= 65535 && i < line.size() && line[i] == '|' ? uint16_t(p) : 0;
}

void FtpConn::touch(FtpTx* t) {
  if (std::find(touched_.begin(), touched_.end(), t) == touched_.end()) touched_.push_back(t);
}

FtpTx& FtpConn::add() {
  // Memory: at most kFtpMaxKept transactions (the oldest goes, counted).
  if (txs_.size() >= kFtpMaxKept) {
    const FtpTx* front = txs_.front().get();
    touched_.erase(std::remove(touched_.begin(), touched_.end(), front), touched_.end());
    txs_.pop_front();
    ++stats_.txs_dropped;
  }
  txs_.push_back(std::make_unique<FtpTx>());
  FtpTx& t = *txs_.back();
  t.id = next_id_++;
  touch(&t);
  // Suricata's max-tx: past max_txs transactions waiting for their reply, the oldest of them is
  // completed without it, with the too_many_transactions event.
  size_t waiting = 0;
  for (const auto& x : txs_) waiting += !x->done;
  if (waiting > max_txs_)
    for (auto& x : txs_)
      if (!x->done) {
        x->done = true;
        x->done_piece = piece_;
        x->events |= kFtpTooManyTxs;
        touch(x.get());
        ++stats_.txs_completed_unanswered;
        stopped_ = true;  // Suricata's parser returns an error: the connection is not parsed further
        break;
      }
  return t;
}

void FtpConn::release_done() {
  while (txs_.size() > 1 && txs_.front()->done &&
         std::find(touched_.begin(), touched_.end(), txs_.front().get()) == touched_.end())
    txs_.pop_front();
}

void FtpConn::feed(int dir, const uint8_t* p, size_t n, bool gap) {
  ++piece_;
  if (stopped_) return;
  if (gap) {
    // The line the gap cut is lost; the next one starts after its LF.
    ++stats_.gaps;
    buf_[dir].clear();
    skipping_[dir] = true;
  }
  std::string& b = buf_[dir];
  for (size_t i = 0; i < n;) {
    const uint8_t* lf = static_cast<const uint8_t*>(std::memchr(p + i, '\n', n - i));
    const size_t end = lf ? size_t(lf - p) : n;
    if (skipping_[dir]) {
      if (lf) skipping_[dir] = false;
      i = end + 1;
      continue;
    }
    const size_t take = std::min(end - i, kFtpMaxLine + 1 - std::min(b.size(), kFtpMaxLine + 1));
    b.append(reinterpret_cast<const char*>(p + i), take);
    if (b.size() > kFtpMaxLine || (!lf && b.size() >= kFtpMaxLine)) {
      // Cut at the limit; the rest of the line is skipped.
      ++stats_.lines_too_long;
      b.resize(kFtpMaxLine);
      std::string l;
      l.swap(b);
      line(dir, std::move(l), true);
      skipping_[dir] = !lf;
      i = end + 1;
      continue;
    }
    if (!lf) break;
    if (!b.empty() && b.back() == '\r') b.pop_back();
    std::string l;
    l.swap(b);
    line(dir, std::move(l), false);
    if (stopped_) return;
    i = end + 1;
  }
}

void FtpConn::line(int dir, std::string l, bool truncated) {
  if (dir == 0) request(std::move(l), truncated);
  else reply(std::move(l), truncated);
}

void FtpConn::request(std::string l, bool truncated) {
  trim_end(l);
  any_request_ = true;
  const char* cmd = ftp_command_of(l);
  if (!cmd || std::strcmp(cmd, "UNKNOWN") == 0) {
    // Suricata makes no transaction for a line without a command of its table ("UNKNOWN" makes
    // one without a command); the server's answer goes to a transaction without a command.
    ++stats_.unknown_commands;
    last_command_.clear();
    if (cmd) add();
    return;
  }
  ++stats_.requests;
  FtpTx& t = add();
  t.command = cmd;
  const size_t n = std::strlen(cmd);
  if (l.size() > n + 1) t.command_data = l.substr(n + 1);
  t.command_truncated = truncated;
  if (truncated) t.events |= kFtpRequestTooLong;
  if (t.command == "RETR" || t.command == "STOR" || t.command == "APPE") {
    // Suricata's checks as a transfer starts (FtpTransferCmd): a name, and a data port to use.
    if (l.size() < 6) t.events |= kFtpFileWithoutName;
    if (!dyn_port_) t.events |= kFtpFileBeforePort;
  }
  const bool file_cmd = t.command == "RETR" || t.command == "STOR" || t.command == "APPE";
  if (file_cmd || t.command == "STOU" || t.command == "NLST" || t.command == "LIST" || t.command == "MLSD") {
    // A transfer: with a port to use (and, for RETR, STOR and APPE, a name), the data connection
    // is expected (Suricata's FTPParseRequest). Its data goes to the client in a passive download
    // or an active upload, else to the server (of the data connection).
    if (dyn_port_ && !(file_cmd && l.size() < 6)) {
      FtpTransfer x;
      x.port = dyn_port_;
      x.command = t.command;
      const bool upload = t.command == "STOR" || t.command == "APPE" || t.command == "STOU";
      x.data_dir = uint8_t(active_ == upload ? 1 : 0);
      if (l.size() >= 6 && (file_cmd || t.command == "STOU")) {
        x.has_file = true;
        x.file_name = l.substr(5, kFtpMaxFileName);
      } else if (t.command == "STOU") {
        x.has_file = true;
        x.file_name = "<stou>";
      }
      transfers_.push_back(std::move(x));
    }
    dyn_port_ = 0;  // the transfer takes the port
    active_ = false;
  }
  t.mode_cmd = t.command == "PORT" || t.command == "EPRT" || t.command == "PASV" || t.command == "EPSV";
  last_command_ = t.command;
  if (t.command == "PORT" || t.command == "EPRT") port_line_ = l;
  if (t.command == "PORT") t.port_ip_ok = ftp_port_address(l, t.port_ip);
}

void FtpConn::reply(std::string l, bool truncated) {
  ++stats_.replies;
  FtpTx* t = nullptr;
  for (auto& x : txs_)
    if (!x->done) {
      t = x.get();
      break;
    }
  if (!t && !txs_.empty()) {
    t = txs_.back().get();
    if (t->done_piece != piece_) {
      ++stats_.replies_late;  // its event was written with the piece that completed it
      return;
    }
  }
  if (!t) t = &add();  // the greeting: before any request
  touch(t);
  if ((!any_request_ || last_command_.empty()) && !t->done)
    t->command.clear(), t->command_data.clear(), t->mode_cmd = false;
  if (last_command_ == "PORT" || last_command_ == "EPRT") {
    // The data port the client named, read when the server answers (whatever the answer).
    const uint16_t port = last_command_ == "PORT" ? ftp_port_of_port(port_line_) : ftp_port_of_eprt(port_line_);
    if (!port) {
      if (!t->done) t->done_piece = piece_;
      t->done = true;  // Suricata completes the transaction without the line
      return;
    }
    t->dynamic_port = dyn_port_ = port;
    t->active = active_ = true;
  } else if (last_command_ == "PASV" && l.compare(0, 4, "227 ") == 0) {
    if (const uint16_t port = ftp_port_of_pasv(l)) t->dynamic_port = dyn_port_ = port, t->active = active_ = false;
  } else if (last_command_ == "EPSV" && l.compare(0, 4, "229 ") == 0) {
    if (const uint16_t port = ftp_port_of_epsv(l)) t->dynamic_port = dyn_port_ = port, t->active = active_ = false;
  }
  // A positive preliminary reply ("1xx" and a space) keeps the transaction waiting.
  const bool preliminary = l.size() >= 4 && l[0] == '1' && std::isdigit(static_cast<unsigned char>(l[1])) &&
                           std::isdigit(static_cast<unsigned char>(l[2])) && is_space(l[3]);
  trim_end(l);
  const size_t sp = l.find(' ');
  const std::string head = l.substr(0, sp);
  const bool code = head.size() == 3 && std::all_of(head.begin(), head.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
  }) && sp != std::string::npos;
  t->codes.push_back(code ? head : std::string());
  t->replies.push_back(code ? l.substr(sp + 1) : l);
  t->reply_truncated = t->reply_truncated || truncated;
  if (truncated) t->events |= kFtpResponseTooLong;
  if (!preliminary && !t->done) {
    t->done = true;
    t->done_piece = piece_;
  }
}

}  // namespace gaspp
