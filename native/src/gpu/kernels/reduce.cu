// Reductions in the canonical order v1 (reduce.h): block kernels, one row per 64 threads.
#include "reduce.h"

#include "../../numerics/bf16.h"

using hcsp::bf16ToF32;

HCSP_GLOBAL void hcsp_canonical_sumsq_bf16(const uint16_t* x, float* out, int64_t rows, int64_t n) {
  HCSP_SHARED(float, exchange, HCSP_CANONICAL_MAX_ROWS* HCSP_CANONICAL_EXCHANGE);
  const int lane = hcspCanonicalLane();
  const int group = hcspCanonicalRowGroup();
  const int64_t rowsPerBlock = HCSP_BLOCK_THREADS() / HCSP_CANONICAL_LANES;
  // the loop's bounds are the block's, so every thread reaches every barrier; a group past the
  // last row adds nothing and writes nothing
  for (int64_t first = HCSP_BLOCK_ID() * rowsPerBlock; first < rows; first += HCSP_BLOCK_COUNT() * rowsPerBlock) {
    const int64_t row = first + group;
    float part = 0.0f;
    if (row < rows) {
      const uint16_t* xr = x + row * n;
      part = hcspCanonicalLaneSum(lane, n, [&](float acc, int64_t j) {
        const float v = bf16ToF32(xr[j]);
        return HCSP_FMAF(v, v, acc);
      });
    }
    const float total = hcspCanonicalButterfly(part, lane, exchange + group * HCSP_CANONICAL_EXCHANGE);
    if (row < rows && lane == 0) out[row] = total;
  }
}
