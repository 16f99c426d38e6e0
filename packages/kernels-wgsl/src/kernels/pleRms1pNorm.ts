// pleRms1pNorm: grouped RMS1p norm, as core's pleRms1pNorm (layers/ple/pleMath.ts). Two
// dispatches: one invocation per (row, group) sums the squares in fp32 over j in order
// (bf16 squares are exact) and stores rstd = 1/sqrt(fp32(sumsq / groupSize) + eps) (two
// correctly rounded steps, rsqrt_f32); then one invocation per output word computes
// y = bf((x * rstd) * (1 + w)), 1 + w rounded to fp32 as the CPU's scale. Splitting keeps
// every invocation's work small and lets groups of odd width share words without two
// invocations writing one.
import type { KernelPlanner } from '../kernelProgram.ts';
import { bf16Element } from '../wgsl/elementAccess.wgsl.ts';
import { FP32_MATH_WGSL } from '../wgsl/fp32Math.wgsl.ts';
import {
  dims2,
  f32Bits,
  flatInvocation,
  gridFor,
  readInput,
  readScratch,
  requireDtype,
  requireIntAttr,
  requireShape,
  requireTensor,
  uniformWords,
  writeScratch,
} from './planParts.ts';
import { wordKernel } from './wordKernel.ts';

const RSTD = 'rstd';
const WG = 64;

const RSTD_WGSL = (() => {
  const inv = flatInvocation(WG, 'u.groupsX');
  return `${FP32_MATH_WGSL}
struct U { rows: u32, groups: u32, gs: u32, width: u32, eps: f32, groupsX: u32 }
@group(0) @binding(0) var<storage, read> x: array<u32>;
${bf16Element('x')}
@group(0) @binding(1) var<storage, read_write> rstd: array<u32>;
@group(0) @binding(2) var<uniform> u: U;
@compute @workgroup_size(${WG})
fn main(${inv.params}) {
  ${inv.body}
  if (inv >= u.rows * u.groups) { return; }
  let base = (inv / u.groups) * u.width + (inv % u.groups) * u.gs;
  var sumsq: f32 = 0.0;
  for (var j = 0u; j < u.gs; j = j + 1u) {
    let v = x_f32(base + j);
    sumsq = sumsq + v * v;
  }
  rstd[inv] = bitcast<u32>(rsqrt_f32(sumsq / f32(u.gs) + u.eps));
}`;
})();

export const pleRms1pNormPlanner: KernelPlanner = (inputs, outputs, attrs) => {
  const x = requireTensor(inputs[0], 'pleRms1pNorm: input x');
  const weight = requireTensor(inputs[1], 'pleRms1pNorm: input weight');
  const y = requireTensor(outputs[0], 'pleRms1pNorm: output y');
  for (const [t, what] of [[x, 'x'], [weight, 'weight'], [y, 'y']] as const) requireDtype(t, ['bf16'], `pleRms1pNorm: ${what}`);
  const groups = requireIntAttr(attrs, 'groups', 'pleRms1pNorm', 1);
  const eps = attrs.eps;
  if (typeof eps !== 'number' || !(eps >= 0)) throw new Error(`pleRms1pNorm: attribute eps = ${String(eps)} is not a number >= 0`);
  const [T, width] = dims2(x, 'pleRms1pNorm: x');
  if (width % groups !== 0) throw new Error(`pleRms1pNorm: width ${width} is not divisible into ${groups} groups`);
  const gs = width / groups;
  requireShape(weight, [width], 'pleRms1pNorm: weight');
  requireShape(y, [T, width], 'pleRms1pNorm: y');
  if (T * width === 0) return { scratch: [], dispatches: [] };
  const grid = gridFor(T * groups, WG);
  const rstd = {
    key: 'pleRms1pNorm-rstd',
    wgsl: RSTD_WGSL,
    bindings: [readInput(0), writeScratch(RSTD)],
    uniforms: uniformWords([T, groups, gs, width, f32Bits(eps), grid.groupsX]),
    workgroups: grid.workgroups,
  };
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
