import { describe, expect, it } from 'vitest';
import { gemmShape, heldWeights, valueBytes } from './footprint.ts';
import { GraphBuilder } from './graphBuilder.ts';

describe('footprint', () => {
  // ids [2, 2] gather 4 rows of a 50-row table; a linear [3, 4] x [6, 4]; an FP8 linear on the same x, its matrix on port 2
  const g = new GraphBuilder(1);
  const ids = g.input('ids', [2, 2], 'i32');
  const table = g.weight({ name: 'table', gather: 'rows' }, [50, 2]);
  const e = g.value('e', [2, 4], 'bf16', 0);
  g.node({ op: 'pleNgramEmbed', rank: 0, inputs: [ids, table], outputs: [e], attrs: {}, scope: 'ple', layer: 0 });
  const x = g.input('x', [3, 4], 'bf16');
  const w = g.weight({ name: 'w' }, [6, 4]);
  const y = g.value('y', [3, 6], 'bf16', 0);
  g.node({ op: 'linear', rank: 0, inputs: [x, w], outputs: [y], attrs: {}, scope: 'l', layer: 0 });
  const xq = g.value('xq', [3, 4], 'fp8e4m3fn', 0);
  const sx = g.value('sx', [3], 'f32', 0);
  g.node({ op: 'quantFp8PerToken', rank: 0, inputs: [x], outputs: [xq, sx], attrs: { format: 'e4m3fn', style: 'reciprocal' }, scope: 'q', layer: 0 });
  const qW = g.weight({ name: 'qW' }, [5, 4], 'fp8e4m3fn');
  const sw = g.weight({ name: 'sw' }, [5], 'f32');
  const z = g.value('z', [3, 5], 'bf16', 0);
  g.node({
    op: 'fp8LinearPtpc',
    rank: 0,
    inputs: [xq, sx, qW, sw],
    outputs: [z],
    attrs: { format: 'e4m3fn', scaleOrder: 'weightFirst' },
    scope: 'f',
    layer: 0,
  });
  g.node({ op: 'linear', rank: 0, inputs: [x, w], outputs: [g.value('y2', [3, 6], 'bf16', 0)], attrs: {}, scope: 'l2', layer: 0 });
  const graph = g.build();

  it('a weight once, at what its reader needs: a row-gathered table only at the rows its ids name', () => {
    expect(Object.fromEntries(heldWeights(graph))).toEqual({ [table]: 4 * 2 * 2, [w]: 6 * 4 * 2, [qW]: 5 * 4, [sw]: 5 * 4 });
    expect(valueBytes(graph.values[table])).toBe(50 * 2 * 2);
  });

  it("a GEMM's shape from the declared weight port, bf16 or FP8", () => {
    const [, lin, , fp8] = graph.nodes;
    expect(gemmShape(graph.values, lin)).toEqual({ T: 3, K: 4, O: 6 });
    expect(gemmShape(graph.values, fp8)).toEqual({ T: 3, K: 4, O: 5 });
  });
});
