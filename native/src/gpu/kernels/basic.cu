// GPU kernels of the basic ops (core graph/ops/basicOps.ts): add, sliceCols and the
// embedding lookup. The GEMM (linear) is in gemm.cu.
#include "basic.h"

#include "../../numerics/bf16.h"
#include "checks.h"

using hcsp::bf16ToF32;
using hcsp::f32ToBf16;

HCSP_GLOBAL void hcsp_add_bf16(const uint16_t* a, const uint16_t* b, uint16_t* y, int64_t n) {
  HCSP_GRID_STRIDE(i, n) { y[i] = f32ToBf16(bf16ToF32(a[i]) + bf16ToF32(b[i])); }
}

HCSP_GLOBAL void hcsp_slice_cols_bytes(const uint8_t* x, uint8_t* y, int64_t rows, int64_t cols, int64_t start, int64_t width, int64_t elemBytes) {
  const int64_t rowBytes = width * elemBytes;
  HCSP_GRID_STRIDE(i, rows * rowBytes) {
    const int64_t t = i / rowBytes;
    const int64_t b = i - t * rowBytes;
    y[i] = x[(t * cols + start) * elemBytes + b];
  }
}

HCSP_GLOBAL void hcsp_embed_check_ids(const int32_t* ids, unsigned long long* failed, int64_t tokens, int64_t vocab) {
  HCSP_GRID_STRIDE(t, tokens) {
    if (!(ids[t] >= 0 && ids[t] < vocab)) hcspCheckFail(failed, t, ids[t]);
  }
}

HCSP_GLOBAL void hcsp_embed_rows(const int32_t* ids, const uint16_t* table, uint16_t* e, int64_t tokens, int64_t h, int64_t vocab) {
  HCSP_GRID_STRIDE(i, tokens * h) {
    const int64_t t = i / h;
    const int64_t id = ids[t];
    // an id outside the table reads nothing: its row is zeros, and the run fails at its sync
    e[i] = id >= 0 && id < vocab ? table[id * h + (i - t * h)] : uint16_t{0};
  }
}
