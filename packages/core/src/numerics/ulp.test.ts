import { describe, expect, it } from 'vitest';
import { f32ArrayToBf16, f32ToBf16 } from './bf16.ts';
import { allClose, allCloseBf16, bf16UlpDistance, compareBf16, isClose } from './ulp.ts';

describe('bf16 ulp distance', () => {
  it('counts representable steps, across zero and up to infinity', () => {
    expect(bf16UlpDistance(0x3f80, 0x3f80)).toBe(0);
    expect(bf16UlpDistance(0x3f80, 0x3f81)).toBe(1);
    expect(bf16UlpDistance(0x3f81, 0x3f80)).toBe(1);
    // 2 - 1ulp (0x3FFF) to 2 (0x4000) is one step across an exponent boundary
    expect(bf16UlpDistance(0x3fff, 0x4000)).toBe(1);
    // smallest positive and smallest negative subnormal are 2 apart (through the shared zero)
    expect(bf16UlpDistance(0x0001, 0x8001)).toBe(2);
    expect(bf16UlpDistance(0x0000, 0x8000)).toBe(0); // +0 and -0
    expect(bf16UlpDistance(0x7f7f, 0x7f80)).toBe(1); // max finite to +inf
    expect(bf16UlpDistance(0xff80, 0x7f80)).toBe(2 * 0x7f80); // -inf to +inf
    // 1 and -1: 0x3F80 each side of zero
    expect(bf16UlpDistance(f32ToBf16(1), f32ToBf16(-1))).toBe(2 * 0x3f80);
  });

  it('NaN is 0 from NaN and Infinity from anything else', () => {
    expect(bf16UlpDistance(0x7fc0, 0xffc1)).toBe(0);
    expect(bf16UlpDistance(0x7fc0, 0x7f80)).toBe(Infinity);
    expect(bf16UlpDistance(0x0000, 0x7f81)).toBe(Infinity);
  });

  it('rejects patterns that are not 16-bit integers', () => {
    expect(() => bf16UlpDistance(0x10000, 0)).toThrow(/65536/);
    expect(() => bf16UlpDistance(1.5, 0)).toThrow(/1\.5/);
  });

  it('is monotone: the distance between neighbours on the value line is 1 everywhere', () => {
    // walk all finite non-NaN patterns in value order and check consecutive distances
    const patterns: number[] = [];
    for (let b = 0xff80; b > 0x8000; b--) patterns.push(b); // -inf .. -smallest
    for (let b = 0; b <= 0x7f80; b++) patterns.push(b); // +0 .. +inf (-0 shares +0's place)
    let bad = 0;
    for (let i = 1; i < patterns.length; i++) if (bf16UlpDistance(patterns[i - 1], patterns[i]) !== 1) bad++;
    expect(bad).toBe(0);
  });
});

describe('compareBf16', () => {
  it('reports counts, max ulp, bit-exact fraction, histogram and first difference', () => {
    const expected = new Uint16Array([0x3f80, 0x3f80, 0x4000, 0x0000, 0x7fc0, 0x1234]);
    const actual = new Uint16Array([0x3f80, 0x3f81, 0x4003, 0x8000, 0x7fc0, 0x1234]);
    const r = compareBf16(actual, expected);
    expect(r).toEqual({
      count: 6,
      differing: 3,
      maxUlp: 3,
      bitExactFraction: 0.5,
      histogram: { 0: 4, 1: 1, 3: 1 }, // -0 vs +0 differs in bits but is 0 ulps
      firstDiffIndex: 1,
    });
  });

  it('reports Infinity when a NaN meets a number, and an all-equal input as exact', () => {
    const r = compareBf16(new Uint16Array([0x7fc0, 1]), new Uint16Array([0x3f80, 1]));
    expect(r.maxUlp).toBe(Infinity);
    expect(r.histogram[Infinity]).toBe(1);
    expect(r.firstDiffIndex).toBe(0);
    const same = compareBf16(new Uint16Array([5, 6]), new Uint16Array([5, 6]));
    expect(same).toEqual({ count: 2, differing: 0, maxUlp: 0, bitExactFraction: 1, histogram: { 0: 2 }, firstDiffIndex: -1 });
    expect(compareBf16(new Uint16Array(0), new Uint16Array(0)).bitExactFraction).toBe(1);
  });

  it('rejects arrays of different lengths', () => {
    expect(() => compareBf16(new Uint16Array(3), new Uint16Array(4))).toThrow(/3.*4/);
  });
});

describe('allClose', () => {
  it('uses |a - e| <= atol + rtol*|e|, relative to the expected value', () => {
    expect(isClose(1.1, 1, 0, 0.1 + 1e-12)).toBe(true);
    expect(isClose(1.1, 1, 0, 0.09)).toBe(false);
    expect(isClose(0, 1e-9, 1e-8, 0)).toBe(true);
    // asymmetric: rtol scales with the expected value, not the actual
    expect(isClose(2, 1, 0, 0.6)).toBe(false);
    expect(isClose(1, 2, 0, 0.6)).toBe(true);
    expect(allClose([1, 2, 3], [1, 2, 3.001], 0, 1e-3)).toBe(true);
    expect(allClose([1, 2, 3], [1, 2, 3.01], 0, 1e-3)).toBe(false);
  });

  it('NaN equals only NaN; infinities must match exactly', () => {
    expect(isClose(NaN, NaN, 0, 0)).toBe(true);
    expect(isClose(NaN, 1, 1e30, 1e30)).toBe(false);
    expect(isClose(1, NaN, 1e30, 1e30)).toBe(false);
    expect(isClose(Infinity, Infinity, 0, 0)).toBe(true);
    expect(isClose(Infinity, -Infinity, 0, 1e30)).toBe(false);
    expect(isClose(1e38, Infinity, 1e30, 1e30)).toBe(false);
    expect(isClose(Infinity, 1e38, 1e30, 1e30)).toBe(false);
  });

  it('compares bf16 patterns by value', () => {
    const e = f32ArrayToBf16([1, -2, 0]);
    const a = f32ArrayToBf16([1.0078125, -2, -0]); // one bf16 ulp above 1
    expect(allCloseBf16(a, e, 0, 2 ** -7)).toBe(true);
    expect(allCloseBf16(a, e, 0, 2 ** -8)).toBe(false);
  });

  it('rejects bad tolerances and length mismatches by value', () => {
    expect(() => allClose([1], [1], -1, 0)).toThrow(/atol -1/);
    expect(() => allClose([1], [1], 0, NaN)).toThrow(/rtol NaN/);
    expect(() => allClose([1], [1, 2], 0, 0)).toThrow(/1 elements.*2/);
  });
});
