// moeCombine: y = bf(bf(routed) + bf(shared * bf(sigmoid(gateLogit)))), per row t, as core's
// moeCombine (layers/moe/moeMath.ts): the fp32 routed sum rounded once, the shared expert
// scaled by its bf16 sigmoid gate and rounded, the sum rounded.
import type { KernelPlanner } from '../kernelProgram.ts';
import { readInput } from './planParts.ts';
import { wordKernel } from './wordKernel.ts';

export const moeCombinePlanner: KernelPlanner = (inputs) => {
  const [T, H] = inputs[0]!.shape;
  if (T * H === 0) return { scratch: [], dispatches: [] };
  const body = `let g = rbf(sigmoid_f32(gl_f32(i / u.p0)));
  let s = rbf(sh_f32(i) * g);
  return rbf(bitcast<f32>(routed[i])) + s;`;
  const ins = [
    { name: 'routed', from: readInput(0), dtype: 'f32' as const },
    { name: 'sh', from: readInput(1), dtype: 'bf16' as const },
    { name: 'gl', from: readInput(2), dtype: 'bf16' as const },
  ];
  return { scratch: [], dispatches: [wordKernel('moeCombine', ins, T * H, [H], body)] };
};
