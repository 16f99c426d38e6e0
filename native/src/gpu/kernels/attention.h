// Declarations of attention.cu's kernels, for their launchers (ops/attention_ops.cc).
#pragma once
#include "../vendor.h"

/**
 * Per-head RMS1p norm + NeoX RoPE (attentionMath.ts attnHeadNormRopeBf16), a block kernel
 * (reduce.h): one 64-thread row group per (row, head), R = blockThreads / 64 of them per block
 * (1-4; a grid of fewer blocks loops), the sum of squares in canonical order v1 and the norm's
 * apply and the rotation in the same pass: x [rows, heads * stride] (head h of row r at
 * (r * heads + h) * stride + offset), y [rows, heads * hd]; row r's table row is position
 * r * step (step = compress ratio for the QSA block keys). epsF = fr(eps). The bits depend only
 * on the inputs, not on the block size or the grid.
 */
HCSP_GLOBAL void hcsp_attention_norm_rope_bf16(const uint16_t* x, const uint16_t* w, const uint16_t* cos, const uint16_t* sin, uint16_t* y, int64_t rows,
                                               int64_t heads, int64_t hd, int64_t stride, int64_t offset, int64_t ropeDims, float epsF, int64_t step);
/** pooled[b, c] = bf(fr(sum_j kRaw[b * ratio + j, c], j order) / ratio), one thread per (b, c) */
HCSP_GLOBAL void hcsp_attention_pool_blocks_bf16(const uint16_t* kRaw, uint16_t* pooled, int64_t nb, int64_t dh, int64_t ratio);
/** kept[t] = (entries >= 0 of blocks row t) * ratio + the tail of row t's partial block */
HCSP_GLOBAL void hcsp_attention_kept_count(const int32_t* blocks, int32_t* kept, int64_t rows, int64_t width, int64_t ratio);
HCSP_GLOBAL void hcsp_attention_fill_i32(int32_t* y, int64_t n, int32_t value);
/**
 * QSA block scores of rows rowBase .. rowBase + chunkRows - 1 of q (position r0 + row),
 * one thread per (block, row): scores[b * chunkRows + r] (blocks a row cannot see are not written).
 */
HCSP_GLOBAL void hcsp_attention_qsa_scores(const uint16_t* q, const uint16_t* kb, float* scores, int64_t r0, int64_t rowBase, int64_t chunkRows, int64_t nb,
                                           int64_t nh, int64_t dh, int64_t ratio, float divisor);
/**
 * The top-width selection of the same rows from their scores, one thread per row: blocks
 * (pre-filled with -1) gets the selected blocks ascending; a row with a block that scored NaN
 * selects nothing and fails the device check nanFailed (checks.h: position the row, detail
 * its first NaN block).
 */
HCSP_GLOBAL void hcsp_attention_qsa_select(const float* scores, int32_t* blocks, unsigned long long* nanFailed, int64_t r0, int64_t rowBase, int64_t chunkRows,
                                           int64_t nb, int64_t width, int64_t ratio);
/**
 * qsaKeptPositions's checks of row t: bad[t] = the first entry that fails them, else -1; a
 * failing row fails the device check's two slots (checks.h: position the row, details the
 * entry's index and its value)
 */
HCSP_GLOBAL void hcsp_attention_check_selection(const int32_t* blocks, int32_t* bad, unsigned long long* failed, int64_t rows, int64_t width, int64_t ratio);
/**
 * Causal GQA attention over each row's kept keys (attentionMath.ts attnOverKeys), one thread
 * per item (query row, head) = itemBase + i, i < chunkItems; p is its scratch, key n of
 * item i at p[n * chunkItems + i]. bad is the check kernel's: a row it failed gets zeros.
 * eager 1: the 'hf-eager' contract's roundings (attentionMath.ts, eagerSoftmax).
 */
HCSP_GLOBAL void hcsp_attention_causal_qsa(const uint16_t* q, const uint16_t* k, const uint16_t* v, const int32_t* blocks, const int32_t* bad, uint16_t* o,
                                           float* p, int64_t heads, int64_t kvHeads, int64_t hd, int64_t width, int64_t ratio, float scaleF, int64_t itemBase,
                                           int64_t chunkItems, int32_t eager);
/** y = bf(o * bf(sigmoid(gate))), one thread per output; the gate at columns [hd, 2hd) of each head's [query | gate] */
HCSP_GLOBAL void hcsp_attention_output_gate(const uint16_t* o, const uint16_t* qg, uint16_t* y, int64_t rowsHeads, int64_t hd);
