import { createHash } from 'node:crypto';
import { CpuBackend, type RunResult, runOnce } from '@hcsp/core';
import { describeDifferences, diffRuns } from '@hcsp/core/xcheck';
import { createWebGpuBackend, type WebGpuBackend } from '@hcsp/backend-webgpu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hcFullDimCase } from '@hcsp/bench/cases';

// Soak: the full-dimension HC mix and combine ([T,10240] streams, the 324- and 10240-wide
// GEMMs) for T = 4096 at tp 4 under SP (1024 rows per rank), three times in one process on
// the WebGPU device. On a GPU-less machine that device is headless Chromium's SwiftShader:
// these are the buffer sizes (80 MiB of streams) that crash dawn.node with SwiftShader here.
const T = 4096;
const TP = 4;

function digest(r: RunResult): string {
  const h = createHash('sha256');
  for (const id of [...r.values.keys()].sort()) {
    const t = r.values.get(id)!;
    h.update(id).update(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength));
  }
  return h.digest('hex');
}

describe(`soak: full-dimension HC step, T=${T}, tp ${TP}, SP`, () => {
  let backend: WebGpuBackend;
  beforeAll(async () => {
    backend = await createWebGpuBackend();
  });
  afterAll(async () => {
    await backend?.dispose();
  });

  it('runs three times with identical results, equal to the CPU reference on rank 0', async () => {
    const c = hcFullDimCase(T, TP, 7);
    const digests: string[] = [];
    let first: RunResult | null = null;
    // prepared once: the weights stay on the device across the three runs
    const prepared = await backend.prepare(c.graph, c.weights);
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      const r = await prepared.run(c.feeds);
      console.log(`soak run ${i + 1}/3 on ${backend.describe()}: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
      expect(r.values.size).toBe(3 * TP);
      digests.push(digest(r));
      first ??= r;
    }
    await prepared.dispose();
    expect(new Set(digests).size).toBe(1);
    // The CPU reference for rank 0's shard only (a quarter of the work): same value ids.
    const ref = hcFullDimCase(T, TP, 7, [0]);
    const expected = await runOnce(new CpuBackend(), ref.graph, ref.feeds, ref.weights);
    const { compared, differences } = diffRuns(ref.graph, expected, first!);
    expect(compared).toBe(3);
    expect(differences, describeDifferences(differences)).toEqual([]);
  });
});
