// Launcher of moeExpertsFp8Ptpc on the GPU devices, with the checks and messages the host
// kernel shares (ops/moe_fp8_checks.h); the arithmetic is kernels/moe_fp8.cu on moe.cu's
// routed-row layout (the rows grouped by local expert, the count on the device: nothing is read
// back and nothing waited for; every buffer sized for the worst case, T x topK rows).
// Kernels 'exact': one thread per output; 'fast': the two GEMM stages as tiled block kernels
// over tiles of one expert's rows (the weight bytes read once per tile of rows, not once per
// row), each output's sum still in k order, so both modes give the CPU reference's bits.
#include <algorithm>
#include <cstdint>
#include <string>

#include "../../host/kernels/kernel_args.h"
#include "../../ops/moe_fp8_checks.h"
#include "../gpu_op_registry.h"
#include "../kernels/moe.h"
#include "../kernels/moe_fp8.h"
#include "moe_layout.h"

namespace hcsp::gpu {
namespace {

Outputs moeExpertsFp8Ptpc(const Inputs& in, const GpuContext& g) {
  const ops::MoeExpertsFp8Args a = ops::checkMoeExpertsFp8(in, g.attrs);
  const int64_t T = a.T, H = a.H, topK = a.topK, firstExpert = a.firstExpert, inter = a.inter;
  const int64_t numLocal = std::max<int64_t>(0, a.numLocal);
  const int32_t fnuz = a.format.fnuz ? 1 : 0;
  const int32_t wf = a.weightFirst ? 1 : 0;
  const int32_t divide = a.style == ops::QuantStyle::Divide ? 1 : 0;
  const MoeRowLayout l = moeRowLayout(g, "moeExpertsFp8Ptpc", a.ids.data<int32_t>(), T, topK, firstExpert, numLocal);
  TensorPtr routed = g.alloc(DType::F32, {T, H});
  const int64_t maxRows = l.maxRows;
  TensorPtr h = g.alloc(DType::BF16, {maxRows, inter});
  TensorPtr hq = g.alloc(fp8DType(a.format), {maxRows, inter});
  TensorPtr sh = g.alloc(DType::F32, {maxRows});
  TensorPtr contrib = g.alloc(DType::BF16, {maxRows, H});
  const uint8_t* xq = a.xq.data<uint8_t>();
  const float* sx = a.sx.data<float>();
  const uint8_t* qGu = a.qGateUp.data<uint8_t>();
  const float* sGu = a.sGateUp.data<float>();
  const uint8_t* qDown = a.qDown.data<uint8_t>();
  const float* sDown = a.sDown.data<float>();
  if (g.fastKernels() && maxRows > 0 && numLocal > 0) {
    const int64_t maxTiles = maxRows / HCSP_MOE_FP8_TILE_M + numLocal;
    TensorPtr tileExpert = g.alloc(DType::I32, {maxTiles});
    TensorPtr tileRow = g.alloc(DType::I32, {maxTiles});
    TensorPtr tileCount = g.alloc(DType::I32, {1});
    HCSP_LAUNCH(g.rt, hcsp_moe_fp8_tiles, 1, l.first->data<int32_t>(), tileExpert->data<int32_t>(), tileRow->data<int32_t>(), tileCount->data<int32_t>(),
                numLocal);
    // sized for the most tiles; the blocks past the device's tile count find no work
    const int64_t guBlocks = std::min<int64_t>(maxTiles * ((inter + HCSP_MOE_FP8_TILE_N - 1) / HCSP_MOE_FP8_TILE_N), INT32_MAX);
    if (guBlocks > 0) {
      HCSP_LAUNCH_BLOCKS(g.rt, hcsp_moe_fp8_gate_up_tiled, guBlocks, HCSP_MOE_FP8_BLOCK_THREADS, xq, sx, l.rowToken->data<int32_t>(), l.first->data<int32_t>(),
                         tileExpert->data<int32_t>(), tileRow->data<int32_t>(), tileCount->data<int32_t>(), qGu, sGu, h->bf16(), H, inter, fnuz, wf);
    }
    HCSP_LAUNCH(g.rt, hcsp_moe_fp8_quant_rows, maxRows, h->bf16(), l.rows, hq->data<uint8_t>(), sh->data<float>(), inter, fnuz, divide);
    const int64_t dBlocks = std::min<int64_t>(maxTiles * ((H + HCSP_MOE_FP8_TILE_N - 1) / HCSP_MOE_FP8_TILE_N), INT32_MAX);
    if (dBlocks > 0) {
      HCSP_LAUNCH_BLOCKS(g.rt, hcsp_moe_fp8_down_tiled, dBlocks, HCSP_MOE_FP8_BLOCK_THREADS, hq->data<uint8_t>(), sh->data<float>(), l.rowPair->data<int32_t>(),
                         l.first->data<int32_t>(), tileExpert->data<int32_t>(), tileRow->data<int32_t>(), tileCount->data<int32_t>(), qDown, sDown,
                         a.weights.bf16(), contrib->bf16(), inter, H, fnuz, wf);
    }
  } else {
    HCSP_LAUNCH(g.rt, hcsp_moe_fp8_gate_up, maxRows * inter, xq, sx, l.rowToken->data<int32_t>(), l.rowExpert->data<int32_t>(), l.rows, qGu, sGu, h->bf16(), H,
                inter, fnuz, wf);
    HCSP_LAUNCH(g.rt, hcsp_moe_fp8_quant_rows, maxRows, h->bf16(), l.rows, hq->data<uint8_t>(), sh->data<float>(), inter, fnuz, divide);
    HCSP_LAUNCH(g.rt, hcsp_moe_fp8_down, maxRows * H, hq->data<uint8_t>(), sh->data<float>(), l.rowExpert->data<int32_t>(), l.rowPair->data<int32_t>(), l.rows,
                qDown, sDown, a.weights.bf16(), contrib->bf16(), inter, H, fnuz, wf);
  }
  // every output written: a token no local expert serves sums nothing (0)
  HCSP_LAUNCH(g.rt, hcsp_moe_fp8_routed_sum, T * H, contrib->bf16(), l.tokenRows->data<int32_t>(), routed->data<float>(), T, H, topK);
  return {routed};
}

}  // namespace

HCSP_GPU_OP(moeExpertsFp8Ptpc, moeExpertsFp8Ptpc);

}  // namespace hcsp::gpu
