// The rocm backend's device kinds, one row each: the backend list (packages/backends), the CLI's
// option checks and the backend itself take their names, GEMM modes, kernels and GPU runtimes
// from here. Adding a device kind is a row here plus its native runtime. This module loads
// nothing (no addon), so the backend list can import it without a native build.

/** how the GEMMs run: 'exact' the reference's k order; 'blas' OpenBLAS; 'vendor' hipBLASLt / cuBLASLt; 'vendor-invariant' those with one algorithm per (N, K, dtype) */
export type GemmMode = 'exact' | 'blas' | 'vendor' | 'vendor-invariant';
/** a GPU device's kernels: the production ones ('fast') or the reference-order ones ('exact', bit-exact) */
export type KernelMode = 'exact' | 'fast';

/** A vendor GPU runtime the addon opens with dlopen (native/src/gpu/vendor_abi.h names the same libraries). */
export interface GpuRuntimeKind {
  /** as messages name it: 'HIP', 'CUDA' */
  readonly label: string;
  /** the variable that names the runtime library's path */
  readonly libraryVariable: string;
  /** the variables that mask the devices the runtime sees, the one a rank usually sets second (HIP) or first (CUDA) */
  readonly maskVariables: readonly string[];
  /** the mask a message suggests to give each rank its own GPU */
  readonly suggestedMask: string;
  /** the vendor GEMM library ('vendor' and 'vendor-invariant') */
  readonly blasLt: string;
}

export interface RocmDeviceKind {
  readonly name: string;
  /** what --help says of it, after its name ('' for nothing) */
  readonly summary: string;
  /** the GEMM modes it has, its default first */
  readonly gemms: readonly GemmMode[];
  /** the kernels it has, its default first */
  readonly kernels: readonly KernelMode[];
  /** how the addon opens it: 'host' (no device), 'emulated' (the GPU kernel sources on the host), or a vendor runtime probed with addon.gpuRuntime */
  readonly open: 'host' | 'emulated' | 'runtime';
  /** the vendor runtime (open 'runtime' only) */
  readonly runtime?: GpuRuntimeKind;
}

const GPU_GEMMS: readonly GemmMode[] = ['vendor', 'vendor-invariant', 'exact'];

/** The device kinds, in the order --help lists them. */
export const ROCM_DEVICE_KINDS = [
  { name: 'host', summary: 'C++ on this CPU', gemms: ['exact', 'blas'], kernels: ['exact'], open: 'host' },
  { name: 'emulated', summary: 'the GPU kernel sources run on this CPU', gemms: ['exact'], kernels: ['fast', 'exact'], open: 'emulated' },
  {
    name: 'hip',
    summary: '',
    gemms: GPU_GEMMS,
    kernels: ['fast', 'exact'],
    open: 'runtime',
    runtime: {
      label: 'HIP',
      libraryVariable: 'HCSP_HIP_LIB',
      // HIP on AMD honours CUDA_VISIBLE_DEVICES as well as its own; ROCr's mask applies first
      maskVariables: ['ROCR_VISIBLE_DEVICES', 'HIP_VISIBLE_DEVICES', 'CUDA_VISIBLE_DEVICES'],
      suggestedMask: 'HIP_VISIBLE_DEVICES',
      blasLt: 'hipBLASLt',
    },
  },
  {
    name: 'cuda',
    summary: '',
    gemms: GPU_GEMMS,
    kernels: ['fast', 'exact'],
    open: 'runtime',
    runtime: {
      label: 'CUDA',
      libraryVariable: 'HCSP_CUDA_LIB',
      maskVariables: ['CUDA_VISIBLE_DEVICES'],
      suggestedMask: 'CUDA_VISIBLE_DEVICES',
      blasLt: 'cuBLASLt',
    },
  },
] as const satisfies readonly RocmDeviceKind[];

export type RocmDevice = (typeof ROCM_DEVICE_KINDS)[number]['name'];
/** the device kinds opened through a vendor runtime */
export type GpuKind = Extract<(typeof ROCM_DEVICE_KINDS)[number], { open: 'runtime' }>['name'];
/** the device kinds that are a GPU device (a vendor runtime or the emulated one) */
export type GpuDeviceKind = Exclude<RocmDevice, 'host'>;
export type RocmDeviceChoice = RocmDevice | 'auto';

/** the row of `name` (a known device kind) */
export function rocmDeviceKind(name: RocmDevice): RocmDeviceKind {
  return ROCM_DEVICE_KINDS.find((d) => d.name === name)!;
}

/** the vendor runtime of a GPU kind */
export function gpuRuntimeKind(kind: GpuKind): GpuRuntimeKind {
  return rocmDeviceKind(kind).runtime!;
}

const union = <T>(lists: readonly (readonly T[])[]): T[] => [...new Set(lists.flat())];

/** the --device values: every kind, then 'auto' (the first vendor runtime that starts, else host) */
export const ROCM_DEVICES: readonly RocmDeviceChoice[] = [...ROCM_DEVICE_KINDS.map((d) => d.name), 'auto'];
/** the vendor runtimes 'auto' tries, in order */
export const GPU_KINDS: readonly GpuKind[] = ROCM_DEVICE_KINDS.flatMap((d) => (d.open === 'runtime' ? [d.name] : []));
/** every GEMM mode some device has, the default device's default first */
export const GEMM_MODES: readonly GemmMode[] = union(ROCM_DEVICE_KINDS.map((d) => d.gemms));
/** every kernels mode, the GPU devices' default first */
export const KERNEL_MODES: readonly KernelMode[] = union([['fast'], ...ROCM_DEVICE_KINDS.map((d) => d.kernels)]);

/** The GEMM modes each device has, its default first. */
export const DEVICE_GEMMS = Object.fromEntries(ROCM_DEVICE_KINDS.map((d) => [d.name, d.gemms])) as Readonly<Record<RocmDevice, readonly GemmMode[]>>;

/** the backend list's options of the rocm backend: each one's values, the default first */
export const ROCM_OPTIONS: Readonly<Record<'device' | 'gemm' | 'kernels', readonly string[]>> = {
  device: ROCM_DEVICES,
  gemm: GEMM_MODES,
  kernels: KERNEL_MODES,
};

/** --device's help: each kind with its summary, then 'auto' */
export function deviceHelp(): string {
  const kinds = ROCM_DEVICE_KINDS.map((d) => (d.summary ? `${d.name} (${d.summary})` : d.name));
  return `${kinds.join(' | ')} | auto (the first of ${[...GPU_KINDS, 'host'].join(', ')} that starts; the report says which)`;
}
