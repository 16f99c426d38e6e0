// Declarations of basic.cu's kernels, for its launchers (ops/basic_ops.cc).
#pragma once
#include "../vendor.h"

HCSP_GLOBAL void hcsp_add_bf16(const uint16_t* a, const uint16_t* b, uint16_t* y, int64_t n);
HCSP_GLOBAL void hcsp_slice_cols_bytes(const uint8_t* x, uint8_t* y, int64_t rows, int64_t cols, int64_t start, int64_t width, int64_t elemBytes);
/** ids must be inside [0, vocab): the launcher checks them first, as the reference does */
HCSP_GLOBAL void hcsp_embed_rows(const int32_t* ids, const uint16_t* table, uint16_t* e, int64_t tokens, int64_t h);
