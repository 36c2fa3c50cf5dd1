// output/inline_forwarder.hpp — inline IPS between two interfaces (`gaspp --inline A:B`, Suricata's
// af-packet `copy-mode: ips`): every packet captured on one side that passes goes out of the other,
// in capture order, frame for frame; packets the modules dropped do not.
//
// The capture sockets of both sides leave out what this host sends (PACKET_IGNORE_OUTGOING), so
// forwarded frames are not captured again. Frames go out through a transmit ring on the peer
// (output/packet_tx_ring.hpp): a batch's passing frames are queued, then sent with one call, which
// returns when they have left. A frame the kernel refuses to send (a full queue, a frame over the
// peer's MTU: a capture side that aggregates segments, GRO/LRO, makes those) is counted as a send
// error and not retried: the packet is lost, as on a congested link (fail-closed). Counted:
// forwarded, dropped (a verdict), send errors; a packet a reject rule dropped is answered (a TCP
// reset or an ICMP unreachable towards its source, destination or both, reject()); with fail-open on overload (`--inline-fail open`)
// the batcher hands over records it had no time to inspect, which go out as they are (bypassed).
//
// Example:
//   InlineForwarder fwd({"a", "b"});              // input 0 forwards to b, input 1 to a
//   ... on each finished batch: fwd.forward(batch);
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "capture/source.hpp"
#include "core/packet_batch.hpp"
#include "output/packet_tx_ring.hpp"

namespace gaspp {

class InlineForwarder {
 public:
  // ifaces: the two sides, in input order (PacketBatch::source 0 and 1). Throws CaptureError naming
  // an interface that cannot be opened for sending.
  // rings: the capture's sources per interface (PacketBatch::source / rings is the side).
  explicit InlineForwarder(const std::vector<std::string>& ifaces, uint32_t rings = 1);
  ~InlineForwarder();
  InlineForwarder(const InlineForwarder&) = delete;
  InlineForwarder& operator=(const InlineForwarder&) = delete;

  // Sends the packets of b that passed out of the other side's interface.
  void forward(const PacketBatch& b);
  // Fail-open on overload (RunOptions::bypass_after_ns): sends records out of the other side of
  // the interface each came in on, uninspected, in order; counted as bypassed (and forwarded).
  void forward_uninspected(const std::vector<SourceRecord>& recs);
  // Answers b's packets that reject rules decided ((packet, RejectDirs), ModuleSet::rejects()):
  // a TCP reset or ICMP unreachable (output/reject_packet.hpp) out of the side the packet came in
  // on (to its source) and out of the other side (to its destination). Counted: sent, and packets
  // that could not be answered.
  void reject(const PacketBatch& b, const std::vector<std::pair<uint32_t, uint8_t>>& rejects);

  // Packets sent on (the rings also sent the reject answers, counted apart).
  uint64_t forwarded() const { return tx_[0]->sent() + tx_[1]->sent() - rejects_sent_; }
  uint64_t dropped() const { return dropped_; }
  uint64_t bypassed() const { return bypassed_; }
  uint64_t rejects_sent() const { return rejects_sent_; }
  uint64_t rejects_unanswerable() const { return rejects_unanswerable_; }
  uint64_t send_errors() const {
    return tx_[0]->send_errors() + tx_[0]->too_large() + tx_[1]->send_errors() + tx_[1]->too_large();
  }

 private:
  std::vector<std::unique_ptr<PacketTxRing>> tx_;  // per side: the ring that sends out of it
  // The side (0: the first interface, 1: the second) an input of the capture belongs to.
  int side_of(uint32_t input) const { return input / rings_ == 0 ? 0 : 1; }
  uint32_t rings_ = 1;
  uint64_t dropped_ = 0, bypassed_ = 0, rejects_sent_ = 0, rejects_unanswerable_ = 0;
  std::vector<uint8_t> answer_;  // reject(): the frame being built
};

}  // namespace gaspp
