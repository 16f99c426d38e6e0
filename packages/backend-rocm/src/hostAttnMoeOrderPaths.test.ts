import { cpuKernel, type Tensor } from '@hcsp/core';
import { describe, expect, it } from 'vitest';
import { canonicalAttnMoeCases } from '@hcsp/bench/cases';
import { base64, hostIsas, runOnHostIsa } from '../../../test/support/hostIsaRuns.ts';

// The host device's attention and MoE routing reductions in canonical order v1 on every vector
// path this CPU has (HCSP_NATIVE_ISA: AVX-512, AVX2 or portable, one per process): the head
// norm's sum of squares (canonical_sumsq.h), attention's softmax l and the router's softmax sum
// (canonical::sumTerms over values the vector exps computed). Each path runs the shared cases
// (the pinned inputs where the sequential order gives other bits, and random ones past one
// 512-term step) in its own process and must give the CPU reference's bits.

describe('host attention and MoE routing: every vector path gives the reference bits (canonical order v1)', () => {
  const { best, isas } = hostIsas();

  for (const c of canonicalAttnMoeCases()) {
    it(c.name, () => {
      expect(isas).toContain(best);
      const inputs = c.inputs as Tensor[];
      const want = cpuKernel(c.op)(inputs, c.attrs).map((t) => base64(t!));
      for (const isa of isas) {
        const got = runOnHostIsa(isa, [{ op: c.op, inputs, attrs: c.attrs }], 60_000);
        expect(got.isa).toBe(isa);
        expect(got.results[0], `HCSP_NATIVE_ISA=${isa}`).toEqual(want);
      }
    });
  }
});
