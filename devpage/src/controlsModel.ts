// The page's controls as typed values: the raw form strings in, the plan view's and the run
// view's inputs out, or an error naming the bad field and value.
import { getConfig, REDUCE_ALGORITHMS, type ReduceAlgorithm, type SpMode } from '@hcsp/core';
import { planFromControls, type PlanControls } from './plan/planView.ts';
import type { RunRequest, SubLayerChoice } from './run/runComparison.ts';

/** Field names of the form (the `name` attribute of each control). */
export interface RawControls {
  config: string;
  tokens: string;
  tp: string;
  sp: string;
  reduce: string;
  seed: string;
  /** empty = ATOM_QWEN4_EXP_SP_MIN_TOKENS unset */
  minTokens: string;
  subLayers: string;
  /** run b: 'off' or 'on' */
  bSp: string;
  /** run b's algorithm; 'same' = run a's */
  bReduce: string;
}

/**
 * What the page shows on first load: the CLI's defaults (config small, tp 4, seed 0) with the
 * README's xcheck example (T 300, SP forced on), so the first picture is the sharded forward
 * (75 rows per rank) and a run matches `hcsp prefill --tokens 300 --sp on`.
 */
export const DEFAULT_CONTROLS: RawControls = {
  config: 'small',
  tokens: '300',
  tp: '4',
  sp: 'on',
  reduce: 'ring',
  seed: '0',
  minTokens: '',
  subLayers: 'stand-in',
  bSp: 'off',
  bReduce: 'same',
};

export interface Controls {
  plan: PlanControls;
  run: RunRequest;
}

function int(raw: string, field: string, min: number): number {
  const v = /^\s*-?\d+\s*$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(v) || v < min) throw new Error(`${field} must be an integer >= ${min}, got ${JSON.stringify(raw)}`);
  return v;
}

function oneOf<T extends string>(raw: string, field: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(raw)) throw new Error(`${field} must be one of ${allowed.join(', ')}, got ${JSON.stringify(raw)}`);
  return raw as T;
}

export function readControls(raw: RawControls): Controls {
  const config = getConfig(raw.config);
  const tokens = int(raw.tokens, 'tokens T', 1);
  const tp = int(raw.tp, 'tp', 1);
  const sp = oneOf<SpMode>(raw.sp, 'SP mode', ['auto', 'on', 'off']);
  const reduce = oneOf<ReduceAlgorithm>(raw.reduce, 'reduce', REDUCE_ALGORITHMS);
  const seed = int(raw.seed, 'seed', 0);
  const subLayers = oneOf<SubLayerChoice>(raw.subLayers, 'sub-layers', ['stand-in', 'model']);
  const bSp = oneOf<'on' | 'off'>(raw.bSp, 'run b SP', ['on', 'off']);
  const bReduce = raw.bReduce === 'same' ? reduce : oneOf<ReduceAlgorithm>(raw.bReduce, 'run b reduce', REDUCE_ALGORITHMS);
  const plan: PlanControls = { config, tokens, tp, sp, reduce, minTokensEnv: raw.minTokens.trim() === '' ? undefined : raw.minTokens };
  // Run a is the forward the plan describes: its SP mode resolved the way the plan resolves it
  // ('auto' reads the gate and the variable), so the run shards exactly when the plan does.
  const aSp = planFromControls(plan).sp ? 'on' : 'off';
  return { plan, run: { config: config.name, tokens, tp, seed, subLayers, a: { sp: aSp, reduce }, b: { sp: bSp, reduce: bReduce } } };
}
