// GPU kernels of the PLE device ops (core graph/ops/pleOps.ts): pleRms1pNorm, pleGate,
// pleGatedValue and pleConvSilu, operation for operation as reference/kernels/pleKernels.ts
// computes them with layers/ple/pleMath.ts (and the host port, host/kernels/ple_kernels.cc).
// Where pleMath.ts computes in JavaScript doubles without Math.fround (acc + w*x,
// sumsq / groupSize) these compute in double and round to float where it rounds. The norm and
// the gate are block kernels (reduce.h): one 64-thread row group per (row, group) segment or
// (row, stream), the sum of squares (by FMA: bf16 squares are exact, so this is the
// reference's fl(acc + v*v)) or of the rounded products in canonical order v1, the norm's
// apply (or the gate's tail, lane 0) in the same kernel.
// pleNgramIds (a host op the native devices run themselves: 64-bit integers, DeviceOps.runsHostOp)
// with the host kernel's per-position code (numerics/ple_ngram.h) and pleNgramEmbedShard, the
// vocab-parallel table's lookup; their bad values are device checks (checks.h). (pleNgramEmbed,
// the gathered table's lookup, stays a host op.)
#include "ple.h"

#include "../../numerics/bf16.h"
#include "../../numerics/fp32_math.h"
#include "../../numerics/ple_ngram.h"
#include "checks.h"
#include "reduce.h"

using hcsp::bf16ToF32;
using hcsp::f32ToBf16;
using hcsp::roundBf16;

HCSP_GLOBAL void hcsp_ple_rms1p_norm(const uint16_t* x, const uint16_t* w, uint16_t* y, int64_t segments, int64_t width, int64_t groupSize, float eps) {
  HCSP_SHARED(float, exchange, HCSP_CANONICAL_MAX_ROWS* HCSP_CANONICAL_EXCHANGE);
  const int lane = hcspCanonicalLane();
  const int group = hcspCanonicalRowGroup();
  const int64_t perBlock = HCSP_BLOCK_THREADS() / HCSP_CANONICAL_LANES;
  // the loop's bounds are the block's, so every thread reaches every barrier; a group past the
  // last segment adds nothing and writes nothing
  for (int64_t first = HCSP_BLOCK_ID() * perBlock; first < segments; first += HCSP_BLOCK_COUNT() * perBlock) {
    const int64_t s = first + group;
    const bool live = s < segments;
    // segment s = t * groups + g starts at t * width + g * groupSize = s * groupSize
    const int64_t base = s * groupSize;
    float part = 0.0f;
    if (live) {
      part = hcspCanonicalLaneSum(lane, groupSize, [&](float acc, int64_t j) {
        const float v = bf16ToF32(x[base + j]);
        return HCSP_FMAF(v, v, acc);
      });
    }
    const float sumsq = hcspCanonicalButterfly(part, lane, exchange + group * HCSP_CANONICAL_EXCHANGE);
    if (live) {
      const float mean = static_cast<float>(static_cast<double>(sumsq) / static_cast<double>(groupSize));
      const float rstd = hcsp::fp32::rsqrtF32(mean + eps);
      const int64_t c0 = base % width;
      for (int64_t j = lane; j < groupSize; j += HCSP_CANONICAL_LANES) {
        const float scale = 1.0f + bf16ToF32(w[c0 + j]);
        y[base + j] = f32ToBf16((bf16ToF32(x[base + j]) * rstd) * scale);
      }
    }
  }
}

/** clamp_min of the signed square root: PLE_GATE_SQRT_FLOOR = fr(1e-6) */
#define HCSP_PLE_GATE_SQRT_FLOOR (static_cast<float>(1e-6))

HCSP_GLOBAL void hcsp_ple_gate(const uint16_t* k, const uint16_t* q, uint16_t* gate, int64_t segments, int64_t hidden, float sqrtH) {
  HCSP_SHARED(float, exchange, HCSP_CANONICAL_MAX_ROWS* HCSP_CANONICAL_EXCHANGE);
  const int lane = hcspCanonicalLane();
  const int group = hcspCanonicalRowGroup();
  const int64_t perBlock = HCSP_BLOCK_THREADS() / HCSP_CANONICAL_LANES;
  for (int64_t first = HCSP_BLOCK_ID() * perBlock; first < segments; first += HCSP_BLOCK_COUNT() * perBlock) {
    const int64_t r = first + group;
    const bool live = r < segments;
    const int64_t o = r * hidden;
    float part = 0.0f;
    if (live) part = hcspCanonicalLaneSum(lane, hidden, [&](float acc, int64_t j) { return acc + roundBf16(bf16ToF32(k[o + j]) * bf16ToF32(q[o + j])); });
    const float acc = hcspCanonicalButterfly(part, lane, exchange + group * HCSP_CANONICAL_EXCHANGE);
    if (live && lane == 0) {
      const float score = roundBf16(roundBf16(acc) / sqrtH);
      const float mag = HCSP_FABSF(score);
      const float minMag = HCSP_PLE_GATE_SQRT_FLOOR;
      const float clamped = mag != mag ? mag : (mag > minMag ? mag : minMag);  // Math.max: NaN wins
      const float root = roundBf16(hcsp::fp32::sqrtF32(roundBf16(clamped)));
      const float g = score > 0 ? root : score < 0 ? -root : 0.0f;
      gate[r] = f32ToBf16(hcsp::fp32::sigmoidF32(g));
    }
  }
}

HCSP_GLOBAL void hcsp_ple_gated_value(const uint16_t* gate, const uint16_t* value, uint16_t* y, int64_t rows, int64_t streams, int64_t hidden) {
  const int64_t width = streams * hidden;
  HCSP_GRID_STRIDE(i, rows * width) {
    const int64_t t = i / width;
    const int64_t c = i - t * width;
    const int64_t s = c / hidden;
    const int64_t j = c - s * hidden;
    y[i] = f32ToBf16(bf16ToF32(gate[t * streams + s]) * bf16ToF32(value[t * hidden + j]));
  }
}

HCSP_GLOBAL void hcsp_ple_conv_silu(const uint16_t* gNormed, const uint16_t* g, const uint16_t* w, uint16_t* y, int64_t rows, int64_t channels, int64_t kernel,
                                    int64_t dilation) {
  HCSP_GRID_STRIDE(i, rows * channels) {
    const int64_t t = i / channels;
    const int64_t c = i - t * channels;
    float acc = 0.0f;
    for (int64_t tap = 0; tap < kernel; tap++) {
      const int64_t back = kernel - 1 - tap;
      if (back > 0 && dilation > t / back) continue;  // src = t - back * dilation < 0 (no overflow)
      const int64_t src = t - back * dilation;
      acc = static_cast<float>(static_cast<double>(acc) + static_cast<double>(bf16ToF32(w[c * kernel + tap])) * bf16ToF32(gNormed[src * channels + c]));
    }
    const float act = roundBf16(hcsp::fp32::siluF32(roundBf16(acc)));
    y[i] = f32ToBf16(bf16ToF32(g[i]) + act);
  }
}

HCSP_GLOBAL void hcsp_ple_ngram_ids(const int32_t* tokens, int32_t* ids, unsigned long long* tokenFailed, unsigned long long* productFailed, int64_t T,
                                    HcspPleHash h) {
  const int64_t heads = static_cast<int64_t>(h.ngramSize - 1) * h.headsPerNgram;
  HCSP_GRID_STRIDE(t, T) {
    if (!(tokens[t] >= 0 && tokens[t] < h.vocabBound)) hcspCheckFail(tokenFailed, t, tokens[t]);
    int32_t badS;
    int64_t badId;
    hcspPleNgramRow(tokens, t, h.eos, h.ngramSize, h.headsPerNgram, h.multipliers, h.maxIds, h.sizes, h.offsets, ids + t * heads, &badS, &badId);
    if (badS >= 0 && productFailed) hcspCheckFail(productFailed, t * h.ngramSize + badS, static_cast<int32_t>(badId));
  }
}

HCSP_GLOBAL void hcsp_ple_ngram_embed_shard(const int32_t* ids, const uint16_t* table, uint16_t* e, unsigned long long* failed, int64_t n, int64_t headDim,
                                            int64_t rowStart, int64_t rows, int64_t tableBound) {
  HCSP_GRID_STRIDE(k, n * headDim) {
    const int64_t i = k / headDim;
    const int64_t j = k - i * headDim;
    const int64_t id = ids[i];
    const bool inTable = id >= 0 && id < tableBound;
    if (!inTable && j == 0) hcspCheckFail(failed, i, static_cast<int32_t>(id));
    const int64_t local = id - rowStart;
    e[k] = inTable && local >= 0 && local < rows ? table[local * headDim + j] : HCSP_BF16_NEGATIVE_ZERO;
  }
}
