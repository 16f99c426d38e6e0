// The plan view's model: an SP plan turned into what the page draws (row bands per rank,
// padding, where sharding starts, the quant path, the exit gather) and the collectives one
// sub-layer issues with the bytes each rank sends. Pure: no DOM, no execution, so it works
// for flash-next too.
import {
  bytesPerElement,
  commBytesOf,
  HC_QUANT_ROWS_MAX,
  planForMode,
  type CollectiveOp,
  type ModelConfig,
  type ReduceAlgorithm,
  type SpMode,
  type SpPlan,
} from '@hcsp/core';

/** One rank's lane in the row-band diagram, in padded row coordinates. */
export interface RowBand {
  rank: number;
  /** first owned row */
  start: number;
  /** one past the last owned row below T (start + realRows) */
  realEnd: number;
  /** one past the last owned row, padding included */
  end: number;
  realRows: number;
  padRows: number;
}

/** One collective of a sub-layer (or the exit) as the plan predicts it. */
export interface PlannedCollective {
  where: string;
  kind: CollectiveOp;
  algorithm: ReduceAlgorithm | null;
  /** per-rank [rows, cols] in and out */
  inShape: [number, number];
  outShape: [number, number];
  /** bytes each rank sends once (collectives/commBytes.ts accounting) */
  bytesPerRank: number;
  /** how often it runs in the forward */
  count: number;
}

export interface PlanView {
  plan: SpPlan;
  /** x extent of the diagram: C * tp when sharded, T otherwise */
  diagramRows: number;
  bands: RowBand[];
  /** sub-layers (attn + mlp) of the stage that run sharded / unsharded */
  shardedSubLayers: number;
  unshardedSubLayers: number;
  quantText: string;
  gatherText: string;
  collectives: PlannedCollective[];
  /** bytes each rank sends over the whole forward */
  totalBytesPerRank: number;
  /** rows each rank runs through one sharded HC step (C), against T unsharded */
  hcRowsPerStep: number;
}

export interface PlanControls {
  config: ModelConfig;
  tokens: number;
  tp: number;
  sp: SpMode;
  reduce: ReduceAlgorithm;
  /** the raw ATOM_QWEN4_EXP_SP_MIN_TOKENS text; undefined = unset */
  minTokensEnv: string | undefined;
}

/**
 * The plan exactly as preparePrefill (model/prefill.ts) derives it from an SP mode: 'off'
 * is the variable's own "0 disables", 'on' skips the token thresholds, 'auto' reads the
 * variable. Repeated here (not via preparePrefill) so the plan view never builds a graph.
 */
export function planFromControls(c: PlanControls): SpPlan {
  const env = c.minTokensEnv === undefined ? {} : { ATOM_QWEN4_EXP_SP_MIN_TOKENS: c.minTokensEnv };
  return planForMode(c.config, c.tokens, c.tp, c.sp, env, c.config.mtp);
}

/** Row bands of a plan: each rank's owned rows [start, end), split into real and padding rows. */
export function planBands(plan: SpPlan): RowBand[] {
  return plan.shards.map((s) => ({ rank: s.rank, start: s.start, realEnd: s.start + s.realRows, end: s.end, realRows: s.realRows, padRows: s.padRows }));
}

function collective(where: string, kind: CollectiveOp, algorithm: ReduceAlgorithm | null, inShape: [number, number], outShape: [number, number], tp: number, count: number): PlannedCollective {
  const bf16 = bytesPerElement('bf16');
  const bytesPerRank = commBytesOf(kind, algorithm, inShape[0] * inShape[1] * bf16, outShape[0] * outShape[1] * bf16, tp);
  return { where, kind, algorithm, inShape, outShape, bytesPerRank, count };
}

/** The plan view of one set of controls. */
export function planView(c: PlanControls): PlanView {
  const plan = planFromControls(c);
  const { tokens: T, tp, chunk: C } = plan;
  const H = c.config.hiddenSize;
  const nH = c.config.hc.count * H;
  const [first, end] = plan.layers;
  const shardedLayers = plan.sp ? end - plan.spStartLayer! : 0;
  const unshardedLayers = end - first - shardedLayers;
  const collectives: PlannedCollective[] = [];
  if (tp > 1 && unshardedLayers > 0) {
    collectives.push(collective('unsharded sub-layer output', 'allReduce', c.reduce, [T, H], [T, H], tp, unshardedLayers * 2));
  }
  if (plan.sp && shardedLayers > 0) {
    collectives.push(collective('sharded sub-layer input x', 'allGather', null, [C, H], [C * tp, H], tp, shardedLayers * 2));
    collectives.push(collective('sharded sub-layer output (padded)', 'reduceScatter', c.reduce, [C * tp, H], [C, H], tp, shardedLayers * 2));
    const exitWidth = plan.gather === 'hc_state' ? nH : H;
    collectives.push(collective(`exit: ${plan.gather === 'hc_state' ? 'pre-mixer HC state' : 'mixer output'}`, 'allGather', null, [C, exitWidth], [C * tp, exitWidth], tp, 1));
  }
  const quantText =
    plan.quant === 'fused'
      ? `fused hc_gated_mean_quant (unsharded, T ${T} <= ${HC_QUANT_ROWS_MAX})`
      : `separate: bf16 gated mean, then per-token FP8 quant of the ${plan.sp ? 'gathered ' : ''}rows`;
  const gatherText =
    plan.gather === null
      ? 'nothing: the streams are never sharded'
      : plan.gather === 'hc_state'
        ? `the pre-mixer HC state [${T}, ${c.config.hc.count}, ${H}] (MTP on), trimmed to T rows; the mixer then runs on all rows`
        : `the mixer output [${T}, ${H}], trimmed to T rows`;
  return {
    plan,
    diagramRows: plan.paddedTokens,
    bands: planBands(plan),
    shardedSubLayers: shardedLayers * 2,
    unshardedSubLayers: unshardedLayers * 2,
    quantText,
    gatherText,
    collectives,
    totalBytesPerRank: collectives.reduce((s, k) => s + k.bytesPerRank * k.count, 0),
    hcRowsPerStep: plan.sp ? C : T,
  };
}
