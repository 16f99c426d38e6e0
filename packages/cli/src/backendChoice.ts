import { Option } from 'commander';
import { deviceHelp } from '@hcsp/backend-rocm/devices';
import { checkBackendOptions, findBackend, type BackendOptions } from '@hcsp/backends';

// The options that pick a backend's device, GEMM and kernels (--device, --gemm, --kernels): they belong to the
// backends that declare them (the native one today); given to another they are an error, not
// ignored.

export interface BackendChoiceFlags {
  device?: string;
  gemm?: string;
  kernels?: string;
}

export function deviceOption(): Option {
  return new Option('--device <name>', `rocm backend's device: ${deviceHelp()}`);
}

export function gemmOption(): Option {
  return new Option(
    '--gemm <mode>',
    "rocm backend's GEMM: exact (the reference's order, bit-exact; the default on host and emulated) | blas (host: OpenBLAS sgemm) | vendor (hip, cuda: hipBLASLt / cuBLASLt, the library's choice per shape; the default there) | vendor-invariant (hip, cuda: the same libraries, one algorithm per (N, K) for every row count, so SP on and off give the same bits; xcheck's default on hip and cuda); blas and the vendor modes have a declared tolerance",
  );
}

export function kernelsOption(): Option {
  return new Option(
    '--kernels <mode>',
    "rocm backend's GPU kernels: fast (the default on hip, cuda and emulated: chunked GatedDeltaNet, tiled attention, grouped MoE, within a declared tolerance) | exact (the reference-order kernels, bit-exact with the CPU reference; the host device's only kind)",
  );
}

/** The backend's options from the flags, checked against what the backend declares. */
export function backendOptionsFromFlags(backend: string, flags: BackendChoiceFlags): BackendOptions {
  const entry = findBackend(backend);
  const options: Record<string, string> = {};
  for (const [flag, value] of [
    ['device', flags.device],
    ['gemm', flags.gemm],
    ['kernels', flags.kernels],
  ] as const) {
    if (value === undefined) continue;
    if (!entry.options[flag]) throw new Error(`--${flag} applies to a backend with devices (rocm), not --backend ${backend}`);
    options[flag] = value;
  }
  try {
    return checkBackendOptions(entry, options);
  } catch (e) {
    // the flag's own spelling in the message
    throw new Error((e as Error).message.replace(/^backend '(\w+)': (\w+) must/, (_m, b, k) => `--${k} for backend ${b} must`));
  }
}
