// gdnRecurrence: the gated delta rule from a zero fp32 state (core gdnMath.gdnRecurrence),
// in two dispatches:
// 1. l2norm: q and k of every token and key head normalized once, one workgroup of 64
//    invocations per (t, vector): qk[t, n, i] = fr(fr(x_i * rsqrt(sum_i x_i^2 + eps)) * scale)
//    with scale 1 for k (n >= KH), into an f32 scratch [T, 2 * KH * DK]. (k's `* 1` is exact,
//    as the CPU's fr(v * 1).) The sum of squares in canonical reduction order v1: invocation l
//    is v1's lane l (its 8-element chunks at 8l + 512i), the lane sums meet in v1's butterfly
//    through workgroup memory; then the invocations write the vector's elements strided by 64.
// 2. recurrence: sequential in t, parallel over (value head h, column pair j0 = 2p): the
//    CPU's state column S[:, j] is only ever combined with itself, k, q, v_j and the head's
//    gates, so each invocation keeps S[:, j0] and S[:, j0 + 1] in private arrays and writes
//    o's word for (t, h, j0) whole. Per column and token, in the CPU's order:
//      S_i = S_i * decay; u = u + S_i * k_i (i = 0..DK-1; the CPU decays all of S first,
//      which gives the same values); delta = beta * (v_j - u);
//      S_i = S_i + k_i * delta; o = o + S_i * q_i;  o_j = bf(o)
//    Every product is its own fp32 rounding: plain WGSL `a + b * c` (never fma) stays
//    unfused on SwiftShader (numerics.md).
// DK is compiled in (the private array length); valueDim must be even so a column pair
// never straddles a head (every Qwen3-Next head dim is).
import type { KernelPlanner } from '../kernelProgram.ts';
import { BF16_WGSL } from '../wgsl/bf16.wgsl.ts';
import { bf16Buf, buf, preamble } from '../wgsl/bindings.wgsl.ts';
import { CANONICAL_WORKGROUP, canonicalButterflyWgsl, canonicalLaneLoopWgsl } from '../wgsl/canonicalSum.wgsl.ts';
import { FP32_MATH_WGSL } from '../wgsl/fp32Math.wgsl.ts';
import { f32Bits, flatDispatch, flatInvocation, flatMain, readInput, readScratch, writeOutput, writeScratch } from './planParts.ts';

const NORM_WG = CANONICAL_WORKGROUP;
const QK = 'qkNorm';
const L2NORM = preamble(['C', 'KH', 'DK', 'vectors', 'eps', 'scale', 'groupsX'], [bf16Buf('qkv', readInput(0), 'qkvAt'), buf('qk', writeScratch(QK), 'f32')]);

const L2NORM_WGSL = (() => {
  const wg = flatInvocation(NORM_WG, 'u.groupsX');
  return `${BF16_WGSL}
${FP32_MATH_WGSL}
${L2NORM.wgsl}
var<workgroup> lanes: array<f32, ${NORM_WG}>;
@compute @workgroup_size(${NORM_WG})
fn main(${wg.params}) {
  let vec = wid.x + wid.y * u.groupsX;
  if (vec >= u.vectors) { return; }
  let perRow = 2u * u.KH;
  let t = vec / perRow;
  let nv = vec % perRow;
  let src = t * u.C + nv * u.DK;
  var ss: f32 = 0.0;
  ${canonicalLaneLoopWgsl('lid', 'u.DK', (i) => `let xi = qkvAt(src + ${i}); ss = ss + xi * xi;`)}
  ${canonicalButterflyWgsl('lanes', 'lid', 'ss')}
  let r = rsqrt_f32(lanes[0] + bitcast<f32>(u.eps));
  var scale: f32 = 1.0;
  if (nv < u.KH) { scale = bitcast<f32>(u.scale); }
  let dst = vec * u.DK;
  for (var i = lid; i < u.DK; i = i + ${NORM_WG}u) { qk[dst + i] = (qkvAt(src + i) * r) * scale; }
}`;
})();

const REC_WG = 32;
const RECURRENCE = preamble(
  ['T', 'C', 'KH', 'VH', 'DV', 'group', 'pairs', 'groupsX'],
  [
    bf16Buf('qkv', readInput(0), 'qkvAt'),
    buf('g', readInput(1), 'f32'),
    bf16Buf('beta', readInput(2), 'betaAt'),
    buf('qk', readScratch(QK), 'f32'),
    buf('o', writeOutput(0)),
  ],
);

function recurrenceWgsl(dk: number): string {
  return `${BF16_WGSL}
${FP32_MATH_WGSL}
const DK: u32 = ${dk}u;
${RECURRENCE.wgsl}
${flatMain(
  REC_WG,
  'u.VH * u.pairs',
  `let h = inv / u.pairs;
  let j0 = 2u * (inv % u.pairs);
  // state columns j0 and j0 + 1 of head h, from zero
  var s0: array<f32, DK>;
  var s1: array<f32, DK>;
  let qkRow = 2u * u.KH * DK;
  let qOff = (h / u.group) * DK;
  let kOff = u.KH * DK + qOff;
  let vCol = 2u * u.KH * DK + h * u.DV + j0;
  for (var t = 0u; t < u.T; t = t + 1u) {
    let decay = exp_f32(g[t * u.VH + h]);
    let b = betaAt(t * u.VH + h);
    let qb = t * qkRow + qOff;
    let kb = t * qkRow + kOff;
    var u0: f32 = 0.0;
    var u1: f32 = 0.0;
    for (var i = 0u; i < DK; i = i + 1u) {
      let ki = qk[kb + i];
      s0[i] = s0[i] * decay;
      s1[i] = s1[i] * decay;
      u0 = u0 + s0[i] * ki;
      u1 = u1 + s1[i] * ki;
    }
    let d0 = b * (qkvAt(t * u.C + vCol) - u0);
    let d1 = b * (qkvAt(t * u.C + vCol + 1u) - u1);
    var o0: f32 = 0.0;
    var o1: f32 = 0.0;
    for (var i = 0u; i < DK; i = i + 1u) {
      let ki = qk[kb + i];
      let qi = qk[qb + i];
      s0[i] = s0[i] + ki * d0;
      s1[i] = s1[i] + ki * d1;
      o0 = o0 + s0[i] * qi;
      o1 = o1 + s1[i] * qi;
    }
    o[((t * u.VH + h) * u.DV + j0) >> 1u] = pack_bf16(o0, o1);
  }`,
)}`;
}

export const gdnRecurrencePlanner: KernelPlanner = (inputs, _outputs, attrs) => {
  const [KH, VH, DK, DV, scale, eps] = ['keyHeads', 'valueHeads', 'keyDim', 'valueDim', 'scale', 'l2Eps'].map((name) => attrs[name] as number);
  if (DV % 2 !== 0) throw new Error(`gdnRecurrence: valueDim ${DV} must be even (each invocation writes whole packed words)`);
  const [T, C] = inputs[0]!.shape;
  if (T === 0) return { scratch: [], dispatches: [] };
  const vectors = T * 2 * KH;
  const pairs = DV / 2;
  return {
    scratch: [{ name: QK, words: vectors * DK }],
    dispatches: [
      // one workgroup per vector
      flatDispatch('gdn-l2norm', L2NORM_WGSL, L2NORM.bindings, vectors * NORM_WG, NORM_WG, [C, KH, DK, vectors, f32Bits(eps), f32Bits(scale)]),
      flatDispatch(`gdn-recurrence-dk${DK}`, recurrenceWgsl(DK), RECURRENCE.bindings, VH * pairs, REC_WG, [T, C, KH, VH, DV, VH / KH, pairs]),
    ],
  };
};
