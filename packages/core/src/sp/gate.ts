// The sequence-parallel gate (sequence-parallel.md "When it applies"): whether one eager
// forward keeps its residual streams row-sharded across the TP ranks. It depends only on
// tp, the layer layout, the variable, T and the capture state, so every rank decides alike.

/** Environment variable holding the token floor for sharding. */
export const SP_MIN_TOKENS_ENV = 'ATOM_QWEN4_EXP_SP_MIN_TOKENS';
/** Token floor when the variable is unset. */
export const SP_MIN_TOKENS_DEFAULT = 1024;
/** Most rows the fused gated-mean + FP8 quantization kernel takes (numerics of the quant path switch). */
export const HC_QUANT_ROWS_MAX = 1024;

/** What set the token floor, so that the gate's reason names the real cause. */
export type SpFloorSource =
  /** the variable, set */
  | { kind: 'env' }
  /** the variable unset: SP_MIN_TOKENS_DEFAULT */
  | { kind: 'default' }
  /** a caller's override of the variable, e.g. the command-line option '--sp-min-tokens' */
  | { kind: 'option'; name: string };

export interface SpFloor {
  minTokens: number;
  source: SpFloorSource;
}

/**
 * Reads the token floor from `env`, with where it came from. Unset: 1024; '0' disables sharding.
 * Decision: the production reference parses the value with Python's `int()`, so surrounding
 * whitespace and one leading '+' are accepted like there; everything else that is not a
 * run of ASCII decimal digits (empty string, signs '-', fractions, exponents, hex, '_'
 * separators, values past 2^53 - 1) is an error naming the variable and the value: a bad
 * setting is never silently ignored.
 */
export function readSpFloor(env: Record<string, string | undefined>): SpFloor {
  const raw = env[SP_MIN_TOKENS_ENV];
  if (raw === undefined) return { minTokens: SP_MIN_TOKENS_DEFAULT, source: { kind: 'default' } };
  const m = /^\s*\+?(\d+)\s*$/.exec(raw);
  const value = m ? Number(m[1]) : NaN;
  if (!Number.isSafeInteger(value)) {
    throw new Error(`${SP_MIN_TOKENS_ENV} must be a non-negative decimal integer (0 disables sharding), got ${JSON.stringify(raw)}`);
  }
  return { minTokens: value, source: { kind: 'env' } };
}

/** The token floor from `env` (see readSpFloor). */
export function readSpMinTokens(env: Record<string, string | undefined>): number {
  return readSpFloor(env).minTokens;
}

export interface SpGateInput {
  tp: number;
  /** T, the rows of this forward */
  tokens: number;
  /** the token floor (readSpMinTokens); 0 disables sharding */
  minTokens: number;
  /** what set minTokens, named by the reason (default: the variable, set) */
  floorSource?: SpFloorSource;
  /** the stream is capturing a graph (decode/verify graphs never shard) */
  capturing: boolean;
  /** first layer whose streams would be sharded: last PLE layer of the stage + 1 */
  spStartLayer: number;
  /** the stage's exclusive end layer */
  endLayer: number;
  /**
   * Testing path (`prefill --sp on`): skip the two token thresholds (the variable and
   * T > HC_QUANT_ROWS_MAX) so tiny forwards can be sharded. tp > 1, the capture state and
   * the layer condition still apply, since sharding is impossible or wrong without them.
   */
  force?: boolean;
}

export interface SpGateResult {
  sp: boolean;
  /** null when sharded; otherwise the first failing condition, with its values */
  reason: string | null;
}

function checkInt(v: number, name: string, min: number): void {
  if (!Number.isSafeInteger(v) || v < min) throw new Error(`spGate: ${name} must be an integer >= ${min}, got ${v}`);
}

/** The reason's words for the floor's two failures: zero, and T below it. */
function floorReasons(source: SpFloorSource, tokens: number, minTokens: number): { zero: string; below: string } {
  switch (source.kind) {
    case 'env':
      return { zero: `${SP_MIN_TOKENS_ENV} is 0: sharding disabled`, below: `T ${tokens} < ${SP_MIN_TOKENS_ENV} ${minTokens}` };
    case 'option':
      return { zero: `${source.name} is 0: sharding disabled`, below: `T ${tokens} < ${source.name} ${minTokens}` };
    case 'default':
      return { zero: 'the token floor is 0: sharding disabled', below: `T ${tokens} < ${minTokens}, the default token floor (${SP_MIN_TOKENS_ENV} is unset)` };
  }
}

/** The gate: every condition of the spec, in the spec's order; the reason names the first that fails. */
export function spGate(input: SpGateInput): SpGateResult {
  const { tp, tokens, minTokens, capturing, spStartLayer, endLayer, force = false, floorSource = { kind: 'env' } } = input;
  checkInt(tp, 'tp', 1);
  checkInt(tokens, 'tokens', 1);
  checkInt(minTokens, 'minTokens', 0);
  checkInt(spStartLayer, 'spStartLayer', 0);
  checkInt(endLayer, 'endLayer', 1);
  const off = (reason: string): SpGateResult => ({ sp: false, reason });
  if (tp <= 1) return off(`tp ${tp}: sharding needs tp > 1`);
  if (!force) {
    const floor = floorReasons(floorSource, tokens, minTokens);
    if (minTokens === 0) return off(floor.zero);
    if (tokens < minTokens) return off(floor.below);
    if (tokens <= HC_QUANT_ROWS_MAX) {
      return off(`T ${tokens} <= HC_QUANT_ROWS_MAX ${HC_QUANT_ROWS_MAX}: sharding only above it keeps one quantization path`);
    }
  }
  if (capturing) return off('capturing a graph: captured graphs never shard');
  if (spStartLayer >= endLayer) {
    return off(`sp_start_layer ${spStartLayer} >= end_layer ${endLayer}: no layer after the last PLE layer of the stage`);
  }
  return { sp: true, reason: null };
}
