// The `fp8LinearPtpc` op (core graph/ops/quantOps.ts): the FP8 PTPC GEMM through
// gemm::linearFp8Ptpc, with reference/kernels/quantKernels.ts's checks and messages.
#include "../kernels/kernel_args.h"
#include "../fp8_format.h"
#include "linear.h"

namespace hcsp {
namespace {

/** quantKernels.ts fp8Rows: a 2-D fp8 matrix in `format` and its f32 scale per row */
int64_t fp8Rows(const Inputs& in, size_t qPort, const std::string& what, const Fp8Format& format) {
  const TensorPtr q = qPort < in.size() ? in[qPort] : nullptr;
  const TensorPtr s = qPort + 1 < in.size() ? in[qPort + 1] : nullptr;
  if (!q || !s) fail(ErrorKind::Shape, what + " and its scales are required");
  const std::string got = std::string(dtypeName(q->dtype())) + " " + shapeStr(q->shape());
  if (q->rank() != 2) fail(ErrorKind::Shape, what + " must be a 2-D " + dtypeName(fp8DType(format)) + " tensor, got " + got);
  if (fp8DType(fp8FormatOfDType(q->dtype())) != fp8DType(format)) fail(ErrorKind::DType, what + " must be a 2-D " + dtypeName(fp8DType(format)) + " tensor, got " + got);
  const int64_t rows = q->dim(0);
  if (s->dtype() != DType::F32 || s->rank() != 1 || s->dim(0) != rows) {
    fail(s->dtype() != DType::F32 ? ErrorKind::DType : ErrorKind::Shape,
         what + " scales must be f32 [" + std::to_string(rows) + "], got " + dtypeName(s->dtype()) + " " + shapeStr(s->shape()));
  }
  return rows;
}

Outputs fp8LinearPtpc(const Inputs& in, const KernelContext& ctx) {
  // String(undefined) in the reference's messages when an attribute is absent
  const Fp8Format& format = fp8Format(ctx.attrs.string("format", "undefined"));
  const int64_t rows = fp8Rows(in, 0, "fp8LinearPtpc q", format);
  const int64_t outF = fp8Rows(in, 2, "fp8LinearPtpc qW", format);
  const Tensor &q = *in[0], &sx = *in[1], &qW = *in[2], &sw = *in[3];
  const int64_t inF = q.dim(1);
  if (qW.dim(1) != inF) fail(ErrorKind::Shape, "fp8LinearPtpc: q has " + std::to_string(inF) + " columns, qW " + std::to_string(qW.dim(1)));
  const std::string order = ctx.attrs.string("scaleOrder", "undefined");
  if (order != "weightFirst" && order != "tokenFirst") fail(ErrorKind::Attr, "fp8LinearPtpc: unknown scale order '" + order + "'");
  TensorPtr y = makeTensor(DType::BF16, {rows, outF});
  gemm::linearFp8Ptpc(q.data<uint8_t>(), sx.data<float>(), rows, inF, qW.data<uint8_t>(), sw.data<float>(), outF, format, order == "weightFirst",
                      y->bf16(), ctx, &qW);
  return {y};
}

}  // namespace

HCSP_KERNEL(fp8LinearPtpc, fp8LinearPtpc);

}  // namespace hcsp
