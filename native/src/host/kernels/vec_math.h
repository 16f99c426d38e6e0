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

inline I splatI(int32_t v) { return I{v, v, v, v}; }

#include "vec_lanes.h"

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
