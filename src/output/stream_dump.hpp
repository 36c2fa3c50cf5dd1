// output/stream_dump.hpp — `--dump-streams DIR`: the reassembled bytes of every TCP direction in a
// file of its own, as tcpflow names them, plus an index of what is not in the files.
//
// File names: SRC.SPORT-DST.DPORT for the direction's sender and receiver, IPv4 addresses
// zero-padded as tcpflow writes them (192.168.001.002.01234-010.000.000.001.00080), IPv6 in its
// usual text form, ports 5 digits; a VLAN-tagged flow adds "--vlanA.B"; a later connection on the
// same 5-tuple adds "c1", "c2", ... A file holds the direction's delivered bytes back to back; the
// bytes that never arrived are not written (like tshark's "follow tcp stream" and tcpflow).
//
// DIR/index.tsv, one line per event, tab-separated, with a header:
//   file  flow_id  dir  event  stream_offset  length  file_offset
// event is `gap` (length bytes missing at stream_offset; the next byte of the file, at
// file_offset, is stream byte stream_offset + length), `conflict` (a later copy of those bytes
// differed from the one delivered), or `end` (the direction ended; stream_offset is its length).
// dir is `c2s` or `s2c`. Directions whose flow was still open at the end of the run get an `end`
// line only if they still held out-of-order data; the others simply stop.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <unordered_map>
#include <span>
#include <vector>

#include "output/out_file.hpp"
#include "stream/stream.hpp"

namespace gaspp {

// The tcpflow-style name of a chunk's direction ("" suffix for the first connection).
std::string stream_file_name(const StreamChunk& c);

class StreamDumpWriter {
 public:
  // Creates DIR if needed and opens DIR/index.tsv; throws std::runtime_error naming the path, and
  // OutputError for any write that fails (out_file.hpp).
  explicit StreamDumpWriter(const std::string& dir);
  StreamDumpWriter(const StreamDumpWriter&) = delete;
  StreamDumpWriter& operator=(const StreamDumpWriter&) = delete;
  // Appends a batch's chunks (grouped by flow and direction, in order within each).
  void write(const std::vector<StreamChunk>& chunks, std::span<const uint8_t> bytes);
  // Closes every file, checked; throws OutputError naming the first that could not be written.
  void close();
  uint64_t files() const { return streams_.size(); }
  uint64_t bytes() const { return bytes_; }

 private:
  struct Stream {
    uint64_t id = 0;       // flow id * 2 + direction
    std::string name;
    uint64_t written = 0;  // bytes in the file
    OutFile f;
    uint64_t last_use = 0;
  };
  Stream& stream_of(const StreamChunk& c);
  OutFile& open(Stream& s);
  std::string dir_;
  OutFile index_;
  std::unordered_map<uint64_t, Stream> streams_;          // by flow id * 2 + dir
  std::unordered_map<std::string, uint32_t> name_uses_;   // connections seen per 5-tuple name
  std::unordered_map<uint64_t, std::string> conn_suffix_; // flow id → "", "c1", "c2", ...
  std::vector<uint64_t> open_;                            // streams with an open file
  uint64_t clock_ = 0, bytes_ = 0;
  static constexpr size_t kMaxOpen = 128;                 // files kept open at once
};

}  // namespace gaspp
