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
import { buildGdn } from './gdnGraph.ts';
import { gdnRankWeights, gdnWeightSpecs } from './gdnWeights.ts';

const config = getConfig('small');
const LAYER = 0;
const T = 20;
const H = config.hiddenSize;
const { numValueHeads: VH, valueHeadDim: DV } = config.linearAttention;

function runTp(tp: number, x: Uint16Array, weights: WeightSource) {
  const b = new GraphBuilder(tp);
  const xIn = b.input('x', [T, H], 'bf16');
  const partials = Array.from({ length: tp }, (_, rank) => buildGdn(b, { config, layer: LAYER, rank, tp, tokens: T, scope: 'L0.gdn' }, xIn));
  const normed = Array.from({ length: tp }, (_, r): ValueId => `r${r}/L0.gdn/normed`);
  const feeds = new Map<ValueId, Tensor>([[xIn, { dtype: 'bf16', shape: [T, H], data: x }]]);
  // CpuBackend checks every fed input, resolved weight and produced value against its
  // declared dtype and shape, and throws on a mismatch.
  const { values } = new CpuBackend().runSync(b.build(), feeds, weights, { keep: [...partials, ...normed] });
  return {
    partials: partials.map((id) => values.get(id)!.data as Uint16Array),
    normed: normed.map((id) => values.get(id)!.data as Uint16Array),
  };
}

describe('GatedDeltaNet graph under tensor parallelism', () => {
  const weights = new SyntheticWeightSource(gdnWeightSpecs(config, LAYER), 7);
  const x = new Rng(3).fillBf16Normal(T * H, 1);
  const ref = runTp(1, x, weights);
  const out1 = ref.partials[0];

  it('has an output RMS in the realistic range (synthetic inits)', () => {
    const v = bf16ArrayToF32(out1);
    const rms = Math.sqrt(v.reduce((s, a) => s + a * a, 0) / v.length);
    expect(rms).toBeGreaterThan(0.1);
    expect(rms).toBeLessThan(1);
  });

  for (const tp of [2, 4]) {
    it(`tp=${tp}: per-head activations bit-exact; summed partials within the rounding bound`, () => {
      const run = runTp(tp, x, weights);
      // Before out_proj every head is computed in the same order as at tp=1: bit-exact.
      const w = (VH / tp) * DV;
      for (let t = 0; t < T; t++) {
        for (let r = 0; r < tp; r++) {
          expect(run.normed[r].subarray(t * w, (t + 1) * w)).toEqual(ref.normed[0].subarray(t * VH * DV + r * w, t * VH * DV + (r + 1) * w));
        }
      }
      // One-shot sum: fp32 in rank order, one bf16 rounding. Versus tp=1 (one fp32 chain,
      // one rounding), each partial adds its own half-ulp rounding, the final rounding adds
      // half an ulp of the result, and the regrouped fp32 chains differ by at most
      // 2 * K * 2^-24 * sum_k |y_k w_k| (K = VH*DV terms).
      const wOut = bf16ArrayToF32(weights.get(`model.layers.${LAYER}.linear_attn.out_proj.weight`).data as Uint16Array);
      const y = bf16ArrayToF32(ref.normed[0]);
      const K = VH * DV;
      const { summed, beyondBound, maxInPartialUlps } = rowParallelSum(run.partials, out1, y, wOut, H, K);
      const report = compareBf16(summed, out1);
      console.log(`gdn tp=${tp}: ${report.differing}/${report.count} differ from tp=1, max ${report.maxUlp} ulp, largest difference ${maxInPartialUlps} ulp of the largest partial`);
      expect(beyondBound).toBe(0);
      expect(report.differing).toBeGreaterThan(0); // the partial roundings are visible
      expect(report.bitExactFraction).toBeGreaterThan(0.5);
    });
  }

  it('gives each rank three qkv ranges (q, k, v heads) and out_proj columns', () => {
    const { numKeyHeads: KH, keyHeadDim: DK } = config.linearAttention;
    const w = gdnRankWeights(config, LAYER, 1, 2);
    expect(w.qkv.slice).toEqual({ axis: 0, ranges: [[KH / 2 * DK, KH * DK], [KH * DK + (KH / 2) * DK, 2 * KH * DK], [2 * KH * DK + (VH / 2) * DV, 2 * KH * DK + VH * DV]] });
    expect(w.out.slice).toEqual({ axis: 1, ranges: [[(VH / 2) * DV, VH * DV]] });
    expect(w.norm.slice).toBeUndefined();
  });

  it('rejects a full-attention layer, a bad rank and a tp that does not divide the heads', () => {
    const b = new GraphBuilder(1);
    const xIn = b.input('x', [T, H], 'bf16');
    expect(() => buildGdn(b, { config, layer: 3, rank: 0, tp: 1, tokens: T, scope: 's' }, xIn)).toThrow(/layer 3 .* full-attention/);
    expect(() => gdnRankWeights(config, LAYER, 2, 2)).toThrow(/rank 2 is outside/);
    expect(() => gdnRankWeights(config, LAYER, 0, 3)).toThrow(/tp 3 does not divide/);
  });
});
