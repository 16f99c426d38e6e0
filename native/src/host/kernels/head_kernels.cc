// Host kernels of the LM/MTP head ops (core graph/ops/headOps.ts), as
// reference/kernels/headKernels.ts: row slices, views, the vocab-gather layout, the
// torch.argmax rule of layers/mtp/lmHead.ts argmaxFirst (first index of the maximum, +0 and
// -0 tie, the first NaN wins) and the drafter's shifted ids. All exact copies or compares.
#include <cstring>

#include "../../numerics/argmax_first.h"
#include "../../numerics/bf16.h"
#include "kernel_args.h"
#include "../../ops/head_checks.h"

namespace hcsp {
namespace {

// the checks and their messages are shared with the GPU launchers (ops/head_checks.h)

Outputs sliceRows(const Inputs& in, const KernelContext& ctx) {
  const ops::SliceRowsArgs a = ops::checkSliceRows(in, ctx.attrs);
  const Tensor& x = a.x;
  const int64_t start = a.start, end = a.end;
  const Shape& shape = a.shape;
  const size_t rowBytes = static_cast<size_t>(a.rowBytes);
  TensorPtr y = makeTensor(x.dtype(), shape);
  std::memcpy(y->raw(), static_cast<const uint8_t*>(x.raw()) + start * rowBytes, (end - start) * rowBytes);
  return {y};
}

Outputs reshape(const Inputs& in, const KernelContext& ctx) {
  const ops::ReshapeArgs a = ops::checkReshape(in, ctx.attrs);
  const Tensor& x = a.x;
  const Shape& shape = a.shape;
  TensorPtr y = makeTensor(x.dtype(), shape);
  std::memcpy(y->raw(), x.raw(), x.bytes());
  return {y};
}

Outputs rowBlocksToCols(const Inputs& in, const KernelContext& ctx) {
  const ops::RowBlocksToColsArgs a = ops::checkRowBlocksToCols(in, ctx.attrs);
  const Tensor& x = a.x;
  const int64_t r = a.r, parts = a.parts, cols = a.cols;
  const size_t es = dtypeBytes(x.dtype());
  TensorPtr y = makeTensor(x.dtype(), {r, parts * cols});
  const auto* src = static_cast<const uint8_t*>(x.raw());
  auto* dst = static_cast<uint8_t*>(y->raw());
  ctx.pool.parallelFor(r, cols >= 65536 ? 1 : 65536 / (cols * parts < 1 ? 1 : cols * parts), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) {
      for (int64_t p = 0; p < parts; p++) std::memcpy(dst + (t * parts * cols + p * cols) * es, src + (p * r + t) * cols * es, cols * es);
    }
  });
  return {y};
}

Outputs argmax(const Inputs& in, const KernelContext& ctx) {
  const ops::ArgmaxArgs a = ops::checkArgmax(in, ctx.attrs);
  const int64_t rows = a.rows, vocab = a.vocab;
  const Tensor& logits = a.logits;
  TensorPtr ids = makeTensor(DType::I32, {rows});
  const uint16_t* ld = logits.bf16();
  int32_t* id = ids->data<int32_t>();
  ctx.pool.parallelFor(rows, vocab >= 65536 ? 1 : 65536 / vocab, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) id[t] = argmaxFirstBf16(ld + t * vocab, vocab);
  });
  return {ids};
}

Outputs mtpDraftIds(const Inputs& in, const KernelContext& ctx) {
  const ops::MtpDraftIdsArgs a = ops::checkMtpDraftIds(in, ctx.attrs);
  const Tensor& ids = a.ids;
  const Tensor& next = a.next;
  const int64_t t = a.t;
  TensorPtr y = makeTensor(DType::I32, {t});
  int32_t* yd = y->data<int32_t>();
  std::memcpy(yd, ids.data<int32_t>() + 1, (t - 1) * 4);
  yd[t - 1] = next.data<int32_t>()[0];
  return {y};
}

}  // namespace

HCSP_KERNEL(sliceRows, sliceRows);
HCSP_KERNEL(reshape, reshape);
HCSP_KERNEL(rowBlocksToCols, rowBlocksToCols);
HCSP_KERNEL(argmax, argmax);
HCSP_KERNEL(mtpDraftIds, mtpDraftIds);

}  // namespace hcsp
