// Block-cooperative GPU kernels without a GPU (issue 22, item 4): the emulated device runs a
// block launch as the GPU does (native/src/gpu/emulated_blocks.h: every thread of a block, a
// barrier waiting for all of them, shared memory per block), so the same .cu source that hipcc,
// clang-19 and nvcc compile is held to the reference here. The first such kernel,
// kernels/reduce.cu's hcsp_canonical_sumsq_bf16, sums each row's bf16 squares in the canonical
// order v1 (core numerics/canonicalSum.ts), one row per 64 threads, run through the addon's
// testKernel(). Over the fake hip and cuda runtimes: a block launch reaches the vendor with the
// kernel's grid and block.
import { bf16ToF32, canonicalSumF32, f32ToBf16 } from '@hcsp/core';
import { describe, expect, it } from 'vitest';
import { useFakeGpuRuntimes } from '../../../test/support/fakeGpuLibraries.ts';
import { mulberry32 } from '../../../test/support/mulberry32.ts';
import { loadNativeAddon, type GpuDevice, type NativeTensor } from './nativeAddon.ts';

const addon = loadNativeAddon();
const fr = Math.fround;

/** the row lengths: under a chunk, a chunk and one more, a lane step's edges, HC rows (H = 2560) and a 10240-wide row */
const LENGTHS = [1, 7, 8, 9, 511, 512, 513, 2560, 10240];
/** blocks of 1, 2, 3 and 4 rows */
const BLOCK_THREADS = [64, 128, 192, 256];

/** the reference: the canonical fp32 sum of the row's squares (each square exact in double, as the HC norm's) */
const canonicalSumSq = (row: Float32Array) => canonicalSumF32(row.length, (j) => row[j]! * row[j]!);
const sequentialSumSq = (row: Float32Array) => row.reduce((acc, v) => fr(acc + v * v), 0);

/** 4096 then ones: in order every 1 is lost against 2^24; in canonical order only lane 0's are */
function bigThenOnes(n: number): Float32Array {
  const row = new Float32Array(n).fill(1);
  row[0] = 4096;
  return row;
}

/**
 * seeded bf16 values m * 2^e, m in +-[0.5, 1), e in [-spread, spread]: their squares' sums
 * round in fp32, so the order of adds shows in the bits
 */
function randomRow(n: number, seed: number, spread: number): Float32Array {
  const r = mulberry32(seed);
  return new Float32Array(n).map(() => bf16ToF32(f32ToBf16((r() < 0.5 ? -1 : 1) * (0.5 + r() / 2) * 2 ** (Math.floor(r() * (2 * spread + 1)) - spread))));
}

/**
 * squares below fp32's normal range: 1.5 * 2^-75 squared is 1.125 * 2^-149, rounded to 2^-149;
 * 2^-75 squared is 2^-150, exactly half of that: added exactly (an FMA) it ties up to 2^-148,
 * while a square rounded to fp32 first is 0 and leaves 2^-149
 */
function tinySquares(n: number): Float32Array {
  const row = new Float32Array(n);
  row[0] = 1.5 * 2 ** -75;
  if (n > 1) row[1] = 2 ** -75;
  return row;
}

/** the rows of one length: order-sensitive, tiny, signed zeros and random ones (7: a 4-row block left part empty) */
function rowsOf(n: number): Float32Array[] {
  return [
    bigThenOnes(n),
    tinySquares(n),
    new Float32Array(n).fill(-0),
    randomRow(n, 11 * n + 1, 4),
    randomRow(n, 11 * n + 2, 20),
    randomRow(n, 11 * n + 3, 60),
    randomRow(n, 11 * n + 4, 1),
  ];
}

function upload(rows: Float32Array[], gpu: GpuDevice): NativeTensor {
  const n = rows[0]!.length;
  const bits = new Uint16Array(rows.length * n);
  rows.forEach((row, r) => {
    row.forEach((v, j) => {
      bits[r * n + j] = f32ToBf16(v);
    });
  });
  return addon.upload('bf16', [rows.length, n], bits, gpu);
}

/** the kernel's sums, as fp32 bit patterns */
function sumSqBits(gpu: GpuDevice, x: NativeTensor, options: { blockThreads: number; blocks?: number }): number[] {
  const out = addon.testKernel('canonicalSumSqBf16', gpu, x, options);
  try {
    return Array.from(new Uint32Array(addon.download(out)));
  } finally {
    addon.free(out);
  }
}

const bitsOf = (values: number[]) => Array.from(new Uint32Array(Float32Array.from(values).buffer));

describe('block kernels on the emulated device: hcsp_canonical_sumsq_bf16', () => {
  const gpu = addon.openGpu('emulated');

  it('the hand-computed sums: 4096 then ones keeps 63 lanes of ones, tiny squares add exactly', () => {
    // H = 2560: lane 0 loses its 39 ones against 2^24, lanes 1-63 hold 40 each; 10240: 159 lost, 160 each
    for (const [row, sum] of [
      [bigThenOnes(2560), 2 ** 24 + 63 * 40],
      [bigThenOnes(10240), 2 ** 24 + 63 * 160],
      [tinySquares(8), 2 ** -148],
    ] as const) {
      const x = upload([row, row], gpu);
      try {
        for (const blockThreads of BLOCK_THREADS)
          expect(sumSqBits(gpu, x, { blockThreads }), `n ${row.length}, ${blockThreads} threads`).toEqual(bitsOf([sum, sum]));
      } finally {
        addon.free(x);
      }
    }
    // a kernel summing in order would give 2^24 (and 2^-149 with the squares rounded first)
    expect(sequentialSumSq(bigThenOnes(2560))).toBe(2 ** 24);
  });

  it('every row is core canonicalSumF32 of its squares, bit for bit, for every length and block size', () => {
    for (const n of LENGTHS) {
      const rows = rowsOf(n);
      const expected = bitsOf(rows.map(canonicalSumSq));
      // the rows are ones where the order shows: the sequential sum differs from about 2 chunks on
      if (n >= 16) expect(sequentialSumSq(rows[0]!), `n ${n}`).not.toBe(canonicalSumSq(rows[0]!));
      const x = upload(rows, gpu);
      try {
        for (const blockThreads of BLOCK_THREADS) expect(sumSqBits(gpu, x, { blockThreads }), `n ${n}, ${blockThreads} threads`).toEqual(expected);
        // fewer blocks than row groups: each block loops over several
        expect(sumSqBits(gpu, x, { blockThreads: 128, blocks: 1 }), `n ${n}, one block`).toEqual(expected);
        expect(sumSqBits(gpu, x, { blockThreads: 64, blocks: 3 }), `n ${n}, three blocks`).toEqual(expected);
      } finally {
        addon.free(x);
      }
    }
  });

  it('a barrier waits for every thread of the block: what shared memory held before does not show', () => {
    // the previous launch leaves its partial sums (2^120 and more) in the blocks' shared memory;
    // a thread reading its partner's before the partner wrote it would add them in
    const poison = upload(
      Array.from({ length: 8 }, () => new Float32Array(512).fill(2 ** 60)),
      gpu,
    );
    const rows = Array.from({ length: 8 }, (_, r) => randomRow(512, 900 + r, 8));
    const x = upload(rows, gpu);
    try {
      const expected = bitsOf(rows.map(canonicalSumSq));
      for (const blockThreads of BLOCK_THREADS) {
        sumSqBits(gpu, poison, { blockThreads });
        expect(sumSqBits(gpu, x, { blockThreads }), `${blockThreads} threads`).toEqual(expected);
      }
    } finally {
      addon.free(poison);
      addon.free(x);
    }
  });

  it("blocks running at once on the pool's threads each have their own shared memory", () => {
    // 1024 one-row blocks over the pool: with one exchange for all, a block would read another's partial sums
    const rows = Array.from({ length: 1024 }, (_, r) => randomRow(512, 5000 + r, 30));
    const x = upload(rows, gpu);
    try {
      const expected = bitsOf(rows.map(canonicalSumSq));
      for (let i = 0; i < 5; i++) expect(sumSqBits(gpu, x, { blockThreads: 64 })).toEqual(expected);
    } finally {
      addon.free(x);
    }
  });

  it('one launch and one host sync per call; no rows launches nothing', () => {
    const x = upload(rowsOf(9), gpu);
    const empty = addon.upload('bf16', [0, 9], new Uint16Array(0), gpu);
    try {
      const before = addon.counters(gpu);
      sumSqBits(gpu, x, { blockThreads: 256 });
      const after = addon.counters(gpu);
      expect(after.kernelLaunches - before.kernelLaunches).toBe(1);
      expect(after.hostSyncs - before.hostSyncs).toBe(1);
      expect(sumSqBits(gpu, empty, { blockThreads: 64 })).toEqual([]);
      expect(addon.counters(gpu).kernelLaunches).toBe(after.kernelLaunches);
    } finally {
      addon.free(x);
      addon.free(empty);
    }
  });

  it('refuses a block that is not whole 64-thread groups up to 256, and inputs it cannot sum, naming the value', () => {
    const x = upload(rowsOf(9), gpu);
    const f32 = addon.upload('f32', [2, 3], new Float32Array(6), gpu);
    const onHost = addon.upload('bf16', [2, 3], new Uint16Array(6));
    try {
      for (const blockThreads of [32, 96, 320, 1024]) {
        expect(() => addon.testKernel('canonicalSumSqBf16', gpu, x, { blockThreads })).toThrow(
          new RegExp(`^kernel hcsp_canonical_sumsq_bf16: a block of ${blockThreads} threads \\(a block launch takes 64, 128, 192 or 256\\)$`),
        );
      }
      expect(() => addon.testKernel('canonicalSumSqBf16', gpu, x, { blockThreads: 64, blocks: 0 })).toThrow(
        /^testKernel: blocks must be an integer in \[1, 2147483647\], got 0$/,
      );
      expect(() => addon.testKernel('canonicalSumSqBf16', gpu, f32, { blockThreads: 64 })).toThrow(
        /^testKernel canonicalSumSqBf16: x must be bf16 \[rows, n\], got f32 of rank 2$/,
      );
      expect(() => addon.testKernel('canonicalSumSqBf16', gpu, onHost, { blockThreads: 64 })).toThrow(/^testKernel: x is not on the given GPU device$/);
      expect(() => addon.testKernel('sumSq' as 'canonicalSumSqBf16', gpu, x, { blockThreads: 64 })).toThrow(/^testKernel: no test kernel 'sumSq'/);
      expect(gpu.stats().liveTensors).toBe(2);
    } finally {
      addon.free(x);
      addon.free(f32);
      addon.free(onHost);
    }
  });
});

describe('block launches over the fake hip and cuda runtimes', () => {
  const fake = useFakeGpuRuntimes('hcsp-gpucoop-', ['HCSP_HIP_LIB', 'HCSP_CUDA_LIB', 'FAKE_GPU_LOG']);

  for (const [kind, arch, ext, runtime] of [
    ['hip', 'gfx942', 'hsaco', 'fakehip.so'],
    ['cuda', 'sm_90', 'cubin', 'fakecuda.so'],
  ] as const) {
    it(`${kind}: the kernel's blocks and block size reach the launch (not the grid-stride 256)`, () => {
      process.env[kind === 'hip' ? 'HCSP_HIP_LIB' : 'HCSP_CUDA_LIB'] = fake.lib(runtime);
      process.env.FAKE_GPU_LOG = fake.log();
      const gpu = addon.openGpu(kind, { codeObjects: fake.codeObjects(`${kind}-reduce`, arch, { [`reduce.${ext}`]: ['hcsp_canonical_sumsq_bf16'] }) });
      const x = addon.upload('bf16', [5, 3], new Uint16Array(15), gpu);
      try {
        const launches = () => [...fake.logText().matchAll(/^launch hcsp_canonical_sumsq_bf16 (.*)$/gm)].map((m) => m[1]);
        for (const [blockThreads, blocks] of [
          [64, undefined],
          [128, undefined],
          [256, undefined],
          [192, 7],
        ] as const) {
          addon.free(addon.testKernel('canonicalSumSqBf16', gpu, x, { blockThreads, blocks }));
        }
        // 5 rows: 5 blocks of 1 row, 3 of 2, 2 of 4; and the 7 asked for
        expect(launches()).toEqual([64, 128, 256, 192].map((b, i) => `grid=${[5, 3, 2, 7][i]},1,1 block=${b},1,1 shared=0 extra=(nil)`));
      } finally {
        addon.free(x);
      }
    });

    it(`${kind}: a failed block launch names the vendor call and the kernel`, () => {
      process.env[kind === 'hip' ? 'HCSP_HIP_LIB' : 'HCSP_CUDA_LIB'] = fake.lib(runtime);
      const gpu = addon.openGpu(kind, { codeObjects: fake.codeObjects(`${kind}-reduce`, arch, { [`reduce.${ext}`]: ['hcsp_canonical_sumsq_bf16'] }) });
      const x = addon.upload('bf16', [1, 3], new Uint16Array(3), gpu);
      process.env.FAKE_LAUNCH_ERROR = '98';
      try {
        expect(() => addon.testKernel('canonicalSumSqBf16', gpu, x, { blockThreads: 64 })).toThrow(
          new RegExp(
            `^${kind === 'hip' ? 'hipModuleLaunchKernel' : 'cuLaunchKernel'} failed for kernel hcsp_canonical_sumsq_bf16: invalid device function \\(code 98\\)$`,
          ),
        );
        expect(gpu.stats().liveTensors).toBe(1);
      } finally {
        delete process.env.FAKE_LAUNCH_ERROR;
        addon.free(x);
      }
    });
  }
});
