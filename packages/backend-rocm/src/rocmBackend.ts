import {
  exactPrecision,
  GraphSession,
  resolveWeightRows,
  type Backend,
  type BackendPrecision,
  type Graph,
  type PreparedGraph,
  type SessionOptions,
  type WeightSource,
} from '@hcsp/core';
import { hostDeviceOps } from './hostDevice.ts';
import { loadNativeAddon, type GemmMode, type NativeAddon } from './nativeAddon.ts';
import { GpuRuntimeUnavailableError, native } from './nativeErrors.ts';

export type RocmDeviceChoice = 'host' | 'hip' | 'cuda' | 'auto';
export const ROCM_DEVICES: readonly RocmDeviceChoice[] = ['host', 'hip', 'cuda', 'auto'];
export const GEMM_MODES: readonly GemmMode[] = ['exact', 'blas'];

export interface RocmBackendOptions {
  /** default 'host'; 'auto' takes the first of hip, cuda, host that works and says so in describe() */
  device?: RocmDeviceChoice;
  /** 'exact' (default): the reference's k order, bit-exact; 'blas': OpenBLAS sgemm, another order */
  gemm?: GemmMode;
  /** the device's memory limit in bytes (0: none); beyond it an allocation is a NativeOutOfMemoryError */
  memoryLimitBytes?: number;
}

const EXACT_NOTE =
  'every host kernel is C++ in the CPU reference\'s accumulation order, with core\'s fp32 math library ported operation for operation, ' +
  'built with -ffp-contract=off; the GEMMs vectorize across outputs (each lane sums its output in k order, FMAs only on exact bf16 products); ' +
  'collectives use the reference summation orders. Bit-exact, checked op by op in test/.';

/**
 * OpenBLAS's sgemm sums the same exact fp32 products as the reference, in its own blocked
 * order. Reordering a k-term fp32 sum moves it by at most about k * 2^-24 * sum|x*w|; measured
 * against the bf16 ulp of the row's largest output (2^-8 of it, relative) that stays below
 * one ulp for the model's k (<= 16384) unless the whole row cancels; one more ulp covers the
 * bf16 rounding landing on the other side. So: 2 row-scaled ulps for a GEMM, nothing else.
 */
export const BLAS_GEMM_PRECISION: BackendPrecision = {
  ...exactPrecision(EXACT_NOTE),
  gemm: {
    maxUlp: 2,
    note: 'OpenBLAS sgemm reorders each fp32 sum (blocked k, its own kernel order); bounded by 2 bf16 ulps of the row\'s largest output (rowScaledError)',
  },
};

export interface RocmBackend extends Backend {
  readonly device: 'host' | 'hip' | 'cuda';
  readonly gemm: GemmMode;
  readonly addon: NativeAddon;
}

function hipUnavailable(addon: NativeAddon, kind: 'hip' | 'cuda'): string | null {
  const probe = addon.gpuRuntime(kind);
  const name = kind === 'hip' ? 'HIP' : 'CUDA';
  const envVar = kind === 'hip' ? 'HCSP_HIP_LIB' : 'HCSP_CUDA_LIB';
  if (!probe.found) return `no ${name} runtime found: ${probe.detail} (set ${envVar} to the library's path)`;
  if (probe.devices === 0) return `the ${name} runtime ${probe.library} sees no GPU${probe.detail ? ` (${probe.detail})` : ''}`;
  // the GPU kernels are the next issue's work: say so rather than run elsewhere
  return `the ${name} runtime ${probe.library} sees ${probe.devices} GPU(s), but this build of the native addon has no ${name} kernels`;
}

/** The native backend. A GPU device that cannot start is an error, never a silent run on the host. */
export async function createRocmBackend(options: RocmBackendOptions = {}): Promise<RocmBackend> {
  const choice = options.device ?? 'host';
  if (!ROCM_DEVICES.includes(choice)) throw new Error(`rocm backend: unknown device '${String(choice)}' (known: ${ROCM_DEVICES.join(', ')})`);
  const gemm = options.gemm ?? 'exact';
  if (!GEMM_MODES.includes(gemm)) throw new Error(`rocm backend: unknown gemm mode '${String(gemm)}' (known: ${GEMM_MODES.join(', ')})`);
  const addon = loadNativeAddon();
  const autoNotes: string[] = [];
  if (choice === 'hip' || choice === 'cuda') {
    const why = hipUnavailable(addon, choice);
    throw new GpuRuntimeUnavailableError(choice, `rocm backend, device ${choice}: ${why}`);
  }
  if (choice === 'auto') {
    for (const kind of ['hip', 'cuda'] as const) autoNotes.push(`${kind}: ${hipUnavailable(addon, kind)}`);
  }
  if (gemm === 'blas') await native(() => addon.blas());
  if (options.memoryLimitBytes !== undefined) {
    if (!(Number.isInteger(options.memoryLimitBytes) && options.memoryLimitBytes >= 0)) {
      throw new Error(`rocm backend: memoryLimitBytes must be an integer >= 0, got ${options.memoryLimitBytes}`);
    }
    addon.setMemoryLimit(options.memoryLimitBytes);
  }
  const info = addon.info();
  const ops = hostDeviceOps(addon, gemm);
  const gemmText = gemm === 'blas' ? `OpenBLAS sgemm (${addon.blas().path}, OPENBLAS_CORETYPE=${addon.blas().coretype || 'unset'})` : `exact ${info.isa} GEMM`;
  const picked = choice === 'auto' ? ` (auto picked host: ${autoNotes.join('; ')})` : '';
  return {
    name: 'rocm',
    device: 'host',
    gemm,
    addon,
    precision: gemm === 'blas' ? BLAS_GEMM_PRECISION : exactPrecision(EXACT_NOTE),
    describe: () => `rocm on the host device (${info.threads} threads, ${gemmText})${picked}`,
    prepare: (graph: Graph, weights: WeightSource, session: Partial<SessionOptions> = {}): Promise<PreparedGraph> =>
      GraphSession.open(graph, ops, (decl, rows) => resolveWeightRows(weights, decl.weight!, rows), { backend: 'rocm', ...session }),
    dispose: async () => {},
  };
}
