import { BackendUnavailableError, GraphBuilder, runOnce, SyntheticWeightSource, type Tensor } from '@hcsp/core';
import { afterEach, describe, expect, it } from 'vitest';
import { nativeDeviceOps } from './nativeDevice.ts';
import { loadNativeAddon } from './nativeAddon.ts';
import { GpuRuntimeUnavailableError, NativeOutOfMemoryError, NativeShapeError, NativeSizeError, native } from './nativeErrors.ts';
import { createRocmBackend } from './rocmBackend.ts';

const addon = loadNativeAddon();
const noWeights = new SyntheticWeightSource([], 0);
const bf16 = (shape: number[], seed = 1): Tensor => ({
  dtype: 'bf16',
  shape,
  data: Uint16Array.from({ length: shape.reduce((a, b) => a * b, 1) }, (_, i) => 0x3f80 + ((i * 7 + seed) % 64)),
});

const savedEnv = { hip: process.env.HCSP_HIP_LIB, cuda: process.env.HCSP_CUDA_LIB };
afterEach(() => {
  addon.setMemoryLimit(0);
  for (const [k, v] of [
    ['HCSP_HIP_LIB', savedEnv.hip],
    ['HCSP_CUDA_LIB', savedEnv.cuda],
  ] as const) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

function addGraph(rows: number, cols: number) {
  const b = new GraphBuilder(1);
  const a = b.input('a', [rows, cols], 'bf16');
  const c = b.input('b', [rows, cols], 'bf16');
  const y = b.value('y', [rows, cols], 'bf16', 0);
  b.node({ op: 'add', rank: 0, layer: 0, scope: 'add', inputs: [a, c], outputs: [y], attrs: {} });
  b.markOutput(y);
  return b.build();
}

describe('rocm backend on the host device', () => {
  it('a wrong-sized buffer is a NativeSizeError naming the bytes given and needed', async () => {
    const ops = nativeDeviceOps(addon, 'exact');
    const t = { dtype: 'bf16', shape: [2, 3], data: new Uint16Array(5) } as Tensor;
    const err = await ops.upload({ id: 'x', shape: [2, 3], dtype: 'bf16', kind: 'input' } as never, t).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NativeSizeError);
    expect((err as Error).message).toBe('upload: a buffer of 10 bytes for a bf16[2,3] tensor, which needs 12');
  });

  it('mismatched shapes reaching a kernel are a NativeShapeError naming both', async () => {
    const x = addon.upload('bf16', [2, 3], new Uint16Array(6));
    const y = addon.upload('bf16', [3, 3], new Uint16Array(9));
    try {
      const err = await native(() => addon.run('add', [x, y], {}, 'exact')).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(NativeShapeError);
      expect((err as Error).message).toBe('add: shapes [2,3] and [3,3] differ');
    } finally {
      addon.free(x);
      addon.free(y);
    }
  });

  it('a memory plan over the device limit is a NativeOutOfMemoryError at prepare, naming the pool and the limit, and leaves nothing allocated', async () => {
    const before = addon.stats().liveTensors;
    const backend = await createRocmBackend({ device: 'host', memoryLimitBytes: 4096 });
    const g = addGraph(64, 64);
    const feeds = new Map([
      ['a', bf16([64, 64])],
      ['b', bf16([64, 64], 2)],
    ]);
    const err = await runOnce(backend, g, feeds, noWeights).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NativeOutOfMemoryError);
    // the run's values (two inputs and the output, 8192 bytes each) are reserved when the session opens
    expect((err as Error).message).toMatch(/host device out of memory: the memory plan's pool of 24576 bytes, with 0 bytes in use, passes the limit 4096/);
    expect(addon.stats().liveTensors).toBe(before);
  });

  it('prepare, run and dispose leave no allocation behind; outputs are bit-exact', async () => {
    const before = addon.stats();
    const backend = await createRocmBackend({ device: 'host' });
    const g = addGraph(5, 7);
    const feeds = new Map([
      ['a', bf16([5, 7])],
      ['b', bf16([5, 7], 3)],
    ]);
    const prepared = await backend.prepare(g, noWeights);
    const r1 = await prepared.run(feeds);
    const r2 = await prepared.run(feeds);
    await prepared.dispose();
    const after = addon.stats();
    expect(after.liveTensors).toBe(before.liveTensors);
    expect(after.liveBytes).toBe(before.liveBytes);
    expect(after.allocations - before.allocations).toBe(2 * 3);
    const out = r1.values.get(g.outputs[0])!.data as Uint16Array;
    expect(Array.from(r2.values.get(g.outputs[0])!.data as Uint16Array)).toEqual(Array.from(out));
    const cpu = await runOnce(new (await import('@hcsp/core')).CpuBackend(), g, feeds, noWeights);
    expect(Array.from(out)).toEqual(Array.from(cpu.values.get(g.outputs[0])!.data as Uint16Array));
  });

  it('a shape whose element count overflows is a NativeShapeError, not a tensor smaller than its shape', async () => {
    const before = addon.stats().liveTensors;
    for (const shape of [
      [2 ** 62, 4],
      [2 ** 32, 2 ** 32],
      [2 ** 40, 2 ** 30, 0],
    ]) {
      const err = await native(() => addon.upload('bf16', shape, new Uint16Array(0))).catch((e: unknown) => e);
      expect(err, JSON.stringify(shape)).toBeInstanceOf(NativeShapeError);
      expect((err as Error).message).toMatch(/^shape \[[0-9,]+\] has more than 2\^60 elements$/);
    }
    expect(addon.stats().liveTensors).toBe(before);
    // an empty tensor with sane dimensions is still fine
    const empty = addon.upload('bf16', [0, 4], new Uint16Array(0));
    expect(empty.shape).toEqual([0, 4]);
    addon.free(empty);
  });

  it('dispose() puts back the host memory limit a backend set; a bad limit is refused before anything opens', async () => {
    const limited = await createRocmBackend({ device: 'host', memoryLimitBytes: 4096 });
    expect(addon.stats().limitBytes).toBe(4096);
    await limited.dispose();
    expect(addon.stats().limitBytes).toBe(0);
    const next = await createRocmBackend({ device: 'host' });
    const out = await runOnce(
      next,
      addGraph(64, 64),
      new Map([
        ['a', bf16([64, 64])],
        ['b', bf16([64, 64], 2)],
      ]),
      noWeights,
    );
    expect(out.values.get('y')!.shape).toEqual([64, 64]);
    await next.dispose();
    await expect(createRocmBackend({ device: 'host', memoryLimitBytes: -1 })).rejects.toThrow('rocm backend: memoryLimitBytes must be an integer >= 0, got -1');
    expect(addon.stats().limitBytes).toBe(0);
  });

  it('a GPU device without its runtime is a typed error listing the libraries tried, never a run on the host', async () => {
    process.env.HCSP_HIP_LIB = '/nonexistent/libamdhip64.so.7';
    const hip = await createRocmBackend({ device: 'hip' }).catch((e: unknown) => e);
    expect(hip).toBeInstanceOf(GpuRuntimeUnavailableError);
    expect(hip).toBeInstanceOf(BackendUnavailableError);
    expect((hip as Error).message).toBe(
      "rocm backend, device hip: no HIP runtime found: tried /nonexistent/libamdhip64.so.7 (set HCSP_HIP_LIB to the library's path)",
    );
    process.env.HCSP_CUDA_LIB = '/nonexistent/libcuda.so.1';
    const cuda = await createRocmBackend({ device: 'cuda' }).catch((e: unknown) => e);
    expect(cuda).toBeInstanceOf(GpuRuntimeUnavailableError);
    expect((cuda as Error).message).toBe(
      "rocm backend, device cuda: no CUDA runtime found: tried /nonexistent/libcuda.so.1 (set HCSP_CUDA_LIB to the library's path)",
    );
  });

  it('without an override the HIP probe tries ROCm 7, 6, then 5', () => {
    delete process.env.HCSP_HIP_LIB;
    const p = addon.gpuRuntime('hip');
    // on a ROCm machine one of them loads; elsewhere the message lists them in order
    if (!p.found) expect(p.detail).toBe('tried libamdhip64.so.7, libamdhip64.so.6, libamdhip64.so.5, libamdhip64.so');
    else expect(p.library).toMatch(/^libamdhip64\.so/);
  });

  it('--device auto says which device it picked and why the others were passed over', async () => {
    process.env.HCSP_HIP_LIB = '/nonexistent/libamdhip64.so';
    process.env.HCSP_CUDA_LIB = '/nonexistent/libcuda.so';
    const b = await createRocmBackend({ device: 'auto' });
    expect(b.device).toBe('host');
    expect(b.describe()).toMatch(/auto picked host: hip: no HIP runtime found: tried \/nonexistent\/libamdhip64\.so .*; cuda: no CUDA runtime found/);
  });

  it('kernels: GPU devices launch the production kernels unless asked for the reference-order ones; the host device has only those', async () => {
    const fast = await createRocmBackend({ device: 'emulated' });
    expect([fast.kernels, fast.gpu?.kernels]).toEqual(['fast', 'fast']);
    expect(fast.describe()).toMatch(/production \(fast\) kernels/);
    const exact = await createRocmBackend({ device: 'emulated', kernels: 'exact' });
    expect([exact.kernels, exact.gpu?.kernels]).toEqual(['exact', 'exact']);
    expect(Object.values(exact.precision).every((c) => c.maxUlp === 0)).toBe(true);
    expect((await createRocmBackend({ device: 'host' })).kernels).toBe('exact');
    await expect(createRocmBackend({ device: 'host', kernels: 'fast' })).rejects.toThrow(/host device has only the reference-order kernels/);
    await expect(createRocmBackend({ device: 'emulated', kernels: 'quick' as never })).rejects.toThrow(/unknown kernels mode 'quick' \(known: fast, exact\)/);
    expect(() => addon.openGpu('emulated', { kernels: 'quick' as never })).toThrow(/openGpu: kernels must be 'exact' or 'fast', got 'quick'/);
  });

  it('the BLAS GEMM mode loads OpenBLAS with its core type set', async () => {
    const b = await createRocmBackend({ device: 'host', gemm: 'blas' });
    expect(b.describe()).toMatch(/OpenBLAS sgemm \(libopenblas\.so\.0, OPENBLAS_CORETYPE=\w+\)/);
    expect(b.precision.gemm.maxUlp).toBeGreaterThan(0);
    expect(b.precision.elementwise.maxUlp).toBe(0);
  });
});

describe('typed errors through the graph loop', () => {
  it("a queued kernel's typed error keeps its class and names the node it came from, raised at the run's sync", async () => {
    // an error only the kernel can see (GraphSession checks every node's declarations at open):
    // a QSA selection whose row 0 lists a block past its one visible block
    const b = new GraphBuilder(1);
    const [q, k, v] = ['q', 'k', 'v'].map((id) => b.input(id, [2, 2], 'bf16'));
    const blocks = b.input('blocks', [2, 2], 'i32');
    const o = b.value('o', [2, 2], 'bf16', 0);
    const attrs = { heads: 1, kvHeads: 1, headDim: 2, scale: 1, compressRatio: 1, width: 2 };
    b.node({ op: 'attnCausalQsa', rank: 0, layer: 0, scope: 'attn', inputs: [q, k, v, blocks], outputs: [o], attrs });
    b.markOutput(o);
    const backend = await createRocmBackend({ device: 'host' });
    const feeds = new Map<string, Tensor>([
      ['q', bf16([2, 2])],
      ['k', bf16([2, 2], 2)],
      ['v', bf16([2, 2], 3)],
      ['blocks', { dtype: 'i32', shape: [2, 2], data: Int32Array.from([0, 5, 0, 1]) }],
    ]);
    const before = addon.stats().liveTensors;
    const err = await runOnce(backend, b.build(), feeds, noWeights).catch((x: unknown) => x);
    expect(err).toBeInstanceOf(NativeShapeError);
    expect((err as Error).message).toBe('attn (attnCausalQsa, rank 0): attnCausalQsa: QSA selection: row 0 entry 1 is 5, expected -1 past its 1 blocks');
    expect(addon.stats().liveTensors).toBe(before);
  });
});
