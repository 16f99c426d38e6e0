// The GatedDeltaNet ops' argument checks (reference/kernels/gdnKernels.ts with
// layers/gdn/gdnMath.ts), shared by the host kernels (host/kernels/gdn_kernels.cc) and the GPU
// launchers (gpu/ops/gdn_ops.cc): each check* reads the attributes and the inputs' metadata
// (shape, dtype; never data) in the reference's order, fails with the reference's messages, and
// returns the validated geometry.
#pragma once
#include <cstdint>
#include <string>

#include "../host/kernels/kernel_args.h"

namespace hcsp::ops {

struct GdnConvArgs {
  const Tensor &x, &w;
  int64_t T, channels, kernel;
  /** the 'hf-eager' contract: the conv sum rounded to bf16 before the SiLU (absent: false) */
  bool roundConv;
};

inline GdnConvArgs checkGdnConvSilu(const Inputs& in, const Attrs& attrs) {
  const std::string op = "gdnConvSilu";
  const auto [x, w] = inputs(in, op, {{"x", DType::BF16}, {"w", DType::BF16}});
  const int64_t kernel = attrs.integer("kernel");
  if (w.rank() != 3 || w.dim(1) != 1 || w.dim(2) != kernel) {
    fail(ErrorKind::Shape, op + ": weight is " + shapeStr(w.shape()) + ", expected [C,1," + std::to_string(kernel) + "]");
  }
  const int64_t channels = w.dim(0);
  const int64_t T = rows2d(x, "x", op, channels);
  checkLengths("gdn", {{"conv weight", w.numel(), channels * kernel}});
  return {x, w, T, channels, kernel, attrs.boolean("roundConv", false)};
}

struct GdnGatesArgs {
  const Tensor &b, &a, &aLog, &dtBias;
  int64_t T, heads;
};

inline GdnGatesArgs checkGdnGates(const Inputs& in, const Attrs&) {
  const std::string op = "gdnGates";
  const auto [b, a, aLog, dtBias] = inputs(in, op, {{"b", DType::BF16}, {"a", DType::BF16}, {"aLog", DType::BF16}, {"dtBias", DType::BF16}});
  const int64_t heads = aLog.numel();
  const int64_t T = rows2d(b, "b", op, heads);
  rows2d(a, "a", op, heads);
  checkLengths("gdn", {{"b", b.numel(), T * heads}, {"a", a.numel(), T * heads}, {"A_log", aLog.numel(), heads}, {"dt_bias", dtBias.numel(), heads}});
  return {b, a, aLog, dtBias, T, heads};
}

struct GdnRecurrenceArgs {
  const Tensor &qkv, &g, &beta;
  /** qkv's channels: [q | k | v] = 2 * keyHeads * dk + valueHeads * dv */
  int64_t T, keyHeads, valueHeads, dk, dv, channels;
  float scaleF, epsF;
};

inline GdnRecurrenceArgs checkGdnRecurrence(const Inputs& in, const Attrs& attrs) {
  const std::string op = "gdnRecurrence";
  const auto [keyHeads, valueHeads, dk, dv] = integers(attrs, {"keyHeads", "valueHeads", "keyDim", "valueDim"});
  const auto [qkv, g, beta] = inputs(in, op, {{"qkv", DType::BF16}, {"g", DType::F32}, {"beta", DType::BF16}});
  const int64_t channels = 2 * keyHeads * dk + valueHeads * dv;
  const int64_t T = rows2d(qkv, "qkv", op, channels);
  rows2d(g, "g", op, valueHeads);
  rows2d(beta, "beta", op, valueHeads);
  const double scale = attrs.number("scale");
  const double eps = attrs.number("l2Eps");
  if (keyHeads <= 0 || valueHeads % keyHeads != 0) {
    fail(ErrorKind::Shape, "gdn: value heads " + std::to_string(valueHeads) + " are not a multiple of key heads " + std::to_string(keyHeads));
  }
  checkLengths("gdn", {{"qkv", qkv.numel(), T * channels}, {"g", g.numel(), T * valueHeads}, {"beta", beta.numel(), T * valueHeads}});
  return {qkv, g, beta, T, keyHeads, valueHeads, dk, dv, channels, static_cast<float>(scale), static_cast<float>(eps)};
}

struct GdnGatedNormArgs {
  const Tensor &o, &z, &w;
  /** n = T * heads * headDim values */
  int64_t T, heads, headDim, n;
  float epsF;
};

inline GdnGatedNormArgs checkGdnGatedNorm(const Inputs& in, const Attrs& attrs) {
  const std::string op = "gdnGatedNorm";
  const auto [heads, headDim] = integers(attrs, {"heads", "headDim"});
  const auto [o, z, w] = inputs(in, op, {{"o", DType::BF16}, {"z", DType::BF16}, {"w", DType::BF16}});
  const int64_t T = rows2d(o, "o", op, heads * headDim);
  rows2d(z, "z", op, heads * headDim);
  const double eps = attrs.number("eps");
  const int64_t n = T * heads * headDim;
  checkLengths("gdn", {{"o", o.numel(), n}, {"z", z.numel(), n}, {"norm weight", w.numel(), headDim}});
  return {o, z, w, T, heads, headDim, n, static_cast<float>(eps)};
}

}  // namespace hcsp::ops
