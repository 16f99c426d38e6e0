import {
  buildHcMix,
  compareBf16,
  CpuBackend,
  f32ToBf16,
  GraphBuilder,
  hcWeightSpecs,
  Rng,
  MODEL_SUB_LAYERS,
  preparePrefill,
  runOnce,
  SMALL,
  SyntheticWeightSource,
  TINY,
  type Graph,
  type Tensor,
  type WeightSpec,
} from '@hcsp/core';
import { describe, expect, it } from 'vitest';
import { createWebGpuBackend, type WebGpuHostChoice } from './webgpuBackend.ts';

const PREFIX = 'model.layers.0.attn_hyper_connection';
const T = 5;
const TP = 2;
const C = Math.ceil(T / TP);

/** SP HC mix of layer 0 on tiny: shard streams -> combine-norm + mix per rank -> all-gather x -> trim. */
function spMixGraph(): Graph {
  const n = TINY.hc.count;
  const width = n * TINY.hiddenSize;
  const b = new GraphBuilder(TP, { test: 'webgpu e2e sp mix' });
  const streams = b.input('streams', [T, width], 'bf16');
  const xs: string[] = [];
  const raws: string[] = [];
  for (let rank = 0; rank < TP; rank++) {
    const shard = b.value(`r${rank}/shard`, [C, width], 'bf16', rank);
    b.node({ op: 'shard', rank, scope: 'L0.shard', layer: 0, inputs: [streams], outputs: [shard], attrs: { rank, tp: TP, chunk: C } });
    const mix = buildHcMix(b, { config: TINY, rank, rows: C, prefix: PREFIX, scope: 'L0.attn_hc', layer: 0, contract: 'atom' }, shard, null, true);
    xs.push(mix.x);
    raws.push(mix.raw!);
  }
  const gathered = Array.from({ length: TP }, (_, r) => b.value(`r${r}/x_full`, [C * TP, TINY.hiddenSize], 'bf16', r));
  b.node({ op: 'allGather', rank: null, scope: 'L0.gather_x', layer: 0, inputs: xs, outputs: gathered, attrs: {} });
  const x = b.value('x', [T, TINY.hiddenSize], 'bf16', 0);
  b.node({ op: 'trim', rank: 0, scope: 'L0.trim', layer: 0, inputs: [gathered[0]], outputs: [x], attrs: { rows: T } });
  b.markOutput(x);
  for (const r of raws) b.markOutput(r);
  return b.build();
}

function hcSpecs(): WeightSpec[] {
  return hcWeightSpecs(TINY, PREFIX, true);
}

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

  it("'auto' runs an SP HC-mix graph (GraphBuilder, tp 2) like the CPU reference", async () => {
    const graph = spMixGraph();
    const weights = new SyntheticWeightSource(hcSpecs(), 11);
    const rng = new Rng(3);
    const width = TINY.hc.count * TINY.hiddenSize;
    const streams: Tensor = { dtype: 'bf16', shape: [T, width], data: Uint16Array.from({ length: T * width }, () => f32ToBf16(rng.normal())) };
    const feeds = new Map([['streams', streams]]);
    const expected = await runOnce(new CpuBackend(), graph, feeds, weights);
    const backend = await createWebGpuBackend({ prefer: 'auto' });
    try {
      console.log(`e2e on ${backend.describe()}`);
      const got = await runOnce(backend, graph, feeds, weights);
      for (const id of graph.outputs) {
        const report = compareBf16(got.values.get(id)!.data as Uint16Array, expected.values.get(id)!.data as Uint16Array);
        console.log(`${id}: ${report.differing}/${report.count} differ, max ${report.maxUlp} ulp`);
        // the mix's last op is the gated mean, a reduction over the streams
        expect(report.maxUlp, id).toBeLessThanOrEqual(backend.precision.reduction.maxUlp);
      }
      expect(got.stats.hcRowsPerRank).toEqual([C, C]);
      expect(got.stats.commBytesPerRank).toEqual(expected.stats.commBytesPerRank);
    } finally {
      await backend.dispose();
    }
  }, 120_000);

  it('a prefill whose PLE table is read as thousands of row ranges (small, T = 256) equals the CPU reference', async () => {
    // the n-gram rows are asked for in a request body: in a URL they overflowed Node's header limit (HTTP 431) here
    const p = preparePrefill({ config: SMALL, tokens: 256, tp: 2, sp: 'on', reduce: 'ring', seed: 5, subLayers: MODEL_SUB_LAYERS });
    const keep = [p.outputs.h];
    const want = await runOnce(new CpuBackend(), p.graph, p.feeds, p.weights, { keep });
    const webgpu = await createWebGpuBackend({ prefer: 'chromium' });
    try {
      const got = await runOnce(webgpu, p.graph, p.feeds, p.weights, { keep });
      expect(compareBf16(got.values.get(p.outputs.h)!.data as Uint16Array, want.values.get(p.outputs.h)!.data as Uint16Array).differing).toBe(0);
    } finally {
      await webgpu.dispose();
    }
  }, 120_000);
});
