// backend/cuda/decode_kernels.cuh — the decode stage on CUDA: the slice gather (header-only
// slicing: each record's first bytes copied through the capture's mapping) and the decode kernel,
// with their launch functions (decode_kernels.cu). Each launch queues on `st` and checks the launch.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "core/packet_batch.hpp"

namespace gaspp {

// Automatic slicing: the mean record size (header + frame) from which a batch is sliced rather than
// copied. Copied, a batch costs its bytes at the H2D rate; sliced, about a fixed rate set by the
// gather's reads through the mapping (H100, 262144-packet batches, the gather on its own SMs:
// 387 Mpps decode+flow on the mix; bench_firewall, bench/results/2026-11-23-h100-firewall-walk.json):
// they meet near 54.8 GB/s / 387 Mpps = 142 B, so batches from 144 B a record on are sliced (64-byte
// frames: 620 Mpps copied, 544 sliced).
constexpr uint32_t kSliceMinMeanRecord = 144;

// Tuning of the decode launch, named rather than scattered.
struct DecodePolicy {
  static constexpr int kThreads = 256;
  static constexpr int kBlocksPerSm = 8;
  // The slice gather mostly waits on PCIe reads. On SMs of its own (sm_partition.hpp) it fills
  // them, to keep as many reads in flight as it can; sharing every SM, this many blocks per SM keep
  // hundreds of KiB in flight and leave room to the other slots' kernels.
  static constexpr int kGatherBlocksPerOwnSm = 8;
  static constexpr int kGatherBlocksPerSm = 2;
};

// Header-only slicing: record i's head is the 16-byte-aligned window of the mapping that holds its
// first kSliceHeadBytes, copied to heads + i * kSliceStride; the record starts at its misalignment.
// kSlicePieces lanes of a warp take one record (16-byte loads: wide PCIe reads, all in flight at
// once), so a warp gathers kSliceGroups records per step. A window piece reaching outside [lo, the
// batch's end) — lo is where the mapping starts — is copied byte by byte within the record (the
// mapping may end).
constexpr uint32_t kSliceStride = kSliceHeadBytes + 16;
constexpr uint32_t kSlicePieces = kSliceStride / 16, kSliceGroups = 32 / kSlicePieces;

// Gathers the heads of batch b (records in the mapping whose device alias starts at lo) into heads,
// kSliceStride bytes a record; at most blocks_cap blocks.
void launch_slice_gather(const BatchView& b, const uint8_t* lo, uint8_t* heads, int blocks_cap, cudaStream_t st);
// Decodes batch b (from heads when not null: a sliced batch), sets every verdict to pass and adds
// the counters to d_counters; at most blocks_cap blocks.
void launch_decode(const BatchView& b, const uint8_t* heads, unsigned long long* d_counters, int blocks_cap,
                   cudaStream_t st);

}  // namespace gaspp
