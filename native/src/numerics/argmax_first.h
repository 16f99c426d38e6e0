// argmaxFirst of one bf16 row, as core's head kernel: the first maximum, and a NaN is the
// maximum (the first NaN wins). One source for the host kernel and the GPU kernel.
#pragma once
#include "bf16.h"

namespace hcsp {

HCSP_HD int32_t argmaxFirstBf16(const uint16_t* row, int64_t vocab) {
  int64_t best = 0;
  float bestValue = bf16ToF32(row[0]);
  for (int64_t v = 1; v < vocab && bestValue == bestValue; v++) {
    const float x = bf16ToF32(row[v]);
    if (x > bestValue || x != x) {
      best = v;
      bestValue = x;
    }
  }
  return static_cast<int32_t>(best);
}

}  // namespace hcsp
