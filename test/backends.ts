import type { Backend } from '@hcsp/core';
import { BACKENDS, backendLabel } from '@hcsp/backends';
import { afterAll, beforeAll, describe } from 'vitest';

// Every backend the cross-backend suites run against (TensorFlow.js's describeWithFlags,
// without its global registry): the registry's list and each entry's test variants (the
// native backend's exact and BLAS GEMM modes), so a new backend joins every suite. A backend
// that cannot start fails its suite loudly; none is skipped.

/** describe() once per backend variant; `get()` returns the started backend inside the tests. */
export function describeWithBackends(title: string, body: (get: () => Backend, label: string) => void): void {
  for (const b of BACKENDS) {
    for (const options of b.testVariants ?? [{}]) {
      const label = backendLabel(b.name, options);
      describe(`${title} [${label}]`, () => {
        let backend: Backend | null = null;
        beforeAll(async () => {
          backend = await b.create(options);
        });
        afterAll(async () => {
          await backend?.dispose();
        });
        body(() => {
          if (!backend) throw new Error(`backend ${label} did not start`);
          return backend;
        }, label);
      });
    }
  }
}
