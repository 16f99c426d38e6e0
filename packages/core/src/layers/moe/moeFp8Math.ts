// The routed experts on FP8 PTPC weights (graph/ops/moeOps.ts moeExpertsFp8Ptpc), CPU
// reference. It follows aiter's two-stage fused MoE for QuantType.per_Token with fp8
// weights, as ATOM's Fp8MoEMethod runs it for a per-channel checkpoint (atom/model_ops/moe.py;
// aiter/fused_moe.py fused_moe_2stages, torch_moe_stage1/2):
//   a1 = per_token_quant_hip(x)                 (the caller's quantFp8PerToken: xq, sx)
//   stage 1: g, u = acc * scales (fp32; w1_scale [E, 2I] per output channel), the SwiGLU on the
//            fp32 values and ONE bf16 rounding of its output: h = bf(silu(g) * u)
//   a2 = per_token_quant_hip(h) over the [T*topK, I] rows: one scale per (token, expert) row
//   stage 2: o = acc * scales (fp32; w2_scale [E, H]), times the routing weight in fp32 and
//            stored bf16 (CK's stage-2 epilogue multiplies the sorted weight before the store)
// and then hcsp's routed-sum rule (model.md "MoE"): the contributions added in fp32 in
// ascending expert index, rounded once by moeCombine. Modelled as fp8LinearPtpc models a GEMM:
// each k sum sequential 0..K-1 in fp32 (every fp8 x fp8 product is exact in fp32), the two
// scales in `order`.
import { bf16ToF32, f32ToBf16, roundBf16 } from '../../numerics/bf16.ts';
import { type Fp8Format, fp8ArrayToF32 } from '../../numerics/fp8.ts';
import { siluF32 } from '../../numerics/fp32Math.ts';
import { type QuantStyle, quantizeBf16RowsFp8 } from '../../numerics/quant.ts';
import type { PtpcScaleOrder } from '../fp8Linear.ts';
import { localExpertPairs, type MoeRouting } from './moeMath.ts';

const fr = Math.fround;

function checkLength(what: string, arr: ArrayLike<number>, expected: number): void {
  if (arr.length !== expected) throw new Error(`moe fp8: ${what} has ${arr.length} values, expected ${expected}`);
}

/** A rank's routed experts as FP8 bytes with one f32 scale per weight row. */
export interface MoeFp8LocalExperts {
  firstExpert: number;
  numLocal: number;
  intermediate: number;
  /** gate_up rows of the local experts, stacked: [numLocal * 2I, H] fp8 */
  qGateUp: Uint8Array;
  /** [numLocal * 2I] */
  sGateUp: Float32Array;
  /** down rows of the local experts, stacked: [numLocal * H, I] fp8 */
  qDown: Uint8Array;
  /** [numLocal * H] */
  sDown: Float32Array;
}

export interface MoeFp8Numerics {
  format: Fp8Format;
  /** the per-token quantization of h (aiter's per_token_quant_hip: 'reciprocal') */
  style: QuantStyle;
  order: PtpcScaleOrder;
}

function scaled(acc: number, sw: number, sx: number, weightFirst: boolean): number {
  return weightFirst ? fr(fr(acc * sw) * sx) : fr(fr(acc * sx) * sw);
}

/** sum_k x[xOff + k] * w[row, k] in fp32, k in order (each product of two fp8 values is exact) */
function dot(w: Float32Array, row: number, x: Float32Array, xOff: number, n: number): number {
  let a = 0;
  const wo = row * n;
  for (let k = 0; k < n; k++) a = fr(a + x[xOff + k] * w[wo + k]);
  return a;
}

/**
 * The routed sum (f32 [T, H], unrounded) of a rank's FP8 experts for x quantized per token
 * (xq [T, H] fp8 bytes, sx [T]).
 */
export function moeRoutedSumFp8(
  xq: Uint8Array,
  sx: Float32Array,
  tokens: number,
  hidden: number,
  routing: MoeRouting,
  topK: number,
  experts: MoeFp8LocalExperts,
  numerics: MoeFp8Numerics,
): Float32Array {
  const { firstExpert, numLocal, intermediate: inter } = experts;
  const { format, style, order } = numerics;
  if (order !== 'weightFirst' && order !== 'tokenFirst') throw new Error(`moe fp8: unknown scale order '${String(order)}'`);
  const weightFirst = order === 'weightFirst';
  checkLength('xq', xq, tokens * hidden);
  checkLength('x scales', sx, tokens);
  checkLength('routing ids', routing.ids, tokens * topK);
  checkLength('routing weights', routing.weights, tokens * topK);
  checkLength('stacked gate_up', experts.qGateUp, numLocal * 2 * inter * hidden);
  checkLength('stacked gate_up scales', experts.sGateUp, numLocal * 2 * inter);
  checkLength('stacked down', experts.qDown, numLocal * hidden * inter);
  checkLength('stacked down scales', experts.sDown, numLocal * hidden);
  const xv = fp8ArrayToF32(xq, format);
  const acc = new Float32Array(tokens * hidden);
  const pairs = localExpertPairs(routing, tokens, topK, firstExpert, numLocal);
  const h = new Uint16Array(inter);
  for (let local = 0; local < numLocal; local++) {
    const mine = pairs[local];
    if (mine.length === 0) continue;
    const wGu = fp8ArrayToF32(experts.qGateUp.subarray(local * 2 * inter * hidden, (local + 1) * 2 * inter * hidden), format);
    const sGu = experts.sGateUp.subarray(local * 2 * inter, (local + 1) * 2 * inter);
    const wDown = fp8ArrayToF32(experts.qDown.subarray(local * hidden * inter, (local + 1) * hidden * inter), format);
    const sDown = experts.sDown.subarray(local * hidden, (local + 1) * hidden);
    for (const tk of mine) {
      const t = Math.floor(tk / topK);
      const xo = t * hidden;
      for (let c = 0; c < inter; c++) {
        const g = scaled(dot(wGu, c, xv, xo, hidden), sGu[c], sx[t], weightFirst);
        const u = scaled(dot(wGu, inter + c, xv, xo, hidden), sGu[inter + c], sx[t], weightFirst);
        h[c] = f32ToBf16(fr(siluF32(g) * u));
      }
      const hq = quantizeBf16RowsFp8(h, 1, inter, format, style);
      const hv = fp8ArrayToF32(hq.q, format);
      const sh = hq.scale[0];
      const w = bf16ToF32(routing.weights[tk]);
      for (let j = 0; j < hidden; j++) {
        const o = scaled(dot(wDown, j, hv, 0, inter), sDown[j], sh, weightFirst);
        acc[xo + j] = fr(acc[xo + j] + roundBf16(fr(o * w)));
      }
    }
  }
  return acc;
}
