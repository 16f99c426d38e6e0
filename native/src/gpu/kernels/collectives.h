// Declarations of collectives.cu's kernels, for their launchers (ops/collective_ops.cc): the
// SP row movement (shard, pad, trim, all-gather: exact copies) and the summing collectives of
// ranks simulated on one GPU (all-reduce, reduce-scatter) in the orders of core's
// collectives/reduceOrder.ts and ringAllReduce.ts.
//
// The ranks' buffers (HcspRankTable) and the ring layout (HcspRingLayout, computed on the host
// from reduce::RingLayout's formulas) travel by value in the launch's arguments: no upload and
// no device table per call, so a collective moves nothing between the host and the device.
#pragma once
#include "../vendor.h"

/** algorithm codes: reduce::Algorithm's order (ring, oneshot, ordered) */
#define HCSP_REDUCE_RING 0
#define HCSP_REDUCE_ONESHOT 1
#define HCSP_REDUCE_ORDERED 2

/**
 * the most ranks a collective kernel takes: its rank table's size (2 x 64 addresses, 1 KiB of
 * the launch's arguments, well inside the 4 KiB HIP and CUDA allow)
 */
#define HCSP_COLLECTIVE_MAX_RANKS 64

/** the device addresses of each rank's source and destination buffer, ranks [0, tp) */
struct HcspRankTable {
  uint64_t srcs[HCSP_COLLECTIVE_MAX_RANKS];
  uint64_t dsts[HCSP_COLLECTIVE_MAX_RANKS];
};

/**
 * the ring layout: loops of loopSize elements; a loop at offset L holds blocks of realChunk
 * elements, fullChunk for L < lastLoop, lastChunk for the last loop; block b of a loop is owned
 * by ring position b % tp
 */
struct HcspRingLayout {
  int64_t loopSize;
  int64_t fullChunk;
  int64_t lastLoop;
  int64_t lastChunk;
};

// all-reduce's arguments, the largest: within the 4 KiB of kernel arguments HIP and CUDA take
static_assert(sizeof(HcspRankTable) + 3 * sizeof(int64_t) + sizeof(HcspRingLayout) <= 4096, "collective kernel arguments exceed 4 KiB");

/** y[i] = x[i] for n units of 1, 4 or 16 bytes (the launcher picks the widest the addresses and size allow) */
HCSP_GLOBAL void hcsp_collective_copy_u8(const uint8_t* x, uint8_t* y, int64_t n);
HCSP_GLOBAL void hcsp_collective_copy_u32(const uint32_t* x, uint32_t* y, int64_t n);
HCSP_GLOBAL void hcsp_collective_copy_u128(const void* x, void* y, int64_t n);

/** all-gather: every dsts[d] (tp*shardUnits units) = the concatenation of srcs[0..tp) (shardUnits units each), units of 2 or 4 bytes */
HCSP_GLOBAL void hcsp_collective_all_gather_u16(HcspRankTable ranks, int64_t tp, int64_t shardUnits);
HCSP_GLOBAL void hcsp_collective_all_gather_u32(HcspRankTable ranks, int64_t tp, int64_t shardUnits);

/** all-reduce of n bf16 elements: every dsts[d][i] = the sum of srcs[r][i] in `algorithm`'s order (ring: `ring`'s block owners) */
HCSP_GLOBAL void hcsp_collective_all_reduce_bf16(HcspRankTable ranks, int64_t tp, int64_t n, int64_t algorithm, HcspRingLayout ring);

/** reduce-scatter: dsts[r][j] = the sum of element r*shardElems + j, owned (ring) by position r */
HCSP_GLOBAL void hcsp_collective_reduce_scatter_bf16(HcspRankTable ranks, int64_t tp, int64_t shardElems, int64_t algorithm);
