import type { CommBytes, RunStats } from '../backend/backend.ts';
import { commBytesOf } from '../collectives/commBytes.ts';
import type { ReduceAlgorithm } from './ops/spOps.ts';
import { bytesPerElement, numel } from '../tensor/tensor.ts';
import type { Graph, GraphNode } from './graph.ts';

/**
 * Counts what a graph moves and computes, from the graph alone, so that every backend
 * reports the same figures for the same graph: HC rows per rank (rows entering each
 * combine-norm) and bytes each rank sends per collective kind.
 */
export class RunStatsCounter {
  readonly hcRowsPerRank: number[];
  readonly commBytesPerRank: CommBytes[];

  constructor(private readonly graph: Graph) {
    this.hcRowsPerRank = new Array(graph.tp).fill(0);
    this.commBytesPerRank = Array.from({ length: graph.tp }, () => ({ allReduce: 0, allGather: 0, reduceScatter: 0 }));
  }

  count(node: GraphNode): void {
    const { values, tp } = this.graph;
    if (node.op === 'hcCombineNorm' && node.rank !== null) {
      this.hcRowsPerRank[node.rank] += values[node.inputs[0]!].shape[0];
    }
    if (node.op === 'allReduce' || node.op === 'allGather' || node.op === 'reduceScatter') {
      const bytes = (id: string | null): number => (id === null ? 0 : numel(values[id].shape) * bytesPerElement(values[id].dtype));
      const perPort = node.inputs.length / tp;
      for (let r = 0; r < tp; r++) {
        const algorithm = node.op === 'allGather' ? null : (node.attrs.algorithm as ReduceAlgorithm);
        const sent = commBytesOf(node.op, algorithm, bytes(node.inputs[r * perPort]), bytes(node.outputs[r * perPort]), tp);
        this.commBytesPerRank[r][node.op] += sent;
      }
    }
  }

  stats(seconds: number): RunStats {
    return { seconds, hcRowsPerRank: this.hcRowsPerRank, commBytesPerRank: this.commBytesPerRank };
  }
}
