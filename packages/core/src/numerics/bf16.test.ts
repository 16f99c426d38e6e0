import { describe, expect, it } from 'vitest';
import { BF16_QNAN, bf16ArrayToF32, bf16ToF32, f32ArrayToBf16, f32ToBf16, roundBf16 } from './bf16.ts';

const f = new Float32Array(1);
const u = new Uint32Array(f.buffer);
/** The fp32 value with bit pattern `bits`. */
function f32FromBits(bits: number): number {
  u[0] = bits >>> 0;
  return f[0];
}
function isNaNPattern(b: number): boolean {
  return (b & 0x7f80) === 0x7f80 && (b & 0x007f) !== 0;
}

describe('bf16 <-> fp32', () => {
  it('decode then encode is the identity on all 65,536 non-NaN patterns; every NaN becomes 0x7FC0', () => {
    let identity = 0;
    let nans = 0;
    const bad: string[] = [];
    for (let b = 0; b < 0x10000; b++) {
      const v = bf16ToF32(b);
      // decoding is a 16-bit shift: check it against the bit pattern directly
      f[0] = v;
      if (isNaNPattern(b)) {
        if (!Number.isNaN(v) || f32ToBf16(v) !== BF16_QNAN) bad.push(`NaN 0x${b.toString(16)}`);
        nans++;
      } else {
        if (u[0] !== (b << 16) >>> 0 || f32ToBf16(v) !== b) bad.push(`0x${b.toString(16)}`);
        identity++;
      }
    }
    expect(bad).toEqual([]);
    // 2 signs x 127 nonzero mantissas of the all-ones exponent are NaN
    expect(nans).toBe(254);
    expect(identity).toBe(65536 - 254);
  });

  it('array forms agree with the scalar forms on all patterns', () => {
    const all = new Uint16Array(0x10000);
    for (let b = 0; b < 0x10000; b++) all[b] = b;
    const vals = bf16ArrayToF32(all);
    const back = f32ArrayToBf16(vals);
    const bad: number[] = [];
    for (let b = 0; b < 0x10000; b++) {
      const same = Object.is(vals[b], bf16ToF32(b)) || (Number.isNaN(vals[b]) && Number.isNaN(bf16ToF32(b)));
      if (!same || back[b] !== (isNaNPattern(b) ? BF16_QNAN : b)) bad.push(b);
    }
    expect(bad).toEqual([]);
  });

  it('rounds exact halfway cases to even, both ways', () => {
    // 1 + 2^-8 is halfway between 1 (0x3F80, even) and 1 + 2^-7 (0x3F81): down to even
    expect(f32ToBf16(f32FromBits(0x3f808000))).toBe(0x3f80);
    // 1 + 3*2^-8 is halfway between 0x3F81 (odd) and 0x3F82 (even): up to even
    expect(f32ToBf16(f32FromBits(0x3f818000))).toBe(0x3f82);
    // negative halfway cases round the magnitude the same way
    expect(f32ToBf16(f32FromBits(0xbf808000))).toBe(0xbf80);
    expect(f32ToBf16(f32FromBits(0xbf818000))).toBe(0xbf82);
    // just below / above halfway
    expect(f32ToBf16(f32FromBits(0x3f807fff))).toBe(0x3f80);
    expect(f32ToBf16(f32FromBits(0x3f808001))).toBe(0x3f81);
    expect(f32ToBf16(f32FromBits(0x3f817fff))).toBe(0x3f81);
    // a halfway case whose round-up carries into the exponent: 2 - 2^-8 -> 2
    expect(f32ToBf16(f32FromBits(0x3fffc000))).toBe(0x4000);
    expect(roundBf16(1.00390625)).toBe(1); // 1 + 2^-8, a tie to even
    expect(roundBf16(1.01171875)).toBe(1.015625); // 1 + 3*2^-8, a tie to even (up)
  });

  it('overflows to +-inf past the largest bf16 and keeps infinities', () => {
    const maxBf16 = bf16ToF32(0x7f7f); // 3.3895e38
    expect(f32ToBf16(maxBf16)).toBe(0x7f7f);
    // halfway between max bf16 and 2^128: ties to even (0x7F80 = inf, even)
    expect(f32ToBf16(f32FromBits(0x7f7f8000))).toBe(0x7f80);
    expect(f32ToBf16(f32FromBits(0x7f7f7fff))).toBe(0x7f7f);
    expect(f32ToBf16(f32FromBits(0x7f7fffff))).toBe(0x7f80); // largest fp32
    expect(f32ToBf16(f32FromBits(0xff7fffff))).toBe(0xff80);
    expect(f32ToBf16(Infinity)).toBe(0x7f80);
    expect(f32ToBf16(-Infinity)).toBe(0xff80);
    // a double beyond fp32 range first rounds to fp32 inf
    expect(f32ToBf16(1e39)).toBe(0x7f80);
  });

  it('handles subnormals, -0 and NaN', () => {
    expect(f32ToBf16(0)).toBe(0x0000);
    expect(f32ToBf16(-0)).toBe(0x8000);
    expect(Object.is(bf16ToF32(0x8000), -0)).toBe(true);
    // smallest bf16 subnormal 2^-133
    expect(bf16ToF32(0x0001)).toBe(2 ** -133);
    expect(f32ToBf16(2 ** -133)).toBe(0x0001);
    // fp32 subnormal 2^-149 is below half the smallest bf16 subnormal: rounds to 0 (and -0)
    expect(f32ToBf16(2 ** -149)).toBe(0x0000);
    expect(f32ToBf16(-(2 ** -149))).toBe(0x8000);
    // exactly half of 2^-133 is a tie: to even (0)
    expect(f32ToBf16(2 ** -134)).toBe(0x0000);
    // 1.5 * 2^-133 is a tie between 0x0001 (odd) and 0x0002 (even)
    expect(f32ToBf16(1.5 * 2 ** -133)).toBe(0x0002);
    // largest subnormal rounding up into the smallest normal
    expect(f32ToBf16(f32FromBits(0x007fffff))).toBe(0x0080);
    // every NaN input, signalling, negative or with payload, gives the quiet NaN
    for (const bits of [0x7fc00000, 0xffc00000, 0x7f800001, 0xff800001, 0x7fbfffff, 0x7fffffff]) {
      expect(f32ToBf16(f32FromBits(bits))).toBe(BF16_QNAN);
    }
    expect(f32ToBf16(NaN)).toBe(BF16_QNAN);
  });
});
