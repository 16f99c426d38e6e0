import { describe, expect, it } from 'vitest';
import { bf16ArrayToF32, f32ArrayToBf16 } from './bf16.ts';
import { type Fp8Format, fp8Info, fp8ToF32 } from './fp8.ts';
import { dequantizeRowsFp8, PRODUCTION_QUANT_STYLE, perTokenScale, quantizeBf16RowsFp8, quantizeFusedRowsFp8 } from './quant.ts';
import { Rng } from './rng.ts';

const FORMATS: Fp8Format[] = ['e4m3fn', 'e4m3fnuz'];

/** fp8 pattern on a monotone integer line (sign-magnitude), for step distances. */
function orderedFp8(b: number): number {
  return b & 0x80 ? -(b & 0x7f) : b;
}

/** fp32 bit pattern, for ulp distances of positive scales. */
function f32Bits(x: number): number {
  return new Uint32Array(new Float32Array([x]).buffer)[0];
}

/** Spacing of the fp8 grid at |v| (the step above |v|'s binade floor). */
function fp8Step(v: number, format: Fp8Format): number {
  const eMin = 1 - fp8Info(format).bias;
  const e = Math.max(Math.floor(Math.log2(Math.abs(v))), eMin);
  return 2 ** (e - 3);
}

const bf16Row = (values: number[]): Uint16Array => f32ArrayToBf16(values);

describe('per-token fp8 quantization', () => {
  it("scales: 'divide' fl(amax / max), 'reciprocal' fl(amax * fl(1 / max)); a zero row gets 1", () => {
    expect(perTokenScale(448, 'e4m3fn', 'divide')).toBe(1);
    expect(perTokenScale(240, 'e4m3fnuz', 'divide')).toBe(1);
    expect(perTokenScale(3, 'e4m3fn', 'divide')).toBe(Math.fround(3 / 448));
    expect(perTokenScale(3, 'e4m3fn', 'reciprocal')).toBe(Math.fround(3 * Math.fround(1 / 448)));
    for (const style of ['divide', 'reciprocal'] as const) {
      expect(perTokenScale(0, 'e4m3fn', style)).toBe(1);
      const r = quantizeBf16RowsFp8(bf16Row([0, 0, 0, -1, 2, 0.5]), 2, 3, 'e4m3fn', style);
      expect(r.scale[0]).toBe(1);
      expect(Array.from(r.q.subarray(0, 3))).toEqual([0, 0, 0]);
    }
    // the amax element maps to exactly +max
    const r = quantizeBf16RowsFp8(bf16Row([-1, 2, 0.5]), 1, 3, 'e4m3fn', 'divide');
    expect(r.scale[0]).toBe(Math.fround(2 / 448));
    expect(Array.from(r.q, (b) => fp8ToF32(b, 'e4m3fn'))).toEqual([-224, 448, 112]);
    expect(PRODUCTION_QUANT_STYLE).toEqual({ separate: 'reciprocal', fused: 'divide' });
  });

  // Constructed rows where the exact quotient amax / max is dyadic, so the fused scale is
  // exact and the separate scale is pushed one ulp up by fl(1/max) > 1/max:
  //   e4m3fn:   fl(1/448) = 9586981 * 2^-32 = (1/448)(1 + 192 * 2^-32); amax = 77/64 gives
  //             amax/448 = 11/4096, and amax * fl(1/448) = 11/4096 + 2112 * 2^-44, past half
  //             the ulp 2^-32 = 4096 * 2^-44, so it rounds up to 11/4096 + 2^-32.
  //   e4m3fnuz: fl(1/240) = 8947849 * 2^-31 = (1/240)(1 + 112 * 2^-31); amax = 165/128 gives
  //             amax/240 = 11/2048, and amax * fl(1/240) = 11/2048 + 1232 * 2^-42, past half
  //             the ulp 2^-31 = 2048 * 2^-42: 11/2048 + 2^-31.
  // The element x = 4.75 * scale_fused sits on an fp8 tie (4.75 between 4.5 and 5.0, step
  // 0.5): the fused kernel's x / scale is exactly 4.75 and goes to even (5.0); the separate
  // kernel's x * fl(1/scale_sep) is 4.75 - 2^-21 (one fp32 ulp below) and goes to 4.5.
  const CONSTRUCTED = [
    { format: 'e4m3fn' as const, amax: 77 / 64, fused: 11 / 4096, separate: 11 / 4096 + 2 ** -32, x: 4.75 * (11 / 4096), q45: 0x49, q50: 0x4a },
    { format: 'e4m3fnuz' as const, amax: 165 / 128, fused: 11 / 2048, separate: 11 / 2048 + 2 ** -31, x: 4.75 * (11 / 2048), q45: 0x51, q50: 0x52 },
  ];

  for (const c of CONSTRUCTED) {
    it(`${c.format}: on a constructed row the two kernels' scales differ by exactly one fp32 ulp`, () => {
      const row = bf16Row([c.amax, -c.x, 0.25]);
      // the row is exactly representable, so both kernels see these values
      expect(Array.from(bf16ArrayToF32(row))).toEqual([c.amax, -c.x, 0.25]);
      const fused = quantizeBf16RowsFp8(row, 1, 3, c.format, PRODUCTION_QUANT_STYLE.fused);
      const separate = quantizeBf16RowsFp8(row, 1, 3, c.format, PRODUCTION_QUANT_STYLE.separate);
      expect(fused.scale[0]).toBe(c.fused);
      expect(separate.scale[0]).toBe(c.separate);
      expect(f32Bits(separate.scale[0]) - f32Bits(fused.scale[0])).toBe(1);
      // the amax element maps to +max in both (separate: 447.99997 / 239.99998 rounds to max)
      expect(fused.q[0]).toBe(separate.q[0]);
      expect(fp8ToF32(fused.q[0], c.format)).toBe(fp8Info(c.format).max);
    });

    it(`${c.format}: on the same row one element's q differs by one fp8 step (a tie broken apart)`, () => {
      const row = bf16Row([c.amax, c.x, -c.x]);
      expect(bf16ArrayToF32(row)[1]).toBe(c.x);
      const fused = quantizeBf16RowsFp8(row, 1, 3, c.format, 'divide');
      const separate = quantizeBf16RowsFp8(row, 1, 3, c.format, 'reciprocal');
      expect(fused.q[1]).toBe(c.q50);
      expect(separate.q[1]).toBe(c.q45);
      expect(fp8ToF32(c.q50, c.format)).toBe(5);
      expect(fp8ToF32(c.q45, c.format)).toBe(4.5);
      // the sign is symmetric
      expect(fused.q[2]).toBe(0x80 | c.q50);
      expect(separate.q[2]).toBe(0x80 | c.q45);
    });
  }

  it('the two styles on random bf16 rows: scales 0 or 1 ulp apart on about half the rows, q rarely one step', () => {
    const rows = 400;
    const cols = 256;
    const x = new Rng(1).fillBf16Normal(rows * cols, 1);
    for (const format of FORMATS) {
      const div = quantizeBf16RowsFp8(x, rows, cols, format, 'divide');
      const rec = quantizeBf16RowsFp8(x, rows, cols, format, 'reciprocal');
      let scaleDiffer = 0;
      for (let t = 0; t < rows; t++) {
        const d = f32Bits(rec.scale[t]) - f32Bits(div.scale[t]);
        // fl(1/max) > 1/max for both formats, so the separate scale is never below
        expect(d === 0 || d === 1).toBe(true);
        if (d) scaleDiffer++;
      }
      let differ = 0;
      let maxSteps = 0;
      for (let i = 0; i < div.q.length; i++) {
        const d = Math.abs(orderedFp8(div.q[i]) - orderedFp8(rec.q[i]));
        if (d) differ++;
        maxSteps = Math.max(maxSteps, d);
      }
      // numerics.md: "the scales differ by at most 1 fp32 ulp (in roughly half the rows)"
      expect(scaleDiffer / rows).toBeGreaterThan(0.3);
      expect(scaleDiffer / rows).toBeLessThan(0.8);
      expect(differ).toBeGreaterThan(0);
      expect(differ / div.q.length).toBeLessThan(0.002);
      expect(maxSteps).toBe(1);
    }
  });

  it('dequantized values are within half an fp8 step (times the scale) of the input', () => {
    const rows = 64;
    const cols = 128;
    const rng = new Rng(2);
    const v = new Float32Array(rows * cols);
    // rows of very different magnitudes, including tiny values that land on fp8 subnormals
    for (let t = 0; t < rows; t++) {
      const mag = 2 ** rng.int(-20, 20);
      for (let j = 0; j < cols; j++) v[t * cols + j] = rng.normal() * mag;
    }
    const xBits = f32ArrayToBf16(v);
    const x = bf16ArrayToF32(xBits);
    for (const format of FORMATS) {
      for (const style of ['divide', 'reciprocal'] as const) {
        const { q, scale } = quantizeBf16RowsFp8(xBits, rows, cols, format, style);
        const deq = dequantizeRowsFp8(q, scale, rows, cols, format);
        let worst = 0;
        let deqMismatch = 0;
        for (let t = 0; t < rows; t++) {
          for (let j = 0; j < cols; j++) {
            const i = t * cols + j;
            const e = fp8ToF32(q[i], format);
            // error in units of the fp8 step at e, measured on the unrounded real ratio
            const err = Math.abs(x[i] / scale[t] - e) / fp8Step(e === 0 ? 2 ** -20 : e, format);
            worst = Math.max(worst, err);
            if (deq[i] !== Math.fround(e * scale[t])) deqMismatch++;
          }
        }
        expect(deqMismatch).toBe(0);
        // half a step, plus the fp32 roundings of the scale, reciprocal and ratio
        expect(worst).toBeLessThanOrEqual(0.5 + 2 ** -18);
      }
    }
  });

  it('saturates a ratio just past max instead of writing the NaN pattern', () => {
    // 'divide': 1.0234375 / fl(1.0234375/448) = 448.00003 in fp32; saturation keeps 448 (0x7E)
    const a = 1.0234375;
    expect(Math.fround(a / Math.fround(a / 448))).toBeGreaterThan(448);
    expect(Array.from(quantizeBf16RowsFp8(bf16Row([a, -a]), 1, 2, 'e4m3fn', 'divide').q)).toEqual([0x7e, 0xfe]);
    // fnuz 'divide': 1.09375 / fl(1.09375/240) = 240.000015 -> 240 (0x7F, the fnuz maximum)
    const b = 1.09375;
    expect(Math.fround(b / Math.fround(b / 240))).toBeGreaterThan(240);
    expect(quantizeBf16RowsFp8(bf16Row([b]), 1, 1, 'e4m3fnuz', 'divide').q[0]).toBe(0x7f);
  });

  it('fused: rounds the fp32 means to bf16, then quantizes exactly as the kernel does on those bf16 values', () => {
    const rows = 300;
    const cols = 128;
    const rng = new Rng(4);
    const v = new Float32Array(rows * cols);
    for (let i = 0; i < v.length; i++) v[i] = rng.normal();
    for (const format of FORMATS) {
      const fused = quantizeFusedRowsFp8(v, rows, cols, format, 'divide');
      expect(fused.x).toEqual(f32ArrayToBf16(v));
      const sep = quantizeBf16RowsFp8(fused.x, rows, cols, format, 'divide');
      expect(fused.q).toEqual(sep.q);
      expect(fused.scale).toEqual(sep.scale);
      // amax is a bf16 value: the scale is fl(amax/max) of the largest |x|, never of |v|
      const xv = bf16ArrayToF32(fused.x);
      for (let t = 0; t < rows; t++) {
        let amax = 0;
        for (let j = 0; j < cols; j++) amax = Math.max(amax, Math.abs(xv[t * cols + j]));
        expect(fused.scale[t]).toBe(Math.fround(amax / fp8Info(format).max));
      }
    }
  });

  it('a value above half a bf16 ulp over the fp32 amax: the bf16 amax moves the scale, not saturation', () => {
    // v0 = 1.00390625 + 2^-20 rounds up to 1.0078125; the scale comes from 1.0078125
    const v = new Float32Array([1.00390625 + 2 ** -20, 0.5]);
    const r = quantizeFusedRowsFp8(v, 1, 2, 'e4m3fn', 'divide');
    expect(Array.from(bf16ArrayToF32(r.x))).toEqual([1.0078125, 0.5]);
    expect(r.scale[0]).toBe(Math.fround(1.0078125 / 448));
    expect(fp8ToF32(r.q[0], 'e4m3fn')).toBe(448);
  });

  it('NaN in a row gives a NaN scale and NaN elements; other rows are untouched', () => {
    const x = bf16Row([1, NaN, 2, 4, 1, 2]);
    for (const style of ['divide', 'reciprocal'] as const) {
      const r = quantizeBf16RowsFp8(x, 2, 3, 'e4m3fn', style);
      expect(r.scale[0]).toBeNaN();
      expect(Array.from(r.q.subarray(0, 3))).toEqual([0x7f, 0x7f, 0x7f]);
      expect(r.scale[1]).toBe(perTokenScale(4, 'e4m3fn', style));
    }
  });

  it('rejects bad shapes, styles and formats by value', () => {
    const x = new Uint16Array(6);
    expect(() => quantizeBf16RowsFp8(x, 4, 2, 'e4m3fn', 'divide')).toThrow(/4x2 needs 8 elements, got 6/);
    expect(() => quantizeBf16RowsFp8(x, 2, 3, 'e4m3fn', 'mul' as 'divide')).toThrow(/'mul'/);
    expect(() => quantizeBf16RowsFp8(x, 2, 3, 'e5m2' as Fp8Format, 'divide')).toThrow(/'e5m2'/);
    expect(() => quantizeBf16RowsFp8(x, -1, 3, 'e4m3fn', 'divide')).toThrow(/rows -1/);
    expect(() => perTokenScale(1, 'e4m3fn', 'mul' as 'divide')).toThrow(/'mul'/);
    expect(() => dequantizeRowsFp8(new Uint8Array(6), new Float32Array(1), 2, 3, 'e4m3fn')).toThrow(/2 scales, got 1/);
  });
});
