// The sequence-parallel plan of one forward of a pipeline stage (sequence-parallel.md):
// whether the streams are sharded, from which layer, each rank's rows and padding, which
// FP8 quantization path runs and what is gathered at the exit. The graph builder consumes it.
import type { ModelConfig } from '../config/modelConfig.ts';
import { validateTp } from '../config/validate.ts';
import { HC_QUANT_ROWS_MAX, spGate } from './gate.ts';

/** Rows of one rank. [start, end) is the owned range in padded row coordinates. */
export interface RankShard {
  rank: number;
  start: number;
  end: number;
  /** owned rows below T */
  realRows: number;
  /** owned rows at or past T (zero streams) */
  padRows: number;
}

export interface SpPlan {
  sp: boolean;
  reason: string | null;
  config: string;
  tokens: number;
  tp: number;
  /** rows per rank: ceil(T / tp) when sharded, T otherwise */
  chunk: number;
  /** chunk * tp when sharded, T otherwise */
  paddedTokens: number;
  shards: RankShard[];
  /** first sharded layer (after the last PLE layer of the stage); null when not sharded */
  spStartLayer: number | null;
  /** 'fused' = hc_gated_mean_quant (unsharded, T <= 1024); 'separate' = bf16 gated mean + per-token quant */
  quant: 'fused' | 'separate';
  /** exit gather: the pre-mixer HC state [T, n, H] when MTP is on, else the mixer output; null when not sharded */
  gather: 'hc_state' | 'mixer' | null;
  /** decoder layers [start, end) of this stage */
  layers: [number, number];
  mtp: boolean;
  /** the token thresholds were skipped (testing path) */
  forced: boolean;
}

export interface PlanInput {
  config: ModelConfig;
  tokens: number;
  tp: number;
  /** token floor, see readSpMinTokens; 0 disables */
  minTokens: number;
  capturing: boolean;
  /** decoder layers [start, end) of this stage; default the whole model */
  layers?: [number, number];
  /** the MTP head runs after this forward */
  mtp: boolean;
  /** skip the token thresholds (see SpGateInput.force) */
  force?: boolean;
}

function checkPositiveInt(v: number, name: string): void {
  if (!Number.isSafeInteger(v) || v <= 0) throw new Error(`${name} must be a positive integer, got ${v}`);
}

/** Rows per rank when T rows are split over tp ranks: ceil(T / tp). */
export function chunkRows(tokens: number, tp: number): number {
  checkPositiveInt(tokens, 'tokens');
  checkPositiveInt(tp, 'tp');
  return Math.ceil(tokens / tp);
}

/** Rank `rank`'s rows of a T-row tensor split into tp chunks of ceil(T / tp) rows. */
export function shardRows(tokens: number, tp: number, rank: number): RankShard {
  const chunk = chunkRows(tokens, tp);
  if (!Number.isSafeInteger(rank) || rank < 0 || rank >= tp) throw new Error(`rank must be an integer in [0, ${tp}), got ${rank}`);
  const start = rank * chunk;
  const end = start + chunk;
  // A rank may own only padding (e.g. T = 1 at tp 8: ranks 1..7 hold one zero row each).
  const realRows = Math.max(0, Math.min(end, tokens) - start);
  return { rank, start, end, realRows, padRows: chunk - realRows };
}

/**
 * First layer whose streams are sharded: one past the last PLE layer inside [start, end),
 * or `start` when the stage holds no PLE layer (the PLE's causal conv and n-gram context
 * need all rows, so sharding may only begin after it).
 */
export function spStartLayerOf(config: ModelConfig, layers: [number, number]): number {
  const [start, end] = layers;
  const inStage = config.ple.layerIds.filter((l) => l >= start && l < end);
  return inStage.length > 0 ? Math.max(...inStage) + 1 : start;
}

function checkLayers(config: ModelConfig, layers: [number, number]): void {
  const [start, end] = layers;
  const n = config.numLayers;
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 0 || end > n || start >= end) {
    throw new Error(`layers ${start}:${end} must satisfy 0 <= start < end <= ${n} (config '${config.name}' has ${n} decoder layers)`);
  }
}

/** Plans one forward of T tokens at tensor parallel size tp over the stage `layers`. */
export function planForward(input: PlanInput): SpPlan {
  const { config, tokens, tp, minTokens, capturing, mtp, force = false } = input;
  const layers: [number, number] = input.layers ?? [0, config.numLayers];
  checkPositiveInt(tokens, 'tokens');
  checkPositiveInt(tp, 'tp');
  validateTp(config, tp);
  checkLayers(config, layers);
  if (mtp && !config.mtp) throw new Error(`mtp requested but config '${config.name}' has no MTP layer`);
  const start = spStartLayerOf(config, layers);
  const gate = spGate({ tp, tokens, minTokens, capturing, spStartLayer: start, endLayer: layers[1], force });
  // Spread in this order so the JSON of `hcsp plan` reads decision first.
  const head = { sp: gate.sp, reason: gate.reason, config: config.name, tokens, tp };
  const tail = { layers, mtp, forced: force };
  if (!gate.sp) {
    const shards = Array.from({ length: tp }, (_, rank) => ({ rank, start: 0, end: tokens, realRows: tokens, padRows: 0 }));
    return {
      ...head,
      chunk: tokens,
      paddedTokens: tokens,
      shards,
      spStartLayer: null,
      quant: tokens <= HC_QUANT_ROWS_MAX ? 'fused' : 'separate',
      gather: null,
      ...tail,
    };
  }
  const chunk = chunkRows(tokens, tp);
  return {
    ...head,
    chunk,
    paddedTokens: chunk * tp,
    shards: Array.from({ length: tp }, (_, rank) => shardRows(tokens, tp, rank)),
    spStartLayer: start,
    quant: 'separate',
    gather: mtp ? 'hc_state' : 'mixer',
    ...tail,
  };
}
