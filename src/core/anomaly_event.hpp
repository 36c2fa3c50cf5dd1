// core/anomaly_event.hpp — EVE `anomaly` events of type `decode` (Suricata's anomaly log with its
// `decode` type on: suricata.yaml eve-log `anomaly: types: decode: yes`, or --eve-anomaly): one
// event for each decoder event a packet raised (gaspp/fields.hpp), named as Suricata names it
// ("decoder.ipv4.trunc_pkt"), after the packet's common EVE fields.
//
// Decoder events are raised where the packet is decoded (on the device for CUDA) and only counted
// there; a batch whose counters show none costs nothing here. A batch with events has each of its
// packets decoded again on the host to find them (the cost the option adds: a capture where most
// packets raise one, such as one cut by a short snap length, is decoded twice).
#pragma once
#include <functional>
#include <string>

namespace gaspp {

struct PacketBatch;

// Writes batch b's anomaly events, in capture order, through eve (one JSON line each). defrag:
// fragments are reassembled (their transport headers are not decoded, as the backend did). ether:
// each event carries the `ether` object (eve-log's ethernet: yes).
void write_decode_anomalies(const PacketBatch& b, bool defrag, const std::function<void(const std::string&)>& eve,
                            bool ether = false);

}  // namespace gaspp
