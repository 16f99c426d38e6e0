import { describe, expect, it } from 'vitest';
import { useFakeGpuWithBlasLt } from '../../../test/support/fakeBlasLt.ts';
import { bf16Values, fp8Values } from '../../../test/support/seededValues.ts';
import { type GpuDevice, loadNativeAddon, type NativeTensor } from './nativeAddon.ts';
import { NativeUnsupportedError, native } from './nativeErrors.ts';
import { createRocmBackend, VENDOR_GEMM_PRECISION } from './rocmBackend.ts';
import { DEVICE_GEMMS } from './rocmDevices.ts';

// gemm 'vendor-invariant' (native/src/gpu/blaslt.h) over the fake hipBLASLt / cuBLASLt
// (test/support/fakeBlasLt.ts): one algorithm per (op, N, K, dtype), chosen once from the
// heuristic's candidates for a fixed row count and kept for every M; candidates whose k
// partition can depend on M refused; an M the algorithm cannot run an error naming the shape.
// The fake computes every algorithm in the same order, so the bits here say only that the
// library's result came back; which algorithm ran each call is in its log.

const addon = loadNativeAddon();
const fake = useFakeGpuWithBlasLt('hcsp-invgemm-', [
  'HCSP_HIP_LIB',
  'HCSP_CUDA_LIB',
  'HCSP_HIPBLASLT_LIB',
  'HCSP_CUBLASLT_LIB',
  'FAKE_GPU_LOG',
  'FAKE_CANDIDATES',
  'FAKE_UNSUPPORTED_ROWS',
  'FAKE_NO_USO',
]);

const bytes = (t: NativeTensor) => Array.from(new Uint8Array(addon.download(t)));
const count = (re: RegExp) => (fake.logText().match(re) ?? []).length;
/** the algorithm id of each logged matmul of D's column count (the rows) n, in order */
const matmulAlgos = (n?: number) =>
  [...fake.logText().matchAll(/^matmul m=\d+ n=(\d+) .* algo=(\d+)$/gm)].filter((m) => n === undefined || Number(m[1]) === n).map((m) => Number(m[2]));

for (const K of [
  {
    kind: 'hip' as const,
    arch: 'gfx942',
    ext: 'hsaco',
    runtime: ['HCSP_HIP_LIB', 'fakehip.so'],
    blas: ['HCSP_HIPBLASLT_LIB', 'fakehipblaslt.so'],
    library: 'hipBLASLt',
    fmt: 'e4m3fnuz',
  },
  {
    kind: 'cuda' as const,
    arch: 'sm_90',
    ext: 'cubin',
    runtime: ['HCSP_CUDA_LIB', 'fakecuda.so'],
    blas: ['HCSP_CUBLASLT_LIB', 'fakecublaslt.so'],
    library: 'cuBLASLt',
    fmt: 'e4m3fn',
  },
]) {
  describe(`gemm vendor-invariant on the ${K.kind} device (fake ${K.library})`, () => {
    const folder = () =>
      fake.codeObjects(`${K.kind}-gemm`, K.arch, { [`gemm.${K.ext}`]: ['hcsp_gemm_linear_bf16', 'hcsp_gemm_linear_bf16_v8', 'hcsp_gemm_fp8_ptpc'] });
    const open = (): GpuDevice => {
      process.env[K.runtime[0]] = fake.lib(K.runtime[1]);
      process.env[K.blas[0]] = fake.lib(K.blas[1]);
      process.env.FAKE_GPU_LOG = fake.log();
      return addon.openGpu(K.kind, { codeObjects: folder() });
    };
    /** y = x w^T for [rows, inF] x [outF, inF] in `mode` on the device, checked against the host's exact GEMM */
    const linear = async (gpu: GpuDevice, mode: 'vendor' | 'vendor-invariant', rows: number, inF: number, outF: number, seed: number) => {
      const live: NativeTensor[] = [];
      const keep = (t: NativeTensor) => {
        live.push(t);
        return t;
      };
      try {
        const xv = bf16Values(rows * inF, seed),
          wv = bf16Values(outF * inF, seed + 1);
        const [y] = await addon.run(
          'linear',
          [keep(addon.upload('bf16', [rows, inF], xv, gpu)), keep(addon.upload('bf16', [outF, inF], wv, gpu))],
          {},
          mode,
          gpu,
        );
        const [ref] = await addon.run('linear', [keep(addon.upload('bf16', [rows, inF], xv)), keep(addon.upload('bf16', [outF, inF], wv))], {}, 'exact');
        expect(bytes(keep(y!))).toEqual(bytes(keep(ref!)));
      } finally {
        for (const t of live) if (!t.freed) addon.free(t);
      }
    };
    const fp8 = async (gpu: GpuDevice, rows: number, inF: number, outF: number, seed: number) => {
      const live: NativeTensor[] = [];
      const keep = (t: NativeTensor) => {
        live.push(t);
        return t;
      };
      try {
        const attrs = { format: K.fmt, scaleOrder: 'weightFirst' };
        const q = fp8Values(rows * inF, seed),
          qW = fp8Values(outF * inF, seed + 1);
        const sx = Float32Array.from({ length: rows }, (_, i) => 0.01 + i * 0.003),
          sw = Float32Array.from({ length: outF }, (_, i) => 0.02 + i * 0.0007);
        const ins = (g: GpuDevice | null) => [
          keep(addon.upload(`fp8${K.fmt}`, [rows, inF], q, g)),
          keep(addon.upload('f32', [rows], sx, g)),
          keep(addon.upload(`fp8${K.fmt}`, [outF, inF], qW, g)),
          keep(addon.upload('f32', [outF], sw, g)),
        ];
        const [y] = await addon.run('fp8LinearPtpc', ins(gpu), attrs, 'vendor-invariant', gpu);
        const [ref] = await addon.run('fp8LinearPtpc', ins(null), attrs, 'exact');
        expect(bytes(keep(y!))).toEqual(bytes(keep(ref!)));
      } finally {
        for (const t of live) if (!t.freed) addon.free(t);
      }
    };

    it('one heuristic query per (op, N, K, dtype), for the fixed row count 4096, and the chosen algorithm runs every M (vendor asks again per M)', async () => {
      process.env.FAKE_CANDIDATES = 'splitk plain';
      const gpu = open();
      for (const rows of [5, 3, 7, 5, 1]) await linear(gpu, 'vendor-invariant', rows, 24, 7, 10 + rows);
      // asked once, for 4096 rows, with room for 8 candidates; the split-k one (42) refused, the plain one (43) kept
      expect(fake.logText().match(/^heuristic .*$/gm)).toEqual(['heuristic m=7 n=4096 k=24 requested=8']);
      expect(matmulAlgos()).toEqual([43, 43, 43, 43, 43]);
      expect(gpu.vendorGemm()).toMatchObject({ plans: 1, invariantPlans: 1, invariantRowCounts: 4, refusedCandidates: 1, heuristicQueries: 1, fallbacks: [] });
      if (K.kind === 'cuda') {
        // cublasLtMatmulAlgoCheck once per new M, with the kept algorithm
        expect(fake.logText().match(/^check .*$/gm)).toEqual([
          'check m=7 n=5 algo=43',
          'check m=7 n=3 algo=43',
          'check m=7 n=7 algo=43',
          'check m=7 n=1 algo=43',
        ]);
      } else {
        // no workspace asked for or given: a split-k or stream-K solution keeps its partials there
        expect(fake.logText()).toContain('workspace 0');
        expect(fake.logText()).toMatch(/^matmul m=7 n=5 k=24 .* ws=0 algo=43$/m);
        // the uniform summation order (no per-workgroup k stagger) requested
        expect(fake.logText()).toContain('attr 105 = 1');
      }
      // another (N, K), and fp8 at the same N, K: a plan each
      await linear(gpu, 'vendor-invariant', 4, 16, 9, 30);
      await fp8(gpu, 4, 24, 7, 40);
      await fp8(gpu, 2, 24, 7, 41);
      expect(count(/^heuristic .* requested=8$/gm)).toBe(3);
      expect(gpu.vendorGemm()).toMatchObject({ plans: 3, invariantPlans: 3, invariantRowCounts: 7, heuristicQueries: 3 });
      // vendor mode on the same device: a plan (and a query, for that M) per row count
      await linear(gpu, 'vendor', 5, 24, 7, 50);
      await linear(gpu, 'vendor', 3, 24, 7, 51);
      expect(fake.logText().match(/^heuristic .* requested=1$/gm)).toEqual(['heuristic m=7 n=5 k=24 requested=1', 'heuristic m=7 n=3 k=24 requested=1']);
      expect(gpu.vendorGemm()).toMatchObject({ plans: 5, invariantPlans: 3, heuristicQueries: 5 });
    });

    it(`split-k and stream-K candidates are refused${K.kind === 'hip' ? ' (hipBLASLt: any needing workspace)' : ''}; with none left the exact kernel runs that (N, K) for every M`, async () => {
      process.env.FAKE_CANDIDATES = 'splitk ws plain';
      const gpu = open();
      await linear(gpu, 'vendor-invariant', 6, 24, 7, 60);
      await linear(gpu, 'vendor-invariant', 2, 24, 7, 61);
      // cuBLASLt: "ws" (43) splits nothing and fits the workspace; hipBLASLt refuses it with the split-k one
      const kept = K.kind === 'cuda' ? 43 : 44;
      expect(matmulAlgos()).toEqual([kept, kept]);
      expect(gpu.vendorGemm()).toMatchObject({ refusedCandidates: K.kind === 'cuda' ? 1 : 2 });

      process.env.FAKE_CANDIDATES = 'splitk splitk';
      const other = open();
      await linear(other, 'vendor-invariant', 6, 24, 7, 62);
      await linear(other, 'vendor-invariant', 2, 24, 7, 63);
      expect(other.vendorGemm()).toMatchObject({
        plans: 0,
        invariantPlans: 0,
        refusedCandidates: 2,
        heuristicQueries: 1,
        fallbacks: [{ op: 'linear', m: 6, n: 7, k: 24, dtype: 'bf16' }],
      });
      // no library matmul on that device: both M through the exact kernel (the fake runtime logs its launches)
      expect(matmulAlgos()).toEqual([kept, kept]);
      expect(fake.launches('hcsp_gemm_linear_bf16(?:_v8)?')).toHaveLength(2);
    });

    it('an M the chosen algorithm does not run is an error naming the shape; no other algorithm is tried', async () => {
      process.env.FAKE_CANDIDATES = 'plain plain';
      process.env.FAKE_UNSUPPORTED_ROWS = '3';
      const gpu = open();
      await linear(gpu, 'vendor-invariant', 5, 24, 7, 70);
      const e = await native(() => linear(gpu, 'vendor-invariant', 3, 24, 7, 71)).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(NativeUnsupportedError);
      const algo = K.kind === 'cuda' ? String.raw`\(id 42\)` : String.raw`\(solution 42\)`;
      const call = K.kind === 'cuda' ? 'cublasLtMatmulAlgoCheck: CUBLAS_STATUS_NOT_SUPPORTED' : 'hipblasLtMatmul: HIPBLAS_STATUS_NOT_SUPPORTED';
      expect((e as Error).message).toMatch(
        new RegExp(
          `vendor-invariant: the ${K.library} algorithm ${algo} chosen for linear N=7 K=24 bf16 does not run M=3 .*${call}.*no other algorithm is tried`,
        ),
      );
      // one query in all, and no matmul of 3 rows by any algorithm
      expect(count(/^heuristic /gm)).toBe(1);
      expect(matmulAlgos(3)).toEqual([]);
      // and again on the next call of that M (nothing was cached for it)
      const again = await native(() => linear(gpu, 'vendor-invariant', 3, 24, 7, 72)).catch((x: unknown) => x);
      expect((again as Error).message).toMatch(/does not run M=3/);
    });

    if (K.kind === 'hip') {
      it('a hipBLASLt without the uniform summation order still pins one solution with no workspace', async () => {
        process.env.FAKE_NO_USO = '1';
        process.env.FAKE_CANDIDATES = 'plain';
        const gpu = open();
        await linear(gpu, 'vendor-invariant', 5, 24, 7, 80);
        await linear(gpu, 'vendor-invariant', 9, 24, 7, 81);
        expect(fake.logText()).toContain('attr 105 refused');
        expect(matmulAlgos()).toEqual([42, 42]);
        expect(gpu.vendorGemm()).toMatchObject({ invariantPlans: 1, heuristicQueries: 1 });
      });
    }

    it('the backend: a mode of the device (not its default), the vendor tolerance, said in describe()', async () => {
      process.env.FAKE_CANDIDATES = 'plain';
      process.env[K.runtime[0]] = fake.lib(K.runtime[1]);
      process.env[K.blas[0]] = fake.lib(K.blas[1]);
      expect(DEVICE_GEMMS[K.kind]).toEqual(['vendor', 'vendor-invariant', 'exact']);
      // kernels 'exact': the GEMM class's tolerance alone (the fast kernels fold their own into it)
      const backend = await createRocmBackend({ device: K.kind, codeObjects: folder(), gemm: 'vendor-invariant', kernels: 'exact' });
      try {
        expect(backend.gemm).toBe('vendor-invariant');
        expect(backend.describe()).toContain(`${K.library} (row-count-invariant: one algorithm per N, K)`);
        expect(backend.precision.gemm.maxUlp).toBe(VENDOR_GEMM_PRECISION.gemm.maxUlp);
        expect(backend.precision.reduction.maxUlp).toBe(0);
        expect(backend.precision.gemm.note).toMatch(/same bits on T rows and on T\/tp/);
      } finally {
        await backend.dispose();
      }
      const e = await createRocmBackend({ device: 'emulated', gemm: 'vendor-invariant' }).catch((x: unknown) => x);
      expect((e as Error).message).toBe("rocm backend: the emulated device has no 'vendor-invariant' GEMM (it has: exact)");
    });
  });
}
