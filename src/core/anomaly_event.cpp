// core/anomaly_event.cpp — EVE anomaly events of type decode (see anomaly_event.hpp).
#include "core/anomaly_event.hpp"

#include "core/eve_event.hpp"
#include "core/packet_batch.hpp"
#include "decode/decoder.hpp"

namespace gaspp {

void write_decode_anomalies(const PacketBatch& b, bool defrag, const std::function<void(const std::string&)>& eve,
                            bool ether) {
  uint64_t raised = b.host_events.size();
  for (int k = 1; k < kDecodeEvents; ++k) raised += b.counters.v[c_decode_event0 + k];
  if (!raised) return;
  DecodedPacket d;
  for (uint32_t i = 0; i < b.count; ++i) {
    decode_on_host(b, i, defrag, d);
    if (!d.events[0]) continue;
    const uint64_t off = b.h_rec_off[i];
    const RecordHeader rh = read_record_header(b.h_span + off, b.fmt);
    const HostPacket hp{b.packet_number(i), d.ts_ns[0], b.h_span + off + kRecordHeaderBytes, rh.cap_len,
                        rh.wire_len, &d, 0, false};
    for (int k = 0; k < kDecodeEventSlots && d.events[k]; ++k) {
      std::string j = eve_packet_head(hp, "anomaly");
      if (ether) j += eve_ether_json(hp);
      j += ",\"anomaly\":{\"type\":\"decode\",\"event\":\"decoder.";
      j += decode_event_name(DecodeEvent(d.events[k] & 0x7f));
      j += "\"}}";
      eve(j);
    }
  }
}

}  // namespace gaspp
