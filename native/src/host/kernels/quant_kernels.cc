// Host kernels of the FP8 PTPC quantization ops (core graph/ops/quantOps.ts) but
// fp8LinearPtpc (a GEMM, gemm/), as reference/kernels/quantKernels.ts with
// numerics/quant.ts and numerics/fp8.ts: per-row amax over the bf16 values (the first NaN
// wins and makes the row NaN), scale 'divide' fl(amax / max) or 'reciprocal'
// fl(amax * fl(1 / max)) (1 for a zero row), q = cvt(fl(x / s)) or cvt(fl(x * fl(1 / s))).
// Every step is one correctly rounded fp32 operation on fp32 operands, so float arithmetic
// equals the reference's double-then-fround.
#include <cmath>
#include <cstring>

#include "../../numerics/bf16.h"
#include "../../numerics/fp32_math.h"
#include "../fp8_format.h"
#include "kernel_args.h"
#include "../../ops/quant_checks.h"
#include "vec_math.h"

namespace hcsp {
namespace {

// the checks and their messages are shared with the GPU launchers (ops/quant_checks.h)
using Style = ops::QuantStyle;

/**
 * max |x| over a bf16 row (rowAmax): the magnitudes' bit patterns order as their values, so an
 * integer max finds it; a NaN anywhere makes it the first NaN's |x| (torch.amax).
 */
inline float rowAmax(const uint16_t* x, int64_t cols) {
  uint16_t m = 0;
  for (int64_t j = 0; j < cols; j++) {
    const uint16_t a = static_cast<uint16_t>(x[j] & 0x7fffu);
    m = a > m ? a : m;
  }
  if (m > 0x7f80u) {
    for (int64_t j = 0; j < cols; j++) {
      if ((x[j] & 0x7fffu) > 0x7f80u) return std::fabs(bf16ToF32(x[j]));
    }
  }
  return bf16ToF32(m);
}

/** the per-token quantization of one bf16 row (quantizeBf16RowsFp8), for the format with exponent bias BIAS */
template <int BIAS>
void quantizeRowT(const uint16_t* x, int64_t cols, const Fp8Format& f, Style style, uint8_t* q, float* scale) {
  const float amax = rowAmax(x, cols);
  float s;
  if (amax == 0.0f) {
    s = 1.0f;
  } else if (style == Style::Divide) {
    s = amax / f.max;
  } else {
    s = amax * static_cast<float>(1.0 / static_cast<double>(f.max));
  }
  *scale = s;
  int64_t j = 0;
  if (style == Style::Divide) {
    const vec::F sv = vec::splat(s);
    for (; j + vec::W <= cols; j += vec::W) vec::storeFp8<BIAS>(q + j, vec::loadBf16(x + j) / sv);
    for (; j < cols; j++) q[j] = f32ToFp8(bf16ToF32(x[j]) / s, f);
  } else {
    const float inv = 1.0f / s;
    const vec::F iv = vec::splat(inv);
    for (; j + vec::W <= cols; j += vec::W) vec::storeFp8<BIAS>(q + j, vec::loadBf16(x + j) * iv);
    for (; j < cols; j++) q[j] = f32ToFp8(bf16ToF32(x[j]) * inv, f);
  }
}

inline void quantizeRow(const uint16_t* x, int64_t cols, const Fp8Format& f, Style style, uint8_t* q, float* scale) {
  if (f.bias == 7) {
    quantizeRowT<7>(x, cols, f, style, q, scale);
  } else {
    quantizeRowT<8>(x, cols, f, style, q, scale);
  }
}

int64_t rowGrain(int64_t cols) { return cols >= 16384 ? 1 : 16384 / (cols < 1 ? 1 : cols); }

/** q and scale of bf16 rows [rows, cols] (checked: ops::QuantRowsArgs) */
Outputs quantizeRows(const ops::QuantRowsArgs& a, const KernelContext& ctx) {
  const Tensor& x = a.x;
  const Fp8Format& f = a.f;
  const Style style = a.style;
  const int64_t rows = a.rows, cols = a.cols;
  TensorPtr q = makeTensor(fp8DType(f), {rows, cols});
  TensorPtr scale = makeTensor(DType::F32, {rows});
  const uint16_t* xd = x.bf16();
  uint8_t* qd = q->data<uint8_t>();
  float* sd = scale->data<float>();
  ctx.pool.parallelFor(rows, rowGrain(cols), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) quantizeRow(xd + t * cols, cols, f, style, qd + t * cols, sd + t);
  });
  return {q, scale};
}

Outputs quantFp8PerToken(const Inputs& in, const KernelContext& ctx) { return quantizeRows(ops::checkQuantFp8PerToken(in, ctx.attrs), ctx); }

Outputs hcGatedMeanQuant(const Inputs& in, const KernelContext& ctx) {
  const ops::GatedMeanQuantArgs a = ops::checkHcGatedMeanQuant(in, ctx.attrs);
  const Fp8Format& f = a.f;
  const Style style = a.style;
  const Tensor& up = a.up;
  const Tensor& normed = a.normed;
  const int64_t rows = a.rows, width = a.width, n = a.n, h = a.h;
  TensorPtr x = makeTensor(DType::BF16, {rows, h});
  TensorPtr q = makeTensor(fp8DType(f), {rows, h});
  TensorPtr scale = makeTensor(DType::F32, {rows});
  const uint16_t* ud = up.bf16();
  const uint16_t* nd = normed.bf16();
  uint16_t* xd = x->bf16();
  uint8_t* qd = q->data<uint8_t>();
  float* sd = scale->data<float>();
  const float nf = static_cast<float>(n);
  const vec::F nv = vec::splat(nf);
  ctx.pool.parallelFor(rows, rowGrain(width * 4), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) {
      const uint16_t* ur = ud + t * width;
      const uint16_t* nr = nd + t * width;
      uint16_t* xr = xd + t * h;
      // gatedMeanF32 ('atom' order), then x = bf(v)
      int64_t j = 0;
      for (; j + vec::W <= h; j += vec::W) {
        vec::F acc = vec::splat(0.0f);
        for (int64_t s = 0; s < n; s++) acc = acc + vec::sigmoidF32(vec::loadBf16(ur + s * h + j)) * vec::loadBf16(nr + s * h + j);
        vec::storeBf16(xr + j, acc / nv);
      }
      for (; j < h; j++) {
        float acc = 0.0f;
        for (int64_t s = 0; s < n; s++) acc = acc + fp32::sigmoidF32(bf16ToF32(ur[s * h + j])) * bf16ToF32(nr[s * h + j]);
        xr[j] = f32ToBf16(acc / nf);
      }
      quantizeRow(xr, h, f, style, qd + t * h, sd + t);
    }
  });
  return {x, q, scale};
}

Outputs fp8QuantWeightPerChannel(const Inputs& in, const KernelContext& ctx) { return quantizeRows(ops::checkFp8QuantWeightPerChannel(in, ctx.attrs), ctx); }

}  // namespace

HCSP_KERNEL(quantFp8PerToken, quantFp8PerToken);
HCSP_KERNEL(hcGatedMeanQuant, hcGatedMeanQuant);
HCSP_KERNEL(fp8QuantWeightPerChannel, fp8QuantWeightPerChannel);

}  // namespace hcsp
