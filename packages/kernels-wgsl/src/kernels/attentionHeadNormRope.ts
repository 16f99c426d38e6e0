// attnHeadNormRope: per (token, head), Gemma-style RMS norm then NeoX RoPE on the first
// ropeDims dims (core attentionMath.attnHeadNormRope):
//   r = rsqrt(fr(ss / headDim) + eps), ss = sum_d x_d^2 in d order (exact bf16 squares)
//   n_d = bf(fr(x_d * r) * fr(1 + w_d))
//   i < half:  out_i = bf(fr(n_i c) - fr(n_{i+half} s)),  out_{i+half} = bf(fr(n_{i+half} c) + fr(n_i s))
//   d >= ropeDims: out_d = n_d
// with the f32 cos/sin tables [T, half] as inputs. One invocation per (token, head) row
// computes r once and writes the row's words whole, so headDim must be even (it is for
// every Qwen3-Next head); n of the RoPE partner is recomputed, which is the same bits.
import type { KernelPlanner } from '../kernelProgram.ts';
import { BF16_WGSL, ROUND_BF16_WGSL } from '../wgsl/bf16.wgsl.ts';
import { bf16Element } from '../wgsl/elementAccess.wgsl.ts';
import { FP32_MATH_WGSL } from '../wgsl/fp32Math.wgsl.ts';
import { f32Bits, flatDispatch, flatMain, readInput, requireFloatAttr, requireIntAttr, requirePort, requireRows, writeOutput } from './planParts.ts';

const WG = 64;

const HEAD_NORM_ROPE_WGSL = `${BF16_WGSL}
${FP32_MATH_WGSL}
${ROUND_BF16_WGSL}
struct U { heads: u32, hd: u32, stride: u32, offset: u32, ropeDims: u32, rows: u32, eps: u32, groupsX: u32 }
@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(2) var<storage, read> cosT: array<f32>;
@group(0) @binding(3) var<storage, read> sinT: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<u32>;
@group(0) @binding(5) var<uniform> u: U;
${bf16Element('x', 'xAt')}
${bf16Element('w', 'wAt')}
fn normed(xb: u32, d: u32, r: f32) -> f32 {
  return rbf((xAt(xb + d) * r) * (1.0 + wAt(d)));
}
fn outAt(t: u32, xb: u32, d: u32, r: f32) -> f32 {
  let hr = u.ropeDims / 2u; // half the rotated dims
  if (d < hr) {
    let c = cosT[t * hr + d];
    let s = sinT[t * hr + d];
    return normed(xb, d, r) * c - normed(xb, d + hr, r) * s;
  }
  if (d < u.ropeDims) {
    let c = cosT[t * hr + d - hr];
    let s = sinT[t * hr + d - hr];
    return normed(xb, d, r) * c + normed(xb, d - hr, r) * s;
  }
  return normed(xb, d, r);
}
${flatMain(
  WG,
  'u.rows',
  `let t = inv / u.heads;
  let xb = inv * u.stride + u.offset;
  var ss: f32 = 0.0;
  for (var d = 0u; d < u.hd; d = d + 1u) {
    let xd = xAt(xb + d);
    ss = ss + xd * xd;
  }
  let r = rsqrt_f32(ss / f32(u.hd) + bitcast<f32>(u.eps));
  let yb = inv * u.hd;
  for (var d = 0u; d < u.hd; d = d + 2u) {
    y[(yb + d) >> 1u] = pack_bf16(outAt(t, xb, d, r), outAt(t, xb, d + 1u, r));
  }`,
)}`;

export const attnHeadNormRopePlanner: KernelPlanner = (inputs, outputs, attrs) => {
  const op = 'attnHeadNormRope';
  const heads = requireIntAttr(attrs, 'heads', op, 1);
  const hd = requireIntAttr(attrs, 'headDim', op, 2);
  const stride = requireIntAttr(attrs, 'stride', op, 1);
  const offset = requireIntAttr(attrs, 'offset', op, 0);
  const ropeDims = requireIntAttr(attrs, 'ropeDims', op, 0);
  const eps = requireFloatAttr(attrs, 'eps', op);
  if (hd % 2 !== 0) throw new Error(`${op}: headDim ${hd} must be even (each row is written as whole packed words)`);
  if (offset + hd > stride) throw new Error(`${op}: head at offset ${offset} with headDim ${hd} overruns stride ${stride}`);
  if (ropeDims % 2 !== 0 || ropeDims > hd) throw new Error(`${op}: ropeDims ${ropeDims} must be even and at most headDim ${hd}`);
  const half = ropeDims / 2;
  const T = requireRows(inputs[0], `${op}: input x`, 'bf16', heads * stride);
  requirePort(inputs[1], `${op}: input w`, 'bf16', [hd]);
  requirePort(inputs[2], `${op}: input cos`, 'f32', [T, half]);
  requirePort(inputs[3], `${op}: input sin`, 'f32', [T, half]);
  requirePort(outputs[0], `${op}: output y`, 'bf16', [T, heads * hd]);
  const rows = T * heads;
  if (rows === 0) return { scratch: [], dispatches: [] };
  const bindings = [readInput(0), readInput(1), readInput(2), readInput(3), writeOutput(0)];
  const uniforms = [heads, hd, stride, offset, ropeDims, rows, f32Bits(eps)];
  return { scratch: [], dispatches: [flatDispatch('attn-head-norm-rope', HEAD_NORM_ROPE_WGSL, bindings, rows, WG, uniforms)] };
};
