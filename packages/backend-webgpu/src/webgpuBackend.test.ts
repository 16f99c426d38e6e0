import { describe, expect, it } from 'vitest';
import { createWebGpuBackend, type WebGpuHostChoice } from './webgpuBackend.ts';

describe('createWebGpuBackend', () => {
  it('rejects an unknown host choice, naming it', async () => {
    await expect(createWebGpuBackend({ prefer: 'cuda' as WebGpuHostChoice })).rejects.toThrow(/unknown host choice 'cuda'/);
  });

  it("prefer 'dawn' gives a hardware-adapter backend or says what was tried and why, never a fallback", async () => {
    const outcome = await createWebGpuBackend({ prefer: 'dawn' }).then(
      (b) => b,
      (e: Error) => e,
    );
    if (outcome instanceof Error) {
      // GPU-less machine (this one): no Vulkan driver Dawn accepts, or only SwiftShader
      expect(outcome.message).toMatch(/^webgpu backend: no device\. Tried dawn\.node: dawn\.node( found no WebGPU adapter|'s only adapter is a software one)/);
      expect(outcome.message).not.toMatch(/Chromium/);
    } else {
      expect(outcome.host).toBe('dawn.node');
      expect(outcome.describe()).toMatch(/^webgpu on dawn\.node \(/);
      await outcome.dispose();
    }
  });
});
