// Declarations of moe_fp8.cu's kernels: the routed experts on FP8 PTPC weights
// (moeExpertsFp8Ptpc), for their launcher (ops/moe_fp8_ops.cc). The routed rows are moe.cu's
// layout (hcsp_moe_layout: grouped by local expert, the count first[numLocal] on the device;
// hcsp_moe_token_rows: each token's rows in the reference's order of adds).
#pragma once
#include "../vendor.h"

/** rows per tile of the fast kernels, and the block size of the fast kernels */
#define HCSP_MOE_FP8_TILE_M 16
#define HCSP_MOE_FP8_TILE_N 16
#define HCSP_MOE_FP8_TILE_K 64
#define HCSP_MOE_FP8_BLOCK_THREADS 256

/**
 * Stage 1, one thread per (routed row r, c < inter), r < *rows: g and u = the fp32 dot
 * products of x's fp8 row (token rowToken[r]) with expert rowExpert[r]'s gate row c and up
 * row inter + c (k in order), scaled by the weight row's and the token's scale in the
 * `weightFirst` order (else token first); h[r, c] = bf(silu(g) * u).
 */
HCSP_GLOBAL void hcsp_moe_fp8_gate_up(const uint8_t* xq, const float* sx, const int32_t* rowToken, const int32_t* rowExpert, const int32_t* rows,
                                      const uint8_t* qGateUp, const float* sGateUp, uint16_t* h, int64_t hidden, int64_t inter, int32_t fnuz,
                                      int32_t weightFirst);
/**
 * The per-row quantization of h [*rows, inter] (quantFp8PerToken's arithmetic: `divide` 1 =
 * fl(amax / max), else fl(amax * fl(1 / max)); a zero row scale 1): hq fp8, sh f32. One thread
 * per row.
 */
HCSP_GLOBAL void hcsp_moe_fp8_quant_rows(const uint16_t* h, const int32_t* rows, uint8_t* hq, float* sh, int64_t inter, int32_t fnuz, int32_t divide);
/**
 * Stage 2, one thread per (routed row r, j < hidden): o = the fp32 dot product of hq's row
 * with expert rowExpert[r]'s down row j, scaled (sDown, sh[r]) in the stage-1 order;
 * contrib[r, j] = bf(o * weights[rowPair[r]]) (bf16 bits).
 */
HCSP_GLOBAL void hcsp_moe_fp8_down(const uint8_t* hq, const float* sh, const int32_t* rowExpert, const int32_t* rowPair, const int32_t* rows,
                                   const uint8_t* qDown, const float* sDown, const uint16_t* weights, uint16_t* contrib, int64_t inter, int64_t hidden,
                                   int32_t fnuz, int32_t weightFirst);
/** routed[t, j] = the fp32 sum of contrib[r, j] over r = tokenRows[t, 0..topK) (-1 ends the list), in order; one thread per output */
HCSP_GLOBAL void hcsp_moe_fp8_routed_sum(const uint16_t* contrib, const int32_t* tokenRows, float* routed, int64_t tokens, int64_t hidden, int64_t topK);
/**
 * The fast kernels' tile table: for local expert e ascending, its rows cut into tiles of
 * HCSP_MOE_FP8_TILE_M that never straddle two experts: tileExpert[n] = e, tileRow[n] = the
 * tile's first row; *tileCount = n (at most maxRows / TILE_M + numLocal). One thread.
 */
HCSP_GLOBAL void hcsp_moe_fp8_tiles(const int32_t* first, int32_t* tileExpert, int32_t* tileRow, int32_t* tileCount, int64_t numLocal);
/**
 * The fast stage 1: hcsp_moe_fp8_gate_up's values, a block per (tile, TILE_N columns of h)
 * (blocks striding over *tileCount x ceil(inter / TILE_N)), the tile's x rows and the weight
 * rows staged TILE_K bytes at a time in shared memory; each thread owns one (row, column) and
 * adds its products in k order, so the bits are hcsp_moe_fp8_gate_up's. Block kernel of
 * HCSP_MOE_FP8_BLOCK_THREADS threads.
 */
HCSP_GLOBAL void hcsp_moe_fp8_gate_up_tiled(const uint8_t* xq, const float* sx, const int32_t* rowToken, const int32_t* first, const int32_t* tileExpert,
                                            const int32_t* tileRow, const int32_t* tileCount, const uint8_t* qGateUp, const float* sGateUp, uint16_t* h,
                                            int64_t hidden, int64_t inter, int32_t fnuz, int32_t weightFirst);
/** The fast stage 2: hcsp_moe_fp8_down's values, tiled as hcsp_moe_fp8_gate_up_tiled (TILE_N columns of the output per block). */
HCSP_GLOBAL void hcsp_moe_fp8_down_tiled(const uint8_t* hq, const float* sh, const int32_t* rowPair, const int32_t* first, const int32_t* tileExpert,
                                         const int32_t* tileRow, const int32_t* tileCount, const uint8_t* qDown, const float* sDown, const uint16_t* weights,
                                         uint16_t* contrib, int64_t inter, int64_t hidden, int32_t fnuz, int32_t weightFirst);
