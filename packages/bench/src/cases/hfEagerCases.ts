import { f32ToBf16, type Tensor } from '@hcsp/core';
import type { OpCase } from './opCase.ts';

// The 'hf-eager' contract's rounding points and the top-k tie rule, on inputs whose expected
// bits are worked out by hand in the comments (not by the code under test): each case's
// `expected` holds output port 0's bf16/f32/i32 values, and `contrast` names the bits the
// same inputs give without the case's hf-eager attribute, so the case fails if it is ignored.
export interface HandCase extends OpCase {
  expected: number[];
  /** the output of the same inputs without the hf-eager attribute (the atom roundings) */
  contrast?: number[];
}

const bf = (shape: number[], values: number[]): Tensor => ({ dtype: 'bf16', shape, data: Uint16Array.from(values, f32ToBf16) });

export function hfEagerHandCases(): HandCase[] {
  return [
    // conv of K 2, weights [1, 1], rows x = [2, 3 * 2^-8]:
    //   t 0: acc = 1 * 0 + 1 * 2 = 2 (bf16 already), silu(2) = 1.76159 -> bf16 1.7578125 (0x3fe1) both ways;
    //   t 1: acc = 2 + 3 * 2^-8 = 2.01171875 (exact in fp32).
    //     atom: silu(2.01171875) = 1.774380 -> bf16 grid 1.7734375 | 1.78125 (midpoint 1.77734): 1.7734375 (0x3fe3)
    //     hf-eager: bf(acc) = 2.015625 (grid 2^-6 there), silu(2.015625) = 1.778644 -> 1.78125 (0x3fe4)
    {
      name: 'hf-eager gdnConvSilu roundConv: bf(silu(bf(conv)))',
      op: 'gdnConvSilu',
      tp: 1,
      inputs: [bf([2, 1], [2, 3 * 2 ** -8]), bf([1, 1, 2], [1, 1])],
      attrs: { kernel: 2, roundConv: true },
      expected: [0x3fe1, 0x3fe4],
      contrast: [0x3fe1, 0x3fe3],
    },
    // one token routed to experts [2, 1, 0] (k order), weights 1; every expert's gate row is
    // 32 and its up row 1/32, so h = bf(bf(silu(32)) * 1/32) = 1 (silu(32) = 32 in fp32) and
    // o_e = bf(1 * down_e) = down_e: o = [1, 2^-8, 2^-8] for experts 0, 1, 2.
    //   atom: 1 + 2^-8 + 2^-8 = 1 + 2^-7 = 1.0078125 in fp32 (any order);
    //   hf-eager, ascending expert as HF's loop: bf(1 + 2^-8) = 1 (a tie, to even), bf(1 + 2^-8) = 1;
    //   (the k order e2, e1, e0 would give bf(2^-7 + 1) = 1.0078125, the atom value).
    {
      name: 'hf-eager moeExperts bf16Accumulate: index_add_ into bf16, experts ascending',
      op: 'moeExperts',
      tp: 1,
      inputs: [
        bf([1, 1], [1]),
        { dtype: 'i32', shape: [1, 3], data: Int32Array.from([2, 1, 0]) },
        bf([1, 3], [1, 1, 1]),
        bf([6, 1], [32, 1 / 32, 32, 1 / 32, 32, 1 / 32]),
        bf([3, 1], [1, 2 ** -8, 2 ** -8]),
      ],
      attrs: { firstExpert: 0, numLocal: 3, intermediate: 1, bf16Accumulate: true },
      expected: [1],
      contrast: [1.0078125],
    },
    // one head of dim 2, two rows, blocks of 4 (both rows keep their tail 0..t), scale 1.
    // Row 0 attends to key 0 only: p = 1, o = v0 = [1, 3] (0x3f80, 0x4040) under both rules.
    // Row 1, q = [1, 1], k0 = [1, 2^-9], k1 = [0, 0.5], v0 = [1, 3], v1 = [-2, 0.25]:
    //   atom: s = [1 + 2^-9, 0.5], e = [1, exp(-0.501953125) = 0.605347], l = 1.605347,
    //     o0 = (1 - 2 * 0.605347) / l = -0.131243 -> 0xbe06; o1 = (3 + 0.25 * 0.605347) / l = 1.963 -> 0x3ffb
    //   hf-eager: s = [bf(1 + 2^-9) = 1, 0.5], e = [1, exp(-0.5) = 0.606531], l = 1.606531,
    //     p = bf(e / l) = [bf(0.622459) = 0.62109375, bf(0.377541) = 0.376953125],
    //     o0 = bf(0.62109375 - 0.75390625) = bf(-0.1328125) = 0xbe08; o1 = bf(1.86328125 + 0.09423828125) = 1.9609375 (0x3ffb)
    {
      name: 'hf-eager attnCausalQsa eagerSoftmax: bf16 scores and probabilities',
      op: 'attnCausalQsa',
      tp: 1,
      inputs: [
        bf([2, 2], [1, 1, 1, 1]),
        bf([2, 2], [1, 2 ** -9, 0, 0.5]),
        bf([2, 2], [1, 3, -2, 0.25]),
        { dtype: 'i32', shape: [2, 1], data: Int32Array.from([-1, -1]) },
      ],
      attrs: { heads: 1, kvHeads: 1, headDim: 2, scale: 1, compressRatio: 4, width: 1, eagerSoftmax: true },
      expected: [0x3f80, 0x4040, 0xbe08, 0x3ffb],
      contrast: [0x3f80, 0x4040, 0xbe06, 0x3ffb],
    },
  ];
}

/**
 * Exactly equal router logits and QSA block scores: ATOM's rule, largest first and ties to the
 * lower index (aiter's topk_softmax argmax reduce keeps the lower expert on equal values; the
 * QSA indexer's stable top-k), the default of moeRoute and qsaSelect on every backend.
 */
export function topkTieHandCases(): HandCase[] {
  return [
    // row 0: logits [0, 1, 0, 1, 1, 0], top 2: experts 1, 3 and 4 share the largest probability -> [1, 3];
    // row 1: six equal logits, top 2 -> [0, 1]
    {
      name: 'moeRoute ties: equal logits go to the lower expert, largest first',
      op: 'moeRoute',
      tp: 1,
      inputs: [bf([2, 6], [0, 1, 0, 1, 1, 0, 5, 5, 5, 5, 5, 5])],
      attrs: { topK: 2, normTopkProb: true },
      expected: [1, 3, 0, 1],
    },
    // one indexer head of dim 2, q = [1, 0], block keys [s_b, 0] with s = [1, 2, 2, 1, 2, 0.5, 2, 2]:
    // score_b = relu(s_b) / fr(sqrt(2)), five blocks tie at the largest; rows at positions 14
    // (7 complete blocks: 0..6) and 15 (8 blocks) keep the top 3 -> blocks 1, 2, 4 (ascending)
    {
      name: 'qsaSelect ties: equal block scores go to the lower block',
      op: 'qsaSelect',
      tp: 1,
      inputs: [bf([2, 2], [1, 0, 1, 0]), bf([8, 2], [1, 0, 2, 0, 2, 0, 1, 0, 2, 0, 0.5, 0, 2, 0, 2, 0])],
      attrs: { nHeads: 1, headDim: 2, compressRatio: 2, width: 3, r0: 14, tokens: 16 },
      expected: [1, 2, 4, 1, 2, 4],
    },
  ];
}
