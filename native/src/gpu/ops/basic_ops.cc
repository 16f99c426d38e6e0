// Launchers of the basic ops on the GPU devices, with the host kernels' checks and messages
// (host/kernels/basic_kernels.cc).
#include <vector>

#include "../../host/kernels/kernel_args.h"
#include "../gpu_op_registry.h"
#include "../kernels/basic.h"

namespace hcsp::gpu {
namespace {

Outputs add(const Inputs& in, const GpuContext& g) {
  const Tensor& a = input(in, 0, "a", "add", DType::BF16);
  const Tensor& b = input(in, 1, "b", "add", DType::BF16);
  if (a.numel() != b.numel()) fail(ErrorKind::Shape, "add: shapes " + shapeStr(a.shape()) + " and " + shapeStr(b.shape()) + " differ");
  TensorPtr y = g.alloc(DType::BF16, a.shape());
  HCSP_LAUNCH(g.rt, hcsp_add_bf16, a.numel(), a.bf16(), b.bf16(), y->bf16(), a.numel());
  return {y};
}

Outputs sliceCols(const Inputs& in, const GpuContext& g) {
  if (in.empty() || !in[0]) fail(ErrorKind::Shape, "sliceCols: input 'x' is missing");
  const Tensor& x = *in[0];
  requireRank(x, 2, "x", "sliceCols");
  const int64_t rows = x.dim(0), cols = x.dim(1);
  const int64_t start = g.attrs.integer("start"), end = g.attrs.integer("end");
  if (!(start >= 0 && start < end && end <= cols)) {
    fail(ErrorKind::Attr, "sliceCols: [" + std::to_string(start) + ", " + std::to_string(end) + ") is outside [0, " + std::to_string(cols) + ")");
  }
  const int64_t width = end - start;
  const int64_t es = static_cast<int64_t>(dtypeBytes(x.dtype()));
  TensorPtr y = g.alloc(x.dtype(), {rows, width});
  HCSP_LAUNCH(g.rt, hcsp_slice_cols_bytes, rows * width * es, x.data<uint8_t>(), y->data<uint8_t>(), rows, cols, start, width, es);
  return {y};
}

Outputs embed(const Inputs& in, const GpuContext& g) {
  const Tensor& ids = input(in, 0, "ids", "embed", DType::I32);
  const Tensor& table = input(in, 1, "table", "embed", DType::BF16);
  requireRank(table, 2, "table", "embed");
  const int64_t vocab = table.dim(0), h = table.dim(1);
  // the ids are few (T int32): checked on the host before any device work, as the reference does
  std::vector<int32_t> host(static_cast<size_t>(ids.numel()));
  if (!host.empty()) g.rt.copyOut(host.data(), ids.raw(), host.size() * 4);
  for (size_t t = 0; t < host.size(); t++) {
    if (!(host[t] >= 0 && host[t] < vocab)) {
      fail(ErrorKind::Shape, "embed: token id " + std::to_string(host[t]) + " at position " + std::to_string(t) + " is outside the vocabulary [0, " +
                                 std::to_string(vocab) + ")");
    }
  }
  TensorPtr e = g.alloc(DType::BF16, {ids.numel(), h});
  HCSP_LAUNCH(g.rt, hcsp_embed_rows, ids.numel() * h, ids.data<int32_t>(), table.bf16(), e->bf16(), ids.numel(), h);
  return {e};
}

}  // namespace

HCSP_GPU_OP(add, add);
HCSP_GPU_OP(sliceCols, sliceCols);
HCSP_GPU_OP(embed, embed);

}  // namespace hcsp::gpu
