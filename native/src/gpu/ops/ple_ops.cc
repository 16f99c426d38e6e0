// Launchers of the PLE device ops on the GPU devices (pleRms1pNorm, pleGate, pleGatedValue,
// pleConvSilu), with the checks and messages the host kernels share (ops/ple_checks.h); the
// arithmetic is in kernels/ple.cu. pleNgramIds and pleNgramEmbed are host ops.
#include <cmath>
#include <string>

#include "../../host/kernels/js_text.h"
#include "../../host/kernels/kernel_args.h"
#include "../../ops/ple_checks.h"
#include "../../numerics/fp32_math.h"
#include "../gpu_op_registry.h"
#include "../kernels/ple.h"

namespace hcsp::gpu {
namespace {

Outputs pleRms1pNorm(const Inputs& in, const GpuContext& g) {
  const ops::PleNormArgs a = ops::checkPleRms1pNorm(in, g.attrs);
  const int64_t rows = a.rows, width = a.width, groupSize = a.groupSize, groups = a.groups;
  const Tensor& x = a.x;
  TensorPtr y = g.alloc(DType::BF16, x.shape());
  TensorPtr rstd = g.alloc(DType::F32, {rows * groups});
  HCSP_LAUNCH(g.rt, hcsp_ple_rms1p_rstd, rows * groups, x.bf16(), rstd->data<float>(), rows * groups, groupSize, a.epsF);
  HCSP_LAUNCH(g.rt, hcsp_ple_rms1p_apply, rows * width, x.bf16(), a.weight.bf16(), rstd->data<float>(), y->bf16(), rows * width, width, groupSize);
  return {y};
}

Outputs pleGate(const Inputs& in, const GpuContext& g) {
  const ops::PleGateArgs a = ops::checkPleGate(in, g.attrs);
  const int64_t rows = a.rows, hidden = a.hidden, streams = a.streams;
  const float sqrtH = fp32::sqrtF32(static_cast<float>(hidden));
  TensorPtr gate = g.alloc(DType::BF16, {rows, streams});
  HCSP_LAUNCH(g.rt, hcsp_ple_gate, rows * streams, a.k.bf16(), a.q.bf16(), gate->bf16(), rows * streams, hidden, sqrtH);
  return {gate};
}

Outputs pleGatedValue(const Inputs& in, const GpuContext& g) {
  const ops::PleGatedValueArgs a = ops::checkPleGatedValue(in, g.attrs);
  const int64_t rows = a.rows, hidden = a.hidden, streams = a.streams;
  TensorPtr y = g.alloc(DType::BF16, {rows, streams * hidden});
  HCSP_LAUNCH(g.rt, hcsp_ple_gated_value, rows * streams * hidden, a.gate.bf16(), a.value.bf16(), y->bf16(), rows, streams, hidden);
  return {y};
}

Outputs pleConvSilu(const Inputs& in, const GpuContext& g) {
  const ops::PleConvArgs a = ops::checkPleConvSilu(in, g.attrs);
  const int64_t rows = a.rows, channels = a.channels;
  TensorPtr y = g.alloc(DType::BF16, {rows, channels});
  HCSP_LAUNCH(g.rt, hcsp_ple_conv_silu, rows * channels, a.gNormed.bf16(), a.g.bf16(), a.weight.bf16(), y->bf16(), rows, channels, a.kernel, a.dilation);
  return {y};
}

}  // namespace

HCSP_GPU_OP(pleRms1pNorm, pleRms1pNorm);
HCSP_GPU_OP(pleGate, pleGate);
HCSP_GPU_OP(pleGatedValue, pleGatedValue);
HCSP_GPU_OP(pleConvSilu, pleConvSilu);

}  // namespace hcsp::gpu
