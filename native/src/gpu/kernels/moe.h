// Declarations of moe.cu's kernels, for their launchers (ops/moe_ops.cc).
#pragma once
#include "../vendor.h"

/**
 * Softmax (fp32, max-subtracted) and top-k with the reference's tie rule, one thread per token;
 * p is fp32 scratch [E, T] (expert-major, so consecutive tokens' threads touch consecutive words).
 */
HCSP_GLOBAL void hcsp_moe_route(const uint16_t* logits, float* p, int32_t* ids, uint16_t* weights, int64_t tokens, int64_t experts, int64_t topK,
                                int32_t normTopkProb);
/** xe[r, :] = x[rowToken[r], :] (the routed rows, grouped by expert) */
HCSP_GLOBAL void hcsp_moe_gather_rows(const uint16_t* x, const int32_t* rowToken, uint16_t* xe, int64_t rows, int64_t hidden);
/** h = bf(bf(silu(gate)) * up) of rows [gate (I) | up (I)], one thread per output */
HCSP_GLOBAL void hcsp_moe_swiglu(const uint16_t* gateUp, uint16_t* h, int64_t rows, int64_t inter);
/**
 * routed[t,j] = sum of bf(o[r,j] * weights[rowPair[r]]) over the rows r = tokenRows[t, 0..topK)
 * (-1 ends the list), in that order (ascending expert, then k): one thread per output
 */
HCSP_GLOBAL void hcsp_moe_routed_sum(const uint16_t* o, const int32_t* tokenRows, const int32_t* rowPair, const uint16_t* weights, float* routed, int64_t tokens,
                                     int64_t hidden, int64_t topK);
/** y = bf(bf(routed) + bf(shared * bf(sigmoid(gateLogit[t])))), one thread per output */
HCSP_GLOBAL void hcsp_moe_combine(const float* routed, const uint16_t* shared, const uint16_t* gateLogit, uint16_t* y, int64_t tokens, int64_t hidden);
