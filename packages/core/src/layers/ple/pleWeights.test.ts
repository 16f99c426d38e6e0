import { describe, expect, it } from 'vitest';
import type { ModelConfig } from '../../config/modelConfig.ts';
import { getConfig } from '../../config/presets.ts';
import { pleBuffers, pleRankWeights, pleShape, pleTableShards, pleWeightSpecs } from './pleWeights.ts';

const flash = getConfig('flash-next');
const tiny = getConfig('tiny');
const P = 'model.layers.1.ple';

describe('PLE checkpoint names', () => {
  it("declares Flash-Next's tensors with HF's state-dict names and shapes", () => {
    const specs = new Map(pleWeightSpecs(flash, 1).map((s) => [s.name, s.shape]));
    expect(specs.size).toBe(128 + 6);
    // the table ships as 128 row shards of the padded [320001536, 160] table
    expect(specs.get(`${P}.ple_embedding.ngram_embedding.shard_0.weight`)).toEqual([2_500_012, 160]);
    expect(specs.get(`${P}.ple_embedding.ngram_embedding.shard_127.weight`)).toEqual([2_500_012, 160]);
    expect(specs.get(`${P}.key_proj.weight`)).toEqual([10240, 2560]);
    expect(specs.get(`${P}.value_proj.weight`)).toEqual([2560, 2560]);
    for (const norm of ['norm_key', 'norm_query', 'norm_conv']) expect(specs.get(`${P}.${norm}.weight`)).toEqual([10240]);
    expect(specs.get(`${P}.conv1d.weight`)).toEqual([10240, 1, 4]);
  });

  it('names the int64 buffers the checkpoint stores, with the derived values', () => {
    const b = pleBuffers(flash, 1);
    expect(b.map((x) => [x.name, x.shape, x.dtype])).toEqual([
      [`${P}.ple_embedding.layer_multipliers`, [3], 'i64'],
      [`${P}.ple_embedding.ngram_heads_vocab_sizes`, [16], 'i64'],
      [`${P}.ple_embedding.ngram_heads_offsets`, [16], 'i64'],
    ]);
    expect(Array.from(b[0].values)).toEqual([23703573157769n, 20109073645365n, 8052911324071n]);
    expect(b[1].values[0]).toBe(20000003n);
    expect(b[2].values[1]).toBe(20000003n);
  });

  it('reads the table as the concatenation of its shards, in shard order', () => {
    const table = pleRankWeights(tiny, 1, 0, 1).table;
    expect(table.name).toBe(`${P}.ple_embedding.ngram_embedding.weight`);
    expect(table.concat).toEqual([0, 1, 2, 3].map((k) => `${P}.ple_embedding.ngram_embedding.shard_${k}.weight`));
    expect(pleShape(tiny, 1).tableRows).toBe(2304);
  });

  it('splits rows in ceil(rows / parts) shards, the last one shorter (ATOM _embedding_shard_loader)', () => {
    const parts = (n: number): ModelConfig => ({ ...tiny, ple: { ...tiny.ple, splitNgramParts: n } });
    expect(pleTableShards(parts(5), 1).map((s) => [s.rowStart, s.rows])).toEqual([
      [0, 461],
      [461, 461],
      [922, 461],
      [1383, 461],
      [1844, 460],
    ]);
    expect(() => pleTableShards(parts(1000), 1)).toThrow(/do not split into 1000 non-empty shards/);
  });
});
