// GPU kernels of the LM/MTP head ops (core graph/ops/headOps.ts), as
// reference/kernels/headKernels.ts: copies (row slices and views), the vocab-gather layout,
// the torch.argmax rule of layers/mtp/lmHead.ts argmaxFirst (one thread per row, sequential
// over the vocabulary: the first index of the maximum, +0 and -0 tie, the first NaN wins)
// and the drafter's shifted ids. Exact copies and compares.
#include "head.h"

#include "../../numerics/argmax_first.h"
#include "../../numerics/bf16.h"

HCSP_GLOBAL void hcsp_head_copy_bytes(const uint8_t* x, uint8_t* y, int64_t count) {
  HCSP_GRID_STRIDE(i, count) { y[i] = x[i]; }
}

HCSP_GLOBAL void hcsp_head_copy_words(const uint32_t* x, uint32_t* y, int64_t count) {
  HCSP_GRID_STRIDE(i, count) { y[i] = x[i]; }
}

HCSP_GLOBAL void hcsp_head_row_blocks_to_cols(const uint8_t* x, uint8_t* y, int64_t r, int64_t parts, int64_t colBytes) {
  const int64_t rowBytes = parts * colBytes;
  HCSP_GRID_STRIDE(i, r * rowBytes) {
    const int64_t t = i / rowBytes;
    const int64_t rest = i - t * rowBytes;
    const int64_t p = rest / colBytes;
    const int64_t c = rest - p * colBytes;
    y[i] = x[(p * r + t) * colBytes + c];
  }
}

HCSP_GLOBAL void hcsp_head_argmax(const uint16_t* logits, int32_t* ids, int64_t rows, int64_t vocab) {
  HCSP_GRID_STRIDE(t, rows) { ids[t] = hcsp::argmaxFirstBf16(logits + t * vocab, vocab); }
}

HCSP_GLOBAL void hcsp_head_mtp_draft_ids(const int32_t* ids, const int32_t* next, int32_t* y, int64_t t) {
  HCSP_GRID_STRIDE(i, t) { y[i] = i + 1 < t ? ids[i + 1] : next[0]; }
}
