// fp32 -> fp8 E4M3 (e4m3fn or e4m3fnuz) in WGSL, the saturating RNE conversion of
// core/numerics/fp8.ts f32ToFp8 done entirely with integer operations on the fp32 bits, so
// SwiftShader's subnormal flushing (DAZ) never touches it: NaN -> the format's NaN, |x|
// (inf included) clamped to max, exponent raised to the smallest normal fp8 exponent so
// subnormals share one grid of step 2^(e-3), q = RNE(a * 2^(3-e)), magnitude = (e-eMin)*8+q.
// The format constants are mirrored from core's FP8_FORMATS (the test checks they agree).

import { f32Bits } from '../kernels/planParts.ts';

export type Fp8Format = 'e4m3fn' | 'e4m3fnuz';

export interface Fp8WgslFormat {
  readonly format: Fp8Format;
  /** the tensor dtype that stores the format */
  readonly dtype: 'fp8e4m3fn' | 'fp8e4m3fnuz';
  readonly bias: number;
  /** largest finite value, = maxOdd * 2^maxPow2 (the scale's subnormal path divides by maxOdd in integers) */
  readonly max: number;
  readonly maxOdd: number;
  readonly maxPow2: number;
  readonly nanBits: number;
  readonly hasNegativeZero: boolean;
}

export const FP8_WGSL_FORMATS: Readonly<Record<Fp8Format, Fp8WgslFormat>> = {
  e4m3fn: { format: 'e4m3fn', dtype: 'fp8e4m3fn', bias: 7, max: 448, maxOdd: 7, maxPow2: 6, nanBits: 0x7f, hasNegativeZero: true },
  e4m3fnuz: { format: 'e4m3fnuz', dtype: 'fp8e4m3fnuz', bias: 8, max: 240, maxOdd: 15, maxPow2: 4, nanBits: 0x80, hasNegativeZero: false },
};

/**
 * WGSL constants FP8_MAX_BITS, FP8_MAX_ODD, FP8_MAX_POW2, FP8_NAN and
 * `fn f32_bits_to_fp8(u: u32) -> u32` (fp8 bits in the low byte) for one format.
 */
export function fp8EncodeWgsl(format: Fp8Format): string {
  const f = FP8_WGSL_FORMATS[format];
  const maxBits = `0x${f32Bits(f.max).toString(16)}u`;
  const negativeZero = f.hasNegativeZero ? '' : '\n  if (magnitude == 0u) { return 0u; }';
  return /* wgsl */ `
const FP8_MAX_BITS: u32 = ${maxBits};
const FP8_MAX_ODD: u32 = ${f.maxOdd}u;
const FP8_MAX_POW2: i32 = ${f.maxPow2};
const FP8_NAN: u32 = 0x${f.nanBits.toString(16)}u;
const FP8_EMIN: i32 = ${1 - f.bias};
fn f32_bits_to_fp8(u: u32) -> u32 {
  let absBits = u & 0x7fffffffu;
  if (absBits > 0x7f800000u) { return FP8_NAN; }
  // bit order is value order for non-negative floats: this is min(|x|, max), inf included
  let a = min(absBits, FP8_MAX_BITS);
  let ef = a >> 23u;
  var m = a & 0x7fffffu;
  if (ef != 0u) { m = m | 0x800000u; }
  // a = m * 2^(max(ef,1) - 150); e = its exponent (fp32 subnormals read as -127), at least eMin
  let e = max(i32(ef) - 127, FP8_EMIN);
  // q = RNE(a * 2^(3-e)) = RNE(m / 2^sh), sh >= 20; sh > 24 leaves less than half
  let sh = u32(147 + e - i32(max(ef, 1u)));
  var q = 0u;
  if (sh <= 24u) {
    q = m >> sh;
    let rem = m & ((1u << sh) - 1u);
    let half = 1u << (sh - 1u);
    if (rem > half || (rem == half && (q & 1u) == 1u)) { q = q + 1u; }
  }
  // q = 16 carries into the next exponent and this formula still holds
  let magnitude = u32((e - FP8_EMIN) * 8) + q;
  if ((u >> 31u) == 0u) { return magnitude; }${negativeZero}
  return 0x80u | magnitude;
}
`;
}

/**
 * WGSL `fn fp8_is_nan(b: u32) -> bool` and `fn fp8_to_f32(b: u32) -> f32` for one format:
 * the exact value of non-NaN fp8 bits b (low byte), as core's fp8ToF32. Built from the bits:
 * a subnormal fp8 is m 2^(-2-bias), a normal fp32 (no GPU flushing touches it).
 */
export function fp8DecodeWgsl(format: Fp8Format): string {
  const f = FP8_WGSL_FORMATS[format];
  const nanTest = f.format === 'e4m3fnuz' ? 'b == 0x80u' : '(b & 0x7fu) == 0x7fu';
  return /* wgsl */ `
fn fp8_is_nan(b: u32) -> bool { return ${nanTest}; }
fn fp8_to_f32(b: u32) -> f32 {
  let e = (b >> 3u) & 0xfu;
  let m = b & 7u;
  var mag: u32;
  if (e == 0u) {
    mag = bitcast<u32>(f32(m) * bitcast<f32>(${(127 - 2 - f.bias) << 23}u));
  } else {
    mag = ((e + ${127 - f.bias}u) << 23u) | (m << 20u);
  }
  return bitcast<f32>(((b & 0x80u) << 24u) | mag);
}
`;
}
