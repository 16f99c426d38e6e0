// attnCausal: causal GQA softmax(q k^T * scale) v, fp32, two-pass softmax, exactly in the
// order of core attentionMath.attnCausal. One invocation per (query row t, head h), no
// barriers; per invocation:
//   pass 1: s_j = fr(dot_d(q_t, k_j) * scale) for j = 0..t (d in order, exact bf16
//           products), m = running max from -inf with the CPU's `s_j > m` test
//   pass 2: s_j recomputed (same operations, same bits), p_j = exp(fr(s_j - m)),
//           l = l + p_j and acc_d = acc_d + fr(p_j * v_jd), both in j order
//   o_d = bf(fr(acc_d / l))
// Recomputing the scores instead of storing p keeps memory O(1) per row for any T. The
// q row and acc live in private arrays of HD (compiled in); headDim must be even so the
// row's k/v/o words are whole (every Qwen3-Next head dim is). `p * v + acc` is written as
// separate WGSL * and + (never fma), which SwiftShader keeps unfused (numerics.md).
import type { KernelPlanner } from '../kernelProgram.ts';
import { BF16_WGSL } from '../wgsl/bf16.wgsl.ts';
import { FP32_MATH_WGSL } from '../wgsl/fp32Math.wgsl.ts';
import { f32Bits, flatDispatch, flatMain, readInput, requireFloatAttr, requireIntAttr, requirePort, requireRows, writeOutput } from './planParts.ts';

const WG = 32;

function causalWgsl(hd: number): string {
  return `${BF16_WGSL}
${FP32_MATH_WGSL}
const HW: u32 = ${hd / 2}u; // words per head row
struct U { heads: u32, kvHeads: u32, group: u32, rows: u32, scale: u32, groupsX: u32 }
@group(0) @binding(0) var<storage, read> q: array<u32>;
@group(0) @binding(1) var<storage, read> k: array<u32>;
@group(0) @binding(2) var<storage, read> v: array<u32>;
@group(0) @binding(3) var<storage, read_write> o: array<u32>;
@group(0) @binding(4) var<uniform> u: U;
var<private> qv: array<f32, ${hd}>;
fn score(kw: u32, scale: f32) -> f32 {
  var dot: f32 = 0.0;
  for (var i = 0u; i < HW; i = i + 1u) {
    let kk = k[kw + i];
    dot = dot + qv[2u * i] * bf16_lo(kk);
    dot = dot + qv[2u * i + 1u] * bf16_hi(kk);
  }
  return dot * scale;
}
${flatMain(
  WG,
  'u.rows',
  `let t = inv / u.heads;
  let h = inv % u.heads;
  let kvh = h / u.group;
  let scale = bitcast<f32>(u.scale);
  let qw = inv * HW;
  for (var i = 0u; i < HW; i = i + 1u) {
    let qq = q[qw + i];
    qv[2u * i] = bf16_lo(qq);
    qv[2u * i + 1u] = bf16_hi(qq);
  }
  // -inf through a function call: a constant -inf is a shader-creation error in WGSL
  var m = f32_from_bits(0xff800000u);
  for (var j = 0u; j <= t; j = j + 1u) {
    let s = score((j * u.kvHeads + kvh) * HW, scale);
    if (s > m) { m = s; }
  }
  var acc: array<f32, ${hd}>;
  var l: f32 = 0.0;
  for (var j = 0u; j <= t; j = j + 1u) {
    let kvw = (j * u.kvHeads + kvh) * HW;
    let p = exp_f32(score(kvw, scale) - m);
    l = l + p;
    for (var i = 0u; i < HW; i = i + 1u) {
      let vv = v[kvw + i];
      acc[2u * i] = acc[2u * i] + p * bf16_lo(vv);
      acc[2u * i + 1u] = acc[2u * i + 1u] + p * bf16_hi(vv);
    }
  }
  for (var i = 0u; i < HW; i = i + 1u) { o[qw + i] = pack_bf16(acc[2u * i] / l, acc[2u * i + 1u] / l); }`,
)}`;
}

export const attnCausalPlanner: KernelPlanner = (inputs, outputs, attrs) => {
  const op = 'attnCausal';
  const heads = requireIntAttr(attrs, 'heads', op, 1);
  const kvHeads = requireIntAttr(attrs, 'kvHeads', op, 1);
  const hd = requireIntAttr(attrs, 'headDim', op, 2);
  const scale = requireFloatAttr(attrs, 'scale', op);
  if (heads % kvHeads !== 0) throw new Error(`${op}: heads ${heads} is not a multiple of kvHeads ${kvHeads}`);
  if (hd % 2 !== 0) throw new Error(`${op}: headDim ${hd} must be even (rows are read and written as whole packed words)`);
  const T = requireRows(inputs[0], `${op}: input q`, 'bf16', heads * hd);
  requirePort(inputs[1], `${op}: input k`, 'bf16', [T, kvHeads * hd]);
  requirePort(inputs[2], `${op}: input v`, 'bf16', [T, kvHeads * hd]);
  requirePort(outputs[0], `${op}: output o`, 'bf16', [T, heads * hd]);
  const rows = T * heads;
  if (rows === 0) return { scratch: [], dispatches: [] };
  const bindings = [readInput(0), readInput(1), readInput(2), writeOutput(0)];
  const uniforms = [heads, kvHeads, heads / kvHeads, rows, f32Bits(scale)];
  return { scratch: [], dispatches: [flatDispatch(`attn-causal-hd${hd}`, causalWgsl(hd), bindings, rows, WG, uniforms)] };
};
