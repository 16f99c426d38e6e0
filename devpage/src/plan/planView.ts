// The plan view's model: an SP plan turned into what the page draws (row bands per rank,
// padding, where sharding starts, the quant path, the exit gather) and every collective of one
// forward with the bytes each rank sends, beside SP off's total. Pure: no DOM, no execution
// (the graph is built, never run), so it works for flash-next too.
import { HC_QUANT_ROWS_MAX, type ModelConfig, type PlanCollective, planForMode, planTraffic, type ReduceAlgorithm, type SpMode, type SpPlan } from '@hcsp/core';
// `hcsp plan`'s own accounting (the decoder graph prefill builds, MTP head included), so the
// page's bytes are the run's and the CLI's.

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
  /** every collective of one forward, as `hcsp plan` lists them (the MTP head's too) */
  collectives: PlanCollective[];
  /** bytes each rank sends over the whole forward */
  totalBytesPerRank: number;
  /** the same forward with SP off (null when this plan is not sharded: it is that forward) */
  spOffBytesPerRank: number | null;
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

/** The plan view of one set of controls. */
export function planView(c: PlanControls): PlanView {
  const plan = planFromControls(c);
  const { tokens: T, tp, chunk: C } = plan;
  const H = c.config.hiddenSize;
  const [first, end] = plan.layers;
  const shardedLayers = plan.sp ? end - plan.spStartLayer! : 0;
  const unshardedLayers = end - first - shardedLayers;
  const traffic = planTraffic(c.config, plan, c.reduce);
  const spOff = plan.sp ? planTraffic(c.config, planForMode(c.config, T, tp, 'off', {}, c.config.mtp), c.reduce) : null;
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
    collectives: traffic.collectives,
    totalBytesPerRank: traffic.totalBytesPerRank,
    spOffBytesPerRank: spOff?.totalBytesPerRank ?? null,
    hcRowsPerStep: plan.sp ? C : T,
  };
}
