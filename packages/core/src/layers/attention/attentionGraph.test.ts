import { describe, expect, it } from 'vitest';
import { getConfig } from '../../config/presets.ts';
import { GraphBuilder } from '../../graph/graphBuilder.ts';
import { SyntheticWeightSource } from '../../model/syntheticWeights.ts';
import { Rng } from '../../numerics/rng.ts';
import { tpLayerChecks } from '../tpLayerChecks.ts';
import { buildAttention } from './attentionGraph.ts';
import { attentionRankHeads, attentionRankWeights, attentionWeightSpecs } from './attentionWeights.ts';
import { ropeTables } from './ropeTables.ts';

const config = getConfig('small');
const LAYER = 3;
const T = 20;
const H = config.hiddenSize;
const { numHeads: QH, headDim: HD } = config.attention;

describe('full-attention graph under tensor parallelism', () => {
  // tp = 2 splits the 2 KV heads; tp = 4 replicates each KV head on 2 ranks.
  tpLayerChecks(
    {
      label: 'attention',
      tokens: T,
      hidden: H,
      headsValue: 'L3.attn/gated',
      heads: QH,
      headDim: HD,
      projectionWeight: `model.layers.${LAYER}.self_attn.o_proj.weight`,
      weights: new SyntheticWeightSource(attentionWeightSpecs(config, LAYER), 8),
      build(b, xIn) {
        const half = config.attention.ropeDims / 2;
        const rope = { cos: b.input('rope_cos', [T, half], 'f32'), sin: b.input('rope_sin', [T, half], 'f32') };
        const tables = ropeTables(config, T);
        return {
          feeds: [
            [rope.cos, tables.cos],
            [rope.sin, tables.sin],
          ],
          partial: (rank, tp) => buildAttention(b, { config, layer: LAYER, rank, tp, tokens: T, scope: 'L3.attn' }, xIn, rope),
        };
      },
    },
    new Rng(4).fillBf16Normal(T * H, 1),
    [2, 4],
  );

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
