// Host kernels of the basic ops (core graph/ops/basicOps.ts) but linear (gemm/linear_kernel.cc):
// add, sliceCols and the embedding lookup, as reference/kernels/basicKernels.ts.
#include <cstring>

#include "../../numerics/bf16.h"
#include "kernel_args.h"
#include "../../ops/basic_checks.h"

namespace hcsp {
namespace {

// the checks and their messages are shared with the GPU launchers (ops/basic_checks.h)

Outputs add(const Inputs& in, const KernelContext& ctx) {
  const ops::AddArgs args = ops::checkAdd(in, ctx.attrs);
  const Tensor& a = args.a;
  const Tensor& b = args.b;
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
  const ops::SliceColsArgs a = ops::checkSliceCols(in, ctx.attrs);
  const Tensor& x = a.x;
  const int64_t rows = a.rows, cols = a.cols, start = a.start, width = a.width;
  const size_t es = dtypeBytes(x.dtype());
  TensorPtr y = makeTensor(x.dtype(), {rows, width});
  const auto* src = static_cast<const uint8_t*>(x.raw());
  auto* dst = static_cast<uint8_t*>(y->raw());
  for (int64_t t = 0; t < rows; t++) std::memcpy(dst + t * width * es, src + (t * cols + start) * es, width * es);
  return {y};
}

Outputs embed(const Inputs& in, const KernelContext& ctx) {
  const ops::EmbedArgs a = ops::checkEmbed(in, ctx.attrs);
  const Tensor& ids = a.ids;
  const Tensor& table = a.table;
  const int64_t vocab = a.vocab, h = a.h;
  const int32_t* id = ids.data<int32_t>();
  TensorPtr e = makeTensor(DType::BF16, {ids.numel(), h});
  for (int64_t t = 0; t < ids.numel(); t++) {
    if (!(id[t] >= 0 && id[t] < vocab)) ops::failEmbedId(id[t], t, vocab);
    std::memcpy(e->bf16() + t * h, table.bf16() + static_cast<int64_t>(id[t]) * h, h * 2);
  }
  return {e};
}

}  // namespace

HCSP_KERNEL(add, add);
HCSP_KERNEL(sliceCols, sliceCols);
HCSP_KERNEL(embed, embed);

}  // namespace hcsp
