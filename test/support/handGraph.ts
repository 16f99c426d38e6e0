// Small graphs written out by hand for the memory tests (the CLI's estimate, the rocm device
// guard): what they count is which values each node reads and writes, so every node is an
// `add`, numbered in order, in layer 0.
import type { Graph, GraphNode, ValueDecl } from '@hcsp/core';

/** One value of a hand-written graph. */
export const value = (
  id: string,
  shape: number[],
  dtype: ValueDecl['dtype'],
  rank: number | null,
  kind: ValueDecl['kind'],
  weight?: ValueDecl['weight'],
): ValueDecl => ({ id, shape, dtype, rank, kind, weight });

/** A graph at tp ranks of these values and of nodes [rank, inputs, outputs] (node i is `add` i, scope n<i>). */
export function handGraph(tp: number, values: ValueDecl[], nodes: [number | null, string[], string[]][], inputs: string[], outputs: string[]): Graph {
  return {
    tp,
    values: Object.fromEntries(values.map((d) => [d.id, d])),
    nodes: nodes.map(([rank, ins, outs], id): GraphNode => ({ id, op: 'add', rank, inputs: ins, outputs: outs, attrs: {}, scope: `n${id}`, layer: 0 })),
    inputs,
    outputs,
    meta: {},
  };
}
