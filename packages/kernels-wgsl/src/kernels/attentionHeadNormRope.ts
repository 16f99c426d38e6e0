// attnHeadNormRopeBf16: per (row, head), RMS1p norm then NeoX RoPE on the first ropeDims
// dims with bf16 cos/sin tables, rounded as HF and ATOM round (core
// attentionMath.attnHeadNormRopeBf16):
//   r = rsqrt(fr(ss / headDim) + eps), ss = sum_d x_d^2 in canonical order v1 (exact bf16
//   squares; core numerics/canonicalSum.ts)
//   n_d = bf(fr(x_d * r) * fr(1 + w_d))
//   i < half:  out_i = bf(bf(n_i c) + bf(-n_{i+half} s)),  out_{i+half} = bf(bf(n_{i+half} c) + bf(n_i s))
//   d >= ropeDims: out_d = n_d
// c, s the table entries of the row (bf16 products are exact in fp32, so each bf() is the
// one rounding of torch's bf16 multiply and add). One workgroup of 64 invocations per (row,
// head), invocation l being v1's lane l: it stages its lane's chunks of the head in a
// workgroup array of headDim (compiled in; even, so the row's words are whole) and adds their
// squares in order, the lane sums meet in v1's butterfly through workgroup memory, and the
// invocations then write the head's words l, l + 64, ... normed and rotated. normRopeWgsl and
// normRopeBuffers are shared with qsaBlockKeys.
import type { KernelPlanner } from '../kernelProgram.ts';
import { BF16_WGSL, ROUND_BF16_WGSL } from '../wgsl/bf16.wgsl.ts';
import { bf16Buf, buf, type BufferDecl, preamble } from '../wgsl/bindings.wgsl.ts';
import { CANONICAL_WORKGROUP, canonicalButterflyWgsl, canonicalLaneLoopWgsl } from '../wgsl/canonicalSum.wgsl.ts';
import { FP32_MATH_WGSL } from '../wgsl/fp32Math.wgsl.ts';
import { f32Bits, flatDispatch, flatInvocation, readInput, requireFloatAttr, requireIntAttr, requirePort, requireRows, writeOutput } from './planParts.ts';

/** one workgroup per head: invocation l is canonical order v1's lane l */
export const NORM_ROPE_WG = CANONICAL_WORKGROUP;

/**
 * The buffers of the norm+RoPE ops: `first` (the source, input port 0), then inputs w, cos
 * and sin (bf16, read with wAt, cosAt, sinAt) and output y.
 */
export function normRopeBuffers(first: BufferDecl): BufferDecl[] {
  return [first, bf16Buf('w', readInput(1), 'wAt'), bf16Buf('cosT', readInput(2), 'cosAt'), bf16Buf('sinT', readInput(3), 'sinAt'), buf('y', writeOutput(0))];
}

/** WGSL statements of invocation `lid` over the dims j of its lane's chunks: `stage(j)` stores hv[j] (normRopeWgsl's) */
export function stageHeadWgsl(stage: (j: string) => string): string {
  return canonicalLaneLoopWgsl('lid', 'HD', stage);
}

/**
 * WGSL `fn normRope(lid, yb, tb)`, called by every invocation of a workgroup of NORM_ROPE_WG
 * (it waits at barriers) once invocation lid has staged hv[j] (fp32 of bf16 values) for the
 * dims j of its own lane (stageHeadWgsl): the lane's sum of squares, v1's butterfly, then the
 * head normed with the weights w, roped with the table entries cos/sin[tb ..] and written as
 * bf16 words into y from element yb (even), words lid, lid + 64, ... Needs BF16_WGSL,
 * ROUND_BF16_WGSL, FP32_MATH_WGSL, the buffers of normRopeBuffers and the uniform fields
 * u.ropeDims and u.eps.
 */
export function normRopeWgsl(hd: number): string {
  return `const HD: u32 = ${hd}u;
var<workgroup> hv: array<f32, ${hd}>;
var<workgroup> lanes: array<f32, ${CANONICAL_WORKGROUP}>;
// n_d = bf(fr(x_d * r) * fr(1 + w_d))
fn normedAt(d: u32, r: f32) -> f32 { return rbf((hv[d] * r) * (1.0 + wAt(d))); }
fn ropedAt(d: u32, tb: u32, r: f32) -> f32 {
  let hr = u.ropeDims / 2u; // half the rotated dims
  if (d < hr) {
    return rbf(normedAt(d, r) * cosAt(tb + d)) + rbf((-normedAt(d + hr, r)) * sinAt(tb + d));
  }
  if (d < u.ropeDims) {
    return rbf(normedAt(d, r) * cosAt(tb + d - hr)) + rbf(normedAt(d - hr, r) * sinAt(tb + d - hr));
  }
  return normedAt(d, r);
}
fn normRope(lid: u32, yb: u32, tb: u32) {
  var acc: f32 = 0.0;
  ${canonicalLaneLoopWgsl('lid', 'HD', (j) => `acc = acc + hv[${j}] * hv[${j}];`)}
  // the butterfly's barriers also make every lane's staged dims visible to the writes below
  ${canonicalButterflyWgsl('lanes', 'lid', 'acc')}
  let r = rsqrt_f32(lanes[0] / f32(HD) + bitcast<f32>(u.eps));
  for (var q = lid; 2u * q < HD; q = q + ${CANONICAL_WORKGROUP}u) { y[(yb >> 1u) + q] = pack_bf16(ropedAt(2u * q, tb, r), ropedAt(2u * q + 1u, tb, r)); }
}`;
}

/** WGSL `main` with one workgroup of NORM_ROPE_WG per item below `limit`: `body` sees `item` and `lid` */
export function normRopeMain(limit: string, body: string): string {
  const wg = flatInvocation(NORM_ROPE_WG, 'u.groupsX');
  return `@compute @workgroup_size(${NORM_ROPE_WG})
fn main(${wg.params}) {
  let item = wid.x + wid.y * u.groupsX;
  // the same for the whole workgroup, so every invocation that goes on reaches the barriers
  if (item >= ${limit}) { return; }
  ${body}
}`;
}

const HEAD_NORM_ROPE = preamble(['heads', 'stride', 'offset', 'ropeDims', 'rows', 'eps', 'groupsX'], normRopeBuffers(bf16Buf('x', readInput(0), 'xAt')));

function headNormRopeWgsl(hd: number): string {
  return `${BF16_WGSL}
${FP32_MATH_WGSL}
${ROUND_BF16_WGSL}
${HEAD_NORM_ROPE.wgsl}
${normRopeWgsl(hd)}
${normRopeMain(
  'u.rows',
  `let t = item / u.heads;
  let xb = item * u.stride + u.offset;
  ${stageHeadWgsl((j) => `hv[${j}] = xAt(xb + ${j});`)}
  normRope(lid, item * HD, t * (u.ropeDims / 2u));`,
)}`;
}

/** Shared checks of the norm+RoPE ops: headDim even, ropeDims even and at most headDim. */
export function checkNormRopeDims(op: string, hd: number, ropeDims: number): void {
  if (hd % 2 !== 0) throw new Error(`${op}: headDim ${hd} must be even (each row is written as whole packed words)`);
  if (ropeDims % 2 !== 0 || ropeDims > hd) throw new Error(`${op}: ropeDims ${ropeDims} must be even and at most headDim ${hd}`);
}

export const attnHeadNormRopeBf16Planner: KernelPlanner = (inputs, outputs, attrs) => {
  const op = 'attnHeadNormRopeBf16';
  const heads = requireIntAttr(attrs, 'heads', op, 1);
  const hd = requireIntAttr(attrs, 'headDim', op, 2);
  const stride = requireIntAttr(attrs, 'stride', op, 1);
  const offset = requireIntAttr(attrs, 'offset', op, 0);
  const ropeDims = requireIntAttr(attrs, 'ropeDims', op, 0);
  const eps = requireFloatAttr(attrs, 'eps', op);
  checkNormRopeDims(op, hd, ropeDims);
  if (offset + hd > stride) throw new Error(`${op}: head at offset ${offset} with headDim ${hd} overruns stride ${stride}`);
  const half = ropeDims / 2;
  const T = requireRows(inputs[0], `${op}: input x`, 'bf16', heads * stride);
  requirePort(inputs[1], `${op}: input w`, 'bf16', [hd]);
  requirePort(inputs[2], `${op}: input cos`, 'bf16', [T, half]);
  requirePort(inputs[3], `${op}: input sin`, 'bf16', [T, half]);
  requirePort(outputs[0], `${op}: output y`, 'bf16', [T, heads * hd]);
  const rows = T * heads;
  if (rows === 0) return { scratch: [], dispatches: [] };
  const uniforms = [heads, stride, offset, ropeDims, rows, f32Bits(eps)];
  // one workgroup per (row, head)
  return { scratch: [], dispatches: [flatDispatch(`attn-head-norm-rope-bf16-hd${hd}`, headNormRopeWgsl(hd), HEAD_NORM_ROPE.bindings, rows * NORM_ROPE_WG, NORM_ROPE_WG, uniforms)] };
};
