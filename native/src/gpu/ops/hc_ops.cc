// Launchers of the hyper-connection ops on the GPU devices, with the checks and messages the
// host kernels share (ops/hc_checks.h, as reference/kernels/hcKernels.ts and hc/combineNorm.ts).
// The combine-norm and the gated mean are one block-kernel launch each (64 threads per (row,
// stream) pair or row, g.blockRows of them per block); the unfused combine's inject scales go
// through an f32 scratch tensor in the GPU's memory.
#include <string>

#include "../../host/kernels/kernel_args.h"
#include "../../ops/hc_checks.h"
#include "../gpu_op_registry.h"
#include "../kernels/hc.h"
#include "../kernels/reduce.h"

namespace hcsp::gpu {
namespace {

/** 1 for 'hf', 0 for 'atom' */
int32_t hfFlag(ops::HcContract c) { return c == ops::HcContract::Hf ? 1 : 0; }

/** the inject scales of raw [rows, n], in a scratch tensor */
TensorPtr injectScales(const Tensor& raw, int64_t count, int64_t n, int32_t hf, const GpuContext& g) {
  TensorPtr inj = g.alloc(DType::F32, {count});
  HCSP_LAUNCH(g.rt, hcsp_hc_inject_scales, count, raw.bf16(), inj->data<float>(), count, n, hf);
  return inj;
}

Outputs hcExpand(const Inputs& in, const GpuContext& g) {
  const ops::HcExpandArgs a = ops::checkHcExpand(in, g.attrs);
  const int64_t rows = a.rows, n = a.n, h = a.h;
  const Tensor& e = a.e;
  TensorPtr x = g.alloc(DType::BF16, {rows, n * h});
  HCSP_LAUNCH(g.rt, hcsp_hc_expand, rows * n * h, e.bf16(), x->bf16(), rows, n, h);
  return {x};
}

Outputs hcCombineNorm(const Inputs& in, const GpuContext& g) {
  const ops::HcCombineNormArgs a = ops::checkHcCombineNorm(in, g.attrs);
  const int64_t rows = a.rows, n = a.n, h = a.h;
  const int32_t hf = hfFlag(a.contract);
  const Tensor& xT = a.x;
  const Tensor* blockOut = a.blockOut;

  TensorPtr xOut = g.alloc(DType::BF16, xT.shape());
  TensorPtr normed = g.alloc(DType::BF16, xT.shape());
  const int64_t pairs = rows * n;
  const int perBlock = g.blockRows(pairs);
  HCSP_LAUNCH_BLOCKS(g.rt, hcsp_hc_combine_norm, hcspBlocksFor(pairs, perBlock), perBlock * HCSP_CANONICAL_LANES, xT.bf16(),
                     blockOut ? blockOut->bf16() : nullptr, blockOut ? a.raw->bf16() : nullptr, a.w.bf16(), xOut->bf16(), normed->bf16(), pairs, n, h, a.epsF,
                     hf);
  return {xOut, normed};
}

Outputs hcScaledSilu(const Inputs& in, const GpuContext& g) {
  const ops::HcScaledSiluArgs a = ops::checkHcScaledSilu(in, g.attrs);
  const int64_t rows = a.rows, width = a.width, lowRank = a.lowRank, n = a.n;
  const Tensor& d = a.d;
  TensorPtr gate = g.alloc(DType::BF16, {rows, lowRank});
  TensorPtr rawOut = width == lowRank ? nullptr : g.alloc(DType::BF16, {rows, n});
  HCSP_LAUNCH(g.rt, hcsp_hc_scaled_silu, rows * width, d.bf16(), gate->bf16(), rawOut ? rawOut->bf16() : nullptr, rows, width, lowRank, n);
  return {gate, rawOut};
}

Outputs hcGatedMean(const Inputs& in, const GpuContext& g) {
  const ops::HcGatedMeanArgs a = ops::checkHcGatedMean(in, g.attrs);
  const int64_t rows = a.rows, n = a.n, h = a.h;
  TensorPtr x = g.alloc(DType::BF16, {rows, h});
  const int perBlock = g.blockRows(rows);
  HCSP_LAUNCH_BLOCKS(g.rt, hcsp_hc_gated_mean, hcspBlocksFor(rows, perBlock), perBlock * HCSP_CANONICAL_LANES, a.up.bf16(), a.normed.bf16(), x->bf16(), rows, n,
                     h, hfFlag(a.contract));
  return {x};
}

Outputs hcCombine(const Inputs& in, const GpuContext& g) {
  const ops::HcCombineArgs a = ops::checkHcCombine(in, g.attrs);
  const int64_t rows = a.rows, n = a.n, h = a.h, width = a.width;
  const int32_t hf = hfFlag(a.contract);
  TensorPtr y = g.alloc(DType::BF16, a.x.shape());
  TensorPtr inj = injectScales(a.raw, rows * n, n, hf, g);
  HCSP_LAUNCH(g.rt, hcsp_hc_combine, rows * width, a.x.bf16(), a.blockOut.bf16(), inj->data<float>(), y->bf16(), rows, n, h, hf);
  return {y};
}

}  // namespace

HCSP_GPU_OP(hcExpand, hcExpand);
HCSP_GPU_OP(hcCombineNorm, hcCombineNorm);
HCSP_GPU_OP(hcScaledSilu, hcScaledSilu);
HCSP_GPU_OP(hcGatedMean, hcGatedMean);
HCSP_GPU_OP(hcCombine, hcCombine);

}  // namespace hcsp::gpu
