// The vector pieces of the host attention kernels (attention_kernels.cc): the micro-kernel
// of the dot products and value sums, and fp32::expF32 over many values at once. Each lane
// runs the scalar reference's own sequence of correctly rounded float operations (no FMA,
// no reassociation: -ffp-contract=off), so every ISA gives the same bits as the scalar code;
// the ISA is the process's choice (cpu_features.h, HCSP_NATIVE_ISA), the AVX code compiled
// per function with target attributes. Private to the attention kernels.
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "../cpu_features.h"
#include "../../numerics/bf16.h"
#include "../../numerics/fp32_math.h"

namespace hcsp::attn {

// ---- the micro-kernel of the dot products and the value sums ------------------------

/**
 * out[g][j] = fr(... fr(fr(0 + fl(a[g][0] * B(0)[j])) + fl(a[g][1] * B(1)[j])) ...), x in
 * [0, X) in order, for g < G and j < len: each output one sequential float sum, lanes over j.
 * B(x) = B + (rowIdx ? rowIdx[x] : x) * ld. This is the reference's fr(acc + fr(p * v)) (the
 * value sums) and, when the bf16 products are exact in float, its fr(dot + q * k).
 */
struct Mk {
  int64_t X;
  const float* a[4];
  const float* B;
  int64_t ld;
  const int32_t* rowIdx;
  int64_t len;
  float* out[4];
};

/** lanes per call: 4 vectors of the ISA's width */
inline int64_t mkWidth(Isa isa) { return isa == Isa::Avx2 ? 32 : 64; }
/** heads per call (the accumulators must stay in registers) */
inline int mkHeads(Isa isa) { return isa == Isa::Avx2 ? 2 : 4; }

template <int G>
inline void mkPortable(const Mk& m) {
  constexpr int64_t W = 64;
  float acc[G][W];
  for (int g = 0; g < G; g++)
    for (int64_t j = 0; j < W; j++) acc[g][j] = 0.0f;
  const int64_t len = m.len;
  for (int64_t x = 0; x < m.X; x++) {
    const float* b = m.B + (m.rowIdx ? static_cast<int64_t>(m.rowIdx[x]) : x) * m.ld;
    for (int g = 0; g < G; g++) {
      const float av = m.a[g][x];
      float* ag = acc[g];
      for (int64_t j = 0; j < len; j++) ag[j] = ag[j] + av * b[j];
    }
  }
  for (int g = 0; g < G; g++) std::memcpy(m.out[g], acc[g], len * sizeof(float));
}

template <int G>
__attribute__((target("avx512f"))) inline void mkAvx512(const Mk& m) {
  __m512 acc[G][4];
  for (int g = 0; g < G; g++)
    for (int v = 0; v < 4; v++) acc[g][v] = _mm512_setzero_ps();
  __mmask16 mask[4];
  for (int v = 0; v < 4; v++) {
    const int64_t rem = m.len - 16 * v;
    mask[v] = rem >= 16 ? static_cast<__mmask16>(0xffff) : rem <= 0 ? static_cast<__mmask16>(0) : static_cast<__mmask16>((1u << rem) - 1);
  }
  for (int64_t x = 0; x < m.X; x++) {
    const float* b = m.B + (m.rowIdx ? static_cast<int64_t>(m.rowIdx[x]) : x) * m.ld;
    __m512 bv[4];
    for (int v = 0; v < 4; v++) bv[v] = _mm512_maskz_loadu_ps(mask[v], b + 16 * v);
    for (int g = 0; g < G; g++) {
      const __m512 av = _mm512_set1_ps(m.a[g][x]);
      for (int v = 0; v < 4; v++) acc[g][v] = _mm512_add_ps(acc[g][v], _mm512_mul_ps(av, bv[v]));
    }
  }
  for (int g = 0; g < G; g++)
    for (int v = 0; v < 4; v++) _mm512_mask_storeu_ps(m.out[g] + 16 * v, mask[v], acc[g][v]);
}

template <int G>
__attribute__((target("avx2"))) inline void mkAvx2(const Mk& m) {
  __m256 acc[G][4];
  for (int g = 0; g < G; g++)
    for (int v = 0; v < 4; v++) acc[g][v] = _mm256_setzero_ps();
  __m256i mask[4];
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (int v = 0; v < 4; v++) {
    const int64_t rem = std::max<int64_t>(0, std::min<int64_t>(8, m.len - 8 * v));
    mask[v] = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(rem)), lane);
  }
  for (int64_t x = 0; x < m.X; x++) {
    const float* b = m.B + (m.rowIdx ? static_cast<int64_t>(m.rowIdx[x]) : x) * m.ld;
    __m256 bv[4];
    for (int v = 0; v < 4; v++) bv[v] = _mm256_maskload_ps(b + 8 * v, mask[v]);
    for (int g = 0; g < G; g++) {
      const __m256 av = _mm256_set1_ps(m.a[g][x]);
      for (int v = 0; v < 4; v++) acc[g][v] = _mm256_add_ps(acc[g][v], _mm256_mul_ps(av, bv[v]));
    }
  }
  for (int g = 0; g < G; g++)
    for (int v = 0; v < 4; v++) _mm256_maskstore_ps(m.out[g] + 8 * v, mask[v], acc[g][v]);
}

/** one call for G = m's heads (1..mkHeads(isa)), len <= mkWidth(isa) */
inline void runMk(Isa isa, int G, const Mk& m) {
  switch (isa) {
    case Isa::Avx512:
      switch (G) {
        case 1:
          return mkAvx512<1>(m);
        case 2:
          return mkAvx512<2>(m);
        case 3:
          return mkAvx512<3>(m);
        default:
          return mkAvx512<4>(m);
      }
    case Isa::Avx2:
      if (G == 1) return mkAvx2<1>(m);
      return mkAvx2<2>(m);
    case Isa::Portable:
      break;
  }
  switch (G) {
    case 1:
      return mkPortable<1>(m);
    case 2:
      return mkPortable<2>(m);
    case 3:
      return mkPortable<3>(m);
    default:
      return mkPortable<4>(m);
  }
}

/** lanes of a panel: a panel layout keeps PANEL columns of every row side by side */
constexpr int64_t PANEL = 64;

/**
 * out[g][j] = fr(sum_x a[g][x] * B(x)[j]) for g < heads, j < len (any sizes), the sum over
 * x in order from 0: the micro-kernel over lane tiles and head chunks when `exact` (float
 * products equal JavaScript's double ones), else in double, each step rounded once.
 * Column j of row x is at B + (j / PANEL) * panelStride + (rowIdx ? rowIdx[x] : x) * ld + j % PANEL:
 * row-major B has panelStride = PANEL; a panel layout [panel][x][PANEL] has ld = PANEL and
 * panelStride = X * PANEL (each call then reads one contiguous panel).
 */
inline void sums(Isa isa, bool exact, int64_t heads, const float* a, int64_t aStride, int64_t X, const float* B, int64_t ld, int64_t panelStride,
                 const int32_t* rowIdx, int64_t len, float* out, int64_t outStride) {
  if (!exact) {
    for (int64_t g = 0; g < heads; g++) {
      const float* ag = a + g * aStride;
      float* og = out + g * outStride;
      for (int64_t j0 = 0; j0 < len; j0 += PANEL) {
        const int64_t n = std::min<int64_t>(PANEL, len - j0);
        const float* Bp = B + (j0 / PANEL) * panelStride;
        float* oj = og + j0;
        for (int64_t j = 0; j < n; j++) oj[j] = 0.0f;
        for (int64_t x = 0; x < X; x++) {
          const float* b = Bp + (rowIdx ? static_cast<int64_t>(rowIdx[x]) : x) * ld;
          const double av = ag[x];
          for (int64_t j = 0; j < n; j++) oj[j] = static_cast<float>(static_cast<double>(oj[j]) + av * static_cast<double>(b[j]));
        }
      }
    }
    return;
  }
  const int64_t W = mkWidth(isa);  // divides PANEL
  const int GM = mkHeads(isa);
  for (int64_t j0 = 0; j0 < len; j0 += W) {
    const float* Bt = B + (j0 / PANEL) * panelStride + j0 % PANEL;
    for (int64_t g0 = 0; g0 < heads; g0 += GM) {
      const int G = static_cast<int>(std::min<int64_t>(GM, heads - g0));
      Mk m{X, {}, Bt, ld, rowIdx, std::min<int64_t>(W, len - j0), {}};
      for (int g = 0; g < G; g++) {
        m.a[g] = a + (g0 + g) * aStride;
        m.out[g] = out + (g0 + g) * outStride + j0;
      }
      runMk(isa, G, m);
    }
  }
}

// ---- fp32::expF32 on vectors ----------------------------------------------------------

/** expF32 of 16 lanes: its steps per lane, then its special cases by mask */
__attribute__((target("avx512f"))) inline __m512 expAvx512(__m512 x) {
  using namespace fp32;
  // the zero-masked forms with every lane set: GCC 12 warns on the unmasked ones' undefined source
  constexpr __mmask16 ALL = 0xffff;
  const __m512 kf =
      _mm512_maskz_roundscale_ps(ALL, _mm512_add_ps(_mm512_mul_ps(x, _mm512_set1_ps(LOG2E)), _mm512_set1_ps(0.5f)), _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  const __m512 r = _mm512_sub_ps(_mm512_sub_ps(x, _mm512_mul_ps(kf, _mm512_set1_ps(LN2_HI))), _mm512_mul_ps(kf, _mm512_set1_ps(LN2_LO)));
  __m512 p = _mm512_set1_ps(E7);
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(E6));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(E5));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(E4));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(E3));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(E2));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(1.0f));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(1.0f));
  // k in [-126, 128] wherever the value is used: 2^k, or 2^(k-1) then * 2 above 127
  const __m512i k = _mm512_maskz_cvttps_epi32(ALL, kf);
  const __mmask16 big = _mm512_cmpgt_epi32_mask(k, _mm512_set1_epi32(127));
  const __m512i e = _mm512_mask_sub_epi32(k, big, k, _mm512_set1_epi32(1));
  const __m512 scale = _mm512_castsi512_ps(_mm512_maskz_slli_epi32(ALL, _mm512_add_epi32(e, _mm512_set1_epi32(127)), 23));
  __m512 y = _mm512_mul_ps(p, scale);
  y = _mm512_mask_mul_ps(y, big, y, _mm512_set1_ps(2.0f));
  const __m512 zero = _mm512_setzero_ps();
  y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(y, _mm512_set1_ps(MIN_NORMAL), _CMP_LT_OQ), zero);
  y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, _mm512_set1_ps(EXP_OVERFLOW), _CMP_GT_OQ), _mm512_set1_ps(__builtin_inff()));
  y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, _mm512_set1_ps(EXP_UNDERFLOW), _CMP_LT_OQ), zero);
  return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);
}

/** expF32 of 8 lanes (as expAvx512) */
__attribute__((target("avx2"))) inline __m256 expAvx2(__m256 x) {
  using namespace fp32;
  const __m256 kf = _mm256_floor_ps(_mm256_add_ps(_mm256_mul_ps(x, _mm256_set1_ps(LOG2E)), _mm256_set1_ps(0.5f)));
  const __m256 r = _mm256_sub_ps(_mm256_sub_ps(x, _mm256_mul_ps(kf, _mm256_set1_ps(LN2_HI))), _mm256_mul_ps(kf, _mm256_set1_ps(LN2_LO)));
  __m256 p = _mm256_set1_ps(E7);
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(E6));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(E5));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(E4));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(E3));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(E2));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(1.0f));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(1.0f));
  const __m256i k = _mm256_cvttps_epi32(kf);
  const __m256i big = _mm256_cmpgt_epi32(k, _mm256_set1_epi32(127));
  const __m256i e = _mm256_sub_epi32(k, _mm256_and_si256(big, _mm256_set1_epi32(1)));
  const __m256 scale = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(e, _mm256_set1_epi32(127)), 23));
  __m256 y = _mm256_mul_ps(p, scale);
  y = _mm256_blendv_ps(y, _mm256_mul_ps(y, _mm256_set1_ps(2.0f)), _mm256_castsi256_ps(big));
  const __m256 zero = _mm256_setzero_ps();
  y = _mm256_blendv_ps(y, zero, _mm256_cmp_ps(y, _mm256_set1_ps(MIN_NORMAL), _CMP_LT_OQ));
  y = _mm256_blendv_ps(y, _mm256_set1_ps(__builtin_inff()), _mm256_cmp_ps(x, _mm256_set1_ps(EXP_OVERFLOW), _CMP_GT_OQ));
  y = _mm256_blendv_ps(y, zero, _mm256_cmp_ps(x, _mm256_set1_ps(EXP_UNDERFLOW), _CMP_LT_OQ));
  return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

__attribute__((target("avx512f"))) inline void expShiftedAvx512(float* s, int64_t n, float m) {
  const __m512 vm = _mm512_set1_ps(m);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = n - i >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(s + i, k, expAvx512(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, s + i), vm)));
  }
}

__attribute__((target("avx2"))) inline void expShiftedAvx2(float* s, int64_t n, float m) {
  const __m256 vm = _mm256_set1_ps(m);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(s + i, expAvx2(_mm256_sub_ps(_mm256_loadu_ps(s + i), vm)));
  for (; i < n; i++) s[i] = fp32::expF32(s[i] - m);
}

/** s[i] = expF32(fr(s[i] - m)) for i < n */
inline void expShifted(Isa isa, float* s, int64_t n, float m) {
  switch (isa) {
    case Isa::Avx512:
      return expShiftedAvx512(s, n, m);
    case Isa::Avx2:
      return expShiftedAvx2(s, n, m);
    case Isa::Portable:
      break;
  }
  for (int64_t i = 0; i < n; i++) s[i] = fp32::expF32(s[i] - m);
}

}  // namespace hcsp::attn
