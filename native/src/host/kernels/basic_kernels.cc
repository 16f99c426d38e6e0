// Host kernels of the basic ops (core graph/ops/basicOps.ts) but linear (gemm/linear_kernel.cc):
// add, sliceCols and the embedding lookup, as reference/kernels/basicKernels.ts.
#include <cstring>

#include "../numerics/bf16.h"
#include "kernel_args.h"

namespace hcsp {
namespace {

/** kernelArgs.ts dims2: a 2-D tensor, `what` naming the op and the port */
void require2d(const Tensor& t, const std::string& what) {
  if (t.rank() != 2) fail(ErrorKind::Shape, what + ": expected a 2-D tensor, got " + shapeStr(t.shape()));
}

Outputs add(const Inputs& in, const KernelContext& ctx) {
  const std::string op = "add";
  const Tensor& a = input(in, 0, "a", op, DType::BF16);
  const Tensor& b = input(in, 1, "b", op, DType::BF16);
  if (a.numel() != b.numel()) fail(ErrorKind::Shape, "add: shapes " + shapeStr(a.shape()) + " and " + shapeStr(b.shape()) + " differ");
  TensorPtr y = makeTensor(DType::BF16, a.shape());
  const uint16_t* ad = a.bf16();
  const uint16_t* bd = b.bf16();
  uint16_t* yd = y->bf16();
  ctx.pool.parallelFor(a.numel(), 1 << 16, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; i++) yd[i] = f32ToBf16(bf16ToF32(ad[i]) + bf16ToF32(bd[i]));
  });
  return {y};
}

Outputs sliceCols(const Inputs& in, const KernelContext& ctx) {
  if (in.empty() || !in[0]) fail(ErrorKind::Shape, "sliceCols: input 'x' is missing");
  const Tensor& x = *in[0];
  require2d(x, "sliceCols x");
  const int64_t rows = x.dim(0), cols = x.dim(1);
  const int64_t start = ctx.attrs.integer("start"), end = ctx.attrs.integer("end");
  if (!(start >= 0 && start < end && end <= cols)) {
    fail(ErrorKind::Attr, "sliceCols: [" + std::to_string(start) + ", " + std::to_string(end) + ") is outside [0, " + std::to_string(cols) + ")");
  }
  const int64_t width = end - start;
  const size_t es = dtypeBytes(x.dtype());
  TensorPtr y = makeTensor(x.dtype(), {rows, width});
  const auto* src = static_cast<const uint8_t*>(x.raw());
  auto* dst = static_cast<uint8_t*>(y->raw());
  for (int64_t t = 0; t < rows; t++) std::memcpy(dst + t * width * es, src + (t * cols + start) * es, width * es);
  return {y};
}

Outputs embed(const Inputs& in, const KernelContext&) {
  const std::string op = "embed";
  const Tensor& ids = input(in, 0, "ids", op, DType::I32);
  const Tensor& table = input(in, 1, "table", op, DType::BF16);
  require2d(table, "embed table");
  const int64_t vocab = table.dim(0), h = table.dim(1);
  const int32_t* id = ids.data<int32_t>();
  TensorPtr e = makeTensor(DType::BF16, {ids.numel(), h});
  for (int64_t t = 0; t < ids.numel(); t++) {
    if (!(id[t] >= 0 && id[t] < vocab)) {
      fail(ErrorKind::Shape, "embed: token id " + std::to_string(id[t]) + " at position " + std::to_string(t) + " is outside the vocabulary [0, " +
                                 std::to_string(vocab) + ")");
    }
    std::memcpy(e->bf16() + t * h, table.bf16() + static_cast<int64_t>(id[t]) * h, h * 2);
  }
  return {e};
}

}  // namespace

HCSP_KERNEL(add, add);
HCSP_KERNEL(sliceCols, sliceCols);
HCSP_KERNEL(embed, embed);

}  // namespace hcsp
