// attnOutputGate: y = bf(o * bf(sigmoid(gate))), the gate being columns [hd, 2hd) of each
// head's [query | gate] block of qg [T, heads * 2hd] (core attentionMath.attnOutputGate;
// o * gate is a product of two bf16 values, exact in fp32). One invocation per output word.
import type { KernelPlanner } from '../kernelProgram.ts';
import { readInput, requireIntAttr, requirePort, requireRows } from './planParts.ts';
import { wordKernel } from './wordKernel.ts';

// u.p0 = hd; the element's row is (token, head)
const OUTPUT_GATE_BODY = `let row = i / u.p0;
  let d = i % u.p0;
  let gate = rbf(sigmoid_f32(qg_f32(row * 2u * u.p0 + u.p0 + d)));
  return o_f32(i) * gate;`;

export const attnOutputGatePlanner: KernelPlanner = (inputs, outputs, attrs) => {
  const op = 'attnOutputGate';
  const heads = requireIntAttr(attrs, 'heads', op, 1);
  const hd = requireIntAttr(attrs, 'headDim', op, 1);
  const T = requireRows(inputs[0], `${op}: input o`, 'bf16', heads * hd);
  requirePort(inputs[1], `${op}: input qg`, 'bf16', [T, heads * 2 * hd]);
  requirePort(outputs[0], `${op}: output y`, 'bf16', [T, heads * hd]);
  const n = T * heads * hd;
  if (n === 0) return { scratch: [], dispatches: [] };
  const ins = [
    { name: 'o', from: readInput(0), dtype: 'bf16' as const },
    { name: 'qg', from: readInput(1), dtype: 'bf16' as const },
  ];
  return { scratch: [], dispatches: [wordKernel('attn-output-gate', ins, n, [hd], OUTPUT_GATE_BODY)] };
};
