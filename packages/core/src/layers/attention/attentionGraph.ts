import type { ValueId } from '../../graph/graph.ts';
import type { GraphBuilder } from '../../graph/graphBuilder.ts';
import type { SubLayerContext } from '../subLayerContext.ts';
import { subLayerNodes } from '../subLayerNodes.ts';
import { attentionRankHeads, attentionRankWeights } from './attentionWeights.ts';
import { qsaIndexerDims } from './qsaIndexer.ts';
import { buildQsaSelect, gatherQsaSelections, type RopeInputs } from './qsaGraph.ts';

function checkRope(b: GraphBuilder, ctx: SubLayerContext, rope: RopeInputs): void {
  const half = ctx.config.attention.ropeDims / 2;
  for (const [name, v] of [
    ['cos', rope.cos],
    ['sin', rope.sin],
  ] as const) {
    const shape = b.shapeOf(v);
    if (shape.length !== 2 || shape[0] !== ctx.tokens || shape[1] !== half) {
      throw new Error(`attention: RoPE ${name} table '${v}' is [${shape.join(',')}], expected [${ctx.tokens},${half}]`);
    }
  }
}

/**
 * Rank ctx.rank's attention after the selection: q_proj (query|gate per head), k_proj,
 * v_proj -> per-head norm + RoPE on q and k -> GQA attention over each row's kept keys ->
 * sigmoid output gate -> o_proj. Returns the rank's PARTIAL [T, H] output.
 */
function attentionCore(b: GraphBuilder, ctx: SubLayerContext, x: ValueId, rope: RopeInputs, blocks: ValueId): ValueId {
  const { config, layer, rank, tp, tokens: T } = ctx;
  const H = config.hiddenSize;
  const { headDim: hd, ropeDims } = config.attention;
  const { compressRatio, width } = qsaIndexerDims(config);
  const { h0, h1, kv0, kv1 } = attentionRankHeads(config, rank, tp);
  const qh = h1 - h0;
  const kvh = kv1 - kv0;
  const w = attentionRankWeights(config, layer, rank, tp);
  const { value, node, linear } = subLayerNodes(b, ctx);
  const normRope = (name: string, input: ValueId, normWeight: ValueId, heads: number, stride: number) => {
    const y = value(name, [T, heads * hd]);
    node('attnHeadNormRopeBf16', name, [input, normWeight, rope.cos, rope.sin], [y], {
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
  node('attnCausalQsa', 'core', [q, kr, v, blocks], [o], {
    heads: qh,
    kvHeads: kvh,
    headDim: hd,
    scale: Math.fround(hd ** -0.5),
    compressRatio,
    width,
    ...(ctx.eager ? { eagerSoftmax: true } : {}),
  });
  const y = value('gated', [T, qh * hd]);
  node('attnOutputGate', 'gate', [o, qg], [y], { heads: qh, headDim: hd });
  return linear('out', y, b.weight(w.o, [H, qh * hd]), H);
}

/**
 * Appends rank ctx.rank's gated full attention with its QSA indexer for x [T, H] (bf16,
 * replicated; positions 0..T-1), the selection replicated (every rank selects for all T
 * rows), and returns the rank's PARTIAL [T, H] output (row-parallel o_proj; the caller
 * adds the collective). A row-sharded selection (ctx.qsaRowChunk) needs every rank at
 * once: buildAttentionRanks.
 */
export function buildAttention(b: GraphBuilder, ctx: SubLayerContext, x: ValueId, rope: RopeInputs): ValueId {
  if (ctx.qsaRowChunk !== undefined && ctx.tp > 1)
    throw new Error('attention: a row-sharded QSA selection all-gathers across ranks: build it with buildAttentionRanks');
  checkRope(b, ctx, rope);
  return attentionCore(b, ctx, x, rope, buildQsaSelect(b, ctx, x, rope));
}

/**
 * Every rank's attention (ctxs[r] of rank r, xs[r] its x [T, H]): as buildAttention, or,
 * with ctx.qsaRowChunk, each rank selecting for its own rows and the selections
 * all-gathered between the ranks' indexers and their attention. Returns the partials.
 */
export function buildAttentionRanks(b: GraphBuilder, ctxs: readonly SubLayerContext[], xs: readonly ValueId[], rope: RopeInputs): ValueId[] {
  const { tp, qsaRowChunk } = ctxs[0];
  if (
    ctxs.length !== tp ||
    xs.length !== tp ||
    ctxs.some((c, r) => c.rank !== r || c.tp !== tp || c.qsaRowChunk !== qsaRowChunk || c.layer !== ctxs[0].layer)
  ) {
    throw new Error(`attention: buildAttentionRanks needs one context and one x per rank 0..${tp - 1} of one layer`);
  }
  ctxs.forEach((ctx) => {
    checkRope(b, ctx, rope);
  });
  const selections = ctxs.map((ctx, r) => buildQsaSelect(b, ctx, xs[r], rope));
  const blocks = qsaRowChunk !== undefined && tp > 1 ? gatherQsaSelections(b, ctxs, selections) : selections;
  return ctxs.map((ctx, r) => attentionCore(b, ctx, xs[r], rope, blocks[r]));
}
