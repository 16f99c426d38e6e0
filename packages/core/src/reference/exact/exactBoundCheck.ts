import { expect } from 'vitest';
import { bf16ToF32 } from '../../numerics/bf16.ts';
import type { Tensor } from '../../tensor/tensor.ts';
import type { ExactTensor } from './exactTensor.ts';

// Test support for the float64 kernels' tests (gdn, attention, moe, ple): a reference
// tensor widened exactly to float64, and the check that the reference lies within a
// justified bound of the exact value, element by element.

/** bf16 unit roundoff: RNE to 8 significant bits moves a value by at most 2^-8 of itself. */
export const U_BF16 = 2 ** -8;
/** fp32 unit roundoff. */
export const U_F32 = 2 ** -24;

/** A reference tensor's values exactly as float64 (bf16 and f32 widen exactly), i32 as is. */
export function widen(t: Tensor): ExactTensor {
  if (t.dtype === 'i32') return { dtype: 'i32', shape: [...t.shape], data: Int32Array.from(t.data as Int32Array) };
  if (t.dtype === 'bf16') return { dtype: 'bf16', shape: [...t.shape], data: Float64Array.from(t.data as Uint16Array, bf16ToF32) };
  if (t.dtype === 'f32') return { dtype: 'f32', shape: [...t.shape], data: Float64Array.from(t.data as Float32Array) };
  throw new Error(`widen: ${t.dtype} is not used by these tests`);
}

export function widenAll(ts: (Tensor | null)[]): (ExactTensor | null)[] {
  return ts.map((t) => (t ? widen(t) : null));
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

/** Float64 values of an exact tensor (floating). */
export function f64(t: ExactTensor | null): Float64Array {
  if (!t || !(t.data instanceof Float64Array)) throw new Error('expected a floating exact tensor');
  return t.data;
}
