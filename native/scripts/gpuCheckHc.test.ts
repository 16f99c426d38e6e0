import { CpuBackend, FLASH_NEXT, runOnce, SMALL } from '@hcsp/core';
import { afterAll, describe, expect, it } from 'vitest';
import { createRocmBackend, type RocmBackend } from '@hcsp/backend-rocm';
import { bandwidthVerdict, hcBandwidthStep, hcChainGraph, hcKernelBytes, spStackConfig, spStep, spVerdict } from './gpuCheckHc.ts';

describe('gpu-check HC thresholds', () => {
  it('a kernel passes at 70% of the copy bandwidth and fails below it', () => {
    // 70 GB moved in 1 s against a 100 GB/s copy: exactly 70%
    expect(bandwidthVerdict('hcGatedMean', 1, 70e9, 100)).toEqual({
      pass: true,
      line: expect.stringMatching(/^ {2}hcGatedMean +1\.000000 +70\.0 +70% {2}pass$/),
    });
    expect(bandwidthVerdict('hcGatedMean', 1, 69.9e9, 100)).toEqual({ pass: false, line: expect.stringMatching(/ 70% {2}FAIL \(under 70% of copy\)$/) });
    expect(bandwidthVerdict('hcCombineNorm', 0, 1e9, 100).pass).toBe(false);
    expect(bandwidthVerdict('hcCombineNorm', 1, 1e9, 0).pass).toBe(false);
  });

  it('SP on passes within 1/tp + 15% of SP off', () => {
    expect(spVerdict(2, 1, 0.65, 'x').pass).toBe(true);
    expect(spVerdict(2, 1, 0.66, 'x')).toEqual({
      pass: false,
      line: 'SP: HC time per rank, x, tp 2: off 1.00000 s, on 0.66000 s, on/off 0.660 (at most 1/tp + 0.15 = 0.650) FAIL',
    });
    expect(spVerdict(4, 1, 0.4, 'x').pass).toBe(true);
    expect(spVerdict(2, 0, 0, 'x').pass).toBe(false);
  });

  it('the bytes each kernel must move at Flash-Next dimensions, T = 4096', () => {
    // combine-norm: x read, combined x and normed written (3 x 4096 x 10240), y [4096, 2560], raw [4096, 4], w [10240]
    expect(hcKernelBytes('hcCombineNorm', FLASH_NEXT, 4096)).toBe(2 * (3 * 4096 * 10240 + 4096 * 2560 + 4096 * 4 + 10240));
    // gated mean: up and normed read, x [4096, 2560] written
    expect(hcKernelBytes('hcGatedMean', FLASH_NEXT, 4096)).toBe(2 * (2 * 4096 * 10240 + 4096 * 2560));
  });
});

describe('gpu-check HC steps on the emulated device', () => {
  let backend: RocmBackend;
  afterAll(async () => backend?.dispose());

  it("the chained graphs give the CPU reference's bits on the device", async () => {
    backend = (await createRocmBackend({ device: 'emulated', gemm: 'exact' })) as RocmBackend;
    for (const op of ['hcCombineNorm', 'hcGatedMean'] as const) {
      const { graph, weights } = hcChainGraph(op, SMALL, 9, 4);
      const want = await runOnce(new CpuBackend(), graph, new Map(), weights, { keep: 'all' });
      const got = await runOnce(backend, graph, new Map(), weights, { keep: 'all' });
      expect(graph.nodes.filter((n) => n.op === op)).toHaveLength(4);
      for (const [id, t] of want.values) expect(Buffer.from(got.values.get(id)!.data.buffer).equals(Buffer.from(t.data.buffer)), `${op} ${id}`).toBe(true);
    }
  });

  it('the bandwidth step times both kernels and judges them against the copy bandwidth', async () => {
    const fast = await hcBandwidthStep(backend, 1e-9, { config: SMALL, T: 16, reps: 2 });
    expect(fast[0]!.line).toMatch(
      /^HC kernels at T=16, full dimensions \(small\), each chained 2 times in one recorded run \(at least 70% of copy\):\n {2}kernel/,
    );
    expect(fast.slice(1).map((v) => [v.line.trim().split(' ')[0], v.pass])).toEqual([
      ['hcCombineNorm', true],
      ['hcGatedMean', true],
    ]);
    const slow = await hcBandwidthStep(backend, 1e12, { config: SMALL, T: 16, reps: 2 });
    expect(slow.slice(1).every((v) => !v.pass && v.line.endsWith('FAIL (under 70% of copy)'))).toBe(true);
  }, 60_000);

  it('the SP step times the HC ops of the stack with SP off and on at tp 2', async () => {
    const v = await spStep(backend, { config: spStackConfig(SMALL), T: 64, tp: 2, layers: [0, 2] });
    expect(v.line).toMatch(
      /^SP: HC time per rank, small HC stack layers 0-1, T=64, tp 2: off \d+\.\d+ s, on \d+\.\d+ s, on\/off \d+\.\d+ \(at most 1\/tp \+ 0\.15 = 0\.650\) (pass|FAIL)$/,
    );
    expect(v.pass).toBe(/ pass$/.test(v.line));
  }, 120_000);
});
