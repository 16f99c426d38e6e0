import { describe, expect, it } from 'vitest';
import { type Fp8Format, FP8_FORMATS, f32ArrayToFp8, f32ToFp8, fp8ArrayToF32, fp8FormatOfDtype, fp8Info, fp8ToF32, isFp8NaN } from './fp8.ts';

const FORMATS: Fp8Format[] = ['e4m3fn', 'e4m3fnuz'];

/** Independent reference: the finite non-negative values of a format, by brute force. */
function finitePositiveGrid(format: Fp8Format): { bits: number; value: number }[] {
  const grid: { bits: number; value: number }[] = [];
  for (let b = 0; b < 0x80; b++) if (!isFp8NaN(b, format)) grid.push({ bits: b, value: fp8ToF32(b, format) });
  return grid.sort((p, q) => p.value - q.value);
}

/** Nearest grid value by search, ties to the even pattern, saturating past the largest. */
function referenceEncode(x: number, format: Fp8Format): number {
  const { max, nanBits, hasNegativeZero } = fp8Info(format);
  if (Number.isNaN(x)) return nanBits;
  const neg = x < 0 || Object.is(x, -0);
  const a = Math.min(Math.abs(x), max);
  let best = 0;
  let bestErr = Infinity;
  for (const { bits, value } of finitePositiveGrid(format)) {
    const err = Math.abs(value - a);
    if (err < bestErr || (err === bestErr && bits % 2 === 0)) {
      best = bits;
      bestErr = err;
    }
  }
  if (!neg) return best;
  return best === 0 && !hasNegativeZero ? 0 : best | 0x80;
}

describe('fp8 e4m3 formats', () => {
  it('pins the format constants and a few decoded values', () => {
    expect(fp8ToF32(0x7e, 'e4m3fn')).toBe(448);
    expect(fp8ToF32(0x7f, 'e4m3fnuz')).toBe(240);
    expect(fp8ToF32(0x01, 'e4m3fn')).toBe(2 ** -9); // smallest subnormal, bias 7
    expect(fp8ToF32(0x01, 'e4m3fnuz')).toBe(2 ** -10); // bias 8
    expect(fp8ToF32(0x08, 'e4m3fn')).toBe(2 ** -6); // smallest normal
    expect(fp8ToF32(0x38, 'e4m3fn')).toBe(1);
    expect(fp8ToF32(0x40, 'e4m3fnuz')).toBe(1);
    expect(fp8ToF32(0xb8, 'e4m3fn')).toBe(-1);
    expect(Object.is(fp8ToF32(0x80, 'e4m3fn'), -0)).toBe(true);
    expect(fp8ToF32(0x7f, 'e4m3fn')).toBeNaN();
    expect(fp8ToF32(0xff, 'e4m3fn')).toBeNaN();
    expect(fp8ToF32(0x80, 'e4m3fnuz')).toBeNaN();
    expect(fp8ToF32(0xff, 'e4m3fnuz')).toBe(-240);
    expect(FP8_FORMATS.e4m3fn.dtype).toBe('fp8e4m3fn');
    expect(fp8FormatOfDtype('fp8e4m3fnuz')).toBe('e4m3fnuz');
  });

  for (const format of FORMATS) {
    it(`${format}: all 256 patterns decode then encode to themselves; NaNs to the canonical NaN`, () => {
      const info = fp8Info(format);
      const bad: number[] = [];
      let nanCount = 0;
      for (let b = 0; b < 256; b++) {
        const v = fp8ToF32(b, format);
        if (isFp8NaN(b, format)) {
          nanCount++;
          if (!Number.isNaN(v) || f32ToFp8(v, format) !== info.nanBits) bad.push(b);
        } else if (f32ToFp8(v, format) !== b) bad.push(b);
      }
      expect(bad).toEqual([]);
      expect(nanCount).toBe(format === 'e4m3fn' ? 2 : 1);
    });

    it(`${format}: encoding matches a brute-force nearest-even search at every midpoint and around it`, () => {
      const grid = finitePositiveGrid(format);
      const inputs: number[] = [];
      for (let i = 0; i + 1 < grid.length; i++) {
        const lo = grid[i].value;
        const hi = grid[i + 1].value;
        const mid = (lo + hi) / 2; // exact: fp8 values have few bits
        for (const x of [lo, mid, Math.fround(mid * (1 - 2 ** -20)), Math.fround(mid * (1 + 2 ** -20)), hi]) inputs.push(x, -x);
      }
      inputs.push(0, -0, 1e-30, -1e-30, 2 ** -149, 300, 1000, -1000, 3.4e38, Infinity, -Infinity);
      const bad: string[] = [];
      for (const x of inputs) {
        const got = f32ToFp8(x, format);
        const want = referenceEncode(x, format);
        if (got !== want) bad.push(`${x}: got 0x${got.toString(16)} want 0x${want.toString(16)}`);
      }
      expect(bad).toEqual([]);
    });
  }

  it('the same bits decode to half the value in fnuz for every normal number', () => {
    const bad: number[] = [];
    for (let b = 0; b < 256; b++) {
      const expField = (b >>> 3) & 0xf;
      if (expField === 0 || isFp8NaN(b, 'e4m3fn') || isFp8NaN(b, 'e4m3fnuz')) continue;
      if (fp8ToF32(b, 'e4m3fnuz') !== fp8ToF32(b, 'e4m3fn') / 2) bad.push(b);
    }
    expect(bad).toEqual([]);
    // subnormals too (same mantissa grid, one more bias)
    expect(fp8ToF32(0x05, 'e4m3fnuz')).toBe(fp8ToF32(0x05, 'e4m3fn') / 2);
  });

  it('saturates finite out-of-range values and infinities to +-max; NaN stays NaN', () => {
    expect(f32ToFp8(449, 'e4m3fn')).toBe(0x7e);
    expect(f32ToFp8(464, 'e4m3fn')).toBe(0x7e); // would round to 480 (the NaN pattern) without saturation
    expect(f32ToFp8(1e6, 'e4m3fn')).toBe(0x7e);
    expect(f32ToFp8(-1e6, 'e4m3fn')).toBe(0xfe);
    expect(f32ToFp8(Infinity, 'e4m3fn')).toBe(0x7e);
    expect(f32ToFp8(248, 'e4m3fnuz')).toBe(0x7f);
    expect(f32ToFp8(-1e30, 'e4m3fnuz')).toBe(0xff);
    expect(f32ToFp8(-Infinity, 'e4m3fnuz')).toBe(0xff);
    expect(f32ToFp8(NaN, 'e4m3fn')).toBe(0x7f);
    expect(f32ToFp8(NaN, 'e4m3fnuz')).toBe(0x80);
  });

  it('rounds ties to even', () => {
    // between 1 (0x38) and 1.125 (0x39): 1.0625 -> 1 (even); 1.1875 between 0x39 and 0x3A -> 0x3A
    expect(f32ToFp8(1.0625, 'e4m3fn')).toBe(0x38);
    expect(f32ToFp8(1.1875, 'e4m3fn')).toBe(0x3a);
    expect(f32ToFp8(-1.0625, 'e4m3fn')).toBe(0xb8);
    // 15.5 is halfway between 15 (0x57, odd) and 16 (0x58): up, carrying into the exponent
    expect(f32ToFp8(15.5, 'e4m3fn')).toBe(0x58);
    // 432 is halfway between 416 (0x7D, odd) and 448 (0x7E, even)
    expect(f32ToFp8(432, 'e4m3fn')).toBe(0x7e);
    expect(f32ToFp8(Math.fround(432 - 2 ** -10), 'e4m3fn')).toBe(0x7d);
    // 232 is halfway between 224 (0x7E, even) and 240 (0x7F) in fnuz
    expect(f32ToFp8(232, 'e4m3fnuz')).toBe(0x7e);
  });

  it('handles subnormals, -0 and tiny values', () => {
    // smallest fn subnormal 2^-9; half of it is a tie to 0, just above rounds up
    expect(f32ToFp8(2 ** -9, 'e4m3fn')).toBe(0x01);
    expect(f32ToFp8(2 ** -10, 'e4m3fn')).toBe(0x00);
    expect(f32ToFp8(Math.fround(2 ** -10 * 1.001), 'e4m3fn')).toBe(0x01);
    expect(f32ToFp8(3 * 2 ** -10, 'e4m3fn')).toBe(0x02); // tie between 1 and 2 subnormal steps: even
    expect(f32ToFp8(7.5 * 2 ** -9, 'e4m3fn')).toBe(0x08); // largest subnormal tie rounds into the first normal
    expect(f32ToFp8(-0, 'e4m3fn')).toBe(0x80);
    expect(f32ToFp8(-(2 ** -12), 'e4m3fn')).toBe(0x80);
    // fnuz has no -0: negative zero and negative values rounding to zero give 0x00, never the NaN
    expect(f32ToFp8(-0, 'e4m3fnuz')).toBe(0x00);
    expect(f32ToFp8(-(2 ** -12), 'e4m3fnuz')).toBe(0x00);
    expect(f32ToFp8(-(2 ** -10), 'e4m3fnuz')).toBe(0x81);
  });

  it('array forms agree with the scalar forms', () => {
    const xs = [0, 1, -2.5, 300, -0.001, NaN, 1e9];
    for (const format of FORMATS) {
      const q = f32ArrayToFp8(xs, format);
      expect(Array.from(q)).toEqual(xs.map((x) => f32ToFp8(x, format)));
      const back = fp8ArrayToF32(q, format);
      expect(Array.from(back)).toEqual(Array.from(q).map((b) => Math.fround(fp8ToF32(b, format))));
    }
  });

  it('rejects unknown formats and bad bytes by name', () => {
    expect(() => f32ToFp8(1, 'e5m2' as Fp8Format)).toThrow(/e5m2/);
    expect(() => fp8ToF32(256, 'e4m3fn')).toThrow(/256/);
    expect(() => fp8FormatOfDtype('bf16')).toThrow(/bf16/);
  });
});
