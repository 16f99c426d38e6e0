// pleGate: the PLE gate per row t and stream s, as core's pleGate (layers/ple/pleMath.ts),
// with every bf16 rounding point of the reference's eager ops (ATOM's _ple_gate_kernel):
// p_j = bf(k_j q_j) on stream s's key and query (bf16 products are exact in fp32, so the
// rounding is the only step), the fp32 sum in j order rounded, divided by sqrt(H) (rounded
// to fp32 once on the host, as the CPU's sqrtF32(H)) and rounded, the clamp at fround(1e-6)
// rounded, the square root rounded, the sign (0 for 0), sigmoid_f32, stored bf16. One word
// kernel over the T*n gates; WGSL division and sqrt are correctly rounded on the devices the
// kernel tests measure (pleKernels.test.ts).
import { PLE_GATE_SQRT_FLOOR, sqrtF32 } from '@hcsp/core';
import type { KernelPlanner } from '../kernelProgram.ts';
import { dims2, f32Bits, readInput, requireIntAttr, requireShape, requireTyped } from './planParts.ts';
import { wordKernel } from './wordKernel.ts';

// i = t*n + s: stream s of row t is columns s*H.. of row t, i.e. elements i*H.. of k and q
const GATE_BODY = `let o = i * u.p0;
  var acc: f32 = 0.0;
  for (var j = 0u; j < u.p0; j = j + 1u) { acc = acc + rbf(k_f32(o + j) * q_f32(o + j)); }
  let score = rbf(rbf(acc) / bitcast<f32>(u.p1));
  let a = abs(score);
  let floor = bitcast<f32>(u.p2);
  // select(a, floor, a < floor) keeps a NaN as the CPU's Math.max does
  let root = rbf(sqrt(rbf(select(a, floor, a < floor))));
  let signed = select(select(0.0, -root, score < 0.0), root, score > 0.0);
  return sigmoid_f32(signed);`;

export const pleGatePlanner: KernelPlanner = (inputs, outputs, attrs) => {
  const k = requireTyped(inputs[0], 'pleGate: input k', 'bf16');
  const q = requireTyped(inputs[1], 'pleGate: input q', 'bf16');
  const gate = requireTyped(outputs[0], 'pleGate: output gate', 'bf16');
  const n = requireIntAttr(attrs, 'streams', 'pleGate', 1);
  const [T, width] = dims2(k, 'pleGate: k');
  if (width % n !== 0) throw new Error(`pleGate: k width ${width} is not divisible into ${n} streams`);
  const H = width / n;
  requireShape(q, [T, width], 'pleGate: q');
  requireShape(gate, [T, n], 'pleGate: gate');
  if (T === 0) return { scratch: [], dispatches: [] };
  const ins = [
    { name: 'k', from: readInput(0), dtype: 'bf16' as const },
    { name: 'q', from: readInput(1), dtype: 'bf16' as const },
  ];
  return { scratch: [], dispatches: [wordKernel('pleGate', ins, T * n, [H, f32Bits(sqrtF32(H)), f32Bits(PLE_GATE_SQRT_FLOOR)], GATE_BODY)] };
};
