import type { Graph, GraphNode, ValueDecl, ValueId } from './graph.ts';

/**
 * Rank `rank`'s own part of a lockstep graph, for a process that runs one rank: its nodes
 * (in the same order), each collective cut down to this rank's ports, and only the values
 * those nodes touch. Node ids are kept, so every rank's part names a collective by the same
 * id and a communicator can check that all ranks meet at the same one.
 */
export function rankGraph(graph: Graph, rank: number): Graph {
  if (graph.rank !== undefined) throw new Error(`rankGraph: the graph is already rank ${graph.rank}'s part`);
  if (!(Number.isInteger(rank) && rank >= 0 && rank < graph.tp)) throw new Error(`rankGraph: rank ${rank} is outside [0, ${graph.tp})`);
  const nodes: GraphNode[] = [];
  for (const node of graph.nodes) {
    if (node.rank === rank) nodes.push(node);
    else if (node.rank === null) {
      const ports = node.inputs.length / graph.tp;
      const outPorts = node.outputs.length / graph.tp;
      nodes.push({
        ...node,
        inputs: node.inputs.slice(rank * ports, (rank + 1) * ports),
        outputs: node.outputs.slice(rank * outPorts, (rank + 1) * outPorts),
      });
    }
  }
  const used = new Set<ValueId>();
  for (const n of nodes) for (const id of [...n.inputs, ...n.outputs]) if (id !== null) used.add(id);
  const values: Record<ValueId, ValueDecl> = {};
  for (const id of used) values[id] = graph.values[id];
  return {
    tp: graph.tp,
    rank,
    values,
    nodes,
    inputs: graph.inputs.filter((id) => used.has(id)),
    outputs: graph.outputs.filter((id) => used.has(id)),
    meta: { ...graph.meta, rank },
  };
}
