// gdnGatedNorm: per value head, y = bf(bf(bf(o * r) * w) * sigmoid(z)) with
// r = rsqrt(fr(ss / headDim) + eps), ss = sum_j o_j^2 in fp32 in canonical reduction order v1
// (core gdnMath.gdnGatedNorm; bf16 squares are exact in fp32). One workgroup of 64 invocations
// per (token, head) row: invocation l is v1's lane l, adds the squares of its 8-element chunks
// at 8l + 512i, the lane sums meet in v1's butterfly through workgroup memory, and each
// invocation then writes its own chunks' words with the row's r. headDim must be even so that
// every row and every chunk starts on a word (every Qwen3-Next head dim is).
import type { KernelPlanner } from '../kernelProgram.ts';
import { BF16_WGSL, ROUND_BF16_WGSL } from '../wgsl/bf16.wgsl.ts';
import { bf16Buf, buf, preamble } from '../wgsl/bindings.wgsl.ts';
import { CANONICAL_WORKGROUP, canonicalButterflyWgsl, canonicalLaneLoopWgsl } from '../wgsl/canonicalSum.wgsl.ts';
import { FP32_MATH_WGSL } from '../wgsl/fp32Math.wgsl.ts';
import { f32Bits, flatDispatch, flatInvocation, readInput, writeOutput } from './planParts.ts';

const WG = CANONICAL_WORKGROUP;

const GATED_NORM = preamble(
  ['hd', 'rows', 'eps', 'groupsX'],
  [bf16Buf('o', readInput(0), 'oAt'), bf16Buf('z', readInput(1), 'zAt'), bf16Buf('w', readInput(2), 'wAt'), buf('y', writeOutput(0))],
);

const GATED_NORM_WGSL = (() => {
  const wg = flatInvocation(WG, 'u.groupsX');
  return `${BF16_WGSL}
${FP32_MATH_WGSL}
${ROUND_BF16_WGSL}
${GATED_NORM.wgsl}
fn gated(e: u32, j: u32, r: f32) -> f32 {
  let normed = rbf(oAt(e) * r);
  let weighted = rbf(normed * wAt(j));
  return weighted * sigmoid_f32(zAt(e));
}
var<workgroup> lanes: array<f32, ${WG}>;
@compute @workgroup_size(${WG})
fn main(${wg.params}) {
  let row = wid.x + wid.y * u.groupsX;
  if (row >= u.rows) { return; }
  let base = row * u.hd;
  var ss: f32 = 0.0;
  ${canonicalLaneLoopWgsl('lid', 'u.hd', (j) => `let oj = oAt(base + ${j}); ss = ss + oj * oj;`)}
  ${canonicalButterflyWgsl('lanes', 'lid', 'ss')}
  let r = rsqrt_f32(lanes[0] / f32(u.hd) + bitcast<f32>(u.eps));
  // this lane's chunks, two elements (one word) at a time: chunks start on even elements
  ${canonicalLaneLoopWgsl('lid', 'u.hd', (j) => `if ((${j} & 1u) == 0u) { y[(base + ${j}) >> 1u] = pack_bf16(gated(base + ${j}, ${j}, r), gated(base + ${j} + 1u, ${j} + 1u, r)); }`)}
}`;
})();

export const gdnGatedNormPlanner: KernelPlanner = (inputs, _outputs, attrs) => {
  const [heads, hd, eps] = ['heads', 'headDim', 'eps'].map((name) => attrs[name] as number);
  if (hd % 2 !== 0) throw new Error(`gdnGatedNorm: headDim ${hd} must be even (each row is written as whole packed words)`);
  const rows = inputs[0]!.shape[0] * heads;
  if (rows === 0) return { scratch: [], dispatches: [] };
  // one workgroup per row
  return { scratch: [], dispatches: [flatDispatch('gdn-gated-norm', GATED_NORM_WGSL, GATED_NORM.bindings, rows * WG, WG, [hd, rows, f32Bits(eps)])] };
};
