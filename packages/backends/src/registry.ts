import { CpuBackend, type Backend } from '@hcsp/core';

// The one list of backends: the CLI, the cross-backend test suites and the benchmark all
// take it from here. A backend that needs a device loads lazily (its module pulls in a
// device host); when no device can be had it throws core's BackendUnavailableError, which
// reaches the caller as it is (never wrapped into a plain Error).
export interface BackendEntry {
  readonly name: string;
  /** one line for --help */
  readonly summary: string;
  create(): Promise<Backend>;
}

export const BACKENDS: readonly BackendEntry[] = [
  {
    name: 'cpu',
    summary: 'the CPU reference (the oracle; all ranks in this process)',
    create: async () => new CpuBackend(),
  },
  {
    name: 'webgpu',
    summary: 'WGSL kernels on a WebGPU device (dawn.node on a hardware adapter, else headless Chromium)',
    create: async () => {
      const { createWebGpuBackend } = await import('@hcsp/backend-webgpu');
      return createWebGpuBackend();
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

/** Starts the backend by name. */
export function createBackend(name: string): Promise<Backend> {
  return findBackend(name).create();
}
