// The cost model's core: prices every node of one rank's part of the graph the project
// builds (a roofline per kernel plus a launch overhead; collectives as bus-bandwidth models
// plus a latency floor) and groups the times by op class and by layer.
import { layerKind, type ModelConfig } from '../config/modelConfig.ts';
import type { Graph, GraphNode } from '../graph/graph.ts';
import { COST_FAMILIES, type CostFamily } from '../graph/ops/opDef.ts';
import { getOpDef } from '../graph/ops/registry.ts';
import { rankGraph } from '../graph/rankGraph.ts';
import { type Device, type DeviceFigureName, type Efficiency, linkBytesPerSecond } from './device.ts';
import { HCSP_COLLECTIVE_HOST_SYNCS, HCSP_KERNELS, type HcspKernel, type KernelsMode } from './engines/hcspKernels.ts';
import { ALL_PHYSICS_TERMS, collectiveSeconds, libraryTileEfficiency, type PhysicsTerm, rampedMemorySeconds } from './physics.ts';
import { type OpCost, priceNode } from './pricing/index.ts';

export const OP_CLASS_TITLES: Record<CostFamily, string> = {
  hc: 'HC (combine-norm, mix GEMMs, gated mean, combine)',
  gemm: 'GEMMs (projections, router, shared expert, LM head)',
  attention: 'attention (QSA indexer, causal attention, GatedDeltaNet core)',
  moe: 'MoE (routing, routed experts, shared expert activation, combine)',
  collective: 'collectives (all-reduce, reduce-scatter, all-gather)',
  other: 'other (embedding, PLE, quant, row moves, heads)',
};

const HC_SCOPE = /(?:^|\.)(?:attn_hc|mlp_hc|mixer)\.[a-z_]+$/;

/**
 * The class of a node: every node of an HC mix (scopes `*_hc.*`, `mixer.*`: combine-norm, the
 * two low-rank GEMMs, scaled silu, gated mean (+ fused quant)) is HC; every other node is its
 * op's declared cost family (OpDef.costFamily).
 */
export function opClassOf(node: GraphNode): CostFamily {
  if (HC_SCOPE.test(node.scope)) return 'hc';
  return getOpDef(node.op).costFamily;
}

export interface NodeCost extends OpCost {
  id: number;
  op: string;
  scope: string;
  layer: number;
  cls: CostFamily;
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
  byClass: Record<CostFamily, number>;
}

export interface PricedGraph {
  rank: number;
  seconds: number;
  nodes: NodeCost[];
  byClass: Record<CostFamily, ClassTotals>;
  layers: LayerCost[];
}

export interface PriceOptions extends EngineOptions {
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

export function byClassZero<T>(make: () => T): Record<CostFamily, T> {
  return Object.fromEntries(COST_FAMILIES.map((c) => [c, make()])) as Record<CostFamily, T>;
}

/** How the graph is priced: the engine, its kernels mode (hcsp) and the physics terms applied. */
export interface EngineOptions {
  /** 'roofline': an ATOM-class production path (the default); 'hcsp': this project's GPU path (engines/hcspKernels.ts) */
  engine?: EngineName;
  /** hcsp's kernels mode (default 'fast') */
  kernels?: KernelsMode;
  /** the physics terms applied (default all; a term whose device figures are absent is not applied) */
  terms?: readonly PhysicsTerm[];
}
export type EngineName = 'roofline' | 'hcsp';
export const ENGINES: readonly EngineName[] = ['roofline', 'hcsp'];

const figure = (device: Device, name: DeviceFigureName): number | undefined => device.figures[name]?.value;

/** The matrix seconds of a node's FLOPs: its library GEMMs with wave quantization, tile padding and the library's fraction; the rest at peak. */
function matrixSeconds(c: OpCost, device: Device, terms: ReadonlySet<PhysicsTerm>): number {
  const f = device.figures;
  const bf16 = f.matrixBf16Tflops.value * 1e12;
  const fp8 = f.matrixFp8Tflops.value * 1e12;
  let restBf16 = c.matrixFlops;
  let restFp8 = c.fp8Flops;
  let seconds = 0;
  const tm = figure(device, 'gemmTileRows');
  const tn = figure(device, 'gemmTileCols');
  const lib = terms.has('gemmLibrary') ? (figure(device, 'gemmFraction') ?? 1) : 1;
  for (const g of c.gemms ?? []) {
    const waves =
      terms.has('gemmWaves') && tm !== undefined && tn !== undefined ? libraryTileEfficiency(g.rows, g.n, f.computeUnits.value, tm, tn).fraction : 1;
    seconds += g.flops / ((g.fp8 ? fp8 : bf16) * lib * waves);
    if (g.fp8) restFp8 -= g.flops;
    else restBf16 -= g.flops;
  }
  return seconds + Math.max(0, restBf16) / bf16 + Math.max(0, restFp8) / fp8;
}

/** Seconds of one node: max(compute, memory) / efficiency + launches, or latency + bus bytes / link (the roofline engine). */
export function nodeSeconds(
  c: OpCost,
  cls: CostFamily,
  device: Device,
  eff: Efficiency,
  tp: number,
  terms: ReadonlySet<PhysicsTerm> = new Set(ALL_PHYSICS_TERMS),
): { seconds: number; bound: NodeCost['bound'] } {
  const f = device.figures;
  if (cls === 'collective') {
    return { seconds: collectiveSeconds(c.busBytes, f.collectiveLatencyUs.value * 1e-6, linkBytesPerSecond(device, tp)), bound: 'link' };
  }
  const eta = cls === 'hc' ? eff.hc : eff.other;
  const compute = matrixSeconds(c, device, terms) + c.vectorFlops / (f.vectorFp32Tflops.value * 1e12);
  const bytes = c.actBytes + c.weightBytes;
  const latency = terms.has('memoryRamp') ? (figure(device, 'memoryLatencyUs') ?? 0) * 1e-6 : 0;
  const memory = rampedMemorySeconds(bytes, f.hbmTBps.value * 1e12, latency);
  return { seconds: Math.max(compute, memory) / eta + c.kernels * f.kernelLaunchUs.value * 1e-6, bound: compute >= memory ? 'compute' : 'memory' };
}

/** The figures `--engine hcsp` needs beyond the roofline's. */
export const HCSP_ENGINE_FIGURES: readonly DeviceFigureName[] = ['clockGHz', 'dependentOpCycles', 'lanesPerCu', 'memoryLatencyUs', 'hostSyncUs'];

export function checkHcspFigures(device: Device): void {
  const missing = HCSP_ENGINE_FIGURES.filter((n) => device.figures[n] === undefined);
  if (missing.length > 0)
    throw new Error(
      `device ${device.origin === 'built-in' ? device.name : device.origin}: --engine hcsp needs the figures ${missing.join(', ')} (see the built-in devices)`,
    );
}

/**
 * Seconds of one declared hcsp kernel: the slowest of the roofline's own time for the op (no
 * kernel beats it), its FLOPs at the rate its resident threads can issue (threads / (CUs x
 * lanes per CU) of the vector units; double at half the fp32 rate), its bytes, and its serial
 * chain (steps x (dependent ops x cycles / clock + memory round trips x latency)); then its
 * launches and host syncs.
 */
export function hcspKernelSeconds(k: HcspKernel, rooflineBody: number, device: Device): number {
  const f = device.figures;
  const v = (name: DeviceFigureName) => figure(device, name)!;
  const occupancy = Math.min(1, k.threads / (f.computeUnits.value * v('lanesPerCu')));
  const vector = f.vectorFp32Tflops.value * 1e12 * occupancy;
  const compute = (k.vectorFlops + 2 * k.fp64Flops) / vector;
  const latency = v('memoryLatencyUs') * 1e-6;
  const memory = rampedMemorySeconds(k.bytes, f.hbmTBps.value * 1e12, latency);
  const step = (k.stepOps * v('dependentOpCycles')) / (v('clockGHz') * 1e9) + k.stepMemoryTrips * latency;
  const chain = k.chain * step;
  return Math.max(rooflineBody, compute, memory, chain) + k.launches * f.kernelLaunchUs.value * 1e-6 + k.hostSyncs * v('hostSyncUs') * 1e-6;
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
  const engine = o.engine ?? 'roofline';
  const kernels = o.kernels ?? 'fast';
  const terms = new Set(o.terms ?? ALL_PHYSICS_TERMS);
  if (engine === 'hcsp') checkHcspFigures(o.device);
  // hcsp's engine runs the graph's T rows as one sequence (engines/hcspKernels.ts)
  const ctx =
    engine === 'hcsp'
      ? { config: o.config, tp: graph.tp, values: part.values, requests: 1, requestTokens: o.requests * o.requestTokens }
      : { config: o.config, tp: graph.tp, values: part.values, requests: o.requests, requestTokens: o.requestTokens };
  const nodes: NodeCost[] = [];
  const byClass = byClassZero(zeroTotals);
  const layers = new Map<string, LayerCost>();
  let seconds = 0;
  for (const node of part.nodes) {
    const c = priceNode(node, ctx);
    const cls = opClassOf(node);
    const t = nodeSeconds(c, cls, o.device, o.efficiency, graph.tp, terms);
    if (engine === 'hcsp') {
      const declared = HCSP_KERNELS[node.op]?.[kernels];
      if (declared) {
        const launches = c.kernels * o.device.figures.kernelLaunchUs.value * 1e-6;
        t.seconds = hcspKernelSeconds(declared(node, ctx), t.seconds - launches, o.device);
      } else if (cls === 'collective') {
        t.seconds += HCSP_COLLECTIVE_HOST_SYNCS * o.device.figures.hostSyncUs!.value * 1e-6;
      }
    }
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
      l = {
        label,
        layer: node.layer,
        kind: inStack ? layerKind(o.config, node.layer) : label === 'mtp' ? 'attention' : null,
        seconds: 0,
        byClass: byClassZero(() => 0),
      };
      layers.set(label, l);
    }
    l.seconds += t.seconds;
    l.byClass[cls] += t.seconds;
  }
  return { rank, seconds, nodes, byClass, layers: [...layers.values()] };
}
