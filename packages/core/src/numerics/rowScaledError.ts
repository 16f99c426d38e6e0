import { bf16ToF32 } from './bf16.ts';

/** The spacing of bf16 values at magnitude m: 2^(exponent(m) - 7); 0 for m = 0. */
export function bf16UlpAt(m: number): number {
  const a = Math.abs(m);
  if (a === 0 || !Number.isFinite(a)) return 0;
  return 2 ** (Math.floor(Math.log2(a)) - 7);
}

export interface RowScaledError {
  /** elements whose bits differ */
  differing: number;
  count: number;
  /** max over elements of |a - e| in bf16 ulps of the largest |e| of the element's row */
  maxRowUlp: number;
}

/**
 * Differences measured against the row's scale rather than the element's own: where a
 * sum nearly cancels, a different summation order moves the result by about one ulp of the
 * addends, which is a huge number of ulps of the tiny result. Reordered sums are bounded in
 * this unit (numerics.md: "typically at most 1 bf16 ulp per reordering").
 */
export function rowScaledError(actual: Uint16Array, expected: Uint16Array, rows: number, cols: number): RowScaledError {
  if (actual.length !== expected.length || actual.length !== rows * cols) {
    throw new Error(`rowScaledError: lengths ${actual.length} and ${expected.length} do not match ${rows}x${cols}`);
  }
  let differing = 0;
  let maxRowUlp = 0;
  for (let t = 0; t < rows; t++) {
    let scale = 0;
    for (let j = 0; j < cols; j++) scale = Math.max(scale, Math.abs(bf16ToF32(expected[t * cols + j])));
    const ulp = bf16UlpAt(scale);
    for (let j = 0; j < cols; j++) {
      const i = t * cols + j;
      if (actual[i] === expected[i]) continue;
      differing++;
      const d = Math.abs(bf16ToF32(actual[i]) - bf16ToF32(expected[i]));
      maxRowUlp = Math.max(maxRowUlp, ulp === 0 ? Infinity : d / ulp);
    }
  }
  return { differing, count: actual.length, maxRowUlp };
}
