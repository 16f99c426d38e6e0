// Per sub-layer step, from the graph alone: the collectives it issues (kind, algorithm,
// shapes, bytes each rank sends, rows' worth of data each rank sends) and the rows each
// rank runs through combine-norm. Counted exactly as graph/runStatsCounter.ts counts the
// run's totals, so the steps add up to the backend's stats.
import { bytesPerElement, commBytesOf, isCollectiveOp, numel, type CollectiveOp, type Graph, type GraphNode, type ReduceAlgorithm } from '@hcsp/core';
import { stepKeyOf } from './stepKey.ts';

export interface StepCollective {
  scope: string;
  kind: CollectiveOp;
  algorithm: ReduceAlgorithm | null;
  /** rank 0's input and output shapes (every rank's are the same) */
  inShape: number[];
  outShape: number[];
  /** bytes each rank sends */
  bytesPerRank: number[];
  /** bytesPerRank / bytes of one row of the collective's input */
  rowsSentPerRank: number[];
}

export interface StepTraffic {
  step: string;
  collectives: StepCollective[];
  /** rows entering combine-norm on each rank in this step */
  hcRowsPerRank: number[];
}

function collectiveOf(graph: Graph, node: GraphNode): StepCollective {
  const kind = node.op as CollectiveOp;
  const algorithm = kind === 'allGather' ? null : (node.attrs.algorithm as ReduceAlgorithm);
  const ports = node.inputs.length / graph.tp;
  const decl = (id: string | null) => {
    if (id === null) throw new Error(`${node.scope}: collective ${kind} has an absent port`);
    return graph.values[id];
  };
  const bytes = (id: string | null) => numel(decl(id).shape) * bytesPerElement(decl(id).dtype);
  const bytesPerRank: number[] = [];
  const rowsSentPerRank: number[] = [];
  for (let r = 0; r < graph.tp; r++) {
    const input = decl(node.inputs[r * ports]);
    const sent = commBytesOf(kind, algorithm, bytes(node.inputs[r * ports]), bytes(node.outputs[r * ports]), graph.tp);
    const rowBytes = (numel(input.shape) / input.shape[0]) * bytesPerElement(input.dtype);
    bytesPerRank.push(sent);
    rowsSentPerRank.push(sent / rowBytes);
  }
  return { scope: node.scope, kind, algorithm, inShape: decl(node.inputs[0]).shape, outShape: decl(node.outputs[0]).shape, bytesPerRank, rowsSentPerRank };
}

/** The graph's collectives and HC rows grouped by step, in graph order. */
export function stepTraffic(graph: Graph): StepTraffic[] {
  const steps = new Map<string, StepTraffic>();
  const stepOf = (node: GraphNode): StepTraffic => {
    const key = stepKeyOf(node.scope);
    let s = steps.get(key);
    if (!s) {
      s = { step: key, collectives: [], hcRowsPerRank: new Array(graph.tp).fill(0) };
      steps.set(key, s);
    }
    return s;
  };
  for (const node of graph.nodes) {
    if (isCollectiveOp(node.op)) stepOf(node).collectives.push(collectiveOf(graph, node));
    if (node.op === 'hcCombineNorm' && node.rank !== null) stepOf(node).hcRowsPerRank[node.rank] += graph.values[node.inputs[0]!].shape[0];
  }
  return [...steps.values()];
}
