// The fused HC and quant block kernels (issue 22, item 3) on the emulated device, which runs the
// same .cu sources as hipcc, clang-19 and nvcc with real barriers and shared memory per block:
// hcCombineNorm (the pending combine, its write, the norm's canonical sum of squares and the
// normed write in one launch), hcGatedMean, hcGatedMeanQuant (the gated mean and its amax in
// one pass) and quantFp8PerToken, each bit-identical with core's reference under every block
// size (HCSP_GPU_BLOCK_ROWS 1-4 rows of 64 threads, and the launcher's own choice): both
// contracts, pending and not, rows not a multiple of 8 or 512 columns, (row, stream) pairs not a
// multiple of the rows per block. Over the fake hip runtime: the launch's grid and block.
import { cpuKernel, f32ToBf16, Rng, type Tensor } from '@hcsp/core';
import { describe, expect, it } from 'vitest';
import { restoreEnvAfterEach, useFakeGpuRuntimes } from '../../../test/support/fakeGpuLibraries.ts';
import { openFakeHip, runOnZeros } from '../../../test/support/fakeHipLaunches.ts';
import { loadNativeAddon, type GpuDevice } from './nativeAddon.ts';

const addon = loadNativeAddon();
/** the launcher's choice, then every block of 1-4 row groups */
const BLOCK_ROWS = [undefined, '1', '2', '3', '4'] as const;

const bytes = (v: ArrayBufferView | ArrayBuffer): Uint8Array =>
  v instanceof ArrayBuffer ? new Uint8Array(v) : new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
const tensor = (dtype: Tensor['dtype'], shape: number[], data: Tensor['data']): Tensor => ({ dtype, shape, data });

let seed = 1;
/** seeded bf16 normal values, [rows, cols] */
const bf = (rows: number, cols: number, std = 1): Tensor => tensor('bf16', [rows, cols], new Rng(seed++).fillBf16Normal(rows * cols, std));

/** the op on the emulated GPU with HCSP_GPU_BLOCK_ROWS = blockRows: its outputs' bytes, and its kernel launches */
async function onGpu(gpu: GpuDevice, op: string, inputs: (Tensor | null)[], attrs: Record<string, unknown>, blockRows: string | undefined) {
  if (blockRows === undefined) delete process.env.HCSP_GPU_BLOCK_ROWS;
  else process.env.HCSP_GPU_BLOCK_ROWS = blockRows;
  const handles = inputs.map((t) => (t ? addon.upload(t.dtype, t.shape, t.data, gpu) : null));
  try {
    const before = addon.counters(gpu).kernelLaunches;
    const out = await addon.run(op, handles, attrs, 'exact', gpu);
    const launches = addon.counters(gpu).kernelLaunches - before;
    const results = out.map((t) => {
      const b = bytes(addon.download(t!));
      addon.free(t!);
      return b;
    });
    return { results, launches };
  } finally {
    for (const h of handles) if (h) addon.free(h);
  }
}

/**
 * the op's outputs equal the reference's byte for byte under every block size, in one launch.
 * nanScales: an f32 scale output whose NaNs are compared as NaN (their bits are the host's).
 */
async function expectReference(gpu: GpuDevice, op: string, inputs: (Tensor | null)[], attrs: Record<string, unknown>, label: string, nanScales: number[] = []) {
  const want = cpuKernel(op)(inputs, attrs).map((t) => bytes(t!.data));
  for (const blockRows of BLOCK_ROWS) {
    const { results, launches } = await onGpu(gpu, op, inputs, attrs, blockRows);
    const where = `${label}, HCSP_GPU_BLOCK_ROWS ${blockRows ?? 'unset'}`;
    expect(launches, where).toBe(1);
    expect(results.length, where).toBe(want.length);
    results.forEach((got, port) => {
      if (nanScales.includes(port)) {
        const g = new Float32Array(got.buffer, got.byteOffset, got.byteLength / 4);
        const w = new Float32Array(want[port].buffer, want[port].byteOffset, want[port].byteLength / 4);
        expect(
          Array.from(g, (v) => (Number.isNaN(v) ? 'NaN' : v)),
          `${where}, port ${port}`,
        ).toEqual(Array.from(w, (v) => (Number.isNaN(v) ? 'NaN' : v)));
      } else {
        expect(Buffer.from(got).equals(Buffer.from(want[port])), `${where}, port ${port}`).toBe(true);
      }
    });
  }
}

/** bf16 bits of the values */
const bfBits = (values: number[]): Uint16Array => Uint16Array.from(values, (v) => f32ToBf16(v));

describe('fused HC and quant block kernels on the emulated device, every block size', () => {
  const gpu = addon.openGpu('emulated');
  restoreEnvAfterEach(['HCSP_GPU_BLOCK_ROWS']);

  // [rows, streams, H]: whole 512-column lane steps (H 2560), chunks of 8 short of a step (520),
  // H not a multiple of 8 (1030: the value-by-value path, a short last chunk), tiny (13, 3: lanes
  // with nothing), and 3 streams so that the (row, stream) pairs (21) fill no block size evenly
  const SHAPES: [number, number, number][] = [
    [3, 4, 2560],
    [5, 4, 520],
    [2, 4, 1030],
    [7, 3, 13],
    [5, 2, 3],
  ];

  for (const contract of ['atom', 'hf'] as const) {
    it(`hcCombineNorm ${contract}: pending and not, every shape, one launch, the reference's bits`, async () => {
      for (const [rows, n, h] of SHAPES) {
        const x = bf(rows, n * h);
        const w = tensor('bf16', [n * h], new Rng(seed++).fillBf16Normal(n * h, 0.05));
        const attrs = { streams: n, eps: 1e-6, contract };
        await expectReference(gpu, 'hcCombineNorm', [x, bf(rows, h), bf(rows, n), w], attrs, `pending, ${rows}x${n}x${h}`);
        await expectReference(gpu, 'hcCombineNorm', [x, null, null, w], attrs, `no pending, ${rows}x${n}x${h}`);
      }
    });

    it(`hcGatedMean ${contract}: every shape, one launch, the reference's bits`, async () => {
      for (const [rows, n, h] of SHAPES)
        await expectReference(gpu, 'hcGatedMean', [bf(rows, n * h, 1.5), bf(rows, n * h)], { streams: n, contract }, `${rows}x${n}x${h}`);
    });
  }

  it('hcCombineNorm: rows whose outputs show the canonical order (4096 then ones onto bf16 ties), a zero row, wide magnitudes', async () => {
    // 4096 then ones with weights that put the normed values on bf16 ties (core's combineNorm.test.ts):
    // a lane summing its chunk's 8 terms in another order, or the row summed in order, gives other bits
    const tie = 1024;
    const x = tensor('bf16', [1, 2 * tie], bfBits(Array.from({ length: 2 * tie }, (_, j) => (j % tie === 0 ? 4096 : 1))));
    const tieW = tensor('bf16', [2 * tie], bfBits(Array.from({ length: 2 * tie }, (_, j) => (1 + 2 * (j % 4)) * 2 ** -8)));
    await expectReference(gpu, 'hcCombineNorm', [x, null, null, tieW], { streams: 2, eps: 1e-6, contract: 'atom' }, '4096 then ones');
    const h = 2560;
    const wide = Array.from({ length: h }, (_, j) => (j % 7 === 0 ? 2 ** 60 : 2 ** -60) * (j % 2 ? -1 : 1));
    const rows = tensor('bf16', [1, 4 * h], bfBits([...new Array<number>(h).fill(0), ...wide, ...wide.map((v) => -v / 3), ...new Array<number>(h).fill(-1)]));
    const w = tensor('bf16', [4 * h], new Rng(seed++).fillBf16Normal(4 * h, 0.05));
    await expectReference(gpu, 'hcCombineNorm', [rows, null, null, w], { streams: 4, eps: 1e-6, contract: 'atom' }, 'zero and wide rows');
  });

  for (const format of ['e4m3fnuz', 'e4m3fn'] as const) {
    for (const style of ['divide', 'reciprocal'] as const) {
      it(`quantFp8PerToken and hcGatedMeanQuant ${format} ${style}: every shape, one launch, the reference's bits`, async () => {
        for (const [rows, n, h] of SHAPES) {
          await expectReference(gpu, 'quantFp8PerToken', [bf(rows, n * h, 3)], { format, style }, `quantFp8PerToken ${rows}x${n * h}`);
          await expectReference(
            gpu,
            'hcGatedMeanQuant',
            [bf(rows, n * h, 1.5), bf(rows, n * h)],
            { streams: n, format, style },
            `hcGatedMeanQuant ${rows}x${n}x${h}`,
          );
        }
      });
    }
  }

  it('the amax: a zero row, an infinity, NaNs (the row all NaN), the largest value in any lane', async () => {
    const cols = 1030;
    const rows: number[][] = [
      new Array<number>(cols).fill(0),
      Array.from({ length: cols }, (_, j) => (j === 777 ? Infinity : j / 100)),
      Array.from({ length: cols }, (_, j) => (j === 600 || j === 1029 ? NaN : j / 100)),
      ...[0, 7, 8, 511, 512, 1029].map((at) => Array.from({ length: cols }, (_, j) => (j === at ? -300 : ((j * 37) % 101) / 50))),
    ];
    const x = tensor('bf16', [rows.length, cols], bfBits(rows.flat()));
    for (const format of ['e4m3fnuz', 'e4m3fn'] as const) {
      for (const style of ['divide', 'reciprocal'] as const) await expectReference(gpu, 'quantFp8PerToken', [x], { format, style }, `${format} ${style}`, [1]);
    }
    // the gated mean's NaN and infinity come from normed
    const up = tensor('bf16', [rows.length, 2 * cols], new Rng(seed++).fillBf16Normal(rows.length * 2 * cols, 1));
    const normed = tensor('bf16', [rows.length, 2 * cols], bfBits(rows.flatMap((r) => [...r, ...r])));
    await expectReference(gpu, 'hcGatedMeanQuant', [up, normed], { streams: 2, format: 'e4m3fnuz', style: 'divide' }, 'gated mean', [2]);
  });

  it('HCSP_GPU_BLOCK_ROWS other than 1-4 is refused, naming the value', async () => {
    for (const bad of ['0', '5', '2x', '-1']) {
      await expect(onGpu(gpu, 'hcGatedMean', [bf(2, 16), bf(2, 16)], { streams: 2, contract: 'atom' }, bad)).rejects.toThrow(
        new RegExp(`HCSP_GPU_BLOCK_ROWS must be 1, 2, 3 or 4 \\(rows of 64 threads per block\\), got '${bad}'`),
      );
    }
    expect(gpu.stats().liveTensors).toBe(0);
  });
});

describe('fused HC block launches over the fake hip runtime', () => {
  const fake = useFakeGpuRuntimes('hcsp-gpufused-', ['HCSP_HIP_LIB', 'FAKE_GPU_LOG', 'HCSP_GPU_BLOCK_ROWS']);

  it('the grid fills an 80-CU device at T/tp = 1024 (4096 HC pairs: 1024 blocks of 4), smaller launches take fewer rows per block', async () => {
    const gpu = openFakeHip(fake, 'hip-fused', {
      'hc.hsaco': ['hcsp_hc_combine_norm', 'hcsp_hc_gated_mean'],
      'quant.hsaco': ['hcsp_quant_rows_fp8', 'hcsp_quant_gated_mean_fp8'],
    });
    const run = (op: string, shapes: number[][], attrs: Record<string, unknown>) => runOnZeros(gpu, op, shapes, attrs);
    for (const rows of [1024, 100]) {
      await run('hcCombineNorm', [[rows, 32], [rows, 8], [rows, 4], [32]], { streams: 4, eps: 1e-6, contract: 'atom' });
      await run(
        'hcGatedMean',
        [
          [rows, 32],
          [rows, 32],
        ],
        { streams: 4, contract: 'atom' },
      );
      await run('quantFp8PerToken', [[rows, 8]], { format: 'e4m3fnuz', style: 'reciprocal' });
      await run(
        'hcGatedMeanQuant',
        [
          [rows, 32],
          [rows, 32],
        ],
        { streams: 4, format: 'e4m3fnuz', style: 'divide' },
      );
    }
    process.env.HCSP_GPU_BLOCK_ROWS = '3';
    await run('hcCombineNorm', [[1024, 32], [1024, 8], [1024, 4], [32]], { streams: 4, eps: 1e-6, contract: 'atom' });
    // 4096 pairs: 4 per block; 1024 rows: 2 per block (256 blocks of 4 would leave an 80-CU device 3 each); 400 pairs, 100 rows: 1
    expect(fake.launches('hcsp_hc_combine_norm')).toEqual(['grid=1024,1,1 block=256,1,1', 'grid=400,1,1 block=64,1,1', 'grid=1366,1,1 block=192,1,1']);
    for (const k of ['hcsp_hc_gated_mean', 'hcsp_quant_rows_fp8', 'hcsp_quant_gated_mean_fp8'])
      expect(fake.launches(k), k).toEqual(['grid=512,1,1 block=128,1,1', 'grid=100,1,1 block=64,1,1']);
  });
});
