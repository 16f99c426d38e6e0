import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeSafetensorsFile } from '../io/safetensorsFile.ts';
import type { Tensor } from '../tensor/tensor.ts';
import { SafetensorsWeightSource } from './safetensorsWeights.ts';

const dir = mkdtempSync(join(tmpdir(), 'hcsp-weights-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const bf16 = (shape: number[], fill: number): Tensor => ({ dtype: 'bf16', shape, data: new Uint16Array(shape.reduce((a, b) => a * b, 1)).fill(fill) });

const shardA = join(dir, 'model-00001-of-00002.safetensors');
const shardB = join(dir, 'model-00002-of-00002.safetensors');
writeSafetensorsFile(shardA, { 'model.embed_tokens.weight': bf16([4, 2], 0x3f80), 'model.norm.weight': bf16([2], 0x4000) });
writeSafetensorsFile(shardB, { 'lm_head.weight': bf16([4, 2], 0x4040), 'model.scale': { dtype: 'f32', shape: [1], data: new Float32Array([0.5]) } });

describe('SafetensorsWeightSource', () => {
  it("reads only a slice's bytes: a row range is one run, a column range one run per row", async () => {
    // a [6, 5] bf16 tensor whose element i holds bits i, so every slice is checkable by hand
    const path = join(dir, 'slices.safetensors');
    writeSafetensorsFile(path, { w: { dtype: 'bf16', shape: [6, 5], data: Uint16Array.from({ length: 30 }, (_, i) => i) } });
    const w = SafetensorsWeightSource.open(path);
    try {
      const rows = await w.read('w', {
        axis: 0,
        ranges: [
          [1, 3],
          [5, 6],
        ],
      });
      expect(rows.shape).toEqual([3, 5]);
      expect([...(rows.data as Uint16Array)]).toEqual([5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 25, 26, 27, 28, 29]);
      expect(w.bytesRead()).toBe(3 * 5 * 2);
      const cols = await w.read('w', { axis: 1, ranges: [[3, 5]] });
      expect(cols.shape).toEqual([6, 2]);
      expect([...(cols.data as Uint16Array)]).toEqual([3, 4, 8, 9, 13, 14, 18, 19, 23, 24, 28, 29]);
      expect(w.bytesRead()).toBe(3 * 5 * 2 + 6 * 2 * 2);
      await expect(w.read('w', { axis: 1, ranges: [[4, 6]] })).rejects.toThrow(/slice range \[4, 6\) is outside axis 1 of \[6,5\]/);
    } finally {
      w.close();
    }
  });

  it('serves tensors from several shards, reading each on demand', async () => {
    const w = SafetensorsWeightSource.open([shardA, shardB]);
    try {
      expect(w.names().sort()).toEqual(['lm_head.weight', 'model.embed_tokens.weight', 'model.norm.weight', 'model.scale']);
      expect(w.has('lm_head.weight')).toBe(true);
      expect(w.has('nope')).toBe(false);
      expect([...((await w.read('lm_head.weight')).data as Uint16Array)]).toEqual(new Array(8).fill(0x4040));
      expect(await w.read('model.scale')).toEqual({ dtype: 'f32', shape: [1], data: new Float32Array([0.5]) });
      await expect(w.read('nope')).rejects.toThrow(/missing tensor 'nope'/);
    } finally {
      w.close();
    }
  });

  it('opens a Hugging Face index and holds it to the shards', async () => {
    const index = join(dir, 'model.safetensors.index.json');
    const weightMap = {
      'model.embed_tokens.weight': 'model-00001-of-00002.safetensors',
      'model.norm.weight': 'model-00001-of-00002.safetensors',
      'lm_head.weight': 'model-00002-of-00002.safetensors',
      'model.scale': 'model-00002-of-00002.safetensors',
    };
    writeFileSync(index, JSON.stringify({ metadata: { total_size: 44 }, weight_map: weightMap }));
    const w = SafetensorsWeightSource.open(index);
    expect((await w.read('model.norm.weight')).shape).toEqual([2]);
    w.close();

    const wrong = join(dir, 'wrong.safetensors.index.json');
    writeFileSync(wrong, JSON.stringify({ weight_map: { ...weightMap, 'lm_head.weight': 'model-00001-of-00002.safetensors' } }));
    expect(() => SafetensorsWeightSource.open(wrong)).toThrow(/tensor 'lm_head.weight' is indexed in .*00001.* but found in .*00002/);

    const broken = join(dir, 'broken.safetensors.index.json');
    writeFileSync(broken, '{"weight_map": {"a": 3}}');
    expect(() => SafetensorsWeightSource.open(broken)).toThrow(/malformed index: weight_map must map tensor names to shard file names/);
  });

  it('refuses a tensor present in two shards, naming both files', () => {
    expect(() => SafetensorsWeightSource.open([shardA, shardA])).toThrow(/tensor 'model.embed_tokens.weight' is in two shards/);
  });

  it('validateAgainst reports every missing and mismatched tensor in one error', () => {
    const w = SafetensorsWeightSource.open([shardA, shardB]);
    try {
      expect(() =>
        w.validateAgainst([
          { name: 'model.embed_tokens.weight', shape: [4, 2], dtype: 'bf16' },
          { name: 'model.norm.weight', shape: [3], dtype: 'bf16' },
          { name: 'model.scale', shape: [1], dtype: 'bf16' },
          { name: 'model.layers.0.missing', shape: [2], dtype: 'bf16' },
        ]),
      ).toThrow(
        "3 tensor problems: tensor 'model.norm.weight': wrong shape: expected [3], got [2]; " +
          "tensor 'model.scale': wrong dtype: expected bf16, got f32; missing tensor 'model.layers.0.missing'",
      );
      expect(() =>
        w.validateAgainst([
          { name: 'lm_head.weight', shape: [4, 2], dtype: 'bf16' },
          { name: 'model.scale', shape: [1], dtype: 'f32' },
        ]),
      ).not.toThrow();
    } finally {
      w.close();
    }
  });
});
