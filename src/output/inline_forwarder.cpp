// output/inline_forwarder.cpp — see output/inline_forwarder.hpp.
#include "output/inline_forwarder.hpp"

#include "capture/capture_file.hpp"
#include "gaspp/module.hpp"
#include "output/reject_packet.hpp"

namespace gaspp {

InlineForwarder::InlineForwarder(const std::vector<std::string>& ifaces, uint32_t rings) : rings_(rings) {
  if (ifaces.size() != 2) throw CaptureError("inline: two interfaces, not " + std::to_string(ifaces.size()));
  for (const std::string& name : ifaces) {
    try {
      tx_.push_back(std::make_unique<PacketTxRing>(TxRingOptions{.iface = name}));
    } catch (const CaptureError& e) {
      throw CaptureError(std::string("inline: ") + e.what());
    }
  }
}

InlineForwarder::~InlineForwarder() = default;

void InlineForwarder::forward(const PacketBatch& b) {
  PacketTxRing& out = *tx_[size_t(1 - side_of(b.source))];
  for (uint32_t i = 0; i < b.count; ++i) {
    if (b.is_reassembled(i)) continue;  // its fragments are the packets on the wire
    if (b.record_verdict(i) & kVerdictDrop) {
      ++dropped_;
      continue;
    }
    const uint8_t* r = b.h_span + b.h_rec_off[i];
    out.queue(r + kRecordHeaderBytes, read_record_header(r, b.fmt).cap_len);
  }
  out.flush();  // the batch's frames are out before the next batch's verdicts
}

void InlineForwarder::reject(const PacketBatch& b, const std::vector<std::pair<uint32_t, uint8_t>>& rejects) {
  if (rejects.empty()) return;
  const int in_side = side_of(b.source);
  bool queued[2] = {false, false};
  for (const auto& [i, dirs] : rejects) {
    if (i >= b.count || b.is_reassembled(i)) continue;
    const uint8_t* r = b.h_span + b.h_rec_off[i];
    const uint32_t cap = read_record_header(r, b.fmt).cap_len;
    for (const uint8_t dir : {uint8_t(kRejectToSource), uint8_t(kRejectToDest)}) {
      if (!(dirs & dir)) continue;
      // Towards the source: back out of the side it came in on; towards the destination: on.
      const int side = dir == kRejectToSource ? in_side : 1 - in_side;
      const uint32_t mtu = tx_[size_t(side)]->max_frame() > 14 + 68 ? tx_[size_t(side)]->max_frame() - 14 : 68;
      if (b.link != LinkType::ethernet || !build_reject(r + kRecordHeaderBytes, cap, dir == kRejectToSource, mtu, answer_)) {
        ++rejects_unanswerable_;
        continue;
      }
      tx_[size_t(side)]->queue(answer_.data(), uint32_t(answer_.size()));
      queued[side] = true;
      ++rejects_sent_;
    }
  }
  for (int k = 0; k < 2; ++k)
    if (queued[k]) tx_[size_t(k)]->flush();
}

void InlineForwarder::forward_uninspected(const std::vector<SourceRecord>& recs) {
  bool queued[2] = {false, false};
  for (const SourceRecord& r : recs) {
    const int side = 1 - side_of(r.interface);
    tx_[size_t(side)]->queue(r.rec + kRecordHeaderBytes, r.cap_len);
    queued[side] = true;
  }
  for (int k = 0; k < 2; ++k)
    if (queued[k]) tx_[size_t(k)]->flush();
  bypassed_ += recs.size();
}

}  // namespace gaspp
