// output/pcap_writer.cpp — see pcap_writer.hpp.
#include "output/pcap_writer.hpp"

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace gaspp {

namespace {

// A pcap file header for records in fmt.
void pcap_header(uint8_t (&h)[24], RecordFormat fmt, uint32_t snaplen, uint32_t raw_link) {
  const uint32_t magic = fmt.nanos ? 0xa1b23c4du : 0xa1b2c3d4u;
  const uint32_t v[6] = {magic, 2u | (4u << 16), 0, 0, snaplen ? snaplen : 262144u, raw_link};
  for (int k = 0; k < 6; ++k) {
    const int at = k * 4;
    // version: two 16-bit fields; zone and sigfigs 0; every field in the records' byte order.
    if (k == 1) {
      const uint16_t major = 2, minor = 4;
      h[at + 0] = uint8_t(fmt.swapped ? major >> 8 : major);
      h[at + 1] = uint8_t(fmt.swapped ? major : major >> 8);
      h[at + 2] = uint8_t(fmt.swapped ? minor >> 8 : minor);
      h[at + 3] = uint8_t(fmt.swapped ? minor : minor >> 8);
      continue;
    }
    for (int b = 0; b < 4; ++b) h[at + b] = uint8_t(v[k] >> (fmt.swapped ? 8 * (3 - b) : 8 * b));
  }
}

}  // namespace

PcapWriter::PcapWriter(const std::string& path, const CaptureFile& in) : f_(path, "wb") {
  uint8_t h[24];
  if (std::strcmp(in.container(), "pcap") == 0 && in.size() >= 24) std::memcpy(h, in.data(), 24);
  else pcap_header(h, in.format(), in.snaplen(), in.raw_link_type());
  f_.write(h, 24);
}

PcapWriter::PcapWriter(const std::string& path, RecordFormat fmt, uint32_t snaplen, uint32_t raw_link) : f_(path, "wb") {
  uint8_t h[24];
  pcap_header(h, fmt, snaplen, raw_link);
  f_.write(h, 24);
}

void PcapWriter::write(const PacketBatch& b, uint8_t any_of, uint8_t none_of) {
  for (uint32_t i = 0; i < b.count; ++i) {
    if (b.is_reassembled(i)) continue;  // its fragments are the capture's packets
    const uint8_t v = b.record_verdict(i);
    if ((v & none_of) || (any_of && !(v & any_of))) continue;
    const uint8_t* r = b.h_span + b.h_rec_off[i];
    const uint64_t n = kRecordHeaderBytes + read_record_header(r, b.fmt).cap_len;
    f_.write(r, n);
    ++packets_;
  }
}

}  // namespace gaspp
