// core's fp32 math library (numerics/fp32Math.ts), operation for operation: the same
// constants, the same sequence of correctly rounded fp32 +, -, *, / and sqrt, subnormals
// flushed explicitly. Not libm: a libm exp differs from it in the last bit. Every target
// compiles it with contraction off (-ffp-contract=off, nvcc --fmad=false), so no a*b + c
// here becomes an FMA. Shared by the host kernels and the GPU kernels.
#pragma once
#include "bf16.h"

namespace hcsp::fp32 {

constexpr float LOG2E = 1.44269504088896341f;
constexpr float LN2_HI = 0.693145751953125f;
constexpr float LN2_LO = 1.428606765330187045e-6f;
constexpr float E2 = static_cast<float>(1.0 / 2);
constexpr float E3 = static_cast<float>(1.0 / 6);
constexpr float E4 = static_cast<float>(1.0 / 24);
constexpr float E5 = static_cast<float>(1.0 / 120);
constexpr float E6 = static_cast<float>(1.0 / 720);
constexpr float E7 = static_cast<float>(1.0 / 5040);
constexpr float MIN_NORMAL = 1.1754943508222875e-38f;
constexpr float EXP_OVERFLOW = 88.72283935546875f;
constexpr float EXP_UNDERFLOW = -87.33654022216797f;
constexpr float LN2 = static_cast<float>(0.6931471805599453);
constexpr float SQRT1_2 = static_cast<float>(0.7071067811865476);
constexpr float L3 = static_cast<float>(2.0 / 3);
constexpr float L5 = static_cast<float>(2.0 / 5);
constexpr float L7 = static_cast<float>(2.0 / 7);
constexpr float L9 = static_cast<float>(2.0 / 9);
constexpr float L11 = static_cast<float>(2.0 / 11);

/** 2^k for k in [-126, 127], from its bits (exact) */
HCSP_HD float pow2(int k) { return bitsFloat(static_cast<uint32_t>(k + 127) << 23); }

HCSP_HD float expF32(float x) {
  if (x != x) return x;
  if (x > EXP_OVERFLOW) return HCSP_INFF();
  if (x < EXP_UNDERFLOW) return 0.0f;
  const float kf = HCSP_FLOORF(x * LOG2E + 0.5f);
  const int k = static_cast<int>(kf);
  const float r = (x - kf * LN2_HI) - kf * LN2_LO;
  float p = E7;
  p = p * r + E6;
  p = p * r + E5;
  p = p * r + E4;
  p = p * r + E3;
  p = p * r + E2;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const float y = k > 127 ? (p * pow2(k - 1)) * 2.0f : p * pow2(k);
  return y < MIN_NORMAL ? 0.0f : y;
}

HCSP_HD float logF32(float x) {
  if (x != x || x < 0) return HCSP_NANF();
  if (x < MIN_NORMAL) return -HCSP_INFF();
  if (x == HCSP_INFF()) return x;
  const uint32_t bits = floatBits(x);
  int e = static_cast<int>((bits >> 23) & 0xff) - 127;
  float m = bitsFloat((bits & 0x007fffffu) | 0x3f800000u);
  if (m > 2.0f * SQRT1_2) {
    m = m * 0.5f;
    e += 1;
  }
  const float s = (m - 1.0f) / (m + 1.0f);
  const float s2 = s * s;
  float p = L11;
  p = p * s2 + L9;
  p = p * s2 + L7;
  p = p * s2 + L5;
  p = p * s2 + L3;
  p = p * s2 + 2.0f;
  const float logm = p * s;
  return static_cast<float>(e) * LN2 + logm;
}

/** subnormal magnitudes -> a zero of the same sign */
HCSP_HD float ftz(float x) { return HCSP_FABSF(x) < MIN_NORMAL ? HCSP_COPYSIGNF(0.0f, x) : x; }

HCSP_HD float sqrtF32(float x) { return HCSP_SQRTF(ftz(x)); }

/** 1 / sqrt(x), two correctly rounded steps (not a hardware rsqrt approximation) */
HCSP_HD float rsqrtF32(float x) { return 1.0f / HCSP_SQRTF(ftz(x)); }

HCSP_HD float sigmoidF32(float x) { return ftz(1.0f / (1.0f + expF32(-x))); }

HCSP_HD float siluF32(float x) {
  const float xf = ftz(x);
  return ftz(xf * sigmoidF32(xf));
}

/** log(1 + exp(x)); above 20 it equals x in fp32 (torch's threshold) */
HCSP_HD float softplusF32(float x) {
  if (x > 20.0f) return x;
  return logF32(1.0f + expF32(x));
}

}  // namespace hcsp::fp32
