// gdnGatedNorm: per value head, y = bf(bf(bf(o * r) * w) * sigmoid(z)) with
// r = rsqrt(fr(ss / headDim) + eps), ss = sum_j o_j^2 in j order (core gdnMath.gdnGatedNorm;
// bf16 squares are exact in fp32). One invocation per (token, head) row computes r once
// and writes the row's words whole, so headDim must be even (every Qwen3-Next head dim is).
import type { KernelPlanner } from '../kernelProgram.ts';
import { BF16_WGSL, ROUND_BF16_WGSL } from '../wgsl/bf16.wgsl.ts';
import { bf16Buf, buf, preamble } from '../wgsl/bindings.wgsl.ts';
import { FP32_MATH_WGSL } from '../wgsl/fp32Math.wgsl.ts';
import { f32Bits, flatDispatch, flatMain, readInput, requireFloatAttr, requireIntAttr, requirePort, requireRows, writeOutput } from './planParts.ts';

const WG = 64;

const GATED_NORM = preamble(
  ['hd', 'rows', 'eps', 'groupsX'],
  [bf16Buf('o', readInput(0), 'oAt'), bf16Buf('z', readInput(1), 'zAt'), bf16Buf('w', readInput(2), 'wAt'), buf('y', writeOutput(0))],
);

const GATED_NORM_WGSL = `${BF16_WGSL}
${FP32_MATH_WGSL}
${ROUND_BF16_WGSL}
${GATED_NORM.wgsl}
fn gated(e: u32, j: u32, r: f32) -> f32 {
  let normed = rbf(oAt(e) * r);
  let weighted = rbf(normed * wAt(j));
  return weighted * sigmoid_f32(zAt(e));
}
${flatMain(
  WG,
  'u.rows',
  `let base = inv * u.hd;
  var ss: f32 = 0.0;
  for (var j = 0u; j < u.hd; j = j + 1u) {
    let oj = oAt(base + j);
    ss = ss + oj * oj;
  }
  let r = rsqrt_f32(ss / f32(u.hd) + bitcast<f32>(u.eps));
  for (var j = 0u; j < u.hd; j = j + 2u) {
    y[(base + j) >> 1u] = pack_bf16(gated(base + j, j, r), gated(base + j + 1u, j + 1u, r));
  }`,
)}`;

export const gdnGatedNormPlanner: KernelPlanner = (inputs, outputs, attrs) => {
  const op = 'gdnGatedNorm';
  const heads = requireIntAttr(attrs, 'heads', op, 1);
  const hd = requireIntAttr(attrs, 'headDim', op, 2);
  const eps = requireFloatAttr(attrs, 'eps', op);
  if (hd % 2 !== 0) throw new Error(`${op}: headDim ${hd} must be even (each row is written as whole packed words)`);
  const T = requireRows(inputs[0], `${op}: input o`, 'bf16', heads * hd);
  requirePort(inputs[1], `${op}: input z`, 'bf16', [T, heads * hd]);
  requirePort(inputs[2], `${op}: input w`, 'bf16', [hd]);
  requirePort(outputs[0], `${op}: output y`, 'bf16', [T, heads * hd]);
  const rows = T * heads;
  if (rows === 0) return { scratch: [], dispatches: [] };
  return { scratch: [], dispatches: [flatDispatch('gdn-gated-norm', GATED_NORM_WGSL, GATED_NORM.bindings, rows, WG, [hd, rows, f32Bits(eps)])] };
};
