import { modelWeightSpecs, STAND_IN_SUB_LAYERS, TINY } from '@hcsp/core';
import { describe, expect, it } from 'vitest';
import { tiledNormal, TiledWeightSource } from './tiledWeights.ts';

describe('tiled values', () => {
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

  it('tiled inputs: the count asked for, rows not copies of each other, finite', () => {
    const v = tiledNormal(3 * (1 << 20) + 5, 1);
    expect(v.length).toBe(3 * (1 << 20) + 5);
    expect(v[0]).not.toBe(v[1 << 20]);
    const f32 = new Float32Array(new Uint32Array(Array.from(v.subarray(0, 4096), (b) => b << 16)).buffer);
    expect(f32.every(Number.isFinite)).toBe(true);
  });
});
