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
 * Where the n-gram table lives (model.md "PLE"). 'gathered': nowhere on the device; the
 * pleNgramEmbed host op reads the rows the ids name from the checkpoint, run after run (what
 * a simulator of every rank in one process can afford: the Flash-Next table is 102 GB bf16).
 * 'vocabParallel': as ATOM keeps it in production (`VocabParallelEmbedding`), rank r holds
 * rows [r*R/tp, (r+1)*R/tp) of the R padded rows on its device, looks up the ids that fall
 * there (pleNgramEmbedShard, -0.0 elsewhere) and the ranks all-reduce with `reduce`: one
 * slice holds each id, so the sum is the whole table's lookup bit for bit. R must divide by
 * tp (ATOM refuses the same).
 */
export type PleTable = { kind: 'gathered' } | { kind: 'vocabParallel'; reduce: Record<string, unknown> };

/**
 * Appends every rank's PLE nodes for decoder layer ctxs[r].layer (replicated: every rank
 * computes all T rows) for the streams xs[r] [T, n*H] (after the pending combine) and the
 * token ids [T] (i32, a fresh sequence: EOS history before the start), and returns each
 * rank's out [T, n*H]; the stack then adds it: X = bf(X + out). Not a partial: no collective
 * but the vocab-parallel table's. Node scopes are HF's module names: ngram ids ->
 * ngram_embedding -> key_proj / value_proj -> norm_key, norm_query -> gate -> gated value ->
 * norm_conv -> conv1d + silu + G.
 */
export function buildPle(
  b: GraphBuilder,
  ctxs: readonly SubLayerContext[],
  xs: readonly ValueId[],
  tokenIds: ValueId,
  table: PleTable = { kind: 'gathered' },
): ValueId[] {
  const { config, layer, tp, tokens: T } = ctxs[0];
  const s = pleShape(config, layer);
  const heads = s.vocabSizes.length;
  const headDim = s.embedDim / heads;
  const slice = s.tableRows / tp;
  // each rank's embedding: the whole table's lookup, or its slice's (summed across ranks below)
  const looked = ctxs.map((ctx) => {
    const { value, node } = subLayerNodes(b, ctx);
    const ids = value('ngram_ids', [T, heads], 'i32');
    node('pleNgramIds', 'ngram_ids', [tokenIds], [ids], pleNgramIdsAttrs(s));
    const w = pleRankWeights(config, layer, ctx.rank, tp, table.kind);
    if (table.kind === 'gathered') {
      const e = value('embedding', [T, s.embedDim]);
      node('pleNgramEmbed', 'ngram_embedding', [ids, b.weight(w.table, [s.tableRows, headDim])], [e]);
      return e;
    }
    const e = value(tp === 1 ? 'embedding' : 'embedding_slice', [T, s.embedDim]);
    node('pleNgramEmbedShard', 'ngram_embedding', [ids, b.weight(w.table, [slice, headDim])], [e], { rowStart: ctx.rank * slice, tableRows: s.tableRows });
    return e;
  });
  let embedded = looked;
  if (table.kind === 'vocabParallel' && tp > 1) {
    embedded = ctxs.map((ctx) => subLayerNodes(b, ctx).value('embedding', [T, s.embedDim]));
    b.node({
      op: 'allReduce',
      rank: null,
      layer,
      scope: `${ctxs[0].scope}.ngram_embedding.all_reduce`,
      inputs: looked,
      outputs: embedded,
      attrs: table.reduce,
    });
  }
  return ctxs.map((ctx, r) => pleAfterEmbedding(b, ctx, xs[r], embedded[r]));
}

/** A rank's PLE from its n-gram embedding e [T, D] on: the projections, norms, gate and conv. */
function pleAfterEmbedding(b: GraphBuilder, ctx: SubLayerContext, x: ValueId, e: ValueId): ValueId {
  const { config, layer, rank, tp, tokens: T } = ctx;
  const s = pleShape(config, layer);
  const { hidden: H, streams: n, embedDim: D, eps } = s;
  const w = pleRankWeights(config, layer, rank, tp);
  const { value, node, linear } = subLayerNodes(b, ctx);
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
