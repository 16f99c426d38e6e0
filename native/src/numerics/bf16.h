// bf16 <-> fp32 exactly as core's numerics/bf16.ts: round to nearest even on the fp32 bit
// pattern, (u + 0x7FFF + ((u >> 16) & 1)) >> 16, NaN -> 0x7FC0. A value computed in double
// (where the reference computes in double) must be rounded to float first: (float)d is RNE,
// as Math.fround is. Shared by the host kernels and the GPU kernels (gpu/vendor.h).
#pragma once
#include "../gpu/vendor.h"

namespace hcsp {

constexpr uint16_t BF16_QNAN = 0x7fc0;

HCSP_HD uint32_t floatBits(float x) { return hcspFloatBits(x); }
HCSP_HD float bitsFloat(uint32_t u) { return hcspBitsFloat(u); }

HCSP_HD uint16_t f32ToBf16(float x) {
  const uint32_t u = floatBits(x);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0) return BF16_QNAN;
  return static_cast<uint16_t>(((u + 0x7fffu + ((u >> 16) & 1u)) >> 16) & 0xffffu);
}

HCSP_HD float bf16ToF32(uint16_t bits) { return bitsFloat(static_cast<uint32_t>(bits) << 16); }

/** bf(x): the bf16 value nearest x, as a float */
HCSP_HD float roundBf16(float x) { return bf16ToF32(f32ToBf16(x)); }

}  // namespace hcsp
