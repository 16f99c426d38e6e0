import type { ValueId } from '../../graph/graph.ts';
import type { GraphBuilder } from '../../graph/graphBuilder.ts';
import type { SubLayerContext } from '../subLayerContext.ts';
import { subLayerNodes } from '../subLayerNodes.ts';
import { attentionRankHeads, attentionRankWeights } from './attentionWeights.ts';

/** The RoPE tables as graph inputs: f32 [T, ropeDims/2] each, from ropeTables(config, T). */
export interface RopeInputs {
  cos: ValueId;
  sin: ValueId;
}

/**
 * Appends rank ctx.rank's gated full-attention nodes for x [T, H] (bf16, replicated;
 * positions 0..T-1) and returns the rank's PARTIAL [T, H] output (row-parallel o_proj; the
 * caller adds the collective). q_proj (query|gate per head), k_proj, v_proj -> per-head
 * norm + RoPE on q and k -> causal GQA attention -> sigmoid output gate -> o_proj.
 */
export function buildAttention(b: GraphBuilder, ctx: SubLayerContext, x: ValueId, rope: RopeInputs): ValueId {
  const { config, layer, rank, tp, tokens: T } = ctx;
  const H = config.hiddenSize;
  const { headDim: hd, ropeDims } = config.attention;
  const { h0, h1, kv0, kv1 } = attentionRankHeads(config, rank, tp);
  const qh = h1 - h0;
  const kvh = kv1 - kv0;
  const half = ropeDims / 2;
  for (const [name, v] of [['cos', rope.cos], ['sin', rope.sin]] as const) {
    const shape = b.shapeOf(v);
    if (shape.length !== 2 || shape[0] !== T || shape[1] !== half) {
      throw new Error(`attention: RoPE ${name} table '${v}' is [${shape.join(',')}], expected [${T},${half}]`);
    }
  }
  const w = attentionRankWeights(config, layer, rank, tp);
  const { value, node, linear } = subLayerNodes(b, ctx);
  const normRope = (name: string, input: ValueId, normWeight: ValueId, heads: number, stride: number) => {
    const y = value(name, [T, heads * hd]);
    node('attnHeadNormRope', name, [input, normWeight, rope.cos, rope.sin], [y], {
      heads,
      headDim: hd,
      stride,
      offset: 0,
      ropeDims,
      eps: config.rmsNormEps,
    });
    return y;
  };

  const qg = linear('qgate', x, b.weight(w.q, [qh * 2 * hd, H]), qh * 2 * hd);
  const k = linear('k', x, b.weight(w.k, [kvh * hd, H]), kvh * hd);
  const v = linear('v', x, b.weight(w.v, [kvh * hd, H]), kvh * hd);
  const q = normRope('qrope', qg, b.weight(w.qNorm, [hd]), qh, 2 * hd);
  const kr = normRope('krope', k, b.weight(w.kNorm, [hd]), kvh, hd);
  const o = value('core', [T, qh * hd]);
  // scale = headDim^-0.5 rounded to fp32 on the host (exactly 1/16 for head_dim 256)
  node('attnCausal', 'core', [q, kr, v], [o], { heads: qh, kvHeads: kvh, headDim: hd, scale: Math.fround(hd ** -0.5) });
  const y = value('gated', [T, qh * hd]);
  node('attnOutputGate', 'gate', [o, qg], [y], { heads: qh, headDim: hd });
  return linear('out', y, b.weight(w.o, [H, qh * hd]), H);
}
