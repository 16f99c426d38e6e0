// Launchers of the hyper-connection ops on the GPU devices, with the host kernels' checks and
// messages (host/kernels/hc_kernels.cc, as reference/kernels/hcKernels.ts and hc/combineNorm.ts).
// The combine's inject scales (one per row and stream) and the norm's rstd (one per row and
// stream) go through f32 scratch tensors in the GPU's memory.
#include <string>

#include "../../host/kernels/kernel_args.h"
#include "../gpu_op_registry.h"
#include "../kernels/hc.h"

namespace hcsp::gpu {
namespace {

/** 1 for 'hf', 0 for 'atom' */
int32_t parseContract(const GpuContext& g) {
  const std::string& v = g.attrs.string("contract");
  if (v == "atom") return 0;
  if (v == "hf") return 1;
  fail(ErrorKind::Attr, "HC contract must be 'atom' or 'hf', got '" + v + "'");
}

int64_t streamsAttr(const GpuContext& g) {
  const int64_t n = g.attrs.integer("streams");
  if (n < 1) fail(ErrorKind::Attr, g.attrs.op() + ": attribute 'streams' must be an integer >= 1, got " + std::to_string(n));
  return n;
}

struct Geometry {
  int64_t rows, n, h;
};

/** x must be [rows, n*H] (reference streamGeometry) */
Geometry streamGeometry(const Tensor& x, int64_t n) {
  if (x.rank() != 2 || x.dim(1) % n != 0) {
    fail(ErrorKind::Shape, "HC op: x must be [rows, " + std::to_string(n) + "*H], got " + shapeStr(x.shape()));
  }
  return {x.dim(0), n, x.dim(1) / n};
}

/** the inject scales of raw [rows, n], in a scratch tensor */
TensorPtr injectScales(const Tensor& raw, int64_t count, int64_t n, int32_t hf, const GpuContext& g) {
  TensorPtr inj = g.alloc(DType::F32, {count});
  HCSP_LAUNCH(g.rt, hcsp_hc_inject_scales, count, raw.bf16(), inj->data<float>(), count, n, hf);
  return inj;
}

Outputs hcExpand(const Inputs& in, const GpuContext& g) {
  const std::string op = "hcExpand";
  const Tensor& e = input(in, 0, "e", op, DType::BF16);
  requireRank(e, 2, "e", op);
  const int64_t n = streamsAttr(g);
  const int64_t rows = e.dim(0), h = e.dim(1);
  TensorPtr x = g.alloc(DType::BF16, {rows, n * h});
  HCSP_LAUNCH(g.rt, hcsp_hc_expand, rows * n * h, e.bf16(), x->bf16(), rows, n, h);
  return {x};
}

Outputs hcCombineNorm(const Inputs& in, const GpuContext& g) {
  const std::string op = "hcCombineNorm";
  const Tensor& xT = input(in, 0, "x", op, DType::BF16);
  const Tensor* blockOut = optionalInput(in, 1, "blockOut", op, DType::BF16);
  const Tensor* raw = optionalInput(in, 2, "raw", op, DType::BF16);
  const Tensor& w = input(in, 3, "normWeight", op, DType::BF16);
  const Geometry geo = streamGeometry(xT, streamsAttr(g));
  const double eps = g.attrs.number("eps");
  const int32_t hf = parseContract(g);
  const int64_t rows = geo.rows, n = geo.n, h = geo.h, width = n * h;
  if ((blockOut == nullptr) != (raw == nullptr)) fail(ErrorKind::Shape, "hcCombineNorm: blockOut and raw come together (the pending combine) or not at all");
  if (blockOut && blockOut->numel() != rows * h) {
    fail(ErrorKind::Shape, "hcCombineNorm: blockOut has " + std::to_string(blockOut->numel()) + " values, expected " + std::to_string(rows) + "x" + std::to_string(h));
  }
  if (raw && raw->numel() != rows * n) {
    fail(ErrorKind::Shape, "hcCombineNorm: raw has " + std::to_string(raw->numel()) + " values, expected " + std::to_string(rows) + "x" + std::to_string(n));
  }
  if (w.numel() != width) fail(ErrorKind::Shape, "hcCombineNorm: norm weight has " + std::to_string(w.numel()) + " values, expected " + std::to_string(width));

  TensorPtr xOut = g.alloc(DType::BF16, xT.shape());
  TensorPtr normed = g.alloc(DType::BF16, xT.shape());
  const int64_t count = rows * width, pairs = rows * n;
  if (blockOut) {
    TensorPtr inj = injectScales(*raw, pairs, n, hf, g);
    HCSP_LAUNCH(g.rt, hcsp_hc_combine, count, xT.bf16(), blockOut->bf16(), inj->data<float>(), xOut->bf16(), rows, n, h, hf);
  } else {
    HCSP_LAUNCH(g.rt, hcsp_hc_copy_bf16, count, xT.bf16(), xOut->bf16(), count);
  }
  TensorPtr rstd = g.alloc(DType::F32, {pairs});
  HCSP_LAUNCH(g.rt, hcsp_hc_norm_rstd, pairs, xOut->bf16(), rstd->data<float>(), pairs, h, static_cast<float>(eps));
  HCSP_LAUNCH(g.rt, hcsp_hc_norm_apply, count, xOut->bf16(), rstd->data<float>(), w.bf16(), normed->bf16(), count, width, h);
  return {xOut, normed};
}

Outputs hcScaledSilu(const Inputs& in, const GpuContext& g) {
  const std::string op = "hcScaledSilu";
  const Tensor& d = input(in, 0, "d", op, DType::BF16);
  requireRank(d, 2, "d", op);
  const int64_t n = streamsAttr(g);
  const int64_t lowRank = g.attrs.integer("lowRank");
  const int64_t rows = d.dim(0), width = d.dim(1);
  if (lowRank < 1 || (width != lowRank + n && width != lowRank)) {
    fail(ErrorKind::Shape, "hcScaledSilu: d rows must be " + std::to_string(lowRank + n) + " (mix) or " + std::to_string(lowRank) + " (mixer) wide, got " +
                               std::to_string(d.numel()) + " values for " + std::to_string(rows) + " rows");
  }
  TensorPtr gate = g.alloc(DType::BF16, {rows, lowRank});
  TensorPtr rawOut = width == lowRank ? nullptr : g.alloc(DType::BF16, {rows, n});
  HCSP_LAUNCH(g.rt, hcsp_hc_scaled_silu, rows * width, d.bf16(), gate->bf16(), rawOut ? rawOut->bf16() : nullptr, rows, width, lowRank, n);
  return {gate, rawOut};
}

Outputs hcGatedMean(const Inputs& in, const GpuContext& g) {
  const std::string op = "hcGatedMean";
  const Tensor& up = input(in, 0, "up", op, DType::BF16);
  const Tensor& normed = input(in, 1, "normed", op, DType::BF16);
  const Geometry geo = streamGeometry(normed, streamsAttr(g));
  const int32_t hf = parseContract(g);
  const int64_t rows = geo.rows, n = geo.n, h = geo.h, width = n * h;
  if (up.numel() != rows * width) {
    fail(ErrorKind::Shape, "hcGatedMean: up has " + std::to_string(up.numel()) + " values, expected " + std::to_string(rows) + "x" + std::to_string(width));
  }
  TensorPtr x = g.alloc(DType::BF16, {rows, h});
  HCSP_LAUNCH(g.rt, hcsp_hc_gated_mean, rows * h, up.bf16(), normed.bf16(), x->bf16(), rows, n, h, hf);
  return {x};
}

Outputs hcCombine(const Inputs& in, const GpuContext& g) {
  const std::string op = "hcCombine";
  const Tensor& xT = input(in, 0, "x", op, DType::BF16);
  const Tensor& blockOut = input(in, 1, "blockOut", op, DType::BF16);
  const Tensor& raw = input(in, 2, "raw", op, DType::BF16);
  const Geometry geo = streamGeometry(xT, streamsAttr(g));
  const int32_t hf = parseContract(g);
  const int64_t rows = geo.rows, n = geo.n, h = geo.h, width = n * h;
  if (blockOut.numel() != rows * h) {
    fail(ErrorKind::Shape, "hcCombine: blockOut has " + std::to_string(blockOut.numel()) + " values, expected " + std::to_string(rows) + "x" + std::to_string(h));
  }
  if (raw.numel() != rows * n) {
    fail(ErrorKind::Shape, "hcCombine: raw has " + std::to_string(raw.numel()) + " values, expected " + std::to_string(rows) + "x" + std::to_string(n));
  }
  TensorPtr y = g.alloc(DType::BF16, xT.shape());
  TensorPtr inj = injectScales(raw, rows * n, n, hf, g);
  HCSP_LAUNCH(g.rt, hcsp_hc_combine, rows * width, xT.bf16(), blockOut.bf16(), inj->data<float>(), y->bf16(), rows, n, h, hf);
  return {y};
}

}  // namespace

HCSP_GPU_OP(hcExpand, hcExpand);
HCSP_GPU_OP(hcCombineNorm, hcCombineNorm);
HCSP_GPU_OP(hcScaledSilu, hcScaledSilu);
HCSP_GPU_OP(hcGatedMean, hcGatedMean);
HCSP_GPU_OP(hcCombine, hcCombine);

}  // namespace hcsp::gpu
