// The streams value the run view compares at each step, one per rank, in forward order:
// the streams entering every HC step (DecoderOutputs.streamsPerStep) and the streams
// entering each PLE layer. The decoder does not list the latter (the PLE is no HC step:
// it adds its output to the streams before the layer's attention), so they are read off
// the graph: the first input of the PLE's per-rank "L<layer>.ple.add" node.
import type { Graph, ValueId } from '@hcsp/core';
import { compareSteps, stepKeyOf } from './stepKey.ts';

export interface StepStreams {
  step: string;
  /** the streams value of each rank */
  perRank: ValueId[];
}

const PLE_ADD = /^L\d+\.ple\.add$/;

function producerScope(graph: Graph, id: ValueId): string {
  const producer = graph.nodes.find((n) => n.outputs.includes(id));
  if (!producer) throw new Error(`step streams: no node produces '${id}'`);
  return producer.scope;
}

/** Every compared step of a decoder graph with its per-rank streams, PLE layers included. */
export function stepStreams(graph: Graph, streamsPerStep: ValueId[][]): StepStreams[] {
  const steps = streamsPerStep.map((perRank) => ({ step: stepKeyOf(producerScope(graph, perRank[0])), perRank }));
  const ple = new Map<string, ValueId[]>();
  for (const node of graph.nodes) {
    if (node.op !== 'add' || !PLE_ADD.test(node.scope)) continue;
    if (node.rank === null || node.inputs[0] === null) throw new Error(`step streams: PLE add '${node.scope}' has no rank or no streams input`);
    const step = stepKeyOf(node.scope);
    const perRank = ple.get(step) ?? new Array<ValueId>(graph.tp);
    perRank[node.rank] = node.inputs[0];
    ple.set(step, perRank);
  }
  for (const [step, perRank] of ple) {
    const ranks = perRank.filter((id) => id !== undefined).length;
    if (ranks !== graph.tp) throw new Error(`step streams: ${step} has a PLE add on ${ranks} of ${graph.tp} ranks`);
    steps.push({ step, perRank });
  }
  const seen = new Set<string>();
  for (const s of steps) {
    if (seen.has(s.step)) throw new Error(`step streams: step ${s.step} appears twice`);
    seen.add(s.step);
  }
  return steps.sort((a, b) => compareSteps(a.step, b.step));
}
