import type { ValueId } from '../../graph/graph.ts';
import type { GraphBuilder } from '../../graph/graphBuilder.ts';
import { tiesAttr, type SubLayerContext } from '../subLayerContext.ts';
import { subLayerNodes } from '../subLayerNodes.ts';
import { attentionRankWeights } from './attentionWeights.ts';
import { qsaIndexerDims } from './qsaIndexer.ts';

// The QSA indexer as graph nodes (qsaIndexer.ts is the math): index_qk_proj as two linears
// (query rows, k_raw rows: the same dot products as the one fused GEMM), the block keys from
// all T rows' k_raw, the queries normed and roped, and the selection, an i32 [rows, width]
// block list per query row (qsaSelection.ts's layout).

/** The bf16 RoPE tables [T, ropeDims/2] (ropeTablesBf16), shared by the attention and its indexer. */
export interface RopeInputs {
  cos: ValueId;
  sin: ValueId;
}

/** Name of the selection value [T, width] (i32) every rank's attention reads: `r<rank>/<scope>/qsa_blocks`. */
export const QSA_BLOCKS = 'qsa_blocks';

/**
 * Rank ctx.rank's selection nodes for x [T, H] (replicated). Replicated: the selection of
 * all T rows, [T, width]. Row-sharded (ctx.qsaRowChunk = C): the selection of the rank's rows
 * [rank*C, (rank+1)*C), [C, width], rows past T all -1; gatherQsaSelections joins the ranks'.
 * Block keys always come from every row's k_raw (each row's scores need all its blocks).
 */
export function buildQsaSelect(b: GraphBuilder, ctx: SubLayerContext, x: ValueId, rope: RopeInputs): ValueId {
  const { config, layer, rank, tp, tokens: T } = ctx;
  const H = config.hiddenSize;
  const d = qsaIndexerDims(config);
  const { nHeads: nh, headDim: dh, ropeDims, compressRatio, width, eps } = d;
  const w = attentionRankWeights(config, layer, rank, tp);
  const { value, node, linear } = subLayerNodes(b, ctx);

  const kRaw = linear('index_k', x, b.weight(w.indexK, [dh, H]), dh);
  const kb = value('qsa_block_keys', [Math.floor(T / compressRatio), dh]);
  node('qsaBlockKeys', 'qsa_block_keys', [kRaw, b.weight(w.indexKNorm, [dh]), rope.cos, rope.sin], [kb], { headDim: dh, compressRatio, ropeDims, eps });

  const sharded = ctx.qsaRowChunk !== undefined && tp > 1;
  let rows = T;
  let qIn = x;
  let tables = rope;
  if (sharded) {
    const C = ctx.qsaRowChunk!;
    if (!Number.isInteger(C) || C < 1 || C * tp < T) throw new Error(`attention: QSA row chunk ${C} x tp ${tp} does not cover ${T} rows`);
    // the rank's rows of x and of the tables (zero past T: those rows select nothing)
    const shard = (name: string, v: ValueId) => {
      const s = value(name, [C, b.shapeOf(v)[1]]);
      node('shard', name, [v], [s], { rank, tp, chunk: C });
      return s;
    };
    rows = C;
    qIn = shard('index_x', x);
    tables = { cos: shard('index_cos', rope.cos), sin: shard('index_sin', rope.sin) };
  }
  const qRaw = value('index_q', [rows, nh * dh]);
  node('linear', 'index_q', [qIn, b.weight(w.indexQ, [nh * dh, H])], [qRaw]);
  const q = value('index_q_rope', [rows, nh * dh]);
  node('attnHeadNormRopeBf16', 'index_q_rope', [qRaw, b.weight(w.indexQNorm, [dh]), tables.cos, tables.sin], [q], {
    heads: nh,
    headDim: dh,
    stride: dh,
    offset: 0,
    ropeDims,
    eps,
  });
  const blocks = value(sharded ? `${QSA_BLOCKS}_shard` : QSA_BLOCKS, [rows, width], 'i32');
  const r0 = sharded ? rank * ctx.qsaRowChunk! : 0;
  node('qsaSelect', 'qsa_select', [q, kb], [blocks], { r0, tokens: T, nHeads: nh, headDim: dh, compressRatio, width, ...tiesAttr(ctx) });
  return blocks;
}

/** All-gathers the ranks' row-sharded selections [C, width] and trims them to the T rows: each rank's [T, width]. */
export function gatherQsaSelections(b: GraphBuilder, ctxs: readonly SubLayerContext[], shards: readonly ValueId[]): ValueId[] {
  const { config, layer, tp, tokens: T, scope, qsaRowChunk: C } = ctxs[0];
  const { width } = qsaIndexerDims(config);
  const full = ctxs.map((ctx) => subLayerNodes(b, ctx).value(`${QSA_BLOCKS}_gathered`, [C! * tp, width], 'i32'));
  b.node({ op: 'allGather', rank: null, layer, scope: `${scope}.qsa_all_gather`, inputs: [...shards], outputs: full, attrs: {} });
  return ctxs.map((ctx, r) => {
    const { value, node } = subLayerNodes(b, ctx);
    const blocks = value(QSA_BLOCKS, [T, width], 'i32');
    node('trim', 'qsa_trim', [full[r]], [blocks], { rows: T });
    return blocks;
  });
}
