// Declarations of basic.cu's kernels, for its launchers (ops/basic_ops.cc).
#pragma once
#include "../vendor.h"

HCSP_GLOBAL void hcsp_add_bf16(const uint16_t* a, const uint16_t* b, uint16_t* y, int64_t n);
HCSP_GLOBAL void hcsp_slice_cols_bytes(const uint8_t* x, uint8_t* y, int64_t rows, int64_t cols, int64_t start, int64_t width, int64_t elemBytes);
/** the device check of the ids (checks.h): the first id outside [0, vocab), detail the id */
HCSP_GLOBAL void hcsp_embed_check_ids(const int32_t* ids, unsigned long long* failed, int64_t tokens, int64_t vocab);
/** e[t] = table[ids[t]]; a row whose id is outside [0, vocab) is zeros (the check above fails the run) */
HCSP_GLOBAL void hcsp_embed_rows(const int32_t* ids, const uint16_t* table, uint16_t* e, int64_t tokens, int64_t h, int64_t vocab);
