import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { builtInDevice, libraryTileEfficiency, parseDevice } from '@hcsp/core/cost-model';
import { formatModelRows, measuredDeviceJson, measuredVsPredicted, predictKernel, writeMeasuredDevice } from './gpuCheckModel.ts';

const mi = builtInDevice('mi308x');

describe('gpu-check: measured vs predicted (issue 27)', () => {
  it('a device copy and a vendor GEMM against hand-computed predictions', () => {
    // 1 GB read + written at 4.07 TB/s after the 1 us ramp, plus the 5 us launch
    expect(predictKernel({ copyBytes: 1e9 }, mi)).toBeCloseTo(1e9 / 4.07e12 + 1e-6 + 5e-6, 12);
    // the HC mix's first GEMM at T 4096: [4096, 10240] x [10240, 324] on the library's best tile, at 60.1% of 344.1 TFLOP/s
    const flops = 2 * 4096 * 10240 * 324;
    const tile = libraryTileEfficiency([4096], 324, 80, 256, 256).fraction;
    const compute = flops / (344.1e12 * 0.601 * tile);
    const memory = 1e-6 + ((4096 * 10240 + 4096 * 324) * 2 + 10240 * 324 * 2) / 4.07e12;
    expect(predictKernel({ gemm: [4096, 10240, 324], vendor: true }, mi)).toBeCloseTo(Math.max(compute, memory) + 5e-6, 12);
    // the exact GEMM: fp32 FMAs at the vector rate
    expect(predictKernel({ gemm: [4096, 10240, 324], vendor: false }, mi)).toBeCloseTo(flops / 43e12 + 5e-6, 12);
  });

  it('graph ops priced as --engine hcsp prices them; the table carries measured / predicted', () => {
    const rows = measuredVsPredicted(
      [
        { name: 'gdn chunked', seconds: 2e-3, shape: { op: 'gdnRecurrence', tokens: 4096, kernels: 'fast' } },
        { name: 'gdn exact', seconds: 0.2, shape: { op: 'gdnRecurrence', tokens: 4096, kernels: 'exact' } },
        { name: 'copy', seconds: 1e-3, shape: { copyBytes: 2 ** 31 } },
      ],
      mi,
    );
    // the chunked recurrence: at least its T/64 chained chunks of 384 dependent operations (8 cycles at 2.1 GHz) and a 1 us round trip
    expect(rows[0].predicted).toBeGreaterThanOrEqual(64 * ((384 * 8) / 2.1e9 + 1e-6));
    expect(rows[1].predicted).toBeGreaterThan(rows[0].predicted * 10);
    for (const r of rows) expect(r.ratio).toBeCloseTo(r.measured / r.predicted, 12);
    const text = formatModelRows(rows, mi).join('\n');
    expect(text).toMatch(/^cost model \(--engine hcsp\) on mi308x \(built-in\): measured vs predicted per kernel$/m);
    expect(text).toMatch(/gdn chunked +2000 +\d/);
    expect(() => measuredVsPredicted([{ name: 'x', seconds: 1, shape: { op: 'noSuchOp', tokens: 64, kernels: 'fast' } }], mi)).toThrow(
      "gpu-check model: op 'noSuchOp' is not in the flash-next graph",
    );
    // layer 2's first combine-norm applies the pending combine (the GPU check's case): more bytes than layer 0's first, which has none
    const cn = (layer?: number) => predictKernel({ op: 'hcCombineNorm', tokens: 4096, kernels: 'fast', ...(layer === undefined ? {} : { layer }) }, mi);
    expect(cn(2)).toBeGreaterThan(cn());
    expect(() => cn(99)).toThrow("gpu-check model: op 'hcCombineNorm' is not in the flash-next graph at layer 99");
  }, 120_000);

  it('a --device file from the measured ceilings: parses, the measured figures in place, sourced; written whole', () => {
    const json = measuredDeviceJson(mi, { copyGBps: 3900, matrixBf16Tflops: 210, kernelLaunchUs: 4.5 }, 'gpu-check 2026-12-02');
    const d = parseDevice(json, 'measured.json');
    expect(d.figures.hbmTBps.value).toBe(3.9);
    expect(d.figures.hbmTBps.source).toBe('measured by gpu-check 2026-12-02: the device copy, bytes read + written per second');
    expect(d.figures.matrixBf16Tflops.value).toBe(210);
    expect(d.figures.gemmFraction!.value).toBe(1);
    expect(d.figures.kernelLaunchUs.value).toBe(4.5);
    // the rest as the base device has them
    expect(d.figures.linkPeerGBps!.value).toBe(mi.figures.linkPeerGBps!.value);
    expect(d.figures.matrixFp8Tflops.source).toBe(mi.figures.matrixFp8Tflops.source);
    expect(() => measuredDeviceJson(mi, { copyGBps: Number.NaN }, 'x')).toThrow('gpu-check model: measured hbmTBps must be a positive number, got NaN');
    const dir = mkdtempSync(join(tmpdir(), 'hcsp-measured-'));
    try {
      const file = join(dir, 'lab.json');
      writeMeasuredDevice(file, json);
      expect(readdirSync(dir)).toEqual(['lab.json']);
      expect(parseDevice(JSON.parse(readFileSync(file, 'utf8')), file).figures.hbmTBps.value).toBe(3.9);
    } finally {
      rmSync(dir, { recursive: true });
    }
  });
});
