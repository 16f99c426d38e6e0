import { ROCM_OPTIONS } from '@hcsp/backend-rocm/devices';
import { BackendUnavailableError } from '@hcsp/core';
import { describe, expect, it } from 'vitest';
import { backendNames, createBackend, findBackend } from './registry.ts';

describe('backend registry', () => {
  it('lists every backend once', () => {
    expect(backendNames()).toEqual(['cpu', 'webgpu', 'rocm']);
  });

  it('names the known backends for an unknown one', () => {
    expect(() => findBackend('tpu')).toThrow("unknown backend 'tpu' (known: cpu, webgpu, rocm)");
  });

  it("takes the rocm backend's options from its device table", () => {
    expect(findBackend('rocm').options).toBe(ROCM_OPTIONS);
  });

  it('starts the cpu reference', async () => {
    const b = await createBackend('cpu');
    expect(b.name).toBe('cpu');
    await b.dispose();
  });

  it('keeps the typed "no device" error of a backend that cannot start', async () => {
    const saved = { chromium: process.env.HCSP_CHROMIUM, host: process.env.HCSP_WEBGPU_HOST };
    // the Chromium host, at an executable path that does not exist (dawn.node is not tried:
    // on a machine with a GPU it would start): the WebGPU backend finds no device host
    process.env.HCSP_WEBGPU_HOST = 'chromium';
    process.env.HCSP_CHROMIUM = '/nonexistent/chromium';
    try {
      const err = await createBackend('webgpu').then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(BackendUnavailableError);
      expect((err as BackendUnavailableError).backend).toBe('webgpu');
      expect((err as Error).message).toMatch(/no Chromium at \/nonexistent\/chromium/);
    } finally {
      for (const [k, v] of [
        ['HCSP_CHROMIUM', saved.chromium],
        ['HCSP_WEBGPU_HOST', saved.host],
      ] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });
});
