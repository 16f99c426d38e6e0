import { describe, expect } from 'vitest';
import { OP_CASES } from '@hcsp/bench/cases';
import { checkBound, gamma32, familyTests, U_F32, U_BF16, valuesOf } from '../../../../../test/support/exactChecks.ts';
import { linearF64 } from './basicExact.ts';

// The basic ops: the CPU reference against the float64 kernels on every op case of the family.
const cases = OP_CASES.filter((c) => ['linear', 'add', 'sliceCols', 'embed'].includes(c.op));

describe('basic exact kernels against the CPU reference', () => {
  familyTests(cases, ['linear', 'add', 'sliceCols', 'embed'], (c, { ref, exact, inputs }) => {
    expect(exact.length).toBe(ref.length);
    const r = ref[0]!;
    const e = exact[0]!;
    expect(e.dtype).toBe(r.dtype);
    expect(e.shape).toEqual(r.shape);
    const rv = valuesOf(r);
    const ev = e.data as Float64Array;
    let tol: (i: number) => number;
    if (c.op === 'linear') {
      // ref = bf(s'), s' the fp32 recursive sum of the K exact products (bf16 x bf16 is exact
      // in fp32): |s' - s| <= g = gamma_K * sum_k |x w| (plus the double sum's own K 2^-53
      // of it), and the bf16 rounding adds U_BF16 |s'| <= U_BF16 (|s| + g).
      const [rows, k] = inputs[0]!.shape;
      const outF = inputs[1]!.shape[0];
      const abs = (a: Float64Array) => a.map(Math.abs);
      const sumAbs = linearF64(abs(inputs[0]!.data as Float64Array), abs(inputs[1]!.data as Float64Array), rows, k, outF);
      tol = (i) => {
        const g = (gamma32(k) + k * 2 ** -53) * sumAbs[i];
        return U_BF16 * (Math.abs(ev[i]) + g) + g;
      };
    } else if (c.op === 'add') {
      // ref = bf(fl(a + b)): two roundings of a + b, U_BF16 + U_F32 relative (and 0 stays 0)
      tol = (i) => (U_BF16 + 2 * U_F32) * Math.abs(ev[i]);
    } else {
      tol = () => 0; // copies
    }
    const report = checkBound(rv, ev, tol, c.name);
    expect(report.exceeded, report.describe).toBe(0);
    // the rounding ops do round: the reference differs from the exact value somewhere
    if (c.op === 'linear' || c.op === 'add') expect(report.worstRatio, report.describe).toBeGreaterThan(0);
  });
});
