// gaspp/stream_state.hpp — what the reassembler keeps per TCP direction inside the flow record.
//
// Stream offsets are 64-bit byte counts from the first data byte of the direction (the byte after
// its SYN; for a connection picked up midstream, the first byte seen). A 32-bit sequence number is
// unwrapped to the offset nearest to `high_off`, the furthest point the direction is known to have
// reached: the end of its furthest segment, or the furthest acknowledgement its receiver sent
// within the window it had advertised (flow/flow_track.hpp; an ACK past that edge, as Suricata's
// "ACK after next_win", does not move it, and none does for a session picked up midstream). A
// valid segment lies within a window (at most 2^30 bytes) of that point, so a direction may carry
// any number of bytes, wrap its sequence space as often as it likes, and have data more than 2^31
// bytes beyond its lowest hole (bytes the capture missed but the receiver acknowledged).
#pragma once
#include <cstdint>

#include "gaspp/hd.hpp"

namespace gaspp {

enum StreamSideFlags : uint8_t {
  kStreamBase = 1,      // base_seq is set
  kStreamFin = 2,       // a FIN was seen: fin_seq is where the direction ends
  kStreamEnded = 4,     // the direction was closed: holes skipped, the end reported
  kStreamGap = 8,       // a hole was skipped (EVE flow tcp.ts_gap / tc_gap)
  kStreamWinKnown = 16, // win_edge is set
};

struct StreamSide {
  uint64_t next_off;    // every byte before this was delivered or skipped as a gap
  uint64_t high_off;    // the furthest offset the direction reached (sent, or acknowledged)
  uint32_t base_seq;    // sequence number of offset 0
  // Flow tracking's, kept here because the flow record's per-side fields are full: the right edge
  // of the receiver's window for this direction, the furthest (ack + scaled window) it advertised.
  // Data past it is out of window (flow/flow_track.hpp). Valid with kStreamWinKnown.
  uint32_t win_edge;
  uint8_t flags;        // StreamSideFlags
  uint8_t pad0_ = 0;
  uint16_t urgent_oob;  // urgent bytes taken out of band so far (stream.urgent oob); later
                        // sequence numbers map to offsets this much lower
  uint32_t fin_seq;     // sequence number (less urgent_oob) where the direction ends, with kStreamFin
};
static_assert(sizeof(StreamSide) == 32, "StreamSide layout");

// Stream offset of sequence number `seq` in direction S: the unwrapping nearest to high_off.
GASPP_HD GASPP_FORCEINLINE int64_t seq_to_off(const StreamSide& S, uint32_t seq) {
  const uint32_t expect = S.base_seq + uint32_t(S.high_off);
  return int64_t(S.high_off) + int64_t(int32_t(seq - expect));
}

}  // namespace gaspp
