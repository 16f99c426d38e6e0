import type { GraphNode } from '../graph/graph.ts';
import type { Tensor } from '../tensor/tensor.ts';

/**
 * One rank's end of a TP group: where a rank's part of a graph (rankGraph) meets its peers.
 * Implementations: the in-process group (processLocalGroup.ts), and real engines in the
 * backends (NCCL/RCCL, MPI). The node says which collective, with its attributes and its
 * layout (OpDef.collective).
 */
export interface Communicator {
  readonly rank: number;
  readonly tp: number;
  /** this rank's input ports of a collective node in, its output ports out */
  collective(node: GraphNode, inputs: Tensor[]): Promise<Tensor[]>;
}
