import { FLASH_NEXT, formatBytes, MODEL_SUB_LAYERS, planMemory, preparePrefill, rankGraph, type Communicator, type Graph, type WeightSource } from '@hcsp/core';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { handGraph, value } from '../../../test/support/handGraph.ts';
import { GPU_SELECTION_ENV, useFakeGpuBackends } from '../../../test/support/fakeGpuLibraries.ts';
import { NO_WEIGHTS } from '../../../test/support/noWeights.ts';
import { checkDeviceMemory, COMMUNICATOR_ALLOWANCE_BYTES, DeviceMemoryError, estimateDeviceMemory, VENDOR_BLAS_WORKSPACE_BYTES } from './deviceMemoryGuard.ts';
import { loadNativeAddon } from './nativeAddon.ts';
import { NativeOutOfMemoryError } from './nativeErrors.ts';
import { createRocmBackend, type RocmBackend } from './rocmBackend.ts';

// The per-device memory guard (issue 20, item 8): what a session holds on its GPU (weights,
// the run's memory plan, the libraries' own buffers) against the device's free memory, checked
// in the rocm backend's prepare before any weight is read or uploaded. By hand on a small
// graph, then a Flash-Next rank (tp 4, T 4096, its graph built without weights) on the fake
// libamdhip64 / libcuda, whose FAKE_GPU_FREE / FAKE_GPU_TOTAL say what hipMemGetInfo /
// cuMemGetInfo_v2 report.

const GiB = 2 ** 30;

// tp 2: each rank multiplies x by its slice of W (w0, w1; w0 read twice), the partials meet
// in a collective; rank 0 also looks up rows of a row-gathered table P (never uploaded).
function smallGraph(): Graph {
  return handGraph(
    2,
    [
      value('x', [4, 8], 'bf16', null, 'input'),
      value('ids', [4], 'i32', null, 'input'),
      value('w0', [8, 8], 'bf16', null, 'weight', { name: 'W', slice: { axis: 0, ranges: [[0, 8]] } }),
      value('w1', [8, 8], 'bf16', null, 'weight', { name: 'W', slice: { axis: 0, ranges: [[8, 16]] } }),
      value('p', [1000, 8], 'f32', null, 'weight', { name: 'P', gather: 'rows' }),
      value('a0', [4, 8], 'bf16', 0, 'intermediate'),
      value('b0', [4, 8], 'bf16', 0, 'intermediate'),
      value('a1', [4, 8], 'bf16', 1, 'intermediate'),
      value('s0', [4, 8], 'bf16', 0, 'intermediate'),
      value('s1', [4, 8], 'bf16', 1, 'intermediate'),
      value('e0', [4, 8], 'f32', 0, 'intermediate'),
    ],
    [
      [0, ['x', 'w0'], ['a0']],
      [0, ['a0', 'w0'], ['b0']],
      [1, ['x', 'w1'], ['a1']],
      [null, ['b0', 'a1'], ['s0', 's1']],
      [0, ['ids', 'p'], ['e0']],
    ],
    ['x', 'ids'],
    ['s0', 's1', 'e0'],
  );
}

describe('the device estimate (by hand)', () => {
  it('weights once each, the row-gathered table not; the memory plan; the allowances only where they apply', () => {
    const g = smallGraph();
    // weights: w0 and w1, 8*8 bf16 each (w0 once); P stays on the host. The plan: at most four
    // 64-byte values alive at once (x, b0, s0, s1 at the collective), one 16-byte (ids), one 128-byte (e0)
    const plain = estimateDeviceMemory(g, { ncclCommunicator: false, vendorGemm: false });
    expect(plain).toEqual({ weights: 256, activations: 4 * 64 + 16 + 128, communicator: 0, blasWorkspace: 0, total: 256 + 400 });
    const gpuRank = estimateDeviceMemory(rankGraph(g, 0), { ncclCommunicator: true, vendorGemm: true });
    expect(gpuRank.weights).toBe(128);
    expect(gpuRank.communicator).toBe(COMMUNICATOR_ALLOWANCE_BYTES);
    expect(gpuRank.blasWorkspace).toBe(VENDOR_BLAS_WORKSPACE_BYTES);
    expect(gpuRank.total).toBe(128 + gpuRank.activations + COMMUNICATOR_ALLOWANCE_BYTES + VENDOR_BLAS_WORKSPACE_BYTES);
    // no collective in the graph: no communicator buffers
    const alone = { ...g, tp: 1, nodes: g.nodes.filter((n) => n.rank === 0 && n.id !== 3), outputs: ['e0'] };
    expect(estimateDeviceMemory(alone, { ncclCommunicator: true, vendorGemm: false }).communicator).toBe(0);
  });

  it('refuses past the free memory or what the memory limit leaves, naming both figures and the device', () => {
    const g = rankGraph(smallGraph(), 1);
    const e = { weights: 40 * GiB, activations: 20 * GiB, communicator: GiB, blasWorkspace: 32 * 2 ** 20, total: 61 * GiB + 32 * 2 ** 20 };
    const state = { device: 'hip:0 (HIP_VISIBLE_DEVICES=3)', freeBytes: e.total, totalBytes: 192 * GiB, limitBytes: 0, liveBytes: 0 };
    expect(() => checkDeviceMemory(g, e, state)).not.toThrow();
    const over = (() => {
      try {
        checkDeviceMemory(g, e, { ...state, freeBytes: e.total - 1 });
      } catch (x) {
        return x;
      }
    })();
    expect(over).toBeInstanceOf(DeviceMemoryError);
    expect(over).toBeInstanceOf(NativeOutOfMemoryError);
    expect((over as Error).message).toBe(
      'rocm backend: rank 1 of 2 needs 61.0 GiB on hip:0 (HIP_VISIBLE_DEVICES=3) (weights 40.0 GiB, activations 20.0 GiB (memory plan), ' +
        'communicator buffers 1.0 GiB (RCCL/NCCL allowance), vendor-BLAS workspace 32.0 MiB) but the device has 61.0 GiB free (of 192.0 GiB); ' +
        'nothing was allocated. Use more ranks (tp), fewer tokens, or free the device',
    );
    expect(() => checkDeviceMemory(g, e, { ...state, limitBytes: 64 * GiB, liveBytes: 4 * GiB })).toThrow(
      "but the backend's memory limit of 64.0 GiB leaves 60.0 GiB (the device has 61.0 GiB free of 192.0 GiB)",
    );
    expect(() => checkDeviceMemory(smallGraph(), e, { ...state, device: 'cuda:1', freeBytes: GiB })).toThrow(
      /^rocm backend: the whole graph \(tp 2 on one device\) needs 61\.0 GiB on cuda:1 /,
    );
  });
});

const addon = loadNativeAddon();
const { fake, open } = useFakeGpuBackends<RocmBackend>('hcsp-devmem-', [
  'HCSP_HIP_LIB',
  'HCSP_CUDA_LIB',
  'FAKE_GPU_LOG',
  'FAKE_GPU_COUNT',
  'FAKE_GPU_FREE',
  'FAKE_GPU_TOTAL',
  ...GPU_SELECTION_ENV,
]);
beforeAll(() => fake.basicCodeObjects('objects', ['hcsp_add_bf16']));
beforeEach(() => {
  Object.assign(process.env, { HCSP_HIP_LIB: fake.lib('fakehip.so'), HCSP_CUDA_LIB: fake.lib('fakecuda.so') });
});

async function backend(device: 'hip' | 'cuda', memoryLimitBytes?: number): Promise<RocmBackend> {
  const b = await createRocmBackend({ device, codeObjects: fake.lib('objects'), ...(memoryLimitBytes === undefined ? {} : { memoryLimitBytes }) });
  open.push(b);
  return b;
}

describe('memoryInfo: what the runtime reports', () => {
  it('hip (hipMemGetInfo) and cuda (cuMemGetInfo_v2) on the device opened; the emulated device reports the host', async () => {
    Object.assign(process.env, { FAKE_GPU_FREE: String(47 * GiB), FAKE_GPU_TOTAL: String(64 * GiB) });
    expect((await backend('hip')).gpu!.memoryInfo()).toEqual({ freeBytes: 47 * GiB, totalBytes: 64 * GiB });
    expect(fake.logText()).toMatch(/^hipMemGetInfo device 0$/m);
    expect((await backend('cuda')).gpu!.memoryInfo()).toEqual({ freeBytes: 47 * GiB, totalBytes: 64 * GiB });
    expect(fake.logText()).toMatch(/^cuMemGetInfo context 0x1234$/m);
    const host = addon.openGpu('emulated').memoryInfo();
    expect(host.totalBytes).toBeGreaterThan(0);
    expect(host.freeBytes).toBeGreaterThan(0);
    expect(host.freeBytes).toBeLessThanOrEqual(host.totalBytes);
  });
});

describe('a Flash-Next rank on a device with too little memory (fake runtime)', () => {
  // rank 0's part of the Flash-Next prefill at tp 4, T 4096, its weights never materialized
  const prefill = preparePrefill({
    config: FLASH_NEXT,
    tokens: 4096,
    tp: 4,
    sp: 'auto',
    reduce: 'ring',
    seed: 1,
    subLayers: MODEL_SUB_LAYERS,
    weights: NO_WEIGHTS,
  });
  const part = rankGraph(prefill.graph, 0);
  // what the session would upload and reserve, counted here from the part's declared values
  const weightBytes = Object.values(part.values)
    .filter((d) => d.kind === 'weight' && d.weight?.gather !== 'rows')
    .reduce((s, d) => s + d.shape.reduce((a, b) => a * b, 1) * (d.dtype === 'f32' ? 4 : d.dtype.startsWith('fp8') ? 1 : 2), 0);
  const planBytes = planMemory(part).poolBytes;
  const need = weightBytes + planBytes + VENDOR_BLAS_WORKSPACE_BYTES;
  const peer: Communicator = { rank: 0, tp: 4, collective: () => Promise.reject(new Error('test: no collective runs')) };
  let reads = 0;
  const counted: WeightSource = {
    ...NO_WEIGHTS,
    read: (...a) => {
      reads++;
      return NO_WEIGHTS.read(...a);
    },
  };

  it('is refused at prepare, naming what it needs and what the device has, before any weight is read or allocated', async () => {
    // about a quarter of the model's 239 GiB of bf16 weights, with the replicated ones
    expect(weightBytes).toBeGreaterThan(55 * GiB);
    expect(weightBytes).toBeLessThan(70 * GiB);
    Object.assign(process.env, { FAKE_GPU_FREE: String(48 * GiB), HIP_VISIBLE_DEVICES: '2', LOCAL_RANK: '2', FAKE_GPU_COUNT: '1' });
    const b = await backend('hip');
    reads = 0;
    const e = await b.prepare(part, counted, { communicator: peer }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(DeviceMemoryError);
    expect((e as Error).message).toBe(
      `rocm backend: rank 0 of 4 needs ${formatBytes(need)} on hip:0 (HIP_VISIBLE_DEVICES=2) (weights ${formatBytes(weightBytes)}, ` +
        `activations ${formatBytes(planBytes)} (memory plan), vendor-BLAS workspace 32.0 MiB) but the device has 48.0 GiB free (of 192.0 GiB); ` +
        'nothing was allocated. Use more ranks (tp), fewer tokens, or free the device',
    );
    expect(reads).toBe(0);
    expect(b.gpu!.stats().allocations).toBe(0);
    expect(fake.logText()).not.toMatch(/hipMalloc/);
  });

  it('passes once the device has what it needs: the session goes on to read its weights', async () => {
    Object.assign(process.env, { FAKE_GPU_FREE: String(need) });
    const b = await backend('hip');
    reads = 0;
    const e = await b.prepare(part, counted, { communicator: peer }).catch((x: unknown) => x);
    expect((e as Error).message).toMatch(/^test: no weight '/);
    expect(reads).toBe(1);
    expect(b.gpu!.stats().liveTensors).toBe(0);
  });

  it("the cuda device, and the backend's memory limit when it leaves less than the device has free", async () => {
    const b = await backend('cuda', 16 * GiB);
    const e = await b.prepare(part, counted, { communicator: peer }).catch((x: unknown) => x);
    expect((e as Error).message).toMatch(
      new RegExp(
        `^rocm backend: rank 0 of 4 needs ${formatBytes(need).replace('.', '\\.')} on cuda:0 \\(.*\\) but the backend's memory limit of 16\\.0 GiB leaves 16\\.0 GiB \\(the device has 141\\.0 GiB free of 141\\.0 GiB\\)`,
      ),
    );
    expect(b.gpu!.stats().allocations).toBe(0);
  });

  it('the host device keeps the host check: no device guard there', async () => {
    const b = await createRocmBackend({ device: 'host' });
    reads = 0;
    const e = await b.prepare(part, counted, { communicator: peer }).catch((x: unknown) => x);
    expect((e as Error).message).toMatch(/^test: no weight '/);
    await b.dispose();
  });
}, 120_000);
