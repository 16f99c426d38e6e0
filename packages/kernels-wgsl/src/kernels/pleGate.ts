// pleGate: the PLE gate per row t and stream s, as core's pleGate (layers/ple/pleMath.ts),
// with every bf16 rounding point of the reference's eager ops (ATOM's _ple_gate_kernel):
// p_j = bf(k_j q_j) on stream s's key and query (bf16 products are exact in fp32, so the
// rounding is the only step), the fp32 sum in canonical reduction order v1 rounded, divided by
// sqrt(H) (rounded to fp32 once on the host, as the CPU's sqrtF32(H)) and rounded, the clamp at
// fround(1e-6) rounded, the square root rounded, the sign (0 for 0), sigmoid_f32, stored bf16.
// WGSL division and sqrt are correctly rounded on the devices the kernel tests measure
// (pleKernels.test.ts).
// One workgroup of 64 invocations per output word, i.e. per two gates (the T*n gates are bf16,
// two to a word, and no two workgroups may write one word): for each of its gates in turn,
// invocation l adds the products of v1's lane l (its 8-element chunks at 8l + 512i) and the
// lane sums meet in v1's butterfly through workgroup memory.
import { PLE_GATE_SQRT_FLOOR, sqrtF32 } from '@hcsp/core';
import type { KernelPlanner } from '../kernelProgram.ts';
import { BF16_WGSL, ROUND_BF16_WGSL } from '../wgsl/bf16.wgsl.ts';
import { bf16Buf, buf, preamble } from '../wgsl/bindings.wgsl.ts';
import { CANONICAL_WORKGROUP, canonicalButterflyWgsl, canonicalLaneLoopWgsl } from '../wgsl/canonicalSum.wgsl.ts';
import { FP32_MATH_WGSL } from '../wgsl/fp32Math.wgsl.ts';
import { f32Bits, flatDispatch, flatInvocation, readInput, writeOutput } from './planParts.ts';

const WG = CANONICAL_WORKGROUP;

const GATE = preamble(
  ['n', 'words', 'H', 'sqrtH: f32', 'floor: f32', 'groupsX'],
  [bf16Buf('k', readInput(0)), bf16Buf('q', readInput(1)), buf('y', writeOutput(0))],
);

const GATE_WGSL = (() => {
  const wg = flatInvocation(WG, 'u.groupsX');
  return `${BF16_WGSL}${FP32_MATH_WGSL}
${GATE.wgsl}
${ROUND_BF16_WGSL}
/** the gate from the fp32 sum of the products */
fn gate_of(acc: f32) -> f32 {
  let score = rbf(rbf(acc) / u.sqrtH);
  let a = abs(score);
  // select(a, floor, a < floor) keeps a NaN as the CPU's Math.max does
  let root = rbf(sqrt(rbf(select(a, u.floor, a < u.floor))));
  let signed = select(select(0.0, -root, score < 0.0), root, score > 0.0);
  return sigmoid_f32(signed);
}
var<workgroup> lanes: array<f32, ${WG}>;
@compute @workgroup_size(${WG})
fn main(${wg.params}) {
  let w = wid.x + wid.y * u.groupsX;
  if (w >= u.words) { return; }
  var word: u32 = 0u;
  for (var half = 0u; half < 2u; half = half + 1u) {
    // gate i = t*n + s: stream s of row t is columns s*H.. of row t, i.e. elements i*H.. of k and q
    let i = 2u * w + half;
    if (i < u.n) {
      let o = i * u.H;
      var acc: f32 = 0.0;
      ${canonicalLaneLoopWgsl('lid', 'u.H', (j) => `acc = acc + rbf(k_f32(o + ${j}) * q_f32(o + ${j}));`)}
      ${canonicalButterflyWgsl('lanes', 'lid', 'acc')}
      word = word | (f32_to_bf16(gate_of(lanes[0])) << (16u * half));
      // every invocation has read the total before the next gate's sums overwrite it
      workgroupBarrier();
    }
  }
  if (lid == 0u) { y[w] = word; }
}`;
})();

export const pleGatePlanner: KernelPlanner = (inputs, _outputs, attrs) => {
  const n = attrs.streams as number;
  const [T, width] = inputs[0]!.shape;
  const H = width / n;
  if (T === 0) return { scratch: [], dispatches: [] };
  const gates = T * n;
  const words = Math.ceil(gates / 2);
  // one workgroup per output word
  return {
    scratch: [],
    dispatches: [flatDispatch('pleGate', GATE_WGSL, GATE.bindings, words * WG, WG, [gates, words, H, f32Bits(sqrtF32(H)), f32Bits(PLE_GATE_SQRT_FLOOR)])],
  };
};
