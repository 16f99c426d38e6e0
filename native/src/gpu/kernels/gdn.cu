// GPU kernels of the GatedDeltaNet ops (core graph/ops/gdnOps.ts), operation for operation as
// reference/kernels/gdnKernels.ts and layers/gdn/gdnMath.ts (and the host port,
// host/kernels/gdn_kernels.cc): every fp32 step rounded (contraction is off on every target),
// every sum in the reference's order. Where gdnMath.ts adds an unrounded product
// (fr(acc + w*x): the product and the add in JavaScript doubles, then one rounding) these
// compute in double too: a bf16 product is exact in double, while an fp32 product below fp32's
// normal range would be rounded before the add. The sums of squares follow canonical order v1
// (reduce.h, numerics/canonical_sum.h): the l2 norms one thread per (token, key head) with the
// scalar definition, the gated norm a block kernel of one 64-thread row group per (token,
// head) row, its squares added by FMA (exact bf16 squares: the reference's fl(acc + v*v)).
//
// The recurrence is sequential over tokens, but its state columns are independent: u_j,
// delta_j, the update of S_ij (i = 0..dk-1) and o_j read only column j of S_h. So one thread
// owns one (value head, column) pair for the whole sequence, its column kept in a scratch
// tensor laid out [head, i, j] (consecutive threads touch consecutive j).
#include "gdn.h"

#include "../../numerics/bf16.h"
#include "../../numerics/canonical_sum.h"
#include "../../numerics/fp32_math.h"
#include "reduce.h"

using hcsp::bf16ToF32;
using hcsp::f32ToBf16;
using hcsp::roundBf16;

HCSP_GLOBAL void hcsp_gdn_conv_silu(const uint16_t* x, const uint16_t* w, uint16_t* y, int64_t tokens, int64_t channels, int64_t kernel, int32_t roundConv) {
  const int64_t past = kernel - 1;
  HCSP_GRID_STRIDE(i, tokens * channels) {
    const int64_t t = i / channels;
    const int64_t c = i - t * channels;
    float acc = 0.0f;
    for (int64_t j = 0; j < kernel; j++) {
      // row t + j of [zeros (past) | x]: input row t + j - past
      const int64_t r = t + j - past;
      const float xv = r >= 0 ? bf16ToF32(x[r * channels + c]) : 0.0f;
      acc = static_cast<float>(static_cast<double>(acc) + static_cast<double>(bf16ToF32(w[c * kernel + j])) * xv);
    }
    y[i] = f32ToBf16(hcsp::fp32::siluF32(roundConv ? roundBf16(acc) : acc));
  }
}

HCSP_GLOBAL void hcsp_gdn_gates(const uint16_t* b, const uint16_t* a, const uint16_t* aLog, const uint16_t* dtBias, float* g, uint16_t* beta, int64_t n,
                                int64_t heads) {
  HCSP_GRID_STRIDE(i, n) {
    const int64_t h = i % heads;
    const float negA = -hcsp::fp32::expF32(bf16ToF32(aLog[h]));
    g[i] = negA * hcsp::fp32::softplusF32(bf16ToF32(a[i]) + bf16ToF32(dtBias[h]));
    beta[i] = f32ToBf16(hcsp::fp32::sigmoidF32(bf16ToF32(b[i])));
  }
}

namespace hcsp_gdn {
/** dst[d] = (src[d] * rsqrt(sum_d src[d]^2 + eps)) * scale, the sum in canonical order v1 */
HCSP_HD void l2NormScaled(const uint16_t* src, int64_t n, float eps, float scale, float* dst) {
  const float ss = hcsp::canonical::sumSquaresBf16(src, n);
  const float r = hcsp::fp32::rsqrtF32(ss + eps);
  for (int64_t d = 0; d < n; d++) dst[d] = (bf16ToF32(src[d]) * r) * scale;
}
}  // namespace hcsp_gdn

HCSP_GLOBAL void hcsp_gdn_l2norm(const uint16_t* qkv, float* qn, float* kn, int64_t tokens, int64_t channels, int64_t keyHeads, int64_t keyDim, float eps,
                                 float scale) {
  const int64_t kOff = keyHeads * keyDim;
  HCSP_GRID_STRIDE(i, tokens * keyHeads) {
    const int64_t t = i / keyHeads;
    const int64_t kh = i - t * keyHeads;
    const uint16_t* row = qkv + t * channels;
    hcsp_gdn::l2NormScaled(row + kh * keyDim, keyDim, eps, scale, qn + t * kOff + kh * keyDim);
    hcsp_gdn::l2NormScaled(row + kOff + kh * keyDim, keyDim, eps, 1.0f, kn + t * kOff + kh * keyDim);
  }
}

HCSP_GLOBAL void hcsp_gdn_recurrence(const uint16_t* qkv, const float* qn, const float* kn, const float* g, const uint16_t* beta, float* state, uint16_t* o,
                                     int64_t tokens, int64_t channels, int64_t keyHeads, int64_t valueHeads, int64_t keyDim, int64_t valueDim) {
  const int64_t group = valueHeads / keyHeads;
  const int64_t kOff = keyHeads * keyDim;
  const int64_t vOff = 2 * keyHeads * keyDim;
  HCSP_GRID_STRIDE(idx, valueHeads * valueDim) {
    const int64_t h = idx / valueDim;
    const int64_t j = idx - h * valueDim;
    const int64_t kb = (h / group) * keyDim;
    // column j of S_h: s[i * valueDim], i = 0..keyDim-1
    float* s = state + h * keyDim * valueDim + j;
    for (int64_t i = 0; i < keyDim; i++) s[i * valueDim] = 0.0f;
    for (int64_t t = 0; t < tokens; t++) {
      const float* qh = qn + t * kOff + kb;
      const float* kh = kn + t * kOff + kb;
      const float decay = hcsp::fp32::expF32(g[t * valueHeads + h]);
      const float b = bf16ToF32(beta[t * valueHeads + h]);
      const float v = bf16ToF32(qkv[t * channels + vOff + h * valueDim + j]);
      // S = exp(g) S, then u_j = sum_i S_ij k_i (i in order): the decayed S_ij is final
      // before its product, so the two loops of the reference fuse without changing a bit
      float u = 0.0f;
      for (int64_t i = 0; i < keyDim; i++) {
        const float sd = s[i * valueDim] * decay;
        s[i * valueDim] = sd;
        u = u + sd * kh[i];
      }
      const float delta = b * (v - u);
      // S_ij += k_i * delta_j, then o_j = sum_i S_ij q_i (i in order)
      float acc = 0.0f;
      for (int64_t i = 0; i < keyDim; i++) {
        const float su = s[i * valueDim] + kh[i] * delta;
        s[i * valueDim] = su;
        acc = acc + su * qh[i];
      }
      o[(t * valueHeads + h) * valueDim + j] = f32ToBf16(acc);
    }
  }
}

HCSP_GLOBAL void hcsp_gdn_gated_norm(const uint16_t* o, const uint16_t* z, const uint16_t* w, uint16_t* y, int64_t rows, int64_t headDim, float eps) {
  HCSP_SHARED(float, exchange, HCSP_CANONICAL_MAX_ROWS* HCSP_CANONICAL_EXCHANGE);
  const int lane = hcspCanonicalLane();
  const int group = hcspCanonicalRowGroup();
  const int64_t rowsPerBlock = HCSP_BLOCK_THREADS() / HCSP_CANONICAL_LANES;
  const float dim = static_cast<float>(headDim);
  // the loop's bounds are the block's, so every thread reaches every barrier; a group past the
  // last row adds nothing and writes nothing
  for (int64_t first = HCSP_BLOCK_ID() * rowsPerBlock; first < rows; first += HCSP_BLOCK_COUNT() * rowsPerBlock) {
    const int64_t r = first + group;
    const bool live = r < rows;
    float part = 0.0f;
    if (live) {
      const uint16_t* row = o + r * headDim;
      part = hcspCanonicalLaneSum(lane, headDim, [&](float acc, int64_t j) {
        const float v = bf16ToF32(row[j]);
        return HCSP_FMAF(v, v, acc);
      });
    }
    const float ss = hcspCanonicalButterfly(part, lane, exchange + group * HCSP_CANONICAL_EXCHANGE);
    if (live) {
      const float rs = hcsp::fp32::rsqrtF32(ss / dim + eps);
      for (int64_t j = lane; j < headDim; j += HCSP_CANONICAL_LANES) {
        const int64_t i = r * headDim + j;
        const float normed = roundBf16(bf16ToF32(o[i]) * rs);
        const float weighted = roundBf16(normed * bf16ToF32(w[j]));
        y[i] = f32ToBf16(weighted * hcsp::fp32::sigmoidF32(bf16ToF32(z[i])));
      }
    }
  }
}
