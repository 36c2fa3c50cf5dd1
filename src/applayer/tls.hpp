// applayer/tls.hpp — the TLS handshake's clear part over the reassembled directions of a TCP
// connection: the ClientHello's server name (SNI), version and JA3, the ServerHello's version and
// JA3S, and each side's certificate chain (TLS 1.2 and earlier: 1.3 encrypts them) — the
// server's, and the client's when the server asks for one (CertificateRequest: mutual TLS).
//
// TlsConn reads each direction's handshake records (any split): the client's hello, then its
// second flight up to its Certificate message or the first other message (ClientKeyExchange);
// the server's up to ServerHelloDone (right after the ServerHello for TLS 1.3); either ends at a
// record that is not a handshake (ChangeCipherSpec, application data: what follows is encrypted).
// The first certificate of each chain is decoded with OpenSSL as Suricata logs and matches it:
// subject and issuer ("C=US, O=..., CN=..."), serial (hex bytes, colon-separated, uppercase),
// SHA-1 fingerprint of the DER (lowercase, colons), validity. The handshake is done (logged) as
// Suricata decides it after each segment: the server's certificate decoded when it asked for none,
// the client's when it did, else when the awaited side ends its handshake. One transaction per
// connection (Suricata's tls has one too). SSLv2-framed hellos are not read. A handshake message
// longer than kTlsMaxHello (64 KiB) before the side's hello or kTlsMaxChain (256 KiB, a
// certificate chain) after it, a malformed hello or a gap stops the direction (counted by the
// application layer); a certificate OpenSSL cannot decode is kept as bytes (tls.certs) and counted.
// Each direction's bytes as sent while it is read (record headers included) are kept for the
// payload contents of `alert tls` signatures, as Suricata inspects the stream of a TLS flow: up to
// kTlsMaxRaw bytes a direction; what a limit cuts is counted (tls_raw_cut).
//
// Past the handshake the records are still walked, headers only (bodies skipped, a few first
// bytes read where needed), for the decoder events of Suricata's record layer (SSLv3Decode,
// SSLv3ParseHeartbeatProtocol, SSLv3ParseAlertProtocol; TlsEvent): a record type outside 20..24
// (invalid_record_type: the rest of the segment is skipped after TLS 1.0 or 1.1, else parsing
// stops), a length of 0 or over 17,408 bytes (invalid_record_length), a record version Suricata
// does not know before the hello set it (invalid_record_version), a handshake record under 4 bytes
// (invalid_ssl_record), a handshake message header that does not fit in what is left of its record
// (invalid_ssl_record and invalid_handshake_message; messages may span records) or of a type
// Suricata does not know before the sender's ChangeCipherSpec (invalid_handshake_message, parsing
// goes on), an alert record under 2 (invalid_alert_message), and heartbeats: one whose
// payload length runs past its record (overflow_heartbeat_message, CVE-2014-0160), one with less
// than 16 bytes of padding, an unknown type before ChangeCipherSpec or a second in flight from the
// same side (invalid_heartbeat_message), and an encrypted response longer than its request
// (dataleak_heartbeat_mismatch). Each of these but the skipped record type stops the connection's
// parsing, as Suricata's parser error does. A malformed hello raises handshake_invalid_length
// (gaspp stops reading that direction's handshake; Suricata's hello decoders raise it and go on).
// Not raised: the SNI events, the certificate decoder's events, SSLv2's.
//
// Example:
//   TlsConn c;
//   c.feed(0, data, n);            // client → server bytes
//   if (c.tx().client_hello) ... c.tx().sni
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "applayer/app_tx.hpp"

namespace gaspp {

constexpr uint32_t kTlsMaxHello = 64 * 1024;
constexpr uint32_t kTlsMaxChain = 256 * 1024;
constexpr uint32_t kTlsMaxRaw = 64 * 1024;  // TlsTx::raw, a direction

constexpr size_t kTlsMaxSans = 256;  // subjectAltName entries kept (the rest not inspected)
constexpr size_t kTlsMaxAlpn = 32;   // ALPN protocols kept per hello

// The decoder events of a TLS connection (Suricata's tls decoder event names, app-layer-event:tls.*).
enum TlsEvent : uint32_t {
  kTlsEvInvalidRecordType = 1,        // invalid_record_type
  kTlsEvInvalidRecordVersion = 2,     // invalid_record_version
  kTlsEvInvalidRecordLength = 4,      // invalid_record_length
  kTlsEvInvalidSslRecord = 8,         // invalid_ssl_record
  kTlsEvInvalidAlert = 16,            // invalid_alert_message
  kTlsEvInvalidHeartbeat = 32,        // invalid_heartbeat_message
  kTlsEvOverflowHeartbeat = 64,       // overflow_heartbeat_message
  kTlsEvDataleakHeartbeat = 128,      // dataleak_heartbeat_mismatch
  kTlsEvHandshakeInvalidLength = 256, // handshake_invalid_length
  kTlsEvInvalidHandshake = 512,      // invalid_handshake_message
  kTlsEvInvalidSniType = 1024,        // invalid_sni_type
  kTlsEvInvalidSniLength = 2048,      // invalid_sni_length
  kTlsEvMultipleSniExtensions = 4096  // multiple_sni_extensions
};
// The event's bit by Suricata's name (after "tls."); 0 for one gaspp does not raise.
uint32_t tls_event_bit(const std::string& name);

// A Certificate message: the chain as sent (DER), and the first certificate's fields.
struct TlsCert {
  bool present = false;  // the message was read (its chain may be empty: a client without one)
  bool decoded = false;  // the first certificate decoded (OpenSSL)
  std::vector<std::string> chain;
  std::string subject, issuer, serial, fingerprint;
  int64_t not_before = 0, not_after = 0;  // seconds since the epoch
  // Its subjectAltName entries as Suricata writes them: DNS names, URIs and e-mail addresses as
  // text, IP addresses as the byte list "[10, 0, 0, 1]" (at most kTlsMaxSans).
  std::vector<std::string> sans;
};

struct TlsTx : AppTx {
  bool client_hello = false, server_hello = false;
  uint16_t client_version = 0;  // ClientHello.legacy_version
  uint16_t server_version = 0;  // ServerHello's version (supported_versions when present)
  // The ClientHello's supported_versions: the first version Suricata knows (GREASE and other
  // values skipped), 0 without one. tls.version to the server sees it, else client_version.
  uint16_t client_offered = 0;
  std::string sni;              // the server_name extension's host_name
  // JA3 of the ClientHello, JA3S of the ServerHello: the string and its MD5 (lowercase hex).
  std::string ja3_string, ja3_hash, ja3s_string, ja3s_hash;
  // Each side's Certificate message: cert[0] the client's (sent when the server asked for one,
  // its CertificateRequest), cert[1] the server's.
  TlsCert cert[2];
  bool cert_requested = false;  // the server sent a CertificateRequest
  // Each hello's random (client's [0], server's [1]; 32 bytes once read) and ALPN protocols (the
  // client's offers, the server's choice; at most kTlsMaxAlpn each).
  std::string random[2];
  std::vector<std::string> alpn[2];
  bool handshake_done = false;  // the server's side of the handshake has been read (logged then)
  uint32_t events = 0;          // TlsEvent bits (the connection's: either direction raised them)
  // A direction's version as its hello gave it: the server's (supported_versions' choice, else its
  // version field), the client's supported_versions first known one, else its version field; 0
  // before the hello.
  uint16_t version(int dir) const { return dir ? server_version : client_offered ? client_offered : client_version; }
  std::string raw[2];           // each direction's bytes as sent while read, up to kTlsMaxRaw
};

// Suricata's names of the versions: "SSLv3", "TLSv1", "TLS 1.1", "TLS 1.2", "TLS 1.3", the 1.3
// drafts' ("TLS 1.3 draft-18", "TLS 1.3 draft-<16", "TLS 1.3 draft-23-fb"), else "UNDETERMINED".
const char* tls_version_name(uint16_t v);

// Whether v is a version Suricata's TLS parser knows (SSLv3 to TLS 1.3 and its drafts, not SSLv2).
bool tls_version_known(uint16_t v);

class TlsConn {
 public:
  explicit TlsConn(uint64_t* certs_undecoded = nullptr, uint64_t* raw_cut = nullptr)
      : undecoded_(certs_undecoded), raw_cut_(raw_cut) {}
  // 0: still reading the handshake, 1: its part of the direction read (hello seen or encrypted
  // data; records are still walked for events), -1: parsing stopped here (malformed, an event
  // that ends it, a gap). Once stopped, done().
  int feed(int dir, const uint8_t* p, size_t n, bool gap = false);
  TlsTx& tx() { return tx_; }
  bool changed() const { return changed_; }
  void clear_changed() { changed_ = false; }
  bool done(int dir) const { return stopped_[dir]; }

 private:
  int parse_hello(int dir, const uint8_t* p, size_t n);
  int handshake(int dir, const uint8_t* p, size_t n);  // feed's handshake part (its return value)
  int parse_certificate(int dir, const uint8_t* p, size_t n);
  void update_done();  // handshake_done as Suricata decides it after a segment (see feed)
  int finish(int dir, int state);  // the direction ends with state (1 done, -1 malformed)
  // The record layer's walk for events (see the header comment); false: parsing stops.
  bool scan_records(int dir, const uint8_t* p, size_t n);
  bool record_done(int dir);  // a record's header and first bytes are in: its checks
  bool walk_handshake(int dir, const uint8_t* p, size_t n, size_t& i);  // a handshake record's messages
  void event(uint32_t bit);
  TlsTx tx_;
  bool stopped_[2] = {false, false};
  // The record walk: each direction's record header and first body bytes gathered (at most
  // kScanHead), the body bytes left to skip, Suricata's version of the direction (record
  // headers' until its hello, the hello's after), whether its hello was seen.
  static constexpr size_t kScanHead = 5 + 6;
  std::string scan_[2];
  size_t skip_[2] = {0, 0};
  uint16_t ver_[2] = {0, 0};
  bool hello_[2] = {false, false};
  bool ccs_[2] = {false, false};           // a ChangeCipherSpec seen from this side
  bool ccs() const { return ccs_[0] || ccs_[1]; }  // ... from either
  // The handshake records' message walk (SSLv3ParseHandshakeProtocol): the record's body bytes
  // left, the current message's bytes left (it may span records), the bytes of an unknown
  // message's skipped in this record, a message header gathered, the hello version's bytes.
  size_t hs_body_[2] = {0, 0}, msg_left_[2] = {0, 0}, msg_skip_[2] = {0, 0};
  std::string msg_hdr_[2], ver_buf_[2];
  bool want_ver_[2] = {false, false};
  int client_first_ = -1;                  // the client's first byte (an SSLv2 client's has the high bit)
  bool hb_inflight_ = false, hb_server_ = false;
  uint32_t hb_len_ = 0;                    // an encrypted heartbeat request's record length
  std::string buf_[2];  // handshake bytes gathered (record headers removed)
  std::string rec_[2];  // a record header or body not complete yet
  int state_[2] = {0, 0};
  bool changed_ = false;
  bool sni_seen_[2] = {false, false};  // a direction's hello had a server_name (its first read)
  uint64_t* undecoded_;  // where certificates OpenSSL could not decode are counted
  uint64_t* raw_cut_;    // where directions whose raw bytes kTlsMaxRaw cut are counted
};

}  // namespace gaspp
