import { describe, expect, it } from 'vitest';
import { GraphBuilder } from './graphBuilder.ts';

// The builder holds every node to its op's declaration: attributes by kind and value, and
// each declared output against the op's output rule.
function linearGraph() {
  const b = new GraphBuilder(1);
  const x = b.input('x', [5, 8], 'bf16');
  const w = b.weight({ name: 'w' }, [3, 8]);
  return { b, x, w };
}

describe('GraphBuilder', () => {
  it('accepts a node whose outputs follow the rule', () => {
    const { b, x, w } = linearGraph();
    const y = b.value('y', [5, 3], 'bf16', 0);
    b.node({ op: 'linear', rank: 0, layer: 0, scope: 's', inputs: [x, w], outputs: [y], attrs: {} });
    expect(b.build().nodes).toHaveLength(1);
  });

  it('refuses an output the rule shapes differently, naming the value and both shapes', () => {
    const { b, x, w } = linearGraph();
    const y = b.value('y', [5, 4], 'bf16', 0);
    expect(() => b.node({ op: 'linear', rank: 0, layer: 0, scope: 'L0.up', inputs: [x, w], outputs: [y], attrs: {} })).toThrow(
      "graph: L0.up: op linear: output 'y' ('y') is declared bf16[5,4], the op gives bf16[5,3]",
    );
  });

  it('refuses inputs the rule rejects', () => {
    const b = new GraphBuilder(1);
    const x = b.input('x', [5, 8], 'bf16');
    const w = b.weight({ name: 'w' }, [3, 7]);
    const y = b.value('y', [5, 3], 'bf16', 0);
    expect(() => b.node({ op: 'linear', rank: 0, layer: 0, scope: 's', inputs: [x, w], outputs: [y], attrs: {} })).toThrow(
      "op linear: input 'w' is [3,7], expected [rows,8]",
    );
  });

  it('validates attributes: required, kind, allowed values, unknown names', () => {
    const b = new GraphBuilder(1);
    const x = b.input('x', [4, 8], 'bf16');
    const y = b.value('y', [4, 8], 'bf16', 0);
    const node = (attrs: Record<string, unknown>) => () => b.node({ op: 'trim', rank: 0, layer: 0, scope: 's', inputs: [x], outputs: [y], attrs });
    expect(node({})).toThrow("op trim: attribute 'rows' is required");
    expect(node({ rows: 2.5 })).toThrow("op trim: attribute 'rows' must be an integer, got 2.5");
    expect(node({ rows: -1 })).toThrow("op trim: attribute 'rows' must be an integer >= 0, got -1");
    expect(node({ rows: 4, extra: 1 })).toThrow("op trim: unknown attribute 'extra' (declared: rows)");
    const g = b.value('g', [4, 8], 'bf16', 0);
    expect(() => b.node({ op: 'hcCombine', rank: 0, layer: 0, scope: 's', inputs: [x, x, x], outputs: [g], attrs: { streams: 4, contract: 'torch' } })).toThrow(
      'op hcCombine: attribute \'contract\' must be one of atom, hf, got "torch"',
    );
  });

  it('gives a collective tp in its rule: all-gather multiplies rows, reduce-scatter divides them', () => {
    const b = new GraphBuilder(2);
    const xs = [b.input('x0', [3, 4], 'bf16'), b.input('x1', [3, 4], 'bf16')];
    const ys = [b.value('y0', [6, 4], 'bf16', 0), b.value('y1', [6, 4], 'bf16', 1)];
    b.node({ op: 'allGather', rank: null, layer: 0, scope: 'g', inputs: xs, outputs: ys, attrs: {} });
    const zs = [b.value('z0', [6, 4], 'bf16', 0), b.value('z1', [6, 4], 'bf16', 1)];
    expect(() => b.node({ op: 'reduceScatter', rank: null, layer: 0, scope: 'rs', inputs: ys, outputs: zs, attrs: { algorithm: 'ring' } })).toThrow(
      "output 'y' ('z0') is declared bf16[6,4], the op gives bf16[3,4]",
    );
  });

  it('declares a weight reference once, and refuses it again with another shape or dtype', () => {
    const b = new GraphBuilder(1);
    const ref = { name: 'w', slice: { axis: 0, ranges: [[0, 2]] as [number, number][] } };
    const id = b.weight(ref, [2, 4]);
    expect(b.weight({ ...ref }, [2, 4])).toBe(id);
    expect(() => b.weight(ref, [4, 2])).toThrow("graph: weight 'w' ('w:w#0:0-2') is declared bf16[2,4], asked for again as bf16[4,2]");
    expect(() => b.weight(ref, [2, 4], 'f32')).toThrow('asked for again as f32[2,4]');
  });
});
