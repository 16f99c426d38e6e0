// Per-token (row) fp8 quantization (numerics.md "Per-token (row) quantization"):
//   scale = fround(amax(|x_row|) / fp8_max), a zero row gets scale 1;
//   q     = cvt(x / scale), RNE and saturating (fp8.ts).
// Two production styles: 'divide' computes fround(x / scale); 'reciprocal' computes
// fround(x * fround(1 / scale)). Both are one correctly rounded fp32 operation per step
// (a double division or product of fp32 values, rounded once to fp32, is the fp32 result).
// Two amax sources: the separate kernel reads the bf16 rows (quantizeRowsFp8 on decoded
// bf16 values, or quantizeBf16RowsFp8); the fused gated-mean+quant kernel takes amax over
// the fp32 values before their bf16 rounding (quantizeFusedRowsFp8).
// Non-finite inputs follow IEEE: a NaN in a row makes its amax and scale NaN and every
// element of the row the fp8 NaN; an infinity makes the scale inf (finite elements -> 0).
import { bf16ArrayToF32, f32ToBf16 } from './bf16.ts';
import { type Fp8Format, f32ToFp8, fp8Info, fp8ToF32 } from './fp8.ts';

export type QuantStyle = 'divide' | 'reciprocal';
export const QUANT_STYLES: readonly QuantStyle[] = ['divide', 'reciprocal'];

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

/** The per-token scale for a row with absolute maximum `amax`: fround(amax / max), 1 for a zero row. */
export function perTokenScale(amax: number, format: Fp8Format): number {
  return amax === 0 ? 1 : fr(amax / fp8Info(format).max);
}

/** Quantize the values of `x` with scales from the amax of `amaxSource` (same shape). */
function quantizeWithAmaxOf(
  x: Float32Array,
  amaxSource: Float32Array,
  rows: number,
  cols: number,
  format: Fp8Format,
  style: QuantStyle,
): RowQuant {
  fp8Info(format);
  checkStyle(style);
  const q = new Uint8Array(rows * cols);
  const scale = new Float32Array(rows);
  for (let t = 0; t < rows; t++) {
    const base = t * cols;
    const s = perTokenScale(rowAmax(amaxSource, base, cols), format);
    scale[t] = s;
    if (style === 'divide') {
      for (let j = 0; j < cols; j++) q[base + j] = f32ToFp8(fr(x[base + j] / s), format);
    } else {
      const inv = fr(1 / s);
      for (let j = 0; j < cols; j++) q[base + j] = f32ToFp8(fr(x[base + j] * inv), format);
    }
  }
  return { q, scale };
}

/** Per-token quantization of fp32 rows, amax over the same values (x must hold fp32 values). */
export function quantizeRowsFp8(x: Float32Array, rows: number, cols: number, format: Fp8Format, style: QuantStyle): RowQuant {
  checkShape('quantizeRowsFp8', x.length, rows, cols);
  return quantizeWithAmaxOf(x, x, rows, cols, format, style);
}

/** The separate per-token kernel: reads bf16 rows (bit patterns). */
export function quantizeBf16RowsFp8(x: Uint16Array, rows: number, cols: number, format: Fp8Format, style: QuantStyle): RowQuant {
  checkShape('quantizeBf16RowsFp8', x.length, rows, cols);
  const v = bf16ArrayToF32(x);
  return quantizeWithAmaxOf(v, v, rows, cols, format, style);
}

/**
 * The fused kernel's quantization of fp32 rows `v` (the gated mean before rounding): it
 * writes x = bf(v), takes amax over |v| (fp32, before the rounding) and quantizes the bf16
 * values x it wrote. Decision: numerics.md names only the amax source as the difference
 * from the separate kernel, so the quantized values are the same bf16 rows; bf(v) can
 * exceed amax by half a bf16 ulp, and the saturating conversion absorbs that.
 */
export function quantizeFusedRowsFp8(
  v: Float32Array,
  rows: number,
  cols: number,
  format: Fp8Format,
  style: QuantStyle,
): RowQuant & { x: Uint16Array } {
  checkShape('quantizeFusedRowsFp8', v.length, rows, cols);
  const x = new Uint16Array(v.length);
  for (let i = 0; i < v.length; i++) x[i] = f32ToBf16(v[i]);
  return { x, ...quantizeWithAmaxOf(bf16ArrayToF32(x), v, rows, cols, format, style) };
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
