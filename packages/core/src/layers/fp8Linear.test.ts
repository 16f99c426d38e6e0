import { describe, expect, it } from 'vitest';
import { bf16ArrayToF32, bf16ToF32, f32ArrayToBf16 } from '../numerics/bf16.ts';
import { type Fp8Format, fp8ArrayToF32, fp8ToF32 } from '../numerics/fp8.ts';
import { quantizeBf16RowsFp8 } from '../numerics/quant.ts';
import { Rng } from '../numerics/rng.ts';
import { rowScaledError } from '../numerics/rowScaledError.ts';
import { fp8LinearPtpc, PTPC_SCALE_ORDER_OF_GEMM, quantizeWeightPerChannel } from './fp8Linear.ts';

const fr = Math.fround;
const FORMATS: Fp8Format[] = ['e4m3fn', 'e4m3fnuz'];

describe('FP8 PTPC linear', () => {
  it('per-channel weight scales use the separate kernel arithmetic: fl(amax * fl(1/max)), one per output row', () => {
    // row 0: amax 77/64 (fused scale would be exactly 11/4096; the reciprocal one is one ulp
    // above, see quant.test.ts); row 1: amax 448 * 2^-6 = 7, scale exactly 2^-6 (the excess
    // of fl(1/448), 192 * 2^-32 relative, is below half an ulp); row 2: zero -> scale 1
    const w = f32ArrayToBf16([77 / 64, -0.5, 0, 7, 3.5, -1.75, 0, 0, 0]);
    const { q, scale } = quantizeWeightPerChannel(w, 3, 3, 'e4m3fn');
    expect(scale[0]).toBe(11 / 4096 + 2 ** -32);
    expect(scale[1]).toBe(2 ** -6);
    expect(scale[2]).toBe(1);
    expect(Array.from(q.subarray(3, 6), (b) => fp8ToF32(b, 'e4m3fn'))).toEqual([448, 224, -112]);
    expect(Array.from(q.subarray(6))).toEqual([0, 0, 0]);
  });

  it('hand-computed: lossless operands give the exact dot product, rounded once to bf16', () => {
    // x = [28, 14, -7] = 2^-4 * [448, 224, -112]; w rows: 2^-6 * [448, 224, 112] and
    // 2^-5 * [-448, 0, 448]: every scale is a power of two and every q exact
    // row 0: 28*7 + 14*3.5 - 7*1.75 = 232.75 -> bf16 (step 1 in [128, 256)) 233
    // row 1: -28*14 + 0 - 7*14 = -490 -> bf16 (step 2 in [256, 512)) -490
    const x = quantizeBf16RowsFp8(f32ArrayToBf16([28, 14, -7]), 1, 3, 'e4m3fn', 'reciprocal');
    const w = quantizeWeightPerChannel(f32ArrayToBf16([7, 3.5, 1.75, -14, 0, 14]), 2, 3, 'e4m3fn');
    expect(Array.from(x.scale)).toEqual([2 ** -4]);
    expect(Array.from(w.scale)).toEqual([2 ** -6, 2 ** -5]);
    for (const order of ['weightFirst', 'tokenFirst'] as const) {
      expect(Array.from(bf16ArrayToF32(fp8LinearPtpc(x, w, 1, 3, 2, 'e4m3fn', order)))).toEqual([233, -490]);
    }
  });

  it('the epilogue order decides a bf16 tie (constructed: K = 1)', () => {
    // x = [1.03125], w = [1.625]: both quantize to q = 448 (1.03125 * fl(1/sx) = 447.99997
    // rounds to 448), acc = 448^2 = 200704, and the dequantized product is
    // 1.03125 * 1.625 = 1.67578125, a bf16 tie between 1.671875 and 1.6796875.
    const sx = fr(1.03125 * fr(1 / 448));
    const sw = fr(1.625 * fr(1 / 448));
    const wf = fr(fr(200704 * sw) * sx);
    const tf = fr(fr(200704 * sx) * sw);
    // weight first lands exactly on the tie (to even: 1.671875, 0x3FD6); token first lands
    // one fp32 ulp above it (1.6796875, 0x3FD7)
    expect(wf).toBe(1.67578125);
    expect(tf).toBe(1.67578125 + 2 ** -23);
    const x = quantizeBf16RowsFp8(f32ArrayToBf16([1.03125]), 1, 1, 'e4m3fn', 'reciprocal');
    const w = quantizeWeightPerChannel(f32ArrayToBf16([1.625]), 1, 1, 'e4m3fn');
    expect([x.scale[0], w.scale[0]]).toEqual([sx, sw]);
    expect([fp8ToF32(x.q[0], 'e4m3fn'), fp8ToF32(w.q[0], 'e4m3fn')]).toEqual([448, 448]);
    expect(fp8LinearPtpc(x, w, 1, 1, 1, 'e4m3fn', 'weightFirst')[0]).toBe(0x3fd6);
    expect(fp8LinearPtpc(x, w, 1, 1, 1, 'e4m3fn', 'tokenFirst')[0]).toBe(0x3fd7);
    expect(PTPC_SCALE_ORDER_OF_GEMM).toEqual({ ck: 'weightFirst', cktile: 'tokenFirst' });
  });

  it('random rows: within one row-scale bf16 ulp of the float64 dequantized product', () => {
    const rows = 24;
    const inF = 256;
    const outF = 40;
    const rng = new Rng(5);
    const xBits = rng.fillBf16Normal(rows * inF, 1);
    const wBits = rng.fillBf16Normal(outF * inF, 0.05);
    for (const format of FORMATS) {
      const x = quantizeBf16RowsFp8(xBits, rows, inF, format, 'reciprocal');
      const w = quantizeWeightPerChannel(wBits, outF, inF, format);
      const xv = fp8ArrayToF32(x.q, format);
      const wv = fp8ArrayToF32(w.q, format);
      const ref = new Float64Array(rows * outF);
      for (let t = 0; t < rows; t++) {
        for (let o = 0; o < outF; o++) {
          let acc = 0;
          for (let k = 0; k < inF; k++) acc += xv[t * inF + k] * wv[o * inF + k];
          ref[t * outF + o] = acc * x.scale[t] * w.scale[o];
        }
      }
      for (const order of ['weightFirst', 'tokenFirst'] as const) {
        const got = fp8LinearPtpc(x, w, rows, inF, outF, format, order);
        const err = rowScaledError(got, f32ArrayToBf16(ref), rows, outF);
        expect(err.maxRowUlp).toBeLessThanOrEqual(1);
        expect(err.differing / (rows * outF)).toBeLessThan(0.02);
      }
      // and the quantized product stays close to the bf16 product: |err| << row scale
      const approx = bf16ArrayToF32(fp8LinearPtpc(x, w, rows, inF, outF, format, 'weightFirst'));
      const xf = bf16ArrayToF32(xBits);
      const wf = bf16ArrayToF32(wBits);
      let worst = 0;
      let scale = 0;
      for (let t = 0; t < rows; t++) {
        for (let o = 0; o < outF; o++) {
          let acc = 0;
          for (let k = 0; k < inF; k++) acc += xf[t * inF + k] * wf[o * inF + k];
          worst = Math.max(worst, Math.abs(approx[t * outF + o] - acc));
          scale = Math.max(scale, Math.abs(acc));
        }
      }
      // e4m3 keeps 3 mantissa bits: relative error per element <= 2^-4, averaging over K
      expect(worst / scale).toBeLessThan(0.1);
    }
  });

  it('a zero activation row gives +0 outputs; NaN scales propagate', () => {
    const x = quantizeBf16RowsFp8(f32ArrayToBf16([0, 0, 1, NaN]), 2, 2, 'e4m3fnuz', 'reciprocal');
    const w = quantizeWeightPerChannel(f32ArrayToBf16([1, -1]), 1, 2, 'e4m3fnuz');
    const y = fp8LinearPtpc(x, w, 2, 2, 1, 'e4m3fnuz', 'tokenFirst');
    expect(y[0]).toBe(0);
    expect(bf16ToF32(y[1])).toBeNaN();
  });

  it('rejects bad shapes and orders by value', () => {
    const x = quantizeBf16RowsFp8(new Uint16Array(6), 2, 3, 'e4m3fn', 'reciprocal');
    const w = quantizeWeightPerChannel(new Uint16Array(6), 2, 3, 'e4m3fn');
    expect(() => fp8LinearPtpc(x, w, 2, 3, 3, 'e4m3fn', 'weightFirst')).toThrow(/w has 6 values, expected 3x3/);
    expect(() => fp8LinearPtpc(x, { q: w.q, scale: new Float32Array(1) }, 2, 3, 2, 'e4m3fn', 'weightFirst')).toThrow(/w needs 2 scales, got 1/);
    expect(() => fp8LinearPtpc(x, w, 2, 3, 2, 'e4m3fn', 'both' as 'weightFirst')).toThrow(/'both'/);
  });
});
