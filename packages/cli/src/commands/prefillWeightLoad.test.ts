// prefill's weights through the rocm backend's native loader (backend-rocm/src/nativeWeightLoader.ts):
// the same outputs as the JavaScript path (HCSP_WEIGHT_LOADER=js) from a folder `hcsp weights`
// writes, in both layouts; --json's weightLoad (seconds, bytes, GB/s, how many tensors each way);
// NaN/Inf the loader counts warned about and refused as the JavaScript path's are.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SyntheticWeightSource, STAND_IN_SUB_LAYERS, modelWeightSpecs, TINY } from '@hcsp/core';
import { writeSafetensorsFile } from '@hcsp/core/node';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { runPrefillCommand } from './prefill.ts';
import { writeModelFolder } from './weights.ts';

const dir = mkdtempSync(join(tmpdir(), 'hcsp-prefill-weight-load-'));
const hf = join(dir, 'hf');
const fp8 = join(dir, 'fp8');
beforeAll(async () => {
  await writeModelFolder({ config: TINY, seed: 2, out: hf, layout: 'hf', shards: 2, force: false });
  await writeModelFolder({ config: TINY, seed: 2, out: fp8, layout: 'fp8-release', shards: 3, force: false });
}, 120_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const saved = process.env.HCSP_WEIGHT_LOADER;
afterEach(() => {
  if (saved === undefined) delete process.env.HCSP_WEIGHT_LOADER;
  else process.env.HCSP_WEIGHT_LOADER = saved;
  vi.restoreAllMocks();
});

const base = { backend: 'rocm', config: 'tiny', tp: '2', tokens: '16', sp: 'off', reduce: 'ring', seed: '2', stack: 'model', json: true, quiet: true };

interface Summary {
  outputSha256: string;
  weightBytesRead: number;
  nonFiniteWeights: Record<string, { nan: number; inf: number }>;
  weightLoad: { seconds: number; bytes: number; gbPerSecond: number; tensors: number; native: number; js: number };
}

async function prefill(loader: 'native' | 'js', opts: Record<string, unknown>): Promise<Summary> {
  process.env.HCSP_WEIGHT_LOADER = loader;
  return JSON.parse(await runPrefillCommand({ ...base, ...opts } as never)) as Summary;
}

describe('prefill through the native weight loader', () => {
  for (const device of ['host', 'emulated']) {
    it(`${device}: the JavaScript path's outputs and bytes read, from both layouts of hcsp weights; weightLoad in --json`, async () => {
      for (const [folder, layout] of [
        [hf, 'hf'],
        [fp8, 'fp8-release'],
      ] as const) {
        const native = await prefill('native', { device, weights: folder });
        const js = await prefill('js', { device, weights: folder });
        expect(native.outputSha256, layout).toBe(js.outputSha256);
        expect(native.weightBytesRead).toBe(js.weightBytesRead);
        for (const s of [native, js]) {
          const w = s.weightLoad;
          expect(w.tensors).toBe(w.native + w.js);
          expect(w.seconds).toBeGreaterThan(0);
          expect(w.gbPerSecond).toBeCloseTo(w.bytes / w.seconds / 1e9, 12);
        }
        expect(native.weightLoad.bytes).toBe(js.weightLoad.bytes);
        expect(js.weightLoad.native).toBe(0);
        // hf: every tensor stored as the graph reads it; fp8-release: the FP8 ones are dequantized in JavaScript
        if (layout === 'hf') expect(native.weightLoad.js).toBe(0);
        else expect(native.weightLoad.js).toBeGreaterThan(0);
        expect(native.weightLoad.native).toBeGreaterThan(0);
      }
    });
  }

  it('NaN and Inf the loader counts are warned about and refused as the JavaScript path does', async () => {
    // the HC-only stack carries a NaN through (the model's QSA indexer refuses one)
    const specs = modelWeightSpecs(TINY, STAND_IN_SUB_LAYERS);
    const poisoned = specs.find((s) => s.dtype === 'bf16' && s.shape.length === 2)!.name;
    const w = new SyntheticWeightSource(specs, 2);
    const tensors = new Map(specs.map((s) => [s.name, w.tensor(s.name)]));
    const data = tensors.get(poisoned)!.data as Uint16Array;
    data[0] = 0x7fc0;
    data[1] = 0x7f80;
    const file = join(dir, 'nan.safetensors');
    writeSafetensorsFile(file, tensors);
    const hcOnly = { device: 'emulated', stack: 'hc-only', weights: file };
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    const native = await prefill('native', hcOnly);
    expect(native.weightLoad.js).toBe(0);
    expect(native.nonFiniteWeights).toEqual({ [poisoned]: { nan: 1, inf: 1 } });
    expect(stderr).toHaveBeenCalledWith(`hcsp: warning: ${file}: tensor '${poisoned}' holds 1 NaN and 1 Inf\n`);
    const js = await prefill('js', hcOnly);
    expect(js.nonFiniteWeights).toEqual(native.nonFiniteWeights);
    const refused = (loader: 'native' | 'js') =>
      prefill(loader, { ...hcOnly, rejectNonfinite: true }).then(
        () => 'ran',
        (e: Error) => e.message,
      );
    const message = await refused('native');
    expect(message).toContain(`${file}: tensor '${poisoned}' holds 1 NaN and 1 Inf`);
    expect(message).toContain('refused by --reject-nonfinite');
    expect(message).toBe(await refused('js'));
  });
});
