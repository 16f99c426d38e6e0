import type { ValueId } from '../../graph/graph.ts';
import type { GraphBuilder } from '../../graph/graphBuilder.ts';
import type { SubLayerContext } from '../subLayerContext.ts';
import { subLayerNodes } from '../subLayerNodes.ts';
import { pleRankWeights, pleShape } from './pleWeights.ts';

/**
 * Appends rank ctx.rank's PLE nodes (replicated: every rank computes all T rows) for the
 * streams x [T, n*H] (after the pending combine) and the token ids [T] (i32), and returns
 * out [T, n*H]; the stack then adds it: X = bf(X + out). Not a partial: no collective.
 * n-gram ids -> embedding -> key/value projections -> norms -> gate -> gated value ->
 * normed -> conv + silu + residual.
 */
export function buildPle(b: GraphBuilder, ctx: SubLayerContext, x: ValueId, tokenIds: ValueId): ValueId {
  const { config, layer, rank, tp, tokens: T } = ctx;
  const s = pleShape(config);
  const { hidden: H, streams: n, embedDim: D } = s;
  const heads = s.vocabSizes.length;
  const headDim = D / heads;
  const totalRows = s.vocabSizes.reduce((a, v) => a + v, 0);
  const w = pleRankWeights(config, layer, rank, tp);
  const { value, node } = subLayerNodes(b, ctx);

  const ids = value('ngram_ids', [T, heads], 'i32');
  node('pleNgramIds', 'ngram_ids', [tokenIds], [ids], {
    ngramSize: s.ngramSize,
    headsPerNgram: s.headsPerNgram,
    vocabSizes: s.vocabSizes,
    vocabSize: s.vocabSize,
    eosTokenId: s.eosTokenId,
  });
  const e = value('embedding', [T, D]);
  node('pleNgramEmbed', 'embedding', [ids, b.weight(w.tables, [totalRows, headDim])], [e], { vocabSizes: s.vocabSizes });
  const key = value('key', [T, H]);
  node('linear', 'key_proj', [e, b.weight(w.keyProj, [H, D])], [key]);
  const val = value('value', [T, H]);
  node('linear', 'value_proj', [e, b.weight(w.valueProj, [H, D])], [val]);
  const kNormed = value('key_normed', [T, H]);
  node('pleRmsNorm', 'key_norm', [key, b.weight(w.keyNorm, [H])], [kNormed], { groups: 1, eps: s.eps });
  const qNormed = value('query_normed', [T, n * H]);
  node('pleRmsNorm', 'query_norm', [x, b.weight(w.queryNorm, [n * H])], [qNormed], { groups: n, eps: s.eps });
  const gate = value('gate', [T, n], 'f32');
  node('pleGate', 'gate', [qNormed, kNormed], [gate], { streams: n });
  const gated = value('gated', [T, n * H]);
  node('pleGatedValue', 'gated_value', [gate, val], [gated], { streams: n });
  const gNormed = value('gated_normed', [T, n * H]);
  node('pleRmsNorm', 'out_norm', [gated, b.weight(w.outNorm, [n * H])], [gNormed], { groups: n, eps: s.eps });
  const out = value('out', [T, n * H]);
  node('pleConvSilu', 'conv', [gNormed, gated, b.weight(w.conv, [n * H, 1, s.convKernel])], [out], { dilation: s.convDilation });
  return out;
}
