// Launchers of the MoE ops on the GPU devices, with the checks and messages the host kernels
// share (ops/moe_checks.h); the arithmetic is in kernels/moe.cu.
//
// moeExperts stays on the device: nothing is read back and nothing waited for. Kernels lay
// out the routed rows from the routing ids (the (token, k) pairs this rank owns, grouped by
// local expert in ascending order and, within an expert, in ascending (t, k) as the reference
// gathers them; per token, the rows of its contributions in the reference's order of adds:
// ascending expert, then k), and the row count stays in device memory. Every routed buffer is
// sized for the worst case, T x topK rows, known on the host; the kernels after the layout read
// the count and leave the rest alone. The experts' two GEMMs are one grouped launch each
// (gemm.cu's hcsp_gemm_grouped_bf16: each row against its expert's weight, computed exactly as
// the `linear` op's exact kernel computes a row), in every GEMM mode: a vendor BLASLt GEMM needs
// its M on the host, so in vendor mode too the MoE's experts run the exact kernel (grouped
// vendor GEMMs: issue 24). Their bits are the CPU reference's. With the fast kernels
// (g.fastKernels()) the experts are moe_grouped.cu's grouped GEMMs on the same layout instead.
#include <algorithm>
#include <cstdint>
#include <string>

#include "../../host/kernels/kernel_args.h"
#include "../../ops/moe_checks.h"
#include "../gpu_op_registry.h"
#include "../kernels/gemm.h"
#include "../kernels/moe.h"
#include "../kernels/moe_grouped.h"
#include "moe_layout.h"

namespace hcsp::gpu {
namespace {

Outputs moeRoute(const Inputs& in, const GpuContext& g) {
  const ops::MoeRouteArgs a = ops::checkMoeRoute(in, g.attrs);
  ops::refuseTorchCpuTiesOnGpu(a.torchCpuTies, "moeRoute");
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
  const int64_t T = a.T, H = a.H, topK = a.topK, firstExpert = a.firstExpert, inter = a.inter;
  const int64_t numLocal = std::max<int64_t>(0, a.numLocal);
  const MoeRowLayout l = moeRowLayout(g, "moeExperts", a.ids.data<int32_t>(), T, topK, firstExpert, numLocal);
  TensorPtr routed = g.alloc(DType::F32, {T, H});
  const int64_t maxRows = l.maxRows;
  // every output written: a token no local expert serves sums nothing (0)
  const auto routedSum = [&](const TensorPtr& o) {
    HCSP_LAUNCH(g.rt, hcsp_moe_routed_sum, T * H, o->bf16(), l.tokenRows->data<int32_t>(), l.rowPair->data<int32_t>(), a.weights.bf16(), routed->data<float>(),
                T, H, topK, a.bf16Accumulate ? 1 : 0);
  };
  if (g.fastKernels()) {
    // the fast grouped GEMMs (kernels/moe_grouped.h): expert-pure M-tiles, x gathered and the
    // SwiGLU applied inside the gate-up GEMM; the same routed sum
    const int64_t tiles = moeGroupedMaxTiles(maxRows, numLocal);
    TensorPtr tileExpert = g.alloc(DType::I32, {tiles});
    TensorPtr tileRow = g.alloc(DType::I32, {tiles});
    TensorPtr tileCount = g.alloc(DType::I32, {1});
    TensorPtr h = g.alloc(DType::BF16, {maxRows, inter});
    TensorPtr o = g.alloc(DType::BF16, {maxRows, H});
    moeGroupedExpertsBf16(g.rt, a.x.bf16(), l.rowToken->data<int32_t>(), l.first->data<int32_t>(), maxRows, numLocal, H, inter, a.gateUp.bf16(), a.down.bf16(),
                          tileExpert->data<int32_t>(), tileRow->data<int32_t>(), tileCount->data<int32_t>(), h->bf16(), o->bf16());
    routedSum(o);
    return {routed};
  }
  // the routed rows at their worst case: the grid covers it, the device's count bounds the work
  TensorPtr xe = g.alloc(DType::BF16, {maxRows, H});
  TensorPtr gu = g.alloc(DType::BF16, {maxRows, 2 * inter});
  TensorPtr h = g.alloc(DType::BF16, {maxRows, inter});
  TensorPtr o = g.alloc(DType::BF16, {maxRows, H});
  HCSP_LAUNCH(g.rt, hcsp_moe_gather_rows, maxRows * H, a.x.bf16(), l.rowToken->data<int32_t>(), l.rows, xe->bf16(), H);
  gemmGroupedLinearBf16(g, xe->bf16(), maxRows, H, a.gateUp.bf16(), 2 * inter, l.rowExpert->data<int32_t>(), l.rows, gu->bf16());
  HCSP_LAUNCH(g.rt, hcsp_moe_swiglu_rows, maxRows * inter, gu->bf16(), h->bf16(), l.rows, inter);
  gemmGroupedLinearBf16(g, h->bf16(), maxRows, inter, a.down.bf16(), H, l.rowExpert->data<int32_t>(), l.rows, o->bf16());
  routedSum(o);
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
