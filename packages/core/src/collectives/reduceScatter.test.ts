import { describe, it, expect } from 'vitest';
import { bf16ToF32, f32ToBf16 } from '../numerics/bf16.ts';
import { REDUCE_ALGORITHMS } from '../graph/ops/spOps.ts';
import { tensor, type Tensor } from '../tensor/tensor.ts';
import { reduceScatter } from './reduceScatter.ts';

function bf16Rows(rows: number, cols: number, value: (row: number, col: number) => number): Tensor {
  const data = new Uint16Array(rows * cols);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) data[r * cols + c] = f32ToBf16(value(r, c));
  return tensor('bf16', [rows, cols], data);
}

describe('reduceScatter', () => {
  it('rank-stamped integers: rank r gets the exact sums of rows [r*C, (r+1)*C)', () => {
    const chunk = 3;
    const cols = 5;
    for (const tp of [1, 2, 3, 4, 8]) {
      const value = (k: number, row: number, col: number): number => (k + 1) * (((row + 2 * col) % 7) - 3) + (k % 3);
      const inputs = Array.from({ length: tp }, (_, k) => bf16Rows(chunk * tp, cols, (row, col) => value(k, row, col)));
      for (const alg of REDUCE_ALGORITHMS) {
        const outs = reduceScatter(inputs, alg);
        expect(outs.length).toBe(tp);
        outs.forEach((y, r) => {
          expect(y.shape).toEqual([chunk, cols]);
          const got = Array.from(y.data as Uint16Array, bf16ToF32);
          const want: number[] = [];
          for (let row = r * chunk; row < (r + 1) * chunk; row++) {
            for (let col = 0; col < cols; col++) {
              let sum = 0;
              for (let k = 0; k < tp; k++) sum += value(k, row, col);
              want.push(sum);
            }
          }
          expect(got, `${alg} tp ${tp} rank ${r}`).toEqual(want);
        });
      }
    }
  });

  it('4 ranks, hand-computed values: ring gives rank r its own ring order (owner r)', () => {
    // Rank k's tensor holds x_k everywhere, x = [1, 2^-8, -1, 2^-9]. Sums derived by hand in
    // reduceOrder.test.ts: ring owner 0 -> 0x3C00, 1 -> 0x3B80, 2 -> 0x0000, 3 -> 0x3B00;
    // oneshot -> 3*2^-9 = 0x3BC0; ordered -> 2^-9 = 0x3B00.
    const inputs = [1, 2 ** -8, -1, 2 ** -9].map((v) => bf16Rows(8, 3, () => v));
    const firstBits = (ys: Tensor[]) =>
      ys.map((y) => {
        const d = y.data as Uint16Array;
        expect(d.every((b) => b === d[0])).toBe(true);
        return d[0];
      });
    expect(firstBits(reduceScatter(inputs, 'ring'))).toEqual([0x3c00, 0x3b80, 0x0000, 0x3b00]);
    expect(firstBits(reduceScatter(inputs, 'oneshot'))).toEqual([0x3bc0, 0x3bc0, 0x3bc0, 0x3bc0]);
    expect(firstBits(reduceScatter(inputs, 'ordered'))).toEqual([0x3b00, 0x3b00, 0x3b00, 0x3b00]);
  });

  it('bad input is named: rows not divisible by tp, shape or dtype mismatch, unknown algorithm', () => {
    const a = bf16Rows(6, 2, () => 1);
    expect(() => reduceScatter([a, a, a, a], 'ring')).toThrow(/6 rows .* not divisible by tp 4/);
    expect(() => reduceScatter([a, bf16Rows(4, 2, () => 1)], 'ring')).toThrow(/rank 1 has shape \[4,2\], rank 0 has \[6,2\]/);
    const f = tensor('f32', [6, 2], new Float32Array(12));
    expect(() => reduceScatter([a, f], 'ring')).toThrow(/rank 1 has dtype f32/);
    expect(() => reduceScatter([a, a], 'tree' as never)).toThrow(/unknown reduction algorithm "tree"/);
    expect(() => reduceScatter([], 'ring')).toThrow(/tp = 0/);
  });
});
