// pleGate: gate[t,s] = sigmoid(signed_sqrt(sum_j q[t,s,j] k[t,j] / sqrt(H))), as core's
// pleGate (layers/ple/pleMath.ts): one invocation per (t, s); the dot in fp32 in j order
// (bf16 products are exact, so the plain multiply-add rounds once, as the CPU), sqrt(H)
// rounded to fp32 once on the host (the CPU's sqrtF32(H)), the clamp at 1e-6 and the sign
// as Engram's signed_sqrt. Output f32, unrounded.
import type { KernelPlanner } from '../kernelProgram.ts';
import { bf16Element } from '../wgsl/elementAccess.wgsl.ts';
import { FP32_MATH_WGSL } from '../wgsl/fp32Math.wgsl.ts';
import { dims2, f32Bits, flatInvocation, gridFor, readInput, requireDtype, requireIntAttr, requireShape, requireTensor, uniformWords, writeOutput } from './planParts.ts';

const WG = 64;
/** core's PLE_GATE_SQRT_FLOOR, fround(1e-6) */
const SQRT_FLOOR = 1e-6;

const GATE_WGSL = (() => {
  const inv = flatInvocation(WG, 'u.groupsX');
  return `${FP32_MATH_WGSL}
struct U { rows: u32, n: u32, h: u32, sqrtH: f32, floor: f32, groupsX: u32 }
@group(0) @binding(0) var<storage, read> q: array<u32>;
${bf16Element('q')}
@group(0) @binding(1) var<storage, read> k: array<u32>;
${bf16Element('k')}
@group(0) @binding(2) var<storage, read_write> gate: array<u32>;
@group(0) @binding(3) var<uniform> u: U;
@compute @workgroup_size(${WG})
fn main(${inv.params}) {
  ${inv.body}
  if (inv >= u.rows * u.n) { return; }
  let qo = inv * u.h;
  let ko = (inv / u.n) * u.h;
  var acc: f32 = 0.0;
  for (var j = 0u; j < u.h; j = j + 1u) { acc = acc + q_f32(qo + j) * k_f32(ko + j); }
  let score = acc / u.sqrtH;
  let a = abs(score);
  // select(a, floor, a < floor) keeps a NaN as the CPU's Math.max does
  let mag = sqrt(select(a, u.floor, a < u.floor));
  let signed = select(select(0.0, -mag, score < 0.0), mag, score > 0.0);
  gate[inv] = bitcast<u32>(sigmoid_f32(signed));
}`;
})();

export const pleGatePlanner: KernelPlanner = (inputs, outputs, attrs) => {
  const q = requireTensor(inputs[0], 'pleGate: input q');
  const k = requireTensor(inputs[1], 'pleGate: input k');
  const gate = requireTensor(outputs[0], 'pleGate: output gate');
  requireDtype(q, ['bf16'], 'pleGate: q');
  requireDtype(k, ['bf16'], 'pleGate: k');
  requireDtype(gate, ['f32'], 'pleGate: gate');
  const n = requireIntAttr(attrs, 'streams', 'pleGate', 1);
  const [T, width] = dims2(q, 'pleGate: q');
  if (width % n !== 0) throw new Error(`pleGate: q width ${width} is not divisible into ${n} streams`);
  const H = width / n;
  requireShape(k, [T, H], 'pleGate: k');
  requireShape(gate, [T, n], 'pleGate: gate');
  if (T === 0) return { scratch: [], dispatches: [] };
  const grid = gridFor(T * n, WG);
  return {
    scratch: [],
    dispatches: [
      {
        key: 'pleGate',
        wgsl: GATE_WGSL,
        bindings: [readInput(0), readInput(1), writeOutput(0)],
        uniforms: uniformWords([T, n, H, f32Bits(Math.sqrt(H)), f32Bits(SQRT_FLOOR), grid.groupsX]),
        workgroups: grid.workgroups,
      },
    ],
  };
};
