// capture/af_packet_source.hpp — a live network interface as a Source (capture/source.hpp): Linux
// AF_PACKET with a TPACKET_V3 receive ring (`gaspp -i IFACE`), as Suricata's af-packet capture.
//
// The kernel writes frames into a ring of blocks mapped into our memory (AfPacketOptions: the
// block size and count, and the block timeout after which a block that is not full is handed over
// anyway, so that a quiet link still delivers). A block belongs to us from when the kernel marks
// it ready until every record in it has been released (Source::release: the batch that held them
// finished), then goes back to the kernel, in ring order. While the block the kernel would fill
// next is still ours the kernel drops what arrives, and counts it: PACKET_STATISTICS, read at the
// end (report(): kernel_packets, kernel_drops — Suricata's capture.kernel_packets/kernel_drops).
//
// TPACKET_V2 (AfPacketOptions::version 2, Suricata's `tpacket-v3: no`) is the other ring: a slot per
// frame, each ours as soon as the kernel has written it, so a packet is read at once instead of when
// its block is full or times out (the block timeout is whole milliseconds: the floor of V3's latency
// on a quiet link), at the cost of one status word per frame and slots of a fixed size
// (AfPacketOptions::frame_size; frames longer than a slot are cut and counted as cut by the snap
// length). Slots go back to the kernel one by one, in ring order, as their records are released.
//
// Records are written in place: the socket reserves room before each frame (PACKET_RESERVE), where
// the source writes the 16-byte pcap record header (nanosecond times, host byte order). A frame
// whose 802.1Q tag the kernel took out (VLAN offload: TP_STATUS_VLAN_VALID) gets it back, as it
// was on the wire, by moving its MAC addresses 4 bytes into the same room. The ring is the
// source's region (regions()): records are not back to back (the kernel's frame headers and
// alignment lie between them, and a block's unused tail), but they follow one another at rising
// addresses until the ring wraps, so the batcher makes a batch a span of the ring with gaps, read
// in place — by the CPU backend, and by the CUDA backend through the ring registered for the device
// (cudaHostRegister) or packed into its staging where the records fill too little of the span.
//
// A BPF filter (AfPacketOptions::filter, tcpdump syntax) is compiled with libpcap for the
// interface's link type and attached to the socket before it is bound (SO_ATTACH_FILTER): what it
// refuses never reaches the ring. PACKET_FANOUT (AfPacketOptions::fanout_group) lets several
// sockets, of this process or others, share the interface's traffic by flow (cluster_flow), CPU
// (cluster_cpu) or receive queue (cluster_qm), as Suricata's cluster-type.
//
// Errors setting the socket up (no such interface, no permission, a filter that does not compile,
// a ring the kernel refuses) throw CaptureError naming the interface and the reason.
//
// Example:
//   AfPacketSource src(AfPacketOptions{.iface = "eth0"});
//   RunReport rep = run_source(src, backend, opt);   // until opt.stop
#pragma once
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "capture/source.hpp"

namespace gaspp {

struct AfPacketOptions {
  std::string iface;
  uint32_t block_size = 1u << 20;   // bytes; a power of two, a multiple of the page size (af-packet block-size)
  uint32_t block_count = 128;       // blocks in the ring (ring-size: block_size * block_count bytes)
  uint32_t block_timeout_ms = 10;   // a block not yet full is handed over after this (af-packet block-timeout)
  uint32_t snaplen = 262144;        // bytes kept of each frame (larger ones are cut, as tcpdump -s)
  std::string filter;               // BPF expression ("" = every frame)
  int fanout_group = -1;            // PACKET_FANOUT group id, -1 = none (af-packet cluster-id)
  bool ignore_outgoing = false;     // leave out frames this host sends (inline: what gaspp forwards)
  std::string cluster_type = "cluster_flow";  // cluster_flow, cluster_cpu, cluster_qm
  int version = 3;                  // TPACKET_V3 (blocks) or TPACKET_V2 (a slot per frame)
  // V2: bytes per slot, a power of two of at least 256; 0: the smallest that holds the interface's
  // largest frame (its MTU, a tag) and the room in front of it. The ring keeps its total size.
  uint32_t frame_size = 0;
};

class AfPacketSource final : public Source {
 public:
  explicit AfPacketSource(const AfPacketOptions& opt);
  ~AfPacketSource() override;
  AfPacketSource(const AfPacketSource&) = delete;
  AfPacketSource& operator=(const AfPacketSource&) = delete;

  SourceStatus next(SourceRecord& r, uint64_t wait_ns) override;
  void release(uint64_t seq) override;
  SourceReport report() const override;
  void finish() override;
  int wait_fd() const override { return fd_; }
  std::vector<MemoryRegion> regions() const override {
    if (!ring_) return {};
    return {MemoryRegion{ring_, ring_bytes_}};
  }
  void refresh_counts() override { read_kernel_stats(); }

  // The link type frames arrive in (LINKTYPE_* number), the snap length and the record format: what
  // a pcap writer of this source's packets needs.
  uint32_t raw_link() const { return raw_link_; }
  uint32_t snaplen() const { return opt_.snaplen; }
  static constexpr RecordFormat kFormat{0, 1};  // host (little-endian) order, nanoseconds

 private:
  uint8_t* block(uint32_t k) const { return ring_ + size_t(k) * opt_.block_size; }
  uint8_t* slot(uint64_t seq) const { return ring_ + size_t(seq % frames_) * opt_.frame_size; }
  void read_kernel_stats();
  SourceStatus next_v2(SourceRecord& r, uint64_t wait_ns);
  // Writes the record header in front of the frame at `frame` (putting back a VLAN tag the kernel
  // took out) and fills r.
  void make_record(SourceRecord& r, uint8_t* frame, uint32_t cap, uint32_t wire, uint32_t sec, uint32_t nsec,
                   uint32_t status, uint16_t tci, uint16_t tpid);
  // Waits for the kernel until the deadline (0: starts it now); false once it passed, or on a
  // socket error (socket_error_ set).
  bool wait_ring(uint64_t& deadline, uint64_t wait_ns, const volatile uint32_t* status_word);

  AfPacketOptions opt_;
  int fd_ = -1;
  uint8_t* ring_ = nullptr;
  size_t ring_bytes_ = 0;
  uint32_t raw_link_ = 1;
  LinkType link_ = LinkType::ethernet;
  // The block being read: its index, packets left in it and the next one's header.
  uint32_t cur_ = 0;
  bool open_ = false;
  uint32_t left_ = 0;
  uint8_t* pkt_ = nullptr;
  // Blocks read to their end and not yet handed back: (block, its last record's seq), in ring order.
  std::deque<std::pair<uint32_t, uint64_t>> held_;
  uint64_t seq_ = 0;
  // V2: slots in the ring; records below `released_` have gone back to the kernel.
  uint64_t frames_ = 0, released_ = 0;
  uint64_t kernel_packets_ = 0, kernel_drops_ = 0, vlan_restored_ = 0;
  int socket_error_ = 0;  // errno of a failed poll: the capture ended there
};

}  // namespace gaspp
