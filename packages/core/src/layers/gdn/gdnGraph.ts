import type { ValueId } from '../../graph/graph.ts';
import type { GraphBuilder } from '../../graph/graphBuilder.ts';
import type { SubLayerContext } from '../subLayerContext.ts';
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
  const id = (name: string) => `r${rank}/${ctx.scope}/${name}`;
  const node = (op: string, name: string, inputs: ValueId[], outputs: ValueId[], attrs: Record<string, unknown> = {}) =>
    b.node({ op, rank, inputs, outputs, attrs, scope: `${ctx.scope}.${name}`, layer });
  const linear = (name: string, input: ValueId, weight: ValueId, outF: number) => {
    const y = b.value(id(name), [T, outF], 'bf16', rank);
    node('linear', name, [input, weight], [y]);
    return y;
  };

  const qkv = linear('qkv', x, b.weight(w.qkv, [channels, H]), channels);
  const conv = b.value(id('conv'), [T, channels], 'bf16', rank);
  node('gdnConvSilu', 'conv', [qkv, b.weight(w.conv, [channels, 1, convKernel])], [conv], { kernel: convKernel });
  const z = linear('z', x, b.weight(w.z, [vh * dv, H]), vh * dv);
  const bProj = linear('b', x, b.weight(w.b, [vh, H]), vh);
  const aProj = linear('a', x, b.weight(w.a, [vh, H]), vh);
  const g = b.value(id('g'), [T, vh], 'f32', rank);
  const beta = b.value(id('beta'), [T, vh], 'bf16', rank);
  node('gdnGates', 'gates', [bProj, aProj, b.weight(w.aLog, [vh]), b.weight(w.dtBias, [vh])], [g, beta]);
  const o = b.value(id('core'), [T, vh * dv], 'bf16', rank);
  // scale = keyDim^-0.5 rounded to fp32 once on the host, as fla passes `scale` to its kernel
  node('gdnRecurrence', 'recurrence', [conv, g, beta], [o], {
    keyHeads: kh,
    valueHeads: vh,
    keyDim: dk,
    valueDim: dv,
    scale: Math.fround(dk ** -0.5),
    l2Eps: GDN_L2NORM_EPS,
  });
  const y = b.value(id('normed'), [T, vh * dv], 'bf16', rank);
  node('gdnGatedNorm', 'norm', [o, z, b.weight(w.norm, [dv])], [y], { heads: vh, headDim: dv, eps: config.rmsNormEps });
  return linear('out', y, b.weight(w.out, [H, vh * dv]), H);
}
