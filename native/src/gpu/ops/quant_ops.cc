// Launchers of the FP8 PTPC quantization ops on the GPU devices but fp8LinearPtpc (a GEMM),
// with the host kernels' checks and messages (host/kernels/quant_kernels.cc, as
// reference/kernels/quantKernels.ts): per row, the scale kernel (one thread per row) then
// the elementwise fp8 kernel; the fused op writes its bf16 gated means first.
#include <string>

#include "../../host/kernels/kernel_args.h"
#include "../../host/numerics/fp8.h"
#include "../gpu_op_registry.h"
#include "../kernels/quant.h"

namespace hcsp::gpu {
namespace {

/** 1 for 'reciprocal', 0 for 'divide' */
int32_t parseStyle(const std::string& op, const GpuContext& g) {
  const std::string style = g.attrs.has("style") ? g.attrs.string("style") : "undefined";
  if (style == "divide") return 0;
  if (style == "reciprocal") return 1;
  fail(ErrorKind::Attr, op + ": style must be 'divide' or 'reciprocal', got '" + style + "'");
}

const Fp8Format& formatAttr(const GpuContext& g) { return fp8Format(g.attrs.has("format") ? g.attrs.string("format") : "undefined"); }

/** a present 2-D bf16 input (reference bf16Matrix) */
const Tensor& bf16Matrix(const Inputs& in, size_t i, const std::string& what) {
  if (i >= in.size() || !in[i]) fail(ErrorKind::Shape, what + " is missing");
  const Tensor& t = *in[i];
  if (t.dtype() != DType::BF16 || t.rank() != 2) {
    fail(t.dtype() != DType::BF16 ? ErrorKind::DType : ErrorKind::Shape,
         what + " must be a 2-D bf16 tensor, got " + dtypeName(t.dtype()) + " " + shapeStr(t.shape()));
  }
  return t;
}

void checkCols(const std::string& what, int64_t cols) {
  if (cols < 1) fail(ErrorKind::Shape, what + ": cols " + std::to_string(cols) + " must be an integer >= 1");
}

/** q and scale of the bf16 rows [rows, cols] at x (in the GPU's memory) */
Outputs quantizeRows(const uint16_t* x, int64_t rows, int64_t cols, const Fp8Format& f, int32_t reciprocal, const GpuContext& g) {
  const int32_t fnuz = f.dtype == DType::FP8E4M3FNUZ ? 1 : 0;
  TensorPtr q = g.alloc(f.dtype, {rows, cols});
  TensorPtr scale = g.alloc(DType::F32, {rows});
  HCSP_LAUNCH(g.rt, hcsp_quant_row_scales, rows, x, scale->data<float>(), rows, cols, fnuz, reciprocal);
  HCSP_LAUNCH(g.rt, hcsp_quant_rows_fp8, rows * cols, x, scale->data<float>(), q->data<uint8_t>(), rows, cols, fnuz, reciprocal);
  return {q, scale};
}

Outputs quantFp8PerToken(const Inputs& in, const GpuContext& g) {
  const std::string op = "quantFp8PerToken";
  const Fp8Format& f = formatAttr(g);
  const int32_t reciprocal = parseStyle(op, g);
  const Tensor& x = bf16Matrix(in, 0, "quantFp8PerToken x");
  checkCols("quantizeBf16RowsFp8", x.dim(1));
  return quantizeRows(x.bf16(), x.dim(0), x.dim(1), f, reciprocal, g);
}

Outputs hcGatedMeanQuant(const Inputs& in, const GpuContext& g) {
  const std::string op = "hcGatedMeanQuant";
  const Fp8Format& f = formatAttr(g);
  const int32_t reciprocal = parseStyle(op, g);
  const Tensor& up = bf16Matrix(in, 0, "hcGatedMeanQuant up");
  const Tensor& normed = bf16Matrix(in, 1, "hcGatedMeanQuant normed");
  const int64_t rows = normed.dim(0), width = normed.dim(1);
  const int64_t n = g.attrs.has("streams") ? g.attrs.integer("streams") : 0;
  if (n < 1 || width % n != 0) {
    fail(ErrorKind::Attr, "hcGatedMeanQuant: streams " + std::to_string(n) + " must be an integer >= 1 dividing normed's " + std::to_string(width) + " columns");
  }
  if (up.dim(0) != rows || up.dim(1) != width) {
    fail(ErrorKind::Shape, "hcGatedMeanQuant: up " + shapeStr(up.shape()) + " and normed " + shapeStr(normed.shape()) + " differ");
  }
  const int64_t h = width / n;
  checkCols("quantizeFusedRowsFp8", h);
  TensorPtr x = g.alloc(DType::BF16, {rows, h});
  HCSP_LAUNCH(g.rt, hcsp_quant_gated_mean, rows * h, up.bf16(), normed.bf16(), x->bf16(), rows, n, h);
  Outputs qs = quantizeRows(x->bf16(), rows, h, f, reciprocal, g);
  return {x, qs[0], qs[1]};
}

Outputs fp8QuantWeightPerChannel(const Inputs& in, const GpuContext& g) {
  const Fp8Format& f = formatAttr(g);
  const Tensor& w = bf16Matrix(in, 0, "fp8QuantWeightPerChannel w");
  checkCols("quantizeBf16RowsFp8", w.dim(1));
  return quantizeRows(w.bf16(), w.dim(0), w.dim(1), f, 1, g);
}

}  // namespace

HCSP_GPU_OP(quantFp8PerToken, quantFp8PerToken);
HCSP_GPU_OP(hcGatedMeanQuant, hcGatedMeanQuant);
HCSP_GPU_OP(fp8QuantWeightPerChannel, fp8QuantWeightPerChannel);

}  // namespace hcsp::gpu
