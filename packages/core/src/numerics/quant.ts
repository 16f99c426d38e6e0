// Per-token (row) fp8 quantization (numerics.md "Per-token (row) quantization").
// Both production kernels take amax over the same bf16 values (the fused kernel first rounds
// its gated mean to bf16, as it must for its bf16 output); they differ only in arithmetic:
//   'reciprocal' (the separate kernel, aiter dynamic_per_token_scaled_quant behind
//     per_token_quant_hip; also ATOM's online per-channel weight quantization):
//     scale = fl(amax * fl(1 / fp8_max)), q = cvt(fl(x * rcp(scale)));
//   'divide' (the fused hc_gated_mean_quant kernel):
//     scale = fl(amax / fp8_max),         q = cvt(fl(x / scale)).
// rcp is the GPU's v_rcp_f32 (__builtin_amdgcn_rcpf); it is modelled as the correctly
// rounded fl(1 / scale), which the hardware result need not equal (it is documented to
// about 1 ulp). fl(1 / fp8_max) is aiter's `1. / max` in double, then converted to fp32:
// the same as Math.fround(1 / max). A zero row gets scale 1 and q = 0 (aiter's kernel
// would compute scale 0 and rcp(0) = inf; the spec's scale 1 is kept, see fp8-heads.md).
// cvt (fp8.ts) rounds to nearest even and saturates, as v_med3_f32 + v_cvt_pk_fp8_f32 do.
// Non-finite inputs follow IEEE: a NaN in a row makes its amax and scale NaN and every
// element of the row the fp8 NaN; an infinity makes the scale inf (finite elements -> 0).
import { bf16ArrayToF32, f32ToBf16 } from './bf16.ts';
import { type Fp8Format, f32ToFp8, fp8Info, fp8ToF32 } from './fp8.ts';

export type QuantStyle = 'divide' | 'reciprocal';
export const QUANT_STYLES: readonly QuantStyle[] = ['divide', 'reciprocal'];

/** The arithmetic each production kernel uses. */
export const PRODUCTION_QUANT_STYLE = { separate: 'reciprocal', fused: 'divide' } as const satisfies Record<string, QuantStyle>;

export interface RowQuant {
  /** fp8 bits, [rows, cols] */
  q: Uint8Array;
  /** fp32 scale per row: x ~ decode(q) * scale */
  scale: Float32Array;
}

const fr = Math.fround;

function checkStyle(style: QuantStyle): void {
  if (style !== 'divide' && style !== 'reciprocal') {
    throw new Error(`unknown quant style '${String(style)}' (expected 'divide' or 'reciprocal')`);
  }
}

function checkShape(what: string, length: number, rows: number, cols: number): void {
  if (!Number.isSafeInteger(rows) || rows < 0) throw new Error(`${what}: rows ${rows} must be an integer >= 0`);
  if (!Number.isSafeInteger(cols) || cols < 1) throw new Error(`${what}: cols ${cols} must be an integer >= 1`);
  if (length !== rows * cols) throw new Error(`${what}: ${rows}x${cols} needs ${rows * cols} elements, got ${length}`);
}

/** max |v| over one row, in order; a NaN anywhere makes it NaN (as torch.amax). */
function rowAmax(v: Float32Array, start: number, cols: number): number {
  let amax = 0;
  for (let j = 0; j < cols; j++) {
    const a = Math.abs(v[start + j]);
    if (a > amax || a !== a) amax = a;
    if (amax !== amax) break;
  }
  return amax;
}

/**
 * The per-token scale of a row with absolute maximum `amax` (1 for a zero row):
 * 'divide' fl(amax / max), 'reciprocal' fl(amax * fl(1 / max)); without a style, the fused
 * kernel's 'divide'.
 */
export function perTokenScale(amax: number, format: Fp8Format, style: QuantStyle = 'divide'): number {
  checkStyle(style);
  const max = fp8Info(format).max;
  if (amax === 0) return 1;
  return style === 'divide' ? fr(amax / max) : fr(amax * fr(1 / max));
}

/** Per-token quantization of bf16 rows (bit patterns), amax over the same values. */
export function quantizeBf16RowsFp8(x: Uint16Array, rows: number, cols: number, format: Fp8Format, style: QuantStyle): RowQuant {
  checkShape('quantizeBf16RowsFp8', x.length, rows, cols);
  fp8Info(format);
  checkStyle(style);
  const v = bf16ArrayToF32(x);
  const q = new Uint8Array(rows * cols);
  const scale = new Float32Array(rows);
  for (let t = 0; t < rows; t++) {
    const base = t * cols;
    const s = perTokenScale(rowAmax(v, base, cols), format, style);
    scale[t] = s;
    if (style === 'divide') {
      for (let j = 0; j < cols; j++) q[base + j] = f32ToFp8(fr(v[base + j] / s), format);
    } else {
      const inv = fr(1 / s);
      for (let j = 0; j < cols; j++) q[base + j] = f32ToFp8(fr(v[base + j] * inv), format);
    }
  }
  return { q, scale };
}

/**
 * The fused kernel's output stage: `v` holds its fp32 gated means (before rounding); it
 * writes x = bf(v) and quantizes those bf16 values, amax over them (not over v).
 */
export function quantizeFusedRowsFp8(v: Float32Array, rows: number, cols: number, format: Fp8Format, style: QuantStyle): RowQuant & { x: Uint16Array } {
  checkShape('quantizeFusedRowsFp8', v.length, rows, cols);
  const x = new Uint16Array(v.length);
  for (let i = 0; i < v.length; i++) x[i] = f32ToBf16(v[i]);
  return { x, ...quantizeBf16RowsFp8(x, rows, cols, format, style) };
}

/** decode(q) * scale per row, in fp32 (one rounding: the fp8 value times the scale). */
export function dequantizeRowsFp8(q: Uint8Array, scale: Float32Array, rows: number, cols: number, format: Fp8Format): Float32Array {
  checkShape('dequantizeRowsFp8', q.length, rows, cols);
  if (scale.length !== rows) throw new Error(`dequantizeRowsFp8: ${rows} rows need ${rows} scales, got ${scale.length}`);
  const out = new Float32Array(q.length);
  for (let t = 0; t < rows; t++) {
    for (let j = 0; j < cols; j++) out[t * cols + j] = fr(fp8ToF32(q[t * cols + j], format) * scale[t]);
  }
  return out;
}
