import { FLASH_NEXT, SMALL } from '@hcsp/core';
import { afterAll, describe, expect, it } from 'vitest';
import { createRocmBackend, type RocmBackend } from '@hcsp/backend-rocm';
import { moeFp8Step, moeFp8WeightBytes } from './gpuCheckMoeFp8.ts';

describe('gpu-check FP8 MoE step', () => {
  it("Flash-Next's FP8 experts: one byte per weight and an F32 scale per weight row", () => {
    // 512 experts x (gate-up [1280, 2560] + down [2560, 640]) bytes + (1280 + 2560) F32 scales
    expect(moeFp8WeightBytes(FLASH_NEXT)).toBe(512 * (3 * 2560 * 640 + 4 * (1280 + 2560)));
  });

  let backend: RocmBackend;
  afterAll(async () => backend?.dispose());

  it('times the fast FP8 experts on the emulated device at small shapes and judges them against the copy bandwidth', async () => {
    backend = (await createRocmBackend({ device: 'emulated', gemm: 'exact', kernels: 'fast' })) as RocmBackend;
    const fast = await moeFp8Step(backend, 1e-9, { config: SMALL, T: 16, runs: 1 });
    expect(fast[0]!.line).toMatch(/^MoE experts \(moeExpertsFp8Ptpc, FP8 PTPC, kernels fast\) at T=16, tp 1, small: 16 experts, topK 4, H 128, inter 32; /);
    expect(fast[1]!.pass).toBe(true);
    const slow = await moeFp8Step(backend, 1e12, { config: SMALL, T: 16, runs: 1 });
    expect(slow[1]!.pass).toBe(false);
    expect(slow[1]!.line).toMatch(/^ {2}moeExpertsFp8Ptpc .*FAIL \(over 2x the weights at copy speed\)$/);
  }, 60_000);
});
