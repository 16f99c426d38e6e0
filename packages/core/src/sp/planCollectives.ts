// The collectives one forward of a plan issues, as `hcsp plan` prints them: the decoder graph
// the run builds (model/decoderGraph.ts, the real sub-layers, the MTP head where the plan has
// it; no weights, no tensors), its collective nodes grouped by kind, place and shapes, with
// the bytes each rank sends (collectives/commBytes.ts, the run summary's accounting).
import type { ModelConfig } from '../config/modelConfig.ts';
import { commBytesOf, type CollectiveOp } from '../collectives/commBytes.ts';
import { RING_DEFAULT_CHANNELS, RING_DEFAULT_CHUNK_ELEMS } from '../collectives/ringAllReduce.ts';
import type { Graph } from '../graph/graph.ts';
import { isCollectiveOp } from '../graph/ops/registry.ts';
import type { ReduceAlgorithm } from '../graph/ops/spOps.ts';
import { MODEL_SUB_LAYERS } from '../layers/modelSubLayers.ts';
import { buildDecoderGraph } from '../model/decoderGraph.ts';
import { bytesPerElement, numel } from '../tensor/tensor.ts';
import type { SpPlan } from './plan.ts';

export interface PlanCollective {
  op: CollectiveOp;
  /** the node's scope with its layer index as L*, e.g. "L*.attn.all_reduce" */
  where: string;
  /** decoder layers it runs in ([] outside the layers) */
  layers: number[];
  /** one rank's input and output, e.g. "bf16[300,1024]" */
  input: string;
  output: string;
  algorithm: ReduceAlgorithm | null;
  /** times it runs in the forward */
  count: number;
  /** bytes each rank sends for one of them */
  bytesPerRank: number;
}

export interface PlanTraffic {
  collectives: PlanCollective[];
  /** bytes each rank sends over the forward */
  totalBytesPerRank: number;
}

function graphOf(config: ModelConfig, plan: SpPlan, reduce: ReduceAlgorithm): Graph {
  return buildDecoderGraph({
    config,
    plan,
    reduce,
    ring: { channels: RING_DEFAULT_CHANNELS, chunkElems: RING_DEFAULT_CHUNK_ELEMS },
    contract: 'atom',
    subLayers: MODEL_SUB_LAYERS,
  }).graph;
}

/** The collectives of one forward of `plan` (rank 0's ports: every rank's are alike). */
export function planTraffic(config: ModelConfig, plan: SpPlan, reduce: ReduceAlgorithm = 'ring'): PlanTraffic {
  const graph = graphOf(config, plan, reduce);
  const decl = (id: string | null | undefined) => (id ? graph.values[id] : undefined);
  const groups = new Map<string, PlanCollective>();
  for (const node of graph.nodes) {
    const op = node.op;
    if (!isCollectiveOp(op)) continue;
    const input = decl(node.inputs[0]);
    const output = decl(node.outputs[0]);
    if (!input || !output) throw new Error(`plan: collective node ${node.id} (${node.scope}) has no rank 0 ports`);
    const algorithm = op === 'allGather' ? null : ((node.attrs.algorithm as ReduceAlgorithm | undefined) ?? reduce);
    const where = node.scope.replace(/^L\d+\./, 'L*.');
    const shape = (d: typeof input) => `${d.dtype}[${d.shape.join(',')}]`;
    const key = [op, where, shape(input), shape(output)].join(' ');
    const g = groups.get(key);
    if (g) {
      g.count++;
      if (node.layer >= 0) g.layers.push(node.layer);
      continue;
    }
    const bytes = (d: typeof input) => numel(d.shape) * bytesPerElement(d.dtype);
    groups.set(key, {
      op,
      where,
      layers: node.layer >= 0 ? [node.layer] : [],
      input: shape(input),
      output: shape(output),
      algorithm,
      count: 1,
      bytesPerRank: commBytesOf(op, algorithm, bytes(input), bytes(output), graph.tp),
    });
  }
  const collectives = [...groups.values()];
  return { collectives, totalBytesPerRank: collectives.reduce((s, c) => s + c.count * c.bytesPerRank, 0) };
}

/** "2-7" for consecutive layers, else "0, 3, 5" */
export function layerList(layers: number[]): string {
  if (layers.length === 0) return '-';
  const consecutive = layers.every((l, i) => i === 0 || l === layers[i - 1] + 1);
  return consecutive && layers.length > 2 ? `${layers[0]}-${layers.at(-1)}` : layers.join(', ');
}
