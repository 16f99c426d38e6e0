import { describe, expect, it } from 'vitest';
import { getConfig } from '../../config/presets.ts';
import { validateConfig } from '../../config/validate.ts';
import { attentionRankWeights, attentionWeightSpecs } from './attentionWeights.ts';

describe('QSA indexer weights', () => {
  it("carry HF's state-dict names and Flash-Next's shapes", () => {
    const specs = attentionWeightSpecs(getConfig('flash-next'), 3);
    const indexer = specs.filter((s) => s.name.includes('.indexer.')).map((s) => [s.name, s.shape]);
    expect(indexer).toEqual([
      ['model.layers.3.self_attn.indexer.index_qk_proj.weight', [640, 2560]],
      ['model.layers.3.self_attn.indexer.q_layernorm.weight', [128]],
      ['model.layers.3.self_attn.indexer.k_layernorm.weight', [128]],
    ]);
  });

  it('are replicated on every rank: the query rows and the k_raw rows of index_qk_proj', () => {
    const config = getConfig('flash-next');
    for (const rank of [0, 3]) {
      const w = attentionRankWeights(config, 7, rank, 4);
      expect(w.indexQ).toEqual({ name: 'model.layers.7.self_attn.indexer.index_qk_proj.weight', slice: { axis: 0, ranges: [[0, 512]] } });
      expect(w.indexK).toEqual({ name: 'model.layers.7.self_attn.indexer.index_qk_proj.weight', slice: { axis: 0, ranges: [[512, 640]] } });
      expect(w.indexQNorm).toEqual({ name: 'model.layers.7.self_attn.indexer.q_layernorm.weight' });
      expect(w.indexKNorm).toEqual({ name: 'model.layers.7.self_attn.indexer.k_layernorm.weight' });
    }
  });
});

describe('indexer configuration', () => {
  const flash = getConfig('flash-next');
  const withIndexer = (patch: object) => ({ ...flash, attention: { ...flash.attention, indexer: { ...flash.attention.indexer, ...patch } } });

  it("has Flash-Next's values", () => {
    expect(flash.attention.indexer).toEqual({ nHeads: 4, kvHeads: 1, headDim: 128, budget: 2048, compressRatio: 4 });
  });

  it('rejects what the reference cannot run', () => {
    expect(() => validateConfig(withIndexer({ kvHeads: 2 }))).toThrow(/indexer.kvHeads must be 1/);
    expect(() => validateConfig(withIndexer({ budget: 2046 }))).toThrow(/budget 2046 is not a multiple of compressRatio 4/);
    expect(() => validateConfig(withIndexer({ headDim: 32 }))).toThrow(/ropeDims 64 exceeds indexer headDim 32/);
    expect(() => validateConfig(withIndexer({ compressRatio: 0 }))).toThrow(/indexer.compressRatio must be a positive integer/);
  });
});
