// The `linear` op (core graph/ops/basicOps.ts): y = bf(x w^T) through gemm::linearBf16, with
// reference/kernels/basicKernels.ts's checks and messages.
#include "../kernels/kernel_args.h"
#include "linear.h"

namespace hcsp {
namespace {

/** kernelArgs.ts dims2 */
void require2d(const Tensor& t, const char* what) {
  if (t.rank() != 2) fail(ErrorKind::Shape, std::string(what) + ": expected a 2-D tensor, got " + shapeStr(t.shape()));
}

Outputs linear(const Inputs& in, const KernelContext& ctx) {
  const std::string op = "linear";
  const Tensor& x = input(in, 0, "x", op, DType::BF16);
  const Tensor& w = input(in, 1, "w", op, DType::BF16);
  require2d(x, "linear x");
  require2d(w, "linear w");
  const int64_t rows = x.dim(0), inF = x.dim(1), outF = w.dim(0);
  if (w.dim(1) != inF) fail(ErrorKind::Shape, "linear: x is " + shapeStr(x.shape()) + " but w is " + shapeStr(w.shape()) + " (in features differ)");
  TensorPtr y = makeTensor(DType::BF16, {rows, outF});
  gemm::linearBf16(x.bf16(), rows, inF, w.bf16(), outF, y->bf16(), ctx, &w);
  return {y};
}

}  // namespace

HCSP_KERNEL(linear, linear);

}  // namespace hcsp
