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
  ];
}
