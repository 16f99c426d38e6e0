// Test support for the row-parallel projections (attention o_proj, GDN out_proj): the
// one-shot sum of the tp ranks' bf16 partials (fp32 in rank order, one rounding) against the
// tp=1 output (one fp32 chain, one rounding). Each partial adds its own half-ulp rounding,
// the final roundings add half an ulp of each result, and the regrouped fp32 chains differ by
// at most 2 K 2^-24 sum_k |y_k w_k| (K input features).
import { bf16ToF32, f32ToBf16 } from '@hcsp/core';

export interface RowParallelSum {
  /** the one-shot sum of the partials, bf16 [rows, outF] */
  summed: Uint16Array;
  /** elements whose difference from the tp=1 output exceeds the bound */
  beyondBound: number;
  /** the largest |difference| in ulps of the element's largest partial */
  maxInPartialUlps: number;
}

/** The ulp of a bf16 value v (2^-133 at zero). */
export function bf16Ulp(v: number): number {
  if (v === 0) return 2 ** -133;
  return 2 ** (Math.floor(Math.log2(Math.abs(v))) - 7);
}

/**
 * Sums `partials` (bf16 [rows, outF] per rank) and bounds them against `out1`, the tp=1
 * output of y [rows, K] (the projection's input, as f32) times wOut [outF, K] (f32).
 */
export function rowParallelSum(partials: Uint16Array[], out1: Uint16Array, y: Float32Array, wOut: Float32Array, outF: number, K: number): RowParallelSum {
  const n = out1.length;
  const summed = new Uint16Array(n);
  let beyondBound = 0;
  let maxInPartialUlps = 0;
  for (let i = 0; i < n; i++) {
    let acc = 0;
    let roundingBudget = 0;
    let maxPartial = 0;
    for (const partial of partials) {
      const p = bf16ToF32(partial[i]);
      acc = Math.fround(acc + p);
      roundingBudget += bf16Ulp(p) / 2;
      maxPartial = Math.max(maxPartial, Math.abs(p));
    }
    summed[i] = f32ToBf16(acc);
    const t = Math.floor(i / outF);
    const o = i % outF;
    let absSum = 0;
    for (let k = 0; k < K; k++) absSum += Math.abs(y[t * K + k] * wOut[o * K + k]);
    const e = bf16ToF32(out1[i]);
    const bound = roundingBudget + bf16Ulp(e) / 2 + bf16Ulp(bf16ToF32(summed[i])) / 2 + 2 * K * 2 ** -24 * absSum;
    const diff = Math.abs(bf16ToF32(summed[i]) - e);
    if (diff > bound) beyondBound++;
    maxInPartialUlps = Math.max(maxInPartialUlps, diff / bf16Ulp(maxPartial));
  }
  return { summed, beyondBound, maxInPartialUlps };
}
