// stream/stream.hpp — TCP stream reassembly: configuration, what it hands consumers, and the
// out-of-order buffer. The per-packet logic is in stream/reassembly.hpp.
//
// What a consumer gets: each direction of each TCP connection as StreamChunks, in order, each byte
// once. A chunk says which flow and direction (with the 5-tuple), its stream offset (bytes from the
// direction's first data byte), its length, and the bytes skipped right before it (a gap that
// never filled). A zero-length chunk with kChunkEnd marks the end of a direction (FIN/RST close,
// expiry of a flow that still held data, or the end of the run); kChunkConflict chunks carry no
// data and report that a later copy of bytes [off, off+len) differed from the copy kept.
//
// Configuration (StreamConfig, CLI flags in docs/usage.md):
//   overlap              which copy of a byte wins when copies differ: first (default, like
//                        Suricata's stream engine on most targets and the GASPP paper) or last
//   held_segments/bytes  the out-of-order buffer: segments waiting beyond a hole, carried from one
//                        batch to the next. Default: 65536 segments whatever the batch size (so
//                        small batches, live capture's among them, keep what large ones keep) and
//                        64 MiB in each of its two byte pools (StreamCounts). Full: the segment
//                        that does not fit is dropped and counted (out_of_order_dropped); its
//                        bytes become a gap.
//   flow_held_segments/bytes  per direction: when more than this waits beyond a hole, the hole is
//                        skipped (reported as a gap) and delivery goes on. Default 256 and 1 MiB.
//   urgent               TCP urgent data (Suricata's stream.reassembly.urgent.policy), for a
//                        segment with URG set and an urgent pointer within its payload:
//                          inline  (default, as Suricata) the data stays in the stream as sent;
//                          oob     its last byte is out of band: left out of the stream, and the
//                                  direction's later offsets close up over it (RFC 6093 3.1's one
//                                  byte; counted urgent_oob_bytes);
//                          gap     its last byte is left out and its place stays a hole, which is
//                                  reported as a gap when the hole is skipped (urgent_gap_bytes);
//                          drop    in IPS mode the segment is dropped, reason "stream urgent",
//                                  and ignored by flow tracking (tcp_urgent_dropped); elsewhere
//                                  inline.
//                        A segment whose only byte is urgent adds nothing under oob and gap.
//   urgent_oob_limit     oob keeps at most 65535 out-of-band bytes per direction; past that,
//                        Suricata's oob-limit-policy: inline (default), gap, or drop (the
//                        segment is not reassembled; in IPS mode it is dropped). Counted
//                        urgent_oob_limit.
#pragma once
#include <cstdint>
#include <type_traits>
#include <vector>

#include "decode/decoder.hpp"
#include "flow/flow_record.hpp"
#include "gaspp/module.hpp"
#include "gaspp/stream_chunk.hpp"

namespace gaspp {

enum class OverlapPolicy : uint8_t { first = 0, last = 1 };
enum class UrgentPolicy : uint8_t { inline_ = 0, oob = 1, gap = 2, drop = 3 };
constexpr uint16_t kUrgentOobLimit = 0xffff;  // out-of-band bytes per direction (Suricata's)

constexpr uint32_t kDefaultHeldSegments = 65536;

struct StreamConfig {
  bool enabled = true;
  OverlapPolicy overlap = OverlapPolicy::first;
  uint32_t held_segments = kDefaultHeldSegments;
  uint32_t held_bytes = 64u << 20;
  uint32_t flow_held_segments = 256;
  uint32_t flow_held_bytes = 1u << 20;
  UrgentPolicy urgent = UrgentPolicy::inline_;
  UrgentPolicy urgent_oob_limit = UrgentPolicy::inline_;  // inline, gap or drop
};
const char* urgent_policy_name(UrgentPolicy p);  // "inline", "oob", "gap", "drop"

// A segment waiting beyond a hole: one entry of the out-of-order buffer, carried to the next batch
// with a copy of its bytes in the buffer's byte pool.
struct StreamHeld {
  FlowKey key;
  uint64_t flow_id;
  uint64_t off;        // stream offset of its first byte
  uint64_t next_off;   // the direction's next_off when it was written (to flush it if the flow is gone)
  uint32_t len;
  uint32_t data;       // offset of its bytes in the pool
  uint32_t slot;       // flow table slot of its flow
  uint8_t dir;
  uint8_t client_lo;
  uint8_t buffered;    // it arrived beyond a hole (counts as released when delivered)
  uint8_t pool;        // which of the two byte pools holds its bytes
};
static_assert(std::is_trivially_copyable_v<StreamHeld>, "held segments live in device memory");

// The out-of-order buffer's counts (device memory for CUDA). The segments' descriptions are two
// sets used in turn (a batch reads what the previous one held and writes what it holds). Their
// bytes sit in one of two pools and stay where they are while they wait: new segments are
// appended to the active pool; when it is more than half used at the start of a batch, the other
// pool becomes active (emptied) and that batch moves every waiting segment into it, so bytes are
// copied again only once per half pool of traffic.
struct StreamCounts {
  uint32_t held_n[2];      // segments in each set of descriptions
  uint32_t live_bytes[2];  // their bytes (16-byte places)
  uint32_t pool_used[2];   // bytes appended to each pool since it was last emptied
  uint32_t active;         // the pool new bytes go to
  uint32_t compact;        // this batch moves every waiting segment into the active pool
  uint32_t chunk_n;        // chunks of the current batch
  uint32_t bytes_used;     // chunk bytes of the current batch (when gathered)
  uint32_t peak_segs, peak_bytes;
  uint32_t compactions;    // batches that moved the waiting segments to the other pool
};

// Before the walk that reads set `in`: its counts clamped to the limits (writers count what did not
// fit), the peaks, the set `out` and the chunk counts emptied, and the pool decision above.
GASPP_HD inline void stream_begin(StreamCounts& c, int in, uint32_t held_cap, uint32_t pool_bytes) {
  const int out = in ^ 1;
  if (c.held_n[in] > held_cap) c.held_n[in] = held_cap;
  if (c.held_n[in] > c.peak_segs) c.peak_segs = c.held_n[in];
  if (c.live_bytes[in] > c.peak_bytes) c.peak_bytes = c.live_bytes[in];
  c.held_n[out] = c.live_bytes[out] = 0;
  c.chunk_n = c.bytes_used = 0;
  const uint32_t a = c.active;
  c.compact = c.pool_used[a] > pool_bytes / 2;
  if (c.compact) {
    c.active = a ^ 1;
    c.pool_used[a ^ 1] = 0;
    ++c.compactions;
  }
}

// Scratch entry of one flow's walk: a segment (from the batch or held) not yet delivered.
struct StreamPending {
  uint64_t off;
  uint32_t len;
  uint32_t src;        // sorted item
  uint32_t skip;       // offset into the item's payload that corresponds to `off`
  uint8_t dir;
  uint8_t live;
  uint8_t buffered;
  uint8_t pad_ = 0;
};

// What the walk of a batch needs for reassembly; trivially copyable, passed to kernels by value.
//
// Items: the walk receives a flow's work as sorted "items". Item v < held_cap is held segment v of
// the previous batch (valid when v < *held_in_n; the rest are unused); item v >= held_cap is packet
// v - held_cap of the batch.
struct StreamRef {
  StreamConfig cfg;
  const uint8_t* data;          // batch records (payload of packet i at data + rec_off[i] + 16 + payload_off)
  const uint32_t* rec_off;
  const StreamHeld* held_in;    // what the previous batch held
  const uint32_t* held_in_n;
  StreamHeld* held_out;         // what this batch holds
  uint32_t* held_out_n;         // zero before the walk (stream_begin)
  uint32_t* held_out_bytes;
  uint8_t* pool[2];             // the byte pools (see StreamCounts)
  StreamCounts* counts;
  uint32_t held_cap;
  StreamPending* pend;          // scratch: one entry per sorted item
  StreamChunk* chunks;
  uint32_t* chunk_n;            // zero before the walk
  uint32_t chunk_cap;
  // The CPU: each walking worker takes chunk places kChunkBlock at a time from chunk_n into its
  // own block (null on the GPU, whose atomics are cheap: one place at a time), so that cores do
  // not contend on one counter for every chunk (measured on 16 cores: 12.4 Mpps with reassembly
  // before, 12.8-14.3 after; the walk's bound lies elsewhere, docs/architecture.md). The backend
  // closes the blocks' unused ends after the walk (cpu_backend.cpp).
  struct ChunkBlock {
    uint32_t next, end;
  }* block;
  uint32_t* bytes_used;         // chunk bytes assigned so far (when gather)
  bool gather;                  // assign each chunk a place in the byte buffer
  StreamHooks hooks;            // stream modules to call for each piece (hooks.n = 0: none)

  GASPP_HD bool item_is_held(uint32_t v) const { return v < held_cap; }
  GASPP_HD uint32_t item_packet(uint32_t v) const { return v - held_cap; }
};
static_assert(std::is_trivially_copyable_v<StreamRef>, "StreamRef is passed to kernels by value");

constexpr uint32_t kChunkBlock = 64;

// Bytes of a chunk's source: a packet's payload or a held segment's copy.
GASPP_HD GASPP_FORCEINLINE const uint8_t* stream_item_bytes(const StreamRef& s, const DecodedView& d, uint32_t v) {
  if (s.item_is_held(v)) return s.pool[s.held_in[v].pool] + s.held_in[v].data;
  const uint32_t i = s.item_packet(v);
  return s.data + s.rec_off[i] + kRecordHeaderBytes + d.payload_off[i];
}

// Sizes shared by the backends.
GASPP_HD GASPP_FORCEINLINE uint32_t stream_held_cap(const StreamConfig& c, uint32_t batch_packets) {
  return c.held_segments ? c.held_segments : kDefaultHeldSegments;
}
GASPP_HD GASPP_FORCEINLINE uint32_t stream_chunk_cap(uint32_t batch_packets, uint32_t held_cap) {
  // Each item delivers in at most two pieces (it can be cut once where an earlier copy starts);
  // ends and conflicts come on top, rarely. Overflow is counted (chunk_overflow).
  return 2 * (batch_packets + held_cap) + 4096;
}

const char* overlap_policy_name(OverlapPolicy p);

// Groups chunks by (flow id, direction), keeping their order within a group (which is stream order:
// one thread emits a direction's chunks, in order). Makes the lists equal on both backends.
void sort_stream_chunks(std::vector<StreamChunk>& v);
// The same order, of n chunks at src (another buffer: the CUDA backend's pinned copy), into out.
void sort_stream_chunks_from(const StreamChunk* src, size_t n, std::vector<StreamChunk>& out);

}  // namespace gaspp
