import { describe, expect, it } from 'vitest';
import { heatmapModel, ulpColor, ULP_CLASSES } from './heatmapModel.ts';
import type { StepDiff } from './streamDiff.ts';

function diff(step: string, rowUlp: number[]): StepDiff {
  return {
    step,
    shardedA: true,
    shardedB: false,
    differing: rowUlp.filter((u) => u > 0).length,
    count: rowUlp.length,
    maxRowUlp: Math.max(...rowUlp),
    rowUlp: Float64Array.from(rowUlp),
    rowDiffering: Int32Array.from(rowUlp, (u) => (u > 0 ? 1 : 0)),
    padNonZeroA: 0,
    padNonZeroB: 0,
    replicaMismatchA: 0,
    replicaMismatchB: 0,
  };
}

describe('heatmapModel', () => {
  it('covers the padded rows of a sharded run, one cell per row when they fit', () => {
    // T 5, tp 2, C 3: row 5 is padding
    const m = heatmapModel([diff('L2.mlp', [0, 0.5, 0, 3, 0])], 5, 3, 2, true, 100);
    expect([m.rows, m.binRows, m.rankStarts, m.lines[0].sharded]).toEqual([6, 1, [0, 3], true]);
    expect(m.lines[0].cells.map((c) => [c.start, c.end, c.ulp, c.differing])).toEqual([
      [0, 1, 0, 0],
      [1, 2, 0.5, 1],
      [2, 3, 0, 0],
      [3, 4, 3, 1],
      [4, 5, 0, 0],
      [5, 6, 0, 0],
    ]);
  });

  it("bins rows to fit, keeping each bin's worst row and its count", () => {
    const m = heatmapModel([diff('L2.mlp', [0, 0.5, 0, 3, 0])], 5, 3, 2, true, 2);
    expect(m.binRows).toBe(3);
    expect(m.lines[0].cells.map((c) => [c.start, c.end, c.ulp, c.differing])).toEqual([
      [0, 3, 0.5, 1],
      [3, 6, 3, 1],
    ]);
    const unsharded = heatmapModel([diff('L0.attn', [0, 0, 0, 0, 1])], 5, 5, 2, false, 2);
    expect([unsharded.rows, unsharded.rankStarts, unsharded.lines[0].cells.length]).toEqual([5, [], 2]);
  });

  it('rejects a step of the wrong length and a bad bin count', () => {
    expect(() => heatmapModel([diff('L0.attn', [0, 0])], 5, 3, 2, true, 10)).toThrow('step L0.attn has 2 rows, expected T 5');
    expect(() => heatmapModel([], 5, 3, 2, true, 0)).toThrow('maxBins must be a positive integer, got 0');
  });
});

describe('ulpColor', () => {
  it('maps 0 to the bit-identical colour and larger ulps to darker classes', () => {
    expect(ulpColor(0)).toBe(ULP_CLASSES[0].color);
    expect(ulpColor(0.25)).toBe(ULP_CLASSES[1].color);
    expect(ulpColor(1)).toBe(ULP_CLASSES[2].color);
    expect(ulpColor(4.5)).toBe(ULP_CLASSES[5].color);
    expect(ulpColor(16)).toBe(ULP_CLASSES[6].color);
    expect(ulpColor(16.5)).toBe(ULP_CLASSES[7].color);
    expect(ulpColor(Infinity)).toBe(ULP_CLASSES[7].color);
    expect(ULP_CLASSES).toHaveLength(8);
    expect(() => ulpColor(NaN)).toThrow('got NaN');
  });
});
