// Four-lane forms of core's fp32 math (numerics/fp32_math.h), of bf16 rounding
// (numerics/bf16.h) and of the fp8 encoder (numerics/fp8.h) for the elementwise loops of the
// HC and quant kernels, in GCC/Clang vector extensions: the same constants and the same
// sequence of correctly rounded fp32 operations per lane, the early returns turned into
// selects, floor / ldexp / round-half-even built from exact conversions and bit patterns.
// (Written as explicit vectors because the auto-vectorizer keeps the scalar forms' selects
// as branches under the default -ftrapping-math.) Each lane is bit-identical to the scalar
// original for every fp32 input (all 2^32 checked when written; a NaN result is a NaN, its
// payload may differ where two NaNs meet, which no bf16 or fp8 output shows); the scalar
// originals stay the definition, and loop tails use them.
#pragma once
#include <cstdint>
#include <cstring>

#include "../../numerics/bf16.h"
#include "../../numerics/fp32_math.h"

namespace hcsp::vec {

// One SSE2 register per vector (the build's baseline ISA; GCC splits wider generic vectors
// into scalar compares there).
constexpr int W = 4;
typedef float F __attribute__((vector_size(16)));
typedef int32_t I __attribute__((vector_size(16)));
typedef uint32_t U __attribute__((vector_size(16)));
typedef uint16_t H __attribute__((vector_size(8)));
typedef uint8_t B __attribute__((vector_size(4)));

inline F splat(float v) { return F{v, v, v, v}; }
inline I splatI(int32_t v) { return I{v, v, v, v}; }
inline U splatU(uint32_t v) { return U{v, v, v, v}; }

inline F loadBf16(const uint16_t* p) {
  H h;
  std::memcpy(&h, p, sizeof h);
  return (F)(__builtin_convertvector(h, U) << 16);
}

/** f32ToBf16 per lane, as its bit pattern in the high half of a 32-bit lane */
inline U bf16High(F x) {
  const U u = (U)x;
  const I nan = ((u & 0x7f800000u) == 0x7f800000u) & ((u & 0x007fffffu) != 0u);
  const U r = ((u + 0x7fffu + ((u >> 16) & 1u)) >> 16) << 16;
  return nan ? splatU(0x7fc00000u) : r;
}

inline void storeBf16(uint16_t* p, F x) {
  const H h = __builtin_convertvector(bf16High(x) >> 16, H);
  std::memcpy(p, &h, sizeof h);
}

/** roundBf16 per lane */
inline F roundBf16(F x) { return (F)bf16High(x); }

/** fp32::ftz */
inline F ftz(F x) {
  const U u = (U)x;
  return (F)(u & 0x7fffffffu) < splat(fp32::MIN_NORMAL) ? (F)(u & 0x80000000u) : x;
}

/** fp32::expF32 */
inline F expF32(F x) {
  const I inRange = (x >= splat(fp32::EXP_UNDERFLOW)) & (x <= splat(fp32::EXP_OVERFLOW));  // false for NaN
  const F xs = inRange ? x : splat(0.0f);
  const F t = xs * fp32::LOG2E + 0.5f;  // in [-125.5, 128.5]
  const I ti = __builtin_convertvector(t, I);
  const I k = ti + (__builtin_convertvector(ti, F) > t);  // floor(t): a true compare is -1
  const F kf = __builtin_convertvector(k, F);
  const F r = (xs - kf * fp32::LN2_HI) - kf * fp32::LN2_LO;
  F p = splat(fp32::E7);
  p = p * r + fp32::E6;
  p = p * r + fp32::E5;
  p = p * r + fp32::E4;
  p = p * r + fp32::E3;
  p = p * r + fp32::E2;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const I big = k > 127;  // -1 where the scalar form computes (p * 2^(k-1)) * 2
  const F scaled = p * (F)((U)(k + big + 127) << 23);
  F y = scaled * (F)(0x3f800000u + ((U)big & 0x00800000u));  // * 2 or * 1
  y = y < splat(fp32::MIN_NORMAL) ? splat(0.0f) : y;
  y = x < splat(fp32::EXP_UNDERFLOW) ? splat(0.0f) : y;
  y = x > splat(fp32::EXP_OVERFLOW) ? splat(__builtin_inff()) : y;
  return x != x ? x : y;
}

/** fp32::sigmoidF32 */
inline F sigmoidF32(F x) { return ftz(1.0f / (1.0f + expF32(-x))); }

/** fp32::siluF32 */
inline F siluF32(F x) {
  const F xf = ftz(x);
  return ftz(xf * sigmoidF32(xf));
}

/** f32ToFp8 (numerics/fp8.h) per lane, for the format with exponent bias BIAS (7: e4m3fn, 8: e4m3fnuz) */
template <int BIAS>
inline void storeFp8(uint8_t* out, F v) {
  constexpr bool FNUZ = BIAS == 8;
  constexpr float MAX = FNUZ ? 240.0f : 448.0f;
  constexpr int32_t E_MIN = 1 - BIAS;
  const U u = (U)v;
  const F a0 = (F)(u & 0x7fffffffu);
  const F a = a0 < splat(MAX) ? a0 : splat(MAX);  // NaN -> MAX (replaced below), inf -> MAX
  I e = (I)(((U)a >> 23) & 0xffu) - 127;
  e = e < E_MIN ? splatI(E_MIN) : e;
  const F scaled = a * (F)((U)(3 - e + 127) << 23);  // exact, in [0, 16]
  const F q = (scaled + 8388608.0f) - 8388608.0f;    // round half even to an integer
  const I magnitude = (e - E_MIN) * 8 + __builtin_convertvector(q, I);
  const I negative = FNUZ ? ((magnitude == 0) ? splatI(0) : (magnitude | 0x80)) : (magnitude | 0x80);
  I r = (I)u < 0 ? negative : magnitude;
  r = v != v ? splatI(FNUZ ? 0x80 : 0x7f) : r;
  const B b = __builtin_convertvector(r, B);
  std::memcpy(out, &b, sizeof b);
}

}  // namespace hcsp::vec
