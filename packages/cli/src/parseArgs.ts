// Strict parsing of command-line values: a value is either exactly what the option means or
// an error naming the option and the value (never Number()'s or parseInt()'s partial reads).

export interface IntBounds {
  /** smallest accepted value (default 0) */
  min?: number;
  /** largest accepted value (default Number.MAX_SAFE_INTEGER) */
  max?: number;
}

/**
 * Parses a plain run of ASCII decimal digits ('12abc', '1.5', '-3', '+3', ' 3', '' are
 * rejected) within bounds. A value that is an integer but out of bounds is told so: too
 * large or too small, not "must be an integer".
 */
export function parseIntStrict(value: string, name: string, bounds: IntBounds = {}): number {
  const { min = 0, max = Number.MAX_SAFE_INTEGER } = bounds;
  const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `in [${min}, ${max}]`;
  if (!/^\d+$/.test(value)) throw new Error(`${name} must be an integer ${range}, got ${JSON.stringify(value)}`);
  // Compared as BigInt: Number() of a long digit string rounds, and may round into range.
  const big = BigInt(value);
  if (big > BigInt(max)) throw new Error(`${name} is too large: at most ${max}, got ${JSON.stringify(value)}`);
  if (big < BigInt(min)) throw new Error(`${name} is too small: at least ${min}, got ${JSON.stringify(value)}`);
  return Number(big);
}

/** Parses 'A:B' (decoder layers [A, B)) into [A, B] with A < B; the config checks the upper bound. */
export function parseLayerRange(value: string, name: string): [number, number] {
  const m = /^(\d+):(\d+)$/.exec(value);
  if (!m) throw new Error(`${name} must be A:B (decoder layers [A, B)), got ${JSON.stringify(value)}`);
  const start = parseIntStrict(m[1], `${name} start`);
  const end = parseIntStrict(m[2], `${name} end`);
  if (start >= end) throw new Error(`${name} ${JSON.stringify(value)} is empty: start must be < end`);
  return [start, end];
}

/** One of the allowed words, or an error naming the option, the words and the value. */
export function oneOf<T extends string>(value: string, allowed: readonly T[], name: string): T {
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new Error(`${name} must be one of ${allowed.join('|')}, got '${value}'`);
}

/**
 * The most tokens a run may have: token ids and positions are int32 in the graph, and every
 * shape stays a safe integer below it (T x vocabulary < 2^53), so a larger T reaches the
 * memory guard's refusal instead of failing inside the graph's shapes.
 */
export const MAX_TOKENS = 2 ** 31 - 1;

/** A token count: a plain integer in [1, MAX_TOKENS]. */
export function parseTokens(value: string, name = '--tokens'): number {
  return parseIntStrict(value, name, { min: 1, max: MAX_TOKENS });
}
