// GPU kernels of the MoE ops (core graph/ops/moeOps.ts), operation for operation as
// reference/kernels/moeKernels.ts and layers/moe/moeMath.ts (and the host port,
// host/kernels/moe_kernels.cc): the router's softmax and top-k per token, the routed sum of a
// rank's experts (the routed rows laid out on the device from the routing ids, gathered and
// grouped by expert; the expert GEMMs are gemm.cu's grouped `linear`, one launch for all
// experts; the SwiGLU between them; then each token's contributions added in ascending expert
// index), the SwiGLU op and the shared-expert combine. Every sum the reference orders is summed
// by one thread in that order; the router's softmax sum over the experts in canonical order v1
// (numerics/canonical_sum.h sumTerms). The routed rows' count lives on the device: the kernels after
// the layout read it there and the threads past it do nothing.
#include "moe.h"

#include "../../numerics/bf16.h"
#include "../../numerics/canonical_sum.h"
#include "../../numerics/fp32_math.h"
#include "routed_rows.h"

using hcsp::bf16ToF32;
using hcsp::f32ToBf16;
using hcsp::roundBf16;

namespace hcsp_moe {
/** JavaScript's Math.max of two numbers: NaN if either is, +0 over -0 */
HCSP_HD float jsMax(float a, float b) {
  if (a != a || b != b) return HCSP_NANF();
  if (a == 0.0f && b == 0.0f) return (hcspFloatBits(a) >> 31) ? b : a;
  return a > b ? a : b;
}
}  // namespace hcsp_moe

HCSP_GLOBAL void hcsp_moe_route(const uint16_t* logits, float* p, int32_t* ids, uint16_t* weights, int64_t tokens, int64_t experts, int64_t topK,
                                int32_t normTopkProb) {
  HCSP_GRID_STRIDE(t, tokens) {
    const uint16_t* row = logits + t * experts;
    float max = -HCSP_INFF();
    for (int64_t e = 0; e < experts; e++) max = hcsp_moe::jsMax(max, bf16ToF32(row[e]));
    for (int64_t e = 0; e < experts; e++) p[e * tokens + t] = hcsp::fp32::expF32(bf16ToF32(row[e]) - max);
    // the softmax's sum over the experts in canonical order v1, by this thread (the token's
    // top-k selection after it is this thread's too)
    const float sum = hcsp::canonical::sumTerms(experts, [&](float acc, int64_t e) { return acc + p[e * tokens + t]; });
    for (int64_t e = 0; e < experts; e++) p[e * tokens + t] = p[e * tokens + t] / sum;
    int32_t* mine = ids + t * topK;
    for (int64_t k = 0; k < topK; k++) {
      int64_t best = -1;
      float bestP = 0.0f;
      // strict > keeps the lower index on ties; an expert already chosen (listed in mine[0..k)) is skipped
      for (int64_t e = 0; e < experts; e++) {
        bool taken = false;
        for (int64_t q = 0; q < k; q++) taken = taken || mine[q] == e;
        if (taken) continue;
        const float pe = p[e * tokens + t];
        if (best < 0 || pe > bestP) {
          best = e;
          bestP = pe;
        }
      }
      mine[k] = static_cast<int32_t>(best);
    }
    float norm = 0.0f;
    for (int64_t k = 0; k < topK; k++) norm = norm + p[static_cast<int64_t>(mine[k]) * tokens + t];
    for (int64_t k = 0; k < topK; k++) {
      const float pk = p[static_cast<int64_t>(mine[k]) * tokens + t];
      weights[t * topK + k] = f32ToBf16(normTopkProb ? pk / norm : pk);
    }
  }
}

HCSP_GLOBAL void hcsp_moe_layout(const int32_t* ids, int32_t* first, int32_t* rowToken, int32_t* rowPair, int32_t* rowExpert, int32_t* pairRow, int64_t tokens,
                                 int64_t topK, int64_t firstExpert, int64_t numLocal) {
  const int64_t pairs = tokens * topK;
  HCSP_GRID_STRIDE(e, numLocal + 1) {
    int64_t r = 0;
    for (int64_t p = 0; p < pairs; p++) {
      const int64_t local = static_cast<int64_t>(ids[p]) - firstExpert;
      if (local >= 0 && local < e) r++;
    }
    first[e] = static_cast<int32_t>(r);
    if (e == numLocal) continue;
    for (int64_t p = 0; p < pairs; p++) {
      if (static_cast<int64_t>(ids[p]) - firstExpert != e) continue;
      rowToken[r] = static_cast<int32_t>(p / topK);
      rowPair[r] = static_cast<int32_t>(p);
      rowExpert[r] = static_cast<int32_t>(e);
      pairRow[p] = static_cast<int32_t>(r);
      r++;
    }
  }
}

HCSP_GLOBAL void hcsp_moe_token_rows(const int32_t* ids, const int32_t* pairRow, int32_t* tokenRows, int64_t tokens, int64_t topK, int64_t firstExpert,
                                     int64_t numLocal) {
  HCSP_GRID_STRIDE(t, tokens) {
    int32_t* mine = tokenRows + t * topK;
    int64_t n = 0;
    // insertion in ascending row order
    for (int64_t k = 0; k < topK; k++) {
      const int64_t local = static_cast<int64_t>(ids[t * topK + k]) - firstExpert;
      if (local < 0 || local >= numLocal) continue;
      const int32_t r = pairRow[t * topK + k];
      int64_t j = n;
      for (; j > 0 && mine[j - 1] > r; j--) mine[j] = mine[j - 1];
      mine[j] = r;
      n++;
    }
    for (int64_t s = n; s < topK; s++) mine[s] = -1;
  }
}

HCSP_GLOBAL void hcsp_moe_gather_rows(const uint16_t* x, const int32_t* rowToken, const int32_t* rows, uint16_t* xe, int64_t hidden) {
  const int64_t n = *rows;
  HCSP_GRID_STRIDE(i, n * hidden) {
    const int64_t r = i / hidden;
    xe[i] = x[static_cast<int64_t>(rowToken[r]) * hidden + (i - r * hidden)];
  }
}

namespace hcsp_moe {
/** output i of the SwiGLU of rows [gate (I) | up (I)] */
HCSP_HD uint16_t swiglu(const uint16_t* gateUp, int64_t i, int64_t inter) {
  const int64_t t = i / inter;
  const int64_t c = i - t * inter;
  const uint16_t* base = gateUp + t * 2 * inter;
  const float act = roundBf16(hcsp::fp32::siluF32(bf16ToF32(base[c])));
  return f32ToBf16(act * bf16ToF32(base[inter + c]));
}
}  // namespace hcsp_moe

HCSP_GLOBAL void hcsp_moe_swiglu(const uint16_t* gateUp, uint16_t* h, int64_t rows, int64_t inter) {
  HCSP_GRID_STRIDE(i, rows * inter) h[i] = hcsp_moe::swiglu(gateUp, i, inter);
}

HCSP_GLOBAL void hcsp_moe_swiglu_rows(const uint16_t* gateUp, uint16_t* h, const int32_t* rows, int64_t inter) {
  const int64_t n = *rows;
  HCSP_GRID_STRIDE(i, n * inter) h[i] = hcsp_moe::swiglu(gateUp, i, inter);
}

HCSP_GLOBAL void hcsp_moe_routed_sum(const uint16_t* o, const int32_t* tokenRows, const int32_t* rowPair, const uint16_t* weights, float* routed,
                                     int64_t tokens, int64_t hidden, int64_t topK, int32_t bf16Acc) {
  HCSP_GRID_STRIDE(i, tokens * hidden) {
    routed[i] = hcspRoutedSum(tokenRows, i, hidden, topK, [&](float acc, int64_t r, int64_t j) {
      const float w = bf16ToF32(weights[rowPair[r]]);
      acc = acc + roundBf16(bf16ToF32(o[r * hidden + j]) * w);
      // hf-eager: HF's bf16 index_add_ accumulator rounds each add
      return bf16Acc ? roundBf16(acc) : acc;
    });
  }
}

HCSP_GLOBAL void hcsp_moe_combine(const float* routed, const uint16_t* shared, const uint16_t* gateLogit, uint16_t* y, int64_t tokens, int64_t hidden) {
  HCSP_GRID_STRIDE(i, tokens * hidden) {
    const int64_t t = i / hidden;
    const float g = roundBf16(hcsp::fp32::sigmoidF32(bf16ToF32(gateLogit[t])));
    const float s = roundBf16(bf16ToF32(shared[i]) * g);
    y[i] = f32ToBf16(roundBf16(routed[i]) + s);
  }
}
