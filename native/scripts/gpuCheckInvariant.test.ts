import { TINY } from '@hcsp/core';
import { describe, expect, it } from 'vitest';
import { differingOutputs, invariantModes, invariantVerdict, spInvariantStep } from './gpuCheckInvariant.ts';

describe('gpu-check row-count-invariance verdicts', () => {
  it('names the outputs that differ or that one side lacks', () => {
    const a = { h: Buffer.from([1, 2]), logits: Buffer.from([3]), nextTokens: Buffer.from([4]) };
    expect(differingOutputs(a, { ...a })).toEqual([]);
    expect(differingOutputs(a, { ...a, logits: Buffer.from([5]) })).toEqual(['logits']);
    expect(differingOutputs(a, { h: a.h, logits: a.logits })).toEqual(['nextTokens']);
  });

  it('vendor-invariant (and exact) must agree; plain vendor is reported', () => {
    expect(invariantModes('cuda')).toEqual([
      { gemm: 'vendor-invariant', required: true },
      { gemm: 'vendor', required: false },
    ]);
    expect(invariantModes('emulated')).toEqual([{ gemm: 'exact', required: true }]);
    expect(invariantVerdict('vendor-invariant', true, [], 5, 12.34)).toEqual({
      pass: true,
      line: '  gemm vendor-invariant  SP on vs off: bit-identical (5 outputs), 12.3 s: pass',
    });
    expect(invariantVerdict('vendor-invariant', true, ['h', 'logits'], 5, 1)).toEqual({
      pass: false,
      line: expect.stringMatching(/differ in h, logits, 1\.0 s: FAIL \(must be bit-identical\)$/),
    });
    expect(invariantVerdict('vendor', false, ['logits'], 5, 1)).toEqual({
      pass: true,
      line: expect.stringMatching(/differ in logits, 1\.0 s: reported, not required$/),
    });
  });
});

describe('gpu-check row-count-invariance step on the emulated device', () => {
  it('runs SP on and off at tp 2 with the exact GEMM and finds the final outputs bit-identical', async () => {
    const rows = await spInvariantStep('emulated', { config: TINY, tokens: 23 });
    expect(rows[0]!.line).toBe('SP on vs off, tp 2 on one emulated device: tiny all layers, T=23, final outputs compared bit for bit');
    expect(rows.slice(1)).toEqual([
      { pass: true, line: expect.stringMatching(/^ {2}gemm exact {13}SP on vs off: bit-identical \(\d outputs\), [\d.]+ s: pass$/) },
    ]);
  }, 300_000);
});
