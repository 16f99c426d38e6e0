// GPU kernels of the hyper-connection ops (core graph/ops/hcOps.ts), as
// reference/kernels/hcKernels.ts with the math of hc/combineNorm.ts and hc/mix.ts, under both
// rounding contracts ('atom' rounds once per stored value, 'hf' where HF's bf16 torch ops
// store a tensor). One thread per output element, except the norm's sum of squares: one
// thread per (row, stream) pair sums its H squares in canonical order v1
// (numerics/canonical_sum.h: 64 lane sums, then the butterfly; hcsp_hc_norm_rstd), and the
// elementwise pass then reads that pair's rstd. The gated mean's sum over streams is one
// thread's, s in order.
//
// Rounding: the reference's JS arithmetic on two fp32 operands rounded by Math.fround is one
// correctly rounded fp32 operation here (fp32 on fp32 operands through double, then rounded
// to fp32, equals the fp32 operation: 53 >= 2*24 + 2); the norm's v*v is not an fp32 value
// (bf16 squares can fall below fp32's range), so its adds go through double as the reference's.
#include "hc.h"

#include "../../numerics/bf16.h"
#include "../../numerics/canonical_sum.h"
#include "../../numerics/fp32_math.h"

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

HCSP_GLOBAL void hcsp_hc_copy_bf16(const uint16_t* x, uint16_t* y, int64_t count) {
  HCSP_GRID_STRIDE(i, count) { y[i] = x[i]; }
}

/** inj = fl(2 sigmoid(bf(raw / n))); 'hf' rounds the sigmoid to bf16 first (the doubling is exact) */
HCSP_GLOBAL void hcsp_hc_inject_scales(const uint16_t* raw, float* inj, int64_t count, int64_t n, int32_t hf) {
  const float nf = static_cast<float>(n);
  HCSP_GRID_STRIDE(i, count) {
    const float logit = roundBf16(bf16ToF32(raw[i]) / nf);
    const float sig = hcsp::fp32::sigmoidF32(logit);
    inj[i] = 2.0f * (hf ? roundBf16(sig) : sig);
  }
}

/** X_s = bf(X_s + p), p = fl(y * inj_s) ('hf': bf(p)) */
HCSP_GLOBAL void hcsp_hc_combine(const uint16_t* x, const uint16_t* y, const float* inj, uint16_t* out, int64_t rows, int64_t n, int64_t h, int32_t hf) {
  const int64_t width = n * h;
  HCSP_GRID_STRIDE(i, rows * width) {
    const int64_t t = i / width;
    const int64_t j = (i - t * width) % h;
    const float prod = bf16ToF32(y[t * h + j]) * inj[i / h];  // i / h = t*n + s: the (row, stream) pair
    const float p = hf ? roundBf16(prod) : prod;
    out[i] = f32ToBf16(bf16ToF32(x[i]) + p);
  }
}

/** sumsq = sum_j v*v in canonical order v1 (each add fl(acc + v*v) through double, as the reference's JS), rstd = rsqrt(fl(fl(sumsq / H) + eps)) */
HCSP_GLOBAL void hcsp_hc_norm_rstd(const uint16_t* x, float* rstd, int64_t pairs, int64_t h, float eps) {
  const double hd = static_cast<double>(h);
  HCSP_GRID_STRIDE(p, pairs) {
    const float sumsq = hcsp::canonical::sumSquaresBf16(x + p * h, h);
    const float mean = static_cast<float>(static_cast<double>(sumsq) / hd);
    rstd[p] = hcsp::fp32::rsqrtF32(mean + eps);
  }
}

HCSP_GLOBAL void hcsp_hc_norm_apply(const uint16_t* x, const float* rstd, const uint16_t* w, uint16_t* normed, int64_t count, int64_t width, int64_t h) {
  HCSP_GRID_STRIDE(i, count) {
    const float scale = 1.0f + bf16ToF32(w[i % width]);
    normed[i] = f32ToBf16((bf16ToF32(x[i]) * rstd[i / h]) * scale);
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

/**
 * 'atom': acc = fl(acc + fl(sig * normed)); 'hf': acc = fl(acc + bf(bf(sig) * normed));
 * x = bf(fl(acc / n)), s = 0..n-1 in order
 */
HCSP_GLOBAL void hcsp_hc_gated_mean(const uint16_t* up, const uint16_t* normed, uint16_t* x, int64_t rows, int64_t n, int64_t h, int32_t hf) {
  const float nf = static_cast<float>(n);
  HCSP_GRID_STRIDE(i, rows * h) {
    const int64_t t = i / h;
    const int64_t base = t * n * h + (i - t * h);
    float acc = 0.0f;
    for (int64_t s = 0; s < n; s++) {
      const float sig = hcsp::fp32::sigmoidF32(bf16ToF32(up[base + s * h]));
      const float v = bf16ToF32(normed[base + s * h]);
      acc = acc + (hf ? roundBf16(roundBf16(sig) * v) : sig * v);
    }
    x[i] = f32ToBf16(acc / nf);
  }
}
