import type { DType } from '../tensor/tensor.ts';
import type { Graph, GraphNode, ValueDecl, ValueId, WeightRef } from './graph.ts';
import { checkNode } from './checkNode.ts';
import type { OpName } from './ops/registry.ts';

/** A node as a builder adds it: the op is one core declares. */
export type NodeSpec = Omit<GraphNode, 'id' | 'op'> & { op: OpName };

/**
 * Builds a Graph node by node, checking each node against its op declaration (checkNode): ports and
 * dtypes, attributes, and the declared outputs against the op's output rule.
 */
export class GraphBuilder {
  private readonly values: Record<ValueId, ValueDecl> = {};
  private readonly nodes: GraphNode[] = [];
  private readonly inputs: ValueId[] = [];
  private readonly outputs: ValueId[] = [];
  private readonly weightIds = new Map<string, ValueId>();

  constructor(
    readonly tp: number,
    readonly meta: Record<string, unknown> = {},
  ) {}

  input(id: ValueId, shape: number[], dtype: DType): ValueId {
    this.declare({ id, shape, dtype, rank: null, kind: 'input' });
    this.inputs.push(id);
    return id;
  }

  /** A (possibly sliced) checkpoint tensor; the same reference is declared once. */
  weight(ref: WeightRef, shape: number[], dtype: DType = 'bf16'): ValueId {
    const key = JSON.stringify(ref);
    const existing = this.weightIds.get(key);
    if (existing) {
      const d = this.values[existing];
      if (d.dtype !== dtype || d.shape.join(',') !== shape.join(',')) {
        throw new Error(
          `graph: weight '${ref.name}' ('${existing}') is declared ${d.dtype}[${d.shape.join(',')}], asked for again as ${dtype}[${shape.join(',')}]`,
        );
      }
      return existing;
    }
    const id = ref.slice ? `w:${ref.name}#${ref.slice.axis}:${ref.slice.ranges.map((r) => r.join('-')).join('+')}` : `w:${ref.name}`;
    this.declare({ id, shape, dtype, rank: null, kind: 'weight', weight: ref });
    this.weightIds.set(key, id);
    return id;
  }

  value(id: ValueId, shape: number[], dtype: DType, rank: number | null): ValueId {
    this.declare({ id, shape, dtype, rank, kind: 'intermediate' });
    return id;
  }

  has(id: ValueId): boolean {
    return Object.hasOwn(this.values, id);
  }

  shapeOf(id: ValueId): number[] {
    const v = this.values[id];
    if (!v) throw new Error(`graph: unknown value '${id}'`);
    return v.shape;
  }

  node(n: NodeSpec): GraphNode {
    try {
      checkNode(this.values, n, this.tp);
    } catch (e) {
      throw new Error(`graph: ${n.scope}: ${(e as Error).message}`);
    }
    const node: GraphNode = { id: this.nodes.length, ...n };
    this.nodes.push(node);
    return node;
  }

  markOutput(id: ValueId): void {
    if (!this.values[id]) throw new Error(`graph: unknown output '${id}'`);
    this.outputs.push(id);
  }

  build(): Graph {
    return {
      tp: this.tp,
      values: this.values,
      nodes: this.nodes,
      inputs: this.inputs,
      outputs: this.outputs,
      meta: this.meta,
    };
  }

  private declare(v: ValueDecl): void {
    if (this.values[v.id]) throw new Error(`graph: value '${v.id}' declared twice`);
    this.values[v.id] = v;
  }
}
