// moeSwiGlu: h = bf(bf(silu(gate)) * up) of rows [gate (I) | up (I)], as core's moeSwiGlu
// (layers/moe/moeMath.ts): silu in fp32 (fp32Math), rounded to bf16, times up, rounded once.
import type { KernelPlanner } from '../kernelProgram.ts';
import { readInput } from './planParts.ts';
import { wordKernel } from './wordKernel.ts';

export const moeSwiGluPlanner: KernelPlanner = (inputs) => {
  const [T, twoI] = inputs[0]!.shape;
  const I = twoI / 2;
  if (T * I === 0) return { scratch: [], dispatches: [] };
  const body = `let base = (i / u.p0) * 2u * u.p0 + i % u.p0;
  let act = rbf(silu_f32(gu_f32(base)));
  return act * gu_f32(base + u.p0);`;
  return { scratch: [], dispatches: [wordKernel('moeSwiGlu', [{ name: 'gu', from: readInput(0), dtype: 'bf16' }], T * I, [I], body)] };
};
