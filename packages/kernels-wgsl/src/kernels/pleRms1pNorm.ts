// pleRms1pNorm: grouped RMS1p norm, as core's pleRms1pNorm (layers/ple/pleMath.ts). Two
// dispatches: one workgroup of 64 invocations per (row, group) sums the squares in fp32 in
// canonical reduction order v1 (invocation l is v1's lane l, adding the squares of its 8-element
// chunks at 8l + 512i; bf16 squares are exact; the lane sums meet in v1's butterfly through
// workgroup memory) and stores rstd = 1/sqrt(fp32(sumsq / groupSize) + eps) (two correctly
// rounded steps, rsqrt_f32); then one invocation per output word computes
// y = bf((x * rstd) * (1 + w)), 1 + w rounded to fp32 as the CPU's scale. The apply stays its
// own word pass because groups of odd width share words (no two workgroups may write one).
import type { KernelPlanner } from '../kernelProgram.ts';
import { bf16Buf, buf, preamble } from '../wgsl/bindings.wgsl.ts';
import { CANONICAL_WORKGROUP, canonicalButterflyWgsl, canonicalLaneLoopWgsl } from '../wgsl/canonicalSum.wgsl.ts';
import { FP32_MATH_WGSL } from '../wgsl/fp32Math.wgsl.ts';
import { f32Bits, flatDispatch, flatInvocation, readInput, readScratch, writeScratch } from './planParts.ts';
import { wordKernel } from './wordKernel.ts';

const RSTD = 'rstd';
const WG = CANONICAL_WORKGROUP;

const RSTD_PREAMBLE = preamble(['rows', 'groups', 'gs', 'width', 'eps: f32', 'groupsX'], [bf16Buf('x', readInput(0)), buf('rstd', writeScratch(RSTD))]);

const RSTD_WGSL = (() => {
  const wg = flatInvocation(WG, 'u.groupsX');
  return `${FP32_MATH_WGSL}
${RSTD_PREAMBLE.wgsl}
var<workgroup> lanes: array<f32, ${WG}>;
@compute @workgroup_size(${WG})
fn main(${wg.params}) {
  let seg = wid.x + wid.y * u.groupsX;
  if (seg >= u.rows * u.groups) { return; }
  let base = (seg / u.groups) * u.width + (seg % u.groups) * u.gs;
  var sumsq: f32 = 0.0;
  ${canonicalLaneLoopWgsl('lid', 'u.gs', (j) => `let v = x_f32(base + ${j}); sumsq = sumsq + v * v;`)}
  ${canonicalButterflyWgsl('lanes', 'lid', 'sumsq')}
  if (lid == 0u) { rstd[seg] = bitcast<u32>(rsqrt_f32(lanes[0] / f32(u.gs) + u.eps)); }
}`;
})();

export const pleRms1pNormPlanner: KernelPlanner = (inputs, _outputs, attrs) => {
  const groups = attrs.groups as number;
  const eps = attrs.eps as number;
  if (!(eps >= 0)) throw new Error(`pleRms1pNorm: attribute eps = ${eps} is not a number >= 0`);
  const [T, width] = inputs[0]!.shape;
  const gs = width / groups;
  if (T * width === 0) return { scratch: [], dispatches: [] };
  // one workgroup per (row, group)
  const rstd = flatDispatch('pleRms1pNorm-rstd', RSTD_WGSL, RSTD_PREAMBLE.bindings, T * groups * WG, WG, [T, groups, gs, width, f32Bits(eps)]);
  const body = `let c = i % u.p0;
  let r = bitcast<f32>(rstd[(i / u.p0) * u.p2 + c / u.p1]);
  return (x_f32(i) * r) * (1.0 + w_f32(c));`;
  const ins = [
    { name: 'x', from: readInput(0), dtype: 'bf16' as const },
    { name: 'w', from: readInput(1), dtype: 'bf16' as const },
    { name: 'rstd', from: readScratch(RSTD), dtype: 'f32' as const },
  ];
  const scale = wordKernel('pleRms1pNorm-scale', ins, T * width, [width, gs, groups], body);
  return { scratch: [{ name: RSTD, words: T * groups }], dispatches: [rstd, scale] };
};
