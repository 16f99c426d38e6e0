import { CpuBackend, type Backend } from '@hcsp/core';

export const BACKEND_NAMES = ['cpu', 'webgpu'] as const;
export type BackendName = (typeof BACKEND_NAMES)[number];

export function parseBackendName(v: string): BackendName {
  if ((BACKEND_NAMES as readonly string[]).includes(v)) return v as BackendName;
  throw new Error(`unknown backend '${v}' (known: ${BACKEND_NAMES.join(', ')})`);
}

/** The backend by name. WebGPU loads lazily: it starts a device host (dawn.node or Chromium). */
export async function createBackend(name: BackendName): Promise<Backend> {
  switch (name) {
    case 'cpu':
      return new CpuBackend();
    case 'webgpu': {
      const { createWebGpuBackend } = await import('@hcsp/backend-webgpu');
      return createWebGpuBackend();
    }
  }
}
