// What `hcsp xcheck` reports (its --json object, the HTML report's data, what the dev page
// reads): the runs compared, and per pair of runs every named tensor's differences.
import type { RoutingDifference } from './flipDiff.ts';
import type { TensorDiff } from './tensorDiff.ts';
import type { PairVerdict } from './verdictTypes.ts';

/** One run of the comparison: a SPEC as the user wrote it and what it resolved to. */
export interface XcheckRun {
  spec: string;
  backend: string;
  /** the backend's description (device, threads, GEMM) */
  device: string;
  options: Record<string, string>;
  /** the SP plan this run used */
  sp: boolean;
  chunk: number;
  reduce: string;
  seconds: number;
}

export interface XcheckTensor extends TensorDiff {
  name: string;
  /** decoder layer (-1: embedding; the exit layer for final/lm-head/MTP values) */
  layer: number;
  /** the rank whose own value this is (partials, collective outputs), null for values of all T rows */
  rank: number | null;
}

export interface XcheckPair {
  /** the run compared (a) and the first SPEC's run it is compared against (b) */
  a: string;
  b: string;
  tensors: XcheckTensor[];
  /** differing elements over all tensors, and the largest ulp distance */
  differing: number;
  maxUlp: number;
  /** the MoE layers whose routers chose other experts for some rows (layers.{i}.mlp.topk_ids); absent in older reports */
  routing?: RoutingDifference[];
  /** the QSA layers where some row keeps another number of blocks (layers.{i}.attn.kept); absent in older reports */
  selection?: RoutingDifference[];
  /** the verdict (verdict.ts: pairVerdict); absent in older reports (a reader recomputes it) */
  verdict?: PairVerdict;
}

export interface XcheckReport {
  /** false when --max-ulp was given and some tensor exceeded it */
  ok: boolean;
  config: string;
  tokens: number;
  tp: number;
  seed: number;
  layers: [number, number];
  weights: string;
  maxUlpGate: number | null;
  /** the float64 evaluation of the first SPEC's graph was run (attribution available) */
  exact: boolean;
  runs: XcheckRun[];
  pairs: XcheckPair[];
  /**
   * --golden: the run compared against the file (a: the file, b: the first SPEC); `unused`: the
   * file's tensors the run has no value of that name for; `notCompared`: the run's golden-dump
   * names the file lacks (an HF dump has no mtp.logits). Neither is compared; a tensor both
   * have with another shape or dtype is refused before the run.
   */
  golden: { file: string; unused: string[]; notCompared: string[] } | null;
}

/** The layer and rank a named tensor belongs to: layers.{i}.… ; embed: -1; final/logits/mtp: `exitLayer`; `.r{k}` suffix: rank k. */
export function tensorPlace(name: string, exitLayer: number): { layer: number; rank: number | null } {
  const m = /^layers\.(\d+)\./.exec(name);
  const layer = m ? Number(m[1]) : name === 'embed' || name === 'input_ids' ? -1 : exitLayer;
  const r = /\.r(\d+)$/.exec(name);
  return { layer, rank: r ? Number(r[1]) : null };
}

/** the largest row-scaled ulp distance of a pair's tensors */
export function maxRowUlp(pair: XcheckPair): number {
  return pair.tensors.reduce((acc, t) => Math.max(acc, t.rowUlp ?? 0), 0);
}

/** NaN or Inf elements of a tensor on either side (TensorDiff.nonFinite) */
export function nonFiniteCount(t: XcheckTensor): number {
  return t.nonFinite.a + t.nonFinite.b;
}

/**
 * The tensors over --max-ulp: their row-scaled ulp distance (|a - b| in bf16 ulps of the row's
 * largest |b|, the unit of a reordered sum) is above it; a non-float value that differs at all
 * counts as over. Row-scaled, not elementwise: between two values near zero the elementwise
 * distance counts the bf16 patterns between them (thousands across a sign change) and says
 * nothing about the error. A tensor holding NaN or Inf on either side is over whatever the
 * gate, also where both sides hold the same bits: no distance to a NaN is "within" k ulps,
 * and a run (or golden) that produced one has failed.
 */
export function overGate(pairs: readonly XcheckPair[], maxUlp: number): { pair: XcheckPair; tensor: XcheckTensor }[] {
  const out: { pair: XcheckPair; tensor: XcheckTensor }[] = [];
  for (const pair of pairs) {
    for (const tensor of pair.tensors) {
      const over = nonFiniteCount(tensor) > 0 || (tensor.rowUlp === null ? tensor.differing > 0 : !(tensor.rowUlp <= maxUlp));
      if (over) out.push({ pair, tensor });
    }
  }
  return out;
}
