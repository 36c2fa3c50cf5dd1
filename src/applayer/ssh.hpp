// applayer/ssh.hpp — the SSH identification strings ("SSH-protoversion-softwareversion comments")
// of both directions of a TCP connection, as Suricata's SSH parser reads them for its EVE `ssh`
// event (client and server proto_version, software_version).
//
// SshConn reads each direction's lines until one starts with "SSH-" (a server may send other lines
// first, RFC 4253 §4.2); the version is what lies between "SSH-" and the next '-', the software
// version what follows up to a space, CR or LF. A line longer than kSshMaxBanner (255 bytes, as
// Suricata) or a gap before the banner ends the direction without one (counted by the
// application layer: ssh_banners_bad). After the banner, the direction's binary packets are read
// up to its SSH_MSG_KEXINIT (RFC 4253 §7.1; packets of other types before it are skipped), whose
// algorithm lists give HASSH (Salesforce's fingerprint, Suricata's ssh.hassh keywords): the
// client's "kex;encryption c2s;mac c2s;compression c2s", the server's the same with the s2c lists,
// and each string's MD5. A packet length over kSshMaxPacket, a NEWKEYS or a gap before it ends the
// direction without one; a malformed KEXINIT gives none. After the KEXINIT the key exchange's packets are
// read up to the direction's NEWKEYS (SSH_MSG_NEWKEYS: encrypted from there); what follows is not
// read. One transaction per connection; it is complete, as Suricata's, when both directions sent
// their NEWKEYS (else when the flow ends), so its EVE `ssh` event comes then; with hassh logging
// (app-layer.protocols.ssh.hassh: yes, or a rule reading ssh.hassh*: Suricata's
// SCSshEnableHassh) it carries each side's `hassh` object ({"hash","string"}).
//
// Anomalies (Suricata's SSH events, app-layer-event:ssh.NAME, EVE anomaly events): invalid_banner
// when a direction's first line is not "SSH-", a version, '-' and the rest (Suricata's parser
// stops there; gaspp still looks for a banner on later lines, as a server may send lines first),
// or when 256 bytes come without a line end and do not start with one; long_banner when a banner
// runs to 256 bytes or more (it is read, cut there). Not raised: invalid_record (the key exchange
// is not read).
//
// Example:
//   SshConn c;
//   c.feed(0, data, n);  // client → server bytes
//   if (c.tx().banner[0]) ... c.tx().software[0]
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "applayer/app_tx.hpp"

namespace gaspp {

constexpr size_t kSshMaxBanner = 255;
constexpr uint32_t kSshMaxPacket = 35000;  // RFC 4253 §6.1: what an implementation must accept

// SshTx::events bits, Suricata's SSHEvent names.
enum SshEvent : uint8_t { kSshEvInvalidBanner = 1, kSshEvLongBanner = 2 };
// The bit of the event NAME (after "ssh."), 0 for one not raised here.
uint8_t ssh_event_bit(const std::string& name);
std::vector<const char*> ssh_event_names(uint8_t events);

struct SshTx : AppTx {
  uint8_t events = 0, events_logged = 0;  // SshEvent bits raised, and written to the anomaly log
  bool banner[2] = {false, false};  // the direction's identification string was read
  std::string proto[2], software[2];
  bool kex[2] = {false, false};      // the direction's KEXINIT was read: its HASSH below
  std::string hassh[2], hassh_string[2];
  bool newkeys[2] = {false, false};  // the direction's NEWKEYS was read (Suricata's SshStateFinished)
  bool log_hassh = false;            // EVE writes the HASSH (SshConn's hassh_log)
  bool done() const { return newkeys[0] && newkeys[1]; }
};

class SshConn {
 public:
  explicit SshConn(uint64_t* bad = nullptr, bool hassh_log = false) : bad_(bad) { tx_.log_hassh = hassh_log; }
  void feed(int dir, const uint8_t* p, size_t n, bool gap = false);
  SshTx& tx() { return tx_; }
  bool changed() const { return changed_; }
  void clear_changed() { changed_ = false; }
  // Nothing more to read in the direction (its NEWKEYS read, or given up).
  bool done(int dir) const { return state_[dir] == 3 || state_[dir] < 0; }

 private:
  void line(int dir, const std::string& l);
  void binary(int dir, const uint8_t* p, size_t n);  // after the banner: packets up to NEWKEYS
  bool kexinit(int dir, const uint8_t* payload, size_t n);
  SshTx tx_;
  std::string buf_[2];  // the current line, not complete yet; then the binary packet being read
  // 0 reading lines, 1 banner read (reading packets), 2 KEXINIT read (reading packets), 3 NEWKEYS
  // read, -1 given up
  int state_[2] = {0, 0};
  bool first_[2] = {true, true};  // the direction's first line is still to come
  bool changed_ = false;
  uint64_t* bad_;
};

}  // namespace gaspp
