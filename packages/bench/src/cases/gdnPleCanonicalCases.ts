import { f32ToBf16, GDN_L2NORM_EPS, Rng, type Tensor } from '@hcsp/core';
import type { OpCase } from './opCase.ts';

/**
 * The GDN and PLE long sums in canonical reduction order v1 (core numerics/canonicalSum.ts):
 * core's hand-computed rows, where the sequential order gives other bits (gdnMath.test.ts,
 * pleMath.test.ts compute them), and random rows of whole 512-term steps and of a partial step
 * with a partial chunk. Their own seed, so the other cases keep their inputs.
 */
/**
 * pleGate's pinned dot over 2 streams of h (core's hand-computed case, pleMath.test.ts): keys and
 * queries whose products are 2^24, ones, -2^24 on stream 0 and its negation on stream 1, so that
 * the sequential order and canonical order v1 give other gates.
 */
export function pleGatePinned(h: number): { k: number[]; q: number[] } {
  const ends = [0, h - 1, h, 2 * h - 1];
  return {
    k: Array.from({ length: 2 * h }, (_, j) => (j === 0 || j === 2 * h - 1 ? 4096 : j === h - 1 || j === h ? -4096 : j > h ? -1 : 1)),
    q: Array.from({ length: 2 * h }, (_, j) => (ends.includes(j) ? 4096 : 1)),
  };
}

export function gdnPleCanonicalCases(): OpCase[] {
  const own = new Rng(2206);
  const numel = (shape: number[]) => shape.reduce((a, d) => a * d, 1);
  const rand = (shape: number[], std = 1): Tensor => ({ dtype: 'bf16', shape, data: own.fillBf16Normal(numel(shape), std) });
  const bits = (shape: number[], value: (j: number) => number): Tensor => ({
    dtype: 'bf16',
    shape,
    data: Uint16Array.from({ length: numel(shape) }, (_, j) => f32ToBf16(value(j))),
  });
  const f32 = (shape: number[], value: (j: number) => number): Tensor => ({
    dtype: 'f32',
    shape,
    data: Float32Array.from({ length: numel(shape) }, (_, j) => value(j)),
  });
  const dk = 128;
  const h = 2560;
  const hd = 2 ** 18;
  const gate = pleGatePinned(h);
  const gdn517 = { keyHeads: 2, valueHeads: 4, keyDim: 517, valueDim: 4 };
  return [
    {
      name: 'gdnRecurrence canonical order: k = [4096, 1 x 127]',
      op: 'gdnRecurrence',
      tp: 1,
      inputs: [
        bits([1, 2 * dk + 2], (j) =>
          j === 0 || j === dk ? 4096 : j > dk && j < 2 * dk ? 1 : j === 2 * dk ? 1 + 2 ** -7 : j === 2 * dk + 1 ? 1 + 5 * 2 ** -7 : 0,
        ),
        f32([1, 1], () => 0),
        bits([1, 1], () => 1.5),
      ],
      attrs: { keyHeads: 1, valueHeads: 1, keyDim: dk, valueDim: 2, scale: 1, l2Eps: GDN_L2NORM_EPS },
    },
    {
      name: 'gdnRecurrence canonical order: keyDim 517',
      op: 'gdnRecurrence',
      tp: 1,
      inputs: [rand([3, 2 * 2 * 517 + 4 * 4], 3), f32([3, 4], (j) => -0.1 * (j + 1)), rand([3, 4])],
      attrs: { ...gdn517, scale: Math.fround(517 ** -0.5), l2Eps: GDN_L2NORM_EPS },
    },
    {
      name: 'gdnGatedNorm canonical order: 4096 then 2^18 - 1 ones',
      op: 'gdnGatedNorm',
      tp: 1,
      inputs: [bits([1, hd], (j) => (j === 0 ? 4096 : 1)), bits([1, hd], () => 0), bits([hd], () => 1)],
      attrs: { heads: 1, headDim: hd, eps: 1e-6 },
    },
    ...[1024, 1030].map(
      (dim): OpCase => ({
        name: `gdnGatedNorm canonical order: headDim ${dim}`,
        op: 'gdnGatedNorm',
        tp: 1,
        inputs: [rand([3, 2 * dim], 3), rand([3, 2 * dim]), rand([dim], 0.1)],
        attrs: { heads: 2, headDim: dim, eps: 1e-6 },
      }),
    ),
    {
      name: 'pleRms1pNorm canonical order: 4096 then ones',
      op: 'pleRms1pNorm',
      tp: 1,
      inputs: [bits([1, 2048], (j) => (j % 1024 === 0 ? 4096 : 1)), bits([2048], () => 3 * 2 ** -8)],
      attrs: { groups: 2, eps: 1e-6 },
    },
    ...[
      [2, 2560],
      [3, 1030],
    ].map(
      ([groups, gs]): OpCase => ({
        name: `pleRms1pNorm canonical order: ${groups} groups of ${gs}`,
        op: 'pleRms1pNorm',
        tp: 1,
        inputs: [rand([3, groups * gs], 2), rand([groups * gs], 0.1)],
        attrs: { groups, eps: 1e-6 },
      }),
    ),
    {
      name: 'pleGate canonical order: 2^24, ones, -2^24',
      op: 'pleGate',
      tp: 1,
      inputs: [bits([1, 2 * h], (j) => gate.k[j]), bits([1, 2 * h], (j) => gate.q[j])],
      attrs: { streams: 2 },
    },
    ...[
      [2, 2560],
      [3, 1030],
    ].map(
      ([streams, hh]): OpCase => ({
        name: `pleGate canonical order: ${streams} streams of ${hh}`,
        op: 'pleGate',
        tp: 1,
        inputs: [rand([3, streams * hh]), rand([3, streams * hh])],
        attrs: { streams },
      }),
    ),
  ];
}
