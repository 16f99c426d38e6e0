// Launchers of the FP8 PTPC quantization ops on the GPU devices but fp8LinearPtpc (a GEMM),
// with the checks and messages the host kernels share (ops/quant_checks.h, as
// reference/kernels/quantKernels.ts): per row, the scale kernel (one thread per row) then
// the elementwise fp8 kernel; the fused op writes its bf16 gated means first.
#include <string>

#include "../../host/kernels/kernel_args.h"
#include "../../host/fp8_format.h"
#include "../../ops/quant_checks.h"
#include "../gpu_op_registry.h"
#include "../kernels/quant.h"

namespace hcsp::gpu {
namespace {

/** 1 for 'reciprocal', 0 for 'divide' */
int32_t reciprocalFlag(ops::QuantStyle s) { return s == ops::QuantStyle::Reciprocal ? 1 : 0; }

/** q and scale of the bf16 rows [rows, cols] at x (in the GPU's memory) */
Outputs quantizeRows(const uint16_t* x, int64_t rows, int64_t cols, const Fp8Format& f, int32_t reciprocal, const GpuContext& g) {
  const int32_t fnuz = f.fnuz ? 1 : 0;
  TensorPtr q = g.alloc(fp8DType(f), {rows, cols});
  TensorPtr scale = g.alloc(DType::F32, {rows});
  HCSP_LAUNCH(g.rt, hcsp_quant_row_scales, rows, x, scale->data<float>(), rows, cols, fnuz, reciprocal);
  HCSP_LAUNCH(g.rt, hcsp_quant_rows_fp8, rows * cols, x, scale->data<float>(), q->data<uint8_t>(), rows, cols, fnuz, reciprocal);
  return {q, scale};
}

Outputs quantFp8PerToken(const Inputs& in, const GpuContext& g) {
  const ops::QuantRowsArgs a = ops::checkQuantFp8PerToken(in, g.attrs);
  return quantizeRows(a.x.bf16(), a.rows, a.cols, a.f, reciprocalFlag(a.style), g);
}

Outputs hcGatedMeanQuant(const Inputs& in, const GpuContext& g) {
  const ops::GatedMeanQuantArgs a = ops::checkHcGatedMeanQuant(in, g.attrs);
  const int64_t rows = a.rows, n = a.n, h = a.h;
  TensorPtr x = g.alloc(DType::BF16, {rows, h});
  HCSP_LAUNCH(g.rt, hcsp_quant_gated_mean, rows * h, a.up.bf16(), a.normed.bf16(), x->bf16(), rows, n, h);
  Outputs qs = quantizeRows(x->bf16(), rows, h, a.f, reciprocalFlag(a.style), g);
  return {x, qs[0], qs[1]};
}

Outputs fp8QuantWeightPerChannel(const Inputs& in, const GpuContext& g) {
  const ops::QuantRowsArgs a = ops::checkFp8QuantWeightPerChannel(in, g.attrs);
  return quantizeRows(a.x.bf16(), a.rows, a.cols, a.f, reciprocalFlag(a.style), g);
}

}  // namespace

HCSP_GPU_OP(quantFp8PerToken, quantFp8PerToken);
HCSP_GPU_OP(hcGatedMeanQuant, hcGatedMeanQuant);
HCSP_GPU_OP(fp8QuantWeightPerChannel, fp8QuantWeightPerChannel);

}  // namespace hcsp::gpu
