import { describe, expect, it } from 'vitest';
import { gatedMean } from '../../hc/mix.ts';
import { bf16ArrayToF32, f32ArrayToBf16, f32ToBf16 } from '../../numerics/bf16.ts';
import { type Fp8Format, f32ToFp8, fp8Info } from '../../numerics/fp8.ts';
import { PRODUCTION_QUANT_STYLE, quantizeBf16RowsFp8 } from '../../numerics/quant.ts';
import { Rng } from '../../numerics/rng.ts';
import type { Tensor } from '../../tensor/tensor.ts';
import { cpuKernel } from './index.ts';

const quant = cpuKernel('quantFp8PerToken');
const fused = cpuKernel('hcGatedMeanQuant');

/** The next fp32 above a positive finite fp32. */
function nextUp(v: number): number {
  const b = new Float32Array([v]);
  new Uint32Array(b.buffer)[0]++;
  return b[0];
}

function bf16(shape: number[], data: Uint16Array): Tensor {
  return { dtype: 'bf16', shape, data };
}

function randomStreams(seed: number, rows: number, n: number, h: number): { up: Tensor; normed: Tensor } {
  const rng = new Rng(seed);
  return {
    up: bf16([rows, n * h], rng.fillBf16Normal(rows * n * h, 2)),
    normed: bf16([rows, n * h], rng.fillBf16Normal(rows * n * h, 1)),
  };
}

describe('quant CPU kernels', () => {
  it('quantFp8PerToken: q in the format dtype, f32 scales, equal to quantizeBf16RowsFp8', () => {
    const x = new Rng(1).fillBf16Normal(8 * 32, 1);
    for (const format of ['e4m3fn', 'e4m3fnuz'] as const) {
      const [q, scale] = quant([bf16([8, 32], x)], { format, style: 'reciprocal' });
      expect(q!.dtype).toBe(fp8Info(format).dtype);
      expect(q!.shape).toEqual([8, 32]);
      expect(scale!.dtype).toBe('f32');
      expect(scale!.shape).toEqual([8]);
      const want = quantizeBf16RowsFp8(x, 8, 32, format, 'reciprocal');
      expect(q!.data).toEqual(want.q);
      expect(scale!.data).toEqual(want.scale);
    }
  });

  it("hcGatedMeanQuant: x is bit-identical to hcGatedMean's 'atom' contract", () => {
    const rows = 48;
    const n = 4;
    const h = 64;
    const { up, normed } = randomStreams(2, rows, n, h);
    const [x] = fused([up, normed], { streams: n, format: 'e4m3fnuz', style: 'divide' });
    expect(x!.shape).toEqual([rows, h]);
    const want = gatedMean(up.data as Uint16Array, normed.data as Uint16Array, rows, h, n, 'atom');
    expect(x!.data).toEqual(want);
  });

  it('hcGatedMeanQuant: a hand-computed row (sigmoid(0) = 1/2, fp32 sums, one rounding)', () => {
    // n = 2, H = 2: x_j = (0.5*a_j + 0.5*b_j) / 2
    const up = bf16([1, 4], f32ArrayToBf16([0, 0, 0, 0]));
    const normed = bf16([1, 4], f32ArrayToBf16([1, -3, 2, 0.5]));
    const [x, q, scale] = fused([up, normed], { streams: 2, format: 'e4m3fn', style: 'divide' });
    expect(Array.from(bf16ArrayToF32(x!.data as Uint16Array))).toEqual([0.75, -0.625]);
    expect(scale!.data[0]).toBe(Math.fround(0.75 / 448));
    // 0.75 -> 448 (0x7E); -0.625 -> -373.3, between -352 and -384 (step 32): -384 = -1.5*2^8 (0xFC)
    expect(Array.from(q!.data)).toEqual([0x7e, 0xfc]);
  });

  it('hcGatedMeanQuant quantizes its bf16 x exactly as quantFp8PerToken does with the same style', () => {
    const rows = 64;
    const n = 4;
    const h = 128;
    const { up, normed } = randomStreams(3, rows, n, h);
    for (const format of ['e4m3fn', 'e4m3fnuz'] as const) {
      for (const style of ['divide', 'reciprocal'] as const) {
        const [x, q, scale] = fused([up, normed], { streams: n, format, style });
        expect(q!.dtype).toBe(fp8Info(format).dtype);
        const [sq, sscale] = quant([x!], { format, style });
        expect(q!.data).toEqual(sq!.data);
        expect(scale!.data).toEqual(sscale!.data);
      }
    }
  });

  it('production pairing (fused divide vs separate reciprocal): the separate scale is the fused one or one ulp above, q at most one step apart', () => {
    const rows = 64;
    const { up, normed } = randomStreams(3, rows, 4, 128);
    for (const format of ['e4m3fn', 'e4m3fnuz'] as const) {
      const [x, q, scale] = fused([up, normed], { streams: 4, format, style: PRODUCTION_QUANT_STYLE.fused });
      const [sq, sscale] = quant([x!], { format, style: PRODUCTION_QUANT_STYLE.separate });
      let differ = 0;
      for (let t = 0; t < rows; t++) {
        const a = scale!.data[t];
        const b = sscale!.data[t];
        if (a !== b) differ++;
        // fl(1/max) lies above 1/max for both formats, so the separate scale never falls below
        expect(b === a || b === nextUp(a)).toBe(true);
      }
      const ord = (v: number) => (v & 0x80 ? -(v & 0x7f) : v);
      const qa = q!.data as Uint8Array;
      const qb = sq!.data as Uint8Array;
      let steps = 0;
      for (let i = 0; i < qa.length; i++) steps = Math.max(steps, Math.abs(ord(qa[i]) - ord(qb[i])));
      expect(differ).toBeGreaterThan(0);
      expect(differ).toBeLessThan(rows);
      expect(steps).toBeLessThanOrEqual(1);
    }
  });

  // One constructed row per format, x = normed / 2 (n = 1, sigmoid(0) = 1/2 exactly):
  //   e4m3fn:   amax 77/64,   fused scale 77/64 / 448 = 11/4096 exactly; separate
  //             77/64 * fl(1/448) = 11/4096 (1 + 192 2^-32) -> 11/4096 + 2^-32 (ulp 2^-32 in [2^-9, 2^-8));
  //   e4m3fnuz: amax 165/128, fused 165/128 / 240 = 11/2048 exactly; separate
  //             11/2048 (1 + 112 2^-31) -> 11/2048 + 2^-31 (ulp 2^-31 in [2^-8, 2^-7)).
  // Element x = 4.75 * fused scale (209/16384 resp. 209/8192): fused x/s = 4.75 exactly, an
  // fp8 tie between 4.5 and 5 -> 5 (even); separate x * fl(1/s) is just below 4.75 -> 4.5.
  // The amax element maps to fp8_max in both.
  const ONE_ULP_ROWS = [
    { format: 'e4m3fn', amax: 77 / 64, fusedScale: 11 / 4096, ulp: 2 ** -32, tieX: 209 / 16384, maxBits: 0x7e, five: 0x4a, fourHalf: 0x49 },
    { format: 'e4m3fnuz', amax: 165 / 128, fusedScale: 11 / 2048, ulp: 2 ** -31, tieX: 209 / 8192, maxBits: 0x7f, five: 0x52, fourHalf: 0x51 },
  ] as const;
  for (const c of ONE_ULP_ROWS) {
    it(`the two kernels' scales differ by exactly one fp32 ulp on a constructed row (${c.format})`, () => {
      const row = [c.amax, c.tieX, -0.5 * c.amax, 0];
      const up = bf16([1, 4], f32ArrayToBf16([0, 0, 0, 0]));
      const normed = bf16([1, 4], f32ArrayToBf16(row.map((v) => 2 * v)));
      const [x, fq, fscale] = fused([up, normed], { streams: 1, format: c.format, style: 'divide' });
      expect(Array.from(bf16ArrayToF32(x!.data as Uint16Array))).toEqual(row);
      const [sq, sscale] = quant([x!], { format: c.format, style: 'reciprocal' });
      expect(fscale!.data[0]).toBe(c.fusedScale);
      expect(sscale!.data[0]).toBe(c.fusedScale + c.ulp);
      expect(nextUp(c.fusedScale)).toBe(c.fusedScale + c.ulp);
      expect([fq!.data[0], fq!.data[1]]).toEqual([c.maxBits, c.five]);
      expect([sq!.data[0], sq!.data[1]]).toEqual([c.maxBits, c.fourHalf]);
    });
  }

  it("fp8QuantWeightPerChannel: ATOM's online per-row weight quantization (the separate kernel's arithmetic)", () => {
    // row 0: amax 77/64 -> 11/4096 + 2^-32 (above); row 1: amax 7 = 448 * 2^-6 -> exactly
    // 2^-6 (fl(1/448)'s excess is below half an ulp), q = 448, 224, -112; row 2: zero -> 1, q 0
    const w = bf16([3, 3], f32ArrayToBf16([77 / 64, -0.5, 0, 7, 3.5, -1.75, 0, 0, 0]));
    const [q, scale] = cpuKernel('fp8QuantWeightPerChannel')([w], { format: 'e4m3fn' });
    expect(q!.dtype).toBe('fp8e4m3fn');
    expect(Array.from(scale!.data)).toEqual([11 / 4096 + 2 ** -32, 2 ** -6, 1]);
    expect(Array.from((q!.data as Uint8Array).subarray(3))).toEqual([f32ToFp8(448, 'e4m3fn'), f32ToFp8(224, 'e4m3fn'), f32ToFp8(-112, 'e4m3fn'), 0, 0, 0]);
  });

  describe('fp8LinearPtpc', () => {
    const linear = cpuKernel('fp8LinearPtpc');
    const fp8 = (format: Fp8Format, shape: number[], values: number[]): Tensor => ({
      dtype: fp8Info(format).dtype,
      shape,
      data: Uint8Array.from(values, (v) => f32ToFp8(v, format)),
    });
    const f32 = (values: number[]): Tensor => ({ dtype: 'f32', shape: [values.length], data: Float32Array.from(values) });

    it('equals an independent computation: exact fp8 products summed exactly, then the two scales in order, one bf16 rounding', () => {
      // values m * 2^(e-3), m in 8..15, e in -1..2 (exact in both formats): products have at
      // most 8 bits above 2^-8, and 32 of them stay below 2^11, so every fp32 partial sum is
      // exact and the double sum is the fp32 accumulator in any order
      const rng = new Rng(9);
      const value = () => (rng.int(0, 8) === 0 ? 0 : (rng.int(0, 2) ? -1 : 1) * rng.int(8, 16) * 2 ** (rng.int(-1, 3) - 3));
      const [rows, k, out] = [5, 32, 6];
      for (const format of ['e4m3fn', 'e4m3fnuz'] as const) {
        const xv = Array.from({ length: rows * k }, value);
        const wv = Array.from({ length: out * k }, value);
        const sx = Array.from({ length: rows }, () => Math.fround(rng.nextFloat() * 0.02 + 1e-4));
        const sw = Array.from({ length: out }, () => Math.fround(rng.nextFloat() * 0.002 + 1e-5));
        for (const scaleOrder of ['weightFirst', 'tokenFirst'] as const) {
          const [y] = linear([fp8(format, [rows, k], xv), f32(sx), fp8(format, [out, k], wv), f32(sw)], { format, scaleOrder });
          expect(y!.shape).toEqual([rows, out]);
          const want = new Uint16Array(rows * out);
          for (let t = 0; t < rows; t++) {
            for (let o = 0; o < out; o++) {
              let acc = 0;
              for (let j = 0; j < k; j++) acc += xv[t * k + j] * wv[o * k + j];
              const fr = Math.fround;
              want[t * out + o] = f32ToBf16(scaleOrder === 'weightFirst' ? fr(fr(acc * sw[o]) * sx[t]) : fr(fr(acc * sx[t]) * sw[o]));
            }
          }
          expect(y!.data).toEqual(want);
        }
      }
    });

    it('the scale order decides a bf16 tie (hand-computed, K = 1)', () => {
      // q = 448 on both sides, acc = 200704; sx = fl(1.03125 fl(1/448)), sw = fl(1.625 fl(1/448)):
      // weight first lands on the tie 1.67578125 (-> even 0x3FD6), token first one fp32 ulp
      // above (-> 0x3FD7); see layers/fp8Linear.test.ts
      const fr = Math.fround;
      const inputs = [fp8('e4m3fn', [1, 1], [448]), f32([fr(1.03125 * fr(1 / 448))]), fp8('e4m3fn', [1, 1], [448]), f32([fr(1.625 * fr(1 / 448))])];
      expect(linear(inputs, { format: 'e4m3fn', scaleOrder: 'weightFirst' })[0]!.data[0]).toBe(0x3fd6);
      expect(linear(inputs, { format: 'e4m3fn', scaleOrder: 'tokenFirst' })[0]!.data[0]).toBe(0x3fd7);
    });

    it('refuses operands of another format and scales of the wrong length', () => {
      const q = fp8('e4m3fn', [1, 2], [1, 2]);
      expect(() => linear([q, f32([1]), q, f32([1])], { format: 'e4m3fnuz', scaleOrder: 'weightFirst' })).toThrow(/fp8e4m3fnuz/);
      expect(() => linear([q, f32([1, 2]), q, f32([1])], { format: 'e4m3fn', scaleOrder: 'weightFirst' })).toThrow(/input 'sx' is \[2\], expected \[1\]/);
    });
  });

  it('rejects bad attributes and shapes by value', () => {
    const { up, normed } = randomStreams(4, 2, 4, 8);
    expect(() => fused([up, normed], { streams: 4, format: 'e5m2', style: 'divide' })).toThrow(
      /attribute 'format' must be one of e4m3fn, e4m3fnuz, got "e5m2"/,
    );
    expect(() => fused([up, normed], { streams: 4, format: 'e4m3fn', style: 'mul' })).toThrow(/attribute 'style' must be one of .*, got "mul"/);
    expect(() => fused([up, normed], { streams: 5, format: 'e4m3fn', style: 'divide' })).toThrow(/input 'normed': 32 columns do not split into 5 equal parts/);
    const short = bf16([2, 16], new Uint16Array(32));
    expect(() => fused([short, normed], { streams: 4, format: 'e4m3fn', style: 'divide' })).toThrow(/\[2,16\]/);
    expect(() => quant([{ dtype: 'f32', shape: [2, 2], data: new Float32Array(4) }], { format: 'e4m3fn', style: 'divide' })).toThrow(/f32/);
  });
});
