// Declarations of hc.cu's kernels, for their launchers (ops/hc_ops.cc). `hf` selects the
// 'hf' rounding contract (1) or 'atom' (0); bf16 tensors are uint16_t bit patterns.
#pragma once
#include "../vendor.h"

/** x[t, s*H + j] = e[t, j] over rows*n*h */
HCSP_GLOBAL void hcsp_hc_expand(const uint16_t* e, uint16_t* x, int64_t rows, int64_t n, int64_t h);
/** y[i] = x[i] over count bf16 values */
HCSP_GLOBAL void hcsp_hc_copy_bf16(const uint16_t* x, uint16_t* y, int64_t count);
/** inj[i] = injectScale(raw[i]) over the count = rows*n (row, stream) logits */
HCSP_GLOBAL void hcsp_hc_inject_scales(const uint16_t* raw, float* inj, int64_t count, int64_t n, int32_t hf);
/** out[t, s*H + j] = bf(x + y[t, j] * inj[t, s]) over rows*n*h; out may be x */
HCSP_GLOBAL void hcsp_hc_combine(const uint16_t* x, const uint16_t* y, const float* inj, uint16_t* out, int64_t rows, int64_t n, int64_t h, int32_t hf);
/** rstd[p] = rsqrt(sum_j x[p*H + j]^2 / H + eps), one thread per (row, stream) pair p, the sum in canonical order v1 */
HCSP_GLOBAL void hcsp_hc_norm_rstd(const uint16_t* x, float* rstd, int64_t pairs, int64_t h, float eps);
/** normed[i] = bf(fl(x[i] * rstd[i / H]) * fl(1 + w[i % width])) over rows*width */
HCSP_GLOBAL void hcsp_hc_norm_apply(const uint16_t* x, const float* rstd, const uint16_t* w, uint16_t* normed, int64_t count, int64_t width, int64_t h);
/** gate = bf(silu(bf(d[:, :r] / n))), raw = d[:, r:] (raw null when width == lowRank) over rows*width */
HCSP_GLOBAL void hcsp_hc_scaled_silu(const uint16_t* d, uint16_t* gate, uint16_t* raw, int64_t rows, int64_t width, int64_t lowRank, int64_t n);
/** x[t, j] = bf(sum_s sigmoid(up_s) * normed_s / n), s in order, over rows*h */
HCSP_GLOBAL void hcsp_hc_gated_mean(const uint16_t* up, const uint16_t* normed, uint16_t* x, int64_t rows, int64_t n, int64_t h, int32_t hf);
