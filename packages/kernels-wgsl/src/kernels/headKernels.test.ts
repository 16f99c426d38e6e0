import { describe, it } from 'vitest';
import { f32ToBf16, Rng, type Tensor } from '@hcsp/core';
import { bf16Normal, expectOpMatchesCpu, useChromiumGpu } from '../../../../test/support/wgslKernelSuite.ts';

// The LM/MTP head WGSL kernels against core's CPU reference kernels, bit for bit, through
// Chromium's WebGPU (SwiftShader): odd element counts (half-filled last words, rows that
// start mid-word), argmax over ties, signed zeros, infinities and NaNs.
const rng = new Rng(20261201);
const gpu = useChromiumGpu();

const i32 = (shape: number[], f: (i: number) => number): Tensor => ({
  dtype: 'i32',
  shape,
  data: Int32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, (_, i) => f(i)),
});

describe('head kernels', () => {
  it('sliceRows: bf16 rows starting mid-word, f32 and i32', async () => {
    await expectOpMatchesCpu(gpu(), 'sliceRows', [bf16Normal(rng, [7, 5], 1)], { start: 3, end: 6 });
    await expectOpMatchesCpu(gpu(), 'sliceRows', [bf16Normal(rng, [9, 33], 1)], { start: 8, end: 9 });
    await expectOpMatchesCpu(gpu(), 'sliceRows', [i32([13], (i) => i * 7 - 20)], { start: 12, end: 13 });
    await expectOpMatchesCpu(gpu(), 'sliceRows', [{ dtype: 'f32', shape: [4, 3], data: Float32Array.from({ length: 12 }, () => rng.normal()) }], {
      start: 1,
      end: 3,
    });
  });

  it('reshape', async () => {
    await expectOpMatchesCpu(gpu(), 'reshape', [bf16Normal(rng, [5, 12], 1)], { shape: [20, 3] });
  });

  it('rowBlocksToCols: odd block widths (packed words straddle blocks)', async () => {
    await expectOpMatchesCpu(gpu(), 'rowBlocksToCols', [bf16Normal(rng, [6, 5], 1)], { parts: 2 });
    await expectOpMatchesCpu(gpu(), 'rowBlocksToCols', [bf16Normal(rng, [12, 7], 1)], { parts: 4 });
    await expectOpMatchesCpu(gpu(), 'rowBlocksToCols', [bf16Normal(rng, [3, 9], 1)], { parts: 1 });
  });

  it('argmax: random rows, ties, signed zeros, infinities, NaNs (first of each)', async () => {
    await expectOpMatchesCpu(gpu(), 'argmax', [bf16Normal(rng, [11, 517], 2)], {});
    const special = [0, -0, Infinity, -Infinity, NaN, 1, -1, 3];
    // coarse values: many equal maxima per row, at indices on both sides of the 64-lane stride
    const coarse: Tensor = { dtype: 'bf16', shape: [9, 200], data: Uint16Array.from({ length: 1800 }, () => f32ToBf16(Math.floor(rng.nextFloat() * 4))) };
    await expectOpMatchesCpu(gpu(), 'argmax', [coarse], {});
    const rows = special.map((s, r) => Array.from({ length: 70 }, (_, v) => (v === 65 || v === 66 ? s : r % 2 ? -0 : -Infinity)));
    rows.push(Array.from({ length: 70 }, (_, v) => (v === 3 ? -0 : v === 69 ? 0 : -1)));
    rows.push(Array.from({ length: 70 }, (_, v) => (v === 40 ? NaN : v === 2 ? Infinity : 0)));
    await expectOpMatchesCpu(gpu(), 'argmax', [{ dtype: 'bf16', shape: [rows.length, 70], data: Uint16Array.from(rows.flat(), (x) => f32ToBf16(x)) }], {});
    await expectOpMatchesCpu(gpu(), 'argmax', [bf16Normal(rng, [1, 1], 1)], {});
  });

  it('mtpDraftIds', async () => {
    await expectOpMatchesCpu(gpu(), 'mtpDraftIds', [i32([9], (i) => 100 + i), i32([1], () => 7)], {});
    await expectOpMatchesCpu(gpu(), 'mtpDraftIds', [i32([1], () => 3), i32([1], () => 4)], {});
  });
});
