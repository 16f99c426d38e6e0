// Declarations of quant.cu's kernels, for their launchers (ops/quant_ops.cc). `fnuz` selects
// e4m3fnuz (1) or e4m3fn (0), `reciprocal` the style 'reciprocal' (1) or 'divide' (0).
#pragma once
#include "../vendor.h"

/** scale[t] of bf16 row t (amax sequential over the row, one thread per row) */
HCSP_GLOBAL void hcsp_quant_row_scales(const uint16_t* x, float* scale, int64_t rows, int64_t cols, int32_t fnuz, int32_t reciprocal);
/** q[t, j] = cvt(x / scale[t]) ('divide') or cvt(x * fl(1 / scale[t])) ('reciprocal') over rows*cols */
HCSP_GLOBAL void hcsp_quant_rows_fp8(const uint16_t* x, const float* scale, uint8_t* q, int64_t rows, int64_t cols, int32_t fnuz, int32_t reciprocal);
/** x[t, j] = bf(the gated mean of hcGatedMean's 'atom' order) over rows*h */
HCSP_GLOBAL void hcsp_quant_gated_mean(const uint16_t* up, const uint16_t* normed, uint16_t* x, int64_t rows, int64_t n, int64_t h);
