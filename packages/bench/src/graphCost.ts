// What a graph costs: GEMM shapes and flops, the bytes of every other node, the tensors that
// must be live, and the fewest bytes it must move.
import {
  gemmShape,
  getOpDef,
  heldWeights,
  matrixWeightPort,
  numel,
  planMemory,
  valueBytes,
  type GemmShape,
  type Graph,
  type ModelConfig,
  type ValueId,
} from '@hcsp/core';

export type { GemmShape };

/** A plain GEMM against a weight matrix (its declared cost family): the host's exact GEMM reads its weight as packed panels. */
const isGemm = (op: string): boolean => getOpDef(op).costFamily === 'gemm';

export const shapeKey = (s: GemmShape): string => `${s.T}x${s.K}x${s.O}`;
export const bytesOf = valueBytes;

export interface GraphCost {
  /** each distinct linear shape and how many nodes have it */
  gemms: { shape: GemmShape; count: number }[];
  gemmFlops: number;
  /** every non-linear node's inputs and outputs at their storage size, once per node */
  otherBytes: number;
  /** graph inputs uploaded and outputs read back (each a copy: read once, written once) */
  ioBytes: number;
}

export function graphCost(graph: Graph, readBack: readonly ValueId[] = graph.outputs): GraphCost {
  const gemms = new Map<string, { shape: GemmShape; count: number }>();
  let gemmFlops = 0;
  let otherBytes = 0;
  for (const node of graph.nodes) {
    if (node.op === 'linear') {
      const shape = gemmShape(graph.values, node);
      const e = gemms.get(shapeKey(shape)) ?? { shape, count: 0 };
      e.count++;
      gemms.set(shapeKey(shape), e);
      gemmFlops += 2 * shape.T * shape.K * shape.O;
      continue;
    }
    for (const id of [...node.inputs, ...node.outputs]) if (id !== null) otherBytes += bytesOf(graph.values[id]);
  }
  const ioBytes = [...graph.inputs, ...new Set(readBack)].reduce((s, id) => s + bytesOf(graph.values[id]), 0);
  return { gemms: [...gemms.values()], gemmFlops, otherBytes, ioBytes };
}

export interface LiveBytes {
  /** every weight value the graph reads, once (the device holds each for the whole run) */
  weights: number;
  /** graph inputs */
  inputs: number;
  /** most input and intermediate bytes alive at once (GraphSession's freeing: after the last reader; kept values to the end) */
  activationPeak: number;
  /** weights + activationPeak */
  total: number;
}

/** The bytes that must be live on the device to run the graph once, keeping `keep` to the end. */
export function liveBytes(graph: Graph, keep: readonly ValueId[] = graph.outputs): LiveBytes {
  const weights = [...heldWeights(graph).values()].reduce((s, b) => s + b, 0);
  const inputs = graph.inputs.reduce((s, id) => s + valueBytes(graph.values[id]), 0);
  const activationPeak = planMemory(graph, keep).peakBytes;
  return { weights, inputs, activationPeak, total: weights + activationPeak };
}

/**
 * The bytes the exact host GEMMs hold beyond each weight once (native/src/host/gemm/panels.h:
 * a weight's panel is its values as bf16, about its bytes for a bf16 weight, twice them for an
 * fp8 one). A weight only GEMMs read (`panelOnly`: rocm's panelOnlyWeights) is packed when the
 * session opens and its own bytes freed, so it is held once, as its panel, the largest one
 * twice while it is packed; a weight other ops read too keeps its bytes beside the panel its
 * first GEMM makes.
 */
export function gemmPanelExtraBytes(graph: Graph, panelOnly: ReadonlySet<ValueId>): number {
  const ids = new Set(graph.nodes.filter((n) => isGemm(n.op)).map((n) => n.inputs[matrixWeightPort(getOpDef(n.op))]!));
  let extra = 0;
  let packing = 0;
  for (const id of ids) {
    const d = graph.values[id];
    if (d.kind !== 'weight') continue;
    const panel = numel(d.shape) * 2;
    if (!panelOnly.has(id)) extra += panel;
    else {
      extra += panel - bytesOf(d);
      packing = Math.max(packing, panel);
    }
  }
  return extra + packing;
}

/**
 * Flops counted: 2*T*K*O per linear and fp8LinearPtpc node; per moeExperts node the expected
 * routed work 2 * rows * topK * (local experts / experts) * 3 * I * H (gate+up and down of each
 * routed token, routing taken as uniform). Attention, GatedDeltaNet, norms and other
 * elementwise ops are not counted.
 */
export function matrixFlops(graph: Graph, config: ModelConfig): number {
  let flops = 0;
  for (const node of graph.nodes) {
    if (isGemm(node.op)) {
      const { T, K, O } = gemmShape(graph.values, node);
      flops += 2 * T * K * O;
    } else if (node.op === 'moeExperts') {
      const [rows, h] = graph.values[node.inputs[0]!].shape;
      const local = Number(node.attrs.numLocal);
      const i = Number(node.attrs.intermediate);
      flops += 2 * rows * config.moe.topK * (local / config.moe.numExperts) * 3 * i * h;
    }
  }
  return flops;
}

/**
 * The fewest bytes a case must move: every graph input read once, every weight value read once
 * (a row-gathered table only at the rows its ids name), every output written once, at storage
 * size; intermediates are taken to stay on chip. All ranks' together (they share this device).
 */
export function minimumBytes(graph: Graph, keep: readonly ValueId[] = []): number {
  const size = (id: ValueId): number => valueBytes(graph.values[id]);
  const inputs = graph.inputs.reduce((s, id) => s + size(id), 0);
  const outputs = [...new Set([...graph.outputs, ...keep])].reduce((s, id) => s + size(id), 0);
  return inputs + liveBytes(graph).weights + outputs;
}
