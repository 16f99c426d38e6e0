// The sum of squares of bf16 values in canonical order v1 (numerics/canonical_sum.h) on the
// host at memory speed: the 64 lane sums live in vector registers (4 x 16 floats with
// AVX-512, 8 x 8 with AVX2), one vector element per lane, so each element runs exactly its
// lane's sequence of adds. A step of 512 terms is 64 contiguous 8-term chunks, lane l's at
// 8l; as 32-bit words (two bf16 each) a lane's chunk is 4 words, so the vectors of lanes
// take word w of each lane's chunk (a 4-word transpose) and add its low then high bf16: the
// chunk's terms in order. Each add is fma(v, v, acc): bf16 squares are exact, so that is
// the correctly rounded fl(acc + v*v) of the scalar definition. A last partial step is
// zero-padded (+0 terms leave a lane sum, never -0, unchanged). Then the scalar butterfly.
// The ISA is the process's choice (cpu_features.h); the vector code is compiled per function
// with target attributes. Used by every host kernel whose reduction is a sum of bf16 squares
// (the RMS and l2 norms).
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "../cpu_features.h"
#include "../../numerics/canonical_sum.h"

namespace hcsp::canonical {

// ---- AVX-512: lanes 16g..16g+15 in acc[g] --------------------------------------------

/** one full step at p into the 64 lane sums */
__attribute__((target("avx512f"))) inline void stepAvx512(const uint16_t* p, __m512 acc[4]) {
  constexpr __mmask16 ALL = 0xffff;  // the zero-masked shift: GCC 12 warns on the unmasked one's undefined source
  // word 0 | word 1 (or 2 | 3) of the chunks of lanes 0-7 from two registers of 4 chunks each
  const __m512i evenWords = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 1, 5, 9, 13, 17, 21, 25, 29);
  const __m512i oddWords = _mm512_setr_epi32(2, 6, 10, 14, 18, 22, 26, 30, 3, 7, 11, 15, 19, 23, 27, 31);
  // low halves (lanes 0-7, then 8-15 from the second source) and high halves
  const __m512i lowHalves = _mm512_setr_epi64(0, 1, 2, 3, 8, 9, 10, 11);
  const __m512i highHalves = _mm512_setr_epi64(4, 5, 6, 7, 12, 13, 14, 15);
  const __m512i hiMask = _mm512_set1_epi32(static_cast<int32_t>(0xffff0000u));
  for (int g = 0; g < 4; g++) {
    const uint16_t* q = p + 128 * g;  // the 16 chunks of lanes 16g..16g+15
    const __m512i r0 = _mm512_loadu_si512(q);
    const __m512i r1 = _mm512_loadu_si512(q + 32);
    const __m512i r2 = _mm512_loadu_si512(q + 64);
    const __m512i r3 = _mm512_loadu_si512(q + 96);
    const __m512i w01a = _mm512_permutex2var_epi32(r0, evenWords, r1);
    const __m512i w23a = _mm512_permutex2var_epi32(r0, oddWords, r1);
    const __m512i w01b = _mm512_permutex2var_epi32(r2, evenWords, r3);
    const __m512i w23b = _mm512_permutex2var_epi32(r2, oddWords, r3);
    const __m512i w[4] = {
        _mm512_permutex2var_epi64(w01a, lowHalves, w01b),
        _mm512_permutex2var_epi64(w01a, highHalves, w01b),
        _mm512_permutex2var_epi64(w23a, lowHalves, w23b),
        _mm512_permutex2var_epi64(w23a, highHalves, w23b),
    };
    __m512 a = acc[g];
    for (int k = 0; k < 4; k++) {
      const __m512 lo = _mm512_castsi512_ps(_mm512_maskz_slli_epi32(ALL, w[k], 16));
      const __m512 hi = _mm512_castsi512_ps(_mm512_and_si512(w[k], hiMask));
      a = _mm512_fmadd_ps(lo, lo, a);
      a = _mm512_fmadd_ps(hi, hi, a);
    }
    acc[g] = a;
  }
}

__attribute__((target("avx512f"))) inline float sumSquaresBf16Avx512(const uint16_t* x, int64_t n) {
  __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
  int64_t j = 0;
  for (; j + STEP <= n; j += STEP) stepAvx512(x + j, acc);
  if (j < n) {
    uint16_t tail[STEP] = {};
    std::memcpy(tail, x + j, (n - j) * sizeof(uint16_t));
    stepAvx512(tail, acc);
  }
  float lanes[LANES];
  for (int g = 0; g < 4; g++) _mm512_storeu_ps(lanes + 16 * g, acc[g]);
  return butterfly(lanes);
}

// ---- AVX2: lanes 8g..8g+7 in acc[g] --------------------------------------------------

__attribute__((target("avx2,fma"))) inline void stepAvx2(const uint16_t* p, __m256 acc[8]) {
  const __m256i hiMask = _mm256_set1_epi32(static_cast<int32_t>(0xffff0000u));
  auto chunk = [p](int lane) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + CHUNK * lane)); };
  for (int g = 0; g < 8; g++) {
    const int l = 8 * g;
    // 128-bit halves [lane l + i | lane l + 4 + i]: the in-half 4x4 transpose then gives
    // word w of lanes l..l+7 in order
    const __m256i a = _mm256_set_m128i(chunk(l + 4), chunk(l));
    const __m256i b = _mm256_set_m128i(chunk(l + 5), chunk(l + 1));
    const __m256i c = _mm256_set_m128i(chunk(l + 6), chunk(l + 2));
    const __m256i d = _mm256_set_m128i(chunk(l + 7), chunk(l + 3));
    const __m256i ab01 = _mm256_unpacklo_epi32(a, b), ab23 = _mm256_unpackhi_epi32(a, b);
    const __m256i cd01 = _mm256_unpacklo_epi32(c, d), cd23 = _mm256_unpackhi_epi32(c, d);
    const __m256i w[4] = {
        _mm256_unpacklo_epi64(ab01, cd01),
        _mm256_unpackhi_epi64(ab01, cd01),
        _mm256_unpacklo_epi64(ab23, cd23),
        _mm256_unpackhi_epi64(ab23, cd23),
    };
    __m256 s = acc[g];
    for (int k = 0; k < 4; k++) {
      const __m256 lo = _mm256_castsi256_ps(_mm256_slli_epi32(w[k], 16));
      const __m256 hi = _mm256_castsi256_ps(_mm256_and_si256(w[k], hiMask));
      s = _mm256_fmadd_ps(lo, lo, s);
      s = _mm256_fmadd_ps(hi, hi, s);
    }
    acc[g] = s;
  }
}

__attribute__((target("avx2,fma"))) inline float sumSquaresBf16Avx2(const uint16_t* x, int64_t n) {
  __m256 acc[8];
  for (int g = 0; g < 8; g++) acc[g] = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + STEP <= n; j += STEP) stepAvx2(x + j, acc);
  if (j < n) {
    uint16_t tail[STEP] = {};
    std::memcpy(tail, x + j, (n - j) * sizeof(uint16_t));
    stepAvx2(tail, acc);
  }
  float lanes[LANES];
  for (int g = 0; g < 8; g++) _mm256_storeu_ps(lanes + 8 * g, acc[g]);
  return butterfly(lanes);
}

/** sumSquaresBf16 (the scalar definition's bits) on the process's vector unit */
inline float sumSquaresBf16(Isa isa, const uint16_t* x, int64_t n) {
  switch (isa) {
    case Isa::Avx512:
      return sumSquaresBf16Avx512(x, n);
    case Isa::Avx2:
      return sumSquaresBf16Avx2(x, n);
    case Isa::Portable:
      break;
  }
  return sumSquaresBf16(x, n);
}

}  // namespace hcsp::canonical
