// The GPU MoE's experts stay on the device (native/src/gpu/ops/moe_ops.cc, issue 20 item 3):
// kernels lay out the routed rows from the routing ids, the row count stays in device memory
// and each of the experts' two GEMMs is one grouped launch. On the emulated GPU: the routed sum
// bit for bit the CPU reference's for routings at the layout's edges, with nothing copied back,
// waited for or zeroed inside the node. Over the fake hip and cuda runtimes in vendor mode: the
// grouped exact kernel runs (no BLASLt needed) and nothing is copied back.
import { cpuKernel, type DeviceCounters, type Tensor } from '@hcsp/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useFakeGpuRuntimes } from '../../../test/support/fakeGpuLibraries.ts';
import { mulberry32 } from '../../../test/support/mulberry32.ts';
import { loadNativeAddon, type GpuDevice, type NativeTensor } from './nativeAddon.ts';
import { createRocmBackend, type RocmBackend } from './rocmBackend.ts';

const addon = loadNativeAddon();

interface MoeCase {
  name: string;
  T: number;
  H: number;
  inter: number;
  topK: number;
  firstExpert: number;
  numLocal: number;
  /** [T * topK] routing ids */
  ids: number[];
}

/**
 * seeded bf16 values m * 2^e, m in [-1, 1) (in [0.5, 1) when positive), e an integer in
 * [-spread, spread]: sums of such values round in fp32, so their order of adds shows in the bits
 */
function bf16Values(n: number, seed: number, spread: number, positive = false): Uint16Array {
  const r = mulberry32(seed);
  const f = new Float32Array(n).map(() => (positive ? 0.5 + r() / 2 : r() * 2 - 1) * 2 ** (Math.floor(r() * (2 * spread + 1)) - spread));
  return Uint16Array.from(new Uint32Array(f.buffer), (u) => u >>> 16);
}

/** the moeExperts inputs (x, ids, weights, gateUp, down) of a case, and its attributes */
function inputsOf(c: MoeCase, seed: number): { inputs: Tensor[]; attrs: Record<string, unknown> } {
  expect(c.ids).toHaveLength(c.T * c.topK);
  const inputs: Tensor[] = [
    { dtype: 'bf16', shape: [c.T, c.H], data: bf16Values(c.T * c.H, seed, 8) },
    { dtype: 'i32', shape: [c.T, c.topK], data: Int32Array.from(c.ids) },
    { dtype: 'bf16', shape: [c.T, c.topK], data: bf16Values(c.T * c.topK, seed + 1, 16, true) },
    { dtype: 'bf16', shape: [c.numLocal * 2 * c.inter, c.H], data: bf16Values(c.numLocal * 2 * c.inter * c.H, seed + 2, 8) },
    { dtype: 'bf16', shape: [c.numLocal * c.H, c.inter], data: bf16Values(c.numLocal * c.H * c.inter, seed + 3, 8) },
  ];
  return { inputs, attrs: { firstExpert: c.firstExpert, numLocal: c.numLocal, intermediate: c.inter } };
}

/** seeded distinct ids per token from [0, experts) */
function randomIds(T: number, topK: number, experts: number, seed: number): number[] {
  const r = mulberry32(seed);
  const ids: number[] = [];
  for (let t = 0; t < T; t++) {
    const mine: number[] = [];
    while (mine.length < topK) {
      const e = Math.floor(r() * experts);
      if (!mine.includes(e)) mine.push(e);
    }
    ids.push(...mine);
  }
  return ids;
}

const CASES: MoeCase[] = [
  // the v8 GEMM path (H, inter multiples of 8) and the scalar one
  { name: 'all tokens on one local expert', T: 6, H: 16, inter: 8, topK: 1, firstExpert: 2, numLocal: 3, ids: [3, 3, 3, 3, 3, 3] },
  { name: 'a local expert with no rows', T: 7, H: 16, inter: 8, topK: 2, firstExpert: 0, numLocal: 4, ids: [0, 5, 2, 3, 3, 0, 6, 7, 2, 0, 3, 2, 0, 6] },
  { name: 'a rank owning no routed rows', T: 5, H: 16, inter: 8, topK: 2, firstExpert: 4, numLocal: 4, ids: [0, 1, 2, 3, 1, 0, 3, 2, 0, 2] },
  {
    name: 'topK 4, tokens on several local experts in descending k order (adds by expert, not by k)',
    T: 5,
    H: 24,
    inter: 16,
    topK: 4,
    firstExpert: 0,
    numLocal: 6,
    ids: [5, 3, 1, 0, 2, 7, 4, 1, 4, 3, 2, 1, 6, 7, 8, 5, 1, 0, 5, 4],
  },
  {
    name: 'a token routed to the same expert twice (k order within the expert)',
    T: 3,
    H: 8,
    inter: 8,
    topK: 3,
    firstExpert: 1,
    numLocal: 2,
    ids: [2, 1, 2, 2, 2, 0, 1, 1, 3],
  },
  { name: 'T 1, H and inter not multiples of 8', T: 1, H: 12, inter: 5, topK: 3, firstExpert: 0, numLocal: 3, ids: [2, 0, 1] },
  { name: 'random routing over 16 experts, 8 local', T: 33, H: 20, inter: 12, topK: 3, firstExpert: 4, numLocal: 8, ids: randomIds(33, 3, 16, 77) },
];

const minus = (a: DeviceCounters, b: DeviceCounters) => ({
  hostSyncs: a.hostSyncs - b.hostSyncs,
  copiesFromDevice: a.copiesFromDevice - b.copiesFromDevice,
  bytesFromDevice: a.bytesFromDevice - b.bytesFromDevice,
  copiesToDevice: a.copiesToDevice - b.copiesToDevice,
  memsets: a.memsets - b.memsets,
});

/** waits (without a sync) until the queue's worker has run the node that fills `t`, or 5 s */
async function ran(t: NativeTensor): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!t.computed && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2));
}

describe('moeExperts on the emulated GPU', () => {
  let backend: RocmBackend;
  let gpu: GpuDevice;
  beforeAll(async () => {
    backend = await createRocmBackend({ device: 'emulated', kernels: 'exact' });
    gpu = backend.gpu!;
  });
  afterAll(async () => {
    await backend?.dispose();
  });

  CASES.forEach((c, i) => {
    it(`${c.name}: the reference's bits; no copy back, wait or memset until the run's sync`, async () => {
      const { inputs, attrs } = inputsOf(c, 1000 + 10 * i);
      const [ref] = cpuKernel('moeExperts')(inputs, attrs) as Tensor[];
      const live = gpu.stats().liveTensors;
      // a freed block of the routed sum's size holding NaNs: the pool hands it to the node's
      // output, so a token with no local expert must be written (0), not left as found
      addon.free(addon.upload('f32', [c.T, c.H], new Uint32Array(c.T * c.H).fill(0x7fc00000), gpu));
      const held = inputs.map((t) => addon.upload(t.dtype, t.shape, t.data, gpu));
      try {
        await addon.sync(gpu);
        const c0 = addon.counters(gpu);
        const node = addon.prepareNode(
          'layers.2.mlp.experts (moeExperts, rank 1)',
          'moeExperts',
          attrs,
          'exact',
          gpu,
          [{ dtype: 'f32', shape: [c.T, c.H] }],
          false,
        );
        const [routed] = addon.enqueueNode(node, held) as NativeTensor[];
        held.push(routed!);
        await ran(routed!);
        expect(routed!.computed).toBe(true);
        // the node ran to its end without a read-back, a wait, an upload or a memset
        expect(minus(addon.counters(gpu), c0)).toEqual({ hostSyncs: 0, copiesFromDevice: 0, bytesFromDevice: 0, copiesToDevice: 0, memsets: 0 });
        await addon.sync(gpu);
        expect(minus(addon.counters(gpu), c0)).toEqual({ hostSyncs: 1, copiesFromDevice: 0, bytesFromDevice: 0, copiesToDevice: 0, memsets: 0 });
        const got = Buffer.from(addon.download(routed!));
        const want = ref!.data as Float32Array;
        expect(got.equals(Buffer.from(want.buffer, want.byteOffset, want.byteLength))).toBe(true);
      } finally {
        for (const t of held) addon.free(t);
        await addon.sync(gpu);
      }
      expect(gpu.stats().liveTensors).toBe(live);
    });
  });
});

describe('moeExperts over the fake hip and cuda runtimes in vendor mode', () => {
  const fake = useFakeGpuRuntimes('hcsp-gpumoe-', ['HCSP_HIP_LIB', 'HCSP_CUDA_LIB', 'HCSP_HIPBLASLT_LIB', 'HCSP_CUBLASLT_LIB', 'FAKE_GPU_LOG']);

  const MOE_KERNELS = ['hcsp_moe_layout', 'hcsp_moe_token_rows', 'hcsp_moe_gather_rows', 'hcsp_moe_swiglu_rows', 'hcsp_moe_routed_sum'];
  const GEMM_KERNELS = ['hcsp_gemm_linear_bf16', 'hcsp_gemm_linear_bf16_v8', 'hcsp_gemm_grouped_bf16', 'hcsp_gemm_grouped_bf16_v8'];

  for (const [kind, arch, ext, runtime, blasEnv] of [
    ['hip', 'gfx942', 'hsaco', 'fakehip.so', 'HCSP_HIPBLASLT_LIB'],
    ['cuda', 'sm_90', 'cubin', 'fakecuda.so', 'HCSP_CUBLASLT_LIB'],
  ] as const) {
    it(`${kind}: one grouped exact GEMM launch per expert GEMM, no BLASLt, nothing copied back before the sync`, async () => {
      process.env[kind === 'hip' ? 'HCSP_HIP_LIB' : 'HCSP_CUDA_LIB'] = fake.lib(runtime);
      process.env.FAKE_GPU_LOG = fake.log();
      // no vendor library to find: a BLASLt call would fail the node
      process.env[blasEnv] = '/nonexistent/libblaslt.so';
      const folder = fake.codeObjects(`${kind}-moe`, arch, { [`moe.${ext}`]: MOE_KERNELS, [`gemm.${ext}`]: GEMM_KERNELS });
      const gpu = addon.openGpu(kind, { codeObjects: folder });
      const c = CASES[3]!;
      const { inputs, attrs } = inputsOf(c, 5);
      const held = inputs.map((t) => addon.upload(t.dtype, t.shape, t.data, gpu));
      try {
        await addon.sync(gpu);
        const logBefore = fake.logText().length;
        const c0 = addon.counters(gpu);
        const [routed] = (await addon.run('moeExperts', held, attrs, 'vendor', gpu)) as NativeTensor[];
        held.push(routed!);
        // the one-shot run's own sync, no copy either way
        expect(minus(addon.counters(gpu), c0)).toEqual({ hostSyncs: 1, copiesFromDevice: 0, bytesFromDevice: 0, copiesToDevice: 0, memsets: 0 });
        const launched = [
          ...fake
            .logText()
            .slice(logBefore)
            .matchAll(/^launch (\w+) /gm),
        ].map((m) => m[1]);
        expect(launched).toEqual([
          'hcsp_moe_layout',
          'hcsp_moe_token_rows',
          'hcsp_moe_gather_rows',
          'hcsp_gemm_grouped_bf16_v8',
          'hcsp_moe_swiglu_rows',
          'hcsp_gemm_grouped_bf16_v8',
          'hcsp_moe_routed_sum',
        ]);
      } finally {
        for (const t of held) addon.free(t);
      }
    });
  }
});
