// GPU kernels of the hyper-connection ops (core graph/ops/hcOps.ts), as
// reference/kernels/hcKernels.ts with the math of hc/combineNorm.ts and hc/mix.ts, under both
// rounding contracts ('atom' rounds once per stored value, 'hf' where HF's bf16 torch ops
// store a tensor). Elementwise kernels take one thread per output element. The combine-norm
// and the gated mean are block kernels (vendor.h), 64 threads per row group, each lane walking
// its chunks of 8 columns (reduce.h's canonical layout: 16-byte loads and stores, the lanes'
// chunks side by side): the combine-norm is one launch per call, the pending combine, its
// write, the norm's sum of squares in canonical order v1 (lane sums by FMA on exact bf16
// squares, then the butterfly) and the normed write; the gated mean's sum over streams is one
// thread's, s in order.
//
// Rounding: the reference's JS arithmetic on two fp32 operands rounded by Math.fround is one
// correctly rounded fp32 operation here (fp32 on fp32 operands through double, then rounded
// to fp32, equals the fp32 operation: 53 >= 2*24 + 2); a bf16 square is exact in fp32's
// precision and an FMA rounds once, so fma(v, v, acc) is the reference's fl(acc + v*v).
#include "hc.h"

#include "../../numerics/bf16.h"
#include "../../numerics/fp32_math.h"
#include "chunk.h"
#include "gated_mean.h"
#include "reduce.h"

using hcsp::bf16ToF32;
using hcsp::f32ToBf16;
using hcsp::roundBf16;

HCSP_GLOBAL void hcsp_hc_expand(const uint16_t* e, uint16_t* x, int64_t rows, int64_t n, int64_t h) {
  const int64_t width = n * h;
  HCSP_GRID_STRIDE(i, rows * width) {
    const int64_t t = i / width;
    const int64_t j = (i - t * width) % h;
    x[i] = e[t * h + j];
  }
}

namespace {

/** inj = fl(2 sigmoid(bf(raw / n))); 'hf' rounds the sigmoid to bf16 first (the doubling is exact) */
HCSP_HD float injectScale(uint16_t raw, float nf, int32_t hf) {
  const float logit = roundBf16(bf16ToF32(raw) / nf);
  const float sig = hcsp::fp32::sigmoidF32(logit);
  return 2.0f * (hf ? roundBf16(sig) : sig);
}

/** X_s = bf(X_s + p), p = fl(y * inj_s) ('hf': bf(p)) */
HCSP_HD uint16_t combined(uint16_t x, uint16_t y, float inj, int32_t hf) {
  const float prod = bf16ToF32(y) * inj;
  const float p = hf ? roundBf16(prod) : prod;
  return f32ToBf16(bf16ToF32(x) + p);
}

}  // namespace

HCSP_GLOBAL void hcsp_hc_inject_scales(const uint16_t* raw, float* inj, int64_t count, int64_t n, int32_t hf) {
  const float nf = static_cast<float>(n);
  HCSP_GRID_STRIDE(i, count) { inj[i] = injectScale(raw[i], nf, hf); }
}

HCSP_GLOBAL void hcsp_hc_combine(const uint16_t* x, const uint16_t* y, const float* inj, uint16_t* out, int64_t rows, int64_t n, int64_t h, int32_t hf) {
  const int64_t width = n * h;
  HCSP_GRID_STRIDE(i, rows * width) {
    const int64_t t = i / width;
    const int64_t j = (i - t * width) % h;
    out[i] = combined(x[i], y[t * h + j], inj[i / h], hf);  // i / h = t*n + s: the (row, stream) pair
  }
}

HCSP_GLOBAL void hcsp_hc_combine_norm(const uint16_t* x, const uint16_t* y, const uint16_t* raw, const uint16_t* w, uint16_t* xOut, uint16_t* normed,
                                      int64_t pairs, int64_t n, int64_t h, float eps, int32_t hf) {
  HCSP_SHARED(float, exchange, HCSP_CANONICAL_MAX_ROWS* HCSP_CANONICAL_EXCHANGE);
  const int lane = hcspCanonicalLane();
  const int group = hcspCanonicalRowGroup();
  const int64_t rowsPerBlock = HCSP_BLOCK_THREADS() / HCSP_CANONICAL_LANES;
  const bool pending = y != nullptr;
  // every pair's row starts 16-byte aligned: each lane's whole chunks move 16 bytes at once
  const bool vec =
      h % HCSP_CANONICAL_CHUNK == 0 && hcspAligned16(x) && hcspAligned16(w) && hcspAligned16(xOut) && hcspAligned16(normed) && (!pending || hcspAligned16(y));
  const float nf = static_cast<float>(n);
  const double hd = static_cast<double>(h);
  // the loop's bounds are the block's, so every thread reaches every barrier; a group past the
  // last pair reads and writes nothing
  for (int64_t first = HCSP_BLOCK_ID() * rowsPerBlock; first < pairs; first += HCSP_BLOCK_COUNT() * rowsPerBlock) {
    const int64_t p = first + group;  // the (row, stream) pair t*n + s
    const bool mine = p < pairs;
    const int64_t t = mine ? p / n : 0;
    const int64_t s = p - t * n;
    float part = 0.0f;
    if (mine) {
      const float inj = pending ? injectScale(raw[p], nf, hf) : 0.0f;
      // one read of the stream (and of y): the combined chunk is written and its squares added in lane order
      part = hcspCanonicalLaneChunks(lane, h, 0.0f, [&](float acc, int64_t base, int count) {
        const bool whole = vec && count == HCSP_CANONICAL_CHUNK;
        HcspBf16Chunk c = hcspLoadChunk(x + p * h + base, count, whole);
        if (pending) {
          const HcspBf16Chunk yc = hcspLoadChunk(y + t * h + base, count, whole);
          for (int k = 0; k < HCSP_CANONICAL_CHUNK; k++) c.v[k] = combined(c.v[k], yc.v[k], inj, hf);
        }
        hcspStoreChunk(xOut + p * h + base, c, count, whole);
        for (int k = 0; k < HCSP_CANONICAL_CHUNK; k++) {
          const float v = bf16ToF32(c.v[k]);
          if (k < count) acc = HCSP_FMAF(v, v, acc);
        }
        return acc;
      });
    }
    const float sumsq = hcspCanonicalButterfly(part, lane, exchange + group * HCSP_CANONICAL_EXCHANGE);
    if (mine) {
      // rstd = rsqrt(fl(fl(sumsq / H) + eps)); normed = bf(fl(fl(X * rstd) * fl(1 + w)))
      const float mean = static_cast<float>(static_cast<double>(sumsq) / hd);
      const float rstd = hcsp::fp32::rsqrtF32(mean + eps);
      // the lane's own chunks, just written by this thread (so in its cache, and needing no barrier)
      hcspCanonicalLaneChunks(lane, h, 0, [&](int, int64_t base, int count) {
        const bool whole = vec && count == HCSP_CANONICAL_CHUNK;
        const HcspBf16Chunk c = hcspLoadChunk(xOut + p * h + base, count, whole);
        const HcspBf16Chunk wc = hcspLoadChunk(w + s * h + base, count, whole);
        HcspBf16Chunk o;
        for (int k = 0; k < HCSP_CANONICAL_CHUNK; k++) o.v[k] = f32ToBf16((bf16ToF32(c.v[k]) * rstd) * (1.0f + bf16ToF32(wc.v[k])));
        hcspStoreChunk(normed + p * h + base, o, count, whole);
        return 0;
      });
    }
  }
}

HCSP_GLOBAL void hcsp_hc_scaled_silu(const uint16_t* d, uint16_t* gate, uint16_t* raw, int64_t rows, int64_t width, int64_t lowRank, int64_t n) {
  const float nf = static_cast<float>(n);
  HCSP_GRID_STRIDE(i, rows * width) {
    const int64_t t = i / width;
    const int64_t j = i - t * width;
    if (j < lowRank) {
      const float scaled = roundBf16(bf16ToF32(d[i]) / nf);
      gate[t * lowRank + j] = f32ToBf16(hcsp::fp32::siluF32(scaled));
    } else {
      raw[t * n + (j - lowRank)] = d[i];
    }
  }
}

HCSP_GLOBAL void hcsp_hc_gated_mean(const uint16_t* up, const uint16_t* normed, uint16_t* x, int64_t rows, int64_t n, int64_t h, int32_t hf) {
  const int lane = hcspCanonicalLane();
  const int64_t rowsPerBlock = HCSP_BLOCK_THREADS() / HCSP_CANONICAL_LANES;
  const bool vec = h % HCSP_CANONICAL_CHUNK == 0 && hcspAligned16(up) && hcspAligned16(normed) && hcspAligned16(x);
  for (int64_t t = HCSP_BLOCK_ID() * rowsPerBlock + hcspCanonicalRowGroup(); t < rows; t += HCSP_BLOCK_COUNT() * rowsPerBlock) {
    hcspCanonicalLaneChunks(lane, h, 0, [&](int, int64_t base, int count) {
      const bool whole = vec && count == HCSP_CANONICAL_CHUNK;
      float mean[HCSP_CANONICAL_CHUNK];
      hcspGatedMeanChunk(up, normed, t, n, h, base, count, whole, hf, mean);
      HcspBf16Chunk c;
      for (int k = 0; k < HCSP_CANONICAL_CHUNK; k++) c.v[k] = f32ToBf16(mean[k]);
      hcspStoreChunk(x + t * h + base, c, count, whole);
      return 0;
    });
  }
}
