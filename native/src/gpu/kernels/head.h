// Declarations of head.cu's kernels, for their launchers (ops/head_ops.cc).
#pragma once
#include "../vendor.h"

/** y[i] = x[i] over count bytes */
HCSP_GLOBAL void hcsp_head_copy_bytes(const uint8_t* x, uint8_t* y, int64_t count);
/** y[i] = x[i] over count 4-byte words (both addresses 4-byte aligned) */
HCSP_GLOBAL void hcsp_head_copy_words(const uint32_t* x, uint32_t* y, int64_t count);
/** y[t, p*C + c] = x[p*r + t, c] in bytes: C = colBytes, over r*parts*colBytes */
HCSP_GLOBAL void hcsp_head_row_blocks_to_cols(const uint8_t* x, uint8_t* y, int64_t r, int64_t parts, int64_t colBytes);
/** ids[t] = the first index of row t's maximum (a NaN is the maximum, the first NaN wins), one thread per row */
HCSP_GLOBAL void hcsp_head_argmax(const uint16_t* logits, int32_t* ids, int64_t rows, int64_t vocab);
/** y = ids[1:] then next[0], over t >= 1 ids */
HCSP_GLOBAL void hcsp_head_mtp_draft_ids(const int32_t* ids, const int32_t* next, int32_t* y, int64_t t);
