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

constexpr int MAX_V = 2;
using Vf = __m256;
using Mask = __m256i;

inline Vf zero() { return _mm256_setzero_ps(); }
inline Vf load(const float* p) { return _mm256_loadu_ps(p); }
inline void store(float* p, Vf v) { _mm256_storeu_ps(p, v); }
inline Vf fmadd(Vf a, Vf b, Vf c) { return _mm256_fmadd_ps(a, b, c); }
inline Vf mul(Vf a, Vf b) { return _mm256_mul_ps(a, b); }
inline Vf broadcast(const float* p) { return _mm256_broadcast_ss(p); }
inline void maskStoreF32(float* y, Mask m, Vf v) { _mm256_maskstore_ps(y, m, v); }
inline void maskStoreBf16(uint16_t* y, Mask, int valid, Vf v) { storeBf16(y, toBf16(v), valid); }
inline Vf maskLoad(const float* p, Mask m) { return _mm256_maskload_ps(p, m); }

#include "gemm_tile.h"

}  // namespace

void tileAvx2(const Tile& t) { anyTile(t); }

void widenAvx2(const uint16_t* wp, int64_t kc, int width, float* dst) { widenPanel(wp, kc, width, dst); }

}  // namespace hcsp::gemm
