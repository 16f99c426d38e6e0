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

  it('gated mean (ATOM) is within 1 row-scale ulp of float64; HF rounding differs by at most 2', () => {
    const atom = gatedMean(up, normed, rows, H, N, 'atom');
    const ref = new Float64Array(rows * H);
    for (let t = 0; t < rows; t++) {
      for (let j = 0; j < H; j++) {
        let acc = 0;
        for (let s = 0; s < N; s++) {
          const i = t * N * H + s * H + j;
          acc += (1 / (1 + Math.exp(-bf16ToF32(up[i])))) * bf16ToF32(normed[i]);
        }
        ref[t * H + j] = acc / N;
      }
    }
    // a sum of 4 signed terms can cancel: bound in ulps of the row's scale
    expect(rowScaledError(atom, f32ArrayToBf16(ref), rows, H).maxRowUlp).toBeLessThanOrEqual(1);
    const hf = gatedMean(up, normed, rows, H, N, 'hf');
    const diff = rowScaledError(hf, atom, rows, H);
    expect(diff.maxRowUlp).toBeLessThanOrEqual(2);
    expect(diff.differing).toBeGreaterThan(0);
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
