import { FLASH_NEXT, modelWeightSpecs, preparePrefill, runOnce, STAND_IN_SUB_LAYERS, TINY } from '@hcsp/core';
import { createBackend } from '@hcsp/backends';
import { describe, expect, it } from 'vitest';
import { hcMixBenchGraph } from './bench.ts';
import { firstDifference, graphCost, HOST_DEFAULTS, linearBenchGraph, liveBytes, parseHostBenchOptions, runHostBench, TiledWeightSource, formatHostBenchReport } from './benchHost.ts';

const RAW = { tokens: '1024,4096', seed: '0' };

describe('host bench options', () => {
  it('defaults, and the --no-* switches', () => {
    expect(parseHostBenchOptions(RAW)).toEqual({
      tokens: [1024, 4096],
      linearity: [1024, 4096, 16384],
      reps: 3,
      prefillTokens: 64,
      prefillTp: 4,
      prefillReps: 2,
      exactTokens: 256,
      copyBytes: HOST_DEFAULTS.copyBytes,
      seed: 0,
      quiet: false,
      maxMemory: undefined,
    });
    expect(parseHostBenchOptions({ ...RAW, host: false })).toBeNull();
    expect(parseHostBenchOptions({ ...RAW, linearity: false, prefill: false })).toMatchObject({ linearity: [], prefillTokens: null });
    expect(() => parseHostBenchOptions({ ...RAW, hostReps: '0' })).toThrow(/--host-reps .*got "0"/);
    expect(() => parseHostBenchOptions({ ...RAW, linearity: '8,8' })).toThrow(/--linearity "8,8" lists a token count twice/);
    expect(() => parseHostBenchOptions({ ...RAW, prefillTokens: 'x' })).toThrow(/--prefill-tokens .*got "x"/);
  });
});

describe('host bench counts', () => {
  it("the mix's cost: its two GEMM shapes, the other nodes' bytes, the streams in and x, streams, raw out", () => {
    const T = 1024;
    const c = graphCost(hcMixBenchGraph(FLASH_NEXT, T));
    expect(c.gemms.map((g) => [g.shape.T, g.shape.K, g.shape.O, g.count])).toEqual([
      [T, 10240, 324, 1],
      [T, 320, 10240, 1],
    ]);
    expect(c.gemmFlops).toBe(2 * T * (10240 * 324 + 320 * 10240));
    const nh = T * 10240;
    // combine-norm (streams in, norm weight, streams out, normed) + silu (d, gate, raw) + gated mean (up, normed, x)
    expect(c.otherBytes).toBe(2 * (3 * nh + 10240 + T * 324 + T * 320 + T * 4 + 2 * nh + T * 2560));
    expect(c.ioBytes).toBe(2 * (nh + T * 2560 + nh + T * 4));
  });

  it('must-live: weights once, and the most bytes alive at once', () => {
    const T = 16;
    const g = hcMixBenchGraph(FLASH_NEXT, T);
    const live = liveBytes(g);
    expect(live.weights).toBe(2 * (10240 + 324 * 10240 + 10240 * 320));
    const nh = T * 10240;
    // at the gated mean: streams out (kept), normed, up, x, raw (kept)
    expect(live.activationPeak).toBe(2 * (3 * nh + T * 2560 + T * 4));
    expect(live.total).toBe(live.weights + live.activationPeak);
  });

  it('the one-node GEMM graphs are the mix\'s two linears', () => {
    expect(graphCost(linearBenchGraph(FLASH_NEXT, 8, 0)).gemms[0].shape).toEqual({ T: 8, K: 10240, O: 324 });
    expect(graphCost(linearBenchGraph(FLASH_NEXT, 8, 1)).gemms[0].shape).toEqual({ T: 8, K: 320, O: 10240 });
  });

  it('tiled weights: the declared shapes, slices of the whole, the std kept, no NaN', async () => {
    const specs = modelWeightSpecs(TINY, STAND_IN_SUB_LAYERS);
    const src = new TiledWeightSource(specs, 3);
    const spec = specs.find((s) => s.shape.length === 2 && s.init.kind === 'normal')!;
    const whole = await src.read(spec.name);
    expect(whole.shape).toEqual(spec.shape);
    const cols = await src.read(spec.name, { axis: 1, ranges: [[1, 3]] });
    const [rows, width] = spec.shape;
    const w = whole.data as Uint16Array;
    expect(Array.from(cols.data as Uint16Array)).toEqual(Array.from({ length: rows * 2 }, (_, i) => w[Math.floor(i / 2) * width + 1 + (i % 2)]));
    const f32 = new Float32Array(new Uint32Array(Array.from(w, (b) => b << 16)).buffer);
    expect(f32.every(Number.isFinite)).toBe(true);
    const std = Math.sqrt(f32.reduce((a, v) => a + v * v, 0) / f32.length);
    expect(std / (spec.init as { std: number }).std).toBeGreaterThan(0.8);
    expect(std / (spec.init as { std: number }).std).toBeLessThan(1.2);
  });
});

describe('host bench on the host device (tiny config, small T)', () => {
  it('reports every field; the mix is bit-exact with the cpu reference; the prefill runs at tp 4', async () => {
    const opts = { ...parseHostBenchOptions({ tokens: '8,16', seed: '1', quiet: true, linearity: '8,16', prefillTokens: '8', prefillReps: '1', exactTokens: '8', hostReps: '1' })!, copyBytes: 1 << 20 };
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

  it("the prefill on the host device is bit-exact with the cpu reference (tiny, tiled weights)", async () => {
    const weights = new TiledWeightSource(modelWeightSpecs(TINY, STAND_IN_SUB_LAYERS), 2);
    const p = preparePrefill({ config: TINY, tokens: 12, tp: 4, sp: 'on', reduce: 'ring', seed: 2, subLayers: STAND_IN_SUB_LAYERS, weights });
    const host = await runOnce(await createBackend('rocm', { device: 'host' }), p.graph, p.feeds, p.weights);
    const cpu = await runOnce(await createBackend('cpu'), p.graph, p.feeds, p.weights);
    expect(firstDifference(p.graph, host, cpu, ['host', 'cpu'])).toBeNull();
  });
});
