// The AVX-512 tile: up to 6 rows x 64 outputs in 24 zmm accumulators. Per k, four panel
// vectors (64 outputs at k, from the widened fp32 block or widened here from the paired bf16
// panel: one shift and one mask per 32 outputs) and one broadcast x value per row; one FMA
// per (row, vector).
// Compiled with -mavx512f/bw/vl/dq -mfma (CMakeLists.txt) and only called when the CPU has
// them (cpu_features.cc).
#include <immintrin.h>

#include "gemm_kernels.h"

namespace hcsp::gemm {
namespace {

constexpr int L = 16;

inline __mmask16 laneMask(int valid) { return valid >= L ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << valid) - 1u); }

/**
 * f32ToBf16 on 16 lanes: RNE on the bit pattern, NaN -> 0x7FC0 (numerics/bf16.h). The
 * zero-masked forms with a full mask are the plain instructions; GCC 12's unmasked ones
 * start from an "undefined" register that -Wmaybe-uninitialized flags.
 */
inline __m256i toBf16(__m512 a) {
  constexpr __mmask16 ALL = 0xffff;
  const __m512i u = _mm512_castps_si512(a);
  const __m512i lsb = _mm512_and_si512(_mm512_maskz_srli_epi32(ALL, u, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_maskz_srli_epi32(ALL, _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb), 16);
  r = _mm512_mask_mov_epi32(r, _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q), _mm512_set1_epi32(0x7fc0));
  return _mm512_maskz_cvtepi32_epi16(ALL, r);
}

/** 16 bf16 bits -> 16 fp32 (exact); the zero-masked forms for toBf16's reason */
inline __m512 widen(const uint16_t* p) {
  constexpr __mmask16 ALL = 0xffff;
  const __m512i u = _mm512_maskz_cvtepu16_epi32(ALL, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(ALL, u, 16));
}

/** a paired group (gemm_kernels.h): 32 bf16, the even ones -> lo, the odd ones -> hi */
inline void widenPair(const uint16_t* p, __m512& lo, __m512& hi) {
  constexpr __mmask16 ALL = 0xffff;
  const __m512i u = _mm512_loadu_si512(p);
  lo = _mm512_castsi512_ps(_mm512_maskz_slli_epi32(ALL, u, 16));
  hi = _mm512_castsi512_ps(_mm512_and_si512(u, _mm512_set1_epi32(static_cast<int>(0xffff0000u))));
}

template <int R, int V, bool F32>
void tile(const Tile& t) {
  __m512 c[R][V];
  if (t.first) {
    for (int r = 0; r < R; r++)
      for (int v = 0; v < V; v++) c[r][v] = _mm512_setzero_ps();
  } else {
    for (int r = 0; r < R; r++)
      for (int v = 0; v < V; v++) c[r][v] = _mm512_loadu_ps(t.acc + r * t.accStride + v * L);
  }
  const float* xr[R];
  for (int r = 0; r < R; r++) xr[r] = t.xp + r * t.xStride;
  const uint16_t* wp = t.wp;
  const float* wf = t.wf;
  const int64_t ws = t.width;
  for (int64_t k = 0; k < t.kc; k++, wp += ws) {
    __m512 b[V];
    if (F32) {
      for (int v = 0; v < V; v++) b[v] = _mm512_loadu_ps(wf + k * ws + v * L);
    } else {
      for (int v = 0; v + 1 < V; v += 2) widenPair(wp + v * L, b[v], b[v + 1]);
      if (V % 2) b[V - 1] = widen(wp + (V - 1) * L);
    }
    for (int r = 0; r < R; r++) {
      const __m512 a = _mm512_set1_ps(xr[r][k]);
      for (int v = 0; v < V; v++) c[r][v] = _mm512_fmadd_ps(a, b[v], c[r][v]);
    }
  }
  if (!t.last) {
    for (int r = 0; r < R; r++)
      for (int v = 0; v < V; v++) _mm512_storeu_ps(t.acc + r * t.accStride + v * L, c[r][v]);
    return;
  }
  for (int v = 0; v < V; v++) {
    const int valid = t.n - v * L;
    if (valid <= 0) break;
    const __mmask16 m = laneMask(valid);
    if (t.epilogue == Epilogue::F32) {
      float* y = static_cast<float*>(t.y) + v * L;
      for (int r = 0; r < R; r++) _mm512_mask_storeu_ps(y + r * t.yStride, m, c[r][v]);
      continue;
    }
    uint16_t* y = static_cast<uint16_t*>(t.y) + v * L;
    if (t.epilogue == Epilogue::Bf16) {
      for (int r = 0; r < R; r++) _mm256_mask_storeu_epi16(y + r * t.yStride, m, toBf16(c[r][v]));
      continue;
    }
    const __m512 col = _mm512_maskz_loadu_ps(m, t.colScale + v * L);
    for (int r = 0; r < R; r++) {
      const __m512 row = _mm512_set1_ps(t.rowScale[r]);
      const __m512 s = t.colScaleFirst ? _mm512_mul_ps(_mm512_mul_ps(c[r][v], col), row) : _mm512_mul_ps(_mm512_mul_ps(c[r][v], row), col);
      _mm256_mask_storeu_epi16(y + r * t.yStride, m, toBf16(s));
    }
  }
}

template <int R, bool F32>
void byWidth(const Tile& t) {
  switch (t.width / L) {
    case 1:
      return tile<R, 1, F32>(t);
    case 2:
      return tile<R, 2, F32>(t);
    case 3:
      return tile<R, 3, F32>(t);
    default:
      return tile<R, 4, F32>(t);
  }
}

template <bool F32>
void byRows(const Tile& t) {
  withRows(t.mr, [&](auto rows) { byWidth<decltype(rows)::value, F32>(t); });
}

}  // namespace

void tileAvx512(const Tile& t) { return t.wf ? byRows<true>(t) : byRows<false>(t); }

void widenAvx512(const uint16_t* wp, int64_t kc, int width, float* dst) {
  for (int64_t k = 0; k < kc; k++, wp += width, dst += width) {
    int v = 0;
    for (; v + 2 * L <= width; v += 2 * L) {
      __m512 lo, hi;
      widenPair(wp + v, lo, hi);
      _mm512_storeu_ps(dst + v, lo);
      _mm512_storeu_ps(dst + v + L, hi);
    }
    if (v < width) _mm512_storeu_ps(dst + v, widen(wp + v));
  }
}

}  // namespace hcsp::gemm
