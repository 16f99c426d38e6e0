// Launchers of the GEMMs on the GPU devices, with the host kernels' checks and messages
// (host/gemm/linear_kernel.cc, fp8_linear_kernel.cc): `linear` and `fp8LinearPtpc`.
// GemmMode::Exact runs the reference-order kernels (kernels/gemm.cu, bit-exact with the CPU
// reference); GemmMode::Vendor the vendor's BLASLt (blaslt.h: hipBLASLt / cuBLASLt, their own
// orders; the emulated device never gets this mode).
#include <string>

#include "../../host/kernels/kernel_args.h"
#include "../../host/fp8_format.h"
#include "../blaslt.h"
#include "../gpu_op_registry.h"
#include "../kernels/gemm.h"

namespace hcsp::gpu {

namespace {

const char* gemmModeName(GemmMode m) {
  switch (m) {
    case GemmMode::Exact: return "exact";
    case GemmMode::Blas: return "blas";
    case GemmMode::Vendor: return "vendor";
  }
  return "?";
}

[[noreturn]] void noGemm(const char* op, GemmMode m) {
  fail(ErrorKind::Unsupported, std::string(op) + ": the GPU devices have no '" + gemmModeName(m) + "' GEMM (they have: vendor, exact)");
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

void gemmLinearBf16(const GpuContext& g, const uint16_t* x, int64_t rows, int64_t inF, const uint16_t* w, int64_t outF, uint16_t* y) {
  if (rows == 0 || outF == 0) return;
  switch (g.gemm) {
    case GemmMode::Exact:
      if (inF % 8 == 0 && aligned16(x) && aligned16(w)) {
        HCSP_LAUNCH(g.rt, hcsp_gemm_linear_bf16_v8, rows * outF, x, w, y, rows, inF, outF);
      } else {
        HCSP_LAUNCH(g.rt, hcsp_gemm_linear_bf16, rows * outF, x, w, y, rows, inF, outF);
      }
      return;
    case GemmMode::Vendor: vendorLinearBf16(g.rt, x, rows, inF, w, outF, y); return;
    case GemmMode::Blas: break;
  }
  noGemm("linear", g.gemm);
}

void gemmFp8LinearPtpc(const GpuContext& g, const uint8_t* q, const float* sx, int64_t rows, int64_t inF, const uint8_t* qW, const float* sw, int64_t outF,
                       bool fnuz, bool weightFirst, uint16_t* y) {
  if (rows == 0 || outF == 0) return;
  switch (g.gemm) {
    case GemmMode::Exact:
      HCSP_LAUNCH(g.rt, hcsp_gemm_fp8_ptpc, rows * outF, q, sx, qW, sw, y, rows, inF, outF, fnuz ? 1 : 0, weightFirst ? 1 : 0);
      return;
    case GemmMode::Vendor: vendorFp8LinearPtpc(g.rt, q, sx, rows, inF, qW, sw, outF, fnuz, y); return;
    case GemmMode::Blas: break;
  }
  noGemm("fp8LinearPtpc", g.gemm);
}

namespace {

/** kernelArgs.ts dims2 */
void require2d(const Tensor& t, const char* what) {
  if (t.rank() != 2) fail(ErrorKind::Shape, std::string(what) + ": expected a 2-D tensor, got " + shapeStr(t.shape()));
}

Outputs linear(const Inputs& in, const GpuContext& g) {
  const std::string op = "linear";
  const Tensor& x = input(in, 0, "x", op, DType::BF16);
  const Tensor& w = input(in, 1, "w", op, DType::BF16);
  require2d(x, "linear x");
  require2d(w, "linear w");
  const int64_t rows = x.dim(0), inF = x.dim(1), outF = w.dim(0);
  if (w.dim(1) != inF) fail(ErrorKind::Shape, "linear: x is " + shapeStr(x.shape()) + " but w is " + shapeStr(w.shape()) + " (in features differ)");
  TensorPtr y = g.alloc(DType::BF16, {rows, outF});
  gemmLinearBf16(g, x.bf16(), rows, inF, w.bf16(), outF, y->bf16());
  return {y};
}

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

Outputs fp8LinearPtpc(const Inputs& in, const GpuContext& g) {
  // String(undefined) in the reference's messages when an attribute is absent
  const Fp8Format& format = fp8Format(g.attrs.string("format", "undefined"));
  const int64_t rows = fp8Rows(in, 0, "fp8LinearPtpc q", format);
  const int64_t outF = fp8Rows(in, 2, "fp8LinearPtpc qW", format);
  const Tensor &q = *in[0], &sx = *in[1], &qW = *in[2], &sw = *in[3];
  const int64_t inF = q.dim(1);
  if (qW.dim(1) != inF) fail(ErrorKind::Shape, "fp8LinearPtpc: q has " + std::to_string(inF) + " columns, qW " + std::to_string(qW.dim(1)));
  const std::string order = g.attrs.string("scaleOrder", "undefined");
  if (order != "weightFirst" && order != "tokenFirst") fail(ErrorKind::Attr, "fp8LinearPtpc: unknown scale order '" + order + "'");
  TensorPtr y = g.alloc(DType::BF16, {rows, outF});
  gemmFp8LinearPtpc(g, q.data<uint8_t>(), sx.data<float>(), rows, inF, qW.data<uint8_t>(), sw.data<float>(), outF, format.fnuz,
                    order == "weightFirst", y->bf16());
  return {y};
}

}  // namespace

HCSP_GPU_OP(linear, linear);
HCSP_GPU_OP(fp8LinearPtpc, fp8LinearPtpc);

}  // namespace hcsp::gpu
