// Host kernels of the hyper-connection ops (core graph/ops/hcOps.ts), as
// reference/kernels/hcKernels.ts with the math of hc/combineNorm.ts and hc/mix.ts: the same
// per-element rounding order under both contracts ('atom' rounds once per stored value,
// 'hf' rounds where HF's bf16 torch ops store a tensor). Rows are independent and split
// over the pool; every output element is computed by one thread in the reference's order
// (the norm's sum of squares in canonical order v1 on the vector unit, canonical_sumsq.h;
// the gated mean's short sum over the streams in order).
#include <cstring>
#include <vector>

#include "../../numerics/bf16.h"
#include "../../numerics/fp32_math.h"
#include "kernel_args.h"
#include "../../ops/hc_checks.h"
#include "vec_math.h"
#include "hc_avx512.h"
#include "canonical_sumsq.h"
#include "../cpu_features.h"

namespace hcsp {

float hcInjectScale(uint16_t rawBits, int64_t n, ops::HcContract contract) {
  const float logit = roundBf16(static_cast<float>(static_cast<double>(bf16ToF32(rawBits)) / static_cast<double>(n)));
  const float sig = fp32::sigmoidF32(logit);
  return 2.0f * (contract == ops::HcContract::Atom ? sig : roundBf16(sig));
}

namespace {

// the checks and their messages are shared with the GPU launchers (ops/hc_checks.h)
using Contract = ops::HcContract;

/** rows per parallel task: about 64k elements of work */
int64_t rowGrain(int64_t width) { return width >= 65536 ? 1 : 65536 / (width < 1 ? 1 : width); }

/** X_s = bf(X_s + p), p = fl(y * inj_s) ('hf': bf of it), for one row; xOut may alias xIn */
void combineRow(const uint16_t* xIn, uint16_t* xOut, const uint16_t* y, const uint16_t* raw, int64_t n, int64_t h, Contract contract) {
  for (int64_t s = 0; s < n; s++) {
    const float inj = hcInjectScale(raw[s], n, contract);
    const uint16_t* xs = xIn + s * h;
    uint16_t* os = xOut + s * h;
    if (contract == Contract::Atom) {
      for (int64_t j = 0; j < h; j++) os[j] = f32ToBf16(bf16ToF32(xs[j]) + bf16ToF32(y[j]) * inj);
    } else {
      for (int64_t j = 0; j < h; j++) os[j] = f32ToBf16(bf16ToF32(xs[j]) + roundBf16(bf16ToF32(y[j]) * inj));
    }
  }
}

Outputs hcExpand(const Inputs& in, const KernelContext& ctx) {
  const ops::HcExpandArgs a = ops::checkHcExpand(in, ctx.attrs);
  const int64_t rows = a.rows, n = a.n, h = a.h;
  const Tensor& e = a.e;
  TensorPtr x = makeTensor(DType::BF16, {rows, n * h});
  const uint16_t* src = e.bf16();
  uint16_t* dst = x->bf16();
  ctx.pool.parallelFor(rows, rowGrain(n * h), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) {
      for (int64_t s = 0; s < n; s++) std::memcpy(dst + (t * n + s) * h, src + t * h, h * 2);
    }
  });
  return {x};
}

Outputs hcCombineNorm(const Inputs& in, const KernelContext& ctx) {
  const ops::HcCombineNormArgs a = ops::checkHcCombineNorm(in, ctx.attrs);
  const int64_t rows = a.rows, n = a.n, h = a.h, width = a.width;
  const Contract contract = a.contract;
  TensorPtr xOut = makeTensor(DType::BF16, a.x.shape());
  TensorPtr normed = makeTensor(DType::BF16, a.x.shape());
  const float epsF = a.epsF;
  std::vector<float> scale(width);
  for (int64_t i = 0; i < width; i++) scale[i] = 1.0f + bf16ToF32(a.w.bf16()[i]);
  const uint16_t* xd = a.x.bf16();
  const uint16_t* yd = a.blockOut ? a.blockOut->bf16() : nullptr;
  const uint16_t* rd = a.raw ? a.raw->bf16() : nullptr;
  uint16_t* xo = xOut->bf16();
  uint16_t* no = normed->bf16();
  const float* sc = scale.data();
  const double hd = static_cast<double>(h);
  const Isa isa = gemmIsa();
  ctx.pool.parallelFor(rows, rowGrain(width), [&](int64_t t0, int64_t t1) {
    if (isa == Isa::Avx512) return hcavx512::combineNormRange(xd, yd, rd, xo, no, sc, n, h, contract, epsF, t0, t1);
    for (int64_t t = t0; t < t1; t++) {
      if (yd) {
        combineRow(xd + t * width, xo + t * width, yd + t * h, rd + t * n, n, h, contract);
      } else {
        std::memcpy(xo + t * width, xd + t * width, width * 2);
      }
      for (int64_t s = 0; s < n; s++) {
        const uint16_t* xs = xo + t * width + s * h;
        const float sumsq = canonical::sumSquaresBf16(isa, xs, h);
        const float rstd = fp32::rsqrtF32(static_cast<float>(static_cast<double>(sumsq) / hd) + epsF);
        const float* ss = sc + s * h;
        uint16_t* ns = no + t * width + s * h;
        for (int64_t j = 0; j < h; j++) ns[j] = f32ToBf16((bf16ToF32(xs[j]) * rstd) * ss[j]);
      }
    }
  });
  return {xOut, normed};
}

Outputs hcScaledSilu(const Inputs& in, const KernelContext& ctx) {
  const ops::HcScaledSiluArgs a = ops::checkHcScaledSilu(in, ctx.attrs);
  const int64_t rows = a.rows, width = a.width, lowRank = a.lowRank, n = a.n;
  const Tensor& d = a.d;
  TensorPtr gate = makeTensor(DType::BF16, {rows, lowRank});
  TensorPtr rawOut = width == lowRank ? nullptr : makeTensor(DType::BF16, {rows, n});
  const uint16_t* dd = d.bf16();
  uint16_t* gd = gate->bf16();
  uint16_t* rd = rawOut ? rawOut->bf16() : nullptr;
  const double nd = static_cast<double>(n);
  const vec::F nv = vec::splat(static_cast<float>(n));  // fl(d / n) in float: n is exact, one rounding either way
  ctx.pool.parallelFor(rows, rowGrain(width * 8), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) {
      const uint16_t* dr = dd + t * width;
      uint16_t* gr = gd + t * lowRank;
      int64_t j = 0;
      for (; j + vec::W <= lowRank; j += vec::W) vec::storeBf16(gr + j, vec::siluF32(vec::roundBf16v(vec::loadBf16(dr + j) / nv)));
      for (; j < lowRank; j++) {
        const float scaled = roundBf16(static_cast<float>(static_cast<double>(bf16ToF32(dr[j])) / nd));
        gr[j] = f32ToBf16(fp32::siluF32(scaled));
      }
      if (rd) std::memcpy(rd + t * n, dr + lowRank, n * 2);
    }
  });
  return {gate, rawOut};
}

Outputs hcGatedMean(const Inputs& in, const KernelContext& ctx) {
  const ops::HcGatedMeanArgs a = ops::checkHcGatedMean(in, ctx.attrs);
  const int64_t rows = a.rows, n = a.n, h = a.h, width = a.width;
  const Contract contract = a.contract;
  const Tensor& up = a.up;
  const Tensor& normed = a.normed;
  TensorPtr x = makeTensor(DType::BF16, {rows, h});
  const uint16_t* ud = up.bf16();
  const uint16_t* nd = normed.bf16();
  uint16_t* xd = x->bf16();
  const float nf = static_cast<float>(n);
  const vec::F nv = vec::splat(nf);
  const bool avx512 = gemmIsa() == Isa::Avx512;
  ctx.pool.parallelFor(rows, rowGrain(width * 8), [&](int64_t t0, int64_t t1) {
    if (avx512) return hcavx512::gatedMeanRange(ud, nd, xd, n, h, contract, t0, t1);
    for (int64_t t = t0; t < t1; t++) {
      const uint16_t* ur = ud + t * width;
      const uint16_t* nr = nd + t * width;
      uint16_t* xr = xd + t * h;
      int64_t j = 0;
      if (contract == Contract::Atom) {
        for (; j + vec::W <= h; j += vec::W) {
          vec::F acc = vec::splat(0.0f);
          for (int64_t s = 0; s < n; s++) acc = acc + vec::sigmoidF32(vec::loadBf16(ur + s * h + j)) * vec::loadBf16(nr + s * h + j);
          vec::storeBf16(xr + j, acc / nv);
        }
      } else {
        for (; j + vec::W <= h; j += vec::W) {
          vec::F acc = vec::splat(0.0f);
          for (int64_t s = 0; s < n; s++) {
            acc = acc + vec::roundBf16v(vec::roundBf16v(vec::sigmoidF32(vec::loadBf16(ur + s * h + j))) * vec::loadBf16(nr + s * h + j));
          }
          vec::storeBf16(xr + j, acc / nv);
        }
      }
      for (; j < h; j++) {
        float acc = 0.0f;
        for (int64_t s = 0; s < n; s++) {
          const float sig = fp32::sigmoidF32(bf16ToF32(ur[s * h + j]));
          const float v = bf16ToF32(nr[s * h + j]);
          acc = acc + (contract == Contract::Atom ? sig * v : roundBf16(roundBf16(sig) * v));
        }
        xr[j] = f32ToBf16(acc / nf);
      }
    }
  });
  return {x};
}

Outputs hcCombine(const Inputs& in, const KernelContext& ctx) {
  const ops::HcCombineArgs a = ops::checkHcCombine(in, ctx.attrs);
  const int64_t rows = a.rows, n = a.n, h = a.h, width = a.width;
  const Contract contract = a.contract;
  TensorPtr y = makeTensor(DType::BF16, a.x.shape());
  const uint16_t* xd = a.x.bf16();
  const uint16_t* bd = a.blockOut.bf16();
  const uint16_t* rd = a.raw.bf16();
  uint16_t* yd = y->bf16();
  const bool avx512 = gemmIsa() == Isa::Avx512;
  ctx.pool.parallelFor(rows, rowGrain(width), [&](int64_t t0, int64_t t1) {
    if (avx512) return hcavx512::combineRange(xd, bd, rd, yd, n, h, contract, t0, t1);
    for (int64_t t = t0; t < t1; t++) combineRow(xd + t * width, yd + t * width, bd + t * h, rd + t * n, n, h, contract);
  });
  return {y};
}

}  // namespace

HCSP_KERNEL(hcExpand, hcExpand);
HCSP_KERNEL(hcCombineNorm, hcCombineNorm);
HCSP_KERNEL(hcScaledSilu, hcScaledSilu);
HCSP_KERNEL(hcGatedMean, hcGatedMean);
HCSP_KERNEL(hcCombine, hcCombine);

}  // namespace hcsp
