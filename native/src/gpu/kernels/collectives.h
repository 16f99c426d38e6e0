// Declarations of collectives.cu's kernels, for their launchers (ops/collective_ops.cc): the
// SP row movement (shard, pad, trim, all-gather: exact copies) and the summing collectives of
// ranks simulated on one GPU (all-reduce, reduce-scatter) in the orders of core's
// collectives/reduceOrder.ts and ringAllReduce.ts.
//
// Rank tables: `srcs` / `dsts` are device arrays of tp device addresses (uint64), one buffer
// per rank, written by the launcher with copyIn. `ring` is the ring layout's descriptor
// (RING_* below), computed on the host from reduce::RingLayout's formulas.
#pragma once
#include "../vendor.h"

/** algorithm codes: reduce::Algorithm's order (ring, oneshot, ordered) */
#define HCSP_REDUCE_RING 0
#define HCSP_REDUCE_ONESHOT 1
#define HCSP_REDUCE_ORDERED 2

/** ring descriptor (int64[4]): loops of RING_LOOP_SIZE elements; a loop at offset L holds blocks of
 * realChunk elements, RING_FULL_CHUNK for L < RING_LAST_LOOP, RING_LAST_CHUNK for the last loop;
 * block b of a loop is owned by ring position b % tp */
#define HCSP_RING_LOOP_SIZE 0
#define HCSP_RING_FULL_CHUNK 1
#define HCSP_RING_LAST_LOOP 2
#define HCSP_RING_LAST_CHUNK 3
#define HCSP_RING_DESCRIPTOR_LEN 4

/** y[i] = x[i] for n units of 1, 4 or 16 bytes (the launcher picks the widest the addresses and size allow) */
HCSP_GLOBAL void hcsp_collective_copy_u8(const uint8_t* x, uint8_t* y, int64_t n);
HCSP_GLOBAL void hcsp_collective_copy_u32(const uint32_t* x, uint32_t* y, int64_t n);
HCSP_GLOBAL void hcsp_collective_copy_u128(const void* x, void* y, int64_t n);

/** all-gather: every dsts[d] (tp*shardUnits units) = the concatenation of srcs[0..tp) (shardUnits units each), units of 2 or 4 bytes */
HCSP_GLOBAL void hcsp_collective_all_gather_u16(const uint64_t* srcs, const uint64_t* dsts, int64_t tp, int64_t shardUnits);
HCSP_GLOBAL void hcsp_collective_all_gather_u32(const uint64_t* srcs, const uint64_t* dsts, int64_t tp, int64_t shardUnits);

/** all-reduce of n bf16 elements: every dsts[d][i] = the sum of srcs[r][i] in `algorithm`'s order (ring: `ring`'s block owners) */
HCSP_GLOBAL void hcsp_collective_all_reduce_bf16(const uint64_t* srcs, const uint64_t* dsts, int64_t tp, int64_t n, int64_t algorithm, const int64_t* ring);

/** reduce-scatter: dsts[r][j] = the sum of element r*shardElems + j, owned (ring) by position r */
HCSP_GLOBAL void hcsp_collective_reduce_scatter_bf16(const uint64_t* srcs, const uint64_t* dsts, int64_t tp, int64_t shardElems, int64_t algorithm);
