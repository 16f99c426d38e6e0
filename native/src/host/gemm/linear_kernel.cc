// The `linear` op (core graph/ops/basicOps.ts): y = bf(x w^T) through gemm::linearBf16, with
// reference/kernels/basicKernels.ts's checks and messages (ops/gemm_checks.h, shared with the GPU launcher).
#include "../kernels/kernel_args.h"
#include "linear.h"
#include "../../ops/gemm_checks.h"

namespace hcsp {
namespace {

Outputs linear(const Inputs& in, const KernelContext& ctx) {
  const ops::LinearArgs a = ops::checkLinear(in, ctx.attrs);
  const Tensor& x = a.x;
  const Tensor& w = a.w;
  const int64_t rows = a.rows, inF = a.inF, outF = a.outF;
  TensorPtr y = makeTensor(DType::BF16, {rows, outF});
  gemm::linearBf16(x.bf16(), rows, inF, w.bf16(), outF, y->bf16(), ctx, &w);
  return {y};
}

}  // namespace

HCSP_KERNEL(linear, linear);

}  // namespace hcsp
