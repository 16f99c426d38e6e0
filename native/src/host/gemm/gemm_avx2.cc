// The AVX2 tile: up to 6 rows x 16 outputs in 12 ymm accumulators (16 registers in all with
// the two panel vectors, fp32 or widened from the paired bf16 panel, and the broadcast).
// Same per-lane order as the AVX-512 tile.
// Compiled with -mavx2 -mfma (CMakeLists.txt) and only called when the CPU has them.
#include <immintrin.h>

#include <cstring>

#include "gemm_kernels.h"

namespace hcsp::gemm {
namespace {

constexpr int L = 8;

inline __m256i laneMask(int valid) { return _mm256_cmpgt_epi32(_mm256_set1_epi32(valid), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)); }

/** f32ToBf16 on 8 lanes (numerics/bf16.h): RNE on the bit pattern, NaN -> 0x7FC0 */
inline __m128i toBf16(__m256 a) {
  const __m256i u = _mm256_castps_si256(a);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb), 16);
  r = _mm256_blendv_epi8(r, _mm256_set1_epi32(0x7fc0), _mm256_castps_si256(_mm256_cmp_ps(a, a, _CMP_UNORD_Q)));
  // every lane is <= 0xffff, so the unsigned saturating pack is a plain narrowing
  return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}

inline void storeBf16(uint16_t* y, __m128i h, int valid) {
  if (valid >= L) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y), h);
    return;
  }
  alignas(16) uint16_t tmp[L];
  _mm_store_si128(reinterpret_cast<__m128i*>(tmp), h);
  std::memcpy(y, tmp, valid * sizeof(uint16_t));
}

/** 8 bf16 bits -> 8 fp32 (exact) */
inline __m256 widen(const uint16_t* p) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16));
}

/** a paired group (gemm_kernels.h): 16 bf16, the even ones -> lo, the odd ones -> hi */
inline void widenPair(const uint16_t* p, __m256& lo, __m256& hi) {
  const __m256i u = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  lo = _mm256_castsi256_ps(_mm256_slli_epi32(u, 16));
  hi = _mm256_castsi256_ps(_mm256_and_si256(u, _mm256_set1_epi32(static_cast<int>(0xffff0000u))));
}

template <int R, int V, bool F32>
void tile(const Tile& t) {
  __m256 c[R][V];
  if (t.first) {
    for (int r = 0; r < R; r++)
      for (int v = 0; v < V; v++) c[r][v] = _mm256_setzero_ps();
  } else {
    for (int r = 0; r < R; r++)
      for (int v = 0; v < V; v++) c[r][v] = _mm256_loadu_ps(t.acc + r * t.accStride + v * L);
  }
  const float* xr[R];
  for (int r = 0; r < R; r++) xr[r] = t.xp + r * t.xStride;
  const uint16_t* wp = t.wp;
  const float* wf = t.wf;
  const int64_t ws = t.width;
  for (int64_t k = 0; k < t.kc; k++, wp += ws) {
    __m256 b[V];
    if (F32) {
      for (int v = 0; v < V; v++) b[v] = _mm256_loadu_ps(wf + k * ws + v * L);
    } else if (V == 2) {
      widenPair(wp, b[0], b[V - 1]);  // b[1] (V - 1: also compiles for V = 1)
    } else {
      b[0] = widen(wp);
    }
    for (int r = 0; r < R; r++) {
      const __m256 a = _mm256_broadcast_ss(xr[r] + k);
      for (int v = 0; v < V; v++) c[r][v] = _mm256_fmadd_ps(a, b[v], c[r][v]);
    }
  }
  if (!t.last) {
    for (int r = 0; r < R; r++)
      for (int v = 0; v < V; v++) _mm256_storeu_ps(t.acc + r * t.accStride + v * L, c[r][v]);
    return;
  }
  for (int v = 0; v < V; v++) {
    const int valid = t.n - v * L;
    if (valid <= 0) break;
    const __m256i m = laneMask(valid);
    if (t.epilogue == Epilogue::F32) {
      float* y = static_cast<float*>(t.y) + v * L;
      for (int r = 0; r < R; r++) _mm256_maskstore_ps(y + r * t.yStride, m, c[r][v]);
      continue;
    }
    uint16_t* y = static_cast<uint16_t*>(t.y) + v * L;
    if (t.epilogue == Epilogue::Bf16) {
      for (int r = 0; r < R; r++) storeBf16(y + r * t.yStride, toBf16(c[r][v]), valid);
      continue;
    }
    const __m256 col = _mm256_maskload_ps(t.colScale + v * L, m);
    for (int r = 0; r < R; r++) {
      const __m256 row = _mm256_set1_ps(t.rowScale[r]);
      const __m256 s = t.colScaleFirst ? _mm256_mul_ps(_mm256_mul_ps(c[r][v], col), row) : _mm256_mul_ps(_mm256_mul_ps(c[r][v], row), col);
      storeBf16(y + r * t.yStride, toBf16(s), valid);
    }
  }
}

template <int R, bool F32>
void byWidth(const Tile& t) {
  if (t.width / L == 1) return tile<R, 1, F32>(t);
  return tile<R, 2, F32>(t);
}

template <bool F32>
void byRows(const Tile& t) {
  withRows(t.mr, [&](auto rows) { byWidth<decltype(rows)::value, F32>(t); });
}

}  // namespace

void tileAvx2(const Tile& t) { return t.wf ? byRows<true>(t) : byRows<false>(t); }

void widenAvx2(const uint16_t* wp, int64_t kc, int width, float* dst) {
  for (int64_t k = 0; k < kc; k++, wp += width, dst += width) {
    if (width == 2 * L) {
      __m256 lo, hi;
      widenPair(wp, lo, hi);
      _mm256_storeu_ps(dst, lo);
      _mm256_storeu_ps(dst + L, hi);
    } else {
      _mm256_storeu_ps(dst, widen(wp));
    }
  }
}

}  // namespace hcsp::gemm
