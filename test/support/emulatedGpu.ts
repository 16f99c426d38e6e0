// The emulated GPU device (the rocm backend's GPU code paths run on the host) for one describe
// block of the native backend's tests.
import { afterAll, beforeAll } from 'vitest';
import type { GpuDevice } from '../../packages/backend-rocm/src/nativeAddon.ts';
import { createRocmBackend, type RocmBackend } from '../../packages/backend-rocm/src/rocmBackend.ts';

/** A rocm backend on the emulated device, opened before the block's tests and disposed after them: read its fields inside the tests. */
export function useEmulatedGpu(): { readonly backend: RocmBackend; readonly gpu: GpuDevice } {
  let backend: RocmBackend | undefined;
  beforeAll(async () => {
    backend = await createRocmBackend({ device: 'emulated' });
  });
  afterAll(async () => {
    await backend?.dispose();
  });
  return {
    get backend() {
      return backend!;
    },
    get gpu() {
      return backend!.gpu!;
    },
  };
}
