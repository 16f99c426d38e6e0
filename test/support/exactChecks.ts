// Test support for the float64 ("exact") kernels' tests (packages/core/src/reference/exact):
// the unit roundoffs of the formats the reference rounds to, a tensor's values widened exactly
// to float64, the CPU reference and the exact kernel run on the same inputs, and the checks that
// the reference lies within a justified bound of the exact value, element by element
// (checkBound: a report; expectWithin: vitest expectations, the bound's vacuity included).
import {
  bf16ToF32,
  cpuCollectiveKernel,
  cpuKernel,
  exactCollectiveKernel,
  exactKernel,
  fp8FormatOfDtype,
  fp8ToF32,
  getOpDef,
  widenTensor,
  type ExactTensor,
  type Tensor,
} from '@hcsp/core';
import { expect, it } from 'vitest';

/** fp32's unit roundoff: |fl(v) - v| <= U_F32 |v| for round to nearest (24-bit significand). */
export const U_F32 = 2 ** -24;
/** bf16's unit roundoff: |bf(v) - v| <= U_BF16 |v| (RNE to 8 significant bits moves a value by at most 2^-8 of itself). */
export const U_BF16 = 2 ** -8;
/** fp8 E4M3's unit roundoff on normal values (4-bit significand). */
export const U_FP8 = 2 ** -4;

/** gamma_n = n u / (1 - n u): the bound on the relative error of a recursive sum of n + 1 terms in fp32. */
export function gamma32(n: number): number {
  return (n * U_F32) / (1 - n * U_F32);
}

/** A reference tensor's values exactly as float64 (evaluateExact's widenTensor: bf16, f32, fp8 widen exactly), i32 as is. */
export const widen: (t: Tensor) => ExactTensor = widenTensor;

export function widenAll(ts: (Tensor | null)[]): (ExactTensor | null)[] {
  return ts.map((t) => (t ? widen(t) : null));
}

/** A tensor's values as doubles (bf16, fp32, fp8 decoded exactly; i32 as numbers). */
export function valuesOf(t: Tensor | ExactTensor): Float64Array {
  const d = t.data;
  if (d instanceof Float64Array) return d;
  if (t.dtype === 'bf16') return Float64Array.from(d as Uint16Array, (b) => bf16ToF32(b));
  if (t.dtype === 'fp8e4m3fn' || t.dtype === 'fp8e4m3fnuz') {
    const f = fp8FormatOfDtype(t.dtype);
    return Float64Array.from(d as Uint8Array, (b) => fp8ToF32(b, f));
  }
  return Float64Array.from(d as ArrayLike<number>);
}

/** Float64 values of an exact tensor (floating). */
export function f64(t: ExactTensor | null): Float64Array {
  if (!t || !(t.data instanceof Float64Array)) throw new Error('expected a floating exact tensor');
  return t.data;
}

export interface BoundReport {
  count: number;
  /** elements with |ref - exact| > tol */
  exceeded: number;
  /** max over elements of |ref - exact| / tol (0 / 0 counts as 0) */
  worstRatio: number;
  worstIndex: number;
  /** one line naming the worst element, for failure messages */
  describe: string;
}

/**
 * |ref[i] - exact[i]| <= tol(i) for every element (NaN equals NaN; an infinity only itself).
 */
export function checkBound(ref: ArrayLike<number>, exact: ArrayLike<number>, tol: (i: number) => number, what = ''): BoundReport {
  if (ref.length !== exact.length) throw new Error(`checkBound ${what}: ${ref.length} reference values, ${exact.length} exact ones`);
  let exceeded = 0;
  let worstRatio = 0;
  let worstIndex = -1;
  for (let i = 0; i < ref.length; i++) {
    const a = ref[i];
    const e = exact[i];
    if ((a !== a && e !== e) || a === e) continue;
    const d = Math.abs(a - e);
    const t = tol(i);
    const ratio = d === 0 ? 0 : t > 0 ? d / t : Infinity;
    if (!(d <= t)) exceeded++;
    if (!(ratio <= worstRatio)) {
      worstRatio = ratio;
      worstIndex = i;
    }
  }
  const describe =
    worstIndex < 0
      ? `${what}: all ${ref.length} equal`
      : `${what}: worst at ${worstIndex}: ref ${ref[worstIndex]} exact ${exact[worstIndex]} |diff| ${Math.abs(ref[worstIndex] - exact[worstIndex])} tol ${tol(worstIndex)} (ratio ${worstRatio.toFixed(3)}), ${exceeded}/${ref.length} beyond`;
  return { count: ref.length, exceeded, worstRatio, worstIndex, describe };
}

/**
 * A value rounded once (to bf16) after a computation whose own error is at most delta:
 * |bf(y') - y| <= |bf(y') - y'| + |y' - y| <= U (|y| + delta) + delta.
 */
export function roundedOnce(exact: number, delta: number): number {
  return U_BF16 * Math.abs(exact) + (1 + U_BF16) * delta;
}

/**
 * Expects |ref[i] - exact[i]| <= bound(i) for every element (the worst one named on
 * failure), and that the bound is not vacuous: the exact values scaled by 1 + 2^-4 (a 6%
 * error, a dozen bf16 ulps) break it somewhere. Returns the largest |ref - exact| / bound.
 */
export function expectWithin(what: string, ref: Tensor, exact: ExactTensor, bound: (i: number) => number): number {
  expect(exact.shape, `${what}: shape`).toEqual(ref.shape);
  expect(exact.dtype, `${what}: dtype`).toBe(ref.dtype);
  const r = widen(ref).data as Float64Array;
  const e = exact.data as Float64Array;
  expect(e).toBeInstanceOf(Float64Array);
  let worst = 0;
  let at = -1;
  let caught = false;
  for (let i = 0; i < e.length; i++) {
    const b = bound(i);
    expect(Number.isFinite(e[i]) && Number.isFinite(b), `${what}: element ${i} exact ${e[i]}, bound ${b}`).toBe(true);
    const diff = Math.abs(r[i] - e[i]);
    const ratio = diff === 0 ? 0 : diff / b;
    if (!(ratio <= worst)) {
      worst = ratio;
      at = i;
    }
    if (Math.abs(r[i] - e[i] * (1 + 2 ** -4)) > b) caught = true;
  }
  expect(worst, `${what}: element ${at}: reference ${r[at]}, exact ${e[at]}, bound ${bound(at)}`).toBeLessThanOrEqual(1);
  expect(caught, `${what}: the bound would not notice a 6% error anywhere`).toBe(true);
  if (process.env.EXACT_WORST) console.log(`${what}: worst ${worst.toFixed(4)}`);
  return worst;
}

/** An op on given inputs (a collective: rank-major ports), as packages/bench/src/cases/opCases.ts describes it. */
export interface OpOnInputs {
  op: string;
  tp: number;
  inputs: (Tensor | null)[];
  attrs: Record<string, unknown>;
}

/**
 * The CPU reference's and the exact kernel's outputs on the same inputs (widened for the exact
 * side), port by port; a collective's outputs rank-major, as its inputs.
 */
export function runBothSides(c: OpOnInputs): { ref: (Tensor | null)[]; exact: (ExactTensor | null)[]; inputs: (ExactTensor | null)[] } {
  const def = getOpDef(c.op);
  const inputs = widenAll(c.inputs);
  if (!def.collective) {
    return { ref: cpuKernel(c.op)(c.inputs, c.attrs), exact: exactKernel(c.op)(inputs, c.attrs), inputs };
  }
  const ports = def.inputs.length;
  const perRank = <T>(xs: T[]): T[][] => Array.from({ length: c.tp }, (_, r) => xs.slice(r * ports, (r + 1) * ports));
  const attrs = { ...c.attrs, tp: c.tp };
  const ref = cpuCollectiveKernel(c.op)(perRank(c.inputs) as Tensor[][], attrs).flat();
  const exact = exactCollectiveKernel(c.op)(perRank(inputs) as ExactTensor[][], attrs).flat();
  return { ref, exact, inputs };
}

/**
 * The tests of one op family (inside its describe): that its cases cover exactly `ops`, then one
 * test per case, named by the case, that checks the CPU reference's and the float64 kernel's
 * outputs on the case's inputs (runBothSides).
 */
export function familyTests<C extends OpOnInputs & { name: string }>(
  cases: C[],
  ops: readonly string[],
  check: (c: C, sides: ReturnType<typeof runBothSides>) => void,
): void {
  it('covers the family', () => {
    expect(new Set(cases.map((c) => c.op))).toEqual(new Set(ops));
  });
  for (const c of cases) it(c.name, () => check(c, runBothSides(c)));
}
