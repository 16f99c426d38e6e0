// The LM/MTP head ops' argument checks (reference/kernels/headKernels.ts), shared by the host
// kernels (host/kernels/head_kernels.cc) and the GPU launchers (gpu/ops/head_ops.cc): each
// check* reads the attributes and the inputs' metadata (shape, dtype; never data) in the
// reference's order, fails with the reference's messages, and returns the validated geometry.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "../host/kernels/kernel_args.h"

namespace hcsp::ops {

/** port i of any dtype */
inline const Tensor& headAnyInput(const Inputs& in, size_t i, const char* name, const std::string& op) {
  if (i >= in.size() || !in[i]) fail(ErrorKind::Shape, op + ": input '" + name + "' is missing");
  return *in[i];
}

struct SliceRowsArgs {
  const Tensor& x;
  /** rows [start, end) of x; the output's shape; the bytes of one row */
  int64_t start, end;
  Shape shape;
  int64_t rowBytes;
};

inline SliceRowsArgs checkSliceRows(const Inputs& in, const Attrs& attrs) {
  const std::string op = "sliceRows";
  const Tensor& x = headAnyInput(in, 0, "x", op);
  if (x.rank() < 1) fail(ErrorKind::Shape, "sliceRows: input 'x' must have at least one axis");
  const int64_t start = attrs.integer("start"), end = attrs.integer("end");
  if (!(start >= 0 && start < end && end <= x.dim(0))) {
    fail(ErrorKind::Attr, "sliceRows: rows [" + std::to_string(start) + ", " + std::to_string(end) + ") are outside [0, " + std::to_string(x.dim(0)) + ")");
  }
  Shape shape = x.shape();
  shape[0] = end - start;
  const int64_t rowBytes = (x.dim(0) == 0 ? 0 : x.numel() / x.dim(0)) * static_cast<int64_t>(dtypeBytes(x.dtype()));
  return {x, start, end, std::move(shape), rowBytes};
}

struct ReshapeArgs {
  const Tensor& x;
  Shape shape;
};

inline ReshapeArgs checkReshape(const Inputs& in, const Attrs& attrs) {
  const std::string op = "reshape";
  const Tensor& x = headAnyInput(in, 0, "x", op);
  const std::vector<int64_t> dims = attrs.integers("shape");
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
  return {x, std::move(shape)};
}

struct RowBlocksToColsArgs {
  const Tensor& x;
  /** x is [r * parts, cols]; the output [r, parts * cols] */
  int64_t r, parts, cols;
};

inline RowBlocksToColsArgs checkRowBlocksToCols(const Inputs& in, const Attrs& attrs) {
  const std::string op = "rowBlocksToCols";
  const Tensor& x = headAnyInput(in, 0, "x", op);
  const auto [rows, cols] = dims2(x, "rowBlocksToCols x");
  const int64_t parts = attrs.integer("parts");
  if (!(parts >= 1 && rows % parts == 0)) {
    fail(ErrorKind::Attr, "rowBlocksToCols: " + std::to_string(rows) + " rows do not split into " + std::to_string(parts) + " blocks");
  }
  return {x, rows / parts, parts, cols};
}

struct ArgmaxArgs {
  const Tensor& logits;
  int64_t rows, vocab;
};

inline ArgmaxArgs checkArgmax(const Inputs& in, const Attrs&) {
  const std::string op = "argmax";
  const Tensor& logits = input(in, 0, "logits", op, DType::BF16);
  const auto [rows, vocab] = dims2(logits, "argmax logits");
  if (vocab < 1) fail(ErrorKind::Shape, "argmaxFirst: vocab " + std::to_string(vocab) + " must be an integer >= 1");
  return {logits, rows, vocab};
}

struct MtpDraftIdsArgs {
  const Tensor &ids, &next;
  int64_t t;
};

inline MtpDraftIdsArgs checkMtpDraftIds(const Inputs& in, const Attrs&) {
  const std::string op = "mtpDraftIds";
  const auto [ids, next] = inputs(in, op, {{"ids", DType::I32}, {"next", DType::I32}});
  const int64_t t = ids.numel();
  if (t < 1 || next.numel() != 1) {
    fail(ErrorKind::Shape, "mtpDraftIds: ids [" + std::to_string(t) + "] and next [" + std::to_string(next.numel()) + "] must be [T >= 1] and [1]");
  }
  return {ids, next, t};
}

}  // namespace hcsp::ops
