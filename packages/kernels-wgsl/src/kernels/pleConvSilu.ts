// pleConvSilu: out = bf(G + bf(silu(bf(conv)))), conv the causal depthwise conv1d over time
// of the normed values, as core's pleConvSilu (layers/ple/pleMath.ts): per channel c,
// conv[t,c] = sum_{i=0..K-1} w[c,i] * Gn[t-(K-1-i)*dilation, c] accumulated in fp32 in i
// order, taps before the start skipped (as the CPU does: adding +0 would change nothing).
// bf16 x bf16 products are exact in fp32, so the plain multiply-add has one rounding.
import type { KernelPlanner } from '../kernelProgram.ts';
import { readInput } from './planParts.ts';
import { wordKernel } from './wordKernel.ts';

export const pleConvSiluPlanner: KernelPlanner = (inputs, _outputs, attrs) => {
  const dilation = attrs.dilation as number;
  const [T, C] = inputs[1]!.shape;
  const K = inputs[2]!.shape[2];
  if (T * C === 0) return { scratch: [], dispatches: [] };
  const body = `let t = i / u.p0;
  let c = i % u.p0;
  var acc: f32 = 0.0;
  for (var k = 0u; k < u.p1; k = k + 1u) {
    let lag = (u.p1 - 1u - k) * u.p2;
    if (lag <= t) { acc = acc + w_f32(c * u.p1 + k) * gn_f32((t - lag) * u.p0 + c); }
  }
  let act = rbf(silu_f32(rbf(acc)));
  return g_f32(i) + act;`;
  const ins = [
    { name: 'gn', from: readInput(0), dtype: 'bf16' as const },
    { name: 'g', from: readInput(1), dtype: 'bf16' as const },
    { name: 'w', from: readInput(2), dtype: 'bf16' as const },
  ];
  return { scratch: [], dispatches: [wordKernel('pleConvSilu', ins, T * C, [C, K, dilation], body)] };
};
