import { describe, expect, it } from 'vitest';
import { f32ArrayToBf16 } from '../../numerics/bf16.ts';
import { argmaxFirst } from './lmHead.ts';

describe('LM head argmax', () => {
  it('takes the first index of the maximum (torch.argmax), per row', () => {
    const logits = f32ArrayToBf16([1, 3, 3, -2, /* row 1 */ -5, -5, -5, -5, /* row 2 */ 0, -0, 0.5, 0.5]);
    expect(Array.from(argmaxFirst(logits, 3, 4))).toEqual([1, 0, 2]);
  });

  it('+0 and -0 tie (the first wins); a NaN counts as the maximum, the first NaN wins', () => {
    expect(Array.from(argmaxFirst(f32ArrayToBf16([-0, 0, -1]), 1, 3))).toEqual([0]);
    expect(Array.from(argmaxFirst(f32ArrayToBf16([1, NaN, 7, NaN]), 1, 4))).toEqual([1]);
    expect(Array.from(argmaxFirst(f32ArrayToBf16([-Infinity, -Infinity]), 1, 2))).toEqual([0]);
    expect(Array.from(argmaxFirst(f32ArrayToBf16([-Infinity, Infinity, Infinity]), 1, 3))).toEqual([1]);
  });

  it('rejects bad shapes', () => {
    expect(() => argmaxFirst(new Uint16Array(5), 2, 3)).toThrow(/5 values, expected 2x3/);
    expect(() => argmaxFirst(new Uint16Array(0), 0, 0)).toThrow(/vocab 0/);
  });
});
