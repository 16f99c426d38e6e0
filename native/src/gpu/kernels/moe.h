// Declarations of moe.cu's kernels, for their launchers (ops/moe_ops.cc).
#pragma once
#include "../vendor.h"

/**
 * Softmax (fp32, max-subtracted, the sum over the experts in canonical order v1) and top-k with the reference's tie rule, one thread per token;
 * p is fp32 scratch [E, T] (expert-major, so consecutive tokens' threads touch consecutive words).
 */
HCSP_GLOBAL void hcsp_moe_route(const uint16_t* logits, float* p, int32_t* ids, uint16_t* weights, int64_t tokens, int64_t experts, int64_t topK,
                                int32_t normTopkProb);
/**
 * The routed rows' layout, from the routing ids [tokens, topK]: the pairs p = t * topK + k whose
 * expert is local (ids[p] - firstExpert in [0, numLocal)), grouped by local expert ascending
 * and, within one, in ascending p: local expert e's rows are [first[e], first[e + 1]), and
 * first[numLocal] is the row count. Row r's token rowToken[r], pair rowPair[r] and local
 * expert rowExpert[r]; pairRow[p] = r for a local pair (not written for the others). One
 * thread per e in [0, numLocal]: it counts the local pairs of experts below e, then writes its
 * expert's rows (2 * tokens * topK reads of ids per thread).
 */
HCSP_GLOBAL void hcsp_moe_layout(const int32_t* ids, int32_t* first, int32_t* rowToken, int32_t* rowPair, int32_t* rowExpert, int32_t* pairRow, int64_t tokens,
                                 int64_t topK, int64_t firstExpert, int64_t numLocal);
/**
 * tokenRows[t, 0..topK): token t's rows in the order the reference adds them (ascending local
 * expert, then k: ascending row, as hcsp_moe_layout numbers them), then -1. One thread per
 * token (topK^2 steps).
 */
HCSP_GLOBAL void hcsp_moe_token_rows(const int32_t* ids, const int32_t* pairRow, int32_t* tokenRows, int64_t tokens, int64_t topK, int64_t firstExpert,
                                     int64_t numLocal);
/** xe[r, :] = x[rowToken[r], :] for r < *rows (the routed rows, grouped by expert; the count is the device's) */
HCSP_GLOBAL void hcsp_moe_gather_rows(const uint16_t* x, const int32_t* rowToken, const int32_t* rows, uint16_t* xe, int64_t hidden);
/** h = bf(bf(silu(gate)) * up) of rows [gate (I) | up (I)], one thread per output */
HCSP_GLOBAL void hcsp_moe_swiglu(const uint16_t* gateUp, uint16_t* h, int64_t rows, int64_t inter);
/** hcsp_moe_swiglu of the first *rows rows (the routed rows: the count is the device's) */
HCSP_GLOBAL void hcsp_moe_swiglu_rows(const uint16_t* gateUp, uint16_t* h, const int32_t* rows, int64_t inter);
/**
 * routed[t,j] = sum of bf(o[r,j] * weights[rowPair[r]]) over the rows r = tokenRows[t, 0..topK)
 * (-1 ends the list), in that order (ascending expert, then k): one thread per output;
 * bf16Acc 1 (the 'hf-eager' contract): each add rounded to bf16, as HF's bf16 index_add_
 */
HCSP_GLOBAL void hcsp_moe_routed_sum(const uint16_t* o, const int32_t* tokenRows, const int32_t* rowPair, const uint16_t* weights, float* routed,
                                     int64_t tokens, int64_t hidden, int64_t topK, int32_t bf16Acc);
/** y = bf(bf(routed) + bf(shared * bf(sigmoid(gateLogit[t])))), one thread per output */
HCSP_GLOBAL void hcsp_moe_combine(const float* routed, const uint16_t* shared, const uint16_t* gateLogit, uint16_t* y, int64_t tokens, int64_t hidden);
