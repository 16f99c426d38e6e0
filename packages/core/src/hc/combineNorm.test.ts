import { describe, expect, it } from 'vitest';
import { bf16ToF32, f32ArrayToBf16 } from '../numerics/bf16.ts';
import { Rng } from '../numerics/rng.ts';
import { rowScaledError } from '../numerics/rowScaledError.ts';
import { compareBf16 } from '../numerics/ulp.ts';
import { combine, combineNorm } from './combineNorm.ts';

const N = 4;
const H = 64;
const EPS = 1e-6;

function randomBf16(rng: Rng, count: number, std: number): Uint16Array {
  return rng.fillBf16Normal(count, std);
}

/** combine-norm in float64 with the same bf16 storage points: the "true" value per element. */
function combineNormF64(x: Uint16Array, y: Uint16Array | null, raw: Uint16Array | null, w: Uint16Array, rows: number): Float64Array {
  const out = new Float64Array(x.length);
  for (let t = 0; t < rows; t++) {
    for (let s = 0; s < N; s++) {
      const base = t * N * H + s * H;
      const inj = raw ? 2 / (1 + Math.exp(-bf16ToF32(f32ArrayToBf16([bf16ToF32(raw[t * N + s]) / N])[0]))) : 0;
      const xs: number[] = [];
      for (let j = 0; j < H; j++) {
        const v = bf16ToF32(x[base + j]) + (y ? bf16ToF32(y[t * H + j]) * inj : 0);
        xs.push(bf16ToF32(f32ArrayToBf16([v])[0]));
      }
      const rstd = 1 / Math.sqrt(xs.reduce((a, v) => a + v * v, 0) / H + EPS);
      for (let j = 0; j < H; j++) out[base + j] = xs[j] * rstd * (1 + bf16ToF32(w[s * H + j]));
    }
  }
  return out;
}

describe('HC combine-norm (ATOM contract)', () => {
  const rng = new Rng(7);
  const rows = 48;
  const x = randomBf16(rng, rows * N * H, 1);
  const y = randomBf16(rng, rows * H, 0.5);
  const raw = randomBf16(rng, rows * N, 1);
  const w = randomBf16(rng, N * H, 0.05);

  it('is within 1 bf16 ulp of the float64 computation with the same storage points', () => {
    const got = combineNorm(x, y, raw, w, rows, H, N, EPS, 'atom');
    const ref = f32ArrayToBf16(combineNormF64(x, y, raw, w, rows));
    const report = compareBf16(got.normed, ref);
    // one final rounding of an fp32 value that is itself within a few fp32 ulps of the
    // float64 value: the bf16 results can differ only where that value sits on a tie edge.
    expect(report.maxUlp).toBeLessThanOrEqual(1);
    expect(report.bitExactFraction).toBeGreaterThan(0.99);
  });

  it('without a pending combine leaves the streams unchanged', () => {
    const got = combineNorm(x, null, null, w, rows, H, N, EPS, 'atom');
    expect(got.x).toEqual(x);
  });

  it('fused combine-norm equals the unfused combine followed by the norm, bit for bit', () => {
    const fused = combineNorm(x, y, raw, w, rows, H, N, EPS, 'atom');
    const combined = combine(x, y, raw, rows, H, N, 'atom');
    const unfused = combineNorm(combined, null, null, w, rows, H, N, EPS, 'atom');
    expect(fused.x).toEqual(combined);
    expect(fused.normed).toEqual(unfused.normed);
  });

  it('keeps zero (padding) rows exactly zero, with and without a zero pending combine', () => {
    const z = new Uint16Array(2 * N * H);
    const got = combineNorm(z, new Uint16Array(2 * H), new Uint16Array(2 * N), w, 2, H, N, EPS, 'atom');
    expect(got.x.every((v) => v === 0)).toBe(true);
    expect(got.normed.every((v) => v === 0 || v === 0x8000)).toBe(true);
  });

  it('HF rounding differs from ATOM by about one ulp of the row scale, on a measurable fraction', () => {
    const atom = combineNorm(x, y, raw, w, rows, H, N, EPS, 'atom');
    const hf = combineNorm(x, y, raw, w, rows, H, N, EPS, 'hf');
    // X + y*inj can cancel, so a product rounded first (HF) moves the sum by up to half an
    // ulp of the product: bounded in ulps of the row's largest value, not the element's.
    const sx = rowScaledError(hf.x, atom.x, rows, N * H);
    const sn = rowScaledError(hf.normed, atom.normed, rows, N * H);
    expect(sx.maxRowUlp).toBeLessThanOrEqual(1);
    // normed re-rounds (HF: X*rstd, then the product with bf(1 + w)) a value already 1 apart
    expect(sn.maxRowUlp).toBeLessThanOrEqual(2);
    expect(sx.differing).toBeGreaterThan(0);
    expect(sn.differing).toBeGreaterThan(0);
  });

  it('rejects a pending combine with only one half', () => {
    expect(() => combineNorm(x, y, null, w, rows, H, N, EPS, 'atom')).toThrow(/together/);
  });
});
