// gdnConvSilu: y[t,c] = bf(silu(acc)), acc = sum_{j<K} w[c,j] * x[t-K+1+j, c] in fp32, j in
// order from +0, rows before 0 read as zeros (core gdnMath.gdnConvSilu). The w * 0 products
// of those rows are still added, as the CPU does, so even a non-finite weight gives its bits.
// bf16 x bf16 products are exact in fp32: only the order of the adds matters.
// roundConv (the 'hf-eager' contract): the sum is rounded to bf16 before the SiLU.
// One invocation per output word (two elements), any T, C, K.
import type { KernelPlanner } from '../kernelProgram.ts';
import { readInput } from './planParts.ts';
import { wordKernel } from './wordKernel.ts';

// u.p0 = C, u.p1 = K, u.p2 = roundConv (0 or 1)
const CONV_SILU_BODY = `let t = i / u.p0;
  let c = i % u.p0;
  var acc: f32 = 0.0;
  for (var j = 0u; j < u.p1; j = j + 1u) {
    // source row t - K + 1 + j, zero before row 0
    var xv: f32 = 0.0;
    if (t + 1u + j >= u.p1) { xv = x_f32((t + 1u + j - u.p1) * u.p0 + c); }
    acc = acc + w_f32(c * u.p1 + j) * xv;
  }
  if (u.p2 != 0u) { acc = rbf(acc); }
  return silu_f32(acc);`;

export const gdnConvSiluPlanner: KernelPlanner = (inputs, _outputs, attrs) => {
  const K = attrs.kernel as number;
  const [T, C] = inputs[0]!.shape;
  const n = T * C;
  if (n === 0) return { scratch: [], dispatches: [] };
  const ins = [
    { name: 'x', from: readInput(0), dtype: 'bf16' as const },
    { name: 'w', from: readInput(1), dtype: 'bf16' as const },
  ];
  return { scratch: [], dispatches: [wordKernel('gdn-conv-silu', ins, n, [C, K, attrs.roundConv === true ? 1 : 0], CONV_SILU_BODY)] };
};
