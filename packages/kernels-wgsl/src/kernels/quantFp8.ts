// Per-token fp8 quantization (core/numerics/quant.ts, reference/kernels/quantKernels.ts),
// bit-exact with the CPU reference on every input, subnormals and non-finite values included.
//   quantFp8PerToken:  [amax + scale per row] -> [q per fp8 word]
//   hcGatedMeanQuant:  [v = gated mean per element] -> [amax over x = bf(v) per row] -> [x and q per fp8 word]
//   fp8QuantWeightPerChannel: quantFp8PerToken 'reciprocal' over the weight's rows
// Both styles take amax over the same bf16 values; 'divide' scales by fl(amax / max) and
// quantizes x / s, 'reciprocal' scales by fl(amax * fl(1/max)) and quantizes x * fl(1/s).
// Why the row scaling: SwiftShader flushes subnormal operands and results (DAZ/FTZ), while
// the CPU divides (or multiplies) without flushing. Each row works in a copy scaled by 2^k,
// k = -floor(log2 amax): x' = x 2^k and s' = s 2^k are built exactly from the bits (never
// subnormal where it matters), and x'/s' (x' * inv', inv' = 1/s' = inv 2^-k) is the same real
// number as the CPU's x/s (x * inv), so the one correctly rounded fp32 operation gives the
// CPU's bits whenever they are normal; when they would be subnormal the fp8 result is a
// signed zero either way. A subnormal scale is rounded in integers ('divide': a division by
// max = odd * 2^p; 'reciprocal': the exact 48-bit product of the two 24-bit significands),
// the scale output is written as bits, and 1/s overflowing to inf, s = 0, inf and NaN amax
// follow the IEEE outcomes of the CPU code (see rowQuant below).
// The gated mean of hcGatedMeanQuant is plain fp32 WGSL arithmetic in the CPU's order, like
// hcGatedMean's kernel; it differs from the CPU only where a product sig*normed, a partial
// sum or v is a nonzero value below 2^-126 (or normed is a bf16 subnormal), which SwiftShader
// flushes to zero.
import type { KernelBinding, KernelDispatch, KernelPlan, KernelPlanner, TensorInfo } from '../kernelProgram.ts';
import { BF16_WGSL } from '../wgsl/bf16.wgsl.ts';
import { bf16Buf, buf, preamble } from '../wgsl/bindings.wgsl.ts';
import { FP8_WGSL_FORMATS, type Fp8Format, type Fp8WgslFormat, fp8EncodeWgsl } from '../wgsl/fp8.wgsl.ts';
import { FP32_MATH_WGSL } from '../wgsl/fp32Math.wgsl.ts';
import { f32Bits, flatDispatch, flatMain, gridFor, readInput, readScratch, uniformWords, writeOutput, writeScratch } from './planParts.ts';

export type QuantStyle = 'divide' | 'reciprocal';

/** u32 words of per-row quantization state in the row-state scratch: kind, k, s', inv'. */
const ROW_STATE_WORDS = 4;
const WG = 64;

/** The run-time factor of the scale: fp8_max ('divide': amax / max) or fl(1 / fp8_max) ('reciprocal': amax * it). */
export function quantScaleFactor(f: Fp8WgslFormat, style: QuantStyle): number {
  return style === 'divide' ? f.max : Math.fround(1 / f.max);
}

/**
 * WGSL: the subnormal scale n 2^-149 of 'reciprocal', n = RNE(amax * factor / 2^-149), from
 * the significands m (amax) and mi (factor), 24 bits each, whose exact product P is 48 bits
 * (hi:lo), and r = the right shift that takes P to units of 2^-149 (r >= 24 here).
 */
const SUBNORMAL_PRODUCT_WGSL = /* wgsl */ `
fn subnormal_product_scale(m: u32, mi: u32, r: i32) -> u32 {
  if (r >= 49) { return 0u; } // P < 2^48: below half the smallest subnormal
  let a1 = m >> 16u;
  let a0 = m & 0xffffu;
  let b1 = mi >> 16u;
  let b0 = mi & 0xffffu;
  let p0 = a0 * b0;
  let mid = a1 * b0 + a0 * b1;
  let lo = p0 + ((mid & 0xffffu) << 16u);
  var hi = a1 * b1 + (mid >> 16u);
  if (lo < p0) { hi = hi + 1u; }
  var n: u32;
  var above: bool;
  var tie: bool;
  if (r < 32) {
    let ru = u32(r);
    n = (hi << (32u - ru)) | (lo >> ru);
    let rem = lo & ((1u << ru) - 1u);
    let half = 1u << (ru - 1u);
    above = rem > half;
    tie = rem == half;
  } else if (r == 32) {
    n = hi;
    above = lo > 0x80000000u;
    tie = lo == 0x80000000u;
  } else {
    let rh = u32(r - 32);
    n = hi >> rh;
    let remHi = hi & ((1u << rh) - 1u);
    let halfHi = 1u << (rh - 1u);
    above = remHi > halfHi || (remHi == halfHi && lo != 0u);
    tie = remHi == halfHi && lo == 0u;
  }
  if (above || (tie && (n & 1u) == 1u)) { n = n + 1u; }
  return n;
}
`;

/**
 * WGSL: the row state from the row's amax (|x| as fp32 bits, NaN flagged) and the quantization
 * of one bf16 element with it. Kinds: FINITE (quotient = x'/s' or x'*inv'), NAN (amax NaN:
 * every q is NaN), INF_SCALE (amax inf, s = inf: finite x -> signed 0, inf x -> NaN: x/inf,
 * x*(1/inf)), INF_QUOTIENT (s rounded to 0, or 1/s overflowed: x != 0 -> +-max, 0 -> NaN).
 * `factor` (row_quant's last argument) is quantScaleFactor(f, style).
 */
export function rowQuantWgsl(f: Fp8WgslFormat, style: QuantStyle): string {
  const reciprocal = style === 'reciprocal';
  const subnormalScale = reciprocal
    ? `// s is subnormal: n = RNE(amax * factor / 2^-149) from the exact significand product,
    // amax = m 2^(-k-23), factor = mi 2^(fe-23): P = m mi 2^(fe-k-46), r = k - fe - 103
    let fb = bitcast<u32>(factor);
    let fe = i32(fb >> 23u) - 127;
    let n = subnormal_product_scale(0x800000u | frac, 0x800000u | (fb & 0x7fffffu), k - fe - 103);`
    : `// s is subnormal: s = n 2^-149, n = RNE(amax / max / 2^-149) = RNE(m 2^sh / odd)
    let m = 0x800000u | frac;
    let sh = 126 - k - FP8_MAX_POW2;
    var num = m;
    var den = FP8_MAX_ODD;
    var n = 0u;
    if (sh >= 0) { num = m << u32(sh); } else if (sh > -26) { den = FP8_MAX_ODD << u32(-sh); } else { den = 0u; }
    // den = 0: m 2^sh / odd < 2^-2, n = 0
    if (den != 0u) {
      n = num / den;
      let r = num - n * den;
      if (2u * r > den || (2u * r == den && (n & 1u) == 1u)) { n = n + 1u; }
    }`;
  return /* wgsl */ `${fp8EncodeWgsl(f.format)}${reciprocal ? SUBNORMAL_PRODUCT_WGSL : ''}
const KIND_FINITE: u32 = 0u;
const KIND_NAN: u32 = 1u;
const KIND_INF_SCALE: u32 = 2u;
const KIND_INF_QUOTIENT: u32 = 3u;
struct RowQuant { kind: u32, k: i32, sp: f32, invp: f32, scaleBits: u32 }
// 2^e for e in [-126, 127], exact
fn quant_pow2(e: i32) -> f32 { return bitcast<f32>(u32(e + 127) << 23u); }

// factor must be a run-time value (a uniform): SwiftShader turns a division by a constant
// into a multiplication by its rounded reciprocal, which is off by an ulp (measured)
fn row_quant(amaxBits: u32, amaxNaN: bool, factor: f32) -> RowQuant {
  if (amaxNaN) { return RowQuant(KIND_NAN, 0, 1.0, 1.0, 0x7fc00000u); }
  if (amaxBits == 0x7f800000u) { return RowQuant(KIND_INF_SCALE, 0, 1.0, 1.0, 0x7f800000u); }
  // zero row: scale 1 (every x is +-0, quantized through the finite path)
  if (amaxBits == 0u) { return RowQuant(KIND_FINITE, 0, 1.0, 1.0, 0x3f800000u); }
  // amax = 1.frac * 2^e; ap = amax * 2^k in [1, 2), k = -e, built from the bits
  let ef = amaxBits >> 23u;
  var e: i32;
  var frac: u32;
  if (ef != 0u) {
    e = i32(ef) - 127;
    frac = amaxBits & 0x7fffffu;
  } else {
    let p = firstLeadingBit(amaxBits);
    e = i32(p) - 149;
    frac = (amaxBits << (23u - p)) & 0x7fffffu;
  }
  let k = -e;
  let ap = bitcast<f32>(0x3f800000u | frac);
  var kind = KIND_FINITE;
  var sp = ${reciprocal ? 'ap * factor' : 'ap / factor'};
  var scaleBits: u32;
  if (i32(bitcast<u32>(sp) >> 23u) - 127 - k >= -126) {
    // s = sp * 2^-k is normal: the same rounding, the exponent moved by k
    scaleBits = bitcast<u32>(bitcast<i32>(bitcast<u32>(sp)) - k * 8388608);
  } else {
    ${subnormalScale}
    scaleBits = n;
    if (n == 0u) {
      kind = KIND_INF_QUOTIENT;
      sp = 1.0;
    } else {
      sp = f32(n) * quant_pow2(k - 149);
    }
  }
  var invp: f32 = 1.0;
  ${
    reciprocal
      ? `// inv = fround(1/s) = invp * 2^k; inf when that exponent passes 127 (1/s is never subnormal)
  if (kind == KIND_FINITE) {
    invp = 1.0 / sp;
    if (i32(bitcast<u32>(invp) >> 23u) - 127 + k > 127) { kind = KIND_INF_QUOTIENT; }
  }`
      : ''
  }
  return RowQuant(kind, k, sp, invp, scaleBits);
}

// fp8 bits of bf16 element x (bits b) in a row with state rq
fn quant_bf16(b: u32, rq: RowQuant) -> u32 {
  let mag = b & 0x7fffu;
  let sgn = (b & 0x8000u) << 16u;
  if (rq.kind == KIND_NAN || mag > 0x7f80u) { return FP8_NAN; }
  if (rq.kind == KIND_INF_SCALE) {
    if (mag == 0x7f80u) { return FP8_NAN; }
    return f32_bits_to_fp8(sgn);
  }
  if (rq.kind == KIND_INF_QUOTIENT) {
    if (mag == 0u) { return FP8_NAN; }
    return f32_bits_to_fp8(sgn | 0x7f800000u);
  }
  if (mag == 0x7f80u) { return f32_bits_to_fp8(sgn | 0x7f800000u); }
  // |x'| = |x| 2^k = m 2^xe exactly; below 2^-126 the quotient is under 2^-100 and
  // quantizes to zero, so it is left at zero (s' and 1/inv' are at least 2^-10)
  let ef = mag >> 7u;
  var m = mag & 0x7fu;
  if (ef != 0u) { m = m | 0x80u; }
  let xe = i32(max(ef, 1u)) - 134 + rq.k;
  var xp: f32 = 0.0;
  if (xe >= -126) { xp = f32(m) * quant_pow2(xe); }
  let r = ${reciprocal ? 'xp * rq.invp' : 'xp / rq.sp'};
  return f32_bits_to_fp8(sgn | bitcast<u32>(r));
}
`;
}

// The row state scratch: written by the row pass, read by the element pass.
const STORE_ROW_QUANT_WGSL = `
fn store_row_quant(t: u32, rq: RowQuant) {
  let b = t * ${ROW_STATE_WORDS}u;
  rowState[b] = rq.kind;
  rowState[b + 1u] = bitcast<u32>(rq.k);
  rowState[b + 2u] = bitcast<u32>(rq.sp);
  rowState[b + 3u] = bitcast<u32>(rq.invp);
}`;
const LOAD_ROW_QUANT_WGSL = `
fn load_row_quant(t: u32) -> RowQuant {
  let b = t * ${ROW_STATE_WORDS}u;
  return RowQuant(rowState[b], bitcast<i32>(rowState[b + 1u]), bitcast<f32>(rowState[b + 2u]), bitcast<f32>(rowState[b + 3u]), 0u);
}`;

/** The bf16 source of the passes: x (input port 0) or bf(v) of the v scratch, read by elem_bits. */
function sourceOf(source: 'bf16' | 'gatedMean') {
  return source === 'bf16'
    ? { decl: buf('x', readInput(0)), elemBits: 'fn elem_bits(i: u32) -> u32 { return (x[i >> 1u] >> ((i & 1u) * 16u)) & 0xffffu; }' }
    : { decl: buf('v', readScratch('v')), elemBits: 'fn elem_bits(i: u32) -> u32 { return f32_to_bf16(bitcast<f32>(v[i])); }' };
}

/**
 * The row pass: amax over the row's bf16 elements (quantFp8PerToken's x, or bf(v) from the
 * v scratch for hcGatedMeanQuant), the row state and the scale bits (output port 1, or 2
 * after hcGatedMeanQuant's x and q).
 */
function rowsKernel(f: Fp8WgslFormat, style: QuantStyle, source: 'bf16' | 'gatedMean'): { wgsl: string; bindings: KernelBinding[] } {
  const src = sourceOf(source);
  const pre = preamble(
    ['rows', 'cols', 'groupsX', 'factorBits'],
    [src.decl, buf('scale', writeOutput(source === 'bf16' ? 1 : 2)), buf('rowState', writeScratch('rowState'))],
  );
  const wgsl = `${BF16_WGSL}${rowQuantWgsl(f, style)}
${pre.wgsl}
${src.elemBits}
${STORE_ROW_QUANT_WGSL}
${flatMain(
  WG,
  'u.rows',
  `// amax on the bits: |x| bits order as the values; any NaN makes the row NaN (torch.amax)
  var amax = 0u;
  var anyNaN = false;
  let start = inv * u.cols;
  for (var j = 0u; j < u.cols; j = j + 1u) {
    let a = elem_bits(start + j) & 0x7fffu;
    amax = max(amax, a);
    anyNaN = anyNaN || a > 0x7f80u;
  }
  let rq = row_quant(amax << 16u, anyNaN, bitcast<f32>(u.factorBits));
  scale[inv] = rq.scaleBits;
  store_row_quant(inv, rq);`,
)}`;
  return { wgsl, bindings: pre.bindings };
}

/**
 * The element pass: one invocation per fp8 output word (elements 4w..4w+3, rows looked up
 * per element since a word can straddle rows). The bf16 source is x (quantFp8PerToken) or
 * bf(v) from the v scratch (hcGatedMeanQuant, which also writes those bf16 words of x).
 */
function elementsKernel(f: Fp8WgslFormat, style: QuantStyle, source: 'bf16' | 'gatedMean'): { wgsl: string; bindings: KernelBinding[] } {
  const fused = source === 'gatedMean';
  const src = sourceOf(source);
  const outs = fused ? [buf('xOut', writeOutput(0)), buf('q', writeOutput(1))] : [buf('q', writeOutput(0))];
  const pre = preamble(['n', 'cols', 'words', 'groupsX'], [src.decl, buf('rowState', readScratch('rowState')), ...outs]);
  const writeX = fused
    ? `
  // the x words 2w and 2w+1 hold exactly this word's four elements
  for (var h = 0u; h < 2u; h = h + 1u) {
    let wx = 2u * inv + h;
    if (2u * wx < u.n) { xOut[wx] = bits[2u * h] | (bits[2u * h + 1u] << 16u); }
  }`
    : '';
  const wgsl = `${BF16_WGSL}${rowQuantWgsl(f, style)}
${pre.wgsl}
${src.elemBits}
${LOAD_ROW_QUANT_WGSL}
${flatMain(
  WG,
  'u.words',
  `var bits = array<u32, 4>(0u, 0u, 0u, 0u);
  var word = 0u;
  for (var c = 0u; c < 4u; c = c + 1u) {
    let i = 4u * inv + c;
    if (i < u.n) {
      bits[c] = elem_bits(i);
      word = word | (quant_bf16(bits[c], load_row_quant(i / u.cols)) << (8u * c));
    }
  }
  q[inv] = word;${writeX}`,
)}`;
  return { wgsl, bindings: pre.bindings };
}

/** hcGatedMeanQuant's first pass: v[t, j] = fround(acc / n), acc over the n streams in order. */
const GATED_MEAN = preamble(['count', 'h', 'n', 'groupsX'], [bf16Buf('up', readInput(0)), bf16Buf('normed', readInput(1)), buf('v', writeScratch('v'))]);
const GATED_MEAN_WGSL = `${FP32_MATH_WGSL}
${GATED_MEAN.wgsl}
${flatMain(
  WG,
  'u.count',
  `let t = inv / u.h;
  let base = t * u.n * u.h + inv % u.h;
  var acc: f32 = 0.0;
  for (var s = 0u; s < u.n; s = s + 1u) {
    let k = base + s * u.h;
    // a plain product then sum: SwiftShader keeps them unfused, as the CPU rounds each
    let p = sigmoid_f32(up_f32(k)) * normed_f32(k);
    acc = acc + p;
  }
  v[inv] = bitcast<u32>(acc / f32(u.n));`,
)}`;

function rowDispatch(key: string, kernel: { wgsl: string; bindings: KernelBinding[] }, rows: number, cols: number, factor: number): KernelDispatch {
  const grid = gridFor(rows, WG);
  return { key, ...kernel, uniforms: uniformWords([rows, cols, grid.groupsX, f32Bits(factor)]), workgroups: grid.workgroups };
}

function elementDispatch(key: string, kernel: { wgsl: string; bindings: KernelBinding[] }, n: number, cols: number): KernelDispatch {
  const words = Math.ceil(n / 4);
  return flatDispatch(key, kernel.wgsl, kernel.bindings, words, WG, [n, cols, words]);
}

/** Per-row quantization of a bf16 [rows, cols] input (port 0) into q (port 0) and scale (port 1). */
function bf16RowsPlan(op: string, inputs: (TensorInfo | null)[], attrs: Record<string, unknown>, style: QuantStyle): KernelPlan {
  const f = FP8_WGSL_FORMATS[attrs.format as Fp8Format];
  const [rows, cols] = inputs[0]!.shape;
  if (cols < 1) throw new Error(`${op}: ${op === 'quantFp8PerToken' ? 'x' : 'w'} has ${cols} columns, expected at least 1`);
  if (rows === 0) return { scratch: [], dispatches: [] };
  const tag = `${f.format}-${style}`;
  return {
    scratch: [{ name: 'rowState', words: rows * ROW_STATE_WORDS }],
    dispatches: [
      rowDispatch(`quantFp8PerToken-rows-${tag}`, rowsKernel(f, style, 'bf16'), rows, cols, quantScaleFactor(f, style)),
      elementDispatch(`quantFp8PerToken-elements-${tag}`, elementsKernel(f, style, 'bf16'), rows * cols, cols),
    ],
  };
}

export const quantFp8PerTokenPlanner: KernelPlanner = (inputs, _outputs, attrs): KernelPlan =>
  bf16RowsPlan('quantFp8PerToken', inputs, attrs, attrs.style as QuantStyle);

/** ATOM's online weight quantization is the separate kernel over the weight's rows. */
export const fp8QuantWeightPerChannelPlanner: KernelPlanner = (inputs, _outputs, attrs): KernelPlan =>
  bf16RowsPlan('fp8QuantWeightPerChannel', inputs, attrs, 'reciprocal');

export const hcGatedMeanQuantPlanner: KernelPlanner = (inputs, _outputs, attrs): KernelPlan => {
  const f = FP8_WGSL_FORMATS[attrs.format as Fp8Format];
  const style = attrs.style as QuantStyle;
  const n = attrs.streams as number;
  const [rows, width] = inputs[1]!.shape;
  const h = width / n;
  if (h < 1) throw new Error(`hcGatedMeanQuant: normed must be [rows, ${n}*H] with H >= 1, got [${rows},${width}]`);
  if (rows === 0) return { scratch: [], dispatches: [] };
  const count = rows * h;
  const tag = `${f.format}-${style}`;
  return {
    scratch: [
      { name: 'v', words: count },
      { name: 'rowState', words: rows * ROW_STATE_WORDS },
    ],
    dispatches: [
      flatDispatch('hcGatedMeanQuant-mean', GATED_MEAN_WGSL, GATED_MEAN.bindings, count, WG, [count, h, n]),
      rowDispatch(`hcGatedMeanQuant-rows-${tag}`, rowsKernel(f, style, 'gatedMean'), rows, h, quantScaleFactor(f, style)),
      elementDispatch(`hcGatedMeanQuant-elements-${tag}`, elementsKernel(f, style, 'gatedMean'), count, h),
    ],
  };
};
