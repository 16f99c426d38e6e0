// FP8 E4M3 in its two variants, as core's numerics/fp8.ts: e4m3fn (bias 7, max 448, NaN
// S.1111.111, -0) and e4m3fnuz (bias 8, max 240, NaN only 0x80, no -0). The encoder rounds
// to nearest even and saturates finite values (and infinities) to +-max; NaN stays NaN.
// Shared by the host kernels and the GPU kernels (host/fp8_format.h names the formats).
#pragma once
#include "bf16.h"

namespace hcsp {

struct Fp8Format {
  bool fnuz;
  int bias;
  float max;
  uint8_t nanBits;
  bool hasNegativeZero;
};

constexpr Fp8Format E4M3FN{false, 7, 448.0f, 0x7f, true};
constexpr Fp8Format E4M3FNUZ{true, 8, 240.0f, 0x80, false};

HCSP_HD bool isFp8NaN(uint8_t bits, const Fp8Format& f) { return f.fnuz ? bits == 0x80 : (bits & 0x7f) == 0x7f; }

/** round a non-negative float-valued double... kept in float: a * 2^(3-e) is exact, < 2^5 */
HCSP_HD float roundHalfEven(float v) {
  const float fl = HCSP_FLOORF(v);
  const float d = v - fl;
  if (d > 0.5f) return fl + 1.0f;
  if (d < 0.5f) return fl;
  return static_cast<int>(fl) % 2 == 0 ? fl : fl + 1.0f;
}

HCSP_HD uint8_t f32ToFp8(float v, const Fp8Format& f) {
  if (v != v) return f.nanBits;
  const bool negative = (floatBits(v) >> 31) == 1;
  const float a = HCSP_FMINF(HCSP_FABSF(v), f.max);
  const int eMin = 1 - f.bias;
  int e = static_cast<int>((floatBits(a) >> 23) & 0xff) - 127;
  if (e < eMin) e = eMin;
  // a * 2^(3-e): exact (a power-of-two scaling of an fp32 into [0, 16], no underflow)
  const float q = roundHalfEven(a * bitsFloat(static_cast<uint32_t>(3 - e + 127) << 23));
  const int magnitude = (e - eMin) * 8 + static_cast<int>(q);
  if (!negative) return static_cast<uint8_t>(magnitude);
  if (magnitude == 0 && !f.hasNegativeZero) return 0x00;
  return static_cast<uint8_t>(0x80 | magnitude);
}

HCSP_HD float fp8ToF32(uint8_t bits, const Fp8Format& f) {
  if (isFp8NaN(bits, f)) return HCSP_NANF();
  const int expField = (bits >> 3) & 0xf;
  const int mant = bits & 0x7;
  // exact: small integers times powers of two
  const float magnitude = expField == 0 ? static_cast<float>(mant) * bitsFloat(static_cast<uint32_t>(-2 - f.bias + 127) << 23)
                                        : static_cast<float>(8 + mant) * bitsFloat(static_cast<uint32_t>(expField - f.bias - 3 + 127) << 23);
  return (bits & 0x80) ? -magnitude : magnitude;
}

}  // namespace hcsp
