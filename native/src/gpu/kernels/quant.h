// Declarations of quant.cu's kernels, for their launchers (ops/quant_ops.cc). `fnuz` selects
// e4m3fnuz (1) or e4m3fn (0), `reciprocal` the style 'reciprocal' (1) or 'divide' (0).
#pragma once
#include "../vendor.h"

/**
 * Per-token quantization of bf16 rows x [rows, cols]: scale[t] from the row's amax, q[t, j] =
 * cvt(x / scale[t]) ('divide') or cvt(x * fl(1 / scale[t])) ('reciprocal'). A block kernel
 * (reduce.h): 64 threads per row, blocks of 1-4 rows.
 */
HCSP_GLOBAL void hcsp_quant_rows_fp8(const uint16_t* x, float* scale, uint8_t* q, int64_t rows, int64_t cols, int32_t fnuz, int32_t reciprocal);
/**
 * The fused hcGatedMeanQuant: x [rows, h] = bf(the gated mean of up and normed [rows, n*h] in
 * hcGatedMean's 'atom' order), then q and scale of x as hcsp_quant_rows_fp8, one pass over the
 * inputs. A block kernel as hcsp_quant_rows_fp8.
 */
HCSP_GLOBAL void hcsp_quant_gated_mean_fp8(const uint16_t* up, const uint16_t* normed, uint16_t* x, uint8_t* q, float* scale, int64_t rows, int64_t n,
                                           int64_t h, int32_t fnuz, int32_t reciprocal);
