import { describe, expect, it } from 'vitest';
import { OP_CASES } from '@hcsp/bench/cases';
import { checkBound, runBothSides, U_F32, U_BF16, valuesOf } from '../../../../../test/support/exactChecks.ts';

// The SP ops: the CPU reference against the float64 kernels on every op case of the family.
const OPS = ['allReduce', 'reduceScatter', 'allGather', 'shard', 'pad', 'trim'];
const cases = OP_CASES.filter((c) => OPS.includes(c.op));

describe('SP exact kernels against the CPU reference', () => {
  it('covers the family (bf16 and i32 row movement)', () => {
    expect(new Set(cases.map((c) => c.op))).toEqual(new Set(OPS));
    expect(cases.some((c) => c.op === 'allGather' && c.inputs[0]!.dtype === 'i32')).toBe(true);
  });

  for (const c of cases) {
    it(c.name, () => {
      const { ref, exact, inputs } = runBothSides(c);
      expect(exact.length).toBe(ref.length);
      const summing = c.op === 'allReduce' || c.op === 'reduceScatter';
      // sum_r |x_r| per element of the (unscattered) sum
      const tp = c.tp;
      const sumAbs = summing ? new Float64Array(inputs[0]!.data.length) : null;
      if (sumAbs)
        for (const x of inputs)
          (x!.data as Float64Array).forEach((v, i) => {
            sumAbs[i] += Math.abs(v);
          });
      for (const [p, r] of ref.entries()) {
        const e = exact[p]!;
        expect(e.dtype).toBe(r!.dtype);
        expect(e.shape).toEqual(r!.shape);
        if (r!.dtype === 'i32') {
          expect(Array.from(e.data)).toEqual(Array.from(r!.data));
          continue;
        }
        let tol: (i: number) => number = () => 0;
        if (sumAbs) {
          // rank p's output starts at element p * len of the sum for reduceScatter, 0 for allReduce
          const offset = c.op === 'reduceScatter' ? p * e.data.length : 0;
          const ev = e.data as Float64Array;
          tol =
            c.attrs.algorithm === 'oneshot'
              ? // fp32 in rank order, one bf16 rounding: gamma_{tp-1} sum |x_r| (< tp U_F32), then U_BF16
                (i) => U_BF16 * (Math.abs(ev[i]) + tp * U_F32 * sumAbs[offset + i]) + tp * U_F32 * sumAbs[offset + i]
              : // 'ring' and 'ordered' add the tp partials pairwise with a bf16 rounding after each
                // of the tp - 1 additions (ring: in chunk-owner order); each partial sum is at most
                // (1 + U_BF16)^tp sum |x_r|, so the error is at most (tp - 1) U_BF16 (1 + U_BF16)^tp sum |x_r|
                (i) => (tp - 1) * U_BF16 * (1 + U_BF16) ** tp * sumAbs[offset + i];
        }
        const report = checkBound(valuesOf(r!), e.data as Float64Array, tol, `${c.name} port ${p}`);
        expect(report.exceeded, report.describe).toBe(0);
        if (summing) expect(report.worstRatio, report.describe).toBeGreaterThan(0);
      }
    });
  }
});
