// stream/stream_state.hpp — what the reassembler keeps per TCP direction inside the flow record.
//
// Stream offsets are 64-bit byte counts from the first data byte of the direction (the byte after
// its SYN; for a connection picked up midstream, the first byte seen). A 32-bit sequence number is
// unwrapped to the offset nearest to `next_off`, so a direction may carry any number of bytes and
// wrap its sequence space as often as it likes.
#pragma once
#include <cstdint>

#include "gaspp/hd.hpp"

namespace gaspp {

enum StreamSideFlags : uint8_t {
  kStreamBase = 1,      // base_seq is set
  kStreamFin = 2,       // a FIN was seen: fin_off is where the direction ends
  kStreamEnded = 4,     // the direction was closed: holes skipped, the end reported
  kStreamGap = 8,       // a hole was skipped (EVE flow tcp.ts_gap / tc_gap)
  kStreamWinKnown = 16, // win_edge is set
};

struct StreamSide {
  uint64_t next_off;    // every byte before this was delivered or skipped as a gap
  uint64_t fin_off;     // offset of the FIN (valid with kStreamFin)
  uint32_t base_seq;    // sequence number of offset 0
  // Flow tracking's, kept here because the flow record's per-side fields are full: the right edge
  // of the receiver's window for this direction, the furthest (ack + scaled window) it advertised.
  // Data past it is out of window (flow/flow_track.hpp). Valid with kStreamWinKnown.
  uint32_t win_edge;
  uint8_t flags;        // StreamSideFlags
  uint8_t pad_[7] = {};
};
static_assert(sizeof(StreamSide) == 32, "StreamSide layout");

}  // namespace gaspp
