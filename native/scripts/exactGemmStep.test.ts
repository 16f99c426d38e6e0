import { bf16ToF32, linearBf16, Rng } from '@hcsp/core';
import { loadNativeAddon } from '@hcsp/backend-rocm';
import { describe, expect, it } from 'vitest';
import { deviceGemmRunner, EXACT_GEMM_THRESHOLDS, exactGemmStep, hcMixGemmShapes, type GemmKernel, type GemmRunner } from './exactGemmStep.ts';

const SHAPES = hcMixGemmShapes();

/** a runner whose kernels take the given TFLOP/s at every shape, with the same bits unless `bits` says */
function fakeRunner(rate: Record<GemmKernel, number>, bits: (k: GemmKernel) => Uint16Array = () => Uint16Array.of(1, 2, 3)): GemmRunner & { calls: string[] } {
  const calls: string[] = [];
  const run = async (k: GemmKernel, rows: number, inF: number, outF: number) => {
    calls.push(`${k} ${rows}x${inF}x${outF}`);
    return { seconds: (2 * rows * inF * outF) / (rate[k] * 1e12), bits: bits(k) };
  };
  return Object.assign(run, { calls });
}

describe('gpu-check tiled exact GEMM step', () => {
  it('times the HC mix shapes at T = 4096 for every kernel in the same run, and passes at the thresholds', async () => {
    expect(SHAPES).toEqual([
      [4096, 10240, 324],
      [4096, 320, 10240],
    ]);
    const run = fakeRunner({ exact: 20, oneThread: 5, vendor: 1000 });
    const { lines, failures } = await exactGemmStep(run, SHAPES, true);
    expect(failures).toEqual([]);
    expect(run.calls).toEqual([
      'exact 4096x10240x324',
      'oneThread 4096x10240x324',
      'vendor 4096x10240x324',
      'exact 4096x320x10240',
      'oneThread 4096x320x10240',
      'vendor 4096x320x10240',
    ]);
    expect(lines[0]).toBe("tiled exact GEMM (thresholds: >= 2% of the vendor GEMM's TFLOP/s, >= 4x the one-thread kernel's, the one-thread kernel's bits):");
    expect(lines[2]).toMatch(/^ {2}\[4096,10240\] x \[10240,324\] +20\.0 +5\.00 +1000 +2\.0% +4\.0x {2}pass$/);
    expect(lines).toHaveLength(4);
  });

  it('fails a shape under either threshold or with other bits, naming the shape and the figures', async () => {
    const slow = await exactGemmStep(fakeRunner({ exact: 19, oneThread: 1, vendor: 1000 }), SHAPES, true);
    expect(slow.failures).toEqual([
      "tiled exact GEMM [4096,10240] x [10240,324]: 19.0 TFLOP/s is under 2% of the vendor's 1000",
      "tiled exact GEMM [4096,320] x [320,10240]: 19.0 TFLOP/s is under 2% of the vendor's 1000",
    ]);
    expect(slow.lines[2]).toMatch(/FAIL$/);
    const barely = await exactGemmStep(fakeRunner({ exact: 20, oneThread: 5.5, vendor: 100 }), SHAPES.slice(0, 1), true);
    expect(barely.failures).toEqual(["tiled exact GEMM [4096,10240] x [10240,324]: 20.0 TFLOP/s is under 4x the one-thread kernel's 5.50"]);
    const wrong = await exactGemmStep(
      fakeRunner({ exact: 50, oneThread: 1, vendor: 100 }, (k) => Uint16Array.of(1, 2, k === 'exact' ? 4 : 3)),
      SHAPES.slice(1),
      true,
    );
    expect(wrong.failures).toEqual(["tiled exact GEMM [4096,320] x [320,10240]: its bits differ from the one-thread kernel's"]);
  });

  it('without a vendor GEMM (the emulated device) it reports the ratio and checks only the bits', async () => {
    const run = fakeRunner({ exact: 0.001, oneThread: 0.002, vendor: NaN });
    const { lines, failures } = await exactGemmStep(run, SHAPES, false);
    expect(failures).toEqual([]);
    expect(run.calls.some((c) => c.startsWith('vendor'))).toBe(false);
    expect(lines[2]).toMatch(/ +0\.00100 +0\.00200 +- +- +0\.5x {2}pass$/);
    expect(EXACT_GEMM_THRESHOLDS).toEqual({ ofVendor: 0.02, overOneThread: 4 });
  });

  it("the device runner on the emulated device: both exact kernels give linearBf16's bits, timed", async () => {
    const addon = loadNativeAddon();
    const gpu = addon.openGpu('emulated');
    const run = deviceGemmRunner(addon, gpu, 1);
    const [rows, inF, outF] = [40, 48, 70];
    const rng = new Rng(rows + inF + outF);
    const x = Float32Array.from(rng.fillBf16Normal(rows * inF, 1), bf16ToF32);
    const w = Float32Array.from(rng.fillBf16Normal(outF * inF, 0.02), bf16ToF32);
    const expected = linearBf16(x, w, rows, inF, outF);
    for (const k of ['exact', 'oneThread'] as const) {
      const r = await run(k, rows, inF, outF);
      expect(r.bits, k).toEqual(expected);
      expect(r.seconds).toBeGreaterThan(0);
    }
    expect(gpu.stats().liveTensors).toBe(0);
    const step = await exactGemmStep(run, [[rows, inF, outF]], false);
    expect(step.failures).toEqual([]);
  });
});
