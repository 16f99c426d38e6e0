// Declarations of hc.cu's kernels, for their launchers (ops/hc_ops.cc). `hf` selects the
// 'hf' rounding contract (1) or 'atom' (0); bf16 tensors are uint16_t bit patterns.
#pragma once
#include "../vendor.h"

/** x[t, s*H + j] = e[t, j] over rows*n*h */
HCSP_GLOBAL void hcsp_hc_expand(const uint16_t* e, uint16_t* x, int64_t rows, int64_t n, int64_t h);
/** inj[i] = injectScale(raw[i]) over the count = rows*n (row, stream) logits */
HCSP_GLOBAL void hcsp_hc_inject_scales(const uint16_t* raw, float* inj, int64_t count, int64_t n, int32_t hf);
/** out[t, s*H + j] = bf(x + y[t, j] * inj[t, s]) over rows*n*h; out may be x */
HCSP_GLOBAL void hcsp_hc_combine(const uint16_t* x, const uint16_t* y, const float* inj, uint16_t* out, int64_t rows, int64_t n, int64_t h, int32_t hf);
/**
 * The combine-norm of every (row, stream) pair p = t*n + s of x [rows, n*h], one launch: xOut =
 * x, or with the pending combine (y [rows, h] and raw [rows, n] given; both null otherwise)
 * bf(x + y[t] * injectScale(raw[p])); normed = bf(fl(fl(xOut * rstd) * fl(1 + w[s*h + j]))),
 * rstd = rsqrt(fl(fl(sumsq / h) + eps)), sumsq over the pair's h squares in canonical order v1.
 * A block kernel (reduce.h): 64 threads per pair, blocks of 1-4 pairs; the bits depend on
 * neither. xOut and normed must not overlap x.
 */
HCSP_GLOBAL void hcsp_hc_combine_norm(const uint16_t* x, const uint16_t* y, const uint16_t* raw, const uint16_t* w, uint16_t* xOut, uint16_t* normed,
                                      int64_t pairs, int64_t n, int64_t h, float eps, int32_t hf);
/** gate = bf(silu(bf(d[:, :r] / n))), raw = d[:, r:] (raw null when width == lowRank) over rows*width */
HCSP_GLOBAL void hcsp_hc_scaled_silu(const uint16_t* d, uint16_t* gate, uint16_t* raw, int64_t rows, int64_t width, int64_t lowRank, int64_t n);
/** x[t, j] = bf(sum_s sigmoid(up_s) * normed_s / n), s in order (gated_mean.h); a block kernel, 64 threads per row, blocks of 1-4 rows */
HCSP_GLOBAL void hcsp_hc_gated_mean(const uint16_t* up, const uint16_t* normed, uint16_t* x, int64_t rows, int64_t n, int64_t h, int32_t hf);
