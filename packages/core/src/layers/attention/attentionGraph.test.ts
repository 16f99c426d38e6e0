import { describe, expect, it } from 'vitest';
import { getConfig } from '../../config/presets.ts';
import type { ValueId } from '../../graph/graph.ts';
import { GraphBuilder } from '../../graph/graphBuilder.ts';
import { SyntheticWeightSource } from '../../model/syntheticWeights.ts';
import type { WeightSource } from '../../model/weightSource.ts';
import { bf16ArrayToF32 } from '../../numerics/bf16.ts';
import { Rng } from '../../numerics/rng.ts';
import { compareBf16 } from '../../numerics/ulp.ts';
import { CpuBackend } from '../../reference/cpuBackend.ts';
import type { Tensor } from '../../tensor/tensor.ts';
import { rowParallelSum } from '../rowParallelSumCheck.ts';
import { buildAttention } from './attentionGraph.ts';
import { attentionRankHeads, attentionRankWeights, attentionWeightSpecs } from './attentionWeights.ts';
import { ropeTables } from './ropeTables.ts';

const config = getConfig('small');
const LAYER = 3;
const T = 20;
const H = config.hiddenSize;
const { numHeads: QH, headDim: HD } = config.attention;

function runTp(tp: number, x: Uint16Array, weights: WeightSource) {
  const b = new GraphBuilder(tp);
  const xIn = b.input('x', [T, H], 'bf16');
  const half = config.attention.ropeDims / 2;
  const rope = { cos: b.input('rope_cos', [T, half], 'f32'), sin: b.input('rope_sin', [T, half], 'f32') };
  const partials = Array.from({ length: tp }, (_, rank) => buildAttention(b, { config, layer: LAYER, rank, tp, tokens: T, scope: 'L3.attn' }, xIn, rope));
  const tables = ropeTables(config, T);
  const feeds = new Map<ValueId, Tensor>([
    [xIn, { dtype: 'bf16', shape: [T, H], data: x }],
    [rope.cos, tables.cos],
    [rope.sin, tables.sin],
  ]);
  const gated = Array.from({ length: tp }, (_, r): ValueId => `r${r}/L3.attn/gated`);
  // CpuBackend checks every fed input, resolved weight and produced value against its
  // declared dtype and shape, and throws on a mismatch.
  const { values } = new CpuBackend().runSync(b.build(), feeds, weights, { keep: [...partials, ...gated] });
  return {
    partials: partials.map((id) => values.get(id)!.data as Uint16Array),
    gated: gated.map((id) => values.get(id)!.data as Uint16Array),
  };
}

describe('full-attention graph under tensor parallelism', () => {
  const weights = new SyntheticWeightSource(attentionWeightSpecs(config, LAYER), 8);
  const x = new Rng(4).fillBf16Normal(T * H, 1);
  const ref = runTp(1, x, weights);
  const out1 = ref.partials[0];

  it('has an output RMS in the realistic range (synthetic inits)', () => {
    const v = bf16ArrayToF32(out1);
    const rms = Math.sqrt(v.reduce((s, a) => s + a * a, 0) / v.length);
    expect(rms).toBeGreaterThan(0.1);
    expect(rms).toBeLessThan(1);
  });

  // tp = 2 splits the 2 KV heads; tp = 4 replicates each KV head on 2 ranks.
  for (const tp of [2, 4]) {
    it(`tp=${tp}: per-head activations bit-exact; summed partials within the rounding bound`, () => {
      const run = runTp(tp, x, weights);
      const w = (QH / tp) * HD;
      for (let t = 0; t < T; t++) {
        for (let r = 0; r < tp; r++) {
          expect(run.gated[r].subarray(t * w, (t + 1) * w)).toEqual(ref.gated[0].subarray(t * QH * HD + r * w, t * QH * HD + (r + 1) * w));
        }
      }
      // One-shot sum (fp32 in rank order, one rounding) vs tp=1's single fp32 chain: each
      // partial's half-ulp rounding, the final half ulps, and 2 K 2^-24 sum|y w| for the
      // regrouped fp32 chains (K = QH*HD terms).
      const wOut = bf16ArrayToF32(weights.get(`model.layers.${LAYER}.self_attn.o_proj.weight`).data as Uint16Array);
      const y = bf16ArrayToF32(ref.gated[0]);
      const K = QH * HD;
      const { summed, beyondBound, maxInPartialUlps } = rowParallelSum(run.partials, out1, y, wOut, H, K);
      const report = compareBf16(summed, out1);
      console.log(`attention tp=${tp}: ${report.differing}/${report.count} differ from tp=1, max ${report.maxUlp} ulp, largest difference ${maxInPartialUlps} ulp of the largest partial`);
      expect(beyondBound).toBe(0);
      expect(report.differing).toBeGreaterThan(0);
      expect(report.bitExactFraction).toBeGreaterThan(0.5);
    });
  }

  it('maps query heads to KV heads: split when tp divides them, replicated otherwise', () => {
    expect(attentionRankHeads(config, 1, 2)).toEqual({ h0: 4, h1: 8, kv0: 1, kv1: 2 });
    expect(attentionRankHeads(config, 1, 4)).toEqual({ h0: 2, h1: 4, kv0: 0, kv1: 1 });
    expect(attentionRankHeads(config, 2, 4)).toEqual({ h0: 4, h1: 6, kv0: 1, kv1: 2 });
    const w = attentionRankWeights(config, LAYER, 3, 4);
    expect(w.q.slice).toEqual({ axis: 0, ranges: [[6 * 2 * HD, 8 * 2 * HD]] });
    expect(w.k.slice).toEqual({ axis: 0, ranges: [[HD, 2 * HD]] });
    expect(w.o.slice).toEqual({ axis: 1, ranges: [[6 * HD, 8 * HD]] });
  });

  it('rejects a linear-attention layer and RoPE tables of the wrong shape', () => {
    const b = new GraphBuilder(1);
    const xIn = b.input('x', [T, H], 'bf16');
    const rope = { cos: b.input('c', [T, 3], 'f32'), sin: b.input('s', [T, 3], 'f32') };
    expect(() => buildAttention(b, { config, layer: LAYER, rank: 0, tp: 1, tokens: T, scope: 's' }, xIn, rope)).toThrow(/RoPE cos table 'c' is \[20,3\], expected \[20,4\]/);
    expect(() => attentionWeightSpecs(config, 0)).toThrow(/layer 0 .* linear-attention/);
  });
});
