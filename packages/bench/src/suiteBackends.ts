// The backends the suite runs, and which ceilings each is set against.
import { backendLabel, type BackendOptions } from '@hcsp/backends';

export interface SuiteBackend {
  label: string;
  name: string;
  options: BackendOptions;
  /** the ceilings it is set against: this machine's (CPU), or its own GPU's */
  ceilings: 'machine' | 'gpu' | 'adapter';
}

const variant = (name: string, options: BackendOptions, ceilings: SuiteBackend['ceilings']): SuiteBackend => ({
  label: backendLabel(name, options),
  name,
  options,
  ceilings,
});

/** Every backend and device of the registry the suite runs (a GPU's, when the machine has it). */
export const SUITE_BACKENDS: readonly SuiteBackend[] = [
  variant('cpu', {}, 'machine'),
  variant('webgpu', {}, 'adapter'),
  variant('rocm', { device: 'host', gemm: 'exact' }, 'machine'),
  variant('rocm', { device: 'host', gemm: 'blas' }, 'machine'),
  variant('rocm', { device: 'emulated' }, 'machine'),
  variant('rocm', { device: 'hip' }, 'gpu'),
  variant('rocm', { device: 'cuda' }, 'gpu'),
];

/** A software WebGPU adapter runs on this machine's CPUs: the machine's ceilings are its own. */
export function isSoftwareAdapter(describe: string): boolean {
  return /swiftshader|llvmpipe|lavapipe|software|warp/i.test(describe);
}
