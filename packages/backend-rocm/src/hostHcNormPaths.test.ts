import { cpuKernel, f32ArrayToBf16, Rng, type Tensor } from '@hcsp/core';
import { describe, expect, it } from 'vitest';
import { base64, hostIsas, runOnHostIsa } from '../../../test/support/hostIsaRuns.ts';

// The host device's HC norm sums its squares in canonical order v1 on the process's vector
// unit (native/src/host/kernels/canonical_sumsq.h: AVX-512, AVX2 or the portable scalar
// definition, chosen once per process, HCSP_NATIVE_ISA forcing one). Each path this CPU has
// runs the op in its own process and must give the CPU reference's bits: on the row where
// the sequential order and v1 differ, on lengths off the 512-term step and the 8-term chunk,
// and on specials. (The outputs show 8 bits of the sum: canonicalSumsq.test.ts compares the
// paths' raw sums.)

const bf16 = (shape: number[], values: number[]): Tensor => ({ dtype: 'bf16', shape, data: f32ArrayToBf16(values) });

/** streams of H values: the pinned 4096-and-ones row, random rows of every kind of length, and specials */
function cases(): { name: string; n: number; h: number; x: number[] }[] {
  const rng = new Rng(22);
  const normal = (count: number, scale: number) => Array.from({ length: count }, () => rng.normal() * scale);
  const out: { name: string; n: number; h: number; x: number[] }[] = [];
  const ones = Array.from({ length: 1024 }, (_, j) => (j === 0 ? 4096 : 1));
  out.push({ name: '4096 then ones (sequential and v1 differ)', n: 2, h: 1024, x: [...ones, ...ones] });
  // H off the 512-term step and the 8-term chunk, shorter than a chunk, and 5 whole steps
  for (const h of [1, 7, 24, 1030, 2560]) out.push({ name: `random, H ${h}`, n: 4, h, x: normal(3 * 4 * h, 1 + (h % 5)) });
  const special = normal(4 * 520, 1);
  special[5] = 2 ** 70; // the square overflows
  special[520 + 9] = Infinity;
  special[1040 + 513] = NaN;
  special[1560 + 100] = -0;
  out.push({ name: 'overflowing square, inf, NaN, -0', n: 4, h: 520, x: special });
  return out;
}

describe('host HC norm: every vector path gives the reference bits (canonical order v1)', () => {
  const { best, isas } = hostIsas();

  for (const c of cases()) {
    it(c.name, () => {
      expect(isas).toContain(best);
      const rows = c.x.length / (c.n * c.h);
      const x = bf16([rows, c.n * c.h], c.x);
      const w = bf16(
        [c.n * c.h],
        Array.from({ length: c.n * c.h }, (_, j) => ((j * 37) % 11) * 2 ** -8),
      );
      const attrs = { streams: c.n, eps: 1e-6, contract: 'atom' };
      const want = cpuKernel('hcCombineNorm')([x, null, null, w], attrs).map((t) => base64(t!));
      for (const isa of isas) {
        const got = runOnHostIsa(isa, [{ op: 'hcCombineNorm', inputs: [x, null, null, w], attrs }], 60_000);
        expect(got.isa).toBe(isa);
        expect(got.results[0], `HCSP_NATIVE_ISA=${isa}`).toEqual(want);
      }
    });
  }
});
