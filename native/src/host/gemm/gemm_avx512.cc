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

constexpr int MAX_V = 4;
using Vf = __m512;
using Mask = __mmask16;

inline Vf zero() { return _mm512_setzero_ps(); }
inline Vf load(const float* p) { return _mm512_loadu_ps(p); }
inline void store(float* p, Vf v) { _mm512_storeu_ps(p, v); }
inline Vf fmadd(Vf a, Vf b, Vf c) { return _mm512_fmadd_ps(a, b, c); }
inline Vf mul(Vf a, Vf b) { return _mm512_mul_ps(a, b); }
inline Vf broadcast(const float* p) { return _mm512_set1_ps(*p); }
inline void maskStoreF32(float* y, Mask m, Vf v) { _mm512_mask_storeu_ps(y, m, v); }
inline void maskStoreBf16(uint16_t* y, Mask m, int, Vf v) { _mm256_mask_storeu_epi16(y, m, toBf16(v)); }
inline Vf maskLoad(const float* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }

#include "gemm_tile.h"

}  // namespace

void tileAvx512(const Tile& t) { anyTile(t); }

void widenAvx512(const uint16_t* wp, int64_t kc, int width, float* dst) { widenPanel(wp, kc, width, dst); }

}  // namespace hcsp::gemm
