// The cost model's core: prices every node of one rank's part of the graph the project
// builds (a roofline per kernel plus a launch overhead; collectives as bus-bandwidth models
// plus a latency floor) and groups the times by op class and by layer.
import { layerKind, type ModelConfig } from '../config/modelConfig.ts';
import type { Graph, GraphNode } from '../graph/graph.ts';
import { rankGraph } from '../graph/rankGraph.ts';
import { type Device, type Efficiency, linkBytesPerSecond } from './device.ts';
import { type OpCost, priceNode } from './pricing/index.ts';

export const OP_CLASSES = ['hc', 'gemm', 'attention', 'moe', 'collective', 'other'] as const;
export type OpClassName = (typeof OP_CLASSES)[number];
export const OP_CLASS_TITLES: Record<OpClassName, string> = {
  hc: 'HC (combine-norm, mix GEMMs, gated mean, combine)',
  gemm: 'GEMMs (projections, router, shared expert, LM head)',
  attention: 'attention (QSA indexer, causal attention, GatedDeltaNet core)',
  moe: 'MoE (routing, routed experts, shared expert activation, combine)',
  collective: 'collectives (all-reduce, reduce-scatter, all-gather)',
  other: 'other (embedding, PLE, quant, row moves, heads)',
};

const HC_SCOPE = /(?:^|\.)(?:attn_hc|mlp_hc|mixer)\.[a-z_]+$/;
const ATTENTION_OPS = new Set(['attnHeadNormRopeBf16', 'qsaBlockKeys', 'qsaSelect', 'qsaKeptCount', 'attnCausalQsa', 'attnOutputGate', 'gdnConvSilu', 'gdnGates', 'gdnRecurrence', 'gdnGatedNorm']);
const MOE_OPS = new Set(['moeRoute', 'moeExperts', 'moeSwiGlu', 'moeCombine']);
const COLLECTIVES = new Set(['allReduce', 'reduceScatter', 'allGather']);

/**
 * The class of a node. HC: every node of an HC mix (scopes `*_hc.*`, `mixer.*`: combine-norm,
 * the two low-rank GEMMs, scaled silu, gated mean (+ fused quant)), every unfused combine, and
 * the embedding's stream expansion. GEMMs: every other linear. Attention includes the
 * GatedDeltaNet core (linear attention). MoE: the MoE ops (the router and shared-expert GEMMs
 * are GEMMs).
 */
export function opClassOf(node: GraphNode): OpClassName {
  if (COLLECTIVES.has(node.op)) return 'collective';
  if (HC_SCOPE.test(node.scope) || node.op === 'hcCombine' || (node.op === 'hcExpand' && node.scope === 'embed.expand')) return 'hc';
  if (node.op === 'linear' || node.op === 'fp8LinearPtpc') return 'gemm';
  if (ATTENTION_OPS.has(node.op)) return 'attention';
  if (MOE_OPS.has(node.op)) return 'moe';
  return 'other';
}

export interface NodeCost extends OpCost {
  id: number;
  op: string;
  scope: string;
  layer: number;
  cls: OpClassName;
  seconds: number;
  /** what bounds it: the matrix or vector units, HBM, the links */
  bound: 'compute' | 'memory' | 'link';
}

export interface ClassTotals {
  seconds: number;
  flops: number;
  bytes: number;
  busBytes: number;
  kernels: number;
}

export interface LayerCost {
  /** L0..L47, embed, exit (final mixer and LM head), mtp (the MTP head) */
  label: string;
  layer: number;
  kind: 'attention' | 'linear_attention' | null;
  seconds: number;
  byClass: Record<OpClassName, number>;
}

export interface PricedGraph {
  rank: number;
  seconds: number;
  nodes: NodeCost[];
  byClass: Record<OpClassName, ClassTotals>;
  layers: LayerCost[];
}

export interface PriceOptions {
  config: ModelConfig;
  device: Device;
  efficiency: Efficiency;
  /** the batch the graph's T rows are (see PricingContext) */
  requests: number;
  requestTokens: number;
  /** the rank to price (default 0; the ranks' parts are symmetric) */
  rank?: number;
}

function zeroTotals(): ClassTotals {
  return { seconds: 0, flops: 0, bytes: 0, busBytes: 0, kernels: 0 };
}

export function byClassZero<T>(make: () => T): Record<OpClassName, T> {
  return Object.fromEntries(OP_CLASSES.map((c) => [c, make()])) as Record<OpClassName, T>;
}

/** Seconds of one node: max(compute, memory) / efficiency + launches, or latency + bus bytes / link. */
export function nodeSeconds(c: OpCost, cls: OpClassName, device: Device, eff: Efficiency, tp: number): { seconds: number; bound: NodeCost['bound'] } {
  const f = device.figures;
  if (cls === 'collective') {
    return { seconds: f.collectiveLatencyUs.value * 1e-6 + c.busBytes / linkBytesPerSecond(device, tp), bound: 'link' };
  }
  const eta = cls === 'hc' ? eff.hc : eff.other;
  const compute = c.matrixFlops / (f.matrixBf16Tflops.value * 1e12) + c.fp8Flops / (f.matrixFp8Tflops.value * 1e12) + c.vectorFlops / (f.vectorFp32Tflops.value * 1e12);
  const memory = (c.actBytes + c.weightBytes) / (f.hbmTBps.value * 1e12);
  return { seconds: Math.max(compute, memory) / eta + c.kernels * f.kernelLaunchUs.value * 1e-6, bound: compute >= memory ? 'compute' : 'memory' };
}

export function layerLabel(config: ModelConfig, node: GraphNode): string {
  if (node.layer < 0) return 'embed';
  if (node.layer < config.numLayers) return `L${node.layer}`;
  return node.scope.startsWith('mtp') ? 'mtp' : 'exit';
}

/** Prices rank `rank`'s part of `graph` (the whole graph, or one rank's part already). */
export function priceGraph(graph: Graph, o: PriceOptions): PricedGraph {
  const rank = o.rank ?? 0;
  const part = graph.rank === undefined ? rankGraph(graph, rank) : graph;
  if (part.rank !== rank) throw new Error(`cost model: the graph is rank ${part.rank}'s part, not rank ${rank}'s`);
  const ctx = { config: o.config, tp: graph.tp, values: part.values, requests: o.requests, requestTokens: o.requestTokens };
  const nodes: NodeCost[] = [];
  const byClass = byClassZero(zeroTotals);
  const layers = new Map<string, LayerCost>();
  let seconds = 0;
  for (const node of part.nodes) {
    const c = priceNode(node, ctx);
    const cls = opClassOf(node);
    const t = nodeSeconds(c, cls, o.device, o.efficiency, graph.tp);
    nodes.push({ ...c, id: node.id, op: node.op, scope: node.scope, layer: node.layer, cls, seconds: t.seconds, bound: t.bound });
    const tot = byClass[cls];
    tot.seconds += t.seconds;
    tot.flops += c.matrixFlops + c.fp8Flops + c.vectorFlops;
    tot.bytes += c.actBytes + c.weightBytes;
    tot.busBytes += c.busBytes;
    tot.kernels += c.kernels;
    seconds += t.seconds;
    const label = layerLabel(o.config, node);
    let l = layers.get(label);
    if (!l) {
      const inStack = node.layer >= 0 && node.layer < o.config.numLayers;
      l = { label, layer: node.layer, kind: inStack ? layerKind(o.config, node.layer) : label === 'mtp' ? 'attention' : null, seconds: 0, byClass: byClassZero(() => 0) };
      layers.set(label, l);
    }
    l.seconds += t.seconds;
    l.byClass[cls] += t.seconds;
  }
  return { rank, seconds, nodes, byClass, layers: [...layers.values()] };
}
