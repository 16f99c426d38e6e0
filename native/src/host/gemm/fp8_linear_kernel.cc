// The `fp8LinearPtpc` op (core graph/ops/quantOps.ts): the FP8 PTPC GEMM through
// gemm::linearFp8Ptpc, with reference/kernels/quantKernels.ts's checks and messages
// (ops/gemm_checks.h, shared with the GPU launcher).
#include "../kernels/kernel_args.h"
#include "../fp8_format.h"
#include "linear.h"
#include "../../ops/gemm_checks.h"

namespace hcsp {
namespace {

Outputs fp8LinearPtpc(const Inputs& in, const KernelContext& ctx) {
  const ops::Fp8LinearArgs a = ops::checkFp8LinearPtpc(in, ctx.attrs);
  const int64_t rows = a.rows, inF = a.inF, outF = a.outF;
  TensorPtr y = makeTensor(DType::BF16, {rows, outF});
  gemm::linearFp8Ptpc(a.q.data<uint8_t>(), a.sx.data<float>(), rows, inF, a.qW.data<uint8_t>(), a.sw.data<float>(), outF, a.format, a.weightFirst, y->bf16(),
                      ctx, &a.qW);
  return {y};
}

}  // namespace

HCSP_KERNEL(fp8LinearPtpc, fp8LinearPtpc);

}  // namespace hcsp
