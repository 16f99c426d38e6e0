// moeCombine: y = bf(bf(routed) + bf(shared * bf(sigmoid(gateLogit)))), per row t, as core's
// moeCombine (layers/moe/moeMath.ts): the fp32 routed sum rounded once, the shared expert
// scaled by its bf16 sigmoid gate and rounded, the sum rounded.
import type { KernelPlanner } from '../kernelProgram.ts';
import { dims2, readInput, requireShape, requireTyped } from './planParts.ts';
import { wordKernel } from './wordKernel.ts';

export const moeCombinePlanner: KernelPlanner = (inputs, outputs) => {
  const routed = requireTyped(inputs[0], 'moeCombine: input routed', 'f32');
  const shared = requireTyped(inputs[1], 'moeCombine: input shared', 'bf16');
  const gateLogit = requireTyped(inputs[2], 'moeCombine: input gateLogit', 'bf16');
  const y = requireTyped(outputs[0], 'moeCombine: output y', 'bf16');
  const [T, H] = dims2(routed, 'moeCombine: routed');
  requireShape(shared, [T, H], 'moeCombine: shared');
  requireShape(gateLogit, [T, 1], 'moeCombine: gateLogit');
  requireShape(y, [T, H], 'moeCombine: y');
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
