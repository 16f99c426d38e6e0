import type { GraphNode } from '../graph/graph.ts';
import { CPU_COLLECTIVE_KERNELS } from '../reference/kernels/index.ts';
import type { Tensor } from '../tensor/tensor.ts';
import type { Communicator } from './communicator.ts';

interface Arrival {
  node: GraphNode;
  inputs: Tensor[];
  resolve: (out: Tensor[]) => void;
  reject: (e: Error) => void;
}

/**
 * tp communicators in one process (PyTorch's ProcessLocalGroup): each rank's call waits
 * until every rank has arrived at the same collective, then the reference kernel sums all
 * ranks' buffers in the node's declared order and each rank gets its share. Ranks that
 * arrive at different collectives would wait for each other forever in a real group; here
 * that is detected and every waiting rank is rejected with the mismatch.
 */
export interface LocalCommunicator extends Communicator {
  /** this rank is done (its run finished or failed): peers still waiting on it are rejected */
  leave(reason: string): void;
}

export function processLocalGroup(tp: number): LocalCommunicator[] {
  if (!(Number.isInteger(tp) && tp >= 1)) throw new Error(`processLocalGroup: tp ${tp} is not a positive integer`);
  const waiting = new Map<number, Arrival>();
  const left = new Map<number, string>();
  const settle = (): void => {
    if (left.size > 0 && waiting.size > 0) {
      const [r, why] = [...left.entries()][0];
      for (const a of waiting.values())
        a.reject(new Error(`rank ${r} left the group (${why}) while others wait at node ${a.node.id} (${a.node.op} ${a.node.scope})`));
      waiting.clear();
      return;
    }
    if (waiting.size < tp) return;
    const arrivals = [...waiting.entries()].sort((a, b) => a[0] - b[0]).map(([, a]) => a);
    waiting.clear();
    const ids = new Set(arrivals.map((a) => a.node.id));
    if (ids.size > 1) {
      const where = arrivals.map((a, r) => `rank ${r} at node ${a.node.id} (${a.node.op} ${a.node.scope})`).join(', ');
      for (const a of arrivals) a.reject(new Error(`ranks reached different collectives: ${where}`));
      return;
    }
    const node = arrivals[0].node;
    try {
      const outs = CPU_COLLECTIVE_KERNELS.get(node.op)(
        arrivals.map((a) => a.inputs),
        { ...node.attrs, tp },
      );
      arrivals.forEach((a, r) => {
        a.resolve(outs[r]);
      });
    } catch (e) {
      for (const a of arrivals) a.reject(e as Error);
    }
  };
  return Array.from({ length: tp }, (_, rank) => ({
    rank,
    tp,
    collective: (node: GraphNode, inputs: Tensor[]) =>
      new Promise<Tensor[]>((resolve, reject) => {
        if (waiting.has(rank)) throw new Error(`rank ${rank} entered a collective while still in another`);
        if (left.has(rank)) throw new Error(`rank ${rank} left the group`);
        waiting.set(rank, { node, inputs, resolve, reject });
        settle();
      }),
    leave: (reason: string) => {
      left.set(rank, reason);
      settle();
    },
  }));
}
