// GPU kernels of the SP ops (core graph/ops/spOps.ts), as the host kernels
// (host/kernels/collective_kernels.cc, reduce_order.h) and reference/kernels/collectiveKernels.ts:
// exact copies for shard, pad, trim and all-gather; the bf16 sums of all-reduce and
// reduce-scatter with every element summed by one thread in its algorithm's order:
//   ring (owner c): acc = x[c+1]; acc = bf(x[c+2] + acc); ...; acc = bf(x[c] + acc) (mod tp)
//   oneshot:        fp32 acc over ranks 0..tp-1, one bf16 rounding (tp = 1: the bits pass through)
//   ordered:        acc = x0; acc = bf(acc + x1); ...; acc = bf(acc + x[tp-1])
// Every fp32 add is one correctly rounded add (contraction is off on every target).
#include "collectives.h"

#include "../../numerics/bf16.h"

using hcsp::bf16ToF32;
using hcsp::f32ToBf16;

namespace {

struct alignas(16) Unit128 {
  uint32_t v[4];
};

/** rank r's source buffer (a device address from the launch's arguments) */
template <class T>
HCSP_HD const T* rankBuffer(const HcspRankTable& ranks, int64_t r) {
  return reinterpret_cast<const T*>(static_cast<uintptr_t>(ranks.srcs[r]));
}

/** rank r's destination buffer */
template <class T>
HCSP_HD T* rankOutput(const HcspRankTable& ranks, int64_t r) {
  return reinterpret_cast<T*>(static_cast<uintptr_t>(ranks.dsts[r]));
}

HCSP_HD uint16_t addBf16(uint16_t a, uint16_t b) { return f32ToBf16(bf16ToF32(a) + bf16ToF32(b)); }

/** element i of the sum over the tp source buffers, in `algorithm`'s order (`owner`: the ring position) */
HCSP_HD uint16_t reduceElement(const HcspRankTable& ranks, int64_t tp, int64_t algorithm, int64_t owner, int64_t i) {
  if (algorithm == HCSP_REDUCE_RING) {
    uint16_t acc = rankBuffer<uint16_t>(ranks, (owner + 1) % tp)[i];
    for (int64_t hop = 2; hop <= tp; hop++) acc = addBf16(rankBuffer<uint16_t>(ranks, (owner + hop) % tp)[i], acc);
    return acc;
  }
  if (algorithm == HCSP_REDUCE_ONESHOT) {
    if (tp == 1) return rankBuffer<uint16_t>(ranks, 0)[i];
    float acc = bf16ToF32(rankBuffer<uint16_t>(ranks, 0)[i]);
    for (int64_t r = 1; r < tp; r++) acc = acc + bf16ToF32(rankBuffer<uint16_t>(ranks, r)[i]);
    return f32ToBf16(acc);
  }
  uint16_t acc = rankBuffer<uint16_t>(ranks, 0)[i];
  for (int64_t r = 1; r < tp; r++) acc = addBf16(acc, rankBuffer<uint16_t>(ranks, r)[i]);
  return acc;
}

/** the ring position that owns element i (ringAllReduce.ts ringBlocks, from the host's descriptor) */
HCSP_HD int64_t ringOwner(const HcspRingLayout& ring, int64_t tp, int64_t i) {
  const int64_t loopSize = ring.loopSize;
  const int64_t loopOffset = (i / loopSize) * loopSize;
  const int64_t chunk = loopOffset >= ring.lastLoop ? ring.lastChunk : ring.fullChunk;
  return ((i - loopOffset) / chunk) % tp;
}

template <class T>
HCSP_HD void allGather(const HcspRankTable& ranks, int64_t tp, int64_t shardUnits) {
  HCSP_GRID_STRIDE(i, tp * shardUnits) {
    const int64_t r = i / shardUnits;
    const T v = rankBuffer<T>(ranks, r)[i - r * shardUnits];
    for (int64_t d = 0; d < tp; d++) rankOutput<T>(ranks, d)[i] = v;
  }
}

}  // namespace

HCSP_GLOBAL void hcsp_collective_copy_u8(const uint8_t* x, uint8_t* y, int64_t n) {
  HCSP_GRID_STRIDE(i, n) { y[i] = x[i]; }
}

HCSP_GLOBAL void hcsp_collective_copy_u32(const uint32_t* x, uint32_t* y, int64_t n) {
  HCSP_GRID_STRIDE(i, n) { y[i] = x[i]; }
}

HCSP_GLOBAL void hcsp_collective_copy_u128(const void* x, void* y, int64_t n) {
  const Unit128* xs = static_cast<const Unit128*>(x);
  Unit128* ys = static_cast<Unit128*>(y);
  HCSP_GRID_STRIDE(i, n) { ys[i] = xs[i]; }
}

HCSP_GLOBAL void hcsp_collective_all_gather_u16(HcspRankTable ranks, int64_t tp, int64_t shardUnits) { allGather<uint16_t>(ranks, tp, shardUnits); }

HCSP_GLOBAL void hcsp_collective_all_gather_u32(HcspRankTable ranks, int64_t tp, int64_t shardUnits) { allGather<uint32_t>(ranks, tp, shardUnits); }

HCSP_GLOBAL void hcsp_collective_all_reduce_bf16(HcspRankTable ranks, int64_t tp, int64_t n, int64_t algorithm, HcspRingLayout ring) {
  HCSP_GRID_STRIDE(i, n) {
    const int64_t owner = algorithm == HCSP_REDUCE_RING ? ringOwner(ring, tp, i) : 0;
    const uint16_t v = reduceElement(ranks, tp, algorithm, owner, i);
    for (int64_t d = 0; d < tp; d++) rankOutput<uint16_t>(ranks, d)[i] = v;
  }
}

HCSP_GLOBAL void hcsp_collective_reduce_scatter_bf16(HcspRankTable ranks, int64_t tp, int64_t shardElems, int64_t algorithm) {
  HCSP_GRID_STRIDE(i, tp * shardElems) {
    const int64_t r = i / shardElems;
    rankOutput<uint16_t>(ranks, r)[i - r * shardElems] = reduceElement(ranks, tp, algorithm, r, i);
  }
}
