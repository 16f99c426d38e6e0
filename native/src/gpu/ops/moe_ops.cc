// Launchers of the MoE ops on the GPU devices, with the checks and messages the host kernels
// share (ops/moe_checks.h); the arithmetic is in kernels/moe.cu.
//
// moeExperts reads the routing ids on the host (T x topK int32, like embed's ids) to lay out
// the routed rows: the (token, k) pairs this rank owns, grouped by local expert in ascending
// order and, within an expert, in ascending (t, k) as the reference gathers them; and, per
// token, the rows of its contributions in the reference's order of adds (ascending expert,
// then k). Each expert's two GEMMs are the `linear` op's (gemmLinearBf16 of kernels/gemm.h: the
// reference order in exact mode, the vendor's BLASLt in vendor mode) on its rows; they are per
// row, so gathering rows changes no bit.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "../../host/kernels/kernel_args.h"
#include "../../ops/moe_checks.h"
#include "../gpu_op_registry.h"
#include "../kernels/gemm.h"
#include "../kernels/moe.h"

namespace hcsp::gpu {
namespace {

/** int32 values copied into a new tensor of this GPU's memory */
TensorPtr uploadI32(const GpuContext& g, const std::vector<int32_t>& v) {
  TensorPtr t = g.alloc(DType::I32, {static_cast<int64_t>(v.size())});
  if (!v.empty()) g.rt.copyIn(t->raw(), v.data(), v.size() * sizeof(int32_t));
  return t;
}

Outputs moeRoute(const Inputs& in, const GpuContext& g) {
  const ops::MoeRouteArgs a = ops::checkMoeRoute(in, g.attrs);
  const int64_t T = a.T, E = a.E, topK = a.topK;
  TensorPtr ids = g.alloc(DType::I32, {T, topK});
  TensorPtr weights = g.alloc(DType::BF16, {T, topK});
  TensorPtr p = g.alloc(DType::F32, {E, T});
  HCSP_LAUNCH(g.rt, hcsp_moe_route, T, a.logits.bf16(), p->data<float>(), ids->data<int32_t>(), weights->bf16(), T, E, topK, a.normTopkProb ? 1 : 0);
  return {ids, weights};
}

Outputs moeSwiGlu(const Inputs& in, const GpuContext& g) {
  const ops::MoeSwiGluArgs a = ops::checkMoeSwiGlu(in, g.attrs);
  const int64_t T = a.T, inter = a.inter;
  TensorPtr h = g.alloc(DType::BF16, {T, inter});
  HCSP_LAUNCH(g.rt, hcsp_moe_swiglu, T * inter, a.gateUp.bf16(), h->bf16(), T, inter);
  return {h};
}

Outputs moeExperts(const Inputs& in, const GpuContext& g) {
  const ops::MoeExpertsArgs a = ops::checkMoeExperts(in, g.attrs);
  const int64_t T = a.T, H = a.H, topK = a.topK, firstExpert = a.firstExpert, numLocal = a.numLocal, inter = a.inter;
  const Tensor& x = a.x;
  const Tensor& ids = a.ids;
  const Tensor& weights = a.weights;
  const Tensor& gateUp = a.gateUp;
  const Tensor& down = a.down;

  TensorPtr routed = g.alloc(DType::F32, {T, H});
  // the routing ids (T x topK int32) on the host, to lay out the routed rows
  std::vector<int32_t> idh(static_cast<size_t>(T * topK));
  if (!idh.empty()) g.rt.copyOut(idh.data(), ids.raw(), idh.size() * sizeof(int32_t));
  // pairs (t, k) per local expert, t ascending
  std::vector<std::vector<int64_t>> pairs(static_cast<size_t>(std::max<int64_t>(0, numLocal)));
  int64_t rows = 0;
  for (int64_t t = 0; t < T; t++) {
    for (int64_t k = 0; k < topK; k++) {
      const int64_t local = static_cast<int64_t>(idh[t * topK + k]) - firstExpert;
      if (local >= 0 && local < numLocal) {
        pairs[local].push_back(t * topK + k);
        rows++;
      }
    }
  }
  if (rows == 0) return {routed};
  // row r of the routed rows: its token and its pair (t * topK + k), the rows of local expert e
  // at [first[e], first[e + 1]); per token its rows in the order the reference adds them
  // (-1 after the last)
  std::vector<int32_t> rowToken(rows), rowPair(rows), tokenRows(static_cast<size_t>(T * topK), -1);
  std::vector<int64_t> first(static_cast<size_t>(numLocal + 1), 0), filled(static_cast<size_t>(T), 0);
  int64_t r = 0;
  for (int64_t local = 0; local < numLocal; local++) {
    first[local] = r;
    for (const int64_t tk : pairs[local]) {
      const int64_t t = tk / topK;
      rowToken[r] = static_cast<int32_t>(t);
      rowPair[r] = static_cast<int32_t>(tk);
      tokenRows[t * topK + filled[t]++] = static_cast<int32_t>(r);
      r++;
    }
  }
  first[numLocal] = r;
  TensorPtr rowTokenT = uploadI32(g, rowToken);
  TensorPtr rowPairT = uploadI32(g, rowPair);
  TensorPtr tokenRowsT = uploadI32(g, tokenRows);
  TensorPtr xe = g.alloc(DType::BF16, {rows, H});
  TensorPtr gu = g.alloc(DType::BF16, {rows, 2 * inter});
  TensorPtr h = g.alloc(DType::BF16, {rows, inter});
  TensorPtr o = g.alloc(DType::BF16, {rows, H});
  HCSP_LAUNCH(g.rt, hcsp_moe_gather_rows, rows * H, x.bf16(), rowTokenT->data<int32_t>(), xe->bf16(), rows, H);
  // each expert's GEMMs on its own rows, as the `linear` op computes them (gemm.cu)
  for (int64_t local = 0; local < numLocal; local++) {
    const int64_t n = first[local + 1] - first[local];
    if (n == 0) continue;
    gemmLinearBf16(g, xe->bf16() + first[local] * H, n, H, gateUp.bf16() + local * 2 * inter * H, 2 * inter, gu->bf16() + first[local] * 2 * inter);
  }
  HCSP_LAUNCH(g.rt, hcsp_moe_swiglu, rows * inter, gu->bf16(), h->bf16(), rows, inter);
  for (int64_t local = 0; local < numLocal; local++) {
    const int64_t n = first[local + 1] - first[local];
    if (n == 0) continue;
    gemmLinearBf16(g, h->bf16() + first[local] * inter, n, inter, down.bf16() + local * H * inter, H, o->bf16() + first[local] * H);
  }
  HCSP_LAUNCH(g.rt, hcsp_moe_routed_sum, T * H, o->bf16(), tokenRowsT->data<int32_t>(), rowPairT->data<int32_t>(), weights.bf16(), routed->data<float>(), T, H,
              topK);
  return {routed};
}

Outputs moeCombine(const Inputs& in, const GpuContext& g) {
  const ops::MoeCombineArgs a = ops::checkMoeCombine(in, g.attrs);
  const int64_t T = a.T, H = a.H;
  TensorPtr y = g.alloc(DType::BF16, {T, H});
  HCSP_LAUNCH(g.rt, hcsp_moe_combine, T * H, a.routed.data<float>(), a.shared.bf16(), a.gateLogit.bf16(), y->bf16(), T, H);
  return {y};
}

}  // namespace

HCSP_GPU_OP(moeRoute, moeRoute);
HCSP_GPU_OP(moeExperts, moeExperts);
HCSP_GPU_OP(moeSwiGlu, moeSwiGlu);
HCSP_GPU_OP(moeCombine, moeCombine);

}  // namespace hcsp::gpu
