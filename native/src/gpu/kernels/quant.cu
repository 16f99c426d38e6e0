// GPU kernels of the FP8 PTPC quantization ops (core graph/ops/quantOps.ts) but
// fp8LinearPtpc (a GEMM), as reference/kernels/quantKernels.ts with numerics/quant.ts and
// numerics/fp8.ts. Block kernels (vendor.h), one row per 64-thread row group, each lane walking
// its chunks of 8 columns (reduce.h's layout: 16-byte loads, the lanes' chunks side by side):
// the row's amax is each lane's over its values then a butterfly over the lanes (a maximum is
// exact in any order; the first NaN by column wins, as the reference's in-order scan: the
// lowest index is order-free too), the row's scale 'divide' fl(amax / max) or 'reciprocal'
// fl(amax * fl(1 / max)) (1 for a zero row), then q = cvt(fl(x / s)) or cvt(fl(x * fl(1 / s)))
// over the lane's chunks again. The fused gated mean writes its bf16 values (hcGatedMean's
// 'atom' order, gated_mean.h) and takes their amax in the same pass, one launch per call.
// Every step is one correctly rounded fp32 operation on fp32 operands, which equals the
// reference's double arithmetic rounded by Math.fround (53 >= 2*24 + 2).
#include "quant.h"

#include "../../numerics/bf16.h"
#include "../../numerics/fp8.h"
#include "chunk.h"
#include "gated_mean.h"
#include "reduce.h"

using hcsp::bf16ToF32;
using hcsp::f32ToBf16;

namespace {

template <bool FNUZ>
HCSP_HD float fp8Max() {
  return FNUZ ? 240.0f : 448.0f;
}

/** fl(1 / max): the reference's 1 / max in double, rounded to fp32 */
template <bool FNUZ>
HCSP_HD float fp8InvMax() {
  return FNUZ ? static_cast<float>(1.0 / 240.0) : static_cast<float>(1.0 / 448.0);
}

/** cvt to the format: round to nearest even, saturating (numerics/fp8.h) */
template <bool FNUZ>
HCSP_HD uint8_t toFp8(float v) {
  constexpr hcsp::Fp8Format f = FNUZ ? hcsp::Fp8Format{true, 8, 240.0f, 0x80, false} : hcsp::Fp8Format{false, 7, 448.0f, 0x7f, true};
  return hcsp::f32ToFp8(v, f);
}

/** a lane's (or lanes') part of a row's amax: the largest magnitude, or the first NaN (lowest column) */
struct AmaxPart {
  float value;
  /** the column of the first NaN seen, NO_NAN for none */
  int64_t nanAt;
};
constexpr int64_t NO_NAN = INT64_MAX;

/** |v| at column j into the part: a NaN only where it is the first, a larger magnitude only while no NaN */
HCSP_HD void addMagnitude(AmaxPart& part, float v, int64_t j) {
  const float a = HCSP_FABSF(v);
  if (a != a) {
    if (j < part.nanAt) part = {a, j};
  } else if (part.nanAt == NO_NAN && a > part.value) {
    part.value = a;
  }
}

/** two parts over disjoint columns: the earlier NaN, else the larger magnitude (commutative and associative) */
HCSP_HD AmaxPart combineAmax(const AmaxPart& a, const AmaxPart& b) {
  if (a.nanAt != b.nanAt) return a.nanAt < b.nanAt ? a : b;
  return {a.value > b.value ? a.value : b.value, a.nanAt};
}

/** the scale of a row with absolute maximum amax: 1 for a zero row */
template <bool FNUZ>
HCSP_HD float scaleOf(float amax, int32_t reciprocal) {
  if (amax == 0.0f) return 1.0f;
  // a NaN row's scale is its first NaN's magnitude, quieted (the reference's IEEE division on
  // the host); written out, since a GPU's multiply or divide may return its canonical NaN
  if (amax != amax) return hcspBitsFloat(hcspFloatBits(amax) | 0x00400000u);
  if (reciprocal) return amax * fp8InvMax<FNUZ>();
  return amax / fp8Max<FNUZ>();
}

/** the row's amax from every lane's part: all threads of the block call it (the butterfly's barriers) */
HCSP_DEVICE float rowAmax(AmaxPart part, int lane, AmaxPart* exchange) {
  return hcspButterfly(part, lane, exchange, [](const AmaxPart& a, const AmaxPart& b) { return combineAmax(a, b); }).value;
}

/** q of the lane's chunks of bf16 row xr (cols values) with the row's scale s, into qr */
HCSP_DEVICE void quantizeLane(const uint16_t* xr, uint8_t* qr, int lane, int64_t cols, float s, int32_t fnuz, int32_t reciprocal, bool vec) {
  // the reference's fl(1 / s) for 'reciprocal' (the same bits on every lane)
  const float inv = 1.0f / s;
  hcspCanonicalLaneChunks(lane, cols, 0, [&](int, int64_t base, int count) {
    const HcspBf16Chunk c = hcspLoadChunk(xr + base, count, vec && count == HCSP_CANONICAL_CHUNK);
    HcspFp8Chunk o;
    for (int k = 0; k < HCSP_CANONICAL_CHUNK; k++) {
      const float v = bf16ToF32(c.v[k]);
      const float y = reciprocal ? v * inv : v / s;
      o.v[k] = fnuz ? toFp8<true>(y) : toFp8<false>(y);
    }
    hcspStoreFp8Chunk(qr + base, o, count, vec && count == HCSP_CANONICAL_CHUNK);
    return 0;
  });
}

/**
 * Rows [0, rows) of cols bf16 values quantized per row, one row per row group (every thread of
 * the block calls it: the butterfly's barriers): chunkAt(t, base, count, whole) is row t's chunk
 * of x (a kernel that computes x's values writes them there first), whose amax scales the row;
 * then x's row t into q with that scale. vec: the chunks may be loaded and stored at once.
 */
template <class ChunkAt>
HCSP_DEVICE void quantizeRows(const uint16_t* x, uint8_t* q, float* scale, int64_t rows, int64_t cols, int32_t fnuz, int32_t reciprocal, bool vec,
                              AmaxPart* exchange, const ChunkAt& chunkAt) {
  const int lane = hcspCanonicalLane();
  const int group = hcspCanonicalRowGroup();
  const int64_t rowsPerBlock = HCSP_BLOCK_THREADS() / HCSP_CANONICAL_LANES;
  // the loop's bounds are the block's, so every thread reaches every barrier
  for (int64_t first = HCSP_BLOCK_ID() * rowsPerBlock; first < rows; first += HCSP_BLOCK_COUNT() * rowsPerBlock) {
    const int64_t t = first + group;
    const bool mine = t < rows;
    AmaxPart part = {0.0f, NO_NAN};
    if (mine) {
      part = hcspCanonicalLaneChunks(lane, cols, part, [&](AmaxPart acc, int64_t base, int count) {
        const HcspBf16Chunk c = chunkAt(t, base, count, vec && count == HCSP_CANONICAL_CHUNK);
        for (int k = 0; k < HCSP_CANONICAL_CHUNK; k++) {
          if (k < count) addMagnitude(acc, bf16ToF32(c.v[k]), base + k);
        }
        return acc;
      });
    }
    const float amax = rowAmax(part, lane, exchange + group * HCSP_CANONICAL_EXCHANGE);
    if (mine) {
      const float s = fnuz ? scaleOf<true>(amax, reciprocal) : scaleOf<false>(amax, reciprocal);
      if (lane == 0) scale[t] = s;
      quantizeLane(x + t * cols, q + t * cols, lane, cols, s, fnuz, reciprocal, vec);
    }
  }
}

}  // namespace

HCSP_GLOBAL void hcsp_quant_rows_fp8(const uint16_t* x, float* scale, uint8_t* q, int64_t rows, int64_t cols, int32_t fnuz, int32_t reciprocal) {
  HCSP_SHARED(AmaxPart, exchange, HCSP_CANONICAL_MAX_ROWS * HCSP_CANONICAL_EXCHANGE);
  const bool vec = cols % HCSP_CANONICAL_CHUNK == 0 && hcspAligned16(x) && hcspAligned16(q);
  quantizeRows(x, q, scale, rows, cols, fnuz, reciprocal, vec, exchange,
               [&](int64_t t, int64_t base, int count, bool whole) { return hcspLoadChunk(x + t * cols + base, count, whole); });
}

HCSP_GLOBAL void hcsp_quant_gated_mean_fp8(const uint16_t* up, const uint16_t* normed, uint16_t* x, uint8_t* q, float* scale, int64_t rows, int64_t n,
                                           int64_t h, int32_t fnuz, int32_t reciprocal) {
  HCSP_SHARED(AmaxPart, exchange, HCSP_CANONICAL_MAX_ROWS * HCSP_CANONICAL_EXCHANGE);
  const bool vec = h % HCSP_CANONICAL_CHUNK == 0 && hcspAligned16(up) && hcspAligned16(normed) && hcspAligned16(x) && hcspAligned16(q);
  // the gated means written as bf16, their amax taken in the same pass (over the bf16 values, as
  // the reference); the quantization then reads the lane's own values, just written by this thread
  quantizeRows(x, q, scale, rows, h, fnuz, reciprocal, vec, exchange, [&](int64_t t, int64_t base, int count, bool whole) {
    float mean[HCSP_CANONICAL_CHUNK];
    hcspGatedMeanChunk(up, normed, t, n, h, base, count, whole, 0, mean);
    HcspBf16Chunk c;
    for (int k = 0; k < HCSP_CANONICAL_CHUNK; k++) c.v[k] = f32ToBf16(mean[k]);
    hcspStoreChunk(x + t * h + base, c, count, whole);
    return c;
  });
}
