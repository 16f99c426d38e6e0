// Host kernels of the LM/MTP head ops (core graph/ops/headOps.ts), as
// reference/kernels/headKernels.ts: row slices, views, the vocab-gather layout, the
// torch.argmax rule of layers/mtp/lmHead.ts argmaxFirst (first index of the maximum, +0 and
// -0 tie, the first NaN wins) and the drafter's shifted ids. All exact copies or compares.
#include <cstring>

#include "../numerics/bf16.h"
#include "kernel_args.h"

namespace hcsp {
namespace {

const Tensor& anyInput(const Inputs& in, size_t i, const char* name, const std::string& op) {
  if (i >= in.size() || !in[i]) fail(ErrorKind::Shape, op + ": input '" + name + "' is missing");
  return *in[i];
}

Outputs sliceRows(const Inputs& in, const KernelContext& ctx) {
  const std::string op = "sliceRows";
  const Tensor& x = anyInput(in, 0, "x", op);
  if (x.rank() < 1) fail(ErrorKind::Shape, "sliceRows: input 'x' must have at least one axis");
  const int64_t start = ctx.attrs.integer("start"), end = ctx.attrs.integer("end");
  if (!(start >= 0 && start < end && end <= x.dim(0))) {
    fail(ErrorKind::Attr, "sliceRows: rows [" + std::to_string(start) + ", " + std::to_string(end) + ") are outside [0, " + std::to_string(x.dim(0)) + ")");
  }
  Shape shape = x.shape();
  shape[0] = end - start;
  const size_t rowBytes = static_cast<size_t>(x.dim(0) == 0 ? 0 : x.numel() / x.dim(0)) * dtypeBytes(x.dtype());
  TensorPtr y = makeTensor(x.dtype(), shape);
  std::memcpy(y->raw(), static_cast<const uint8_t*>(x.raw()) + start * rowBytes, (end - start) * rowBytes);
  return {y};
}

Outputs reshape(const Inputs& in, const KernelContext& ctx) {
  const std::string op = "reshape";
  const Tensor& x = anyInput(in, 0, "x", op);
  const std::vector<int64_t> dims = ctx.attrs.integers("shape");
  Shape shape(dims.begin(), dims.end());
  // (the op's shape rule refuses negative sizes before any kernel runs; a tensor cannot have them)
  bool nonNegative = !shape.empty();
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0) nonNegative = false;
    count *= d;
  }
  if (!nonNegative) fail(ErrorKind::Attr, "reshape: attribute 'shape' " + shapeStr(shape) + " must list non-negative sizes");
  if (count != x.numel()) fail(ErrorKind::Shape, "reshape: " + shapeStr(x.shape()) + " cannot be viewed as " + shapeStr(shape));
  TensorPtr y = makeTensor(x.dtype(), shape);
  std::memcpy(y->raw(), x.raw(), x.bytes());
  return {y};
}

Outputs rowBlocksToCols(const Inputs& in, const KernelContext& ctx) {
  const std::string op = "rowBlocksToCols";
  const Tensor& x = anyInput(in, 0, "x", op);
  if (x.rank() != 2) fail(ErrorKind::Shape, "rowBlocksToCols x: expected a 2-D tensor, got " + shapeStr(x.shape()));
  const int64_t rows = x.dim(0), cols = x.dim(1);
  const int64_t parts = ctx.attrs.integer("parts");
  if (!(parts >= 1 && rows % parts == 0)) {
    fail(ErrorKind::Attr, "rowBlocksToCols: " + std::to_string(rows) + " rows do not split into " + std::to_string(parts) + " blocks");
  }
  const int64_t r = rows / parts;
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

/** argmaxFirst of one row: the first maximum; a NaN is the maximum (the first NaN wins) */
int32_t argmaxRow(const uint16_t* row, int64_t vocab) {
  int64_t best = 0;
  float bestValue = bf16ToF32(row[0]);
  for (int64_t v = 1; v < vocab && bestValue == bestValue; v++) {
    const float x = bf16ToF32(row[v]);
    if (x > bestValue || x != x) {
      best = v;
      bestValue = x;
    }
  }
  return static_cast<int32_t>(best);
}

Outputs argmax(const Inputs& in, const KernelContext& ctx) {
  const std::string op = "argmax";
  const Tensor& logits = input(in, 0, "logits", op, DType::BF16);
  if (logits.rank() != 2) fail(ErrorKind::Shape, "argmax logits: expected a 2-D tensor, got " + shapeStr(logits.shape()));
  const int64_t rows = logits.dim(0), vocab = logits.dim(1);
  if (vocab < 1) fail(ErrorKind::Shape, "argmaxFirst: vocab " + std::to_string(vocab) + " must be an integer >= 1");
  TensorPtr ids = makeTensor(DType::I32, {rows});
  const uint16_t* ld = logits.bf16();
  int32_t* id = ids->data<int32_t>();
  ctx.pool.parallelFor(rows, vocab >= 65536 ? 1 : 65536 / vocab, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) id[t] = argmaxRow(ld + t * vocab, vocab);
  });
  return {ids};
}

Outputs mtpDraftIds(const Inputs& in, const KernelContext&) {
  const std::string op = "mtpDraftIds";
  const Tensor& ids = input(in, 0, "ids", op, DType::I32);
  const Tensor& next = input(in, 1, "next", op, DType::I32);
  const int64_t t = ids.numel();
  if (t < 1 || next.numel() != 1) {
    fail(ErrorKind::Shape, "mtpDraftIds: ids [" + std::to_string(t) + "] and next [" + std::to_string(next.numel()) + "] must be [T >= 1] and [1]");
  }
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
