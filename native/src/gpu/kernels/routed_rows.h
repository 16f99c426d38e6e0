// The routed rows' tables that the MoE kernels share (moe.cu's layout: rows sorted by expert,
// expert e's rows [first[e], first[e+1]); tokenRows[t * topK + s] the row of token t's s-th
// choice, -1 past its last): the tile table of the tiled kernels (moe_grouped.cu, moe_fp8.cu)
// and a token's sum over its routed rows in its choices' order (moe.cu, moe_fp8.cu).
#pragma once
#include "../vendor.h"

/**
 * Tiles of tileM rows per expert, none straddling two: tile n is expert tileExpert[n]'s rows
 * from tileRow[n]; *tileCount the number of tiles. One thread writes it all (a launch of 1).
 */
HCSP_DEVICE void hcspExpertTiles(const int32_t* first, int32_t* tileExpert, int32_t* tileRow, int32_t* tileCount, int64_t numLocal, int32_t tileM) {
  HCSP_GRID_STRIDE(once, 1) {
    int32_t n = 0;
    for (int64_t e = 0; e < numLocal; e++) {
      for (int32_t r = first[e]; r < first[e + 1]; r += tileM) {
        tileExpert[n] = static_cast<int32_t>(e);
        tileRow[n] = r;
        n++;
      }
    }
    *tileCount = n;
  }
}

/** fp32 sum for output i of [tokens, hidden]: acc = add(acc, r, j) over token t's routed rows r in order, from 0 */
template <class Add>
HCSP_DEVICE float hcspRoutedSum(const int32_t* tokenRows, int64_t i, int64_t hidden, int64_t topK, const Add& add) {
  const int64_t t = i / hidden;
  const int64_t j = i - t * hidden;
  const int32_t* mine = tokenRows + t * topK;
  float acc = 0.0f;
  for (int64_t s = 0; s < topK; s++) {
    const int64_t r = mine[s];
    if (r < 0) break;
    acc = add(acc, r, j);
  }
  return acc;
}
