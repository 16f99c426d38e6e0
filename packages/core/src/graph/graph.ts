import type { AxisSlice } from '../tensor/axisSlice.ts';
import type { DType } from '../tensor/tensor.ts';
import type { OpName } from './ops/registry.ts';

// The op graph is plain data (JSON-serializable): the dev page draws it, the harness diffs
// it, every backend executes it. Nodes belong to one rank, or (collectives) to all ranks.
export type ValueId = string;

/** Rows or columns [start, end) of a checkpoint tensor, several ranges concatenated. */
export type WeightSlice = AxisSlice;

export interface WeightRef {
  /** checkpoint name, e.g. model.layers.3.self_attn.o_proj.weight (a label when concat is set) */
  name: string;
  /** checkpoint tensors concatenated along axis 0 (e.g. W_cat = [down; inject]) */
  concat?: string[];
  /** applied after concatenation */
  slice?: WeightSlice;
  /**
   * 'rows': never uploaded whole; a row-gather host op (OpDef.gathersRows) reads only the rows
   * its ids name, when it runs (the PLE's n-gram table: 320M rows for Flash-Next)
   */
  gather?: 'rows';
  /** applied last: the same row-major elements seen with this shape (a [n, 2I, H] expert slice as [n*2I, H]) */
  reshape?: number[];
}

export interface ValueDecl {
  id: ValueId;
  shape: number[];
  dtype: DType;
  /** owning rank; null for host-side values shared by every rank (graph inputs, weights) */
  rank: number | null;
  kind: 'input' | 'weight' | 'intermediate';
  weight?: WeightRef;
}

export interface GraphNode {
  id: number;
  /** a declared op's name (ops/registry.ts): comparisons with a misspelled name do not compile */
  op: OpName;
  /** the rank that runs it; null for a collective (runs on all ranks in lockstep) */
  rank: number | null;
  /** value ids; null for an absent optional input. A collective lists each rank's ports in
   *  turn: index rank * ports + port. Resolve weights with model/resolveWeight.ts. */
  inputs: (ValueId | null)[];
  /** value ids; null for an output the node does not produce. A collective: one per rank. */
  outputs: (ValueId | null)[];
  attrs: Record<string, unknown>;
  /** where in the model it sits, e.g. "L3.attn_hc.mix" */
  scope: string;
  /** decoder layer index, or -1 outside the layers */
  layer: number;
}

export interface Graph {
  tp: number;
  /**
   * set on one rank's part of a graph (graph/rankGraph.ts): its nodes are that rank's, and
   * each collective node lists only this rank's ports (where the ranks meet)
   */
  rank?: number;
  values: Record<ValueId, ValueDecl>;
  nodes: GraphNode[];
  /** values the caller must feed (token ids, test inputs) */
  inputs: ValueId[];
  /** values the caller gets back */
  outputs: ValueId[];
  /** free-form description of how the graph was built (config, plan) */
  meta: Record<string, unknown>;
}
