// FP8 E4M3 in its two incompatible variants (numerics.md "FP8 E4M3"):
//   e4m3fn   (OCP; gfx950, NVIDIA): bias 7, max 448, NaN = S.1111.111, has -0, no inf.
//   e4m3fnuz (gfx942, MI300/MI308X): bias 8, max 240, NaN only 0x80, no -0, no inf.
// Both have 3 mantissa bits and subnormals (exponent field 0). The encoder is the
// saturating conversion the quant kernels use: round-to-nearest-even, then finite values
// beyond the largest finite clamp to +-max. Decision (not in the spec): +-inf also
// saturates to +-max, as the saturating hardware conversions do (NVIDIA __NV_SATFINITE,
// AMD's clamping cvt); NaN stays NaN.
import type { DType } from '../tensor/tensor.ts';

export type Fp8Format = 'e4m3fn' | 'e4m3fnuz';

export interface Fp8FormatInfo {
  readonly format: Fp8Format;
  /** the tensor dtype that stores this format */
  readonly dtype: DType;
  readonly bias: number;
  /** largest finite value */
  readonly max: number;
  /** the NaN the encoder writes */
  readonly nanBits: number;
  readonly hasNegativeZero: boolean;
}

export const FP8_FORMATS: Readonly<Record<Fp8Format, Fp8FormatInfo>> = {
  e4m3fn: { format: 'e4m3fn', dtype: 'fp8e4m3fn', bias: 7, max: 448, nanBits: 0x7f, hasNegativeZero: true },
  e4m3fnuz: { format: 'e4m3fnuz', dtype: 'fp8e4m3fnuz', bias: 8, max: 240, nanBits: 0x80, hasNegativeZero: false },
};

export function fp8Info(format: Fp8Format): Fp8FormatInfo {
  const info = (FP8_FORMATS as Record<string, Fp8FormatInfo | undefined>)[format];
  if (!info) throw new Error(`unknown fp8 format '${String(format)}' (expected 'e4m3fn' or 'e4m3fnuz')`);
  return info;
}

/** The fp8 format stored by a tensor dtype. */
export function fp8FormatOfDtype(dtype: DType): Fp8Format {
  if (dtype === 'fp8e4m3fn') return 'e4m3fn';
  if (dtype === 'fp8e4m3fnuz') return 'e4m3fnuz';
  throw new Error(`dtype '${dtype}' is not an fp8 dtype`);
}

export function isFp8NaN(bits: number, format: Fp8Format): boolean {
  if (format === 'e4m3fnuz') return (bits & 0xff) === 0x80;
  fp8Info(format);
  return (bits & 0x7f) === 0x7f;
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** 2^k for k in [-126, 127], built from its bits (exact in every engine, unlike Math.pow). */
function pow2(k: number): number {
  u32[0] = (k + 127) << 23;
  return f32[0];
}

/** Round a non-negative double to the nearest integer, ties to even. */
function roundHalfEven(v: number): number {
  const fl = Math.floor(v);
  const d = v - fl;
  if (d > 0.5) return fl + 1;
  if (d < 0.5) return fl;
  return fl % 2 === 0 ? fl : fl + 1;
}

/** fp32 (a JS number, first rounded to fp32) -> fp8 bits, RNE, saturating. */
export function f32ToFp8(x: number, format: Fp8Format): number {
  const info = fp8Info(format);
  f32[0] = x;
  const bits = u32[0];
  const v = f32[0];
  if (v !== v) return info.nanBits;
  const negative = bits >>> 31 === 1;
  const a = Math.min(Math.abs(v), info.max);
  // Exponent of a (fp32 subnormals read as -127), raised to the smallest normal fp8
  // exponent so that subnormals share one grid: step 2^(e-3) for 3 mantissa bits.
  const eMin = 1 - info.bias;
  f32[0] = a; // a is an fp32 (|v| or max), so this is exact
  const e = Math.max(((u32[0] >>> 23) & 0xff) - 127, eMin);
  const q = roundHalfEven(a * pow2(3 - e)); // exact: scaling by a power of two
  // q is in [0, 16]; q = 16 carries into the next exponent and this formula still holds.
  const magnitude = (e - eMin) * 8 + q;
  if (!negative) return magnitude;
  if (magnitude === 0 && !info.hasNegativeZero) return 0x00;
  return 0x80 | magnitude;
}

/** fp8 bits -> its exact value (an fp32, as a JS number). */
export function fp8ToF32(bits: number, format: Fp8Format): number {
  const info = fp8Info(format);
  if (!Number.isInteger(bits) || bits < 0 || bits > 0xff) throw new Error(`fp8 bits ${bits} are not a byte`);
  if (isFp8NaN(bits, format)) return NaN;
  const expField = (bits >>> 3) & 0xf;
  const mant = bits & 0x7;
  const magnitude = expField === 0 ? mant * pow2(-2 - info.bias) : (8 + mant) * pow2(expField - info.bias - 3);
  return bits & 0x80 ? -magnitude : magnitude;
}

/** Encode fp32 values to fp8 bits. */
export function f32ArrayToFp8(src: Float32Array | number[], format: Fp8Format): Uint8Array {
  const out = new Uint8Array(src.length);
  for (let i = 0; i < src.length; i++) out[i] = f32ToFp8(src[i], format);
  return out;
}

/** Decode fp8 bits to fp32 values (exact). */
export function fp8ArrayToF32(src: Uint8Array, format: Fp8Format): Float32Array {
  const table = decodeTable(format);
  const out = new Float32Array(src.length);
  for (let i = 0; i < src.length; i++) out[i] = table[src[i]];
  return out;
}

const decodeTables: Partial<Record<Fp8Format, Float32Array>> = {};
function decodeTable(format: Fp8Format): Float32Array {
  let t = decodeTables[format];
  if (!t) {
    t = new Float32Array(256);
    for (let b = 0; b < 256; b++) t[b] = fp8ToF32(b, format);
    decodeTables[format] = t;
  }
  return t;
}
