import { describe, expect, it } from 'vitest';
import { getOpDef } from '../../graph/ops/registry.ts';
import { f32ArrayToBf16 } from '../../numerics/bf16.ts';
import type { Tensor } from '../../tensor/tensor.ts';
import { cpuKernel } from './index.ts';

// The head ops' CPU kernels on hand-made inputs, and their declared output rules.
const i32 = (shape: number[], v: number[]): Tensor => ({ dtype: 'i32', shape, data: Int32Array.from(v) });
const bf = (shape: number[], v: number[]): Tensor => ({ dtype: 'bf16', shape, data: f32ArrayToBf16(v) });
const run = (op: string, inputs: Tensor[], attrs: Record<string, unknown> = {}) => cpuKernel(op)(inputs, attrs) as Tensor[];

describe('head ops (CPU reference)', () => {
  it('sliceRows keeps whole rows [start, end), any dtype', () => {
    const [y] = run('sliceRows', [i32([3, 2], [1, 2, 3, 4, 5, 6])], { start: 2, end: 3 });
    expect([y.shape, Array.from(y.data)]).toEqual([
      [1, 2],
      [5, 6],
    ]);
    const [z] = run('sliceRows', [i32([4], [7, 8, 9, 10])], { start: 1, end: 3 });
    expect([z.shape, Array.from(z.data)]).toEqual([[2], [8, 9]]);
    expect(() => getOpDef('sliceRows').shape([{ shape: [3, 2], dtype: 'bf16' }], { start: 2, end: 4 })).toThrow(/rows \[2, 4\) are outside \[0, 3\)/);
  });

  it('reshape keeps the elements in order; element counts must agree', () => {
    const x = bf([2, 4], [1, 2, 3, 4, 5, 6, 7, 8]);
    const [y] = run('reshape', [x], { shape: [4, 2] });
    expect(y.shape).toEqual([4, 2]);
    expect(Array.from(y.data)).toEqual(Array.from(x.data));
    expect(() => getOpDef('reshape').shape([{ shape: [2, 4], dtype: 'bf16' }], { shape: [3, 3] })).toThrow(/8 elements, shape \[3,3\] holds 9/);
  });

  it('rowBlocksToCols lays the rank blocks side by side (hand example: 2 blocks of 2 rows x 3)', () => {
    // block 0 = rows [a0; a1], block 1 = rows [b0; b1]  ->  [a0 b0; a1 b1]
    const [y] = run('rowBlocksToCols', [bf([4, 3], [1, 2, 3, 4, 5, 6, 10, 20, 30, 40, 50, 60])], { parts: 2 });
    expect(y.shape).toEqual([2, 6]);
    expect(Array.from(y.data)).toEqual(Array.from(f32ArrayToBf16([1, 2, 3, 10, 20, 30, 4, 5, 6, 40, 50, 60])));
    expect(() => getOpDef('rowBlocksToCols').shape([{ shape: [5, 3], dtype: 'bf16' }], { parts: 2 })).toThrow(/5 rows do not split into 2/);
  });

  it('argmax: first maximum, -0 ties +0, a NaN is the maximum (the first NaN)', () => {
    const logits = bf([4, 4], [1, 3, 3, -2, /* */ -0, 0, -1, -3, /* */ 1, NaN, 7, NaN, /* */ -Infinity, -5, -5, -Infinity]);
    const [ids] = run('argmax', [logits]);
    expect([ids.dtype, ids.shape, Array.from(ids.data)]).toEqual(['i32', [4], [1, 0, 1, 1]]);
  });

  it('mtpDraftIds shifts the ids by one and appends the next token', () => {
    const [y] = run('mtpDraftIds', [i32([4], [5, 6, 7, 8]), i32([1], [42])]);
    expect(Array.from(y.data)).toEqual([6, 7, 8, 42]);
    const [one] = run('mtpDraftIds', [i32([1], [5]), i32([1], [9])]);
    expect(Array.from(one.data)).toEqual([9]);
    expect(() =>
      getOpDef('mtpDraftIds').shape(
        [
          { shape: [4], dtype: 'i32' },
          { shape: [2], dtype: 'i32' },
        ],
        {},
      ),
    ).toThrow(/'next' must be \[1\]/);
  });
});
