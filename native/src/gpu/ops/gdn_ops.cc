// Launchers of the GatedDeltaNet ops on the GPU devices, with the host kernels' checks and
// messages (host/kernels/gdn_kernels.cc); the arithmetic is in kernels/gdn.cu.
#include <string>

#include "../../host/kernels/kernel_args.h"
#include "../gpu_op_registry.h"
#include "../kernels/gdn.h"

namespace hcsp::gpu {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

/** gdnMath's checkLength: `gdn: <what> has N values, expected M` */
void checkLength(const char* what, int64_t n, int64_t expected) {
  if (n != expected) fail(ErrorKind::Shape, std::string("gdn: ") + what + " has " + str(n) + " values, expected " + str(expected));
}

Outputs gdnConvSilu(const Inputs& in, const GpuContext& g) {
  const std::string op = "gdnConvSilu";
  const Tensor& x = input(in, 0, "x", op, DType::BF16);
  const Tensor& w = input(in, 1, "w", op, DType::BF16);
  const int64_t kernel = g.attrs.integer("kernel");
  if (w.rank() != 3 || w.dim(1) != 1 || w.dim(2) != kernel) {
    fail(ErrorKind::Shape, op + ": weight is " + shapeStr(w.shape()) + ", expected [C,1," + str(kernel) + "]");
  }
  const int64_t channels = w.dim(0);
  const int64_t T = rows2d(x, "x", op, channels);
  checkLength("conv weight", w.numel(), channels * kernel);
  TensorPtr y = g.alloc(DType::BF16, {T, channels});
  HCSP_LAUNCH(g.rt, hcsp_gdn_conv_silu, T * channels, x.bf16(), w.bf16(), y->bf16(), T, channels, kernel);
  return {y};
}

Outputs gdnGates(const Inputs& in, const GpuContext& g) {
  const std::string op = "gdnGates";
  const Tensor& b = input(in, 0, "b", op, DType::BF16);
  const Tensor& a = input(in, 1, "a", op, DType::BF16);
  const Tensor& aLog = input(in, 2, "aLog", op, DType::BF16);
  const Tensor& dtBias = input(in, 3, "dtBias", op, DType::BF16);
  const int64_t heads = aLog.numel();
  const int64_t T = rows2d(b, "b", op, heads);
  rows2d(a, "a", op, heads);
  checkLength("b", b.numel(), T * heads);
  checkLength("a", a.numel(), T * heads);
  checkLength("A_log", aLog.numel(), heads);
  checkLength("dt_bias", dtBias.numel(), heads);
  TensorPtr gt = g.alloc(DType::F32, {T, heads});
  TensorPtr beta = g.alloc(DType::BF16, {T, heads});
  HCSP_LAUNCH(g.rt, hcsp_gdn_gates, T * heads, b.bf16(), a.bf16(), aLog.bf16(), dtBias.bf16(), gt->data<float>(), beta->bf16(), T * heads, heads);
  return {gt, beta};
}

Outputs gdnRecurrence(const Inputs& in, const GpuContext& g) {
  const std::string op = "gdnRecurrence";
  const int64_t keyHeads = g.attrs.integer("keyHeads");
  const int64_t valueHeads = g.attrs.integer("valueHeads");
  const int64_t dk = g.attrs.integer("keyDim");
  const int64_t dv = g.attrs.integer("valueDim");
  const Tensor& qkv = input(in, 0, "qkv", op, DType::BF16);
  const Tensor& gate = input(in, 1, "g", op, DType::F32);
  const Tensor& beta = input(in, 2, "beta", op, DType::BF16);
  const int64_t channels = 2 * keyHeads * dk + valueHeads * dv;
  const int64_t T = rows2d(qkv, "qkv", op, channels);
  rows2d(gate, "g", op, valueHeads);
  rows2d(beta, "beta", op, valueHeads);
  const double scale = g.attrs.number("scale");
  const double eps = g.attrs.number("l2Eps");
  if (keyHeads <= 0 || valueHeads % keyHeads != 0) {
    fail(ErrorKind::Shape, "gdn: value heads " + str(valueHeads) + " are not a multiple of key heads " + str(keyHeads));
  }
  checkLength("qkv", qkv.numel(), T * channels);
  checkLength("g", gate.numel(), T * valueHeads);
  checkLength("beta", beta.numel(), T * valueHeads);
  const int64_t kOff = keyHeads * dk;
  // scratch: the normalized q and k of every token (as the reference computes them at the
  // start of each token's step) and the fp32 state, one column per recurrence thread
  TensorPtr qn = g.alloc(DType::F32, {T, kOff});
  TensorPtr kn = g.alloc(DType::F32, {T, kOff});
  TensorPtr state = g.alloc(DType::F32, {valueHeads, dk, dv});
  TensorPtr o = g.alloc(DType::BF16, {T, valueHeads * dv});
  HCSP_LAUNCH(g.rt, hcsp_gdn_l2norm, T * keyHeads, qkv.bf16(), qn->data<float>(), kn->data<float>(), T, channels, keyHeads, dk, static_cast<float>(eps),
              static_cast<float>(scale));
  HCSP_LAUNCH(g.rt, hcsp_gdn_recurrence, valueHeads * dv, qkv.bf16(), qn->data<float>(), kn->data<float>(), gate.data<float>(), beta.bf16(),
              state->data<float>(), o->bf16(), T, channels, keyHeads, valueHeads, dk, dv);
  return {o};
}

Outputs gdnGatedNorm(const Inputs& in, const GpuContext& g) {
  const std::string op = "gdnGatedNorm";
  const int64_t heads = g.attrs.integer("heads");
  const int64_t headDim = g.attrs.integer("headDim");
  const Tensor& o = input(in, 0, "o", op, DType::BF16);
  const Tensor& z = input(in, 1, "z", op, DType::BF16);
  const Tensor& w = input(in, 2, "w", op, DType::BF16);
  const int64_t T = rows2d(o, "o", op, heads * headDim);
  rows2d(z, "z", op, heads * headDim);
  const double eps = g.attrs.number("eps");
  const int64_t n = T * heads * headDim;
  checkLength("o", o.numel(), n);
  checkLength("z", z.numel(), n);
  checkLength("norm weight", w.numel(), headDim);
  TensorPtr y = g.alloc(DType::BF16, {T, heads * headDim});
  if (headDim <= 0) return {y};
  TensorPtr rstd = g.alloc(DType::F32, {T * heads});
  HCSP_LAUNCH(g.rt, hcsp_gdn_norm_rstd, T * heads, o.bf16(), rstd->data<float>(), T * heads, headDim, static_cast<float>(eps));
  HCSP_LAUNCH(g.rt, hcsp_gdn_gated_norm, n, o.bf16(), z.bf16(), w.bf16(), rstd->data<float>(), y->bf16(), n, headDim);
  return {y};
}

}  // namespace

HCSP_GPU_OP(gdnConvSilu, gdnConvSilu);
HCSP_GPU_OP(gdnGates, gdnGates);
HCSP_GPU_OP(gdnRecurrence, gdnRecurrence);
HCSP_GPU_OP(gdnGatedNorm, gdnGatedNorm);

}  // namespace hcsp::gpu
