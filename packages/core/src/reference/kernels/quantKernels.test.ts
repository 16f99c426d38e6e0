import { describe, expect, it } from 'vitest';
import { gatedMean } from '../../hc/mix.ts';
import { bf16ArrayToF32, f32ArrayToBf16 } from '../../numerics/bf16.ts';
import { fp8Info } from '../../numerics/fp8.ts';
import { quantizeBf16RowsFp8 } from '../../numerics/quant.ts';
import { Rng } from '../../numerics/rng.ts';
import type { Tensor } from '../../tensor/tensor.ts';
import { cpuKernel } from './index.ts';

const quant = cpuKernel('quantFp8PerToken');
const fused = cpuKernel('hcGatedMeanQuant');

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

  it('hcGatedMeanQuant: amax is over the fp32 means, so it differs from quantizing x separately', () => {
    const rows = 64;
    const n = 4;
    const h = 128;
    const { up, normed } = randomStreams(3, rows, n, h);
    for (const format of ['e4m3fn', 'e4m3fnuz'] as const) {
      for (const style of ['divide', 'reciprocal'] as const) {
        const [x, q, scale] = fused([up, normed], { streams: n, format, style });
        expect(q!.dtype).toBe(fp8Info(format).dtype);
        const [sq, sscale] = quant([x!], { format, style });
        let scalesDiffer = 0;
        let worstRel = 0;
        for (let t = 0; t < rows; t++) {
          const a = scale!.data[t];
          const b = sscale!.data[t];
          if (a !== b) scalesDiffer++;
          worstRel = Math.max(worstRel, Math.abs(a - b) / b);
        }
        let maxSteps = 0;
        const qa = q!.data as Uint8Array;
        const qb = sq!.data as Uint8Array;
        const ord = (v: number) => (v & 0x80 ? -(v & 0x7f) : v);
        for (let i = 0; i < qa.length; i++) maxSteps = Math.max(maxSteps, Math.abs(ord(qa[i]) - ord(qb[i])));
        expect(scalesDiffer).toBeGreaterThan(0);
        expect(worstRel).toBeLessThanOrEqual(2 ** -8 + 2 ** -22);
        expect(maxSteps).toBeLessThanOrEqual(1);
      }
    }
  });

  it('rejects bad attributes and shapes by value', () => {
    const { up, normed } = randomStreams(4, 2, 4, 8);
    expect(() => fused([up, normed], { streams: 4, format: 'e5m2', style: 'divide' })).toThrow(/'e5m2'/);
    expect(() => fused([up, normed], { streams: 4, format: 'e4m3fn', style: 'mul' })).toThrow(/'mul'/);
    expect(() => fused([up, normed], { streams: 5, format: 'e4m3fn', style: 'divide' })).toThrow(/streams 5/);
    const short = bf16([2, 16], new Uint16Array(32));
    expect(() => fused([short, normed], { streams: 4, format: 'e4m3fn', style: 'divide' })).toThrow(/\[2,16\]/);
    expect(() => quant([{ dtype: 'f32', shape: [2, 2], data: new Float32Array(4) }], { format: 'e4m3fn', style: 'divide' })).toThrow(/f32/);
  });
});
