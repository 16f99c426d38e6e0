// GPU kernels of moeExpertsFp8Ptpc (core graph/ops/moeOps.ts), operation for operation as
// layers/moe/moeFp8Math.ts and the host port (host/kernels/moe_fp8_kernels.cc): on moe.cu's
// routed-row layout, stage 1 (the gate-up dot products of the fp8 values in fp32, k in order,
// both scales, h = bf(silu(g) * u)), h quantized per row, stage 2 (the down dot products,
// scaled, times the routing weight, one bf16 rounding), then each token's contributions added
// in the reference's order. Every fp8 x fp8 product is exact in fp32, so the multiply-add order
// alone decides the bits; the tiled (fast) kernels keep each output's k order, so they give the
// exact kernels' bits while reading each weight byte once per tile of rows instead of once per row.
#include "moe_fp8.h"

#include "../../numerics/bf16.h"
#include "../../numerics/fp32_math.h"
#include "../../numerics/fp8.h"
#include "routed_rows.h"

using hcsp::bf16ToF32;
using hcsp::f32ToBf16;
using hcsp::roundBf16;

namespace hcsp_moe_fp8 {

HCSP_HD hcsp::Fp8Format format(int32_t fnuz) { return fnuz ? hcsp::Fp8Format{true, 8, 240.0f, 0x80, false} : hcsp::Fp8Format{false, 7, 448.0f, 0x7f, true}; }

HCSP_HD float dec(uint8_t b, int32_t fnuz) { return hcsp::fp8ToF32(b, format(fnuz)); }

HCSP_HD float scaled(float acc, float sw, float sx, int32_t weightFirst) { return weightFirst ? (acc * sw) * sx : (acc * sx) * sw; }

HCSP_HD float dot(const uint8_t* a, const uint8_t* b, int64_t n, int32_t fnuz) {
  float acc = 0.0f;
  for (int64_t k = 0; k < n; k++) acc = acc + dec(a[k], fnuz) * dec(b[k], fnuz);
  return acc;
}

HCSP_HD uint16_t swiglu(float g, float u) { return f32ToBf16(hcsp::fp32::siluF32(g) * u); }

}  // namespace hcsp_moe_fp8

using hcsp_moe_fp8::dec;
using hcsp_moe_fp8::scaled;

HCSP_GLOBAL void hcsp_moe_fp8_gate_up(const uint8_t* xq, const float* sx, const int32_t* rowToken, const int32_t* rowExpert, const int32_t* rows,
                                      const uint8_t* qGateUp, const float* sGateUp, uint16_t* h, int64_t hidden, int64_t inter, int32_t fnuz,
                                      int32_t weightFirst) {
  const int64_t n = *rows;
  HCSP_GRID_STRIDE(i, n * inter) {
    const int64_t r = i / inter;
    const int64_t c = i - r * inter;
    const int64_t t = rowToken[r];
    const int64_t gRow = static_cast<int64_t>(rowExpert[r]) * 2 * inter + c;
    const uint8_t* xr = xq + t * hidden;
    const float g = scaled(hcsp_moe_fp8::dot(xr, qGateUp + gRow * hidden, hidden, fnuz), sGateUp[gRow], sx[t], weightFirst);
    const float u = scaled(hcsp_moe_fp8::dot(xr, qGateUp + (gRow + inter) * hidden, hidden, fnuz), sGateUp[gRow + inter], sx[t], weightFirst);
    h[i] = hcsp_moe_fp8::swiglu(g, u);
  }
}

HCSP_GLOBAL void hcsp_moe_fp8_quant_rows(const uint16_t* h, const int32_t* rows, uint8_t* hq, float* sh, int64_t inter, int32_t fnuz, int32_t divide) {
  const int64_t n = *rows;
  const hcsp::Fp8Format f = hcsp_moe_fp8::format(fnuz);
  HCSP_GRID_STRIDE(r, n) {
    const uint16_t* x = h + r * inter;
    // the first NaN makes the row NaN (torch.amax)
    float amax = 0.0f;
    for (int64_t j = 0; j < inter; j++) {
      const float a = HCSP_FABSF(bf16ToF32(x[j]));
      if (a != a) {
        amax = a;
        break;
      }
      amax = a > amax ? a : amax;
    }
    const float s = amax == 0.0f ? 1.0f : divide ? amax / f.max : amax * static_cast<float>(1.0 / static_cast<double>(f.max));
    sh[r] = s;
    const float inv = 1.0f / s;
    for (int64_t j = 0; j < inter; j++) hq[r * inter + j] = hcsp::f32ToFp8(divide ? bf16ToF32(x[j]) / s : bf16ToF32(x[j]) * inv, f);
  }
}

HCSP_GLOBAL void hcsp_moe_fp8_down(const uint8_t* hq, const float* sh, const int32_t* rowExpert, const int32_t* rowPair, const int32_t* rows,
                                   const uint8_t* qDown, const float* sDown, const uint16_t* weights, uint16_t* contrib, int64_t inter, int64_t hidden,
                                   int32_t fnuz, int32_t weightFirst) {
  const int64_t n = *rows;
  HCSP_GRID_STRIDE(i, n * hidden) {
    const int64_t r = i / hidden;
    const int64_t j = i - r * hidden;
    const int64_t dRow = static_cast<int64_t>(rowExpert[r]) * hidden + j;
    const float o = scaled(hcsp_moe_fp8::dot(hq + r * inter, qDown + dRow * inter, inter, fnuz), sDown[dRow], sh[r], weightFirst);
    contrib[i] = f32ToBf16(o * bf16ToF32(weights[rowPair[r]]));
  }
}

HCSP_GLOBAL void hcsp_moe_fp8_routed_sum(const uint16_t* contrib, const int32_t* tokenRows, float* routed, int64_t tokens, int64_t hidden, int64_t topK) {
  HCSP_GRID_STRIDE(i, tokens * hidden) {
    routed[i] = hcspRoutedSum(tokenRows, i, hidden, topK, [&](float acc, int64_t r, int64_t j) { return acc + bf16ToF32(contrib[r * hidden + j]); });
  }
}

HCSP_GLOBAL void hcsp_moe_fp8_tiles(const int32_t* first, int32_t* tileExpert, int32_t* tileRow, int32_t* tileCount, int64_t numLocal) {
  hcspExpertTiles(first, tileExpert, tileRow, tileCount, numLocal, HCSP_MOE_FP8_TILE_M);
}

namespace {

constexpr int TM = HCSP_MOE_FP8_TILE_M;
constexpr int TN = HCSP_MOE_FP8_TILE_N;
constexpr int TK = HCSP_MOE_FP8_TILE_K;

/**
 * One block's tile: rows [r0, r1) of `a` (row r at a + rowOf(r) * k) against the weight rows
 * b + (w0 + c) * k for c < TN (and, with `pairB`, b + (w0 + pairOff + c) * k too), sums in k
 * order into accA / accB of thread (ty, tx) = (row, column). Rows past r1 and columns past
 * nCols are staged as zeros and their sums discarded by the caller.
 */
template <bool PAIR, typename RowOf>
HCSP_DEVICE void tileDots(const uint8_t* a, RowOf rowOf, int64_t r0, int64_t r1, const uint8_t* b, int64_t w0, int64_t pairOff, int64_t nCols, int64_t k,
                          int32_t fnuz, float* as, float* bs, float* cs, float& accA, float& accB) {
  const int thread = HCSP_BLOCK_THREAD();
  const int threads = HCSP_BLOCK_THREADS();
  const int ty = thread / TN;
  const int tx = thread % TN;
  accA = 0.0f;
  accB = 0.0f;
  for (int64_t k0 = 0; k0 < k; k0 += TK) {
    const int kn = k - k0 < TK ? static_cast<int>(k - k0) : TK;
    HCSP_BARRIER();  // every thread is done with the slabs overwritten now
    for (int e = thread; e < TM * TK; e += threads) {
      const int m = e / TK;
      const int kk = e % TK;
      const int64_t r = r0 + m;
      as[e] = r < r1 && kk < kn ? dec(a[rowOf(r) * k + k0 + kk], fnuz) : 0.0f;
      const bool col = m < TN && static_cast<int64_t>(m) < nCols;
      if (m < TN) {
        bs[e] = col && kk < kn ? dec(b[(w0 + m) * k + k0 + kk], fnuz) : 0.0f;
        if constexpr (PAIR) cs[e] = col && kk < kn ? dec(b[(w0 + pairOff + m) * k + k0 + kk], fnuz) : 0.0f;
      }
    }
    HCSP_BARRIER();
    // only k < K is added (a padded k would add +0: harmless, but not the reference's adds)
    for (int kk = 0; kk < kn; kk++) {
      const float x = as[ty * TK + kk];
      accA = accA + x * bs[tx * TK + kk];
      if constexpr (PAIR) accB = accB + x * cs[tx * TK + kk];
    }
  }
}

}  // namespace

HCSP_GLOBAL void hcsp_moe_fp8_gate_up_tiled(const uint8_t* xq, const float* sx, const int32_t* rowToken, const int32_t* first, const int32_t* tileExpert,
                                            const int32_t* tileRow, const int32_t* tileCount, const uint8_t* qGateUp, const float* sGateUp, uint16_t* h,
                                            int64_t hidden, int64_t inter, int32_t fnuz, int32_t weightFirst) {
  HCSP_SHARED(float, as, TM* TK);
  HCSP_SHARED(float, bs, TN* TK);
  HCSP_SHARED(float, cs, TN* TK);
  const int64_t colTiles = (inter + TN - 1) / TN;
  const int64_t work = static_cast<int64_t>(*tileCount) * colTiles;
  const int ty = HCSP_BLOCK_THREAD() / TN;
  const int tx = HCSP_BLOCK_THREAD() % TN;
  // the bounds are the block's, so every thread reaches every barrier
  for (int64_t w = HCSP_BLOCK_ID(); w < work; w += HCSP_BLOCK_COUNT()) {
    const int64_t tile = w / colTiles;
    const int64_t c0 = (w % colTiles) * TN;
    const int64_t e = tileExpert[tile];
    const int64_t r0 = tileRow[tile];
    const int64_t r1 = r0 + TM < first[e + 1] ? r0 + TM : first[e + 1];
    float g, u;
    tileDots<true>(
        xq, [rowToken](int64_t r) { return static_cast<int64_t>(rowToken[r]); }, r0, r1, qGateUp, e * 2 * inter + c0, inter, inter - c0, hidden, fnuz, as, bs,
        cs, g, u);
    const int64_t r = r0 + ty;
    const int64_t c = c0 + tx;
    if (ty < TM && r < r1 && c < inter) {
      const int64_t t = rowToken[r];
      const int64_t gRow = e * 2 * inter + c;
      h[r * inter + c] = hcsp_moe_fp8::swiglu(scaled(g, sGateUp[gRow], sx[t], weightFirst), scaled(u, sGateUp[gRow + inter], sx[t], weightFirst));
    }
  }
}

HCSP_GLOBAL void hcsp_moe_fp8_down_tiled(const uint8_t* hq, const float* sh, const int32_t* rowPair, const int32_t* first, const int32_t* tileExpert,
                                         const int32_t* tileRow, const int32_t* tileCount, const uint8_t* qDown, const float* sDown, const uint16_t* weights,
                                         uint16_t* contrib, int64_t inter, int64_t hidden, int32_t fnuz, int32_t weightFirst) {
  HCSP_SHARED(float, as, TM* TK);
  HCSP_SHARED(float, bs, TN* TK);
  const int64_t colTiles = (hidden + TN - 1) / TN;
  const int64_t work = static_cast<int64_t>(*tileCount) * colTiles;
  const int ty = HCSP_BLOCK_THREAD() / TN;
  const int tx = HCSP_BLOCK_THREAD() % TN;
  for (int64_t w = HCSP_BLOCK_ID(); w < work; w += HCSP_BLOCK_COUNT()) {
    const int64_t tile = w / colTiles;
    const int64_t j0 = (w % colTiles) * TN;
    const int64_t e = tileExpert[tile];
    const int64_t r0 = tileRow[tile];
    const int64_t r1 = r0 + TM < first[e + 1] ? r0 + TM : first[e + 1];
    float o, unused;
    tileDots<false>(hq, [](int64_t r) { return r; }, r0, r1, qDown, e * hidden + j0, 0, hidden - j0, inter, fnuz, as, bs, nullptr, o, unused);
    const int64_t r = r0 + ty;
    const int64_t j = j0 + tx;
    if (ty < TM && r < r1 && j < hidden) {
      const int64_t dRow = e * hidden + j;
      contrib[r * hidden + j] = f32ToBf16(scaled(o, sDown[dRow], sh[r], weightFirst) * bf16ToF32(weights[rowPair[r]]));
    }
  }
}
