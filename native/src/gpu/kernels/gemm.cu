// GPU kernels of the GEMMs in the reference's order (GemmMode::Exact): `linear`
// (layers/linearMath.ts), its grouped form (each row against its group's weight: the MoE's
// experts, one launch for all) and `fp8LinearPtpc` (layers/fp8Linear.ts). Each output is summed by
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

/** one output of `linear`: bf(sum_k xr[k] * wr[k]), k = 0..inF-1 in order (every bf16 GEMM kernel here computes its outputs with this) */
HCSP_HD uint16_t linearDot(const uint16_t* xr, const uint16_t* wr, int64_t inF) {
  float acc = 0.0f;
  for (int64_t k = 0; k < inF; k++) acc = HCSP_GEMM_FMA(bf16ToF32(xr[k]), bf16ToF32(wr[k]), acc);
  return f32ToBf16(acc);
}

/** linearDot reading 8 bf16 at a time, the same adds in the same order: xr and wr 16-byte aligned, inF a multiple of 8 */
HCSP_HD uint16_t linearDotV8(const uint16_t* xr, const uint16_t* wr, int64_t inF) {
  const Bf16x8* xv8 = reinterpret_cast<const Bf16x8*>(xr);
  const Bf16x8* wv8 = reinterpret_cast<const Bf16x8*>(wr);
  float acc = 0.0f;
  for (int64_t gk = 0; gk < inF / 8; gk++) {
    const Bf16x8 xv = xv8[gk];
    const Bf16x8 wv = wv8[gk];
    // little-endian words: element 2j is the low half of word j, 2j+1 the high half
    for (int j = 0; j < 4; j++) {
      acc = HCSP_GEMM_FMA(lowBf16(xv.v[j]), lowBf16(wv.v[j]), acc);
      acc = HCSP_GEMM_FMA(highBf16(xv.v[j]), highBf16(wv.v[j]), acc);
    }
  }
  return f32ToBf16(acc);
}

}  // namespace

HCSP_GLOBAL void hcsp_gemm_linear_bf16(const uint16_t* x, const uint16_t* w, uint16_t* y, int64_t rows, int64_t inF, int64_t outF) {
  HCSP_GRID_STRIDE(i, rows * outF) {
    const int64_t t = i / outF;
    const int64_t o = i - t * outF;
    y[i] = linearDot(x + t * inF, w + o * inF, inF);
  }
}

HCSP_GLOBAL void hcsp_gemm_linear_bf16_v8(const uint16_t* x, const uint16_t* w, uint16_t* y, int64_t rows, int64_t inF, int64_t outF) {
  HCSP_GRID_STRIDE(i, rows * outF) {
    const int64_t t = i / outF;
    const int64_t o = i - t * outF;
    y[i] = linearDotV8(x + t * inF, w + o * inF, inF);
  }
}

// the row count is the device's (*rows): the grid is sized for the most rows, the threads past
// the last row's outputs find nothing to do
HCSP_GLOBAL void hcsp_gemm_grouped_bf16(const uint16_t* x, const uint16_t* w, const int32_t* rowGroup, const int32_t* rows, uint16_t* y, int64_t inF,
                                        int64_t outF) {
  const int64_t n = *rows;
  HCSP_GRID_STRIDE(i, n * outF) {
    const int64_t t = i / outF;
    const int64_t o = i - t * outF;
    y[i] = linearDot(x + t * inF, w + (static_cast<int64_t>(rowGroup[t]) * outF + o) * inF, inF);
  }
}

HCSP_GLOBAL void hcsp_gemm_grouped_bf16_v8(const uint16_t* x, const uint16_t* w, const int32_t* rowGroup, const int32_t* rows, uint16_t* y, int64_t inF,
                                           int64_t outF) {
  const int64_t n = *rows;
  HCSP_GRID_STRIDE(i, n * outF) {
    const int64_t t = i / outF;
    const int64_t o = i - t * outF;
    y[i] = linearDotV8(x + t * inF, w + (static_cast<int64_t>(rowGroup[t]) * outF + o) * inF, inF);
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
