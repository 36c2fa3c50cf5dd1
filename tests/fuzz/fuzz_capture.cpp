// libFuzzer target over the capture reader, the decoder, flow tracking and reassembly.
//
// The input is taken three ways: as a whole capture file (global header, records: the walker's
// validation and the batcher, then the decoder on each record, through the CPU backend), after
// the first byte picks a link type, as one raw frame for decode_frame(), and as the message of an
// SMTP mail (the parser and its MIME decoder, hashing every file), as SIP (a datagram, TCP data
// cut in two), as TLS and as FTP (both directions, cut where the bytes say). Built with ASan and UBSan
// (scripts/test.sh builds it with clang and runs it for 60 s).
#include <cstdint>
#include <cstring>
#include <vector>

#include "backend/backend.hpp"
#include "capture/capture_file.hpp"
#include "pipeline/pipeline.hpp"
#include "decode/decoder.hpp"
#include "applayer/ftp.hpp"
#include "applayer/sip.hpp"
#include "applayer/tls.hpp"
#include "applayer/smtp.hpp"

using namespace gaspp;

namespace {
const LinkType kLinks[] = {LinkType::ethernet, LinkType::raw,      LinkType::linux_sll, LinkType::linux_sll2,
                           LinkType::null_bsd, LinkType::loop,     LinkType::ipv4,      LinkType::ipv6};
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // 1. One frame, exactly sized so that any over-read leaves the allocation.
  if (size >= 1) {
    std::vector<uint8_t> frame(data + 1, data + size);
    DecodedPacket p;
    clear(p);
    p.cap_len[0] = uint32_t(frame.size());
    p.wire_len[0] = uint32_t(frame.size()) + (data[0] >> 4);
    decode_frame(frame.data(), uint32_t(frame.size()), kLinks[data[0] % 8], p);
    (void)captured_payload(p);
  }
  // 2. A capture file: a valid-looking global header followed by the input as records, and the
  //    input as a whole file.
  static const uint8_t header[24] = {0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                     0xff, 0xff, 0, 0, 1, 0, 0, 0};
  std::vector<uint8_t> file(header, header + 24);
  file.insert(file.end(), data, data + size);
  static std::unique_ptr<Backend> backend = [] {
    BackendConfig bc;
    bc.threads = 1;
    bc.batch_packets = 4;
    bc.flow.capacity = 64;  // small: every input ends with a sweep of the whole table, and fills it
    return make_cpu_backend(bc);
  }();
  for (int variant = 0; variant < 2; ++variant) {
    std::vector<uint8_t> bytes = variant == 0 ? file : std::vector<uint8_t>(data, data + size);
    try {
      CaptureFile cap = CaptureFile::from_memory(std::move(bytes), "fuzz");
      RunOptions ro;
      ro.policy.max_packets = 4;
      ro.want_decoded = true;
      ro.want_streams = true;
      // Reassembly (4-segment out-of-order buffer here, so drops happen too): every chunk's bytes
      // lie in the batch's buffer.
      RunReport r = run_capture(cap, *backend, ro, nullptr, nullptr,
                                [](const std::vector<StreamChunk>& chunks, std::span<const uint8_t> bytes) {
                                  for (const StreamChunk& c : chunks)
                                    if (!(c.flags & kChunkConflict) && uint64_t(c.data) + c.len > bytes.size())
                                      __builtin_trap();
                                });
      if (r.passed + r.dropped != r.totals.v[c_packets]) __builtin_trap();  // every packet has an outcome
      // Every packet read, and every datagram reassembled from fragments (a packet of its own that
      // was not read: defrag/defrag.hpp), has a flow or a reason for none.
      const auto& t = r.totals.v;
      if (t[c_flow_packets] + t[c_flow_skip_not_ip] + t[c_flow_skip_malformed] + t[c_flow_skip_fragment] +
              t[c_flow_untracked] != t[c_packets] + r.defrag.ipv4_reassembled + r.defrag.ipv6_reassembled)
        __builtin_trap();
    } catch (const CaptureError&) {
    }
  }
  // 3. The input as a mail's message (after DATA was accepted), cut where its bytes say.
  {
    SmtpStats st;
    SmtpConn c(st, 4, kHashMd5 | kHashSha1 | kHashSha256);
    c.feed(1, reinterpret_cast<const uint8_t*>("220 mx\r\n"), 8);
    c.feed(0, reinterpret_cast<const uint8_t*>("DATA\r\n"), 6);
    c.feed(1, reinterpret_cast<const uint8_t*>("354 go\r\n"), 8);
    const size_t cut = size ? data[0] % (size + 1) : 0;
    c.feed(0, data, cut);
    c.feed(0, data + cut, size - cut);
    c.end();
    for (const auto& t : c.txs())
      if (t->mime)
        for (const MimeFile& f : t->mime->files())
          if (f.data.size() > f.size || f.data.size() > kMimeFileKeep) __builtin_trap();
  }
  // 4. The input as SIP: one datagram (exactly sized), then TCP data cut where its bytes say, and
  //    the probe. Every transaction's body stays within what was fed.
  {
    std::vector<uint8_t> dgram(data, data + size);
    SipStats st;
    SipConn c(st, 4);
    c.feed_datagram(0, dgram.data(), dgram.size());
    const size_t cut = size ? data[size - 1] % (size + 1) : 0;
    c.feed(1, data, cut);
    c.feed(1, data + cut, size - cut, size > 2 && data[1] == 'G');
    for (const auto& t : c.txs()) {
      if (t->body_len > size && t->body_len <= kSipMaxBodyBytes) __builtin_trap();
      // The frames lie in the bytes the message keeps (a body beyond the limit is not kept).
      if (t->body_off() > t->raw.size() || t->raw.size() > size) __builtin_trap();
      if (t->body_len <= kSipMaxBodyBytes && t->body_off() + t->body_len != t->raw.size()) __builtin_trap();
    }
    bool response;
    (void)sip_probe(dgram.data(), dgram.size(), &response);
  }
  // 5. The input as TLS: the client's bytes (an SSLv2-format or TLS hello) and the server's, each
  //    cut where the bytes say. What the hellos and the certificate give stays within its limits.
  {
    TlsConn c;
    const size_t cut = size ? data[0] % (size + 1) : 0;
    c.feed(0, data, cut);
    c.feed(0, data + cut, size - cut);
    c.feed(1, data, size - cut);
    c.feed(1, data + size - cut, cut);
    const TlsTx& t = c.tx();
    for (int d = 0; d < 2; ++d) {
      if (!t.random[d].empty() && t.random[d].size() != 32) __builtin_trap();
      if (t.alpn[d].size() > kTlsMaxAlpn) __builtin_trap();
    }
    if (t.cert[1].sans.size() > kTlsMaxSans) __builtin_trap();
  }
  // 6. The input as FTP: the client's lines and the server's, each cut where the bytes say. Lines
  //    and transactions stay within their limits; a reply's codes and texts pair up.
  {
    FtpStats st;
    FtpConn c(st, 8);
    const size_t cut = size ? data[size - 1] % (size + 1) : 0;
    c.feed(1, data, cut);
    c.feed(0, data, size - cut);
    c.feed(1, data + cut, size - cut, size > 3 && data[2] == 'G');
    c.feed(0, data + size - cut, cut);
    // At most kFtpMaxKept kept, at most max_txs (8) of them waiting for their reply.
    if (c.txs().size() > kFtpMaxKept) __builtin_trap();
    size_t waiting = 0;
    for (const auto& t : c.txs()) waiting += !t->done;
    if (waiting > 8) __builtin_trap();
    for (const auto& t : c.txs()) {
      if (t->codes.size() != t->replies.size()) __builtin_trap();
      if (t->command_data.size() > kFtpMaxLine) __builtin_trap();
      for (const std::string& r : t->replies)
        if (r.size() > kFtpMaxLine) __builtin_trap();
    }
  }
  return 0;
}
