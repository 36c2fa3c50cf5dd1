// backend/sharded/sharded_backend.hpp — several backends as one: each owns a shard of the flows.
//
// make_sharded_backend() takes N backends (one per GPU, or N CPU backends) and returns one Backend
// the pipeline drives as it drives any other. Every packet goes to the backend that owns its flow:
// the shard of a packet is a hash of its flow key (flow_key_of, the key the flow table uses, so
// both directions and every packet of a flow land on one shard); a packet without a flow (not IP,
// malformed, a fragment) goes to shard `index % N`. Each backend keeps its own flow table,
// reassembly and module state, so a flow is processed exactly as with one backend, in capture
// order within the flow.
//
// Per batch: submit(k) decodes every record's headers on the host (the shared decoder, on all
// host threads, prefetching records ahead) to find its shard; then one host thread per shard
// lists its packets, gives its backend the batch's span with their record offsets and submits it
// (each backend queues it: a CPU backend for its runner thread, a CUDA backend on its streams),
// all shards at once. Every shard gets the batch's capture time, so flows expire in the same batch
// as with one backend, and shards with no packet in the batch still run it. wait(k) waits for
// every shard (each shard's thread scatters its per-packet results back as soon as its shard is
// done) and merges the rest back into the batch in capture order:
//   verdicts, per-packet flow counters, decoded fields    scattered back to each packet's index
//   counters, module counters                              summed
//   module events                                          packet index mapped back (ModuleSet sorts)
//   flow records, stream chunks                            concatenated, then sorted as one backend
//                                                          sorts them (sort_flow_records,
//                                                          sort_stream_chunks), chunk bytes appended
// so outputs (verdicts, -w, EVE, stream dumps, the summary's counts) equal a one-backend run's.
// A flow slot reported back (PacketBatch::flow_slot, StreamChunk::slot) is `slot * N + shard`.
//
// Gauges describe all shards together: table capacity, slots and bytes, and the out-of-order
// buffer's limits are sums (each shard has the whole configured table); occupancy and the peaks
// are the sums of each shard's own peaks (an upper bound of the peak of the sum); compactions are
// summed. They differ from a one-backend run's; every count does not. Limits that are per backend
// (events a batch, table full, the out-of-order buffer) are reached later with more shards.
//
// Bound: the host decodes every packet's headers once to place it (about what the CPU backend's
// decode stage costs). See docs/multi-gpu.md for the measurements.
#pragma once
#include <memory>
#include <vector>

#include "backend/backend.hpp"

namespace gaspp {

// The shard (0..n-1) of packet `index` of a batch, from its decoded fields. vlan_in_key and
// defrag as in FlowConfig.
uint32_t shard_of_packet(const DecodedPacket& p, uint32_t index, uint32_t n, bool vlan_in_key, bool defrag);

// The configuration of shard k of n, from the one the run was given: CPU shards share the host, so
// they split its threads (cfg.threads, 0: all hardware threads) and the flow table between them;
// a CUDA shard runs on device cfg.device + k mod gpus, with the whole table in its own memory.
BackendConfig shard_config(const BackendConfig& cfg, int k, int n, bool cuda, int gpus);

// shards: at least one backend, built from the same configuration (but for the device and the
// threads). split_threads: host threads that place packets (0: all hardware threads).
std::unique_ptr<Backend> make_sharded_backend(std::vector<std::unique_ptr<Backend>> shards, const BackendConfig& cfg,
                                              int split_threads);

}  // namespace gaspp
