import { describe, expect, it } from 'vitest';
import { matrixCeilingVerdict } from './gpuCheckTiming.ts';

describe('gpu-check: a kernel against its math at the matrix ceiling', () => {
  it('passes within the factor and fails past it, or on no time at all', () => {
    // 300 TFLOP in 1 s against a 900 TFLOP/s ceiling: exactly 3x its math
    expect(matrixCeilingVerdict('attnCausalQsa', 1, 300e12, 1e9, 900, 3)).toEqual({
      pass: true,
      line: expect.stringMatching(/^ {2}attnCausalQsa +1\.000000 s +300\.00 TFLOP\/s +1\.0 GB\/s {2}3\.00x its math at 900\.0 TFLOP\/s {2}pass$/),
    });
    expect(matrixCeilingVerdict('gdnRecurrence', 1.01, 300e12, 1e9, 900, 3)).toEqual({
      pass: false,
      line: expect.stringMatching(/^ {2}gdnRecurrence .*3\.03x its math at 900\.0 TFLOP\/s {2}FAIL \(over 3x\)$/),
    });
    expect(matrixCeilingVerdict('x', 0, 1e12, 1, 900, 3).pass).toBe(false);
    expect(matrixCeilingVerdict('x', -1e-3, 1e12, 1, 900, 3).pass).toBe(false);
  });
});
