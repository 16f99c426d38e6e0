import { modelWeightSpecs, preparePrefill, runOnce, STAND_IN_SUB_LAYERS, TINY } from '@hcsp/core';
import { createBackend } from '@hcsp/backends';
import { describe, expect, it } from 'vitest';
import { firstDifference } from './firstDifference.ts';
import { liveBytes } from './graphCost.ts';
import { hcMixBenchGraph } from './graphs.ts';
import { runHostBench } from './hostBench.ts';
import { formatHostBenchReport } from './hostBenchReport.ts';
import { TiledWeightSource } from './tiledWeights.ts';

describe('host bench on the host device (tiny config, small T)', () => {
  it('reports every field; the mix is bit-exact with the cpu reference; the prefill runs at tp 4', async () => {
    const opts = {
      tokens: [8, 16],
      linearity: [8, 16],
      reps: 1,
      prefillTokens: 8,
      prefillTp: 4,
      prefillReps: 1,
      exactTokens: 8,
      copyBytes: 1 << 20,
      seed: 1,
      quiet: true,
    };
    const r = await runHostBench(opts, { config: TINY });
    expect(r.config).toBe(TINY.name);
    expect(r.device).toMatch(/^rocm on the host device/);
    expect(r.check).toEqual({ tokens: 8, bitExact: true, mismatch: null });
    expect(r.mix.map((m) => m.tokens)).toEqual([8, 16]);
    expect(r.gemms.map((g) => [g.tokens, g.name])).toEqual([
      [8, 'W_cat'],
      [8, 'up'],
      [16, 'W_cat'],
      [16, 'up'],
    ]);
    for (const g of r.gemms) {
      expect(g.exact.seconds).toBeGreaterThan(0);
      expect(g.blas.seconds).toBeGreaterThan(0);
      expect(g.exactGraph.reps).toHaveLength(1);
    }
    for (const m of r.mix) {
      expect(m.exact.reps).toHaveLength(1);
      expect(m.memory.mustLive.total).toBe(liveBytes(hcMixBenchGraph(TINY, m.tokens)).total);
      expect(m.memory.addonPeakBytes).toBeGreaterThan(0);
    }
    expect(r.linearity!.rows.map((x) => x.tokens)).toEqual([8, 16]);
    expect(r.linearity!.rows[0].ratio).toBe(1);
    expect(r.ceilings.bandwidthGBps).toBeGreaterThan(0);
    expect(r.prefill).toMatchObject({ config: TINY.name, stack: 'hc-only', tp: 4, tokens: 8, layers: TINY.numLayers });
    expect(r.prefill!.outputSha256).toMatch(/^[0-9a-f]{64}$/);
    expect(r.goals.length).toBeGreaterThan(0);
    expect(JSON.parse(JSON.stringify(r))).toMatchObject({ check: { bitExact: true } });
    expect(formatHostBenchReport(r)).toMatch(/\(a\) GEMMs alone[\s\S]*\(b\) HC mix[\s\S]*\(c\) HC mix linearity[\s\S]*\(d\) memory[\s\S]*prefill: /);
  });

  it('the prefill on the host device is bit-exact with the cpu reference (tiny, tiled weights)', async () => {
    const weights = new TiledWeightSource(modelWeightSpecs(TINY, STAND_IN_SUB_LAYERS), 2);
    const p = preparePrefill({ config: TINY, tokens: 12, tp: 4, sp: 'on', reduce: 'ring', seed: 2, subLayers: STAND_IN_SUB_LAYERS, weights });
    const host = await runOnce(await createBackend('rocm', { device: 'host' }), p.graph, p.feeds, p.weights);
    const cpu = await runOnce(await createBackend('cpu'), p.graph, p.feeds, p.weights);
    expect(firstDifference(p.graph, host, cpu, ['host', 'cpu'])).toBeNull();
  });
});
