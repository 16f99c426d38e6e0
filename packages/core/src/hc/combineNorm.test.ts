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

/** bf(v) of a float64 value (rounding to fp32 first: a double rounding, rare and one-sided). */
function bf(v: number): number {
  return bf16ToF32(f32ArrayToBf16([v])[0]);
}

/**
 * Combine-norm in float64 with a contract's bf16 storage points: the "true" value per
 * element. 'atom' stores only X; 'hf' also stores bf(sigmoid) of the inject logit and the
 * product bf(y * inj) (torch bf16 ops), and neither stores anything inside the norm.
 */
function combineNormF64(x: Uint16Array, y: Uint16Array | null, raw: Uint16Array | null, w: Uint16Array, rows: number, hf = false): Float64Array {
  const out = new Float64Array(x.length);
  for (let t = 0; t < rows; t++) {
    for (let s = 0; s < N; s++) {
      const base = t * N * H + s * H;
      let inj = 0;
      if (raw) {
        const sig = 1 / (1 + Math.exp(-bf(bf16ToF32(raw[t * N + s]) / N)));
        inj = 2 * (hf ? bf(sig) : sig);
      }
      const xs: number[] = [];
      for (let j = 0; j < H; j++) {
        const p = y ? bf16ToF32(y[t * H + j]) * inj : 0;
        xs.push(bf(bf16ToF32(x[base + j]) + (hf ? bf(p) : p)));
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

  it('HF contract: within 1 bf16 ulp of float64 with HF storage points', () => {
    const got = combineNorm(x, y, raw, w, rows, H, N, EPS, 'hf');
    const ref = f32ArrayToBf16(combineNormF64(x, y, raw, w, rows, true));
    const report = compareBf16(got.normed, ref);
    expect(report.maxUlp).toBeLessThanOrEqual(1);
    expect(report.bitExactFraction).toBeGreaterThan(0.99);
  });

  it('HF contract rounds the grouped norm once: without a pending combine it equals ATOM bit for bit', () => {
    const atom = combineNorm(x, null, null, w, rows, H, N, EPS, 'atom');
    const hf = combineNorm(x, null, null, w, rows, H, N, EPS, 'hf');
    expect(hf.normed).toEqual(atom.normed);
  });

  it('HF contract, hand-computed combine: bf(sigmoid) and bf(y * inj) are stored, ATOM keeps fp32', () => {
    // raw = 4: logit bf(4/4) = 1, sigmoid(1) = 0.7310586; y = 1 + 2^-7, X = 0
    // HF:   inj = 2 * bf(0.7310586) = 2 * 0.73046875 = 1.4609375 (187.15 steps of 2^-8 -> 187)
    //       bf(y * inj) = bf(1.4723511) = 1.46875 (188.46 steps of 2^-7 -> 188)
    // ATOM: y * 2 * 0.7310586 = 1.4735405 -> 1.4765625 (188.61 steps -> 189)
    const x0 = f32ArrayToBf16(new Array(N).fill(0));
    const y0 = f32ArrayToBf16([1 + 2 ** -7]);
    const raw0 = f32ArrayToBf16(new Array(N).fill(4));
    expect(Array.from(combine(x0, y0, raw0, 1, 1, N, 'hf'), bf16ToF32)).toEqual(new Array(N).fill(1.46875));
    expect(Array.from(combine(x0, y0, raw0, 1, 1, N, 'atom'), bf16ToF32)).toEqual(new Array(N).fill(1.4765625));
  });

  it('HF differs from ATOM only through the combine, by about one ulp of the row scale', () => {
    const atom = combineNorm(x, y, raw, w, rows, H, N, EPS, 'atom');
    const hf = combineNorm(x, y, raw, w, rows, H, N, EPS, 'hf');
    // X + y*inj can cancel, so a product rounded first (HF) moves the sum by up to half an
    // ulp of the product: bounded in ulps of the row's largest value, not the element's.
    const sx = rowScaledError(hf.x, atom.x, rows, N * H);
    const sn = rowScaledError(hf.normed, atom.normed, rows, N * H);
    expect(sx.maxRowUlp).toBeLessThanOrEqual(1);
    expect(sn.maxRowUlp).toBeLessThanOrEqual(2);
    expect(sx.differing).toBeGreaterThan(0);
    expect(sn.differing).toBeGreaterThan(0);
    // the norm of equal streams is equal: renormalizing HF's X with the ATOM contract gives HF's normed
    expect(combineNorm(hf.x, null, null, w, rows, H, N, EPS, 'atom').normed).toEqual(hf.normed);
  });

  it('rejects a pending combine with only one half', () => {
    expect(() => combineNorm(x, y, null, w, rows, H, N, EPS, 'atom')).toThrow(/together/);
  });
});

describe('HC combine-norm: the sum of squares in canonical reduction order v1', () => {
  // One row, two streams of H = 1024: 4096 then 1023 ones; every weight 3 * 2^-8, so the scale
  // fl(1 + w) = 1.01171875 puts X * rstd * scale on a bf16 tie when rstd is exactly 2^-7.
  // In j order each 1 meets 2^24 alone and is lost (2^24 + 1 ties to the even 2^24): sumsq
  // 2^24, mean 2^14, rstd 2^-7, and the ties round to even: 1 -> 2^-7 * 1.015625, 4096 -> 32.5.
  // In v1 lane 0 holds 4096^2 and loses its 15 ones, lanes 1-63 hold 16 ones each and the
  // butterfly adds them exactly: sumsq 2^24 + 1008, mean 16384.984375, rstd just below 2^-7,
  // so every product falls just below its tie: 1 -> 2^-7 * 1.0078125, 4096 -> 32.25.
  const h = 1024;
  const n = 2;
  const row = new Float32Array(n * h).fill(1);
  row[0] = 4096;
  row[h] = 4096;
  const x = f32ArrayToBf16(row);
  const w = f32ArrayToBf16(new Float32Array(n * h).fill(3 * 2 ** -8));

  it('gives the hand-computed v1 values, not the sequential ones', () => {
    const got = Array.from(combineNorm(x, null, null, w, 1, h, n, EPS, 'atom').normed, bf16ToF32);
    const v1 = (j: number) => (j % h === 0 ? 32.25 : 2 ** -7 * 1.0078125);
    const sequential = (j: number) => (j % h === 0 ? 32.5 : 2 ** -7 * 1.015625);
    expect(got).toEqual(Array.from({ length: n * h }, (_, j) => v1(j)));
    expect(got.filter((v, j) => v === sequential(j))).toEqual([]);
  });

  it('the same under the HF contract and after a zero pending combine', () => {
    const want = combineNorm(x, null, null, w, 1, h, n, EPS, 'atom').normed;
    expect(combineNorm(x, null, null, w, 1, h, n, EPS, 'hf').normed).toEqual(want);
    expect(combineNorm(x, new Uint16Array(h), new Uint16Array(n), w, 1, h, n, EPS, 'atom').normed).toEqual(want);
  });
});
