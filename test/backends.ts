import { CpuBackend, type Backend } from '@hcsp/core';
import { createWebGpuBackend } from '@hcsp/backend-webgpu';
import { afterAll, beforeAll, describe } from 'vitest';

// Every backend the cross-backend suites run against (TensorFlow.js's describeWithFlags,
// without its global registry): a suite is written once and runs per backend. A backend
// that cannot start fails its suite loudly; none is skipped.
export interface BackendUnderTest {
  name: string;
  create(): Promise<Backend>;
}

export const BACKENDS: BackendUnderTest[] = [
  { name: 'cpu', create: async () => new CpuBackend() },
  { name: 'webgpu', create: () => createWebGpuBackend() },
];

/** describe() once per backend; `get()` returns the started backend inside the tests. */
export function describeWithBackends(title: string, body: (get: () => Backend, name: string) => void): void {
  for (const b of BACKENDS) {
    describe(`${title} [${b.name}]`, () => {
      let backend: Backend | null = null;
      beforeAll(async () => {
        backend = await b.create();
      });
      afterAll(async () => {
        await backend?.dispose();
      });
      body(() => {
        if (!backend) throw new Error(`backend ${b.name} did not start`);
        return backend;
      }, b.name);
    });
  }
}
