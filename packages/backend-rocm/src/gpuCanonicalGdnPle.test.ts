// The GDN and PLE reductions in canonical order v1 (issue 22) on the native devices: the GPU's
// block kernels (kernels/gdn.cu hcsp_gdn_gated_norm, kernels/ple.cu hcsp_ple_rms1p_norm and
// hcsp_ple_gate: one 64-thread row group per reduction, the apply in the same launch) run on
// the emulated device, which runs the same .cu sources as hipcc, clang-19 and nvcc with real
// barriers and shared memory per block, bit-identical with core's reference under every block
// size (HCSP_GPU_BLOCK_ROWS 1-4 rows of 64 threads, and the launcher's own choice); the GDN l2
// norms (one thread per vector, the scalar definition) and the host device's SIMD sums likewise.
// The inputs: core's hand-computed rows, where the sequential order gives other bits, and
// random rows of whole 512-term steps, of a partial step with a partial chunk, and row counts
// that fill no block size evenly. Over the fake hip runtime: the launches' grid and block.
import { cpuKernel, f32ToBf16, GDN_L2NORM_EPS, Rng, type Tensor } from '@hcsp/core';
import { describe, expect, it } from 'vitest';
import { pleGatePinned } from '@hcsp/bench/cases';
import { restoreEnvAfterEach, useFakeGpuRuntimes } from '../../../test/support/fakeGpuLibraries.ts';
import { openFakeHip, runOnZeros } from '../../../test/support/fakeHipLaunches.ts';
import { loadNativeAddon, type GpuDevice } from './nativeAddon.ts';

const addon = loadNativeAddon();
/** the launcher's choice, then every block of 1-4 row groups */
const BLOCK_ROWS = [undefined, '1', '2', '3', '4'] as const;

const bytes = (v: ArrayBufferView): Uint8Array => new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
const tensor = (dtype: Tensor['dtype'], shape: number[], data: Tensor['data']): Tensor => ({ dtype, shape, data });
const bits = (shape: number[], values: number[]): Tensor =>
  tensor(
    'bf16',
    shape,
    Uint16Array.from(values, (v) => f32ToBf16(v)),
  );

let seed = 1;
/** seeded bf16 normal values */
const bf = (shape: number[], std = 1): Tensor => new Rng(seed++).bf16Tensor(shape, std);

/** the op on `device` (null: the host) with HCSP_GPU_BLOCK_ROWS = blockRows: its outputs' bytes and its kernel launches */
async function runOn(device: GpuDevice | null, op: string, inputs: Tensor[], attrs: Record<string, unknown>, blockRows: string | undefined) {
  if (blockRows === undefined) delete process.env.HCSP_GPU_BLOCK_ROWS;
  else process.env.HCSP_GPU_BLOCK_ROWS = blockRows;
  const handles = inputs.map((t) => addon.upload(t.dtype, t.shape, t.data, device));
  try {
    const before = addon.counters(device).kernelLaunches;
    const out = await addon.run(op, handles, attrs, 'exact', device);
    const launches = addon.counters(device).kernelLaunches - before;
    const results = out.map((t) => {
      const b = new Uint8Array(addon.download(t!));
      addon.free(t!);
      return b;
    });
    return { results, launches };
  } finally {
    for (const h of handles) addon.free(h);
  }
}

/** the op's outputs equal the reference's byte for byte on the host and on the emulated GPU under every block size; returns the reference's outputs */
async function expectReference(
  gpu: GpuDevice,
  op: string,
  inputs: Tensor[],
  attrs: Record<string, unknown>,
  label: string,
  gpuLaunches: number,
): Promise<Tensor[]> {
  const ref = cpuKernel(op)(inputs, attrs) as Tensor[];
  const want = ref.map((t) => Buffer.from(bytes(t.data)));
  const host = await runOn(null, op, inputs, attrs, undefined);
  host.results.forEach((got, port) => {
    expect(Buffer.from(got).equals(want[port]), `${label} on the host, port ${port}`).toBe(true);
  });
  for (const blockRows of BLOCK_ROWS) {
    const { results, launches } = await runOn(gpu, op, inputs, attrs, blockRows);
    const where = `${label}, emulated, HCSP_GPU_BLOCK_ROWS ${blockRows ?? 'unset'}`;
    expect(launches, where).toBe(gpuLaunches);
    expect(results.length, where).toBe(want.length);
    results.forEach((got, port) => {
      expect(Buffer.from(got).equals(want[port]), `${where}, port ${port}`).toBe(true);
    });
  }
  return ref;
}

const f32Values = (t: Tensor): number[] => Array.from(t.data as Uint16Array, (b) => new Float32Array(new Uint32Array([b << 16]).buffer)[0]!);

describe('GDN and PLE reductions in canonical order v1 on the host and the emulated GPU, every block size', () => {
  const gpu = addon.openGpu('emulated');
  restoreEnvAfterEach(['HCSP_GPU_BLOCK_ROWS']);

  it("pleRms1pNorm: core's hand-computed row (4096 then ones), then groups of whole steps, of a partial step and chunk, of odd width", async () => {
    const h = 1024;
    const row = Array.from({ length: 2 * h }, (_, j) => (j % h === 0 ? 4096 : 1));
    const [y] = await expectReference(
      gpu,
      'pleRms1pNorm',
      [bits([1, 2 * h], row), bits([2 * h], new Array(2 * h).fill(3 * 2 ** -8))],
      { groups: 2, eps: 1e-6 },
      'pinned',
      1,
    );
    // in j order: 32.5 and 2^-7 * 1.015625 (core's pleMath.test.ts)
    expect(f32Values(y!)).toEqual(row.map((v) => (v === 4096 ? 32.25 : 2 ** -7 * 1.0078125)));
    // segments (rows x groups): 6, 9, 7 and 13: none a multiple of 4, and 3 only once
    for (const [rows, groups, gs] of [
      [3, 2, 2560],
      [3, 3, 1030],
      [7, 1, 1031],
      [13, 1, 5],
    ]) {
      await expectReference(gpu, 'pleRms1pNorm', [bf([rows, groups * gs], 2), bf([groups * gs], 0.1)], { groups, eps: 1e-6 }, `${rows}x${groups}x${gs}`, 1);
    }
  });

  it("pleGate: core's hand-computed dot (2^24, ones, -2^24), then H of whole steps and of a partial step", async () => {
    const h = 2560;
    const { k, q } = pleGatePinned(h);
    const [gate] = await expectReference(gpu, 'pleGate', [bits([1, 2 * h], k), bits([1, 2 * h], q)], { streams: 2 }, 'pinned', 1);
    // in j order both sums are 0: gates 0.5
    expect(f32Values(gate!)).toEqual([1, 224 * 2 ** -18]);
    for (const [rows, streams, hh] of [
      [3, 2, 2560],
      [3, 3, 1030],
      [5, 1, 7],
    ]) {
      await expectReference(gpu, 'pleGate', [bf([rows, streams * hh]), bf([rows, streams * hh])], { streams }, `${rows}x${streams}x${hh}`, 1);
    }
  });

  it("gdnGatedNorm: core's hand-computed row (4096 then 2^18 - 1 ones), then rows of whole steps and of a partial step", async () => {
    const hd = 2 ** 18;
    const [y] = await expectReference(
      gpu,
      'gdnGatedNorm',
      [bits([1, hd], [4096, ...new Array<number>(hd - 1).fill(1)]), bits([1, hd], new Array<number>(hd).fill(0)), bits([hd], new Array<number>(hd).fill(1))],
      { heads: 1, headDim: hd, eps: 1e-6 },
      'pinned',
      1,
    );
    // in j order: 256 and 0.0625 (core's gdnMath.test.ts)
    const out = f32Values(y!);
    expect([out[0], out[1], out[hd - 1]]).toEqual([254, 0.06201171875, 0.06201171875]);
    for (const [T, heads, headDim] of [
      [3, 2, 1024],
      [3, 3, 1030],
      [5, 1, 128],
    ]) {
      await expectReference(
        gpu,
        'gdnGatedNorm',
        [bf([T, heads * headDim], 3), bf([T, heads * headDim]), bf([headDim], 0.1)],
        { heads, headDim, eps: 1e-6 },
        `${T}x${heads}x${headDim}`,
        1,
      );
    }
  });

  it("gdnRecurrence: core's hand-computed l2 norm (k = [4096, 1 x 127]), then key dims past one step", async () => {
    const dk = 128;
    const qkv = bits([1, 2 * dk + 2], [4096, ...new Array<number>(dk - 1).fill(0), 4096, ...new Array<number>(dk - 1).fill(1), 1 + 2 ** -7, 1 + 5 * 2 ** -7]);
    const g = tensor('f32', [1, 1], new Float32Array([0]));
    const attrs = { keyHeads: 1, valueHeads: 1, keyDim: dk, valueDim: 2, scale: 1, l2Eps: GDN_L2NORM_EPS };
    // the l2 norms and the recurrence: two grid-stride launches
    const [o] = await expectReference(gpu, 'gdnRecurrence', [qkv, g, bits([1, 1], [1.5])], attrs, 'pinned', 2);
    // in i order: [1.515625, 1.5625]
    expect(f32Values(o!)).toEqual([1.5078125, 1.5546875]);
    const h = { keyHeads: 2, valueHeads: 4, keyDim: 517, valueDim: 4 };
    const C = 2 * h.keyHeads * h.keyDim + h.valueHeads * h.valueDim;
    const gates = tensor(
      'f32',
      [3, 4],
      Float32Array.from({ length: 12 }, (_, i) => -0.1 * (i + 1)),
    );
    await expectReference(
      gpu,
      'gdnRecurrence',
      [bf([3, C], 3), gates, bf([3, 4])],
      { ...h, scale: Math.fround(h.keyDim ** -0.5), l2Eps: GDN_L2NORM_EPS },
      'keyDim 517',
      2,
    );
  });
});

describe('GDN and PLE block launches over the fake hip runtime', () => {
  const fake = useFakeGpuRuntimes('hcsp-gpugdnple-', ['HCSP_HIP_LIB', 'FAKE_GPU_LOG', 'HCSP_GPU_BLOCK_ROWS']);

  it('each norm and the gate is one block launch of 64-thread row groups, as many per block as the launcher (or HCSP_GPU_BLOCK_ROWS) says', async () => {
    const gpu = openFakeHip(fake, 'hip-gdnple', { 'gdn.hsaco': ['hcsp_gdn_gated_norm'], 'ple.hsaco': ['hcsp_ple_rms1p_norm', 'hcsp_ple_gate'] });
    const run = (op: string, shapes: number[][], attrs: Record<string, unknown>) => runOnZeros(gpu, op, shapes, attrs);
    const all = async (rows: number) => {
      await run('gdnGatedNorm', [[rows, 2 * 8], [rows, 2 * 8], [8]], { heads: 2, headDim: 8, eps: 1e-6 });
      await run('pleRms1pNorm', [[rows, 2 * 8], [2 * 8]], { groups: 2, eps: 1e-6 });
      await run(
        'pleGate',
        [
          [rows, 2 * 8],
          [rows, 2 * 8],
        ],
        { streams: 2 },
      );
    };
    // 2048 rows x 2: 4096 reductions, 4 per block; 50 x 2: one per block
    await all(2048);
    await all(50);
    process.env.HCSP_GPU_BLOCK_ROWS = '3';
    await all(50);
    for (const k of ['hcsp_gdn_gated_norm', 'hcsp_ple_rms1p_norm', 'hcsp_ple_gate']) {
      expect(fake.launches(k), k).toEqual(['grid=1024,1,1 block=256,1,1', 'grid=100,1,1 block=64,1,1', 'grid=34,1,1 block=192,1,1']);
    }
  });
});
