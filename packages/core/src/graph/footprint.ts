// What a graph's values and GEMMs take, from the declarations alone, in one place for the
// memory guards, the bench and the cost model (issue 26: each had derived them again).
// Value lifetimes (the activation peak, the pool) are memoryPlan.ts's.
import { bytesPerElement, numel, type DType } from '../tensor/tensor.ts';
import type { Graph, GraphNode, ValueDecl, ValueId } from './graph.ts';
import { matrixWeightPort } from './ops/opDef.ts';
import { getOpDef } from './ops/registry.ts';

/** A value's bytes at its storage dtype. */
export function valueBytes(d: { readonly shape: readonly number[]; readonly dtype: DType }): number {
  return numel(d.shape) * bytesPerElement(d.dtype);
}

/**
 * The bytes of weight `d` its reader `node` needs: all of it, but for a row-gathered table
 * (WeightRef.gather 'rows': the PLE table) only the rows the node's ids (its input 0) name.
 */
export function heldWeightBytes(values: Graph['values'], node: GraphNode, d: ValueDecl): number {
  if (d.weight?.gather !== 'rows') return valueBytes(d);
  return Math.min(d.shape[0], numel(values[node.inputs[0]!].shape)) * (valueBytes(d) / d.shape[0]);
}

/** Every weight value the graph's nodes read, once, at the bytes its first reader needs (heldWeightBytes). */
export function heldWeights(graph: Graph): Map<ValueId, number> {
  const held = new Map<ValueId, number>();
  for (const node of graph.nodes) {
    for (const id of node.inputs) {
      const d = id === null ? undefined : graph.values[id];
      if (d?.kind === 'weight' && !held.has(d.id)) held.set(d.id, heldWeightBytes(graph.values, node, d));
    }
  }
  return held;
}

/** A GEMM node's shape: x [.., K] of T rows against the weight matrix [O, K] on the op's declared weight port. */
export interface GemmShape {
  T: number;
  K: number;
  O: number;
}

/** The shape of a GEMM node (linear, fp8LinearPtpc); its FLOPs are 2 T K O. */
export function gemmShape(values: Graph['values'], node: GraphNode): GemmShape {
  const x = values[node.inputs[0]!].shape;
  const w = values[node.inputs[matrixWeightPort(getOpDef(node.op))]!].shape;
  return { T: numel(x.slice(0, -1)), K: x.at(-1)!, O: w[0] };
}
