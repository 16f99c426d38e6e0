import type { ValueId } from '../../graph/graph.ts';
import type { GraphBuilder } from '../../graph/graphBuilder.ts';
import type { SubLayerContext } from '../subLayerContext.ts';
import { subLayerNodes } from '../subLayerNodes.ts';
import type { PleHashParams } from './pleHash.ts';
import { pleRankWeights, pleShape } from './pleWeights.ts';

/**
 * The attributes of a `pleNgramIds` node. The multipliers travel as decimal strings: they
 * exceed 2^53 (a JS number would lose them) and a graph's attributes must stay plain JSON
 * (no BigInt). They are passed, not re-derived in the kernel, so that the node carries
 * exactly the constants the checkpoint's buffers hold (pleBuffers).
 */
export function pleNgramIdsAttrs(p: PleHashParams): Record<string, unknown> {
  return {
    ngramSize: p.ngramSize,
    headsPerNgram: p.headsPerNgram,
    multipliers: p.multipliers.map((m) => m.toString()),
    vocabSizes: [...p.vocabSizes],
    offsets: [...p.offsets],
    vocabSize: p.vocabSize,
    eosTokenId: p.eosTokenId,
  };
}

/**
 * Appends rank ctx.rank's PLE nodes for decoder layer ctx.layer (replicated: every rank
 * computes all T rows) for the streams x [T, n*H] (after the pending combine) and the token
 * ids [T] (i32, a fresh sequence: EOS history before the start), and returns out [T, n*H];
 * the stack then adds it: X = bf(X + out). Not a partial: no collective. Node scopes are
 * HF's module names: ngram ids -> ngram_embedding -> key_proj / value_proj -> norm_key,
 * norm_query -> gate -> gated value -> norm_conv -> conv1d + silu + G.
 */
export function buildPle(b: GraphBuilder, ctx: SubLayerContext, x: ValueId, tokenIds: ValueId): ValueId {
  const { config, layer, rank, tp, tokens: T } = ctx;
  const s = pleShape(config, layer);
  const { hidden: H, streams: n, embedDim: D, eps } = s;
  const heads = s.vocabSizes.length;
  const w = pleRankWeights(config, layer, rank, tp);
  const { value, node, linear } = subLayerNodes(b, ctx);

  const ids = value('ngram_ids', [T, heads], 'i32');
  node('pleNgramIds', 'ngram_ids', [tokenIds], [ids], pleNgramIdsAttrs(s));
  const e = value('embedding', [T, D]);
  node('pleNgramEmbed', 'ngram_embedding', [ids, b.weight(w.table, [s.tableRows, D / heads])], [e]);
  const key = linear('key_proj', e, b.weight(w.keyProj, [n * H, D]), n * H);
  const val = linear('value_proj', e, b.weight(w.valueProj, [H, D]), H);
  const norm = (name: string, input: ValueId, weight: ValueId) => {
    const y = value(name, [T, n * H]);
    node('pleRms1pNorm', name, [input, weight], [y], { groups: n, eps });
    return y;
  };
  const kNormed = norm('norm_key', key, b.weight(w.normKey, [n * H]));
  const qNormed = norm('norm_query', x, b.weight(w.normQuery, [n * H]));
  const gate = value('gate', [T, n]);
  node('pleGate', 'gate', [kNormed, qNormed], [gate], { streams: n });
  const gated = value('gated', [T, n * H]);
  node('pleGatedValue', 'gated_value', [gate, val], [gated], { streams: n });
  const gNormed = norm('norm_conv', gated, b.weight(w.normConv, [n * H]));
  const out = value('out', [T, n * H]);
  node('pleConvSilu', 'conv1d', [gNormed, gated, b.weight(w.conv, [n * H, 1, s.convKernel])], [out], { dilation: s.convDilation });
  return out;
}
