// attnHeadNormRopeBf16: per (row, head), RMS1p norm then NeoX RoPE on the first ropeDims
// dims with bf16 cos/sin tables, rounded as HF and ATOM round (core
// attentionMath.attnHeadNormRopeBf16):
//   r = rsqrt(fr(ss / headDim) + eps), ss = sum_d x_d^2 in canonical order v1 (exact bf16
//   squares; core numerics/canonicalSum.ts), the invocation's 64 lane sums in a private array
//   n_d = bf(fr(x_d * r) * fr(1 + w_d))
//   i < half:  out_i = bf(bf(n_i c) + bf(-n_{i+half} s)),  out_{i+half} = bf(bf(n_{i+half} c) + bf(n_i s))
//   d >= ropeDims: out_d = n_d
// c, s the table entries of the row (bf16 products are exact in fp32, so each bf() is the
// one rounding of torch's bf16 multiply and add). One invocation per (row, head) loads the
// head into a private array of headDim (compiled in; even, so the row's words are whole),
// norms it once and writes its words. (A workgroup of 64 per head, lane l = invocation l and
// the butterfly through workgroup memory, gave the same bits but was slower on SwiftShader:
// T 1024 x 16 heads of 256, best of 4 whole runs 11.6 s against 6.4 s for this one.) normRopeWgsl and normRopeBuffers are shared with qsaBlockKeys.
import type { KernelPlanner } from '../kernelProgram.ts';
import { BF16_WGSL, ROUND_BF16_WGSL } from '../wgsl/bf16.wgsl.ts';
import { bf16Buf, buf, type BufferDecl, preamble } from '../wgsl/bindings.wgsl.ts';
import { canonicalSerialAddWgsl, canonicalSerialButterflyWgsl } from '../wgsl/canonicalSum.wgsl.ts';
import { FP32_MATH_WGSL } from '../wgsl/fp32Math.wgsl.ts';
import { f32Bits, flatDispatch, flatMain, readInput, writeOutput } from './planParts.ts';

const WG = 64;

/**
 * The buffers of the norm+RoPE ops: `first` (the source, input port 0), then inputs w, cos
 * and sin (bf16, read with wAt, cosAt, sinAt) and output y.
 */
export function normRopeBuffers(first: BufferDecl): BufferDecl[] {
  return [first, bf16Buf('w', readInput(1), 'wAt'), bf16Buf('cosT', readInput(2), 'cosAt'), bf16Buf('sinT', readInput(3), 'sinAt'), buf('y', writeOutput(0))];
}

/**
 * WGSL `fn normRope(yb, tb)`: norms the private head hv[0..HD) (fp32 of bf16 values) with
 * the weights w, ropes it with the table entries cos/sin[tb ..] and writes it as bf16 words
 * into y from element yb (even). Needs BF16_WGSL, ROUND_BF16_WGSL, FP32_MATH_WGSL, the
 * buffers of normRopeBuffers and the uniform fields u.ropeDims and u.eps.
 */
export function normRopeWgsl(hd: number): string {
  return `const HD: u32 = ${hd}u;
var<private> hv: array<f32, ${hd}>;
var<private> nv: array<f32, ${hd}>;
fn ropedAt(d: u32, tb: u32) -> f32 {
  let hr = u.ropeDims / 2u; // half the rotated dims
  if (d < hr) {
    return rbf(nv[d] * cosAt(tb + d)) + rbf((-nv[d + hr]) * sinAt(tb + d));
  }
  if (d < u.ropeDims) {
    return rbf(nv[d] * cosAt(tb + d - hr)) + rbf(nv[d - hr] * sinAt(tb + d - hr));
  }
  return nv[d];
}
fn normRope(yb: u32, tb: u32) {
  var lanes: array<f32, 64>;
  for (var d = 0u; d < HD; d = d + 1u) { ${canonicalSerialAddWgsl('lanes', 'd', 'hv[d] * hv[d]')} }
  ${canonicalSerialButterflyWgsl('lanes')}
  let r = rsqrt_f32(lanes[0] / f32(HD) + bitcast<f32>(u.eps));
  for (var d = 0u; d < HD; d = d + 1u) { nv[d] = rbf((hv[d] * r) * (1.0 + wAt(d))); }
  for (var d = 0u; d < HD; d = d + 2u) { y[(yb + d) >> 1u] = pack_bf16(ropedAt(d, tb), ropedAt(d + 1u, tb)); }
}`;
}

const HEAD_NORM_ROPE = preamble(['heads', 'stride', 'offset', 'ropeDims', 'rows', 'eps', 'groupsX'], normRopeBuffers(bf16Buf('x', readInput(0), 'xAt')));

function headNormRopeWgsl(hd: number): string {
  return `${BF16_WGSL}
${FP32_MATH_WGSL}
${ROUND_BF16_WGSL}
${HEAD_NORM_ROPE.wgsl}
${normRopeWgsl(hd)}
${flatMain(
  WG,
  'u.rows',
  `let t = inv / u.heads;
  let xb = inv * u.stride + u.offset;
  for (var d = 0u; d < HD; d = d + 1u) { hv[d] = xAt(xb + d); }
  normRope(inv * HD, t * (u.ropeDims / 2u));`,
)}`;
}

/** The norm+RoPE kernels write each row as whole packed words: headDim must be even (the declaration allows odd). */
export function requireEvenHeadDim(op: string, hd: number): void {
  if (hd % 2 !== 0) throw new Error(`${op}: headDim ${hd} must be even (each row is written as whole packed words)`);
}

export const attnHeadNormRopeBf16Planner: KernelPlanner = (inputs, _outputs, attrs) => {
  const [heads, hd, stride, offset, ropeDims, eps] = ['heads', 'headDim', 'stride', 'offset', 'ropeDims', 'eps'].map((name) => attrs[name] as number);
  requireEvenHeadDim('attnHeadNormRopeBf16', hd);
  const [T] = inputs[0]!.shape;
  const rows = T * heads;
  if (rows === 0) return { scratch: [], dispatches: [] };
  const uniforms = [heads, stride, offset, ropeDims, rows, f32Bits(eps)];
  return { scratch: [], dispatches: [flatDispatch(`attn-head-norm-rope-bf16-hd${hd}`, headNormRopeWgsl(hd), HEAD_NORM_ROPE.bindings, rows, WG, uniforms)] };
};
