// The HC gated mean of one lane's chunk (hc/mix.ts, reference/kernels/hcKernels.ts and
// quantKernels.ts' gatedMeanF32), shared by hc.cu's hcGatedMean and quant.cu's fused
// hcGatedMeanQuant: for each of the chunk's columns j, over the streams s = 0..n-1 in order
// (a short sum: sequential, not the canonical order),
//   'atom': acc = fl(acc + fl(sig(up_s) * normed_s)); 'hf': acc = fl(acc + bf(bf(sig) * normed_s))
// and the mean fl(acc / n), before its bf16 rounding.
#pragma once
#include "../../numerics/bf16.h"
#include "../../numerics/fp32_math.h"
#include "chunk.h"

/**
 * out[k] = the fp32 gated mean of column base + k of row t, k < count (up and normed [rows,
 * n*h], stream-major). whole: each stream's chunk is loaded at once (count 8, rows aligned).
 */
HCSP_DEVICE void hcspGatedMeanChunk(const uint16_t* up, const uint16_t* normed, int64_t t, int64_t n, int64_t h, int64_t base, int count, bool whole,
                                    int32_t hf, float out[HCSP_CANONICAL_CHUNK]) {
  float acc[HCSP_CANONICAL_CHUNK];
  for (int k = 0; k < HCSP_CANONICAL_CHUNK; k++) acc[k] = 0.0f;
  const int64_t row = t * n * h + base;
  for (int64_t s = 0; s < n; s++) {
    const HcspBf16Chunk u = hcspLoadChunk(up + row + s * h, count, whole);
    const HcspBf16Chunk v = hcspLoadChunk(normed + row + s * h, count, whole);
    for (int k = 0; k < HCSP_CANONICAL_CHUNK; k++) {
      const float sig = hcsp::fp32::sigmoidF32(hcsp::bf16ToF32(u.v[k]));
      const float x = hcsp::bf16ToF32(v.v[k]);
      acc[k] = acc[k] + (hf ? hcsp::roundBf16(hcsp::roundBf16(sig) * x) : sig * x);
    }
  }
  const float nf = static_cast<float>(n);
  for (int k = 0; k < HCSP_CANONICAL_CHUNK; k++) out[k] = acc[k] / nf;
}
