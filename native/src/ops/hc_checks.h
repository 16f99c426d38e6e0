// The hyper-connection ops' argument checks (reference/kernels/hcKernels.ts, hc/combineNorm.ts),
// shared by the host kernels (host/kernels/hc_kernels.cc) and the GPU launchers
// (gpu/ops/hc_ops.cc): each check* reads the attributes and the inputs' metadata (shape, dtype;
// never data) in the reference's order, fails with the reference's messages, and returns the
// validated geometry.
#pragma once
#include <cstdint>
#include <string>

#include "../host/kernels/kernel_args.h"

namespace hcsp::ops {

/** the rounding contract: 'atom' rounds once per stored value, 'hf' where HF's bf16 torch ops store */
enum class HcContract { Atom, Hf };

inline HcContract hcContract(const Attrs& attrs) {
  const std::string& v = attrs.string("contract");
  if (v == "atom") return HcContract::Atom;
  if (v == "hf") return HcContract::Hf;
  fail(ErrorKind::Attr, "HC contract must be 'atom' or 'hf', got '" + v + "'");
}

inline int64_t hcStreams(const Attrs& attrs) {
  const int64_t n = attrs.integer("streams");
  if (n < 1) fail(ErrorKind::Attr, attrs.op() + ": attribute 'streams' must be an integer >= 1, got " + std::to_string(n));
  return n;
}

struct HcGeometry {
  int64_t rows, n, h;
};

/** x must be [rows, n*H] (reference streamGeometry) */
inline HcGeometry hcStreamGeometry(const Tensor& x, int64_t n) {
  if (x.rank() != 2 || x.dim(1) % n != 0) {
    fail(ErrorKind::Shape, "HC op: x must be [rows, " + std::to_string(n) + "*H], got " + shapeStr(x.shape()));
  }
  return {x.dim(0), n, x.dim(1) / n};
}

/** `op: <what> has N values, expected RxC` unless t has rows * cols values */
inline void hcCheckValues(const char* op, const char* what, const Tensor& t, int64_t rows, int64_t cols) {
  if (t.numel() != rows * cols) {
    fail(ErrorKind::Shape,
         std::string(op) + ": " + what + " has " + std::to_string(t.numel()) + " values, expected " + std::to_string(rows) + "x" + std::to_string(cols));
  }
}

/** the pending combine's inputs: blockOut [rows, h] and raw [rows, n] */
inline void hcCheckPending(const char* op, const Tensor& blockOut, const Tensor& raw, const HcGeometry& g) {
  hcCheckValues(op, "blockOut", blockOut, g.rows, g.h);
  hcCheckValues(op, "raw", raw, g.rows, g.n);
}

struct HcExpandArgs {
  const Tensor& e;
  int64_t rows, n, h;
};

inline HcExpandArgs checkHcExpand(const Inputs& in, const Attrs& attrs) {
  const std::string op = "hcExpand";
  const Tensor& e = input(in, 0, "e", op, DType::BF16);
  requireRank(e, 2, "e", op);
  const int64_t n = hcStreams(attrs);
  return {e, e.dim(0), n, e.dim(1)};
}

struct HcCombineNormArgs {
  const Tensor& x;
  /** the pending combine's block output and raw mix, both or neither */
  const Tensor* blockOut;
  const Tensor* raw;
  const Tensor& w;
  int64_t rows, n, h, width;
  float epsF;
  HcContract contract;
};

inline HcCombineNormArgs checkHcCombineNorm(const Inputs& in, const Attrs& attrs) {
  const std::string op = "hcCombineNorm";
  const Tensor& xT = input(in, 0, "x", op, DType::BF16);
  const Tensor* blockOut = optionalInput(in, 1, "blockOut", op, DType::BF16);
  const Tensor* raw = optionalInput(in, 2, "raw", op, DType::BF16);
  const Tensor& w = input(in, 3, "normWeight", op, DType::BF16);
  const HcGeometry g = hcStreamGeometry(xT, hcStreams(attrs));
  const double eps = attrs.number("eps");
  const HcContract contract = hcContract(attrs);
  const int64_t rows = g.rows, n = g.n, h = g.h, width = n * h;
  if ((blockOut == nullptr) != (raw == nullptr)) fail(ErrorKind::Shape, "hcCombineNorm: blockOut and raw come together (the pending combine) or not at all");
  if (blockOut) hcCheckPending("hcCombineNorm", *blockOut, *raw, g);
  if (w.numel() != width) fail(ErrorKind::Shape, "hcCombineNorm: norm weight has " + std::to_string(w.numel()) + " values, expected " + std::to_string(width));
  return {xT, blockOut, raw, w, rows, n, h, width, static_cast<float>(eps), contract};
}

struct HcScaledSiluArgs {
  const Tensor& d;
  /** d's rows and width (lowRank + n for the mix, lowRank for the mixer) */
  int64_t rows, width, lowRank, n;
};

inline HcScaledSiluArgs checkHcScaledSilu(const Inputs& in, const Attrs& attrs) {
  const std::string op = "hcScaledSilu";
  const Tensor& d = input(in, 0, "d", op, DType::BF16);
  requireRank(d, 2, "d", op);
  const int64_t n = hcStreams(attrs);
  const int64_t lowRank = attrs.integer("lowRank");
  const int64_t rows = d.dim(0), width = d.dim(1);
  if (lowRank < 1 || (width != lowRank + n && width != lowRank)) {
    fail(ErrorKind::Shape, "hcScaledSilu: d rows must be " + std::to_string(lowRank + n) + " (mix) or " + std::to_string(lowRank) + " (mixer) wide, got " +
                               std::to_string(d.numel()) + " values for " + std::to_string(rows) + " rows");
  }
  return {d, rows, width, lowRank, n};
}

struct HcGatedMeanArgs {
  const Tensor &up, &normed;
  int64_t rows, n, h, width;
  HcContract contract;
};

inline HcGatedMeanArgs checkHcGatedMean(const Inputs& in, const Attrs& attrs) {
  const std::string op = "hcGatedMean";
  const auto [up, normed] = inputs(in, op, {{"up", DType::BF16}, {"normed", DType::BF16}});
  const HcGeometry g = hcStreamGeometry(normed, hcStreams(attrs));
  const HcContract contract = hcContract(attrs);
  const int64_t rows = g.rows, n = g.n, h = g.h, width = n * h;
  hcCheckValues("hcGatedMean", "up", up, rows, width);
  return {up, normed, rows, n, h, width, contract};
}

struct HcCombineArgs {
  const Tensor &x, &blockOut, &raw;
  int64_t rows, n, h, width;
  HcContract contract;
};

inline HcCombineArgs checkHcCombine(const Inputs& in, const Attrs& attrs) {
  const std::string op = "hcCombine";
  const auto [xT, blockOut, raw] = inputs(in, op, {{"x", DType::BF16}, {"blockOut", DType::BF16}, {"raw", DType::BF16}});
  const HcGeometry g = hcStreamGeometry(xT, hcStreams(attrs));
  const HcContract contract = hcContract(attrs);
  const int64_t rows = g.rows, n = g.n, h = g.h, width = n * h;
  hcCheckPending("hcCombine", blockOut, raw, g);
  return {xT, blockOut, raw, rows, n, h, width, contract};
}

}  // namespace hcsp::ops
