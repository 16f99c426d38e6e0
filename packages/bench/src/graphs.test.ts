import { TINY } from '@hcsp/core';
import { describe, expect, it } from 'vitest';
import { hcMixBenchGraph } from './graphs.ts';

describe('bench graph', () => {
  it('is the tp-1 mix: combine-norm, linear, scaled silu, linear, gated mean, with x, streams and raw out', () => {
    const g = hcMixBenchGraph(TINY, 5);
    expect(g.tp).toBe(1);
    expect(g.nodes.map((n) => n.op)).toEqual(['hcCombineNorm', 'linear', 'hcScaledSilu', 'linear', 'hcGatedMean']);
    expect(g.outputs.map((id) => g.values[id].shape)).toEqual([
      [5, TINY.hiddenSize],
      [5, TINY.hc.count * TINY.hiddenSize],
      [5, TINY.hc.count],
    ]);
  });
});
