import type { ValueId } from '../../graph/graph.ts';
import type { GraphBuilder } from '../../graph/graphBuilder.ts';
import type { SubLayerContext } from '../subLayerContext.ts';
import { subLayerNodes } from '../subLayerNodes.ts';
import { GDN_L2NORM_EPS } from './gdnMath.ts';
import { gdnRankHeads, gdnRankWeights } from './gdnWeights.ts';

/**
 * Appends rank ctx.rank's GatedDeltaNet nodes for x [T, H] (bf16, replicated) and returns
 * the rank's PARTIAL [T, H] output (row-parallel out_proj; the caller adds the collective).
 * qkv -> conv+silu -> (gates from b, a) -> recurrence -> gated norm with z -> out_proj.
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

  const qkv = linear('qkv', x, b.weight(w.qkv, [channels, H]), channels);
  const conv = value('conv', [T, channels]);
  node('gdnConvSilu', 'conv', [qkv, b.weight(w.conv, [channels, 1, convKernel])], [conv], { kernel: convKernel });
  const z = linear('z', x, b.weight(w.z, [vh * dv, H]), vh * dv);
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
