// Launchers of the GatedDeltaNet ops on the GPU devices, with the checks and messages the host
// kernels share (ops/gdn_checks.h); the arithmetic is in kernels/gdn.cu. The gated norm is a
// block kernel (one 64-thread row group per row, g.blockRows of them per block).
#include <string>

#include "../../host/kernels/kernel_args.h"
#include "../../ops/gdn_checks.h"
#include "../gpu_op_registry.h"
#include "../kernels/gdn.h"
#include "../kernels/gdn_chunked.h"
#include "../kernels/reduce.h"

namespace hcsp::gpu {
namespace {

Outputs gdnConvSilu(const Inputs& in, const GpuContext& g) {
  const ops::GdnConvArgs a = ops::checkGdnConvSilu(in, g.attrs);
  const int64_t T = a.T, channels = a.channels;
  TensorPtr y = g.alloc(DType::BF16, {T, channels});
  HCSP_LAUNCH(g.rt, hcsp_gdn_conv_silu, T * channels, a.x.bf16(), a.w.bf16(), y->bf16(), T, channels, a.kernel, a.roundConv ? 1 : 0);
  return {y};
}

Outputs gdnGates(const Inputs& in, const GpuContext& g) {
  const ops::GdnGatesArgs a = ops::checkGdnGates(in, g.attrs);
  const int64_t T = a.T, heads = a.heads;
  TensorPtr gt = g.alloc(DType::F32, {T, heads});
  TensorPtr beta = g.alloc(DType::BF16, {T, heads});
  HCSP_LAUNCH(g.rt, hcsp_gdn_gates, T * heads, a.b.bf16(), a.a.bf16(), a.aLog.bf16(), a.dtBias.bf16(), gt->data<float>(), beta->bf16(), T * heads, heads);
  return {gt, beta};
}

/**
 * The chunked recurrence (kernels/gdn_chunked.cu): the shared l2 norms, the per-(head, chunk)
 * solve, then the state pass over chunks, one block per (head, tile of state columns). Scratch:
 * qn, kn [T, keyHeads*dk], G [vh, T] (double), W [vh, T, dk], U [vh, T, dv], P [vh, chunks, 64, 64] (fp32).
 */
Outputs gdnRecurrenceChunked(const ops::GdnRecurrenceArgs& a, const GpuContext& g) {
  const int64_t T = a.T, keyHeads = a.keyHeads, valueHeads = a.valueHeads, dk = a.dk, dv = a.dv, channels = a.channels;
  const int64_t kOff = keyHeads * dk;
  const int64_t chunks = (T + HCSP_GDN_CHUNK - 1) / HCSP_GDN_CHUNK;
  const int64_t tiles = (dv + HCSP_GDN_COLS - 1) / HCSP_GDN_COLS;
  TensorPtr o = g.alloc(DType::BF16, {T, valueHeads * dv});
  if (T == 0 || valueHeads == 0 || dv == 0) return {o};
  TensorPtr qn = g.alloc(DType::F32, {T, kOff});
  TensorPtr kn = g.alloc(DType::F32, {T, kOff});
  // G is double (the cumulative log decays: their differences keep fp32's relative precision);
  // no F64 dtype, so two fp32 words per value
  TensorPtr G = g.alloc(DType::F32, {valueHeads, T, 2});
  double* Gd = reinterpret_cast<double*>(G->data<float>());
  TensorPtr W = g.alloc(DType::F32, {valueHeads, T, dk});
  TensorPtr U = g.alloc(DType::F32, {valueHeads, T, dv});
  TensorPtr P = g.alloc(DType::F32, {valueHeads, chunks, HCSP_GDN_CHUNK, HCSP_GDN_CHUNK});
  HCSP_LAUNCH(g.rt, hcsp_gdn_l2norm, T * keyHeads, a.qkv.bf16(), qn->data<float>(), kn->data<float>(), T, channels, keyHeads, dk, a.epsF, a.scaleF);
  HCSP_LAUNCH_BLOCKS(g.rt, hcsp_gdn_chunk_prep, valueHeads * chunks, 256, a.qkv.bf16(), qn->data<float>(), kn->data<float>(), a.g.data<float>(), a.beta.bf16(),
                     Gd, W->data<float>(), U->data<float>(), P->data<float>(), T, channels, keyHeads, valueHeads, dk, dv);
  HCSP_LAUNCH_BLOCKS(g.rt, hcsp_gdn_chunk_state, valueHeads * tiles, 256, qn->data<float>(), kn->data<float>(), Gd, W->data<float>(), U->data<float>(),
                     P->data<float>(), o->bf16(), T, keyHeads, valueHeads, dk, dv);
  return {o};
}

Outputs gdnRecurrence(const Inputs& in, const GpuContext& g) {
  const ops::GdnRecurrenceArgs a = ops::checkGdnRecurrence(in, g.attrs);
  if (g.fastKernels()) {
    if (a.dk <= HCSP_GDN_MAX_KEY_DIM) return gdnRecurrenceChunked(a, g);
    // a key dim beyond the state pass's shared tile runs the reference-order kernel, and says so
    g.rt.exactKernelFor("gdnRecurrence", "key dim " + std::to_string(a.dk) + " is past the chunked kernel's " + std::to_string(HCSP_GDN_MAX_KEY_DIM));
  }
  const int64_t T = a.T, keyHeads = a.keyHeads, valueHeads = a.valueHeads, dk = a.dk, dv = a.dv, channels = a.channels;
  const Tensor& qkv = a.qkv;
  const int64_t kOff = keyHeads * dk;
  // scratch: the normalized q and k of every token (as the reference computes them at the
  // start of each token's step) and the fp32 state, one column per recurrence thread
  TensorPtr qn = g.alloc(DType::F32, {T, kOff});
  TensorPtr kn = g.alloc(DType::F32, {T, kOff});
  TensorPtr state = g.alloc(DType::F32, {valueHeads, dk, dv});
  TensorPtr o = g.alloc(DType::BF16, {T, valueHeads * dv});
  HCSP_LAUNCH(g.rt, hcsp_gdn_l2norm, T * keyHeads, qkv.bf16(), qn->data<float>(), kn->data<float>(), T, channels, keyHeads, dk, a.epsF, a.scaleF);
  HCSP_LAUNCH(g.rt, hcsp_gdn_recurrence, valueHeads * dv, qkv.bf16(), qn->data<float>(), kn->data<float>(), a.g.data<float>(), a.beta.bf16(),
              state->data<float>(), o->bf16(), T, channels, keyHeads, valueHeads, dk, dv);
  return {o};
}

Outputs gdnGatedNorm(const Inputs& in, const GpuContext& g) {
  const ops::GdnGatedNormArgs a = ops::checkGdnGatedNorm(in, g.attrs);
  const int64_t T = a.T, heads = a.heads, headDim = a.headDim;
  const Tensor& o = a.o;
  TensorPtr y = g.alloc(DType::BF16, {T, heads * headDim});
  if (headDim <= 0) return {y};
  // one block-kernel launch: a 64-thread row group per (token, head) row, g.blockRows of them per block
  const int64_t rows = T * heads;
  const int perBlock = g.blockRows(rows);
  HCSP_LAUNCH_BLOCKS(g.rt, hcsp_gdn_gated_norm, hcspBlocksFor(rows, perBlock), perBlock * HCSP_CANONICAL_LANES, o.bf16(), a.z.bf16(), a.w.bf16(), y->bf16(),
                     rows, headDim, a.epsF);
  return {y};
}

}  // namespace

HCSP_GPU_OP(gdnConvSilu, gdnConvSilu);
HCSP_GPU_OP(gdnGates, gdnGates);
HCSP_GPU_OP(gdnRecurrence, gdnRecurrence);
HCSP_GPU_OP(gdnGatedNorm, gdnGatedNorm);

}  // namespace hcsp::gpu
