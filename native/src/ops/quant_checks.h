// The FP8 PTPC quantization ops' argument checks (reference/kernels/quantKernels.ts), shared by
// the host kernels (host/kernels/quant_kernels.cc) and the GPU launchers (gpu/ops/quant_ops.cc):
// each check* reads the attributes and the inputs' metadata (shape, dtype; never data) in the
// reference's order, fails with the reference's messages, and returns the validated geometry.
#pragma once
#include <cstdint>
#include <string>

#include "../host/kernels/kernel_args.h"
#include "../host/fp8_format.h"

namespace hcsp::ops {

/** the scale rule: 'divide' fl(amax / max), 'reciprocal' fl(amax * fl(1 / max)) */
enum class QuantStyle { Divide, Reciprocal };

inline QuantStyle quantStyle(const std::string& op, const Attrs& attrs) {
  const std::string style = attrs.has("style") ? attrs.string("style") : "undefined";
  if (style == "divide") return QuantStyle::Divide;
  if (style == "reciprocal") return QuantStyle::Reciprocal;
  fail(ErrorKind::Attr, op + ": style must be 'divide' or 'reciprocal', got '" + style + "'");
}

inline const Fp8Format& quantFormat(const Attrs& attrs) { return fp8Format(attrs.has("format") ? attrs.string("format") : "undefined"); }

/** a present 2-D bf16 input (reference bf16Matrix) */
inline const Tensor& quantBf16Matrix(const Inputs& in, size_t i, const std::string& what) {
  if (i >= in.size() || !in[i]) fail(ErrorKind::Shape, what + " is missing");
  const Tensor& t = *in[i];
  if (t.dtype() != DType::BF16 || t.rank() != 2) {
    fail(t.dtype() != DType::BF16 ? ErrorKind::DType : ErrorKind::Shape,
         what + " must be a 2-D bf16 tensor, got " + dtypeName(t.dtype()) + " " + shapeStr(t.shape()));
  }
  return t;
}

inline void quantCheckCols(const std::string& what, int64_t cols) {
  if (cols < 1) fail(ErrorKind::Shape, what + ": cols " + std::to_string(cols) + " must be an integer >= 1");
}

struct QuantRowsArgs {
  const Tensor& x;
  const Fp8Format& f;
  QuantStyle style;
  int64_t rows, cols;
};

inline QuantRowsArgs checkQuantFp8PerToken(const Inputs& in, const Attrs& attrs) {
  const std::string op = "quantFp8PerToken";
  const Fp8Format& f = quantFormat(attrs);
  const QuantStyle style = quantStyle(op, attrs);
  const Tensor& x = quantBf16Matrix(in, 0, "quantFp8PerToken x");
  quantCheckCols("quantizeBf16RowsFp8", x.dim(1));
  return {x, f, style, x.dim(0), x.dim(1)};
}

/** the weights' per-channel scales: always 'reciprocal' */
inline QuantRowsArgs checkFp8QuantWeightPerChannel(const Inputs& in, const Attrs& attrs) {
  const Fp8Format& f = quantFormat(attrs);
  const Tensor& w = quantBf16Matrix(in, 0, "fp8QuantWeightPerChannel w");
  quantCheckCols("quantizeBf16RowsFp8", w.dim(1));
  return {w, f, QuantStyle::Reciprocal, w.dim(0), w.dim(1)};
}

struct GatedMeanQuantArgs {
  const Tensor &up, &normed;
  const Fp8Format& f;
  QuantStyle style;
  /** normed is [rows, width = n * h] */
  int64_t rows, width, n, h;
};

inline GatedMeanQuantArgs checkHcGatedMeanQuant(const Inputs& in, const Attrs& attrs) {
  const std::string op = "hcGatedMeanQuant";
  const Fp8Format& f = quantFormat(attrs);
  const QuantStyle style = quantStyle(op, attrs);
  const Tensor& up = quantBf16Matrix(in, 0, "hcGatedMeanQuant up");
  const Tensor& normed = quantBf16Matrix(in, 1, "hcGatedMeanQuant normed");
  const int64_t rows = normed.dim(0), width = normed.dim(1);
  const int64_t n = attrs.has("streams") ? attrs.integer("streams") : 0;
  if (n < 1 || width % n != 0) {
    fail(ErrorKind::Attr,
         "hcGatedMeanQuant: streams " + std::to_string(n) + " must be an integer >= 1 dividing normed's " + std::to_string(width) + " columns");
  }
  if (up.dim(0) != rows || up.dim(1) != width) {
    fail(ErrorKind::Shape, "hcGatedMeanQuant: up " + shapeStr(up.shape()) + " and normed " + shapeStr(normed.shape()) + " differ");
  }
  const int64_t h = width / n;
  quantCheckCols("quantizeFusedRowsFp8", h);
  return {up, normed, f, style, rows, width, n, h};
}

}  // namespace hcsp::ops
