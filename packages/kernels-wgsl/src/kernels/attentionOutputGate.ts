// attnOutputGate: y = bf(o * bf(sigmoid(gate))), the gate being columns [hd, 2hd) of each
// head's [query | gate] block of qg [T, heads * 2hd] (core attentionMath.attnOutputGate;
// o * gate is a product of two bf16 values, exact in fp32). One invocation per output word.
import type { KernelPlanner } from '../kernelProgram.ts';
import { readInput } from './planParts.ts';
import { wordKernel } from './wordKernel.ts';

// u.p0 = hd; the element's row is (token, head)
const OUTPUT_GATE_BODY = `let row = i / u.p0;
  let d = i % u.p0;
  let gate = rbf(sigmoid_f32(qg_f32(row * 2u * u.p0 + u.p0 + d)));
  return o_f32(i) * gate;`;

export const attnOutputGatePlanner: KernelPlanner = (inputs, _outputs, attrs) => {
  const hd = attrs.headDim as number;
  const n = inputs[0]!.shape[0] * (attrs.heads as number) * hd;
  if (n === 0) return { scratch: [], dispatches: [] };
  const ins = [
    { name: 'o', from: readInput(0), dtype: 'bf16' as const },
    { name: 'qg', from: readInput(1), dtype: 'bf16' as const },
  ];
  return { scratch: [], dispatches: [wordKernel('attn-output-gate', ins, n, [hd], OUTPUT_GATE_BODY)] };
};
