import { describe, expect, it } from 'vitest';
import { bf16ToF32, f32ArrayToBf16 } from '../numerics/bf16.ts';
import { Rng } from '../numerics/rng.ts';
import { rowScaledError } from '../numerics/rowScaledError.ts';
import { gatedMean, scaledSilu } from './mix.ts';

const N = 4;
const H = 64;
const R = 8;

describe('HC mix element-wise steps', () => {
  const rng = new Rng(11);
  const rows = 64;
  const up = rng.fillBf16Normal(rows * N * H, 1.5);
  const normed = rng.fillBf16Normal(rows * N * H, 1);

  /** float64 gated mean; 'hf' stores bf(sigmoid) and bf(sig * normed) as torch's bf16 ops do. */
  function gatedMeanF64(hf: boolean): Uint16Array {
    const bf = (v: number): number => bf16ToF32(f32ArrayToBf16([v])[0]);
    const ref = new Float64Array(rows * H);
    for (let t = 0; t < rows; t++) {
      for (let j = 0; j < H; j++) {
        let acc = 0;
        for (let s = 0; s < N; s++) {
          const i = t * N * H + s * H + j;
          const sig = 1 / (1 + Math.exp(-bf16ToF32(up[i])));
          acc += hf ? bf(bf(sig) * bf16ToF32(normed[i])) : sig * bf16ToF32(normed[i]);
        }
        ref[t * H + j] = acc / N;
      }
    }
    return f32ArrayToBf16(ref);
  }

  it("gated mean is within 1 row-scale ulp of float64 with each contract's storage points", () => {
    // a sum of 4 signed terms can cancel: bound in ulps of the row's scale
    for (const contract of ['atom', 'hf'] as const) {
      const got = gatedMean(up, normed, rows, H, N, contract);
      const err = rowScaledError(got, gatedMeanF64(contract === 'hf'), rows, H);
      expect(err.maxRowUlp).toBeLessThanOrEqual(1);
      expect(err.differing / (rows * H)).toBeLessThan(0.01);
    }
    const diff = rowScaledError(gatedMean(up, normed, rows, H, N, 'hf'), gatedMean(up, normed, rows, H, N, 'atom'), rows, H);
    expect(diff.maxRowUlp).toBeLessThanOrEqual(2);
    expect(diff.differing).toBeGreaterThan(0);
  });

  it("HF's mean over streams accumulates in fp32 and rounds once (hand-computed)", () => {
    // sigmoid(0) = 1/2 exactly, products 1, 2^-8, 2^-8, 2^-8 (exact): fp32 sum 1 + 3*2^-8,
    // /4 = 0.2529296875, a bf16 tie (1 + 2^-7 + 2^-8 at step 2^-7) that goes to even:
    // 0.25390625. Rounding the running sum to bf16 would give 0.25 (each 1 + 2^-8 ties to 1).
    const up0 = f32ArrayToBf16([0, 0, 0, 0]);
    const normed0 = f32ArrayToBf16([2, 2 ** -7, 2 ** -7, 2 ** -7]);
    expect(bf16ToF32(gatedMean(up0, normed0, 1, 1, N, 'hf')[0])).toBe(0.25390625);
  });

  it('HF stores bf(sigmoid) and the bf16 product (hand-computed)', () => {
    // up = 1: sigmoid 0.7310586; normed = 1 + 2^-7 in every stream
    // HF:   bf(sig) = 0.73046875; bf(0.73046875 * 1.0078125) = bf(0.7361755) = 0.734375
    //       (188.46 steps of 2^-8 -> 188); mean of four equal values: 0.734375
    // ATOM: 0.7310586 * 1.0078125 = 0.7367702 -> 0.73828125 (188.61 steps -> 189)
    const up0 = f32ArrayToBf16([1, 1, 1, 1]);
    const normed0 = f32ArrayToBf16(new Array(N).fill(1 + 2 ** -7));
    expect(bf16ToF32(gatedMean(up0, normed0, 1, 1, N, 'hf')[0])).toBe(0.734375);
    expect(bf16ToF32(gatedMean(up0, normed0, 1, 1, N, 'atom')[0])).toBe(0.73828125);
  });

  it('zero rows give zero: sigmoid(0) * 0 = 0', () => {
    expect(gatedMean(new Uint16Array(N * H), new Uint16Array(N * H), 1, H, N, 'atom').every((v) => v === 0)).toBe(true);
  });

  it('scaled silu splits gate and raw, and accepts the mixer width without raw', () => {
    const d = rng.fillBf16Normal(rows * (R + N), 2);
    const { gate, raw } = scaledSilu(d, rows, R, N);
    expect(gate.length).toBe(rows * R);
    expect(raw).not.toBeNull();
    for (let t = 0; t < rows; t++) for (let s = 0; s < N; s++) expect(raw![t * N + s]).toBe(d[t * (R + N) + R + s]);
    const mixer = scaledSilu(rng.fillBf16Normal(rows * R, 2), rows, R, N);
    expect(mixer.raw).toBeNull();
    expect(scaledSilu(new Uint16Array(R + N), 1, R, N).gate.every((v) => v === 0)).toBe(true);
    expect(() => scaledSilu(new Uint16Array(rows * 5), rows, R, N)).toThrow(/wide/);
  });
});
