import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useFakeGpuWithBlasLt } from '../../../test/support/fakeBlasLt.ts';
import { bf16Values, fp8Values } from '../../../test/support/seededValues.ts';
import { addonPath, type GpuDevice, loadNativeAddon, type NativeTensor } from './nativeAddon.ts';
import { GpuRuntimeUnavailableError, NativeError, NativeOutOfMemoryError, NativeUnsupportedError, native } from './nativeErrors.ts';
import { createRocmBackend } from './rocmBackend.ts';
import { GraphBuilder, SyntheticWeightSource } from '@hcsp/core';

// The host side of the hip and cuda devices (native/src/gpu/hip_runtime.cc, cuda_runtime.cc,
// blaslt.cc) without a GPU: the runtime probes' messages, and the devices opened over small fake
// vendor libraries compiled here (a libamdhip64 and a libcuda from test/support/fakeGpuLibraries.ts,
// a hipBLASLt and a cuBLASLt from test/support/fakeBlasLt.ts, whose "device" memory is host memory, whose "code objects" are text
// files listing kernel names, and whose launches and GEMMs compute on the host). They check what this machine can check: the
// symbols bound, device discovery, code-object loading and kernel lookup by name, grids, the
// kernel arguments as passed, memory through the Memory base (counts, limits, out of memory),
// every error naming its call, and the vendor GEMMs' descriptors (the column-major mapping of
// y = x w^T, types, transposes, the outer-vector scales), computed by the fake in BLAS semantics
// and compared with the host device. What only a GPU can check: the real libraries' ABI values
// and layouts (taken from the vendors' headers, cited in the ABI headers), the real kernels.

const addon = loadNativeAddon();

const fake = useFakeGpuWithBlasLt('hcsp-gpurt-', [
  'HCSP_HIP_LIB',
  'HCSP_CUDA_LIB',
  'HCSP_HIPBLASLT_LIB',
  'HCSP_CUBLASLT_LIB',
  'FAKE_GPU_LOG',
  'FAKE_GPU_COUNT',
  'FAKE_COUNT_ERROR',
  'FAKE_INIT_ERROR',
  'FAKE_GCN_ARCH',
  'FAKE_GPU_MEMORY',
  'FAKE_SYNC_ERROR',
  'FAKE_LAUNCH_ERROR',
  'FAKE_NO_SCALE_MODE',
  'FAKE_MEMSET_ERROR',
  'FAKE_NO_ALGO',
]);
const { lib, log, logText } = fake;
const codeObjects = (name: string, arch: string, files: Record<string, string[]>) => fake.codeObjects(name, arch, files);

function useFakeHip() {
  process.env.HCSP_HIP_LIB = lib('fakehip.so');
  process.env.FAKE_GPU_LOG = log();
}
function useFakeCuda() {
  process.env.HCSP_CUDA_LIB = lib('fakecuda.so');
  process.env.FAKE_GPU_LOG = log();
}

const bytes = (t: NativeTensor) => Array.from(new Uint8Array(addon.download(t)));

async function withTensors<T>(fn: (keep: (t: NativeTensor) => NativeTensor) => Promise<T>): Promise<T> {
  const live: NativeTensor[] = [];
  try {
    return await fn((t) => {
      live.push(t);
      return t;
    });
  } finally {
    for (const t of live) if (!t.freed) addon.free(t);
  }
}

/** y = x w^T of seeded bf16 x [rows, inF] (seed) and w [outF, inF] (seed + 1) through the vendor GEMM on gpu: bit for bit the host's exact GEMM */
async function expectVendorLinearExact(
  gpu: GpuDevice,
  keep: (t: NativeTensor) => NativeTensor,
  rows: number,
  inF: number,
  outF: number,
  seed: number,
): Promise<void> {
  const xv = bf16Values(rows * inF, seed),
    wv = bf16Values(outF * inF, seed + 1);
  const y = await addon.run('linear', [keep(addon.upload('bf16', [rows, inF], xv, gpu)), keep(addon.upload('bf16', [outF, inF], wv, gpu))], {}, 'vendor', gpu);
  const ref = await addon.run('linear', [keep(addon.upload('bf16', [rows, inF], xv)), keep(addon.upload('bf16', [outF, inF], wv))], {}, 'exact');
  expect(bytes(keep(y[0]!))).toEqual(bytes(keep(ref[0]!)));
}

describe('GPU runtime probes', () => {
  it('HIP: names what it tried, or what the runtime answered', () => {
    process.env.HCSP_HIP_LIB = '/nonexistent/libamdhip64.so.7';
    expect(addon.gpuRuntime('hip')).toEqual({ found: false, library: '', devices: 0, detail: 'tried /nonexistent/libamdhip64.so.7' });
    useFakeHip();
    expect(addon.gpuRuntime('hip')).toEqual({ found: true, library: lib('fakehip.so'), devices: 1, detail: '' });
    process.env.FAKE_GPU_COUNT = '0';
    process.env.FAKE_COUNT_ERROR = '100';
    expect(addon.gpuRuntime('hip')).toEqual({
      found: true,
      library: lib('fakehip.so'),
      devices: 0,
      detail: 'hipGetDeviceCount returned error 100 (no CUDA-capable device is detected)',
    });
  });

  it('CUDA: the driver library (libcuda), cuInit then cuDeviceGetCount', () => {
    delete process.env.HCSP_CUDA_LIB;
    const p = addon.gpuRuntime('cuda');
    // on an NVIDIA machine the driver loads; elsewhere the message lists what was tried
    if (!p.found) expect(p.detail).toBe('tried libcuda.so.1, libcuda.so');
    else expect(p.library).toMatch(/^libcuda\.so/);
    process.env.HCSP_CUDA_LIB = '/nonexistent/libcuda.so.1';
    expect(addon.gpuRuntime('cuda').detail).toBe('tried /nonexistent/libcuda.so.1');
    useFakeCuda();
    expect(addon.gpuRuntime('cuda')).toEqual({ found: true, library: lib('fakecuda.so'), devices: 1, detail: '' });
    process.env.FAKE_INIT_ERROR = '100';
    expect(addon.gpuRuntime('cuda').detail).toBe('cuInit returned error 100 (no CUDA-capable device is detected)');
  });

  it('a runtime that sees no GPU is a GpuRuntimeUnavailableError saying so', async () => {
    useFakeHip();
    process.env.FAKE_GPU_COUNT = '0';
    const e = await createRocmBackend({ device: 'hip' }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(GpuRuntimeUnavailableError);
    expect((e as Error).message).toBe(`rocm backend, device hip: the HIP runtime ${lib('fakehip.so')} sees no GPU`);
    useFakeCuda();
    process.env.FAKE_INIT_ERROR = '100';
    const c = await createRocmBackend({ device: 'cuda' }).catch((x: unknown) => x);
    expect(c).toBeInstanceOf(GpuRuntimeUnavailableError);
    expect((c as Error).message).toBe(
      `rocm backend, device cuda: the CUDA runtime ${lib('fakecuda.so')} sees no GPU (cuInit returned error 100 (no CUDA-capable device is detected))`,
    );
  });
});

describe('openGpu without the vendor library', () => {
  it('names the libraries it tried (typed: unsupported here)', async () => {
    process.env.HCSP_HIP_LIB = '/nonexistent/libamdhip64.so.7';
    const hip = await native(() => addon.openGpu('hip')).catch((x: unknown) => x);
    expect(hip).toBeInstanceOf(NativeUnsupportedError);
    expect((hip as Error).message).toBe("no HIP runtime found: tried /nonexistent/libamdhip64.so.7 (set HCSP_HIP_LIB to the library's path)");
    process.env.HCSP_CUDA_LIB = '/nonexistent/libcuda.so.1';
    const cuda = await native(() => addon.openGpu('cuda')).catch((x: unknown) => x);
    expect(cuda).toBeInstanceOf(NativeUnsupportedError);
    expect((cuda as Error).message).toBe("no CUDA runtime found: tried /nonexistent/libcuda.so.1 (set HCSP_CUDA_LIB to the library's path)");
  });

  it('a library without the runtime symbols is refused naming the first missing one', async () => {
    process.env.HCSP_HIP_LIB = lib('fakecuda.so');
    const e = await native(() => addon.openGpu('hip')).catch((x: unknown) => x);
    expect((e as Error).message).toBe(`the HIP runtime ${lib('fakecuda.so')} has no hipGetDeviceCount (not a HIP runtime library?)`);
  });
});

type Kind = 'hip' | 'cuda';
const KINDS: { kind: Kind; arch: string; ext: string; use: () => void; alloc: string; describe: RegExp; cap: number; blasEnv: string; blasLib: string }[] = [
  {
    kind: 'hip',
    arch: 'gfx942',
    ext: 'hsaco',
    use: useFakeHip,
    alloc: 'hipMalloc',
    describe: /^Fake Instinct MI308X \(gfx942:sramecc\+:xnack-, 80 CUs, wavefront 64, 192\.0 GiB, .*fakehip\.so\)$/,
    cap: 80 * 32,
    blasEnv: 'HCSP_HIPBLASLT_LIB',
    blasLib: 'fakehipblaslt.so',
  },
  {
    kind: 'cuda',
    arch: 'sm_90',
    ext: 'cubin',
    use: useFakeCuda,
    alloc: 'cuMemAlloc',
    describe: /^Fake H200 \(sm_90, 132 SMs, warp 32, 141\.0 GiB, .*fakecuda\.so\)$/,
    cap: 132 * 32,
    blasEnv: 'HCSP_CUBLASLT_LIB',
    blasLib: 'fakecublaslt.so',
  },
];

for (const K of KINDS) {
  describe(`the ${K.kind} device over a fake runtime`, () => {
    const open = (folder: string, device = 0): GpuDevice => addon.openGpu(K.kind, { device, codeObjects: folder });
    const basic = () =>
      codeObjects(`${K.kind}-basic`, K.arch, {
        [`basic.${K.ext}`]: ['hcsp_add_bf16', 'hcsp_slice_cols_bytes'],
        [`gemm.${K.ext}`]: ['hcsp_gemm_linear_bf16', 'hcsp_gemm_linear_bf16_v8', 'hcsp_gemm_fp8_ptpc'],
      });

    it('opens the device: arch, description, the code objects of its arch', () => {
      K.use();
      const gpu = open(basic());
      expect(gpu.kind).toBe(K.kind);
      expect(gpu.arch).toBe(K.arch);
      expect(gpu.describe()).toMatch(K.describe);
      expect(gpu.stats().liveTensors).toBe(0);
    });

    it('runs a kernel by name with the arguments as declared, grids of 256-thread blocks capped by the device', async () => {
      K.use();
      const gpu = open(basic());
      for (const n of [5, 1000, K.cap * 256 + 7]) {
        await withTensors(async (keep) => {
          const a = bf16Values(n, 1),
            b = bf16Values(n, 2);
          const onGpu = await addon.run('add', [keep(addon.upload('bf16', [n], a, gpu)), keep(addon.upload('bf16', [n], b, gpu))], {}, 'exact', gpu);
          const onHost = await addon.run('add', [keep(addon.upload('bf16', [n], a)), keep(addon.upload('bf16', [n], b))], {}, 'exact');
          expect(bytes(keep(onGpu[0]!))).toEqual(bytes(keep(onHost[0]!)));
          const grid = Math.min(Math.ceil(n / 256), K.cap);
          expect(logText()).toContain(`launch hcsp_add_bf16 grid=${grid},1,1 block=256,1,1 shared=0 extra=(nil)`);
        });
        rmSync(log(), { force: true });
      }
      expect(gpu.stats().liveTensors).toBe(0);
      expect(gpu.stats().liveBytes).toBe(0);
    });

    it("memory goes through the Memory base: counted, limited, and the runtime's out of memory is typed", async () => {
      K.use();
      const gpu = open(basic());
      const t = addon.upload('bf16', [1000], bf16Values(1000, 3), gpu);
      expect(gpu.stats()).toMatchObject({ liveTensors: 1, liveBytes: 2000 });
      // the device block is the pool's: whole 256-byte units
      expect(logText()).toMatch(new RegExp(`${K.alloc} 2048`));
      addon.free(t);
      expect(gpu.stats()).toMatchObject({ liveTensors: 0, liveBytes: 0, pooledBytes: 2048 });
      // the pool's block back to the device, so that the next allocation asks the runtime
      addon.trimPool(gpu);
      expect(gpu.stats()).toMatchObject({ pooledBytes: 0 });
      gpu.setMemoryLimit(1000);
      const limited = await native(() => addon.upload('bf16', [1000], bf16Values(1000, 3), gpu)).catch((x: unknown) => x);
      expect(limited).toBeInstanceOf(NativeOutOfMemoryError);
      expect((limited as Error).message).toMatch(new RegExp(`^${K.kind}:0 device out of memory: 2000 bytes requested for a bf16\\[1000\\] tensor`));
      gpu.setMemoryLimit(0);
      process.env.FAKE_GPU_MEMORY = '1500';
      const oom = await native(() => addon.upload('bf16', [1000], bf16Values(1000, 3), gpu)).catch((x: unknown) => x);
      expect(oom).toBeInstanceOf(NativeOutOfMemoryError);
      const call = K.kind === 'hip' ? 'hipMalloc' : 'cuMemAlloc_v2';
      expect((oom as Error).message).toBe(`${K.kind}:0 device out of memory: ${call} of 2048 bytes failed: out of memory (code 2)`);
      expect(gpu.stats()).toMatchObject({ liveTensors: 0, liveBytes: 0 });
    });

    it('an upload copies its bytes over without a memset; a freed block is reused from the pool and goes back to the device at trimPool', async () => {
      K.use();
      const gpu = open(basic());
      const allocs = (): number =>
        logText()
          .split('\n')
          .filter((l) => l.startsWith(`${K.alloc} `)).length;
      const frees = (): number =>
        logText()
          .split('\n')
          .filter((l) => /^(hipFree|cuMemFree)/.test(l)).length;
      const t = addon.upload('bf16', [1000], bf16Values(1000, 3), gpu);
      expect(logText()).not.toMatch(/hipMemset|cuMemsetD8/);
      const [a0, f0] = [allocs(), frees()];
      addon.free(t);
      const again = addon.upload('bf16', [1000], bf16Values(1000, 4), gpu);
      expect([allocs(), frees()]).toEqual([a0, f0]);
      expect(Array.from(new Uint16Array(addon.download(again)))).toEqual(Array.from(bf16Values(1000, 4)));
      addon.free(again);
      addon.trimPool(gpu);
      expect(frees()).toBe(f0 + 1);
      expect(gpu.stats()).toMatchObject({ liveTensors: 0, liveBytes: 0, pooledBytes: 0 });
    });

    it('every runtime error names its call (and the kernel for launches)', async () => {
      K.use();
      const gpu = open(basic());
      await withTensors(async (keep) => {
        const a = keep(addon.upload('bf16', [8], bf16Values(8, 1), gpu));
        process.env.FAKE_LAUNCH_ERROR = '98';
        const launch = await native(() => addon.run('add', [a, a], {}, 'exact', gpu)).catch((x: unknown) => x);
        expect(launch).toBeInstanceOf(NativeError);
        const launchCall = K.kind === 'hip' ? 'hipModuleLaunchKernel' : 'cuLaunchKernel';
        expect((launch as Error).message).toMatch(new RegExp(`${launchCall} failed for kernel hcsp_add_bf16: invalid device function \\(code 98\\)`));
        delete process.env.FAKE_LAUNCH_ERROR;
        process.env.FAKE_SYNC_ERROR = '700';
        const sync = await native(() => gpu.synchronize()).catch((x: unknown) => x);
        expect((sync as Error).message).toBe(`${K.kind === 'hip' ? 'hipStreamSynchronize' : 'cuStreamSynchronize'} failed: fake error (code 700)`);
      });
    });

    it('a kernel missing from the code objects is an error naming it and the folder', async () => {
      K.use();
      const folder = codeObjects(`${K.kind}-other`, K.arch, { [`other.${K.ext}`]: ['hcsp_other_kernel'] });
      const gpu = open(folder);
      await withTensors(async (keep) => {
        const a = keep(addon.upload('bf16', [8], bf16Values(8, 1), gpu));
        const e = await native(() => addon.run('add', [a, a], {}, 'exact', gpu)).catch((x: unknown) => x);
        expect((e as Error).message).toMatch(
          new RegExp(
            `kernel hcsp_add_bf16 is in none of the code objects in ${join(folder, K.arch).replace(/[.+]/g, '\\$&')} \\(other\\.${K.ext}\\): rebuild them`,
          ),
        );
      });
    });

    it('refuses a folder without code objects for the arch, an unreadable code object, a device index past the count', async () => {
      K.use();
      const empty = lib(`${K.kind}-empty`);
      mkdirSync(empty, { recursive: true });
      const none = await native(() => open(empty)).catch((x: unknown) => x);
      expect(none).toBeInstanceOf(NativeUnsupportedError);
      expect((none as Error).message).toBe(
        `no ${K.kind === 'hip' ? 'HIP' : 'CUDA'} code objects for ${K.arch} in ${join(empty, K.arch)} (build them with native/scripts/build-gpu-kernels.sh ${K.arch})`,
      );
      const bad = lib(`${K.kind}-bad`);
      mkdirSync(join(bad, K.arch), { recursive: true });
      writeFileSync(join(bad, K.arch, `x.${K.ext}`), 'not a code object\0');
      const load = await native(() => open(bad)).catch((x: unknown) => x);
      expect((load as Error).message).toBe(
        `${K.kind === 'hip' ? 'hipModuleLoadData' : 'cuModuleLoadData'} failed for ${join(bad, K.arch, `x.${K.ext}`)}: device kernel image is invalid (code 200)`,
      );
      const index = await native(() => open(basic(), 3)).catch((x: unknown) => x);
      expect((index as Error).message).toBe(`${K.kind} device 3 does not exist: ${lib(K.kind === 'hip' ? 'fakehip.so' : 'fakecuda.so')} sees 1 GPU`);
    });

    it('the default code-object folder is native/build/gpu next to the addon', async () => {
      K.use();
      // the fake refuses the real code objects (they are not "FAKE" text): the error names the file it read
      const e = await native(() => addon.openGpu(K.kind)).catch((x: unknown) => x);
      expect((e as Error).message).toMatch(
        new RegExp(
          `native/build/gpu/${K.arch}/\\w+\\.${K.ext}|no ${K.kind === 'hip' ? 'HIP' : 'CUDA'} code objects for ${K.arch} in .*native/build/gpu/${K.arch}`,
        ),
      );
    });

    it('the vendor GEMM without its library names what it tried', async () => {
      K.use();
      process.env[K.blasEnv] = '/nonexistent/libblaslt.so';
      const gpu = open(basic());
      await withTensors(async (keep) => {
        const x = keep(addon.upload('bf16', [2, 8], bf16Values(16, 1), gpu));
        const w = keep(addon.upload('bf16', [3, 8], bf16Values(24, 2), gpu));
        const e = await native(() => addon.run('linear', [x, w], {}, 'vendor', gpu)).catch((x: unknown) => x);
        expect(e).toBeInstanceOf(NativeUnsupportedError);
        expect((e as Error).message).toMatch(
          new RegExp(
            `no ${K.kind === 'hip' ? 'hipBLASLt' : 'cuBLASLt'} found for the vendor GEMM: tried /nonexistent/libblaslt\\.so \\(set ${K.blasEnv} to the library's path\\)`,
          ),
        );
      });
    });

    it('the vendor bf16 GEMM: y = x w^T as the column-major TN product (the fake computes it in BLAS terms, equal to the host)', async () => {
      K.use();
      process.env[K.blasEnv] = lib(K.blasLib);
      const gpu = open(basic());
      const [rows, inF, outF] = [5, 24, 7];
      await withTensors((keep) => expectVendorLinearExact(gpu, keep, rows, inF, outF, 11));
      const [opN, opT, compute] = K.kind === 'hip' ? [111, 112, 2] : [0, 1, 68];
      const text = logText();
      expect(text).toContain(`desc compute=${compute} scale=0`);
      expect(text).toContain(`layout type=14 rows=${inF} cols=${outF} ld=${inF}`);
      expect(text).toContain(`layout type=14 rows=${inF} cols=${rows} ld=${inF}`);
      expect(text).toContain(`layout type=14 rows=${outF} cols=${rows} ld=${outF}`);
      expect(text).toContain(`matmul m=${outF} n=${rows} k=${inF} transA=${opT} transB=${opN} ws=${32 << 20}`);
      expect(text).toContain(`workspace ${32 << 20}`);
      // the workspace is the device's, counted against its limit
      expect(gpu.stats().liveBytes).toBe(32 << 20);
      expect(gpu.stats().liveTensors).toBe(0);
    });

    const fmt = K.kind === 'hip' ? 'e4m3fnuz' : 'e4m3fn';
    it(`the vendor FP8 PTPC GEMM (${fmt}): outer-vector scales, sw on A (outF), sx on B (rows)`, async () => {
      K.use();
      process.env[K.blasEnv] = lib(K.blasLib);
      const gpu = open(basic());
      const [rows, inF, outF] = [4, 32, 6];
      const dtype = `fp8${fmt}`;
      const attrs = { format: fmt, scaleOrder: 'weightFirst' };
      await withTensors(async (keep) => {
        const q = fp8Values(rows * inF, 5),
          qW = fp8Values(outF * inF, 6);
        const sx = Float32Array.from({ length: rows }, (_, i) => 0.01 + i * 0.003),
          sw = Float32Array.from({ length: outF }, (_, i) => 0.02 + i * 0.0007);
        const ins = (g: GpuDevice | null) => [
          keep(addon.upload(dtype, [rows, inF], q, g)),
          keep(addon.upload('f32', [rows], sx, g)),
          keep(addon.upload(dtype, [outF, inF], qW, g)),
          keep(addon.upload('f32', [outF], sw, g)),
        ];
        const y = await addon.run('fp8LinearPtpc', ins(gpu), attrs, 'vendor', gpu);
        // the fake applies sw then sx: the reference's weightFirst order, so equal bit for bit
        const ref = await addon.run('fp8LinearPtpc', ins(null), attrs, 'exact');
        expect(bytes(keep(y[0]!))).toEqual(bytes(keep(ref[0]!)));
        const text = logText();
        const fp8Type = K.kind === 'hip' ? 1000 : 28;
        expect(text).toContain(`layout type=${fp8Type} rows=${inF} cols=${outF} ld=${inF}`);
        expect(text).toContain(`layout type=${fp8Type} rows=${inF} cols=${rows} ld=${inF}`);
        expect(text).toContain('attr 31 = 3');
        expect(text).toContain('attr 32 = 3');
        // a library without the mode refuses it when a shape is planned: on a device that has planned none
        process.env.FAKE_NO_SCALE_MODE = '1';
        const fresh = open(basic());
        const e = await native(() => addon.run('fp8LinearPtpc', ins(fresh), attrs, 'vendor', fresh)).catch((x: unknown) => x);
        expect(e).toBeInstanceOf(NativeUnsupportedError);
        expect((e as Error).message).toMatch(/_SCALE_MODE = OUTER_VEC_32F\) failed .*has no per-token x per-channel scale mode.*use the exact GEMM/);
      });
    });

    it('vendor GEMMs are planned once per shape: descriptors, layouts and the heuristic on its first call only (fp8 too, its scales set per call)', async () => {
      K.use();
      process.env[K.blasEnv] = lib(K.blasLib);
      const gpu = open(basic());
      const count = (re: RegExp) => (logText().match(re) ?? []).length;
      /** descriptors, layouts, preferences created; heuristic queries; matmuls */
      /** the objects of kind `what` this test's log shows created and then destroyed (each line ends in the object's address) */
      const destroyedHere = (what: string): number => {
        const live = new Set<string>();
        let destroyed = 0;
        for (const line of logText().split('\n')) {
          if (!line.startsWith(`${what} `)) continue;
          const address = line.slice(line.lastIndexOf(' ') + 1);
          if (line.startsWith(`${what} destroy `)) destroyed += live.delete(address) ? 1 : 0;
          else if (line.includes(' at ')) live.add(address);
        }
        return destroyed;
      };
      const calls = () => [count(/^desc compute=/gm), count(/^layout type=/gm), count(/^pref create /gm), count(/^heuristic /gm), count(/^matmul /gm)];
      await withTensors(async (keep) => {
        const linear = (rows: number, inF: number, outF: number, seed: number) => expectVendorLinearExact(gpu, keep, rows, inF, outF, seed);
        await linear(5, 24, 7, 21);
        expect(calls()).toEqual([1, 3, 1, 1, 1]);
        // the same shape with other data at other addresses: the plan's descriptors, no query
        await linear(5, 24, 7, 23);
        expect(calls()).toEqual([1, 3, 1, 1, 2]);
        await linear(3, 24, 7, 25);
        expect(calls()).toEqual([2, 6, 2, 2, 3]);
        expect(gpu.vendorGemm()).toEqual({ plans: 2, heuristicQueries: 2, fallbacks: [], invariantPlans: 0, invariantRowCounts: 0, refusedCandidates: 0 });

        const fmt = K.kind === 'hip' ? 'e4m3fnuz' : 'e4m3fn';
        const attrs = { format: fmt, scaleOrder: 'weightFirst' };
        const [rows, inF, outF] = [4, 32, 6];
        const fp8 = async (seed: number) => {
          const q = fp8Values(rows * inF, seed),
            qW = fp8Values(outF * inF, seed + 1);
          const sx = Float32Array.from({ length: rows }, (_, i) => 0.01 * seed + i * 0.003),
            sw = Float32Array.from({ length: outF }, (_, i) => 0.02 * seed + i * 0.0007);
          const ins = (g: GpuDevice | null) => [
            keep(addon.upload(`fp8${fmt}`, [rows, inF], q, g)),
            keep(addon.upload('f32', [rows], sx, g)),
            keep(addon.upload(`fp8${fmt}`, [outF, inF], qW, g)),
            keep(addon.upload('f32', [outF], sw, g)),
          ];
          const y = await addon.run('fp8LinearPtpc', ins(gpu), attrs, 'vendor', gpu);
          const ref = await addon.run('fp8LinearPtpc', ins(null), attrs, 'exact');
          expect(bytes(keep(y[0]!))).toEqual(bytes(keep(ref[0]!)));
        };
        await fp8(1);
        await fp8(2); // other scales: the second call's pointers, set on the planned descriptor
        expect(calls()).toEqual([3, 9, 3, 3, 5]);
        expect(count(new RegExp(`^attr ${K.kind === 'hip' ? 5 : 17} = pointer$`, 'gm'))).toBe(2);
        expect(gpu.vendorGemm()).toEqual({ plans: 3, heuristicQueries: 3, fallbacks: [], invariantPlans: 0, invariantRowCounts: 0, refusedCandidates: 0 });
        // kept for the device's life (counted by address: an earlier test's device that the
        // garbage collector frees meanwhile destroys its own plans into the same log)
        expect([destroyedHere('desc'), destroyedHere('layout'), destroyedHere('pref')]).toEqual([0, 0, 0]);
      });
    });

    it('a session plans its vendor GEMMs when it opens (its recorded run warmed up: no kernel, no matmul), and its first run allocates nothing', async () => {
      K.use();
      process.env[K.blasEnv] = lib(K.blasLib);
      const count = (re: RegExp) => (logText().match(re) ?? []).length;
      const backend = await createRocmBackend({ device: K.kind, codeObjects: basic(), gemm: 'vendor' });
      try {
        const b = new GraphBuilder(1);
        const x = b.input('x', [5, 24], 'bf16');
        const w = b.weight({ name: 'w' }, [7, 24]);
        const y = b.value('r0/y', [5, 7], 'bf16', 0);
        b.node({ op: 'linear', rank: 0, layer: 0, scope: 'l', inputs: [x, w], outputs: [y], attrs: {} });
        b.markOutput(y);
        const [heuristics, matmuls] = [count(/^heuristic /gm), count(/^matmul /gm)];
        const session = await backend.prepare(
          b.build(),
          new SyntheticWeightSource([{ name: 'w', shape: [7, 24], dtype: 'bf16', init: { kind: 'normal', std: 1 } }], 1),
        );
        expect([count(/^heuristic /gm) - heuristics, count(/^matmul /gm) - matmuls]).toEqual([1, 0]);
        const r = await session.run(new Map([[x, { dtype: 'bf16', shape: [5, 24], data: bf16Values(120, 3) }]]));
        expect([count(/^heuristic /gm) - heuristics, count(/^matmul /gm) - matmuls]).toEqual([1, 1]);
        expect(r.stats.engine).toMatchObject({ recorded: true, device: { deviceAllocations: 0, deviceFrees: 0, hostSyncs: 1 } });
        await session.dispose();
      } finally {
        await backend.dispose();
      }
    });

    it('a shape the library has no algorithm for runs the exact kernel, said once on stderr and listed; the plans go with the device', () => {
      K.use();
      process.env[K.blasEnv] = lib(K.blasLib);
      // in the library's column-major terms (m = outF, n = rows, k = inF): linear 5x24 . 7x24^T and fp8 4x32 . 6x32^T
      process.env.FAKE_NO_ALGO = '7,5,24 6,4,32';
      const fmt = K.kind === 'hip' ? 'e4m3fnuz' : 'e4m3fn';
      const b64 = (v: ArrayBufferView) => Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');
      const linearCase = (rows: number, inF: number, outF: number, seed: number) => ({
        op: 'linear',
        attrs: {},
        inputs: [
          ['bf16', [rows, inF], b64(bf16Values(rows * inF, seed))],
          ['bf16', [outF, inF], b64(bf16Values(outF * inF, seed + 1))],
        ],
      });
      const cases = [
        linearCase(5, 24, 7, 31),
        {
          op: 'fp8LinearPtpc',
          attrs: { format: fmt, scaleOrder: 'weightFirst' },
          inputs: [
            [`fp8${fmt}`, [4, 32], b64(fp8Values(4 * 32, 33))],
            ['f32', [4], b64(Float32Array.from({ length: 4 }, (_, i) => 0.01 + i * 0.003))],
            [`fp8${fmt}`, [6, 32], b64(fp8Values(6 * 32, 34))],
            ['f32', [6], b64(Float32Array.from({ length: 6 }, (_, i) => 0.02 + i * 0.0007))],
          ],
        },
        linearCase(3, 24, 7, 35), // a shape with an algorithm, beside them
      ];
      // its own process: the line goes to the process's stderr, and the device is dropped (gc) to see its plans go
      const script = `
        const a = require(${JSON.stringify(addonPath())});
        const [kind, folder, cases] = JSON.parse(process.argv[1]);
        const ctor = { bf16: Uint16Array, f32: Float32Array };
        const hex = (t) => { const h = Buffer.from(a.download(t)).toString('hex'); a.free(t); return h; };
        (async () => {
          let gpu = a.openGpu(kind, { codeObjects: folder });
          const results = [];
          for (const c of cases) {
            const run = async (mode, g) => {
              const ins = c.inputs.map(([dtype, shape, data]) => {
                const u8 = Uint8Array.from(Buffer.from(data, 'base64'));
                const C = ctor[dtype] ?? Uint8Array;
                return a.upload(dtype, shape, new C(u8.buffer), g);
              });
              const y = await a.run(c.op, ins, c.attrs, mode, g);
              for (const t of ins) a.free(t);
              return hex(y[0]);
            };
            results.push([await run('vendor', gpu), await run('vendor', gpu), await run('exact', gpu), await run('exact', null)]);
          }
          const stats = gpu.vendorGemm();
          gpu = null;
          for (let i = 0; i < 4; i++) { globalThis.gc(); await new Promise((r) => setImmediate(r)); }
          const logAfterDrop = require('node:fs').readFileSync(process.env.FAKE_GPU_LOG, 'utf8');
          process.stdout.write(JSON.stringify({ results, stats, logAfterDrop }));
        })().catch((e) => { process.stderr.write(String(e && e.stack || e)); process.exit(1); });`;
      const r = spawnSync(process.execPath, ['--expose-gc', '-e', script, JSON.stringify([K.kind, basic(), cases])], { encoding: 'utf8', timeout: 60_000 });
      expect(r.status, r.stderr).toBe(0);
      const { results, stats, logAfterDrop: text } = JSON.parse(r.stdout) as { results: string[][]; stats: unknown; logAfterDrop: string };
      // vendor twice, exact on the device, exact on the host: the same bits (the fake's kernels are the reference's order)
      for (const [v1, v2, exactGpu, host] of results) expect([v1, v2, exactGpu]).toEqual([host, host, host]);
      const [lib_, why] = K.kind === 'hip' ? ['hipBLASLt', ''] : ['cuBLASLt', ' (CUBLAS_STATUS_NOT_SUPPORTED the fake refused it (status 15))'];
      expect(r.stderr.split('\n').filter((l) => l.startsWith('hcsp:'))).toEqual([
        `hcsp: ${lib_} has no algorithm for linear M=5 N=7 K=24 bf16 on ${K.kind}:0${why}; using the exact GEMM kernel`,
        `hcsp: ${lib_} has no algorithm for fp8LinearPtpc M=4 N=6 K=32 fp8${fmt} on ${K.kind}:0${why}; using the exact GEMM kernel`,
      ]);
      expect(stats).toEqual({
        plans: 1,
        invariantPlans: 0,
        invariantRowCounts: 0,
        refusedCandidates: 0,
        heuristicQueries: 3,
        fallbacks: [
          { op: 'linear', m: 5, n: 7, k: 24, dtype: 'bf16' },
          { op: 'fp8LinearPtpc', m: 4, n: 6, k: 32, dtype: `fp8${fmt}` },
        ],
      });
      const count = (re: RegExp) => (text.match(re) ?? []).length;
      // one query per shape; the library's matmul only for the shape it has an algorithm for, the exact kernels for the others (and the exact runs)
      expect(count(/^heuristic /gm)).toBe(3);
      expect(text.match(/^matmul .*$/gm)).toEqual([expect.stringMatching(/^matmul m=7 n=3 k=24 /), expect.stringMatching(/^matmul m=7 n=3 k=24 /)]);
      expect(count(/^launch hcsp_gemm_linear_bf16(_v8)? /gm)).toBe(2 + 1 + 1);
      expect(count(/^launch hcsp_gemm_fp8_ptpc /gm)).toBe(2 + 1);
      // dropping the device destroyed every descriptor, layout and preference its plans held, then the handle
      expect(count(/^desc compute=/gm)).toBe(3);
      expect([count(/^desc destroy /gm), count(/^layout destroy /gm), count(/^pref destroy /gm)]).toEqual([3, 9, 3]);
      const handleDestroyed = text.lastIndexOf('\ndestroy\n');
      expect(handleDestroyed).toBeGreaterThan(Math.max(text.lastIndexOf('desc destroy'), text.lastIndexOf('layout destroy'), text.lastIndexOf('pref destroy')));
    });

    if (K.kind === 'cuda') {
      it('cuBLASLt has no e4m3fnuz: the cuda device refuses that format in vendor mode', async () => {
        K.use();
        process.env[K.blasEnv] = lib(K.blasLib);
        const gpu = open(basic());
        await withTensors(async (keep) => {
          const ins = [
            keep(addon.upload('fp8e4m3fnuz', [2, 16], fp8Values(32, 1), gpu)),
            keep(addon.upload('f32', [2], new Float32Array([1, 1]), gpu)),
            keep(addon.upload('fp8e4m3fnuz', [3, 16], fp8Values(48, 2), gpu)),
            keep(addon.upload('f32', [3], new Float32Array([1, 1, 1]), gpu)),
          ];
          const e = await native(() => addon.run('fp8LinearPtpc', ins, { format: 'e4m3fnuz', scaleOrder: 'weightFirst' }, 'vendor', gpu)).catch(
            (x: unknown) => x,
          );
          expect((e as Error).message).toMatch(/cuBLASLt has no e4m3fnuz type/);
        });
      });
    }
  });
}
