// The tiled exact GEMM (native/src/gpu/kernels/gemm.cu) on the emulated device, which runs the
// same .cu source as the GPUs, barriers and shared memory included: `linear` and its grouped form
// bit for bit equal to core's linearBf16 (each output's k sum in order, fp32) for shapes on every
// edge of the tiles (M, N and K of 1, a tile less one, a tile, a tile and one, odd sizes; K = 10240
// with values whose sum shows any other order), whatever the block size and grid.
import { bf16ToF32, f32ToBf16, linearBf16 } from '@hcsp/core';
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../../test/support/mulberry32.ts';
import { loadNativeAddon, type NativeTensor } from './nativeAddon.ts';

const addon = loadNativeAddon();
const fr = Math.fround;

/** the tiles: 64 columns, 32 k a slab, 16 rows per 64 threads of a block (so 16..64 rows) */
const TILE_N = 64;
const TILE_K = 32;
const BLOCKS: { blockThreads?: number; blocks?: number }[] = [
  {},
  { blockThreads: 64 },
  { blockThreads: 128 },
  { blockThreads: 192 },
  { blockThreads: 256 },
  { blockThreads: 64, blocks: 1 },
  { blockThreads: 256, blocks: 3 },
];

/**
 * seeded bf16 values m * 2^e, m in +-[0.5, 1), e in [-spread, spread]: products of many
 * magnitudes, so each output's fp32 sum rounds and another order of adds gives other bits
 */
function randomBf16(n: number, seed: number, spread: number): Uint16Array {
  const r = mulberry32(seed);
  return Uint16Array.from({ length: n }, () => f32ToBf16((r() < 0.5 ? -1 : 1) * (0.5 + r() / 2) * 2 ** (Math.floor(r() * (2 * spread + 1)) - spread)));
}

const decode = (bits: Uint16Array) => Float32Array.from(bits, bf16ToF32);

/** the tiled kernel's y for x [rows, inF] and w [outF, inF] (bf16 bits) */
function tiled(
  gpu: ReturnType<typeof addon.openGpu>,
  x: NativeTensor,
  w: NativeTensor,
  options: { blockThreads?: number; blocks?: number; kernel?: 'tiled' | 'oneThread' },
): Uint16Array {
  const y = addon.testKernel('gemmLinearBf16', gpu, x, { w, ...options });
  try {
    return new Uint16Array(addon.download(y));
  } finally {
    addon.free(y);
  }
}

describe('the tiled exact GEMM on the emulated device', () => {
  const gpu = addon.openGpu('emulated');

  /** every block size and grid gives linearBf16's bits; returns them */
  function expectExact(rows: number, inF: number, outF: number, xBits: Uint16Array, wBits: Uint16Array, blocks = BLOCKS): Uint16Array {
    const expected = linearBf16(decode(xBits), decode(wBits), rows, inF, outF);
    const x = addon.upload('bf16', [rows, inF], xBits, gpu);
    const w = addon.upload('bf16', [outF, inF], wBits, gpu);
    try {
      for (const b of blocks) expect(tiled(gpu, x, w, b), `[${rows},${inF}] x [${inF},${outF}], ${JSON.stringify(b)}`).toEqual(expected);
    } finally {
      addon.free(x);
      addon.free(w);
    }
    return expected;
  }

  it('equals linearBf16 bit for bit on every tile edge of M, N and K, for every block size and grid', () => {
    // M: one row, a 64-thread tile (16 rows) less one, one, and one more, a 256-thread tile (64) and
    // one more; N: a 64-column tile's edges; K: a 32-k slab's edges, multiples of 8 (16-byte loads) and odd
    const Ms = [1, 15, 16, 17, 64, 65];
    const Ns = [1, TILE_N - 1, TILE_N, TILE_N + 1, 2 * TILE_N + 3];
    const Ks = [1, 7, TILE_K - 1, TILE_K, TILE_K + 1, 40, 3 * TILE_K + 5];
    let seed = 1;
    for (const rows of Ms) {
      for (const outF of Ns) {
        for (const inF of Ks) {
          seed++;
          expectExact(
            rows,
            inF,
            outF,
            randomBf16(rows * inF, seed, 12),
            randomBf16(outF * inF, seed + 7000, 12),
            rows * outF > 2000 ? BLOCKS.slice(0, 3) : BLOCKS,
          );
        }
      }
    }
  }, 120_000);

  it('K = 10240 with large magnitudes: the bits of the sum in k order, which sums by slabs or from the end do not give', () => {
    const rows = 33;
    const outF = 67;
    const inF = 10240;
    const xBits = randomBf16(rows * inF, 91, 4);
    const wBits = randomBf16(outF * inF, 92, 4);
    // in each output, a product of 2^24 at k = a and -2^24 at k = b: while it is in the sum, the
    // terms in between round to its ulp (2), so which terms meet it decides the bits
    for (let t = 0; t < rows; t++) {
      xBits[t * inF + 100 + t] = f32ToBf16(2 ** 16);
      xBits[t * inF + inF - 100 - 7 * t] = f32ToBf16(-(2 ** 16));
    }
    for (let o = 0; o < outF; o++) {
      for (let t = 0; t < rows; t++) {
        wBits[o * inF + 100 + t] = f32ToBf16(2 ** 8);
        wBits[o * inF + inF - 100 - 7 * t] = f32ToBf16(2 ** 8);
      }
    }
    // row 0 x column 0: 2^24, then 10239 ones, each lost against it in order (ties to even)
    for (let k = 0; k < inF; k++) {
      xBits[k] = f32ToBf16(k === 0 ? 4096 : 1);
      wBits[k] = f32ToBf16(k === 0 ? 4096 : 1);
    }
    const expected = expectExact(rows, inF, outF, xBits, wBits, [{}, { blockThreads: 64 }, { blockThreads: 192, blocks: 5 }]);
    expect(bf16ToF32(expected[0]!)).toBe(2 ** 24);
    // the data shows the order: a sum by 32-k slabs (partials added in order), or from k = K-1 down, differs in most outputs
    const x = decode(xBits);
    const w = decode(wBits);
    let slabDiffers = 0;
    let reversedDiffers = 0;
    for (let t = 0; t < rows; t++) {
      for (let o = 0; o < outF; o++) {
        let slabbed = 0;
        for (let k0 = 0; k0 < inF; k0 += TILE_K) {
          let part = 0;
          for (let k = k0; k < k0 + TILE_K; k++) part = fr(part + x[t * inF + k]! * w[o * inF + k]!);
          slabbed = fr(slabbed + part);
        }
        let reversed = 0;
        for (let k = inF - 1; k >= 0; k--) reversed = fr(reversed + x[t * inF + k]! * w[o * inF + k]!);
        if (f32ToBf16(slabbed) !== expected[t * outF + o]) slabDiffers++;
        if (f32ToBf16(reversed) !== expected[t * outF + o]) reversedDiffers++;
      }
    }
    expect(slabDiffers).toBeGreaterThan((rows * outF) / 4);
    expect(reversedDiffers).toBeGreaterThan((rows * outF) / 4);
  }, 120_000);

  it("keeps the reference's IEEE cases: infinities, NaN (0 x inf), signed zeros, values near fp32's range", () => {
    const rows = 5;
    const inF = 9;
    const outF = 6;
    const xv = new Float32Array(rows * inF).fill(1);
    const wv = new Float32Array(outF * inF).fill(0.5);
    xv[0] = Infinity; // row 0: +inf in every output but column 1's (0 x inf = NaN there)
    wv[inF] = 0;
    xv[inF] = -0; // row 1: -0 times everything, and w column 2 all -0: +0 sums
    for (let k = 0; k < inF; k++) wv[2 * inF + k] = -0;
    xv[2 * inF] = 2 ** 127; // row 2: past fp32's range, then back
    xv[2 * inF + 1] = 2 ** 127;
    xv[2 * inF + 2] = -(2 ** 127);
    xv[3 * inF] = 2 ** -120; // row 3: products below fp32's normal range (exact in an FMA)
    wv[3 * inF] = 2 ** -30;
    const xBits = Uint16Array.from(xv, f32ToBf16);
    const wBits = Uint16Array.from(wv, f32ToBf16);
    const y = expectExact(rows, inF, outF, xBits, wBits);
    expect(y[1]).toBe(0x7fc0);
    expect(y[0]).toBe(0x7f80);
  });

  it('the one-thread baseline gives the same bits (it is what the tiled kernel replaced)', () => {
    const [rows, inF, outF] = [70, 136, 130];
    const xBits = randomBf16(rows * inF, 5, 20);
    const wBits = randomBf16(outF * inF, 6, 20);
    const expected = expectExact(rows, inF, outF, xBits, wBits, [{}]);
    const x = addon.upload('bf16', [rows, inF], xBits, gpu);
    const w = addon.upload('bf16', [outF, inF], wBits, gpu);
    try {
      expect(tiled(gpu, x, w, { kernel: 'oneThread' })).toEqual(expected);
    } finally {
      addon.free(x);
      addon.free(w);
    }
  });

  it("`linear` in the exact GEMM mode runs the tiled kernel: one block launch, the reference's bits", async () => {
    const [rows, inF, outF] = [40, 72, 100];
    const xBits = randomBf16(rows * inF, 8, 16);
    const wBits = randomBf16(outF * inF, 9, 16);
    const x = addon.upload('bf16', [rows, inF], xBits, gpu);
    const w = addon.upload('bf16', [outF, inF], wBits, gpu);
    try {
      const before = addon.counters(gpu);
      const [y] = await addon.run('linear', [x, w], {}, 'exact', gpu);
      try {
        expect(addon.counters(gpu).kernelLaunches - before.kernelLaunches).toBe(1);
        expect(new Uint16Array(addon.download(y!))).toEqual(linearBf16(decode(xBits), decode(wBits), rows, inF, outF));
      } finally {
        addon.free(y!);
      }
    } finally {
      addon.free(x);
      addon.free(w);
    }
  });

  it("the grouped GEMM: each row is linear on its group's weight, rows past the device's count untouched, tiles spanning groups", () => {
    const groups = 3;
    const [inF, outF, maxRows] = [45, 70, 40];
    const wBits = randomBf16(groups * outF * inF, 31, 4);
    const xBits = randomBf16(maxRows * inF, 32, 4);
    // products of 2^24 at k = 3 and -2^24 at k = 40 (as in the K = 10240 case): a sum by slabs rounds otherwise
    for (let t = 0; t < maxRows; t++) {
      xBits[t * inF + 3] = f32ToBf16(2 ** 16);
      xBits[t * inF + 40] = f32ToBf16(-(2 ** 16));
    }
    for (let o = 0; o < groups * outF; o++) {
      wBits[o * inF + 3] = f32ToBf16(2 ** 8);
      wBits[o * inF + 40] = f32ToBf16(2 ** 8);
    }
    // sorted runs that cross the 16-row tiles, a one-row run, and an unsorted tail
    const rowGroup = Int32Array.from({ length: maxRows }, (_, t) => (t < 14 ? 0 : t < 15 ? 2 : t < 33 ? 1 : t % 3));
    const w = addon.upload('bf16', [groups * outF, inF], wBits, gpu);
    const x = addon.upload('bf16', [maxRows, inF], xBits, gpu);
    const rg = addon.upload('i32', [maxRows], rowGroup, gpu);
    try {
      for (const count of [maxRows, 37, 1]) {
        const rows = addon.upload('i32', [1], Int32Array.of(count), gpu);
        const expected = new Uint16Array(maxRows * outF);
        for (let t = 0; t < count; t++) {
          const g = rowGroup[t]!;
          expected.set(
            linearBf16(decode(xBits.subarray(t * inF, (t + 1) * inF)), decode(wBits.subarray(g * outF * inF, (g + 1) * outF * inF)), 1, inF, outF),
            t * outF,
          );
        }
        try {
          for (const b of BLOCKS) {
            const y = addon.testKernel('gemmGroupedBf16', gpu, x, { w, outF, rowGroup: rg, rows, ...b });
            try {
              expect(new Uint16Array(addon.download(y)), `${count} rows, ${JSON.stringify(b)}`).toEqual(expected);
            } finally {
              addon.free(y);
            }
          }
        } finally {
          addon.free(rows);
        }
      }
    } finally {
      addon.free(w);
      addon.free(x);
      addon.free(rg);
    }
  });

  it('refuses a block that is not whole 64-thread groups and a weight that does not fit, naming the value', () => {
    const x = addon.upload('bf16', [3, 8], new Uint16Array(24), gpu);
    const w = addon.upload('bf16', [5, 8], new Uint16Array(40), gpu);
    const w7 = addon.upload('bf16', [5, 7], new Uint16Array(35), gpu);
    try {
      expect(() => addon.testKernel('gemmLinearBf16', gpu, x, { w, blockThreads: 96 })).toThrow(
        /^kernel hcsp_gemm_linear_bf16_v8: a block of 96 threads \(a block launch takes 64, 128, 192 or 256\)$/,
      );
      expect(() => addon.testKernel('gemmLinearBf16', gpu, x, { w: w7 })).toThrow(/^testKernel gemmLinearBf16: w's inF 7 is not x's 8$/);
      expect(() => addon.testKernel('gemmLinearBf16', gpu, x, { w, kernel: 'fast' as 'tiled' })).toThrow(/kernel must be 'tiled' or 'oneThread', got 'fast'/);
      expect(gpu.stats().liveTensors).toBe(3);
    } finally {
      addon.free(x);
      addon.free(w);
      addon.free(w7);
    }
  });
});
