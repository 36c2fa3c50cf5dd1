// output/packet_tx_ring.hpp — frames out of a network interface through a packet socket's transmit
// ring (PACKET_TX_RING, TPACKET_V2), as Suricata's af-packet IPS mode and netsniff-ng send: the
// inline forwarder (output/inline_forwarder.hpp) and the live-capture benchmark's sender use it.
//
// queue() copies a frame into the next slot of a ring mapped into our memory and marks it for
// sending; flush() hands every marked slot to the kernel in one send() call, which transmits them
// in ring order and returns when the last one has left (a blocking send), so the slots are free
// again. One system call sends a batch, not one a frame. queue() flushes by itself when the ring
// is full, so frames always leave in the order they were queued.
//
// What does not go out is counted, never retried:
//   * too_large: a frame longer than the interface takes (its MTU plus the Ethernet header, plus 4
//     bytes for a frame with an 802.1Q/802.1ad tag: the kernel's own limit) or shorter than an
//     Ethernet header. Checked before queueing, as the kernel would refuse it.
//   * send_errors: frames the kernel took but could not transmit (a queue that refused it: ENOBUFS
//     and the like), one per failed send() call — the kernel stops at the frame that failed — and
//     frames left unsent when the interface stops taking any (then the ring starts over from the
//     first one the kernel did not take), and a frame whose slot the kernel still holds after a
//     flush (it is never written over).
// A frame longer than a ring slot (TxRingOptions::frame_size less the slot header) but within the
// MTU goes out with its own send() call on a plain socket, after the frames queued before it.
//
// Errors setting up the socket (no such interface, no permission, a ring the kernel refuses) throw
// CaptureError naming the interface and the reason.
//
// Example:
//   PacketTxRing tx(TxRingOptions{.iface = "eth1"});
//   for (frame : frames) tx.queue(frame.data(), frame.size());
//   tx.flush();                               // waits until they are out
//   tx.sent(), tx.too_large(), tx.send_errors()
#pragma once
#include <cstdint>
#include <string>

namespace gaspp {

struct TxRingOptions {
  std::string iface;
  // Bytes per ring slot (a power of two, at least 256): frames up to this less 32. 0: the smallest
  // that holds the interface's largest frame with a tag, up to 64 KiB.
  uint32_t frame_size = 0;
  uint32_t frame_count = 4096;   // slots in the ring
  bool qdisc_bypass = false;     // PACKET_QDISC_BYPASS: straight to the driver, no queueing discipline
};

class PacketTxRing {
 public:
  explicit PacketTxRing(const TxRingOptions& opt);
  ~PacketTxRing();
  PacketTxRing(const PacketTxRing&) = delete;
  PacketTxRing& operator=(const PacketTxRing&) = delete;

  // Queues one frame (Ethernet header first, no FCS). Waits (flushes) when the ring is full.
  void queue(const uint8_t* frame, uint32_t len);
  // Sends what was queued; returns when it is out. Nothing to send: returns at once.
  void flush();

  uint64_t sent() const { return sent_; }
  uint64_t too_large() const { return too_large_; }
  uint64_t send_errors() const { return send_errors_; }
  uint32_t max_frame() const { return max_frame_; }  // the interface's limit for an untagged frame
  const std::string& iface() const { return opt_.iface; }

 private:
  uint8_t* slot(uint32_t k) const { return ring_ + size_t(k) * opt_.frame_size; }
  void send_alone(const uint8_t* frame, uint32_t len);

  TxRingOptions opt_;
  int fd_ = -1;
  int alone_fd_ = -1;  // a plain socket for frames longer than a slot, opened when one comes
  uint8_t* ring_ = nullptr;
  size_t ring_bytes_ = 0;
  uint32_t head_ = 0;      // the next slot to fill
  uint32_t pending_ = 0;   // slots queued since the last flush, ending before head_
  uint32_t max_frame_ = 1514;
  uint64_t sent_ = 0, too_large_ = 0, send_errors_ = 0;
};

}  // namespace gaspp
