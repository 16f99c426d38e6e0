import type { Graph, ValueId } from './graph.ts';

/** For each value, the index of the last node that reads it (so executors can free it). */
export function lastUses(graph: Graph): Map<ValueId, number> {
  const last = new Map<ValueId, number>();
  graph.nodes.forEach((node, i) => {
    for (const id of node.inputs) if (id !== null) last.set(id, i);
  });
  return last;
}
