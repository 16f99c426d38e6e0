// moeExperts: the routed sum of a rank's experts [firstExpert, firstExpert + numLocal), as
// core's moeRoutedSum (layers/moe/moeMath.ts). Only routed (token, expert) pairs are
// computed, laid out by (t, k) rather than grouped by expert: the GEMMs are per row (fp32,
// k in order, one rounding per output), so gathering or not changes no bit.
// 1. h: one invocation per (t, k) pair and word of h: gate = bf(x_t . Wgu[i]),
//    up = bf(x_t . Wgu[I+i]), h = bf(bf(silu(gate)) * up); pairs routed off this rank's
//    experts write zeros that are never read. Scratch h [T*K, I rounded up to even] bf16.
// 2. routed: one invocation per (t, j): o = bf(h_(t,k) . Wdown[j]) and acc += bf(o * w_k)
//    for the token's local experts in ascending expert index (ties of a repeated id in k
//    order, as the CPU's per-expert lists), acc starting at 0, stored unrounded (f32).
// bf16 x bf16 products are exact in fp32, so the plain multiply-adds round once, as the CPU.
import type { KernelPlanner } from '../kernelProgram.ts';
import { BF16_WGSL } from '../wgsl/bf16.wgsl.ts';
import { bf16Element } from '../wgsl/elementAccess.wgsl.ts';
import { FP32_MATH_WGSL } from '../wgsl/fp32Math.wgsl.ts';
import { dims2, requireShape } from './moePleWordKernel.ts';
import {
  flatInvocation,
  gridFor,
  readInput,
  readScratch,
  requireDtype,
  requireIntAttr,
  requireTensor,
  uniformWords,
  writeOutput,
  writeScratch,
} from './planParts.ts';

const WG = 64;
const H_SCRATCH = 'h';

const UNIFORMS = 'struct U { rows: u32, K: u32, H: u32, I: u32, hw: u32, first: u32, numLocal: u32, total: u32, groupsX: u32 }';

const H_WGSL = (() => {
  const inv = flatInvocation(WG, 'u.groupsX');
  return `${BF16_WGSL}${FP32_MATH_WGSL}
${UNIFORMS}
@group(0) @binding(0) var<storage, read> x: array<u32>;
${bf16Element('x')}
@group(0) @binding(1) var<storage, read> ids: array<i32>;
@group(0) @binding(2) var<storage, read> gu: array<u32>;
${bf16Element('gu')}
@group(0) @binding(3) var<storage, read_write> h: array<u32>;
@group(0) @binding(4) var<uniform> u: U;
fn rbf(v: f32) -> f32 { return bitcast<f32>(f32_to_bf16(v) << 16u); }
fn swiglu(xo: u32, local: u32, i: u32) -> f32 {
  let go = (local * 2u * u.I + i) * u.H;
  let uo = go + u.I * u.H;
  var g: f32 = 0.0;
  var up: f32 = 0.0;
  for (var k = 0u; k < u.H; k = k + 1u) {
    let xv = x_f32(xo + k);
    g = g + xv * gu_f32(go + k);
    up = up + xv * gu_f32(uo + k);
  }
  return rbf(silu_f32(rbf(g))) * rbf(up);
}
@compute @workgroup_size(${WG})
fn main(${inv.params}) {
  ${inv.body}
  if (inv >= u.total) { return; }
  let pair = inv / u.hw;
  let q = inv % u.hw;
  let local = ids[pair] - i32(u.first);
  if (local < 0 || local >= i32(u.numLocal)) {
    h[inv] = 0u;
    return;
  }
  let xo = (pair / u.K) * u.H;
  let lo = swiglu(xo, u32(local), 2u * q);
  var hi: f32 = 0.0;
  if (2u * q + 1u < u.I) { hi = swiglu(xo, u32(local), 2u * q + 1u); }
  h[inv] = pack_bf16(lo, hi);
}`;
})();

const ROUTED_WGSL = (() => {
  const inv = flatInvocation(WG, 'u.groupsX');
  return `${BF16_WGSL}
${UNIFORMS}
@group(0) @binding(0) var<storage, read> ids: array<i32>;
@group(0) @binding(1) var<storage, read> wts: array<u32>;
${bf16Element('wts')}
@group(0) @binding(2) var<storage, read> down: array<u32>;
${bf16Element('down')}
@group(0) @binding(3) var<storage, read> h: array<u32>;
${bf16Element('h')}
@group(0) @binding(4) var<storage, read_write> routed: array<u32>;
@group(0) @binding(5) var<uniform> u: U;
fn rbf(v: f32) -> f32 { return bitcast<f32>(f32_to_bf16(v) << 16u); }
@compute @workgroup_size(${WG})
fn main(${inv.params}) {
  ${inv.body}
  if (inv >= u.total) { return; }
  let t = inv / u.H;
  let j = inv % u.H;
  var acc: f32 = 0.0;
  // the token's local (expert, k) in ascending key local*K + k
  var last = -1;
  for (var step = 0u; step < u.K; step = step + 1u) {
    var next = -1;
    for (var k = 0u; k < u.K; k = k + 1u) {
      let local = ids[t * u.K + k] - i32(u.first);
      if (local >= 0 && local < i32(u.numLocal)) {
        let key = local * i32(u.K) + i32(k);
        if (key > last && (next < 0 || key < next)) { next = key; }
      }
    }
    if (next < 0) { break; }
    last = next;
    let pair = t * u.K + u32(next) % u.K;
    let ho = pair * 2u * u.hw;
    let wo = ((u32(next) / u.K) * u.H + j) * u.I;
    var o: f32 = 0.0;
    for (var i = 0u; i < u.I; i = i + 1u) { o = o + h_f32(ho + i) * down_f32(wo + i); }
    acc = acc + rbf(rbf(o) * wts_f32(pair));
  }
  routed[inv] = bitcast<u32>(acc);
}`;
})();

export const moeExpertsPlanner: KernelPlanner = (inputs, outputs, attrs) => {
  const x = requireTensor(inputs[0], 'moeExperts: input x');
  const ids = requireTensor(inputs[1], 'moeExperts: input ids');
  const weights = requireTensor(inputs[2], 'moeExperts: input weights');
  const gateUp = requireTensor(inputs[3], 'moeExperts: input gateUp');
  const down = requireTensor(inputs[4], 'moeExperts: input down');
  const routed = requireTensor(outputs[0], 'moeExperts: output routed');
  for (const [t, what] of [[x, 'x'], [weights, 'weights'], [gateUp, 'gateUp'], [down, 'down']] as const) {
    requireDtype(t, ['bf16'], `moeExperts: ${what}`);
  }
  requireDtype(ids, ['i32'], 'moeExperts: ids');
  requireDtype(routed, ['f32'], 'moeExperts: routed');
  const first = requireIntAttr(attrs, 'firstExpert', 'moeExperts', 0);
  const numLocal = requireIntAttr(attrs, 'numLocal', 'moeExperts', 0);
  const I = requireIntAttr(attrs, 'intermediate', 'moeExperts', 1);
  const [T, H] = dims2(x, 'moeExperts: x');
  const [idRows, K] = dims2(ids, 'moeExperts: ids');
  if (idRows !== T) throw new Error(`moeExperts: ids [${ids.shape.join(',')}] do not have the ${T} rows of x`);
  requireShape(weights, [T, K], 'moeExperts: weights');
  requireShape(gateUp, [numLocal * 2 * I, H], 'moeExperts: gateUp');
  requireShape(down, [numLocal * H, I], 'moeExperts: down');
  requireShape(routed, [T, H], 'moeExperts: routed');
  if (T * H === 0) return { scratch: [], dispatches: [] };
  // h rows padded to a whole number of words, so pairs never share one
  const hw = Math.ceil(I / 2);
  const hTotal = T * K * hw;
  const hGrid = gridFor(hTotal, WG);
  const rGrid = gridFor(T * H, WG);
  const common = [T, K, H, I, hw, first, numLocal];
  return {
    scratch: [{ name: H_SCRATCH, words: Math.max(1, hTotal) }],
    dispatches: [
      {
        key: 'moeExperts-h',
        wgsl: H_WGSL,
        bindings: [readInput(0), readInput(1), readInput(3), writeScratch(H_SCRATCH)],
        uniforms: uniformWords([...common, hTotal, hGrid.groupsX]),
        workgroups: hGrid.workgroups,
      },
      {
        key: 'moeExperts-routed',
        wgsl: ROUTED_WGSL,
        bindings: [readInput(1), readInput(2), readInput(4), readScratch(H_SCRATCH), writeOutput(0)],
        uniforms: uniformWords([...common, T * H, rGrid.groupsX]),
        workgroups: rGrid.workgroups,
      },
    ],
  };
};
