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

/** gdnMath's checkLength: `gdn: <what> has N values, expected M` */
inline void gdnCheckLength(const char* what, int64_t n, int64_t expected) {
  if (n != expected) fail(ErrorKind::Shape, std::string("gdn: ") + what + " has " + std::to_string(n) + " values, expected " + std::to_string(expected));
}

struct GdnConvArgs {
  const Tensor& x;
  const Tensor& w;
  int64_t T, channels, kernel;
  /** the 'hf-eager' contract: the conv sum rounded to bf16 before the SiLU (absent: false) */
  bool roundConv;
};

inline GdnConvArgs checkGdnConvSilu(const Inputs& in, const Attrs& attrs) {
  const std::string op = "gdnConvSilu";
  const Tensor& x = input(in, 0, "x", op, DType::BF16);
  const Tensor& w = input(in, 1, "w", op, DType::BF16);
  const int64_t kernel = attrs.integer("kernel");
  if (w.rank() != 3 || w.dim(1) != 1 || w.dim(2) != kernel) {
    fail(ErrorKind::Shape, op + ": weight is " + shapeStr(w.shape()) + ", expected [C,1," + std::to_string(kernel) + "]");
  }
  const int64_t channels = w.dim(0);
  const int64_t T = rows2d(x, "x", op, channels);
  gdnCheckLength("conv weight", w.numel(), channels * kernel);
  return {x, w, T, channels, kernel, attrs.boolean("roundConv", false)};
}

struct GdnGatesArgs {
  const Tensor& b;
  const Tensor& a;
  const Tensor& aLog;
  const Tensor& dtBias;
  int64_t T, heads;
};

inline GdnGatesArgs checkGdnGates(const Inputs& in, const Attrs&) {
  const std::string op = "gdnGates";
  const Tensor& b = input(in, 0, "b", op, DType::BF16);
  const Tensor& a = input(in, 1, "a", op, DType::BF16);
  const Tensor& aLog = input(in, 2, "aLog", op, DType::BF16);
  const Tensor& dtBias = input(in, 3, "dtBias", op, DType::BF16);
  const int64_t heads = aLog.numel();
  const int64_t T = rows2d(b, "b", op, heads);
  rows2d(a, "a", op, heads);
  gdnCheckLength("b", b.numel(), T * heads);
  gdnCheckLength("a", a.numel(), T * heads);
  gdnCheckLength("A_log", aLog.numel(), heads);
  gdnCheckLength("dt_bias", dtBias.numel(), heads);
  return {b, a, aLog, dtBias, T, heads};
}

struct GdnRecurrenceArgs {
  const Tensor& qkv;
  const Tensor& g;
  const Tensor& beta;
  /** qkv's channels: [q | k | v] = 2 * keyHeads * dk + valueHeads * dv */
  int64_t T, keyHeads, valueHeads, dk, dv, channels;
  float scaleF, epsF;
};

inline GdnRecurrenceArgs checkGdnRecurrence(const Inputs& in, const Attrs& attrs) {
  const std::string op = "gdnRecurrence";
  const int64_t keyHeads = attrs.integer("keyHeads");
  const int64_t valueHeads = attrs.integer("valueHeads");
  const int64_t dk = attrs.integer("keyDim");
  const int64_t dv = attrs.integer("valueDim");
  const Tensor& qkv = input(in, 0, "qkv", op, DType::BF16);
  const Tensor& g = input(in, 1, "g", op, DType::F32);
  const Tensor& beta = input(in, 2, "beta", op, DType::BF16);
  const int64_t channels = 2 * keyHeads * dk + valueHeads * dv;
  const int64_t T = rows2d(qkv, "qkv", op, channels);
  rows2d(g, "g", op, valueHeads);
  rows2d(beta, "beta", op, valueHeads);
  const double scale = attrs.number("scale");
  const double eps = attrs.number("l2Eps");
  if (keyHeads <= 0 || valueHeads % keyHeads != 0) {
    fail(ErrorKind::Shape, "gdn: value heads " + std::to_string(valueHeads) + " are not a multiple of key heads " + std::to_string(keyHeads));
  }
  gdnCheckLength("qkv", qkv.numel(), T * channels);
  gdnCheckLength("g", g.numel(), T * valueHeads);
  gdnCheckLength("beta", beta.numel(), T * valueHeads);
  return {qkv, g, beta, T, keyHeads, valueHeads, dk, dv, channels, static_cast<float>(scale), static_cast<float>(eps)};
}

struct GdnGatedNormArgs {
  const Tensor& o;
  const Tensor& z;
  const Tensor& w;
  /** n = T * heads * headDim values */
  int64_t T, heads, headDim, n;
  float epsF;
};

inline GdnGatedNormArgs checkGdnGatedNorm(const Inputs& in, const Attrs& attrs) {
  const std::string op = "gdnGatedNorm";
  const int64_t heads = attrs.integer("heads");
  const int64_t headDim = attrs.integer("headDim");
  const Tensor& o = input(in, 0, "o", op, DType::BF16);
  const Tensor& z = input(in, 1, "z", op, DType::BF16);
  const Tensor& w = input(in, 2, "w", op, DType::BF16);
  const int64_t T = rows2d(o, "o", op, heads * headDim);
  rows2d(z, "z", op, heads * headDim);
  const double eps = attrs.number("eps");
  const int64_t n = T * heads * headDim;
  gdnCheckLength("o", o.numel(), n);
  gdnCheckLength("z", z.numel(), n);
  gdnCheckLength("norm weight", w.numel(), headDim);
  return {o, z, w, T, heads, headDim, n, static_cast<float>(eps)};
}

}  // namespace hcsp::ops
