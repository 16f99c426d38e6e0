import { describe, expect, it } from 'vitest';
import { OP_CASES } from '@hcsp/bench/cases';
import { familyTests, valuesOf } from '../../../../../test/support/exactChecks.ts';

// The LM/MTP head ops: copies, views and ids are exact on both sides; argmax decides on the
// same values (the cases' logits are bf16 inputs, exact in double), so the tokens must match,
// ties included ('argmax ties': the first index of the maximum on both sides).
const OPS = ['sliceRows', 'reshape', 'rowBlocksToCols', 'argmax', 'mtpDraftIds'];
const cases = OP_CASES.filter((c) => OPS.includes(c.op));

describe('head exact kernels against the CPU reference', () => {
  familyTests(cases, OPS, (_c, { ref, exact }) => {
    expect(exact.length).toBe(ref.length);
    const r = ref[0]!;
    const e = exact[0]!;
    expect(e.dtype).toBe(r.dtype);
    expect(e.shape).toEqual(r.shape);
    expect(e.data).toBeInstanceOf(r.dtype === 'i32' ? Int32Array : Float64Array);
    expect(Array.from(e.data)).toEqual(Array.from(valuesOf(r)));
  });

  it('argmax decides on the float64 logits: values the bf16 rounding ties are told apart', async () => {
    const { exactKernel } = await import('./index.ts');
    const logits = { dtype: 'bf16' as const, shape: [2, 3], data: Float64Array.from([1, 1 + 2 ** -12, 1, -0, 0, NaN]) };
    const [ids] = exactKernel('argmax')([logits], {});
    expect(Array.from(ids!.data)).toEqual([1, 2]);
  });
});
