import { describe, expect, it } from 'vitest';
import { f32ArrayToBf16, f32ToBf16, roundBf16 } from '../../numerics/bf16.ts';
import { type Fp8Format, f32ToFp8, fp8Info } from '../../numerics/fp8.ts';
import { siluF32 } from '../../numerics/fp32Math.ts';
import { cpuKernel } from '../../reference/kernels/index.ts';
import type { Tensor } from '../../tensor/tensor.ts';

const experts = cpuKernel('moeExpertsFp8Ptpc');
const fr = Math.fround;
const fp8 = (format: Fp8Format, shape: number[], values: number[]): Tensor => ({
  dtype: fp8Info(format).dtype,
  shape,
  data: Uint8Array.from(values, (v) => f32ToFp8(v, format)),
});
const f32 = (values: number[]): Tensor => ({ dtype: 'f32', shape: [values.length], data: Float32Array.from(values) });

/**
 * 3 experts, this rank owning experts 1 and 2 (firstExpert 1, numLocal 2), H 2, I 1.
 * Every step is exact by construction: g = 32 makes silu(g) = 32 in fp32 (e^-32 is below half
 * an ulp of 1), h = 7 * 2^-k makes the 'divide' scale h / 448 a power of two and q = 448.
 */
function handCase(style: 'divide' | 'reciprocal', order: 'weightFirst' | 'tokenFirst' = 'weightFirst') {
  const f = 'e4m3fn';
  return experts(
    [
      fp8(f, [2, 2], [2, 1, 1, 1]),
      f32([0.5, 1]),
      { dtype: 'i32', shape: [2, 2], data: Int32Array.from([1, 0, 2, 1]) },
      { dtype: 'bf16', shape: [2, 2], data: f32ArrayToBf16([0.75, 0.25, 1, 0.5]) },
      // expert 1: gate [16, 0] (s 2), up [0, 0.875] (s 2^-5); expert 2: gate [0, 16] (s 2), up [0.875, 0] (s 2^-5)
      fp8(f, [4, 2], [16, 0, 0, 0.875, 0, 16, 0.875, 0]),
      f32([2, 2 ** -5, 2, 2 ** -5]),
      // expert 1: down [1], [0.5] (s 1, 1/4); expert 2: [2], [-1] (s 1/2, 1)
      fp8(f, [4, 1], [1, 0.5, 2, -1]),
      f32([1, 0.25, 0.5, 1]),
    ],
    { firstExpert: 1, numLocal: 2, intermediate: 1, format: f, style, scaleOrder: order },
  )[0]!;
}

describe('moeExpertsFp8Ptpc (CPU reference)', () => {
  it('a hand-computed case: gate-up with both scales, fp32 SwiGLU rounded once, h quantized per pair, down, weighted bf16 contributions summed in ascending expert', () => {
    // t0 (sx 1/2) -> expert 1 (w 3/4); its expert 0 is another rank's. g = 16*2*2*(1/2) = 32,
    //   u = 0.875 * 2^-5 * (1/2) = 7 * 2^-9, h = 32 u = 7/16: scale 1/1024, q 448;
    //   o = [448 * 1 / 1024, 448 * 0.5 * 1/4 / 1024] = [7/16, 7/128]; times 3/4: [21/64, 21/512]
    // t1 (sx 1) -> expert 1 (w 1/2) then expert 2 (w 1), ascending expert:
    //   expert 1: h = 7/8, scale 1/512: o = [7/8, 7/64] * 1/2 = [7/16, 7/128]
    //   expert 2: h = 7/8: o = [448 * 2 * 1/2 / 512, -448 / 512] = [7/8, -7/8]
    const y = handCase('divide');
    expect(y.dtype).toBe('f32');
    expect(y.shape).toEqual([2, 2]);
    expect(Array.from(y.data as Float32Array)).toEqual([21 / 64, 21 / 512, 7 / 16 + 7 / 8, 7 / 128 - 7 / 8]);
    // with g = 32 and exact scales the order of the two scales changes nothing
    expect(Array.from(handCase('divide', 'tokenFirst').data as Float32Array)).toEqual(Array.from(y.data as Float32Array));
  });

  it("'reciprocal' (aiter's per_token_quant_hip) quantizes h with fl(amax * fl(1/448)) and fl(h * fl(1/s))", () => {
    const y = handCase('reciprocal').data as Float32Array;
    // h = 7/16 for t0's pair, 7/8 for t1's: the reciprocal style's scale is not a power of two
    const pair = (h: number, w: number, down: number, sDown: number): number => {
      const s = fr(h * fr(1 / 448));
      const q = f32ToFp8(fr(h * fr(1 / s)), 'e4m3fn');
      expect(q).toBe(f32ToFp8(448, 'e4m3fn'));
      const o = fr(fr(fr(448 * down) * sDown) * s);
      return roundBf16(fr(o * w));
    };
    expect(y[0]).toBe(pair(7 / 16, 0.75, 1, 1));
    expect(y[1]).toBe(pair(7 / 16, 0.75, 0.5, 0.25));
    expect(y[2]).toBe(fr(pair(7 / 8, 0.5, 1, 1) + pair(7 / 8, 1, 2, 0.5)));
    expect(y[3]).toBe(fr(pair(7 / 8, 0.5, 0.5, 0.25) + pair(7 / 8, 1, -1, 1)));
  });

  it('rounds the SwiGLU once (bf(silu(g) * u), g and u fp32 as the stage-1 epilogue has them), not bf(bf(silu(bf(g))) * bf(u))', () => {
    // one token, one expert, H 1, I 1: g = 1.5 * 0.75 = 1.125, u = 3 * 2^-3 * 0.75 (not bf16-exact products of the scales)
    const f = 'e4m3fn';
    const sx = fr(0.75 + 2 ** -20);
    const [y] = experts(
      [
        fp8(f, [1, 1], [1]),
        f32([sx]),
        { dtype: 'i32', shape: [1, 1], data: Int32Array.from([0]) },
        { dtype: 'bf16', shape: [1, 1], data: f32ArrayToBf16([1]) },
        fp8(f, [2, 1], [1.5, 3]),
        f32([1, 2 ** -3]),
        fp8(f, [1, 1], [1]),
        f32([1]),
      ],
      { firstExpert: 0, numLocal: 1, intermediate: 1, format: f, style: 'divide', scaleOrder: 'weightFirst' },
    );
    const g = fr(1.5 * sx);
    const u = fr(fr(3 * 2 ** -3) * sx);
    const h = roundBf16(fr(siluF32(g) * u));
    const twice = roundBf16(fr(roundBf16(siluF32(roundBf16(g))) * roundBf16(u)));
    expect(h).not.toBe(twice);
    // one row of one value: q = 448, s = h / 448, o = 448 * s
    const s = fr(h / 448);
    expect((y!.data as Float32Array)[0]).toBe(roundBf16(fr(448 * s)));
    expect(f32ToBf16(h)).toBe(f32ToBf16(roundBf16(fr(448 * s))));
  });

  it('refuses operands of another fp8 format than the attribute, naming the port', () => {
    const f = 'e4m3fn';
    const run = () =>
      experts(
        [
          fp8('e4m3fnuz', [1, 1], [1]),
          f32([1]),
          { dtype: 'i32', shape: [1, 1], data: Int32Array.from([0]) },
          { dtype: 'bf16', shape: [1, 1], data: f32ArrayToBf16([1]) },
          fp8(f, [2, 1], [1, 1]),
          f32([1, 1]),
          fp8(f, [1, 1], [1]),
          f32([1]),
        ],
        { firstExpert: 0, numLocal: 1, intermediate: 1, format: f, style: 'divide', scaleOrder: 'weightFirst' },
      );
    expect(run).toThrow(/op moeExpertsFp8Ptpc: input 'xq' is fp8e4m3fnuz, expected fp8e4m3fn/);
  });
});
