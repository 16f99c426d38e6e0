// bf16 <-> fp32 with round-to-nearest-even, done on the fp32 bit pattern exactly as
// numerics.md states: (u + 0x7FFF + ((u >> 16) & 1)) >> 16, NaN -> 0x7FC0 (quiet).
const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

export const BF16_QNAN = 0x7fc0;

/** fp32 (any JS number, first rounded to fp32) -> bf16 bits, RNE. */
export function f32ToBf16(x: number): number {
  f32[0] = x;
  const u = u32[0];
  if ((u & 0x7f800000) === 0x7f800000 && (u & 0x007fffff) !== 0) return BF16_QNAN;
  return ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) & 0xffff;
}

/** bf16 bits -> its exact fp32 value. */
export function bf16ToF32(bits: number): number {
  u32[0] = (bits & 0xffff) << 16;
  return f32[0];
}

/** bf(x): round a JS number to fp32, then to bf16, and return the value. */
export function roundBf16(x: number): number {
  return bf16ToF32(f32ToBf16(x));
}

/** Decode a whole bf16 array to fp32 values (exact). */
export function bf16ArrayToF32(src: Uint16Array): Float32Array {
  const out = new Float32Array(src.length);
  const outBits = new Uint32Array(out.buffer);
  for (let i = 0; i < src.length; i++) outBits[i] = src[i] << 16;
  return out;
}

/** Encode fp32 values to bf16 bits (RNE). */
export function f32ArrayToBf16(src: Float32Array | Float64Array | number[]): Uint16Array {
  const out = new Uint16Array(src.length);
  for (let i = 0; i < src.length; i++) out[i] = f32ToBf16(src[i]);
  return out;
}
