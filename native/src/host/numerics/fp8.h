// FP8 E4M3 in its two variants, as core's numerics/fp8.ts: e4m3fn (bias 7, max 448, NaN
// S.1111.111, -0) and e4m3fnuz (bias 8, max 240, NaN only 0x80, no -0). The encoder rounds
// to nearest even and saturates finite values (and infinities) to +-max; NaN stays NaN.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>

#include "../errors.h"
#include "../tensor.h"
#include "bf16.h"

namespace hcsp {

struct Fp8Format {
  DType dtype;
  int bias;
  float max;
  uint8_t nanBits;
  bool hasNegativeZero;
};

constexpr Fp8Format E4M3FN{DType::FP8E4M3FN, 7, 448.0f, 0x7f, true};
constexpr Fp8Format E4M3FNUZ{DType::FP8E4M3FNUZ, 8, 240.0f, 0x80, false};

/** the format named by a `format` attribute */
inline const Fp8Format& fp8Format(const std::string& name) {
  if (name == "e4m3fn") return E4M3FN;
  if (name == "e4m3fnuz") return E4M3FNUZ;
  fail(ErrorKind::Attr, "unknown fp8 format '" + name + "' (expected 'e4m3fn' or 'e4m3fnuz')");
}

inline const Fp8Format& fp8FormatOfDType(DType d) {
  if (d == DType::FP8E4M3FN) return E4M3FN;
  if (d == DType::FP8E4M3FNUZ) return E4M3FNUZ;
  fail(ErrorKind::DType, std::string("dtype '") + dtypeName(d) + "' is not an fp8 dtype");
}

inline bool isFp8NaN(uint8_t bits, const Fp8Format& f) {
  return f.dtype == DType::FP8E4M3FNUZ ? bits == 0x80 : (bits & 0x7f) == 0x7f;
}

/** round a non-negative double to the nearest integer, ties to even */
inline double roundHalfEven(double v) {
  const double fl = std::floor(v);
  const double d = v - fl;
  if (d > 0.5) return fl + 1;
  if (d < 0.5) return fl;
  return std::fmod(fl, 2.0) == 0 ? fl : fl + 1;
}

inline uint8_t f32ToFp8(float v, const Fp8Format& f) {
  if (v != v) return f.nanBits;
  const bool negative = (floatBits(v) >> 31) == 1;
  const float a = std::fmin(std::fabs(v), f.max);
  const int eMin = 1 - f.bias;
  int e = static_cast<int>((floatBits(a) >> 23) & 0xff) - 127;
  if (e < eMin) e = eMin;
  // exact: a scaled by a power of two (in double, as the reference)
  const double q = roundHalfEven(static_cast<double>(a) * std::ldexp(1.0, 3 - e));
  const int magnitude = (e - eMin) * 8 + static_cast<int>(q);
  if (!negative) return static_cast<uint8_t>(magnitude);
  if (magnitude == 0 && !f.hasNegativeZero) return 0x00;
  return static_cast<uint8_t>(0x80 | magnitude);
}

inline float fp8ToF32(uint8_t bits, const Fp8Format& f) {
  if (isFp8NaN(bits, f)) return std::numeric_limits<float>::quiet_NaN();
  const int expField = (bits >> 3) & 0xf;
  const int mant = bits & 0x7;
  const float magnitude = expField == 0 ? static_cast<float>(std::ldexp(static_cast<double>(mant), -2 - f.bias))
                                        : static_cast<float>(std::ldexp(static_cast<double>(8 + mant), expField - f.bias - 3));
  return (bits & 0x80) ? -magnitude : magnitude;
}

}  // namespace hcsp
