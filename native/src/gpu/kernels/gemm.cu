// GPU kernels of the GEMMs in the reference's order (GemmMode::Exact): `linear`
// (layers/linearMath.ts) and `fp8LinearPtpc` (layers/fp8Linear.ts). Each output is summed by
// one thread over k = 0..K-1 in order, one fp32 add at a time, so a GPU run is bit-exact with
// the CPU reference. The product of two bf16 (or two e4m3) values has at most 16 significant
// bits: the reference's fround(acc + x*w), product and sum in double, equals the exact sum
// rounded once, which is what a fused multiply-add computes (the host GEMM's argument,
// host/gemm/gemm_kernels.h); a separate fp32 multiply would round a product below fp32's
// normal range. So these kernels write an FMA on purpose (HCSP_GEMM_FMA); everything else
// rounds as written (contraction is off on every target).
#include "gemm.h"

#include "../../numerics/bf16.h"
#include "../../numerics/fp8.h"

using hcsp::bf16ToF32;
using hcsp::f32ToBf16;

#if defined(HCSP_GPU_CUDA)
#define HCSP_GEMM_FMA(a, b, c) __fmaf_rn(a, b, c)
#else
#define HCSP_GEMM_FMA(a, b, c) __builtin_fmaf(a, b, c)
#endif

namespace {

struct alignas(16) Bf16x8 {
  uint32_t v[4];
};

HCSP_HD float lowBf16(uint32_t u) { return hcsp::bitsFloat(u << 16); }
HCSP_HD float highBf16(uint32_t u) { return hcsp::bitsFloat(u & 0xffff0000u); }

}  // namespace

HCSP_GLOBAL void hcsp_gemm_linear_bf16(const uint16_t* x, const uint16_t* w, uint16_t* y, int64_t rows, int64_t inF, int64_t outF) {
  HCSP_GRID_STRIDE(i, rows * outF) {
    const int64_t t = i / outF;
    const int64_t o = i - t * outF;
    const uint16_t* xr = x + t * inF;
    const uint16_t* wr = w + o * inF;
    float acc = 0.0f;
    for (int64_t k = 0; k < inF; k++) acc = HCSP_GEMM_FMA(bf16ToF32(xr[k]), bf16ToF32(wr[k]), acc);
    y[i] = f32ToBf16(acc);
  }
}

HCSP_GLOBAL void hcsp_gemm_linear_bf16_v8(const uint16_t* x, const uint16_t* w, uint16_t* y, int64_t rows, int64_t inF, int64_t outF) {
  const int64_t groups = inF / 8;
  HCSP_GRID_STRIDE(i, rows * outF) {
    const int64_t t = i / outF;
    const int64_t o = i - t * outF;
    const Bf16x8* xr = reinterpret_cast<const Bf16x8*>(x + t * inF);
    const Bf16x8* wr = reinterpret_cast<const Bf16x8*>(w + o * inF);
    float acc = 0.0f;
    for (int64_t gk = 0; gk < groups; gk++) {
      const Bf16x8 xv = xr[gk];
      const Bf16x8 wv = wr[gk];
      // little-endian words: element 2j is the low half of word j, 2j+1 the high half
      for (int j = 0; j < 4; j++) {
        acc = HCSP_GEMM_FMA(lowBf16(xv.v[j]), lowBf16(wv.v[j]), acc);
        acc = HCSP_GEMM_FMA(highBf16(xv.v[j]), highBf16(wv.v[j]), acc);
      }
    }
    y[i] = f32ToBf16(acc);
  }
}

HCSP_GLOBAL void hcsp_gemm_fp8_ptpc(const uint8_t* q, const float* sx, const uint8_t* qW, const float* sw, uint16_t* y, int64_t rows, int64_t inF,
                                    int64_t outF, int32_t fnuz, int32_t weightFirst) {
  const hcsp::Fp8Format f = fnuz ? hcsp::E4M3FNUZ : hcsp::E4M3FN;
  HCSP_GRID_STRIDE(i, rows * outF) {
    const int64_t t = i / outF;
    const int64_t o = i - t * outF;
    const uint8_t* xr = q + t * inF;
    const uint8_t* wr = qW + o * inF;
    float acc = 0.0f;
    for (int64_t k = 0; k < inF; k++) acc = HCSP_GEMM_FMA(hcsp::fp8ToF32(xr[k], f), hcsp::fp8ToF32(wr[k], f), acc);
    const float scaled = weightFirst ? (acc * sw[o]) * sx[t] : (acc * sx[t]) * sw[o];
    y[i] = f32ToBf16(scaled);
  }
}
