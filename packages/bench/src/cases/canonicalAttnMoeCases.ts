import { f32ToBf16, Rng, type Tensor } from '@hcsp/core';
import type { OpCase } from './opCase.ts';

/**
 * Attention's and MoE routing's reductions in canonical reduction order v1 (core
 * numerics/canonicalSum.ts): the head norm's sum of squares, attention's softmax sum l over the
 * kept keys, the router's softmax sum over the experts. Each has a pinned case where the
 * sequential order gives other bits (core's attentionMath.test.ts and moeMath.test.ts compute
 * them by hand), and random cases past one 512-term step (a partial second step, odd offsets,
 * GQA, dropped blocks). Their own seed, so other cases keep their inputs.
 */
export function canonicalAttnMoeCases(): OpCase[] {
  const own = new Rng(2206);
  const size = (shape: number[]) => shape.reduce((a, d) => a * d, 1);
  const rand = (shape: number[], std: number): Tensor => ({ dtype: 'bf16', shape, data: own.fillBf16Normal(size(shape), std) });
  const bits = (shape: number[], value: (j: number) => number): Tensor => ({
    dtype: 'bf16',
    shape,
    data: Uint16Array.from({ length: size(shape) }, (_, j) => f32ToBf16(value(j))),
  });
  /** each row keeps its latest min(width, nb) complete blocks, ascending, then -1 */
  const latestBlocks = (T: number, width: number, ratio: number): Tensor => ({
    dtype: 'i32',
    shape: [T, width],
    data: Int32Array.from({ length: T * width }, (_, i) => {
      const nb = Math.floor((Math.floor(i / width) + 1) / ratio);
      const n = Math.min(width, nb);
      return i % width < n ? nb - n + (i % width) : -1;
    }),
  });
  const hd = 256;
  const T = 512;
  const wide = 520;
  return [
    {
      name: 'attnHeadNormRopeBf16 canonical order: 4096 then ones, headDim 256',
      op: 'attnHeadNormRopeBf16',
      tp: 1,
      // two heads; RoPE on dims 0-1 with cos 1, sin 0 leaves the normed values (on bf16 ties in d order)
      inputs: [bits([1, 2 * hd], (d) => (d % hd === 0 ? 4096 : 1)), bits([hd], () => 3 * 2 ** -8), bits([1, 1], () => 1), bits([1, 1], () => 0)],
      attrs: { heads: 2, headDim: hd, stride: hd, offset: 0, ropeDims: 2, eps: 1e-6 },
    },
    {
      name: 'attnHeadNormRopeBf16 canonical order: headDim 520 at offset 40, RoPE 64',
      op: 'attnHeadNormRopeBf16',
      tp: 1,
      inputs: [rand([5, 3 * 1100], 2), rand([wide], 0.2), rand([5, 32], 0.7), rand([5, 32], 0.7)],
      attrs: { heads: 3, headDim: wide, stride: 1100, offset: 40, ropeDims: 64, eps: 1e-6 },
    },
    {
      name: 'qsaBlockKeys canonical order: headDim 520',
      op: 'qsaBlockKeys',
      tp: 1,
      inputs: [rand([13, wide], 1), rand([wide], 0.1), rand([13, 32], 0.7), rand([13, 32], 0.7)],
      attrs: { headDim: wide, compressRatio: 4, ropeDims: 64, eps: 1e-6 },
    },
    {
      name: 'attnCausalQsa canonical order: two keys at the max, 510 tiny ones',
      op: 'attnCausalQsa',
      tp: 1,
      // q = [1, 0]; keys 0, 1 = [0, 0] (p = 1), the rest [-16, 0] (p ~ 1.1e-7, lost against 2 in key order)
      inputs: [
        bits([T, 2], (i) => (i % 2 === 0 ? 1 : 0)),
        bits([T, 2], (i) => (i >= 4 && i % 2 === 0 ? -16 : 0)),
        bits([T, 2], (i) => (i < 2 ? 1 : i < 4 ? 3 * 2 ** -8 : 0)),
        latestBlocks(T, T / 4, 4),
      ],
      attrs: { heads: 1, kvHeads: 1, headDim: 2, scale: 1, compressRatio: 4, width: T / 4 },
    },
    {
      name: 'attnCausalQsa canonical order: up to 563 kept keys, GQA, dropped blocks',
      op: 'attnCausalQsa',
      tp: 1,
      inputs: [rand([600, 4 * 8], 2), rand([600, 2 * 8], 2), rand([600, 2 * 8], 1), latestBlocks(600, 140, 4)],
      attrs: { heads: 4, kvHeads: 2, headDim: 8, scale: Math.fround(8 ** -0.5), compressRatio: 4, width: 140 },
    },
    {
      name: 'moeRoute canonical order: 512 experts, a probability on a bf16 tie',
      op: 'moeRoute',
      tp: 1,
      inputs: [bits([1, 512], (e) => (e === 0 ? 0 : e === 1 ? -(2 ** -8) : -17))],
      attrs: { topK: 2, normTopkProb: false },
    },
    ...[true, false].map(
      (normTopkProb): OpCase => ({
        name: `moeRoute canonical order: 600 experts${normTopkProb ? ', renormalized' : ''}`,
        op: 'moeRoute',
        tp: 1,
        inputs: [rand([5, 600], 3)],
        attrs: { topK: 8, normTopkProb },
      }),
    ),
  ];
}
