// core/packet_batch.hpp — a batch of packets as every stage sees it.
//
// Packets sit in a byte buffer, each preceded by its 16-byte pcap record header (in the source's
// byte order and time unit, described by RecordFormat): a batch of a capture file is simply a
// range of that file. rec_off[i] is where packet i's record header starts in the buffer. The
// decoder writes a struct of arrays (DecodedView) and each packet has a one-byte verdict.
//
// BatchView is what a kernel or a CPU worker receives: pointers and sizes only, trivially copyable,
// passed by value. Who owns the memory depends on the backend (host arrays for the CPU backend,
// device buffers for CUDA); PacketBatch below is the host side that the batcher fills.
#pragma once
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <span>
#include <vector>

#include "decode/counters.hpp"
#include "decode/checksum.hpp"
#include "decode/decoder.hpp"
#include "gaspp/fields.hpp"
#include "flow/flow_record.hpp"
#include "gaspp/module.hpp"
#include "stream/stream.hpp"

namespace gaspp {


struct BatchView {
  const uint8_t* data;      // record headers + frames
  uint64_t data_len;        // bytes valid at data
  const uint32_t* rec_off;  // count entries
  uint32_t count;
  RecordFormat fmt;
  LinkType link;
  uint16_t source;          // capture source of every packet in the batch
  DecodedView dec;          // count entries per field
  uint8_t* verdict;         // count entries
  bool validate_checksums;  // compute csum_bad (decode/checksum.hpp); needs whole records
  bool defrag;              // fragments are reassembled (FlowConfig::defrag): see fragment_to_l3
};
static_assert(std::is_trivially_copyable_v<BatchView>, "BatchView is passed to kernels by value");

// With reassembly on, an IP fragment outside a tunnel is a packet up to its IP header only, as in
// Suricata: its transport header, if the first fragment holds one, belongs to the datagram that is
// reassembled from it (defrag/defrag.hpp), which carries it. So no module matches ports or TCP
// fields on a fragment, and a transport header cut by the fragmentation is no malformed packet.
GASPP_HD GASPP_FORCEINLINE void fragment_to_l3(DecodedPacket& p) {
  if (!(p.ip_frag[0] & kFragIsFragment) || p.tunnel_depth[0] || p.l4_off[0] == kNoOffset) return;
  const uint8_t proto = p.ip_proto[0], frag = p.ip_frag[0], bad = p.malformed[0];
  const bool l4_fault = bad >= uint8_t(MalformedReason::tcp_truncated) && bad <= uint8_t(MalformedReason::icmp_truncated);
  p.l4[0] = uint8_t(L4::none);
  p.l4_off[0] = p.payload_off[0] = kNoOffset;
  p.payload_len[0] = p.tcp_seq[0] = p.tcp_ack[0] = p.tcp_tsval[0] = p.tcp_tsecr[0] = 0;
  p.sport[0] = p.dport[0] = p.icmp_id[0] = p.tcp_flags[0] = p.tcp_win[0] = p.tcp_mss[0] = 0;
  p.icmp_type[0] = p.icmp_code[0] = p.tcp_wscale[0] = p.tcp_opts[0] = p.tcp_sack_n[0] = 0;
  for (int k = 0; k < 8; ++k) p.tcp_sack[k] = 0;
  if (l4_fault) p.malformed[0] = 0;
  // The transport header's events go with it (Suricata decodes no transport header on a fragment).
  int kept = 0;
  for (int k = 0; k < kDecodeEventSlots; ++k) {
    const uint8_t e = p.events[k] & 0x7f;
    const bool l4_event = e >= uint8_t(DecodeEvent::tcp_pkt_too_small) || e == uint8_t(DecodeEvent::ipv4_icmpv6) ||
                          e == uint8_t(DecodeEvent::ipv6_icmpv4);
    if (e && !l4_event) p.events[kept++] = p.events[k];
  }
  for (int k = kept; k < kDecodeEventSlots; ++k) p.events[k] = 0;
  p.ip_proto[0] = proto;
  p.ip_frag[0] = frag;
  p.flow_hash[0] = detail::symmetric_flow_hash(p);
}

// Decodes packet i of a batch into p: the per-packet step both backends run.
GASPP_HD GASPP_FORCEINLINE void decode_batch_packet(const BatchView& v, uint32_t i, DecodedPacket& p) {
  const uint64_t off = v.rec_off[i];
  decode_record(v.data + off, v.data_len - off, v.fmt, v.link, p);
  p.source[0] = v.source;
  if (v.defrag) fragment_to_l3(p);
  if (v.validate_checksums) p.csum_bad[0] = checksum_status(v.data + off + kRecordHeaderBytes, p);
}

// Host: decodes packets [lo, hi) of a batch one after the other, calling fn(i, p) for each. The
// records a few ahead are asked into the cache first: a batch is far larger than the caches and
// read one after the other its records were a memory wait per packet (the CPU backend's decode,
// the sharded backend's placement).
template <class Fn>
inline void decode_batch_range(const BatchView& v, uint64_t lo, uint64_t hi, DecodedPacket& p, Fn&& fn) {
  constexpr uint64_t kAhead = 6;  // records in flight: enough to cover a miss at ~1 KB a packet
  for (uint64_t i = lo; i < hi; ++i) {
    if (i + kAhead < hi) {
      const uint8_t* r = v.data + v.rec_off[i + kAhead];
      __builtin_prefetch(r);
      __builtin_prefetch(r + 64);
    }
    decode_batch_packet(v, uint32_t(i), p);
    fn(i, p);
  }
}

// Header-only slicing (CUDA): the first bytes of every record (its pcap header and the start of the
// frame, `len` = slice_head_len of them) are gathered into device memory and decoded from there
// (`head`). A packet whose headers do not fit fails to decode from its head (every read is checked
// against the captured length, which the head clips) and is decoded again from the whole record,
// so the result always equals decode_batch_packet's. Returns whether the whole record was needed.
// kSliceHeadBytes: the 16-byte record header and 80 frame bytes, room for Ethernet, an 802.1Q tag,
// IPv6 and a TCP header without options (78 bytes).
constexpr uint32_t kSliceHeadBytes = 96;
GASPP_HD GASPP_FORCEINLINE uint32_t slice_head_len(const BatchView& v, uint32_t i, uint32_t want) {
  const uint64_t room = v.data_len - v.rec_off[i];
  return room < want ? uint32_t(room) : want;
}
GASPP_HD inline bool decode_sliced_packet(const BatchView& v, const uint8_t* head, uint32_t n, uint32_t i,
                                          DecodedPacket& p) {
  if (v.validate_checksums) {  // checksums read every byte: automatic slicing is off, --slice on is not
    decode_batch_packet(v, i, p);
    return true;
  }
  decode_record(head, n, v.fmt, v.link, p, v.data_len - v.rec_off[i]);
  p.source[0] = v.source;
  if (v.defrag) fragment_to_l3(p);
  if (n < 16) return false;  // the whole record was there (or nothing was)
  const RecordHeader h = read_record_header(head, v.fmt);
  if (h.cap_len <= n - 16) return false;  // the whole frame fit
  if (p.malformed[0] || h.wire_len < h.cap_len) {
    decode_batch_packet(v, i, p);
    return true;
  }
  return false;  // decoded from the head alone; the lengths are the record's (decode_record)
}

// Host-side storage of the decoded fields (used when the caller asks for them back).
class DecodedArrays {
 public:
  void resize(uint32_t packets) {
#define GASPP_X(type, name, n) name##_.resize(size_t(packets) * (n));
    GASPP_DECODED_FIELDS(GASPP_X)
#undef GASPP_X
  }
  DecodedView view() {
    DecodedView v;
#define GASPP_X(type, name, n) v.name = name##_.data();
    GASPP_DECODED_FIELDS(GASPP_X)
#undef GASPP_X
    return v;
  }

 private:
#define GASPP_X(type, name, n) std::vector<type> name##_;
  GASPP_DECODED_FIELDS(GASPP_X)
#undef GASPP_X
};

// A range of host memory records live in: what a source lists (Source::regions()) and a backend
// registers for device access (Backend::attach_sources), a batch's span lying inside one.
struct MemoryRegion {
  const uint8_t* base = nullptr;
  uint64_t len = 0;
};

// The host half of one batch slot: filled by the batcher, read back after the backend finishes.
// Arrays are owned by the backend (pinned memory for CUDA) and sized for `capacity` packets.
struct PacketBatch {
  uint32_t capacity = 0;
  uint32_t count = 0;
  uint64_t first_index = 0;     // number of the batch's first packet in the source (0-based)
  const uint8_t* h_span = nullptr;  // host bytes holding the records (a file range), not owned
  uint64_t span_len = 0;
  RecordFormat fmt{};
  LinkType link = LinkType::ethernet;
  uint16_t source = 0;              // 0: the capture file (live sources number their interfaces)
  uint32_t* h_rec_off = nullptr;    // offsets into h_span
  uint64_t record_bytes = 0;        // sum of 16 + caplen over the batch (occupancy numerator)
  uint8_t* h_verdict = nullptr;     // filled by the backend
  Counters counters{};              // filled by the backend
  bool want_decoded = false;        // copy all decoded fields back into `decoded`
  DecodedArrays decoded;
  bool compacted = false;           // set by the CUDA backend when it packed the batch first
  uint64_t max_ts_ns = 0;           // latest capture time in the batch (drives flow expiry offline)
  std::vector<FlowRecordOut> flow_records;  // flows that left the table during this batch, sorted
  // Per packet (count entries, filled by the backend when want_decoded): flow slot (kNoFlow when
  // untracked) and FlowPacketFlags.
  std::vector<uint32_t> flow_slot;
  std::vector<uint8_t> flow_flags;
  // Reassembled TCP data of the batch (stream/stream.hpp), filled when want_streams: chunks grouped
  // by flow id and direction, in stream order within each; a chunk's bytes are at
  // stream_data().data() + data: in stream_bytes, or where a backend hands out its own memory
  // instead of copying (stream_bytes_lent: the CUDA backend's pinned buffer of the slot, valid
  // until the slot runs again, after the batch's consumers).
  bool want_streams = false;
  std::vector<StreamChunk> stream_chunks;
  std::vector<uint8_t> stream_bytes;
  std::span<const uint8_t> stream_bytes_lent;
  std::span<const uint8_t> stream_data() const {
    return stream_bytes_lent.data() ? stream_bytes_lent : std::span<const uint8_t>(stream_bytes);
  }
  // Modules (core/modules.hpp): the events they raised (any order; ModuleSet sorts them) and their
  // counters, kModuleCounters per module in pipeline order. Verdict bits are in h_verdict.
  std::vector<ModuleEvent> events;
  std::vector<uint64_t> module_counts;
  // Modules with flow tracking: host-visible, one entry per packet, valid for a packet whose verdict
  // has kVerdictAlerted and whose first_ts is not 0: its flow's counters right after it (the
  // verdict walk writes them; alerts show them as Suricata's `flow` object). Null otherwise.
  const FlowCountsAt* h_pkt_counts = nullptr;
  // IP datagrams reassembled from fragments (defrag/defrag.hpp): their indices, ascending; each
  // follows the fragment that completed it. They are packets of the pipeline (decoded, tracked,
  // inspected) but not records of the capture. When a batch has any, its records are copies in
  // h_rebuilt and h_span points there.
  std::vector<uint32_t> reassembled;
  std::vector<uint8_t> h_rebuilt;
  // Decoder events raised on the host (the defragmenter's, on the fragment it looked at): packet
  // index (ascending) and DecodeEvent. Backends do not see them; ModuleSet hands them to the
  // modules' host side (ModuleInstance::on_host_events) and adds them to the packet's events.
  std::vector<std::pair<uint32_t, uint8_t>> host_events;

  bool is_reassembled(uint32_t i) const {
    return !reassembled.empty() && std::binary_search(reassembled.begin(), reassembled.end(), i);
  }
  // The capture's number of packet i (1-based); a reassembled datagram has its last fragment's.
  uint64_t packet_number(uint32_t i) const {
    if (reassembled.empty()) return first_index + i + 1;
    const auto before = std::upper_bound(reassembled.begin(), reassembled.end(), i) - reassembled.begin();
    return first_index + i + 1 - uint64_t(before);
  }
  // The verdict of record i: a fragment that completed a datagram is dropped, and dumped, with it.
  uint8_t record_verdict(uint32_t i) const {
    const uint8_t v = h_verdict[i];
    return i + 1 < count && is_reassembled(i + 1) ? uint8_t(v | (h_verdict[i + 1] & (kVerdictDrop | kVerdictToDump))) : v;
  }
};

// sort_flow_records (flow/flow_record.hpp) and sort_stream_chunks (stream/stream.hpp) put what a
// batch hands over in the order both backends agree on.

// Packet i of a batch decoded again on the host, as the backend decoded it (fragments cut to L3
// when `defrag`), with the events the host raised on it (PacketBatch::host_events) added.
inline void decode_on_host(const PacketBatch& b, uint32_t i, bool defrag, DecodedPacket& d) {
  const uint64_t off = b.h_rec_off[i];
  decode_record(b.h_span + off, b.span_len - off, b.fmt, b.link, d);
  if (defrag) fragment_to_l3(d);
  if (b.host_events.empty()) return;
  const auto first = std::lower_bound(b.host_events.begin(), b.host_events.end(), std::pair<uint32_t, uint8_t>{i, 0});
  for (auto it = first; it != b.host_events.end() && it->first == i; ++it) detail::raise(d, DecodeEvent(it->second));
}

}  // namespace gaspp
