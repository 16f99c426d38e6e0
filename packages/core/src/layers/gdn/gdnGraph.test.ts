import { describe, expect, it } from 'vitest';
import { getConfig } from '../../config/presets.ts';
import { GraphBuilder } from '../../graph/graphBuilder.ts';
import { SyntheticWeightSource } from '../../model/syntheticWeights.ts';
import { Rng } from '../../numerics/rng.ts';
import { tpLayerChecks } from '../tpLayerChecks.ts';
import { buildGdn } from './gdnGraph.ts';
import { gdnRankWeights, gdnWeightSpecs } from './gdnWeights.ts';

const config = getConfig('small');
const LAYER = 0;
const T = 20;
const H = config.hiddenSize;
const { numValueHeads: VH, valueHeadDim: DV } = config.linearAttention;

describe('GatedDeltaNet graph under tensor parallelism', () => {
  tpLayerChecks(
    {
      label: 'gdn',
      tokens: T,
      hidden: H,
      headsValue: 'L0.gdn/normed',
      heads: VH,
      headDim: DV,
      projectionWeight: `model.layers.${LAYER}.linear_attn.out_proj.weight`,
      weights: new SyntheticWeightSource(gdnWeightSpecs(config, LAYER), 7),
      build: (b, xIn) => ({ feeds: [], partial: (rank, tp) => buildGdn(b, { config, layer: LAYER, rank, tp, tokens: T, scope: 'L0.gdn' }, xIn) }),
    },
    new Rng(3).fillBf16Normal(T * H, 1),
    [2, 4],
  );

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
