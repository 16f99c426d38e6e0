// Launchers of the full-attention ops on the GPU devices (kernels/attention.cu), with the
// checks and messages the host kernels share (ops/attention_checks.h, which mirror
// reference/kernels/attentionKernels.ts). The checks the reference makes on data (a NaN block
// score, a malformed selection) stay on the device (device_checks.h): the kernels report the
// first failing row, and the run's sync raises it with the reference's message.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>

#include "../../host/kernels/kernel_args.h"
#include "../../ops/attention_checks.h"
#include "../gpu_op_registry.h"
#include "../kernels/attention.h"
#include "../kernels/attention_tiled.h"
#include "../kernels/reduce.h"

namespace hcsp::gpu {
namespace {

/** the most bytes one launch's per-thread scratch may take; larger work runs in chunks */
constexpr int64_t SCRATCH_BUDGET = int64_t{256} << 20;

/** rows per chunk so that rows x perRowBytes stays within the scratch budget (at least 1) */
int64_t chunkFor(int64_t total, int64_t perRowBytes) {
  const int64_t fit = SCRATCH_BUDGET / std::max<int64_t>(perRowBytes, 1);
  return std::max<int64_t>(1, std::min(total, fit));
}

/** the norm + RoPE block kernel over rows x heads items, one 64-thread row group each (g.blockRows of them per block) */
void launchNormRope(const GpuContext& g, const uint16_t* x, const uint16_t* w, const uint16_t* cos, const uint16_t* sin, uint16_t* y, int64_t rows,
                    int64_t heads, int64_t hd, int64_t stride, int64_t offset, int64_t ropeDims, float epsF, int64_t step) {
  const int64_t items = rows * heads;
  if (items == 0) return;
  const int perBlock = g.blockRows(items);
  HCSP_LAUNCH_BLOCKS(g.rt, hcsp_attention_norm_rope_bf16, (items + perBlock - 1) / perBlock, perBlock * HCSP_CANONICAL_LANES, x, w, cos, sin, y, rows, heads,
                     hd, stride, offset, ropeDims, epsF, step);
}

Outputs attnHeadNormRopeBf16(const Inputs& in, const GpuContext& g) {
  const ops::HeadNormRopeArgs a = ops::checkHeadNormRope(in, g.attrs);
  TensorPtr y = g.alloc(DType::BF16, {a.rows, a.heads * a.hd});
  launchNormRope(g, a.x.bf16(), a.w.bf16(), a.cos.bf16(), a.sin.bf16(), y->bf16(), a.rows, a.heads, a.hd, a.stride, a.offset, a.ropeDims, a.epsF, 1);
  return {y};
}

Outputs qsaBlockKeys(const Inputs& in, const GpuContext& g) {
  const ops::BlockKeysArgs a = ops::checkBlockKeys(in, g.attrs);
  const int64_t dh = a.dh, ratio = a.ratio, nb = a.nb;
  TensorPtr kb = g.alloc(DType::BF16, {nb, dh});
  if (nb == 0 || dh == 0) return {kb};
  // pool_b = bf(fr(sum_j k_raw[b*ratio + j], j order) / ratio), then RMS1p + RoPE at position b * ratio
  TensorPtr pooled = g.alloc(DType::BF16, {nb, dh});
  HCSP_LAUNCH(g.rt, hcsp_attention_pool_blocks_bf16, nb * dh, a.kRaw.bf16(), pooled->bf16(), nb, dh, ratio);
  launchNormRope(g, pooled->bf16(), a.w.bf16(), a.cos.bf16(), a.sin.bf16(), kb->bf16(), nb, 1, dh, dh, 0, a.ropeDims, a.epsF, ratio);
  return {kb};
}

Outputs qsaKeptCount(const Inputs& in, const GpuContext& g) {
  const ops::KeptCountArgs a = ops::checkKeptCount(in, g.attrs);
  TensorPtr kept = g.alloc(DType::I32, {a.rows});
  HCSP_LAUNCH(g.rt, hcsp_attention_kept_count, a.rows, a.blocks.data<int32_t>(), kept->data<int32_t>(), a.rows, a.width, a.ratio);
  return {kept};
}

Outputs qsaSelect(const Inputs& in, const GpuContext& g) {
  const ops::QsaSelectArgs a = ops::checkQsaSelect(in, g.attrs);
  ops::refuseTorchCpuTiesOnGpu(a.torchCpuTies, "qsaSelect");
  const int64_t rows = a.rows, nb = a.nb, nh = a.nh, dh = a.dh, ratio = a.ratio, width = a.width, r0 = a.r0, real = a.real;
  const Tensor& q = a.q;
  const Tensor& kb = a.kb;

  TensorPtr out = g.alloc(DType::I32, {rows, width});
  int32_t* blocks = out->data<int32_t>();
  HCSP_LAUNCH(g.rt, hcsp_attention_fill_i32, rows * width, blocks, rows * width, int32_t{-1});
  if (real == 0 || nb == 0) return {out};

  // divisor = fr(Math.sqrt(headDim))
  const float divisor = static_cast<float>(std::sqrt(static_cast<double>(dh)));
  unsigned long long* nanFailed =
      g.rt.deviceCheck("qsaSelect", real, 1, [r0](const uint64_t* w) { ops::failQsaNan(r0 + checkPosition(w[0]), checkDetail(w[0])); });
  const int64_t chunk = chunkFor(real, nb * static_cast<int64_t>(sizeof(float)));
  TensorPtr scores = g.alloc(DType::F32, {chunk, nb});
  for (int64_t base = 0; base < real; base += chunk) {
    const int64_t n = std::min(chunk, real - base);
    HCSP_LAUNCH(g.rt, hcsp_attention_qsa_scores, n * nb, q.bf16(), kb.bf16(), scores->data<float>(), r0, base, n, nb, nh, dh, ratio, divisor);
    HCSP_LAUNCH(g.rt, hcsp_attention_qsa_select, n, scores->data<float>(), blocks, nanFailed, r0, base, n, nb, width, ratio);
  }
  return {out};
}

Outputs attnCausalQsa(const Inputs& in, const GpuContext& g) {
  const ops::CausalQsaArgs a = ops::checkCausalQsa(in, g.attrs);
  const int64_t T = a.T, heads = a.heads, kvHeads = a.kvHeads, hd = a.hd, width = a.width, ratio = a.ratio;
  const int32_t* blocks = a.blocks.data<int32_t>();

  // qsaSelection.ts qsaKeptPositions's checks, every row; the first failing row is reported
  // at the run's sync, and the attention kernel gives a failing row zeros instead of reading
  TensorPtr bad = g.alloc(DType::I32, {T});
  if (T > 0) {
    unsigned long long* failed = g.rt.deviceCheck("attnCausalQsa", T, 2, [width, ratio](const uint64_t* w) {
      ops::failKeptEntry(checkPosition(w[0]), checkDetail(w[0]), checkDetail(w[1]), width, ratio);
    });
    HCSP_LAUNCH(g.rt, hcsp_attention_check_selection, T, blocks, bad->data<int32_t>(), failed, T, width, ratio);
  }

  TensorPtr out = g.alloc(DType::BF16, {T, heads * hd});
  if (T == 0 || heads == 0 || hd == 0) return {out};
  // the fast kernel: flash-style over the kept keys (kernels/attention_tiled.cu); its shared
  // tiles take head dims up to HCSP_TILED_ATTN_MAX_HD, larger ones (and the hf-eager roundings) run the exact kernel below, said once
  if (g.fastKernels() && hd > HCSP_TILED_ATTN_MAX_HD)
    g.rt.exactKernelFor("attnCausalQsa", "head dim " + std::to_string(hd) + " is past the tiled kernel's " + std::to_string(HCSP_TILED_ATTN_MAX_HD));
  else if (g.fastKernels() && a.eagerSoftmax)
    g.rt.exactKernelFor("attnCausalQsa", "the tiled kernel's online softmax cannot round scores and probabilities to bf16 (hf-eager's eagerSoftmax)");
  if (g.fastKernels() && hd <= HCSP_TILED_ATTN_MAX_HD && !a.eagerSoftmax) {
    const int64_t tiles = (T + HCSP_TILED_ATTN_ROWS - 1) / HCSP_TILED_ATTN_ROWS;
    HCSP_LAUNCH_BLOCKS(g.rt, hcsp_attention_tiled_qsa, tiles * heads, HCSP_TILED_ATTN_THREADS, a.q.bf16(), a.k.bf16(), a.v.bf16(), blocks, bad->data<int32_t>(),
                       out->bf16(), T, heads, kvHeads, hd, width, ratio, a.scaleF);
    return {out};
  }
  // each (row, head) keeps its scores/probabilities, at most min(T, width * ratio + ratio - 1) of them
  const int64_t keptMax = std::min(T, (width + 1) * ratio);
  const int64_t items = T * heads;
  const int64_t chunk = chunkFor(items, keptMax * static_cast<int64_t>(sizeof(float)));
  TensorPtr p = g.alloc(DType::F32, {chunk, keptMax});
  for (int64_t base = 0; base < items; base += chunk) {
    const int64_t n = std::min(chunk, items - base);
    HCSP_LAUNCH(g.rt, hcsp_attention_causal_qsa, n, a.q.bf16(), a.k.bf16(), a.v.bf16(), blocks, bad->data<int32_t>(), out->bf16(), p->data<float>(), heads,
                kvHeads, hd, width, ratio, a.scaleF, base, n, a.eagerSoftmax ? 1 : 0);
  }
  return {out};
}

Outputs attnOutputGate(const Inputs& in, const GpuContext& g) {
  const ops::OutputGateArgs a = ops::checkOutputGate(in, g.attrs);
  TensorPtr y = g.alloc(DType::BF16, {a.T, a.heads * a.hd});
  HCSP_LAUNCH(g.rt, hcsp_attention_output_gate, a.T * a.heads * a.hd, a.o.bf16(), a.qg.bf16(), y->bf16(), a.T * a.heads, a.hd);
  return {y};
}

}  // namespace

HCSP_GPU_OP(attnHeadNormRopeBf16, attnHeadNormRopeBf16);
HCSP_GPU_OP(qsaBlockKeys, qsaBlockKeys);
HCSP_GPU_OP(qsaKeptCount, qsaKeptCount);
HCSP_GPU_OP(qsaSelect, qsaSelect);
HCSP_GPU_OP(attnCausalQsa, attnCausalQsa);
HCSP_GPU_OP(attnOutputGate, attnOutputGate);

}  // namespace hcsp::gpu
