import { describe, expect, it } from 'vitest';
import { expF32, logF32, rsqrtF32, sigmoidF32, siluF32, softplusF32 } from './fp32Math.ts';

const f = new Float32Array(1);
const u = new Int32Array(f.buffer);
/** fp32 ulp distance between two finite positive-or-negative values. */
function ulps(a: number, b: number): number {
  f[0] = a;
  const ia = u[0] < 0 ? -(u[0] & 0x7fffffff) : u[0];
  f[0] = b;
  const ib = u[0] < 0 ? -(u[0] & 0x7fffffff) : u[0];
  return Math.abs(ia - ib);
}

function sweep(lo: number, hi: number, n: number): number[] {
  const xs: number[] = [];
  for (let i = 0; i <= n; i++) xs.push(Math.fround(lo + ((hi - lo) * i) / n));
  return xs;
}

describe('fp32 math library', () => {
  it('expF32 is within 2 ulps of exp over the normal range', () => {
    let worst = 0;
    for (const x of sweep(-87, 88.7, 200_000)) worst = Math.max(worst, ulps(expF32(x), Math.fround(Math.exp(x))));
    expect(worst).toBeLessThanOrEqual(2);
  });

  it('expF32 edge cases: overflow, underflow flushed, NaN, exact at 0', () => {
    expect(expF32(89)).toBe(Infinity);
    expect(expF32(-88)).toBe(0);
    expect(expF32(-1000)).toBe(0);
    expect(expF32(NaN)).toBeNaN();
    expect(expF32(0)).toBe(1);
  });

  it('logF32 is within 2 ulps of log for positive normals', () => {
    let worst = 0;
    for (const x of sweep(1e-30, 10, 100_000).concat(sweep(10, 3e38, 100_000))) {
      if (x <= 0) continue;
      const ref = Math.fround(Math.log(x));
      // near log(x) = 0 the absolute error matters, not the ulp count
      if (Math.abs(ref) < 1e-3) continue;
      worst = Math.max(worst, ulps(logF32(x), ref));
    }
    expect(worst).toBeLessThanOrEqual(2);
    expect(logF32(1)).toBe(0);
    expect(logF32(0)).toBe(-Infinity);
    expect(logF32(-1)).toBeNaN();
  });

  it('sigmoid, silu, softplus, rsqrt track their double-precision definitions', () => {
    for (const x of sweep(-30, 30, 20_000)) {
      expect(Math.abs(sigmoidF32(x) - 1 / (1 + Math.exp(-x)))).toBeLessThanOrEqual(4e-7);
      const silu = x / (1 + Math.exp(-x));
      expect(Math.abs(siluF32(x) - silu)).toBeLessThanOrEqual(4e-7 * Math.max(1, Math.abs(silu)));
      const sp = Math.log1p(Math.exp(x));
      expect(Math.abs(softplusF32(x) - sp)).toBeLessThanOrEqual(6e-7 * Math.max(1, sp));
    }
    expect(sigmoidF32(0)).toBe(0.5);
    expect(siluF32(0)).toBe(0);
    for (const x of sweep(1e-6, 1e6, 10_000)) {
      expect(ulps(rsqrtF32(x), Math.fround(1 / Math.sqrt(x)))).toBeLessThanOrEqual(1);
    }
  });
});
