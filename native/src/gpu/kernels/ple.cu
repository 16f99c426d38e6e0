// GPU kernels of the PLE device ops (core graph/ops/pleOps.ts): pleRms1pNorm, pleGate,
// pleGatedValue and pleConvSilu, operation for operation as reference/kernels/pleKernels.ts
// computes them with layers/ple/pleMath.ts (and the host port, host/kernels/ple_kernels.cc).
// Where pleMath.ts computes in JavaScript doubles without Math.fround (sumsq + v*v,
// acc + w*x, sumsq / groupSize) these compute in double and round to float where it rounds.
// (pleNgramIds and pleNgramEmbed are host ops.)
#include "ple.h"

#include "../../numerics/bf16.h"
#include "../../numerics/fp32_math.h"

using hcsp::bf16ToF32;
using hcsp::f32ToBf16;
using hcsp::roundBf16;

HCSP_GLOBAL void hcsp_ple_rms1p_rstd(const uint16_t* x, float* rstd, int64_t segments, int64_t groupSize, float eps) {
  HCSP_GRID_STRIDE(s, segments) {
    const uint16_t* seg = x + s * groupSize;
    float sumsq = 0.0f;
    for (int64_t j = 0; j < groupSize; j++) {
      const double v = bf16ToF32(seg[j]);
      sumsq = static_cast<float>(static_cast<double>(sumsq) + v * v);
    }
    const float mean = static_cast<float>(static_cast<double>(sumsq) / static_cast<double>(groupSize));
    rstd[s] = hcsp::fp32::rsqrtF32(mean + eps);
  }
}

HCSP_GLOBAL void hcsp_ple_rms1p_apply(const uint16_t* x, const uint16_t* w, const float* rstd, uint16_t* y, int64_t n, int64_t width, int64_t groupSize) {
  HCSP_GRID_STRIDE(i, n) {
    const int64_t t = i / width;
    const int64_t c = i - t * width;
    const float scale = 1.0f + bf16ToF32(w[c]);
    y[i] = f32ToBf16((bf16ToF32(x[i]) * rstd[i / groupSize]) * scale);
  }
}

/** clamp_min of the signed square root: PLE_GATE_SQRT_FLOOR = fr(1e-6) */
#define HCSP_PLE_GATE_SQRT_FLOOR (static_cast<float>(1e-6))

HCSP_GLOBAL void hcsp_ple_gate(const uint16_t* k, const uint16_t* q, uint16_t* gate, int64_t segments, int64_t hidden, float sqrtH) {
  HCSP_GRID_STRIDE(r, segments) {
    const int64_t o = r * hidden;
    float acc = 0.0f;
    for (int64_t j = 0; j < hidden; j++) acc = acc + roundBf16(bf16ToF32(k[o + j]) * bf16ToF32(q[o + j]));
    const float score = roundBf16(roundBf16(acc) / sqrtH);
    const float mag = HCSP_FABSF(score);
    const float minMag = HCSP_PLE_GATE_SQRT_FLOOR;
    const float clamped = mag != mag ? mag : (mag > minMag ? mag : minMag);  // Math.max: NaN wins
    const float root = roundBf16(hcsp::fp32::sqrtF32(roundBf16(clamped)));
    const float g = score > 0 ? root : score < 0 ? -root : 0.0f;
    gate[r] = f32ToBf16(hcsp::fp32::sigmoidF32(g));
  }
}

HCSP_GLOBAL void hcsp_ple_gated_value(const uint16_t* gate, const uint16_t* value, uint16_t* y, int64_t rows, int64_t streams, int64_t hidden) {
  const int64_t width = streams * hidden;
  HCSP_GRID_STRIDE(i, rows * width) {
    const int64_t t = i / width;
    const int64_t c = i - t * width;
    const int64_t s = c / hidden;
    const int64_t j = c - s * hidden;
    y[i] = f32ToBf16(bf16ToF32(gate[t * streams + s]) * bf16ToF32(value[t * hidden + j]));
  }
}

HCSP_GLOBAL void hcsp_ple_conv_silu(const uint16_t* gNormed, const uint16_t* g, const uint16_t* w, uint16_t* y, int64_t rows, int64_t channels, int64_t kernel,
                                    int64_t dilation) {
  HCSP_GRID_STRIDE(i, rows * channels) {
    const int64_t t = i / channels;
    const int64_t c = i - t * channels;
    float acc = 0.0f;
    for (int64_t tap = 0; tap < kernel; tap++) {
      const int64_t back = kernel - 1 - tap;
      if (back > 0 && dilation > t / back) continue;  // src = t - back * dilation < 0 (no overflow)
      const int64_t src = t - back * dilation;
      acc = static_cast<float>(static_cast<double>(acc) + static_cast<double>(bf16ToF32(w[c * kernel + tap])) * bf16ToF32(gNormed[src * channels + c]));
    }
    const float act = roundBf16(hcsp::fp32::siluF32(roundBf16(acc)));
    y[i] = f32ToBf16(bf16ToF32(g[i]) + act);
  }
}
