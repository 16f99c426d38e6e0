import { CpuBackend, type Backend } from '@hcsp/core';
import { checkWasmMemory } from './wasmMemory.ts';
// the device table alone: the backend itself (and its native addon) loads when created
import { GPU_KINDS, ROCM_OPTIONS } from '@hcsp/backend-rocm/devices';

// The one list of backends: the CLI, the cross-backend test suites and the benchmark all
// take it from here. A backend that needs a device loads lazily (its module pulls in a
// device host or a native addon); when no device can be had it throws core's
// BackendUnavailableError, which reaches the caller as it is (never wrapped into a plain Error).

/** A backend's options by name, as the CLI and test labels spell them (e.g. { device: 'host', gemm: 'blas' }). */
export type BackendOptions = Readonly<Record<string, string>>;

export interface BackendEntry {
  readonly name: string;
  /** one line for --help */
  readonly summary: string;
  /** each option's allowed values, the default first */
  readonly options: Readonly<Record<string, readonly string[]>>;
  /** the configurations every cross-backend suite runs (one with the defaults when absent) */
  readonly testVariants?: readonly BackendOptions[];
  /**
   * The multi-process communicators (@hcsp/ranks' COMMUNICATORS: prefill --comm mpi|nccl)
   * whose rank's part this backend runs (its prepare takes the communicator), each with the
   * option values it needs ({} for none); absent: the backend runs no rank of its own.
   */
  readonly comm?: Readonly<Record<string, Readonly<Record<string, readonly string[]>>>>;
  create(options?: BackendOptions): Promise<Backend>;
}

export const BACKENDS: readonly BackendEntry[] = [
  {
    name: 'cpu',
    summary: 'the CPU reference (the oracle; all ranks in this process)',
    options: {},
    comm: { mpi: {} },
    create: async () => new CpuBackend(),
  },
  {
    name: 'webgpu',
    summary: 'WGSL kernels on a WebGPU device (dawn.node on a hardware adapter, else headless Chromium)',
    options: {},
    create: async () => {
      checkWasmMemory('webgpu');
      const { createWebGpuBackend } = await import('@hcsp/backend-webgpu');
      return createWebGpuBackend();
    },
  },
  {
    name: 'rocm',
    summary:
      'the native backend: C++ kernels on the host device (--device host), HIP or CUDA GPUs (--device hip|cuda), the GPU kernel sources emulated on the host (--device emulated)',
    // kernels: GPU devices only (fast by default); the host device takes 'exact' alone
    options: ROCM_OPTIONS,
    testVariants: [{ device: 'host' }, { device: 'host', gemm: 'blas' }, { device: 'emulated' }, { device: 'emulated', kernels: 'exact' }],
    // RCCL/NCCL runs on a GPU (the emulated device has none)
    comm: { mpi: {}, nccl: { device: GPU_KINDS } },
    create: async (options = {}) => {
      const { createRocmBackend } = await import('@hcsp/backend-rocm');
      return createRocmBackend(options as Parameters<typeof createRocmBackend>[0]);
    },
  },
];

export function backendNames(): string[] {
  return BACKENDS.map((b) => b.name);
}

/** The entry by name, or an error listing the known names. */
export function findBackend(name: string): BackendEntry {
  const entry = BACKENDS.find((b) => b.name === name);
  if (!entry) throw new Error(`unknown backend '${name}' (known: ${backendNames().join(', ')})`);
  return entry;
}

/** Options checked against the entry's: an unknown option or value names the allowed ones. */
export function checkBackendOptions(entry: BackendEntry, options: BackendOptions): BackendOptions {
  for (const [k, v] of Object.entries(options)) {
    const allowed = entry.options[k];
    if (!allowed) {
      const known = Object.keys(entry.options);
      throw new Error(`backend '${entry.name}' has no option '${k}'${known.length ? ` (its options: ${known.join(', ')})` : ' (it takes no options)'}`);
    }
    if (!allowed.includes(v)) throw new Error(`backend '${entry.name}': ${k} must be one of ${allowed.join(', ')}, got '${v}'`);
  }
  return options;
}

/** Starts the backend by name, with its options. */
export function createBackend(name: string, options: BackendOptions = {}): Promise<Backend> {
  const entry = findBackend(name);
  return entry.create(checkBackendOptions(entry, options));
}

/** "rocm:device=host:gemm=blas": a backend and its options, as test titles and xcheck SPECs write them. */
export function backendLabel(name: string, options: BackendOptions = {}): string {
  return [name, ...Object.entries(options).map(([k, v]) => `${k}=${v}`)].join(':');
}
