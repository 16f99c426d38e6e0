import type { XcheckPair, XcheckTensor } from '@hcsp/core/xcheck';
import { describe, expect, it } from 'vitest';
import { tensorDetail } from './tensorDetail.ts';

const exactErr = (maxUlp: number) => ({ maxAbs: maxUlp / 100, meanAbs: maxUlp / 1000, maxUlp });
const tensor = (over: Partial<XcheckTensor> = {}): XcheckTensor => ({
  name: 'layers.2.attn.out.r1',
  layer: 2,
  rank: 1,
  count: 400,
  differing: 5,
  nonFinite: { a: 0, b: 0 },
  exactFraction: 395 / 400,
  maxUlp: 3,
  meanUlp: 0.1,
  rowUlp: 2,
  maxAbs: 0.0625,
  maxRel: 0.01,
  exact: { a: exactErr(930), b: exactErr(925), fartherA: 3, fartherB: 2, attributed: 'a' },
  first: { row: 81, col: 7, a: 1.5, b: 1.5078125 },
  rows: { rowStart: 75, bucketRows: 5, differing: [0, 4, 0, 1], maxUlp: [0, 2, 0, 1] },
  ...over,
});
const pair = (t: XcheckTensor): XcheckPair => ({ a: 'cpu:sp=on', b: 'cpu:sp=off', tensors: [t], differing: t.differing, maxUlp: t.maxUlp ?? 0 });

describe('tensorDetail', () => {
  it("gives the tensor's differing row buckets in global rows, its first difference and its float64 attribution", () => {
    const d = tensorDetail(pair(tensor()), 'layers.2.attn.out.r1');
    expect(d.summary).toBe('5 of 400 elements differ, max 2 row-scaled ulp, max 3 ulp elementwise, max |a - b| 0.063');
    expect(d.first).toBe('first difference at row 81, column 7: a 1.500, b 1.508');
    expect(d.rows).toEqual([
      { start: 80, end: 85, differing: 4, maxUlp: 2 },
      { start: 90, end: 95, differing: 1, maxUlp: 1 },
    ]);
    expect(tensorDetail(pair(tensor()), 'layers.2.attn.out.r1', false).rows).toHaveLength(4);
    expect(d.attribution).toBe(
      'own error against float64: a (cpu:sp=on) 930 row-scaled ulp (max abs 9.300), b (cpu:sp=off) 925 (max abs 9.250); run a is farther from float64 on 3 of 5 differing elements (the other on 2); the difference is within the larger own error (rounding noise)',
    );
  });

  it("says when the difference is larger than either side's float64 error, and when there is no float64 evaluation", () => {
    const big = tensorDetail(
      pair(tensor({ rowUlp: 714, exact: { a: exactErr(930), b: exactErr(1), fartherA: 5, fartherB: 0, attributed: 'a' } })),
      'layers.2.attn.out.r1',
    );
    expect(big.attribution).toMatch(/within the larger own error/);
    const beyond = tensorDetail(pair(tensor({ rowUlp: 2000 })), 'layers.2.attn.out.r1');
    expect(beyond.attribution).toMatch(/larger than either side's own error: look here$/);
    const none = tensorDetail(
      pair(tensor({ exact: null, first: null, differing: 0, rows: { rowStart: 0, bucketRows: 1, differing: [0], maxUlp: [0] } })),
      'layers.2.attn.out.r1',
    );
    expect([none.attribution, none.first, none.rows]).toEqual([null, null, []]);
  });

  it('names a tensor the pair does not have', () => {
    expect(() => tensorDetail(pair(tensor()), 'layers.9.mlp.out')).toThrow('the pair cpu:sp=on / cpu:sp=off has no tensor "layers.9.mlp.out"');
  });
});
