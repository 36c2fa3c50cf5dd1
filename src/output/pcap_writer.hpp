// output/pcap_writer.hpp — writes packets of the batches to a pcap file: `-w` (the packets that
// passed, the offline analogue of forwarding) and `--dump-packets` (packets a module sent to_dump).
//
// Records are copied as they are in the batch (header and bytes), in capture order, so for a pcap
// input the output is byte-identical to the input minus the packets not selected. The file header is
// the input's own for pcap; for other containers (pcapng) a pcap header with the same link type,
// snap length, byte order and time unit as the records the reader produced.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>

#include "capture/capture_file.hpp"
#include "core/packet_batch.hpp"
#include "output/out_file.hpp"

namespace gaspp {

class PcapWriter {
 public:
  // Opens `path` for writing; throws OutputError naming the path on failure (and on any failed
  // write: out_file.hpp).
  PcapWriter(const std::string& path, const CaptureFile& input);
  // For records of a source without a file (live capture): a pcap header for that format, snap
  // length and link type (LINKTYPE_* number).
  PcapWriter(const std::string& path, RecordFormat fmt, uint32_t snaplen, uint32_t raw_link);
  PcapWriter(const PcapWriter&) = delete;
  PcapWriter& operator=(const PcapWriter&) = delete;
  // Writes the packets of b whose verdict byte satisfies `want` (any bit in `any_of`, none in `none_of`).
  void write(const PacketBatch& b, uint8_t any_of, uint8_t none_of);
  // Flushes and closes; throws OutputError if a write failed.
  void close() { f_.close(); }
  uint64_t packets() const { return packets_; }

 private:
  OutFile f_;
  uint64_t packets_ = 0;
};

}  // namespace gaspp
