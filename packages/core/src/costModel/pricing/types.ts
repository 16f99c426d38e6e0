import type { ModelConfig } from '../../config/modelConfig.ts';
import { valueBytes } from '../../graph/footprint.ts';
import type { GraphNode, ValueDecl } from '../../graph/graph.ts';
import { type PortRole, portsWithRole } from '../../graph/ops/opDef.ts';
import { getOpDef } from '../../graph/ops/registry.ts';
import { numel } from '../../tensor/tensor.ts';

// What one node of a rank's graph costs that rank: the FLOPs it must do and the fewest
// bytes it must move (inputs read once, outputs written once, weights read once), split so
// that the model can apply the right rate (matrix bf16, matrix fp8, vector) and tell
// activation traffic (scales with rows) from weight traffic (does not).
export interface OpCost {
  /** FLOPs on the matrix units at the bf16 rate */
  matrixFlops: number;
  /** FLOPs on the matrix units at the fp8 rate */
  fp8Flops: number;
  /** FLOPs on the vector units (fp32) */
  vectorFlops: number;
  /** activation bytes read and written (HBM) */
  actBytes: number;
  /** weight bytes read (once) */
  weightBytes: number;
  /** kernel launches (0 for a view that moves nothing) */
  kernels: number;
  /** collectives: bytes this rank sends over the links (nccl-tests bus accounting) */
  busBytes: number;
  /** the library GEMMs among the matrix FLOPs (their shapes, for wave quantization and tile padding) */
  gemms?: GemmPart[];
}

/** One library GEMM launch: groups of rows (one group: a plain GEMM; several: grouped, e.g. per expert) x n output columns. */
export interface GemmPart {
  rows: readonly number[];
  n: number;
  /** its FLOPs (part of matrixFlops, or of fp8Flops when fp8) */
  flops: number;
  fp8: boolean;
}

export interface PricingContext {
  config: ModelConfig;
  tp: number;
  /** the graph's values (a rank's part lists only its own) */
  values: Record<string, ValueDecl>;
  /**
   * the batch: `requests` independent sequences of `requestTokens` tokens each, T = their
   * product rows in the graph. Row-linear ops are priced from the graph's shapes; the ops
   * whose cost depends on a row's position in its sequence (causal attention, the QSA
   * selection) per request.
   */
  requests: number;
  requestTokens: number;
}

export type PriceFn = (node: GraphNode, ctx: PricingContext) => OpCost;

export const ZERO: OpCost = { matrixFlops: 0, fp8Flops: 0, vectorFlops: 0, actBytes: 0, weightBytes: 0, kernels: 0, busBytes: 0 };

export function cost(c: Partial<OpCost>): OpCost {
  return { ...ZERO, kernels: 1, ...c };
}

export function decl(ctx: PricingContext, id: string | null): ValueDecl | null {
  if (id === null) return null;
  const v = ctx.values[id];
  if (!v) throw new Error(`cost model: value '${id}' is not in the graph`);
  return v;
}

export function shapeOf(ctx: PricingContext, id: string | null): readonly number[] {
  const v = decl(ctx, id);
  if (!v) throw new Error('cost model: an absent optional value has no shape');
  return v.shape;
}

export function bytesOf(ctx: PricingContext, id: string | null): number {
  const v = decl(ctx, id);
  return v ? valueBytes(v) : 0;
}

/** Bytes of every present input and output, weights apart: the default "read each input, write each output once". */
export function ioBytes(node: GraphNode, ctx: PricingContext): { actBytes: number; weightBytes: number } {
  let actBytes = 0;
  let weightBytes = 0;
  for (const id of node.inputs) {
    const v = decl(ctx, id);
    if (!v) continue;
    if (v.kind === 'weight') weightBytes += bytesOf(ctx, id);
    else actBytes += bytesOf(ctx, id);
  }
  for (const id of node.outputs) actBytes += bytesOf(ctx, id);
  return { actBytes, weightBytes };
}

/** Bytes of the node's inputs on the ports its op declares `role` (graph/ops: a weight's scales are weight too). */
export function portBytes(node: GraphNode, ctx: PricingContext, role: PortRole): number {
  return portsWithRole(getOpDef(node.op), role).reduce((s, p) => s + bytesOf(ctx, node.inputs[p] ?? null), 0);
}

/** Elements of output `i` of the node. */
export function outElems(node: GraphNode, ctx: PricingContext, i = 0): number {
  const v = decl(ctx, node.outputs[i]);
  return v ? numel(v.shape) : 0;
}

/** A data-movement op: reads what it writes, once (a copy kernel). */
export function copyCost(node: GraphNode, ctx: PricingContext): OpCost {
  let out = 0;
  for (const id of node.outputs) out += bytesOf(ctx, id);
  return cost({ actBytes: 2 * out });
}

/** A numeric attribute of the node. */
export function num(node: GraphNode, name: string): number {
  const v = node.attrs[name];
  if (typeof v !== 'number') throw new Error(`cost model: node ${node.id} (${node.op}) has no numeric attribute '${name}'`);
  return v;
}
