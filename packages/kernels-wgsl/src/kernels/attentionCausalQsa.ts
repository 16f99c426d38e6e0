// attnCausalQsa: GQA softmax(q k^T * scale) v over each query row's QSA-kept keys, fp32,
// two-pass softmax, exactly in the order of core attentionMath.attnCausalQsa. Row t (its
// position) with nb = floor((t+1) / ratio) complete blocks keeps, in this order (ascending
// positions), the tokens of the n = min(width, nb) blocks listed in blocks[t] and then the
// tail nb*ratio .. t; kept key i is therefore
//   i < n*ratio: blocks[t][i / ratio] * ratio + i % ratio,   else nb*ratio + (i - n*ratio)
// One invocation per (query row t, head h), no barriers; per invocation:
//   pass 1: s_i = fr(dot_d(q_t, k_i) * scale) over the kept keys (d in order, exact bf16
//           products), m = running max from -inf with the CPU's `s_i > m` test
//   pass 2: s_i recomputed (same operations, same bits), p_i = exp(fr(s_i - m)),
//           acc_d = acc_d + fr(p_i * v_id) in key order, and p_i added to lane (i / 8) % 64
//           of l's canonical order v1 (core numerics/canonicalSum.ts), then its butterfly
//   o_d = bf(fr(acc_d / l))
// When a row keeps every token (0..t) this is dense causal attention, bit for bit.
// eagerSoftmax (the 'hf-eager' contract, core attentionMath): s_i = bf(fr(bf(dot) * scale)),
// and p_i = bf(fr(exp(fr(s_i - m)) * fr(1 / l))) needs l first, so the sum takes a pass of its
// own and the value pass recomputes p_i (same bits); o_d = bf(acc_d), no division.
// Recomputing the scores instead of storing p keeps memory O(1) per row for any T. The q
// row and acc live in private arrays of HD (compiled in); headDim must be even so the row's
// k/v/o words are whole. `p * v + acc` is written as separate WGSL * and + (never fma),
// which SwiftShader keeps unfused (numerics.md). A malformed block list (the CPU reference
// throws on one) is read as it is, clamped to the buffers by WebGPU's robust access.
import type { KernelPlanner } from '../kernelProgram.ts';
import { BF16_WGSL, ROUND_BF16_WGSL } from '../wgsl/bf16.wgsl.ts';
import { buf, preamble } from '../wgsl/bindings.wgsl.ts';
import { canonicalSerialAddWgsl, canonicalSerialButterflyWgsl } from '../wgsl/canonicalSum.wgsl.ts';
import { FP32_MATH_WGSL } from '../wgsl/fp32Math.wgsl.ts';
import { f32Bits, flatDispatch, flatMain, readInput, writeOutput } from './planParts.ts';

const WG = 32;

const CAUSAL_QSA = preamble(
  ['heads', 'kvHeads', 'group', 'rows', 'scale', 'ratio', 'width', 'groupsX'],
  [buf('q', readInput(0)), buf('k', readInput(1)), buf('v', readInput(2)), buf('blocks', readInput(3), 'i32'), buf('o', writeOutput(0))],
);

// the sum and the value pass in one (p_i does not depend on l)
const FUSED_PASS = `for (var i = 0u; i < kept; i = i + 1u) {
    let kvw = (keyAt(t, i, sel, tail0) * u.kvHeads + kvh) * HW;
    let p = exp_f32(score(kvw, scale) - m);
    ${canonicalSerialAddWgsl('lanes', 'i', 'p')}
    for (var j = 0u; j < HW; j = j + 1u) {
      let vv = v[kvw + j];
      acc[2u * j] = acc[2u * j] + p * bf16_lo(vv);
      acc[2u * j + 1u] = acc[2u * j + 1u] + p * bf16_hi(vv);
    }
  }
  ${canonicalSerialButterflyWgsl('lanes')}
  let l = lanes[0];
  for (var i = 0u; i < HW; i = i + 1u) { o[qw + i] = pack_bf16(acc[2u * i] / l, acc[2u * i + 1u] / l); }`;

// eagerSoftmax: l first, then p_i = bf(fr(e_i * fr(1 / l))) in the value pass
const EAGER_PASSES = `for (var i = 0u; i < kept; i = i + 1u) {
    let e = exp_f32(score((keyAt(t, i, sel, tail0) * u.kvHeads + kvh) * HW, scale) - m);
    ${canonicalSerialAddWgsl('lanes', 'i', 'e')}
  }
  ${canonicalSerialButterflyWgsl('lanes')}
  let r = 1.0 / lanes[0];
  for (var i = 0u; i < kept; i = i + 1u) {
    let kvw = (keyAt(t, i, sel, tail0) * u.kvHeads + kvh) * HW;
    let p = rbf(exp_f32(score(kvw, scale) - m) * r);
    for (var j = 0u; j < HW; j = j + 1u) {
      let vv = v[kvw + j];
      acc[2u * j] = acc[2u * j] + p * bf16_lo(vv);
      acc[2u * j + 1u] = acc[2u * j + 1u] + p * bf16_hi(vv);
    }
  }
  for (var i = 0u; i < HW; i = i + 1u) { o[qw + i] = pack_bf16(acc[2u * i], acc[2u * i + 1u]); }`;

function causalQsaWgsl(hd: number, eager: boolean): string {
  return `${BF16_WGSL}
${ROUND_BF16_WGSL}
${FP32_MATH_WGSL}
const HW: u32 = ${hd / 2}u; // words per head row
${CAUSAL_QSA.wgsl}
var<private> qv: array<f32, ${hd}>;
fn score(kw: u32, scale: f32) -> f32 {
  var dot: f32 = 0.0;
  for (var i = 0u; i < HW; i = i + 1u) {
    let kk = k[kw + i];
    dot = dot + qv[2u * i] * bf16_lo(kk);
    dot = dot + qv[2u * i + 1u] * bf16_hi(kk);
  }
  ${eager ? 'return rbf(rbf(dot) * scale);' : 'return dot * scale;'}
}
// the position of row t's kept key i (header); sel = n * ratio, tail0 = nb * ratio
fn keyAt(t: u32, i: u32, sel: u32, tail0: u32) -> u32 {
  if (i < sel) { return u32(blocks[t * u.width + i / u.ratio]) * u.ratio + i % u.ratio; }
  return tail0 + (i - sel);
}
${flatMain(
  WG,
  'u.rows',
  `let t = inv / u.heads;
  let h = inv % u.heads;
  let kvh = h / u.group;
  let scale = bitcast<f32>(u.scale);
  let nb = (t + 1u) / u.ratio;
  let sel = min(u.width, nb) * u.ratio;
  let tail0 = nb * u.ratio;
  let kept = sel + (t + 1u - tail0);
  let qw = inv * HW;
  for (var i = 0u; i < HW; i = i + 1u) {
    let qq = q[qw + i];
    qv[2u * i] = bf16_lo(qq);
    qv[2u * i + 1u] = bf16_hi(qq);
  }
  // -inf through a function call: a constant -inf is a shader-creation error in WGSL
  var m = f32_from_bits(0xff800000u);
  for (var i = 0u; i < kept; i = i + 1u) {
    let s = score((keyAt(t, i, sel, tail0) * u.kvHeads + kvh) * HW, scale);
    if (s > m) { m = s; }
  }
  var acc: array<f32, ${hd}>;
  var lanes: array<f32, 64>;
  ${eager ? EAGER_PASSES : FUSED_PASS}`,
)}`;
}

export const attnCausalQsaPlanner: KernelPlanner = (inputs, _outputs, attrs) => {
  const [heads, kvHeads, hd, ratio, width] = ['heads', 'kvHeads', 'headDim', 'compressRatio', 'width'].map((name) => attrs[name] as number);
  const scale = attrs.scale as number;
  if (hd % 2 !== 0) throw new Error(`attnCausalQsa: headDim ${hd} must be even (rows are read and written as whole packed words)`);
  const [T] = inputs[0]!.shape;
  const rows = T * heads;
  if (rows === 0) return { scratch: [], dispatches: [] };
  const uniforms = [heads, kvHeads, heads / kvHeads, rows, f32Bits(scale), ratio, width];
  const eager = attrs.eagerSoftmax === true;
  return {
    scratch: [],
    dispatches: [flatDispatch(`attn-causal-qsa-hd${hd}${eager ? '-eager' : ''}`, causalQsaWgsl(hd, eager), CAUSAL_QSA.bindings, rows, WG, uniforms)],
  };
};
