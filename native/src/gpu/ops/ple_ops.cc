// Launchers of the PLE device ops on the GPU devices (pleRms1pNorm, pleGate, pleGatedValue,
// pleConvSilu), with the host kernels' checks and messages (host/kernels/ple_kernels.cc); the
// arithmetic is in kernels/ple.cu. pleNgramIds and pleNgramEmbed are host ops.
#include <cmath>
#include <string>

#include "../../host/kernels/js_text.h"
#include "../../host/kernels/kernel_args.h"
#include "../../numerics/fp32_math.h"
#include "../gpu_op_registry.h"
#include "../kernels/ple.h"

namespace hcsp::gpu {
namespace {

/** dims2 of kernelArgs.ts: [rows, cols] of a 2-D tensor; `what` names the op and the port */
void dims2(const Tensor& t, const std::string& what, int64_t& rows, int64_t& cols) {
  if (t.rank() != 2) fail(ErrorKind::Shape, what + ": expected a 2-D tensor, got " + shapeStr(t.shape()));
  rows = t.dim(0);
  cols = t.dim(1);
}

/** divide of pleKernels.ts: width / attrs[name], which must split width into whole groups */
int64_t divide(int64_t width, const Attrs& attrs, const std::string& name, const std::string& what) {
  if (js::isInteger(attrs, name)) {
    const double parts = attrs.number(name);
    if (parts >= 1 && std::fmod(static_cast<double>(width), parts) == 0) return width / static_cast<int64_t>(parts);
  }
  fail(ErrorKind::Shape, what + ": width " + std::to_string(width) + " is not divisible into " + js::text(attrs, name) + " groups");
}

/** checkLength of pleMath.ts */
void checkLength(const char* what, int64_t length, double expected) {
  if (static_cast<double>(length) != expected) {
    fail(ErrorKind::Shape, std::string("ple: ") + what + " has " + std::to_string(length) + " values, expected " + js::number(expected));
  }
}

/** attrs[name] as the JavaScript number arithmetic would see it (NaN unless a finite number) */
double numberOrNaN(const Attrs& attrs, const std::string& name) {
  const js::AttrProbe p = js::probe(attrs, name);
  return p.kind == js::AttrProbe::Kind::Number ? p.number : std::nan("");
}

Outputs pleRms1pNorm(const Inputs& in, const GpuContext& g) {
  const std::string op = "pleRms1pNorm";
  const Tensor& x = input(in, 0, "x", op, DType::BF16);
  int64_t rows, width;
  dims2(x, "pleRms1pNorm x", rows, width);
  const int64_t groupSize = divide(width, g.attrs, "groups", op);
  // (a zero width has no groups; the host kernel divides by it)
  const int64_t groups = groupSize > 0 ? width / groupSize : 0;
  const Tensor& weight = input(in, 1, "weight", op, DType::BF16);
  checkLength("norm weight", weight.numel(), static_cast<double>(width));
  const float epsF = static_cast<float>(g.attrs.number("eps"));
  TensorPtr y = g.alloc(DType::BF16, x.shape());
  TensorPtr rstd = g.alloc(DType::F32, {rows * groups});
  HCSP_LAUNCH(g.rt, hcsp_ple_rms1p_rstd, rows * groups, x.bf16(), rstd->data<float>(), rows * groups, groupSize, epsF);
  HCSP_LAUNCH(g.rt, hcsp_ple_rms1p_apply, rows * width, x.bf16(), weight.bf16(), rstd->data<float>(), y->bf16(), rows * width, width, groupSize);
  return {y};
}

Outputs pleGate(const Inputs& in, const GpuContext& g) {
  const std::string op = "pleGate";
  const Tensor& k = input(in, 0, "k", op, DType::BF16);
  int64_t rows, width;
  dims2(k, "pleGate k", rows, width);
  const int64_t hidden = divide(width, g.attrs, "streams", op);
  // a zero width: the attribute's streams, as the reference (each gate then sigmoid(0))
  const int64_t streams = hidden > 0 ? width / hidden : static_cast<int64_t>(g.attrs.number("streams"));
  const Tensor& q = input(in, 1, "q", op, DType::BF16);
  checkLength("normed queries", q.numel(), static_cast<double>(rows * streams * hidden));
  const float sqrtH = fp32::sqrtF32(static_cast<float>(hidden));
  TensorPtr gate = g.alloc(DType::BF16, {rows, streams});
  HCSP_LAUNCH(g.rt, hcsp_ple_gate, rows * streams, k.bf16(), q.bf16(), gate->bf16(), rows * streams, hidden, sqrtH);
  return {gate};
}

Outputs pleGatedValue(const Inputs& in, const GpuContext& g) {
  const std::string op = "pleGatedValue";
  const Tensor& value = input(in, 1, "value", op, DType::BF16);
  int64_t rows, hidden;
  dims2(value, "pleGatedValue value", rows, hidden);
  const double streamsAttr = numberOrNaN(g.attrs, "streams");
  const Tensor& gate = input(in, 0, "gate", op, DType::BF16);
  checkLength("gate", gate.numel(), static_cast<double>(rows) * streamsAttr);
  if (!(std::floor(streamsAttr) == streamsAttr && streamsAttr >= 0)) {
    fail(ErrorKind::Attr, "pleGatedValue: attr streams must be a non-negative integer, got " + js::json(g.attrs, "streams"));
  }
  const int64_t streams = static_cast<int64_t>(streamsAttr);
  TensorPtr y = g.alloc(DType::BF16, {rows, streams * hidden});
  HCSP_LAUNCH(g.rt, hcsp_ple_gated_value, rows * streams * hidden, gate.bf16(), value.bf16(), y->bf16(), rows, streams, hidden);
  return {y};
}

Outputs pleConvSilu(const Inputs& in, const GpuContext& g) {
  const std::string op = "pleConvSilu";
  const Tensor& gv = input(in, 1, "g", op, DType::BF16);
  int64_t rows, channels;
  dims2(gv, "pleConvSilu g", rows, channels);
  const Tensor& weight = input(in, 2, "weight", op, DType::BF16);
  if (weight.rank() != 3 || weight.dim(0) != channels || weight.dim(1) != 1) {
    fail(ErrorKind::Shape, "pleConvSilu: weight " + shapeStr(weight.shape()) + " is not [" + std::to_string(channels) + ", 1, K]");
  }
  const int64_t kernel = weight.dim(2);
  const Tensor& gNormed = input(in, 0, "gNormed", op, DType::BF16);
  checkLength("normed values", gNormed.numel(), static_cast<double>(rows * channels));
  const double dilationAttr = numberOrNaN(g.attrs, "dilation");
  if (!(std::floor(dilationAttr) == dilationAttr && dilationAttr >= 1)) {
    fail(ErrorKind::Attr, "ple: conv dilation " + js::text(g.attrs, "dilation") + " must be a positive integer");
  }
  const int64_t dilation = dilationAttr > 9.0e15 ? int64_t(9e15) : static_cast<int64_t>(dilationAttr);
  TensorPtr y = g.alloc(DType::BF16, {rows, channels});
  HCSP_LAUNCH(g.rt, hcsp_ple_conv_silu, rows * channels, gNormed.bf16(), gv.bf16(), weight.bf16(), y->bf16(), rows, channels, kernel, dilation);
  return {y};
}

}  // namespace

HCSP_GPU_OP(pleRms1pNorm, pleRms1pNorm);
HCSP_GPU_OP(pleGate, pleGate);
HCSP_GPU_OP(pleGatedValue, pleGatedValue);
HCSP_GPU_OP(pleConvSilu, pleConvSilu);

}  // namespace hcsp::gpu
