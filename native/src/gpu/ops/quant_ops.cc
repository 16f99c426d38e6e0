// Launchers of the FP8 PTPC quantization ops on the GPU devices but fp8LinearPtpc (a GEMM),
// with the checks and messages the host kernels share (ops/quant_checks.h, as
// reference/kernels/quantKernels.ts): one block-kernel launch per call, 64 threads per row
// (amax, scale and q of the row), g.blockRows rows per block; the fused op's launch also
// writes its bf16 gated means, their amax taken in the same pass.
#include <string>

#include "../../host/kernels/kernel_args.h"
#include "../../host/fp8_format.h"
#include "../../ops/quant_checks.h"
#include "../gpu_op_registry.h"
#include "../kernels/quant.h"
#include "../kernels/reduce.h"

namespace hcsp::gpu {
namespace {

/** 1 for 'reciprocal', 0 for 'divide' */
int32_t reciprocalFlag(ops::QuantStyle s) { return s == ops::QuantStyle::Reciprocal ? 1 : 0; }

/** q and scale of the bf16 rows [rows, cols] at x (in the GPU's memory) */
Outputs quantizeRows(const uint16_t* x, int64_t rows, int64_t cols, const Fp8Format& f, int32_t reciprocal, const GpuContext& g) {
  const int32_t fnuz = f.fnuz ? 1 : 0;
  TensorPtr q = g.alloc(fp8DType(f), {rows, cols});
  TensorPtr scale = g.alloc(DType::F32, {rows});
  const int perBlock = g.blockRows(rows);
  HCSP_LAUNCH_BLOCKS(g.rt, hcsp_quant_rows_fp8, hcspBlocksFor(rows, perBlock), perBlock * HCSP_CANONICAL_LANES, x, scale->data<float>(), q->data<uint8_t>(),
                     rows, cols, fnuz, reciprocal);
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
  TensorPtr q = g.alloc(fp8DType(a.f), {rows, h});
  TensorPtr scale = g.alloc(DType::F32, {rows});
  const int perBlock = g.blockRows(rows);
  HCSP_LAUNCH_BLOCKS(g.rt, hcsp_quant_gated_mean_fp8, hcspBlocksFor(rows, perBlock), perBlock * HCSP_CANONICAL_LANES, a.up.bf16(), a.normed.bf16(), x->bf16(),
                     q->data<uint8_t>(), scale->data<float>(), rows, n, h, a.f.fnuz ? 1 : 0, reciprocalFlag(a.style));
  return {x, q, scale};
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
