// The memory one run of a graph needs, from the graph alone (its shapes come from the model
// configuration, T and tp), computed before anything is allocated. The model is core's
// execution loop (graph/graphSession.ts): every weight value (each rank's slice) is loaded
// when the graph is prepared and stays until the run ends; the graph inputs are held by the
// caller throughout; an intermediate lives from the node that writes it to the last node
// that reads it (graph outputs to the end).
import { heldWeightBytes, lastUses, numel, valueBytes as bytesOf, type Graph, type WeightSpec } from '@hcsp/core';

/** Where the weights come from, which decides what is held besides the slices. */
export type WeightOrigin =
  /** seeded synthetic weights: every tensor generated whole (from fp64 draws) and cached */
  | { kind: 'synthetic'; specs: readonly WeightSpec[] }
  /** a checkpoint: each rank reads only its slice, nothing else is kept */
  | { kind: 'checkpoint' };

export interface MemoryEstimate {
  /**
   * the total: weights + inputs + the larger of the weight scratch and the activation peak
   * (with the garbage a collection has not yet freed) + the runtime's own heap
   */
  bytes: number;
  /** whole synthetic tensors held by the weight source (0 for a checkpoint) */
  sourceWeights: number;
  /** weight values the ranks hold beyond what the source shares with them */
  rankWeights: number;
  /** fp64 scratch of generating the largest synthetic tensor (0 for a checkpoint) */
  weightScratch: number;
  /** graph inputs (token ids, RoPE tables, ...) */
  inputs: number;
  /** most intermediate bytes alive at once, with each node's fp32 working copy of its outputs */
  activationPeak: number;
  perRank: { rank: number; weights: number; activationPeak: number }[];
  /** what executing a graph costs the JavaScript runtime itself (RUNTIME_BYTES) */
  runtime: number;
}

// A kernel's working memory is taken to be its outputs once more in fp32 (the reference
// kernels accumulate in fp32 and round when they store).
const SCRATCH_BYTES_PER_ELEMENT = 4;
// Generation draws every value in fp64 before rounding it (syntheticWeights.ts).
const GENERATION_BYTES_PER_ELEMENT = 8;
// Measured with the CPU reference (config small, tp 4, T 1100 / 2200 / 4400): peak RSS
// above the idle process 120 / 142 / 177 MB where the live activations here come to 25 /
// 37 / 62 MB. Freed activations wait for a collection (about half again of them), and
// running a graph takes some 90 MB of the runtime's own (JIT code, heap spaces, the graph).
export const GARBAGE_FACTOR = 1.5;
export const RUNTIME_BYTES = 96 * 2 ** 20;

/** The estimate for running `graph` once with weights from `origin`. */
export function estimateGraphMemory(graph: Graph, origin: WeightOrigin): MemoryEstimate {
  const ranks = Array.from({ length: graph.tp }, (_, rank) => ({ rank, weights: 0, activationPeak: 0 }));
  const specs = origin.kind === 'synthetic' ? new Map(origin.specs.map((s) => [s.name, s])) : new Map<string, WeightSpec>();

  // Weights: a synthetic source hands out its cached tensor itself when a value is the whole
  // tensor; a slice or a concatenation is a copy, and a checkpoint read always is one.
  // A value read by several ranks is held once, and counted in each of their shares.
  let rankWeights = 0;
  const sourceNames = new Set<string>();
  const seen = new Set<string>();
  const seenByRank = new Set<string>();
  graph.nodes.forEach((node) => {
    for (const id of node.inputs) {
      const d = id === null ? undefined : graph.values[id];
      if (d?.kind !== 'weight' || !d.weight) continue;
      for (const name of d.weight.concat ?? [d.weight.name]) sourceNames.add(name);
      if (origin.kind === 'synthetic' && !d.weight.slice && !d.weight.concat) continue;
      const held = heldWeightBytes(graph.values, node, d);
      if (!seen.has(d.id)) rankWeights += held;
      seen.add(d.id);
      const key = `${node.rank}\0${d.id}`;
      if (node.rank !== null && !seenByRank.has(key)) ranks[node.rank].weights += held;
      seenByRank.add(key);
    }
  });
  let sourceWeights = 0;
  let weightScratch = 0;
  for (const name of sourceNames) {
    const spec = specs.get(name);
    if (!spec) continue;
    sourceWeights += bytesOf(spec);
    weightScratch = Math.max(weightScratch, numel(spec.shape) * GENERATION_BYTES_PER_ELEMENT);
  }

  const inputs = graph.inputs.reduce((sum, id) => sum + bytesOf(graph.values[id]), 0);

  // Activations: walk the nodes in order.
  const last = lastUses(graph);
  const kept = new Set(graph.outputs);
  const live = new Map<string, number>();
  const liveByRank = ranks.map(() => 0);
  let liveTotal = 0;
  let activationPeak = 0;
  const free = (id: string): void => {
    const bytes = live.get(id);
    if (bytes === undefined) return;
    live.delete(id);
    liveTotal -= bytes;
    const r = graph.values[id].rank;
    if (r !== null) liveByRank[r] -= bytes;
  };
  graph.nodes.forEach((node, i) => {
    let scratch = 0;
    for (const id of node.outputs) {
      if (id === null) continue;
      const d = graph.values[id];
      const bytes = bytesOf(d);
      scratch += numel(d.shape) * SCRATCH_BYTES_PER_ELEMENT;
      live.set(id, bytes);
      liveTotal += bytes;
      if (d.rank !== null) liveByRank[d.rank] += bytes;
    }
    activationPeak = Math.max(activationPeak, liveTotal + scratch);
    liveByRank.forEach((b, r) => {
      ranks[r].activationPeak = Math.max(ranks[r].activationPeak, b + (node.rank === r ? scratch : 0));
    });
    for (const id of node.outputs) if (id !== null && !last.has(id) && !kept.has(id)) free(id);
    for (const id of node.inputs) if (id !== null && last.get(id) === i && !kept.has(id)) free(id);
  });

  return {
    bytes: sourceWeights + rankWeights + inputs + Math.max(weightScratch, GARBAGE_FACTOR * activationPeak) + RUNTIME_BYTES,
    sourceWeights,
    rankWeights,
    weightScratch,
    inputs,
    activationPeak,
    perRank: ranks,
    runtime: RUNTIME_BYTES,
  };
}
