import { FLASH_NEXT, SMALL } from '@hcsp/core';
import { afterAll, describe, expect, it } from 'vitest';
import { createRocmBackend, type RocmBackend } from '@hcsp/backend-rocm';
import { moeFlops, moeStep, moeVerdict, moeWeightBytes } from './gpuCheckMoe.ts';

describe('gpu-check MoE threshold', () => {
  it("Flash-Next's experts: 5.03 GB of bf16 weights, 403 GFLOP at T 4096", () => {
    // 512 experts x (gate-up [1280, 2560] + down [2560, 640]) bf16
    expect(moeWeightBytes(FLASH_NEXT)).toBe(512 * 3 * 2560 * 640 * 2);
    // 4096 x 10 routed rows, each 2 x 1280 x 2560 + 2 x 2560 x 640
    expect(moeFlops(FLASH_NEXT, 4096)).toBe(4096 * 10 * (2 * 1280 * 2560 + 2 * 2560 * 640));
  });

  it('passes at 2x the weight bytes at the copy bandwidth and fails past it', () => {
    // 100 GB of weights at 100 GB/s: 1 s, so the limit is 2 s
    expect(moeVerdict('moeExperts', 2, 100e9, 1e12, 100)).toEqual({
      pass: true,
      line: expect.stringMatching(/^ {2}moeExperts +2\.000000 s +50\.0 GB\/s of weights +0\.50 TFLOP\/s {2}\(limit 2\.000000 s\) pass$/),
    });
    expect(moeVerdict('moeExperts', 2.001, 100e9, 1e12, 100)).toEqual({
      pass: false,
      line: expect.stringMatching(/FAIL \(over 2x the weights at copy speed\)$/),
    });
    expect(moeVerdict('moeExperts', 0, 100e9, 1e12, 100).pass).toBe(false);
    expect(moeVerdict('moeExperts', 1, 100e9, 1e12, 0).pass).toBe(false);
  });
});

describe('gpu-check MoE step on the emulated device', () => {
  let backend: RocmBackend;
  afterAll(async () => backend?.dispose());

  it('times the fast experts at small shapes and judges them against the copy bandwidth', async () => {
    backend = (await createRocmBackend({ device: 'emulated', gemm: 'exact', kernels: 'fast' })) as RocmBackend;
    const fast = await moeStep(backend, 1e-9, { config: SMALL, T: 16, runs: 1 });
    expect(fast[0]!.line).toMatch(
      /^MoE experts \(moeExperts, bf16, kernels fast\) at T=16, tp 1, small: 16 experts, topK 4, H 128, inter 32; 0\.00 GB of weights, 0\.0 GFLOP \(at most 2x/,
    );
    expect(fast[1]!.pass).toBe(true);
    const slow = await moeStep(backend, 1e12, { config: SMALL, T: 16, runs: 1 });
    expect(slow[1]!.pass).toBe(false);
    expect(slow[1]!.line).toMatch(/FAIL \(over 2x the weights at copy speed\)$/);
  }, 60_000);
});
