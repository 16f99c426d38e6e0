import { f32ToBf16, type Tensor } from '@hcsp/core';
import type { OpCase } from './opCases.ts';

// The 'hf-eager' contract's rounding points and the top-k tie rules, on inputs whose expected
// bits are worked out by hand in the comments (not by the code under test): each case's
// `expected` holds output port 0's bf16/f32/i32 values, and `contrast` names the bits the
// other rule gives, so the case fails if the attribute is ignored.
export interface HandCase extends OpCase {
  expected: number[];
  /** the output of the same inputs without the attribute (atom rounding / lowest index) */
  contrast: number[];
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
  ];
}
