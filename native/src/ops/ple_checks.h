// The PLE device ops' argument checks (reference/kernels/pleKernels.ts with layers/ple/pleMath.ts),
// shared by the host kernels (host/kernels/ple_kernels.cc) and the GPU launchers
// (gpu/ops/ple_ops.cc): each check* reads the attributes and the inputs' metadata (shape, dtype;
// never data) in the reference's order, fails with the reference's messages, and returns the
// validated geometry.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>

#include "../host/kernels/js_text.h"
#include "../host/kernels/kernel_args.h"

namespace hcsp::ops {

/** dims2 of kernelArgs.ts: [rows, cols] of a 2-D tensor; `what` names the op and the port */
inline void pleDims2(const Tensor& t, const std::string& what, int64_t& rows, int64_t& cols) {
  if (t.rank() != 2) fail(ErrorKind::Shape, what + ": expected a 2-D tensor, got " + shapeStr(t.shape()));
  rows = t.dim(0);
  cols = t.dim(1);
}

/** divide of pleKernels.ts: width / attrs[name], which must split width into whole groups */
inline int64_t pleDivide(int64_t width, const Attrs& attrs, const std::string& name, const std::string& what) {
  if (js::isInteger(attrs, name)) {
    const double parts = attrs.number(name);
    if (parts >= 1 && std::fmod(static_cast<double>(width), parts) == 0) return width / static_cast<int64_t>(parts);
  }
  fail(ErrorKind::Shape, what + ": width " + std::to_string(width) + " is not divisible into " + js::text(attrs, name) + " groups");
}

/** checkLength of pleMath.ts */
inline void pleCheckLength(const char* what, int64_t length, double expected) {
  if (static_cast<double>(length) != expected) {
    fail(ErrorKind::Shape, std::string("ple: ") + what + " has " + std::to_string(length) + " values, expected " + js::number(expected));
  }
}

/** attrs[name] as the JavaScript number arithmetic would see it (NaN unless a finite number) */
inline double pleNumberOrNaN(const Attrs& attrs, const std::string& name) {
  const js::AttrProbe p = js::probe(attrs, name);
  return p.kind == js::AttrProbe::Kind::Number ? p.number : std::nan("");
}

struct PleNormArgs {
  const Tensor& x;
  const Tensor& weight;
  int64_t rows, width, groupSize, groups;
  float epsF;
};

inline PleNormArgs checkPleRms1pNorm(const Inputs& in, const Attrs& attrs) {
  const std::string op = "pleRms1pNorm";
  const Tensor& x = input(in, 0, "x", op, DType::BF16);
  int64_t rows, width;
  pleDims2(x, "pleRms1pNorm x", rows, width);
  const int64_t groupSize = pleDivide(width, attrs, "groups", op);
  // (a zero width has no groups)
  const int64_t groups = groupSize > 0 ? width / groupSize : 0;
  const Tensor& weight = input(in, 1, "weight", op, DType::BF16);
  pleCheckLength("norm weight", weight.numel(), static_cast<double>(width));
  const float epsF = static_cast<float>(attrs.number("eps"));
  return {x, weight, rows, width, groupSize, groups, epsF};
}

struct PleGateArgs {
  const Tensor& k;
  const Tensor& q;
  int64_t rows, width, hidden, streams;
};

inline PleGateArgs checkPleGate(const Inputs& in, const Attrs& attrs) {
  const std::string op = "pleGate";
  const Tensor& k = input(in, 0, "k", op, DType::BF16);
  int64_t rows, width;
  pleDims2(k, "pleGate k", rows, width);
  const int64_t hidden = pleDivide(width, attrs, "streams", op);
  // a zero width: the attribute's streams, as the reference (each gate then sigmoid(0))
  const int64_t streams = hidden > 0 ? width / hidden : static_cast<int64_t>(attrs.number("streams"));
  const Tensor& q = input(in, 1, "q", op, DType::BF16);
  pleCheckLength("normed queries", q.numel(), static_cast<double>(rows * streams * hidden));
  return {k, q, rows, width, hidden, streams};
}

struct PleGatedValueArgs {
  const Tensor& gate;
  const Tensor& value;
  int64_t rows, hidden, streams;
};

inline PleGatedValueArgs checkPleGatedValue(const Inputs& in, const Attrs& attrs) {
  const std::string op = "pleGatedValue";
  const Tensor& value = input(in, 1, "value", op, DType::BF16);
  int64_t rows, hidden;
  pleDims2(value, "pleGatedValue value", rows, hidden);
  const double streamsAttr = pleNumberOrNaN(attrs, "streams");
  const Tensor& gate = input(in, 0, "gate", op, DType::BF16);
  pleCheckLength("gate", gate.numel(), static_cast<double>(rows) * streamsAttr);
  if (!(std::floor(streamsAttr) == streamsAttr && streamsAttr >= 0)) {
    fail(ErrorKind::Attr, "pleGatedValue: attr streams must be a non-negative integer, got " + js::json(attrs, "streams"));
  }
  return {gate, value, rows, hidden, static_cast<int64_t>(streamsAttr)};
}

struct PleConvArgs {
  const Tensor& gNormed;
  const Tensor& g;
  const Tensor& weight;
  int64_t rows, channels, kernel, dilation;
};

inline PleConvArgs checkPleConvSilu(const Inputs& in, const Attrs& attrs) {
  const std::string op = "pleConvSilu";
  const Tensor& g = input(in, 1, "g", op, DType::BF16);
  int64_t rows, channels;
  pleDims2(g, "pleConvSilu g", rows, channels);
  const Tensor& weight = input(in, 2, "weight", op, DType::BF16);
  if (weight.rank() != 3 || weight.dim(0) != channels || weight.dim(1) != 1) {
    fail(ErrorKind::Shape, "pleConvSilu: weight " + shapeStr(weight.shape()) + " is not [" + std::to_string(channels) + ", 1, K]");
  }
  const int64_t kernel = weight.dim(2);
  const Tensor& gNormed = input(in, 0, "gNormed", op, DType::BF16);
  pleCheckLength("normed values", gNormed.numel(), static_cast<double>(rows * channels));
  const double dilationAttr = pleNumberOrNaN(attrs, "dilation");
  if (!(std::floor(dilationAttr) == dilationAttr && dilationAttr >= 1)) {
    fail(ErrorKind::Attr, "ple: conv dilation " + js::text(attrs, "dilation") + " must be a positive integer");
  }
  const int64_t dilation = dilationAttr > 9.0e15 ? int64_t(9e15) : static_cast<int64_t>(dilationAttr);
  return {gNormed, g, weight, rows, channels, kernel, dilation};
}

}  // namespace hcsp::ops
