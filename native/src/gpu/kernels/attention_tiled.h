// Declaration of attention_tiled.cu's kernel, for the attnCausalQsa launcher's fast path
// (ops/attention_ops.cc, kernels 'fast').
#pragma once
#include "../vendor.h"

/** query rows per block of the tiled attention kernel (one row group of HCSP_TILED_ATTN_LANES threads each) */
#define HCSP_TILED_ATTN_ROWS 32
/** threads per query row: the row's scores, softmax and output dims are split over them */
#define HCSP_TILED_ATTN_LANES 8
/** keys per tile staged in shared memory */
#define HCSP_TILED_ATTN_KEYS 32
/** the largest head dim the kernel takes (its shared tiles and per-thread accumulators are sized by it) */
#define HCSP_TILED_ATTN_MAX_HD 256
/** the block size it must be launched with: rows x lanes */
#define HCSP_TILED_ATTN_THREADS (HCSP_TILED_ATTN_ROWS * HCSP_TILED_ATTN_LANES)

/**
 * Causal GQA attention over each row's QSA kept keys (attnCausalQsa), flash style: block b
 * handles query rows t0 .. t0 + 31 (tile tiles - 1 - b / heads: the longest rows start first)
 * of head h = b % heads. It walks the key positions 0 .. t0 + 31 in tiles of 32, and for each
 * row builds the tile's mask of its kept keys (its listed blocks, then the tail, exactly as the
 * op lists them) from a cursor into its ascending block list; a tile no row keeps is skipped.
 * K and V tiles and the query tile sit in shared memory as bf16; scores, the online softmax
 * (running max m and sum l, rescaled by exp(m_old - m_new)) and the output accumulators are
 * fp32, the output rounded to bf16 once: o = bf(acc / l). bad is hcsp_attention_check_selection's:
 * a row it failed gets zeros. hd <= HCSP_TILED_ATTN_MAX_HD; launched with HCSP_TILED_ATTN_THREADS
 * threads per block and ceil(T / 32) * heads blocks.
 */
HCSP_GLOBAL void hcsp_attention_tiled_qsa(const uint16_t* q, const uint16_t* k, const uint16_t* v, const int32_t* blocks, const int32_t* bad, uint16_t* o,
                                          int64_t T, int64_t heads, int64_t kvHeads, int64_t hd, int64_t width, int64_t ratio, float scaleF);
