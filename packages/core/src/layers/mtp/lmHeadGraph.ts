import type { ModelConfig } from '../../config/modelConfig.ts';
import type { ValueId } from '../../graph/graph.ts';
import type { GraphBuilder } from '../../graph/graphBuilder.ts';
import { lmHeadRankWeight } from './mtpWeights.ts';

/** Which rows get logits: the last position (generation, HF logits_to_keep = 1, ATOM's prefill slice) or every row. */
export type LogitsRows = 'last' | 'all';

export interface LmHeadContext {
  config: ModelConfig;
  tp: number;
  /** rows of the head input */
  tokens: number;
  rows: LogitsRows;
  /** node scope and value id prefix, e.g. "lm_head" */
  scope: string;
  layer: number;
}

export interface LmHeadValues {
  /** per rank: bf16 [1 or T, vocab], the same on every rank */
  logits: ValueId[];
  /** per rank: i32 [1 or T], the greedy tokens (torch.argmax rule) */
  ids: ValueId[];
}

/**
 * The untied LM head over the replicated head input h [T, H] (one per rank), vocab-parallel
 * as ATOM's ParallelLMHead: rank r multiplies by its V/tp rows of lm_head.weight, the [R, V/tp]
 * shards are all-gathered and laid side by side, every rank takes the argmax of the full
 * row. Each logit is the same dot product as in the unsharded GEMM, so the bits do not
 * depend on tp; the argmax of the full row equals ATOM's per-shard argmax with the
 * lowest-rank tie rule (compute_argmax_token).
 */
export function buildLmHead(b: GraphBuilder, ctx: LmHeadContext, h: ValueId[]): LmHeadValues {
  const { config, tp, tokens: T, scope, layer } = ctx;
  const V = config.vocabSize;
  const H = config.hiddenSize;
  const R = ctx.rows === 'last' ? 1 : T;
  const ranks = [...Array(tp).keys()];
  const id = (r: number, name: string) => `r${r}/${scope}/${name}`;
  const parts = ranks.map((r) => {
    let x = h[r];
    if (ctx.rows === 'last') {
      x = b.value(id(r, 'last'), [1, H], 'bf16', r);
      b.node({ op: 'sliceRows', rank: r, layer, scope: `${scope}.last`, inputs: [h[r]], outputs: [x], attrs: { start: T - 1, end: T } });
    }
    const y = b.value(id(r, tp === 1 ? 'logits' : 'logits_shard'), [R, V / tp], 'bf16', r);
    b.node({
      op: 'linear',
      rank: r,
      layer,
      scope: `${scope}.linear`,
      inputs: [x, b.weight(lmHeadRankWeight(config, r, tp), [V / tp, H])],
      outputs: [y],
      attrs: {},
    });
    return y;
  });
  let logits = parts;
  if (tp > 1) {
    const gathered = ranks.map((r) => b.value(id(r, 'gathered'), [R * tp, V / tp], 'bf16', r));
    b.node({ op: 'allGather', rank: null, layer, scope: `${scope}.all_gather`, inputs: parts, outputs: gathered, attrs: {} });
    logits = ranks.map((r) => {
      const y = b.value(id(r, 'logits'), [R, V], 'bf16', r);
      b.node({ op: 'rowBlocksToCols', rank: r, layer, scope: `${scope}.vocab_cols`, inputs: [gathered[r]], outputs: [y], attrs: { parts: tp } });
      return y;
    });
  }
  const ids = ranks.map((r) => {
    const y = b.value(id(r, 'argmax'), [R], 'i32', r);
    b.node({ op: 'argmax', rank: r, layer, scope: `${scope}.argmax`, inputs: [logits[r]], outputs: [y], attrs: {} });
    return y;
  });
  return { logits, ids };
}
