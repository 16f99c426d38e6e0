// GPU kernels of the FP8 PTPC quantization ops (core graph/ops/quantOps.ts) but
// fp8LinearPtpc (a GEMM), as reference/kernels/quantKernels.ts with numerics/quant.ts and
// numerics/fp8.ts. A row's quantization is two kernels: one thread per row takes the amax in
// column order (rowAmax: the first NaN makes it NaN) and writes the row's scale, 'divide'
// fl(amax / max) or 'reciprocal' fl(amax * fl(1 / max)) (1 for a zero row); then one thread
// per element writes q = cvt(fl(x / s)) or cvt(fl(x * fl(1 / s))). The fused gated mean's
// values come first from their own elementwise kernel (hcGatedMean's 'atom' order).
// Every step is one correctly rounded fp32 operation on fp32 operands, which equals the
// reference's double arithmetic rounded by Math.fround (53 >= 2*24 + 2).
#include "quant.h"

#include "../../numerics/bf16.h"
#include "../../numerics/fp32_math.h"
#include "../../numerics/fp8.h"

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

/** the scale of one bf16 row: amax in column order (a NaN anywhere makes it NaN), 1 for a zero row */
template <bool FNUZ>
HCSP_HD float rowScale(const uint16_t* row, int64_t cols, int32_t reciprocal) {
  float amax = 0.0f;
  for (int64_t j = 0; j < cols; j++) {
    const float a = HCSP_FABSF(bf16ToF32(row[j]));
    if (a > amax || a != a) amax = a;
    if (amax != amax) break;
  }
  if (amax == 0.0f) return 1.0f;
  // a NaN row's scale is its first NaN's magnitude, quieted (the reference's IEEE division on
  // the host); written out, since a GPU's multiply or divide may return its canonical NaN
  if (amax != amax) return hcspBitsFloat(hcspFloatBits(amax) | 0x00400000u);
  if (reciprocal) return amax * fp8InvMax<FNUZ>();
  return amax / fp8Max<FNUZ>();
}

}  // namespace

HCSP_GLOBAL void hcsp_quant_row_scales(const uint16_t* x, float* scale, int64_t rows, int64_t cols, int32_t fnuz, int32_t reciprocal) {
  HCSP_GRID_STRIDE(t, rows) { scale[t] = fnuz ? rowScale<true>(x + t * cols, cols, reciprocal) : rowScale<false>(x + t * cols, cols, reciprocal); }
}

HCSP_GLOBAL void hcsp_quant_rows_fp8(const uint16_t* x, const float* scale, uint8_t* q, int64_t rows, int64_t cols, int32_t fnuz, int32_t reciprocal) {
  HCSP_GRID_STRIDE(i, rows * cols) {
    const float s = scale[i / cols];
    const float v = bf16ToF32(x[i]);
    const float y = reciprocal ? v * (1.0f / s) : v / s;
    q[i] = fnuz ? toFp8<true>(y) : toFp8<false>(y);
  }
}

/** gatedMeanF32 of quantKernels.ts: acc = fl(acc + fl(sig * normed)), s in order; x = bf(fl(acc / n)) (hc.cu's hcsp_hc_gated_mean, 'atom') */
HCSP_GLOBAL void hcsp_quant_gated_mean(const uint16_t* up, const uint16_t* normed, uint16_t* x, int64_t rows, int64_t n, int64_t h) {
  const float nf = static_cast<float>(n);
  HCSP_GRID_STRIDE(i, rows * h) {
    const int64_t t = i / h;
    const int64_t base = t * n * h + (i - t * h);
    float acc = 0.0f;
    for (int64_t s = 0; s < n; s++) acc = acc + hcsp::fp32::sigmoidF32(bf16ToF32(up[base + s * h])) * bf16ToF32(normed[base + s * h]);
    x[i] = f32ToBf16(acc / nf);
  }
}
