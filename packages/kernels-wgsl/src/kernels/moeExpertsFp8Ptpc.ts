// moeExpertsFp8Ptpc: the routed sum of a rank's experts on FP8 PTPC weights, as core's
// moeRoutedSumFp8 (layers/moe/moeFp8Math.ts). Pairs are laid out by (t, k) as moeExperts.ts
// does (off-rank pairs computed as nothing and never read). Four dispatches:
// 1. h: one invocation per (pair, c): g, u = the fp32 dot products of the fp8 values, k in
//    order (every fp8 x fp8 product is exact in fp32), both scales in `scaleOrder`,
//    h = bf(silu(g) * u); scratch h, one bf16 per u32 word.
// 2. row state: one invocation per pair: amax over its h row and the per-token quantization
//    state of quantFp8.ts (rowQuantWgsl: the CPU's bits on SwiftShader, subnormals included).
// 3. contributions: one invocation per (pair, j): each h value quantized with that state
//    (quant_bf16, recomputed per output rather than stored), the down dot product, scaled by
//    the weight row's scale and the pair's, c = bf(o * w); scratch contrib, one per word.
// 4. routed: one invocation per (t, j): the token's local contributions in ascending
//    (expert, k), added in fp32 from 0, stored unrounded.
// As fp8LinearPtpc.ts, an epilogue product that is a nonzero fp32 below 2^-126 is flushed by
// SwiftShader where the CPU keeps it (the only place the bits can differ).
import type { KernelBinding, KernelPlanner } from '../kernelProgram.ts';
import { BF16_WGSL, ROUND_BF16_WGSL } from '../wgsl/bf16.wgsl.ts';
import { bf16Buf, buf, preamble } from '../wgsl/bindings.wgsl.ts';
import { FP8_WGSL_FORMATS, type Fp8Format, fp8DecodeWgsl, type Fp8WgslFormat } from '../wgsl/fp8.wgsl.ts';
import { FP32_MATH_WGSL } from '../wgsl/fp32Math.wgsl.ts';
import { eachLocalChoiceWgsl } from '../wgsl/moeChoices.wgsl.ts';
import { f32Bits, flatDispatch, flatMain, readInput, readScratch, writeOutput, writeScratch } from './planParts.ts';
import { type QuantStyle, quantScaleFactor, rowQuantWgsl } from './quantFp8.ts';

const WG = 64;
const OP = 'moeExpertsFp8Ptpc';
const UNIFORMS = ['rows', 'K', 'H', 'I', 'first', 'numLocal', 'total', 'factorBits', 'groupsX'];
/** u32 words per pair of the row-state scratch: kind, k, s', inv', scale bits */
const STATE_WORDS = 5;

const BYTE_AT = 'fn byte_at(i: u32, w: u32) -> u32 { return (w >> ((i & 3u) * 8u)) & 0xffu; }';

function epilogue(weightFirst: boolean, acc: string, sw: string, sx: string): string {
  return weightFirst ? `((${acc}) * (${sw})) * (${sx})` : `((${acc}) * (${sx})) * (${sw})`;
}

/** WGSL: the local expert of pair p, or -1 */
const LOCAL_WGSL = `fn local_of(p: u32) -> i32 {
  let rel = ids[p] - i32(u.first);
  if (rel < 0 || rel >= i32(u.numLocal)) { return -1; }
  return rel;
}`;

function hKernel(f: Fp8WgslFormat, weightFirst: boolean): { wgsl: string; bindings: KernelBinding[] } {
  const pre = preamble(UNIFORMS, [
    buf('xq', readInput(0)),
    buf('sx', readInput(1)),
    buf('ids', readInput(2), 'i32'),
    buf('qgu', readInput(4)),
    buf('sgu', readInput(5)),
    buf('h', writeScratch('h')),
  ]);
  const wgsl = `${BF16_WGSL}${FP32_MATH_WGSL}${fp8DecodeWgsl(f.format)}
${pre.wgsl}
${BYTE_AT}
${LOCAL_WGSL}
// the fp32 dot product of x row t with weight row w (k in order); NaN flagged as on the CPU
fn dot_row(t: u32, w: u32, nan: ptr<function, bool>) -> f32 {
  var acc: f32 = 0.0;
  for (var k = 0u; k < u.H; k = k + 1u) {
    let xi = t * u.H + k;
    let wi = w * u.H + k;
    let a = byte_at(xi, xq[xi >> 2u]);
    let b = byte_at(wi, qgu[wi >> 2u]);
    *nan = *nan || fp8_is_nan(a) || fp8_is_nan(b);
    acc = acc + fp8_to_f32(a) * fp8_to_f32(b);
  }
  return acc;
}
${flatMain(
  WG,
  'u.total',
  `let p = inv / u.I;
  let c = inv % u.I;
  let local = local_of(p);
  if (local < 0) { h[inv] = 0u; return; }
  let t = p / u.K;
  let gRow = u32(local) * 2u * u.I + c;
  var nan = false;
  let gAcc = dot_row(t, gRow, &nan);
  let uAcc = dot_row(t, gRow + u.I, &nan);
  if (nan) { h[inv] = 0x7fc0u; return; }
  let s = bitcast<f32>(sx[t]);
  let g = ${epilogue(weightFirst, 'gAcc', 'bitcast<f32>(sgu[gRow])', 's')};
  let up = ${epilogue(weightFirst, 'uAcc', 'bitcast<f32>(sgu[gRow + u.I])', 's')};
  h[inv] = f32_to_bf16(silu_f32(g) * up);`,
)}`;
  return { wgsl, bindings: pre.bindings };
}

function stateKernel(f: Fp8WgslFormat, style: QuantStyle): { wgsl: string; bindings: KernelBinding[] } {
  const pre = preamble(UNIFORMS, [buf('ids', readInput(2), 'i32'), buf('h', readScratch('h')), buf('rowState', writeScratch('rowState'))]);
  const wgsl = `${BF16_WGSL}${rowQuantWgsl(f, style)}
${pre.wgsl}
${LOCAL_WGSL}
${flatMain(
  WG,
  'u.total',
  `if (local_of(inv) < 0) { return; }
  // amax on the bits: |x| bits order as the values; any NaN makes the row NaN (torch.amax)
  var amax = 0u;
  var anyNaN = false;
  for (var j = 0u; j < u.I; j = j + 1u) {
    let a = h[inv * u.I + j] & 0x7fffu;
    amax = max(amax, a);
    anyNaN = anyNaN || a > 0x7f80u;
  }
  let rq = row_quant(amax << 16u, anyNaN, bitcast<f32>(u.factorBits));
  let b = inv * ${STATE_WORDS}u;
  rowState[b] = rq.kind;
  rowState[b + 1u] = bitcast<u32>(rq.k);
  rowState[b + 2u] = bitcast<u32>(rq.sp);
  rowState[b + 3u] = bitcast<u32>(rq.invp);
  rowState[b + 4u] = rq.scaleBits;`,
)}`;
  return { wgsl, bindings: pre.bindings };
}

function contribKernel(f: Fp8WgslFormat, style: QuantStyle, weightFirst: boolean): { wgsl: string; bindings: KernelBinding[] } {
  const pre = preamble(UNIFORMS, [
    buf('ids', readInput(2), 'i32'),
    bf16Buf('wts', readInput(3)),
    buf('qd', readInput(6)),
    buf('sd', readInput(7)),
    buf('h', readScratch('h')),
    buf('rowState', readScratch('rowState')),
    buf('contrib', writeScratch('contrib')),
  ]);
  const wgsl = `${BF16_WGSL}${rowQuantWgsl(f, style)}${fp8DecodeWgsl(f.format)}
${pre.wgsl}
${ROUND_BF16_WGSL}
${BYTE_AT}
${LOCAL_WGSL}
${flatMain(
  WG,
  'u.total',
  `let p = inv / u.H;
  let j = inv % u.H;
  let local = local_of(p);
  if (local < 0) { return; }
  let b = p * ${STATE_WORDS}u;
  let rq = RowQuant(rowState[b], bitcast<i32>(rowState[b + 1u]), bitcast<f32>(rowState[b + 2u]), bitcast<f32>(rowState[b + 3u]), rowState[b + 4u]);
  let dRow = u32(local) * u.H + j;
  var acc: f32 = 0.0;
  var nan = false;
  for (var i = 0u; i < u.I; i = i + 1u) {
    let a = quant_bf16(h[p * u.I + i], rq);
    let wi = dRow * u.I + i;
    let w = byte_at(wi, qd[wi >> 2u]);
    nan = nan || fp8_is_nan(a) || fp8_is_nan(w);
    acc = acc + fp8_to_f32(a) * fp8_to_f32(w);
  }
  if (nan) { contrib[inv] = 0x7fc00000u; return; }
  let o = ${epilogue(weightFirst, 'acc', 'bitcast<f32>(sd[dRow])', 'bitcast<f32>(rq.scaleBits)')};
  contrib[inv] = bitcast<u32>(rbf(o * wts_f32(p)));`,
)}`;
  return { wgsl, bindings: pre.bindings };
}

function routedKernel(): { wgsl: string; bindings: KernelBinding[] } {
  const pre = preamble(UNIFORMS, [buf('ids', readInput(2), 'i32'), buf('contrib', readScratch('contrib')), buf('routed', writeOutput(0))]);
  const wgsl = `${pre.wgsl}
${flatMain(
  WG,
  'u.total',
  `let t = inv / u.H;
  let j = inv % u.H;
  var acc: f32 = 0.0;
  ${eachLocalChoiceWgsl(`let p = t * u.K + u32(next) % u.K;
    acc = acc + bitcast<f32>(contrib[p * u.H + j]);`)}
  routed[inv] = bitcast<u32>(acc);`,
)}`;
  return { wgsl, bindings: pre.bindings };
}

export const moeExpertsFp8PtpcPlanner: KernelPlanner = (inputs, _outputs, attrs) => {
  const f = FP8_WGSL_FORMATS[attrs.format as Fp8Format];
  const style = attrs.style as QuantStyle;
  const order = attrs.scaleOrder as 'weightFirst' | 'tokenFirst';
  const [first, numLocal, I] = ['firstExpert', 'numLocal', 'intermediate'].map((name) => attrs[name] as number);
  const [T, H] = inputs[0]!.shape;
  const [, K] = inputs[2]!.shape;
  if (T * H === 0) return { scratch: [], dispatches: [] };
  const weightFirst = order === 'weightFirst';
  const pairs = T * K;
  const common = (total: number) => [T, K, H, I, first, numLocal, total, f32Bits(quantScaleFactor(f, style))];
  const h = hKernel(f, weightFirst);
  const st = stateKernel(f, style);
  const c = contribKernel(f, style, weightFirst);
  const r = routedKernel();
  const key = `${OP}-${f.format}-${style}-${order}`;
  return {
    scratch: [
      { name: 'h', words: Math.max(1, pairs * I) },
      { name: 'rowState', words: Math.max(1, pairs * STATE_WORDS) },
      { name: 'contrib', words: Math.max(1, pairs * H) },
    ],
    dispatches: [
      flatDispatch(`${key}-h`, h.wgsl, h.bindings, pairs * I, WG, common(pairs * I)),
      flatDispatch(`${key}-state`, st.wgsl, st.bindings, pairs, WG, common(pairs)),
      flatDispatch(`${key}-contrib`, c.wgsl, c.bindings, pairs * H, WG, common(pairs * H)),
      flatDispatch(`${OP}-routed`, r.wgsl, r.bindings, T * H, WG, common(T * H)),
    ],
  };
};
