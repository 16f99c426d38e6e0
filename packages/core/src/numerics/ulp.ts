// bf16 ulp distance and the comparison report numerics.md asks for ("report the
// distribution: max ulp, count of differing elements, bit-exact fraction").
// The ulp distance is the difference of the patterns on a monotone integer line: a
// non-negative pattern b maps to b, a negative one to -(b & 0x7FFF). Decisions:
// - +0 and -0 both map to 0, so their distance is 0 (they compare equal); they are still
//   counted as differing bits in compareBf16, because bit-exact means equal bits.
// - +-inf are the ends of the line: max finite to inf is 1 ulp.
// - NaN vs NaN is 0 (whatever the payloads); NaN vs anything else is Infinity.
import { bf16ArrayToF32 } from './bf16.ts';

function isBf16NaN(b: number): boolean {
  return (b & 0x7f80) === 0x7f80 && (b & 0x007f) !== 0;
}

function orderedBf16(b: number): number {
  return b & 0x8000 ? -(b & 0x7fff) : b;
}

/** Distance in bf16 ulps between two bf16 bit patterns. */
export function bf16UlpDistance(a: number, b: number): number {
  for (const v of [a, b]) {
    if (!Number.isInteger(v) || v < 0 || v > 0xffff) throw new Error(`bf16 pattern ${v} is not a 16-bit integer`);
  }
  const aNaN = isBf16NaN(a);
  const bNaN = isBf16NaN(b);
  if (aNaN || bNaN) return aNaN && bNaN ? 0 : Infinity;
  return Math.abs(orderedBf16(a) - orderedBf16(b));
}

export interface Bf16CompareReport {
  /** number of elements compared */
  count: number;
  /** elements whose bit patterns differ (including -0 vs +0 and NaN payloads) */
  differing: number;
  /** largest ulp distance (Infinity when a NaN meets a number); 0 for empty input */
  maxUlp: number;
  /** (count - differing) / count; 1 for empty input */
  bitExactFraction: number;
  /** ulp distance -> number of elements at that distance, over all elements */
  histogram: Record<number, number>;
  /** first index whose bits differ, -1 when all are bit-exact */
  firstDiffIndex: number;
}

export function compareBf16(actual: Uint16Array, expected: Uint16Array): Bf16CompareReport {
  if (actual.length !== expected.length) {
    throw new Error(`compareBf16: actual has ${actual.length} elements, expected has ${expected.length}`);
  }
  const histogram: Record<number, number> = {};
  let differing = 0;
  let maxUlp = 0;
  let firstDiffIndex = -1;
  for (let i = 0; i < actual.length; i++) {
    if (actual[i] === expected[i]) {
      histogram[0] = (histogram[0] ?? 0) + 1;
      continue;
    }
    differing++;
    if (firstDiffIndex < 0) firstDiffIndex = i;
    const d = bf16UlpDistance(actual[i], expected[i]);
    histogram[d] = (histogram[d] ?? 0) + 1;
    if (d > maxUlp) maxUlp = d;
  }
  const count = actual.length;
  return { count, differing, maxUlp, bitExactFraction: count === 0 ? 1 : (count - differing) / count, histogram, firstDiffIndex };
}

/** numerics.md's float comparison for one value: |a - e| <= atol + rtol*|e|; NaN only equals NaN; infinities must match. */
export function isClose(a: number, e: number, atol: number, rtol: number): boolean {
  if (Number.isNaN(a) || Number.isNaN(e)) return Number.isNaN(a) && Number.isNaN(e);
  if (!Number.isFinite(a) || !Number.isFinite(e)) return a === e;
  return Math.abs(a - e) <= atol + rtol * Math.abs(e);
}

/** isClose for every element of two equally long arrays of numbers. */
export function allClose(actual: ArrayLike<number>, expected: ArrayLike<number>, atol: number, rtol: number): boolean {
  if (!(atol >= 0) || !Number.isFinite(atol)) throw new Error(`allClose: atol ${atol} must be a finite number >= 0`);
  if (!(rtol >= 0) || !Number.isFinite(rtol)) throw new Error(`allClose: rtol ${rtol} must be a finite number >= 0`);
  if (actual.length !== expected.length) {
    throw new Error(`allClose: actual has ${actual.length} elements, expected has ${expected.length}`);
  }
  for (let i = 0; i < actual.length; i++) if (!isClose(actual[i], expected[i], atol, rtol)) return false;
  return true;
}

/** allClose on bf16 bit patterns, compared by their values. */
export function allCloseBf16(actual: Uint16Array, expected: Uint16Array, atol: number, rtol: number): boolean {
  return allClose(bf16ArrayToF32(actual), bf16ArrayToF32(expected), atol, rtol);
}
