import { bytesPerElement, numel } from '../tensor/tensor.ts';
import type { Graph, ValueId } from './graph.ts';
import { lastUses } from './valueLifetimes.ts';

/**
 * What a run of a graph holds on its device besides the weights, from the values' lifetimes:
 * the loop (graphSession.ts) makes each input at the start and each node's outputs when it
 * runs, and frees a value after its last reader (an output nothing reads at once; the graph's
 * outputs at the end). A device that pools freed blocks by size reserves `blocks` at prepare,
 * one block per value alive at once of each size, so a run allocates nothing on the device
 * but its kernels' scratch (and that only once: the pool keeps it for the next run).
 */
export interface MemoryPlan {
  /** byte size of each block to reserve: per distinct value size, as many as are ever alive at once */
  blocks: number[];
  /** the sum of blocks */
  poolBytes: number;
  /** the most bytes of values alive at once (poolBytes is more: a block serves values of its size only) */
  peakBytes: number;
}

/** the loop's allocation order over the graph's values (weights excluded), with `keep` alive to the end */
export function planMemory(graph: Graph, keep: Iterable<ValueId> = graph.outputs): MemoryPlan {
  const last = lastUses(graph);
  const kept = new Set(keep);
  const bytesOf = (id: ValueId): number => numel(graph.values[id].shape) * bytesPerElement(graph.values[id].dtype);
  const alive = new Map<number, number>();
  const most = new Map<number, number>();
  let live = 0;
  let peakBytes = 0;
  const make = (id: ValueId): void => {
    const b = bytesOf(id);
    if (b === 0) return;
    const n = (alive.get(b) ?? 0) + 1;
    alive.set(b, n);
    most.set(b, Math.max(most.get(b) ?? 0, n));
    live += b;
    peakBytes = Math.max(peakBytes, live);
  };
  const drop = (id: ValueId): void => {
    const b = bytesOf(id);
    if (b === 0 || kept.has(id)) return;
    alive.set(b, alive.get(b)! - 1);
    live -= b;
  };
  for (const id of graph.inputs) make(id);
  graph.nodes.forEach((node, i) => {
    for (const id of node.outputs) if (id !== null) make(id);
    for (const id of node.inputs) if (id !== null && graph.values[id].kind !== 'weight' && last.get(id) === i) drop(id);
    for (const id of node.outputs) if (id !== null && !last.has(id)) drop(id);
  });
  const blocks = [...most].sort((a, b) => b[0] - a[0]).flatMap(([b, n]) => new Array<number>(n).fill(b));
  return { blocks, poolBytes: blocks.reduce((s, b) => s + b, 0), peakBytes };
}
