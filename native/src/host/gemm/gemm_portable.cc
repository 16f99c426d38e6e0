// The portable tile: plain C++ over the same packed operands (the panel's bf16 bits widened
// per k, or the widened block), in the same order. Each step is the reference's own
// arithmetic, fround(acc + x * w) with the product and sum in double: a float multiply would
// round a product below fp32's normal range (bf16 subnormals), where the exact product in
// double, like an FMA, does not.
#include <cstring>

#include "../../numerics/bf16.h"
#include "gemm_kernels.h"

namespace hcsp::gemm {

void tilePortable(const Tile& t) {
  constexpr int W = 16;  // panelGeometry(Isa::Portable).width
  float c[MR][W];
  for (int r = 0; r < t.mr; r++) {
    for (int j = 0; j < t.width; j++) c[r][j] = t.first ? 0.0f : t.acc[r * t.accStride + j];
  }
  const uint16_t* wp = t.wp;
  for (int64_t k = 0; k < t.kc; k++, wp += t.width) {
    float b[W];
    for (int j = 0; j < t.width; j++) b[j] = t.wf ? t.wf[k * t.width + j] : bf16ToF32(wp[j]);  // the bits shifted into fp32's top half
    for (int r = 0; r < t.mr; r++) {
      const double a = t.xp[r * t.xStride + k];
      for (int j = 0; j < t.width; j++) c[r][j] = static_cast<float>(static_cast<double>(c[r][j]) + a * static_cast<double>(b[j]));
    }
  }
  for (int r = 0; r < t.mr; r++) {
    if (!t.last) {
      std::memcpy(t.acc + r * t.accStride, c[r], t.width * sizeof(float));
      continue;
    }
    for (int j = 0; j < t.n; j++) {
      const int64_t at = r * t.yStride + j;
      switch (t.epilogue) {
        case Epilogue::F32:
          static_cast<float*>(t.y)[at] = c[r][j];
          break;
        case Epilogue::Bf16:
          static_cast<uint16_t*>(t.y)[at] = f32ToBf16(c[r][j]);
          break;
        case Epilogue::Bf16Scaled: {
          const float col = t.colScale[j], row = t.rowScale[r];
          const float s = t.colScaleFirst ? (c[r][j] * col) * row : (c[r][j] * row) * col;
          static_cast<uint16_t*>(t.y)[at] = f32ToBf16(s);
          break;
        }
      }
    }
  }
}

void widenPortable(const uint16_t* wp, int64_t kc, int width, float* dst) {
  for (int64_t i = 0; i < kc * width; i++) dst[i] = bf16ToF32(wp[i]);
}

}  // namespace hcsp::gemm
