import type { CommBytes, RunStats } from '../backend/backend.ts';
import { commBytesOf } from '../collectives/commBytes.ts';
import { isCollectiveOp } from './ops/registry.ts';
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
    const op = node.op;
    if (isCollectiveOp(op)) {
      const bytes = (id: string | null): number => (id === null ? 0 : numel(values[id].shape) * bytesPerElement(values[id].dtype));
      // a rank's part of a graph lists only its own ports
      const ranks = this.graph.rank === undefined ? [...Array(tp).keys()] : [this.graph.rank];
      const perPort = node.inputs.length / ranks.length;
      ranks.forEach((r, i) => {
        const algorithm = op === 'allGather' ? null : (node.attrs.algorithm as ReduceAlgorithm);
        this.commBytesPerRank[r][op] += commBytesOf(op, algorithm, bytes(node.inputs[i * perPort]), bytes(node.outputs[i * perPort]), tp);
      });
    }
  }

  stats(seconds: number): RunStats {
    return { seconds, hcRowsPerRank: this.hcRowsPerRank, commBytesPerRank: this.commBytesPerRank };
  }
}
