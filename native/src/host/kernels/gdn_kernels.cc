// Host kernels of the GatedDeltaNet ops (core graph/ops/gdnOps.ts), operation for operation
// as reference/kernels/gdnKernels.ts and layers/gdn/gdnMath.ts: every fp32 step rounded
// (float arithmetic, no contraction), every sum in the reference's order: the l2 norms' and the
// gated norm's sums of squares in canonical order v1 on the vector unit (canonical_sumsq.h),
// the conv's taps and the state products in index order. The recurrence is
// sequential over tokens and runs one value head per task (each head's state is its own);
// the other ops split rows. Loops that the reference writes output-by-output over an inner
// sum are written here as the same per-output accumulators updated side by side, which
// keeps each output's order of adds.
#include <cstring>
#include <string>
#include <vector>

#include "../../numerics/bf16.h"
#include "../../numerics/fp32_math.h"
#include "canonical_sumsq.h"
#include "kernel_args.h"
#include "../../ops/gdn_checks.h"

namespace hcsp {
namespace {

// the checks and their messages are shared with the GPU launchers (ops/gdn_checks.h)

/** fp32 scratch counted against the device's memory limit */
struct Scratch {
  std::vector<float> v;
  int64_t bytes;
  explicit Scratch(int64_t n) : bytes(n * static_cast<int64_t>(sizeof(float))) {
    reserveScratch(bytes);
    try {
      v.assign(static_cast<size_t>(n), 0.0f);
    } catch (...) {
      releaseScratch(bytes);
      throw;
    }
  }
  ~Scratch() { releaseScratch(bytes); }
  float* data() { return v.data(); }
};

Outputs gdnConvSilu(const Inputs& in, const KernelContext& ctx) {
  const ops::GdnConvArgs args = ops::checkGdnConvSilu(in, ctx.attrs);
  const int64_t T = args.T, channels = args.channels, kernel = args.kernel;
  const Tensor& x = args.x;
  const Tensor& w = args.w;
  const int64_t past = kernel - 1;
  const uint16_t* xd = x.bf16();
  const uint16_t* wd = w.bf16();
  TensorPtr y = makeTensor(DType::BF16, {T, channels});
  uint16_t* yd = y->bf16();
  ctx.pool.parallelFor(T, 16, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) {
      for (int64_t c = 0; c < channels; c++) {
        float acc = 0.0f;
        for (int64_t j = 0; j < kernel; j++) {
          // row t + j of [zeros (past) | x]: input row t + j - past
          const int64_t r = t + j - past;
          const float xv = r >= 0 ? bf16ToF32(xd[r * channels + c]) : 0.0f;
          // the reference adds the unrounded product (JS doubles): exact here too, for products below fp32's normal range
          acc = static_cast<float>(static_cast<double>(acc) + static_cast<double>(bf16ToF32(wd[c * kernel + j])) * static_cast<double>(xv));
        }
        yd[t * channels + c] = f32ToBf16(fp32::siluF32(args.roundConv ? roundBf16(acc) : acc));
      }
    }
  });
  return {y};
}

Outputs gdnGates(const Inputs& in, const KernelContext& ctx) {
  const ops::GdnGatesArgs args = ops::checkGdnGates(in, ctx.attrs);
  const int64_t T = args.T, heads = args.heads;
  std::vector<float> negA(heads), dt(heads);
  for (int64_t h = 0; h < heads; h++) {
    negA[h] = -fp32::expF32(bf16ToF32(args.aLog.bf16()[h]));
    dt[h] = bf16ToF32(args.dtBias.bf16()[h]);
  }
  TensorPtr g = makeTensor(DType::F32, {T, heads});
  TensorPtr beta = makeTensor(DType::BF16, {T, heads});
  const uint16_t* bd = args.b.bf16();
  const uint16_t* ad = args.a.bf16();
  float* gd = g->data<float>();
  uint16_t* betad = beta->bf16();
  ctx.pool.parallelFor(T * heads, 1 << 14, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; i++) {
      const int64_t h = i % heads;
      // fr(negA * sp): where both are NaN, the reference's JavaScript (V8 on x86) returns sp's NaN
      // (always the default NaN from logF32), and so does this; C++ leaves that choice to the compiler
      const float sp = fp32::softplusF32(bf16ToF32(ad[i]) + dt[h]);
      gd[i] = sp != sp ? sp : negA[h] * sp;
      betad[i] = f32ToBf16(fp32::sigmoidF32(bf16ToF32(bd[i])));
    }
  });
  return {g, beta};
}

/** dst[i] = (src[i] * rsqrt(sum_i src[i]^2 + eps)) * scale, the sum in canonical order v1 */
inline void l2NormScaled(Isa isa, const uint16_t* src, int64_t n, float eps, float scale, float* dst) {
  const float ss = canonical::sumSquaresBf16(isa, src, n);
  const float r = fp32::rsqrtF32(ss + eps);
  for (int64_t i = 0; i < n; i++) dst[i] = (bf16ToF32(src[i]) * r) * scale;
}

Outputs gdnRecurrence(const Inputs& in, const KernelContext& ctx) {
  const ops::GdnRecurrenceArgs args = ops::checkGdnRecurrence(in, ctx.attrs);
  const int64_t T = args.T, keyHeads = args.keyHeads, valueHeads = args.valueHeads, dk = args.dk, dv = args.dv, channels = args.channels;
  const int64_t group = valueHeads / keyHeads;
  const float epsF = args.epsF;
  const float scaleF = args.scaleF;
  const int64_t kOff = keyHeads * dk;
  const int64_t vOff = 2 * keyHeads * dk;
  const uint16_t* x = args.qkv.bf16();
  const float* gd = args.g.data<float>();
  const uint16_t* betad = args.beta.bf16();

  // the l2-normalized q (scaled) and k of every token and key head, as the reference
  // computes them at the start of each token's step
  Scratch qn(T * kOff), kn(T * kOff);
  const Isa isa = gemmIsa();
  ctx.pool.parallelFor(T, 8, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) {
      const uint16_t* row = x + t * channels;
      for (int64_t kh = 0; kh < keyHeads; kh++) {
        l2NormScaled(isa, row + kh * dk, dk, epsF, scaleF, qn.data() + t * kOff + kh * dk);
        l2NormScaled(isa, row + kOff + kh * dk, dk, epsF, 1.0f, kn.data() + t * kOff + kh * dk);
      }
    }
  });

  TensorPtr o = makeTensor(DType::BF16, {T, valueHeads * dv});
  uint16_t* od = o->bf16();
  const int64_t perHead = dk * dv + 2 * dv;
  reserveScratch(perHead * static_cast<int64_t>(sizeof(float)) * valueHeads);
  try {
    ctx.pool.parallelFor(valueHeads, 1, [&](int64_t h0, int64_t h1) {
      std::vector<float> S(dk * dv), delta(dv), acc(dv);
      for (int64_t h = h0; h < h1; h++) {
        std::fill(S.begin(), S.end(), 0.0f);
        const int64_t kb = (h / group) * dk;
        for (int64_t t = 0; t < T; t++) {
          const float* qh = qn.data() + t * kOff + kb;
          const float* kh = kn.data() + t * kOff + kb;
          const float decay = fp32::expF32(gd[t * valueHeads + h]);
          const float b = bf16ToF32(betad[t * valueHeads + h]);
          const uint16_t* v = x + t * channels + vOff + h * dv;
          float* s = S.data();
          for (int64_t i = 0; i < dk * dv; i++) s[i] = s[i] * decay;
          // u_j = sum_i S_ij k_i, i in order, one accumulator per j
          for (int64_t j = 0; j < dv; j++) acc[j] = 0.0f;
          for (int64_t i = 0; i < dk; i++) {
            const float ki = kh[i];
            const float* si = s + i * dv;
            for (int64_t j = 0; j < dv; j++) acc[j] = acc[j] + si[j] * ki;
          }
          for (int64_t j = 0; j < dv; j++) delta[j] = b * (bf16ToF32(v[j]) - acc[j]);
          for (int64_t i = 0; i < dk; i++) {
            const float ki = kh[i];
            float* si = s + i * dv;
            for (int64_t j = 0; j < dv; j++) si[j] = si[j] + ki * delta[j];
          }
          // o_j = sum_i S_ij q_i
          for (int64_t j = 0; j < dv; j++) acc[j] = 0.0f;
          for (int64_t i = 0; i < dk; i++) {
            const float qi = qh[i];
            const float* si = s + i * dv;
            for (int64_t j = 0; j < dv; j++) acc[j] = acc[j] + si[j] * qi;
          }
          uint16_t* oo = od + (t * valueHeads + h) * dv;
          for (int64_t j = 0; j < dv; j++) oo[j] = f32ToBf16(acc[j]);
        }
      }
    });
  } catch (...) {
    releaseScratch(perHead * static_cast<int64_t>(sizeof(float)) * valueHeads);
    throw;
  }
  releaseScratch(perHead * static_cast<int64_t>(sizeof(float)) * valueHeads);
  return {o};
}

Outputs gdnGatedNorm(const Inputs& in, const KernelContext& ctx) {
  const ops::GdnGatedNormArgs args = ops::checkGdnGatedNorm(in, ctx.attrs);
  const int64_t T = args.T, heads = args.heads, headDim = args.headDim;
  const float epsF = args.epsF;
  const float dim = static_cast<float>(headDim);
  const uint16_t* od = args.o.bf16();
  const uint16_t* zd = args.z.bf16();
  std::vector<float> wf(headDim);
  for (int64_t j = 0; j < headDim; j++) wf[j] = bf16ToF32(args.w.bf16()[j]);
  TensorPtr y = makeTensor(DType::BF16, {T, heads * headDim});
  uint16_t* yd = y->bf16();
  if (headDim <= 0) return {y};
  const Isa isa = gemmIsa();
  ctx.pool.parallelFor(T * heads, 64, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
      const int64_t base = r * headDim;
      const float ss = canonical::sumSquaresBf16(isa, od + base, headDim);
      const float rs = fp32::rsqrtF32(ss / dim + epsF);
      for (int64_t j = 0; j < headDim; j++) {
        const float normed = roundBf16(bf16ToF32(od[base + j]) * rs);
        const float weighted = roundBf16(normed * wf[j]);
        yd[base + j] = f32ToBf16(weighted * fp32::sigmoidF32(bf16ToF32(zd[base + j])));
      }
    }
  });
  return {y};
}

}  // namespace

HCSP_KERNEL(gdnConvSilu, gdnConvSilu);
HCSP_KERNEL(gdnGates, gdnGates);
HCSP_KERNEL(gdnRecurrence, gdnRecurrence);
HCSP_KERNEL(gdnGatedNorm, gdnGatedNorm);

}  // namespace hcsp
