// Declarations of gdn.cu's kernels, for their launchers (ops/gdn_ops.cc).
#pragma once
#include "../vendor.h"

/** y[t,c] = bf(silu(sum_j w[c,j] * x[t-K+1+j, c])), one thread per output, rows before 0 are zeros */
// roundConv 1: the conv sum rounded to bf16 before the SiLU (the 'hf-eager' contract)
HCSP_GLOBAL void hcsp_gdn_conv_silu(const uint16_t* x, const uint16_t* w, uint16_t* y, int64_t tokens, int64_t channels, int64_t kernel, int32_t roundConv);
/** g = -exp(A_log) * softplus(a + dt_bias) (fp32), beta = bf(sigmoid(b)); one thread per (t, head) */
HCSP_GLOBAL void hcsp_gdn_gates(const uint16_t* b, const uint16_t* a, const uint16_t* aLog, const uint16_t* dtBias, float* g, uint16_t* beta, int64_t n,
                                int64_t heads);
/** the l2-normalized q (times scale) and k of every (token, key head), the sums of squares in canonical order v1: one thread per (t, key head) */
HCSP_GLOBAL void hcsp_gdn_l2norm(const uint16_t* qkv, float* qn, float* kn, int64_t tokens, int64_t channels, int64_t keyHeads, int64_t keyDim, float eps,
                                 float scale);
/**
 * The gated delta rule over every token, one thread per (value head h, state column j): column j
 * of S_h (keyDim fp32 values at state[(h*keyDim + i)*valueDim + j]) is all that o[t,h,j] needs.
 */
HCSP_GLOBAL void hcsp_gdn_recurrence(const uint16_t* qkv, const float* qn, const float* kn, const float* g, const uint16_t* beta, float* state, uint16_t* o,
                                     int64_t tokens, int64_t channels, int64_t keyHeads, int64_t valueHeads, int64_t keyDim, int64_t valueDim);
/**
 * y = bf(bf(bf(o * rstd) * w) * sigmoid(z)), rstd = rsqrt(sum_j o[r,j]^2 / headDim + eps) per (t, head)
 * row r, the sum in canonical order v1: a block kernel (reduce.h), one row per 64 threads, 1-4
 * rows per block; a grid of fewer blocks than row groups loops over them
 */
HCSP_GLOBAL void hcsp_gdn_gated_norm(const uint16_t* o, const uint16_t* z, const uint16_t* w, uint16_t* y, int64_t rows, int64_t headDim, float eps);
