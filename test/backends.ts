import type { Backend } from '@hcsp/core';
import { BACKENDS } from '@hcsp/backends';
import { afterAll, beforeAll, describe } from 'vitest';

// Every backend the cross-backend suites run against (TensorFlow.js's describeWithFlags,
// without its global registry): the registry's list, so a new backend joins every suite. A
// backend that cannot start fails its suite loudly; none is skipped.

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
