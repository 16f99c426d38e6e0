import type { RocmBackend } from '@hcsp/backend-rocm';
import { createBackend } from '@hcsp/backends';
import { describe, expect, it } from 'vitest';
import { gpuCeilings } from './suiteCeilings.ts';

describe("a GPU's ceilings, their kernel calls checked on the host device", () => {
  it('the linear kernel at n^3 and a trim copy, each measured, with what measured it', async () => {
    let backend: RocmBackend;
    try {
      backend = (await createBackend('rocm', { device: 'host', gemm: 'exact' })) as RocmBackend;
    } catch (e) {
      expect((e as Error).message).toMatch(/native addon/);
      return;
    }
    const c = await gpuCeilings(backend, 64, 1 << 20);
    expect(c.matrixGflops).toBeGreaterThan(0);
    expect(c.bandwidthGBps).toBeGreaterThan(0);
    expect(c.matrixNote).toMatch(/exact linear kernel .* at 64x64x64$/);
    expect(c.bandwidthNote).toMatch(/^device trim \(a copy\) of a 1(\.0)? MiB bf16 tensor/);
    expect(backend.addon.stats().liveTensors).toBe(0);
    await backend.dispose();
  });
});
