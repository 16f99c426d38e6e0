// pleGatedValue: G[t, s*H+j] = bf(gate[t,s] * value[t,j]), as core's pleGatedValue
// (layers/ple/pleMath.ts): the bf16 gate times the bf16 value (exact in fp32), rounded once.
import type { KernelPlanner } from '../kernelProgram.ts';
import { readInput } from './planParts.ts';
import { wordKernel } from './wordKernel.ts';

export const pleGatedValuePlanner: KernelPlanner = (inputs, _outputs, attrs) => {
  const n = attrs.streams as number;
  const [T, H] = inputs[1]!.shape;
  if (T * H === 0) return { scratch: [], dispatches: [] };
  // i = (t*n + s)*H + j: the gate index is i / H, the value index t*H + j
  const body = `let ts = i / u.p0;
  return gate_f32(ts) * v_f32((ts / u.p1) * u.p0 + i % u.p0);`;
  const ins = [
    { name: 'gate', from: readInput(0), dtype: 'bf16' as const },
    { name: 'v', from: readInput(1), dtype: 'bf16' as const },
  ];
  return { scratch: [], dispatches: [wordKernel('pleGatedValue', ins, T * n * H, [H, n], body)] };
};
