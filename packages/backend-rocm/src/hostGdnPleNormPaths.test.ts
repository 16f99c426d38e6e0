import { cpuKernel, f32ArrayToBf16, GDN_L2NORM_EPS, Rng, type Tensor } from '@hcsp/core';
import { describe, expect, it } from 'vitest';
import { base64, hostIsas, type IsaRun, runOnHostIsa } from '../../../test/support/hostIsaRuns.ts';

// The host device's GDN and PLE norms sum their squares in canonical order v1 on the process's
// vector unit (native/src/host/kernels/canonical_sumsq.h: AVX-512, AVX2 or the portable scalar
// definition, chosen once per process, HCSP_NATIVE_ISA forcing one): the GDN l2 norms (inside
// gdnRecurrence), gdnGatedNorm and pleRms1pNorm (pleGate's dot, by the scalar sumTerms, rides
// along). Each path this CPU has runs the ops in its own process and must give the CPU
// reference's bits: on core's hand-computed rows where the sequential order and v1 differ, on
// lengths off the 512-term step and the 8-term chunk, and on specials.

/** a named op run, its inputs all present */
interface OpRun extends IsaRun {
  name: string;
  inputs: Tensor[];
}

const bf16 = (shape: number[], values: number[]): Tensor => ({ dtype: 'bf16', shape, data: f32ArrayToBf16(values) });

function cases(): OpRun[] {
  const rng = new Rng(23);
  const normal = (count: number, scale: number) => Array.from({ length: count }, () => rng.normal() * scale);
  const out: OpRun[] = [];
  // core's hand-computed rows (gdnMath.test.ts, pleMath.test.ts)
  const dk = 128;
  out.push({
    name: 'gdnRecurrence: k = [4096, 1 x 127]',
    op: 'gdnRecurrence',
    inputs: [
      bf16([1, 2 * dk + 2], [4096, ...new Array<number>(dk - 1).fill(0), 4096, ...new Array<number>(dk - 1).fill(1), 1 + 2 ** -7, 1 + 5 * 2 ** -7]),
      { dtype: 'f32', shape: [1, 1], data: new Float32Array([0]) },
      bf16([1, 1], [1.5]),
    ],
    attrs: { keyHeads: 1, valueHeads: 1, keyDim: dk, valueDim: 2, scale: 1, l2Eps: GDN_L2NORM_EPS },
  });
  const hd = 2 ** 18;
  out.push({
    name: 'gdnGatedNorm: 4096 then 2^18 - 1 ones',
    op: 'gdnGatedNorm',
    inputs: [
      bf16([1, hd], [4096, ...new Array<number>(hd - 1).fill(1)]),
      bf16([1, hd], new Array<number>(hd).fill(0)),
      bf16([hd], new Array<number>(hd).fill(1)),
    ],
    attrs: { heads: 1, headDim: hd, eps: 1e-6 },
  });
  const ones = Array.from({ length: 2048 }, (_, j) => (j % 1024 === 0 ? 4096 : 1));
  out.push({
    name: 'pleRms1pNorm: 4096 then ones',
    op: 'pleRms1pNorm',
    inputs: [bf16([1, 2048], ones), bf16([2048], new Array<number>(2048).fill(3 * 2 ** -8))],
    attrs: { groups: 2, eps: 1e-6 },
  });
  // lengths off the 512-term step and the 8-term chunk, shorter than a chunk, whole steps
  for (const n of [1, 7, 24, 517, 1030, 2560]) {
    const h = { keyHeads: 2, valueHeads: 2, keyDim: n, valueDim: 2 };
    const C = 4 * n + 4;
    out.push({
      name: `gdnRecurrence: keyDim ${n}`,
      op: 'gdnRecurrence',
      inputs: [
        bf16([2, C], normal(2 * C, 2)),
        { dtype: 'f32', shape: [2, 2], data: Float32Array.from(normal(4, 0.1), (v) => -Math.abs(v)) },
        bf16([2, 2], normal(4, 1)),
      ],
      attrs: { ...h, scale: Math.fround(n ** -0.5), l2Eps: GDN_L2NORM_EPS },
    });
    const even = n + (n % 2);
    out.push({
      name: `gdnGatedNorm: headDim ${even}`,
      op: 'gdnGatedNorm',
      inputs: [bf16([3, 2 * even], normal(6 * even, 3)), bf16([3, 2 * even], normal(6 * even, 1)), bf16([even], normal(even, 0.1))],
      attrs: { heads: 2, headDim: even, eps: 1e-6 },
    });
    out.push({
      name: `pleRms1pNorm: groups of ${n}`,
      op: 'pleRms1pNorm',
      inputs: [bf16([3, 2 * n], normal(6 * n, 2)), bf16([2 * n], normal(2 * n, 0.1))],
      attrs: { groups: 2, eps: 1e-6 },
    });
    out.push({
      name: `pleGate: H ${n}`,
      op: 'pleGate',
      inputs: [bf16([3, 2 * n], normal(6 * n, 1)), bf16([3, 2 * n], normal(6 * n, 1))],
      attrs: { streams: 2 },
    });
  }
  // specials: a square that overflows, inf, NaN, -0, a square below fp32's normal range
  const special = normal(4 * 520, 1);
  special[5] = 2 ** 70;
  special[520 + 9] = Infinity;
  special[1040 + 513] = NaN;
  special[1560 + 100] = -0;
  special[1560 + 101] = 1.5 * 2 ** -75;
  out.push({
    name: 'pleRms1pNorm: specials',
    op: 'pleRms1pNorm',
    inputs: [bf16([1, 4 * 520], special), bf16([4 * 520], normal(4 * 520, 0.1))],
    attrs: { groups: 4, eps: 1e-6 },
  });
  out.push({
    name: 'gdnGatedNorm: specials',
    op: 'gdnGatedNorm',
    inputs: [bf16([1, 4 * 520], special), bf16([1, 4 * 520], normal(4 * 520, 1)), bf16([520], normal(520, 0.1))],
    attrs: { heads: 4, headDim: 520, eps: 1e-6 },
  });
  return out;
}

describe('host GDN and PLE norms: every vector path gives the reference bits (canonical order v1)', () => {
  it('every op on every vector path this CPU has', () => {
    const { best, isas } = hostIsas();
    expect(isas).toContain(best);
    const all = cases();
    const want = all.map((c) => cpuKernel(c.op)(c.inputs, c.attrs).map((t) => base64(t!)));
    for (const isa of isas) {
      const got = runOnHostIsa(isa, all, 120_000);
      expect(got.isa).toBe(isa);
      all.forEach((c, i) => {
        expect(got.results[i], `${c.name}, HCSP_NATIVE_ISA=${isa}`).toEqual(want[i]);
      });
    }
  }, 240_000);
});
