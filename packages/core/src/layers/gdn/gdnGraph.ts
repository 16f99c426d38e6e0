import { layerKind, type ModelConfig } from '../../config/modelConfig.ts';
import type { ValueId, WeightRef } from '../../graph/graph.ts';
import type { GraphBuilder } from '../../graph/graphBuilder.ts';
import { fp8Info } from '../../numerics/fp8.ts';
import { PRODUCTION_QUANT_STYLE } from '../../numerics/quant.ts';
import type { PtpcScaleOrder } from '../fp8Linear.ts';
import type { SubLayerContext } from '../subLayerContext.ts';
import { subLayerNodes } from '../subLayerNodes.ts';
import { GDN_L2NORM_EPS } from './gdnMath.ts';
import { gdnRankHeads, gdnRankWeights } from './gdnWeights.ts';

/**
 * The FP8 PTPC path quantizes one sub-layer input: the GDN input projection's (issue 8,
 * model.md "FP8"), i.e. the attention-position sub-layer of a linear-attention layer.
 */
export function fp8QuantizesInput(config: ModelConfig, layer: number, sub: 'attn' | 'mlp'): boolean {
  return sub === 'attn' && layer >= 0 && layer < config.numLayers && layerKind(config, layer) === 'linear_attention';
}

/**
 * The epilogue order of the GDN input projection's FP8 GEMM. ATOM's tuned table for this
 * GEMM (qwen38_flash_next_a8w8_bpreshuffle_tuned_gemm.csv, N 8192 K 2560 at tp 2) picks CK
 * (weight scale first) for some row counts and CK-tile (token scale first) for others; one
 * order is fixed here, CK's, so that a forward's bits do not depend on its row count.
 */
export const GDN_FP8_SCALE_ORDER: PtpcScaleOrder = 'weightFirst';

/**
 * Appends rank ctx.rank's GatedDeltaNet nodes for x [T, H] (bf16, replicated) and returns
 * the rank's PARTIAL [T, H] output (row-parallel out_proj; the caller adds the collective).
 * qkv -> conv+silu -> (gates from b, a) -> recurrence -> gated norm with z -> out_proj.
 * With ctx.fp8 (the FP8 PTPC path) in_proj_qkv and in_proj_z are FP8 GEMMs: the rank's
 * weight rows quantized online per output channel (a column-parallel shard holds whole
 * rows, so its scales are the full weight's), the activation rows per token, fused into the
 * HC mix (ctx.fp8.x) or here with the separate kernel. in_proj_b and in_proj_a stay bf16:
 * the tuned a8w8 GEMM ATOM ships for this projection (N 8192, K 2560 at tp 2) is qkv + z
 * alone (with b and a it would be N 8240). ATOM's stored loader keeps the whole packed
 * in_proj_qkvzba bf16 ("Published FP8 weights exclude GDN"); the FP8 projection follows
 * issue 8 and that table.
 */
export function buildGdn(b: GraphBuilder, ctx: SubLayerContext, x: ValueId): ValueId {
  const { config, layer, rank, tp, tokens: T } = ctx;
  const H = config.hiddenSize;
  const { keyHeadDim: dk, valueHeadDim: dv, convKernel } = config.linearAttention;
  const { k0, k1, v0, v1 } = gdnRankHeads(config, rank, tp);
  const kh = k1 - k0;
  const vh = v1 - v0;
  const channels = 2 * kh * dk + vh * dv;
  const w = gdnRankWeights(config, layer, rank, tp);
  const { value, node, linear } = subLayerNodes(b, ctx);
  const inProj = ctx.fp8 ? fp8InputProjection(b, ctx, x) : (name: string, ref: WeightRef, outF: number) => linear(name, x, b.weight(ref, [outF, H]), outF);

  const qkv = inProj('qkv', w.qkv, channels);
  const conv = value('conv', [T, channels]);
  node('gdnConvSilu', 'conv', [qkv, b.weight(w.conv, [channels, 1, convKernel])], [conv], { kernel: convKernel, ...(ctx.eager ? { roundConv: true } : {}) });
  const z = inProj('z', w.z, vh * dv);
  const bProj = linear('b', x, b.weight(w.b, [vh, H]), vh);
  const aProj = linear('a', x, b.weight(w.a, [vh, H]), vh);
  const g = value('g', [T, vh], 'f32');
  const beta = value('beta', [T, vh]);
  node('gdnGates', 'gates', [bProj, aProj, b.weight(w.aLog, [vh]), b.weight(w.dtBias, [vh])], [g, beta]);
  const o = value('core', [T, vh * dv]);
  // scale = keyDim^-0.5 rounded to fp32 once on the host, as fla passes `scale` to its kernel
  node('gdnRecurrence', 'recurrence', [conv, g, beta], [o], {
    keyHeads: kh,
    valueHeads: vh,
    keyDim: dk,
    valueDim: dv,
    scale: Math.fround(dk ** -0.5),
    l2Eps: GDN_L2NORM_EPS,
  });
  const y = value('normed', [T, vh * dv]);
  node('gdnGatedNorm', 'norm', [o, z, b.weight(w.norm, [dv])], [y], { heads: vh, headDim: dv, eps: config.rmsNormEps });
  return linear('out', y, b.weight(w.out, [H, vh * dv]), H);
}

/**
 * The FP8 input projection of ctx.fp8: x's per-token quantization (the mix's fused one, or
 * quantFp8PerToken here with the separate kernel's arithmetic), then per projection the
 * online weight quantization and the PTPC GEMM y = bf(fp8 GEMM) [T, outF].
 */
function fp8InputProjection(b: GraphBuilder, ctx: SubLayerContext, x: ValueId): (name: string, ref: WeightRef, outF: number) => ValueId {
  const { format } = ctx.fp8!;
  const dtype = fp8Info(format).dtype;
  const H = ctx.config.hiddenSize;
  const T = ctx.tokens;
  const { value, node } = subLayerNodes(b, ctx);
  let xq = ctx.fp8!.x;
  if (!xq) {
    xq = { q: value('x_q', [T, H], dtype), scale: value('x_scale', [T], 'f32') };
    node('quantFp8PerToken', 'x_quant', [x], [xq.q, xq.scale], { format, style: PRODUCTION_QUANT_STYLE.separate });
  }
  const { q, scale } = xq;
  return (name, ref, outF) => {
    const qW = value(`${name}_qw`, [outF, H], dtype);
    const sw = value(`${name}_sw`, [outF], 'f32');
    node('fp8QuantWeightPerChannel', `${name}_weight_quant`, [b.weight(ref, [outF, H])], [qW, sw], { format });
    const y = value(name, [T, outF]);
    node('fp8LinearPtpc', name, [q, scale, qW, sw], [y], { format, scaleOrder: GDN_FP8_SCALE_ORDER });
    return y;
  };
}
