// moeSwiGlu: h = bf(bf(silu(gate)) * up) of rows [gate (I) | up (I)], as core's moeSwiGlu
// (layers/moe/moeMath.ts): silu in fp32 (fp32Math), rounded to bf16, times up, rounded once.
import type { KernelPlanner } from '../kernelProgram.ts';
import { dims2, readInput, requireShape, requireTyped } from './planParts.ts';
import { wordKernel } from './wordKernel.ts';

export const moeSwiGluPlanner: KernelPlanner = (inputs, outputs) => {
  const gateUp = requireTyped(inputs[0], 'moeSwiGlu: input gateUp', 'bf16');
  const h = requireTyped(outputs[0], 'moeSwiGlu: output h', 'bf16');
  const [T, twoI] = dims2(gateUp, 'moeSwiGlu: gateUp');
  if (twoI % 2 !== 0) throw new Error(`moeSwiGlu: gate_up width ${twoI} is odd (expected [gate | up])`);
  const I = twoI / 2;
  requireShape(h, [T, I], 'moeSwiGlu: h');
  if (T * I === 0) return { scratch: [], dispatches: [] };
  const body = `let base = (i / u.p0) * 2u * u.p0 + i % u.p0;
  let act = rbf(silu_f32(gu_f32(base)));
  return act * gu_f32(base + u.p0);`;
  return { scratch: [], dispatches: [wordKernel('moeSwiGlu', [{ name: 'gu', from: readInput(0), dtype: 'bf16' }], T * I, [I], body)] };
};
