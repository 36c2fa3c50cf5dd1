// gaspp/stream_chunk.hpp — one piece of a reassembled TCP direction as the reassembler hands it out
// (stream/stream.hpp, stream/reassembly.hpp): to the host with the batch's stream data, and to the
// stream modules' on_stream hooks (gaspp/stream_hook.hpp).
#pragma once
#include <cstdint>
#include <type_traits>

#include "gaspp/flow.hpp"

namespace gaspp {

enum StreamChunkFlags : uint8_t {
  kChunkClientLo = 1,   // key endpoint 0 is the client (as FlowRecord::client_lo)
  kChunkEnd = 2,        // the direction ended here (zero-length chunk)
  kChunkConflict = 4,   // overlap with different data at [off, off+len); no bytes
  kChunkHasNext = 8,    // a later chunk of this batch continues the direction (its prev is this one)
};

// StreamChunk::prev when no earlier chunk of the batch holds the bytes right before this one.
constexpr uint32_t kChunkNoPrev = 0xffffffffu;    // the first data of the direction in this batch
constexpr uint32_t kChunkPrevLost = 0xfffffffeu;  // the one before was not stored (chunk overflow)

// One piece of in-order data of one direction (see the header comment).
struct StreamChunk {
  FlowKey key;
  uint64_t flow_id;
  uint64_t off;       // stream offset of the first byte
  uint64_t gap;       // bytes skipped right before this chunk
  uint32_t data;      // where its bytes are in the batch's stream byte buffer (when gathered)
  uint32_t len;
  uint32_t src;       // where the bytes come from: a sorted item (see StreamRef::item_*)
  uint32_t src_off;   // offset into that item's payload
  uint8_t dir;        // 0 client → server, 1 server → client
  uint8_t flags;      // StreamChunkFlags
  uint8_t pad_[2] = {};
  uint32_t prev;      // the batch's previous chunk with data of this flow and direction (kChunkNoPrev...)
  uint32_t slot;      // the flow's table slot (kNoFlow: a flow no longer in the table)
  uint32_t packet;    // the batch packet whose arrival delivered it (kNoFlow: none)
};
static_assert(sizeof(StreamChunk) == 104, "StreamChunk layout");
static_assert(std::is_trivially_copyable_v<StreamChunk>, "chunks are copied between host and device");

}  // namespace gaspp
