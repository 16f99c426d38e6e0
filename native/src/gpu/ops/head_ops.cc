// Launchers of the LM/MTP head ops on the GPU devices, with the host kernels' checks and
// messages (host/kernels/head_kernels.cc, as reference/kernels/headKernels.ts).
#include <cstdint>
#include <string>
#include <vector>

#include "../../host/kernels/kernel_args.h"
#include "../gpu_op_registry.h"
#include "../kernels/head.h"

namespace hcsp::gpu {
namespace {

const Tensor& anyInput(const Inputs& in, size_t i, const char* name, const std::string& op) {
  if (i >= in.size() || !in[i]) fail(ErrorKind::Shape, op + ": input '" + name + "' is missing");
  return *in[i];
}

/** bytes from src to dst, both in the GPU's memory: by 4-byte words when both ends and the size allow */
void copyOnDevice(const GpuContext& g, const uint8_t* src, uint8_t* dst, int64_t bytes) {
  if (((reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst) | static_cast<uintptr_t>(bytes)) & 3u) == 0) {
    HCSP_LAUNCH(g.rt, hcsp_head_copy_words, bytes / 4, reinterpret_cast<const uint32_t*>(src), reinterpret_cast<uint32_t*>(dst), bytes / 4);
  } else {
    HCSP_LAUNCH(g.rt, hcsp_head_copy_bytes, bytes, src, dst, bytes);
  }
}

Outputs sliceRows(const Inputs& in, const GpuContext& g) {
  const std::string op = "sliceRows";
  const Tensor& x = anyInput(in, 0, "x", op);
  if (x.rank() < 1) fail(ErrorKind::Shape, "sliceRows: input 'x' must have at least one axis");
  const int64_t start = g.attrs.integer("start"), end = g.attrs.integer("end");
  if (!(start >= 0 && start < end && end <= x.dim(0))) {
    fail(ErrorKind::Attr, "sliceRows: rows [" + std::to_string(start) + ", " + std::to_string(end) + ") are outside [0, " + std::to_string(x.dim(0)) + ")");
  }
  Shape shape = x.shape();
  shape[0] = end - start;
  const int64_t rowBytes = (x.dim(0) == 0 ? 0 : x.numel() / x.dim(0)) * static_cast<int64_t>(dtypeBytes(x.dtype()));
  TensorPtr y = g.alloc(x.dtype(), shape);
  copyOnDevice(g, x.data<uint8_t>() + start * rowBytes, y->data<uint8_t>(), (end - start) * rowBytes);
  return {y};
}

Outputs reshape(const Inputs& in, const GpuContext& g) {
  const std::string op = "reshape";
  const Tensor& x = anyInput(in, 0, "x", op);
  const std::vector<int64_t> dims = g.attrs.integers("shape");
  Shape shape(dims.begin(), dims.end());
  bool nonNegative = !shape.empty();
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0) nonNegative = false;
    count *= d;
  }
  if (!nonNegative) fail(ErrorKind::Attr, "reshape: attribute 'shape' " + shapeStr(shape) + " must list non-negative sizes");
  if (count != x.numel()) fail(ErrorKind::Shape, "reshape: " + shapeStr(x.shape()) + " cannot be viewed as " + shapeStr(shape));
  TensorPtr y = g.alloc(x.dtype(), shape);
  copyOnDevice(g, x.data<uint8_t>(), y->data<uint8_t>(), static_cast<int64_t>(x.bytes()));
  return {y};
}

Outputs rowBlocksToCols(const Inputs& in, const GpuContext& g) {
  const std::string op = "rowBlocksToCols";
  const Tensor& x = anyInput(in, 0, "x", op);
  if (x.rank() != 2) fail(ErrorKind::Shape, "rowBlocksToCols x: expected a 2-D tensor, got " + shapeStr(x.shape()));
  const int64_t rows = x.dim(0), cols = x.dim(1);
  const int64_t parts = g.attrs.integer("parts");
  if (!(parts >= 1 && rows % parts == 0)) {
    fail(ErrorKind::Attr, "rowBlocksToCols: " + std::to_string(rows) + " rows do not split into " + std::to_string(parts) + " blocks");
  }
  const int64_t r = rows / parts;
  const int64_t colBytes = cols * static_cast<int64_t>(dtypeBytes(x.dtype()));
  TensorPtr y = g.alloc(x.dtype(), {r, parts * cols});
  HCSP_LAUNCH(g.rt, hcsp_head_row_blocks_to_cols, r * parts * colBytes, x.data<uint8_t>(), y->data<uint8_t>(), r, parts, colBytes);
  return {y};
}

Outputs argmax(const Inputs& in, const GpuContext& g) {
  const std::string op = "argmax";
  const Tensor& logits = input(in, 0, "logits", op, DType::BF16);
  if (logits.rank() != 2) fail(ErrorKind::Shape, "argmax logits: expected a 2-D tensor, got " + shapeStr(logits.shape()));
  const int64_t rows = logits.dim(0), vocab = logits.dim(1);
  if (vocab < 1) fail(ErrorKind::Shape, "argmaxFirst: vocab " + std::to_string(vocab) + " must be an integer >= 1");
  TensorPtr ids = g.alloc(DType::I32, {rows});
  HCSP_LAUNCH(g.rt, hcsp_head_argmax, rows, logits.bf16(), ids->data<int32_t>(), rows, vocab);
  return {ids};
}

Outputs mtpDraftIds(const Inputs& in, const GpuContext& g) {
  const std::string op = "mtpDraftIds";
  const Tensor& ids = input(in, 0, "ids", op, DType::I32);
  const Tensor& next = input(in, 1, "next", op, DType::I32);
  const int64_t t = ids.numel();
  if (t < 1 || next.numel() != 1) {
    fail(ErrorKind::Shape, "mtpDraftIds: ids [" + std::to_string(t) + "] and next [" + std::to_string(next.numel()) + "] must be [T >= 1] and [1]");
  }
  TensorPtr y = g.alloc(DType::I32, {t});
  HCSP_LAUNCH(g.rt, hcsp_head_mtp_draft_ids, t, ids.data<int32_t>(), next.data<int32_t>(), y->data<int32_t>(), t);
  return {y};
}

}  // namespace

HCSP_GPU_OP(sliceRows, sliceRows);
HCSP_GPU_OP(reshape, reshape);
HCSP_GPU_OP(rowBlocksToCols, rowBlocksToCols);
HCSP_GPU_OP(argmax, argmax);
HCSP_GPU_OP(mtpDraftIds, mtpDraftIds);

}  // namespace hcsp::gpu
