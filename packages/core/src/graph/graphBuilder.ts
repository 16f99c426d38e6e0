import type { DType } from '../tensor/tensor.ts';
import type { Graph, GraphNode, ValueDecl, ValueId, WeightRef } from './graph.ts';
import { checkOpInputs } from './ops/checkOpInputs.ts';
import type { ValueInfo } from './ops/shapeRules.ts';
import { getOpDef, type OpName } from './ops/registry.ts';

/** A node as a builder adds it: the op is one core declares. */
export type NodeSpec = Omit<GraphNode, 'id' | 'op'> & { op: OpName };

/**
 * Builds a Graph node by node, checking each node against its op declaration: ports and
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
    const def = getOpDef(n.op);
    const perRank = def.collective ? this.tp : 1;
    if (Boolean(def.collective) !== (n.rank === null)) {
      throw new Error(`graph: op ${n.op} ${def.collective ? 'is a collective (rank must be null)' : 'needs a rank'}`);
    }
    if (n.inputs.length !== def.inputs.length * perRank || n.outputs.length !== def.outputs.length * perRank) {
      throw new Error(
        `graph: op ${n.op} at ${n.scope} has ${n.inputs.length} inputs / ${n.outputs.length} outputs, expected ${def.inputs.length * perRank} / ${def.outputs.length * perRank}`,
      );
    }
    for (const id of n.inputs) {
      if (id !== null && !this.values[id]) throw new Error(`graph: op ${n.op} at ${n.scope}: unknown input value '${id}'`);
    }
    n.outputs.forEach((id, i) => {
      if (id !== null && !this.values[id]) throw new Error(`graph: op ${n.op} at ${n.scope}: output '${id}' not declared`);
      if (id === null && !def.outputs[i % def.outputs.length].optional) {
        throw new Error(`graph: op ${n.op} at ${n.scope}: output '${def.outputs[i % def.outputs.length].name}' is required`);
      }
    });
    try {
      this.checkAgainstDeclaration(n, perRank);
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

  /** Each rank's inputs must pass the declaration's check, and its declared outputs be what the op's rule gives. */
  private checkAgainstDeclaration(n: NodeSpec, perRank: number): void {
    const def = getOpDef(n.op);
    const infoOf = (id: ValueId | null): ValueInfo | null => (id === null ? null : this.values[id]);
    for (let r = 0; r < perRank; r++) {
      const ins = n.inputs.slice(r * def.inputs.length, (r + 1) * def.inputs.length).map(infoOf);
      const outs = n.outputs.slice(r * def.outputs.length, (r + 1) * def.outputs.length);
      const rule = checkOpInputs(def, ins, n.attrs, this.tp);
      outs.forEach((id, p) => {
        const want = rule[p] ?? null;
        if (id === null) return;
        const got = this.values[id];
        if (!want) throw new Error(`op ${n.op}: output '${def.outputs[p].name}' is not produced for these inputs, but '${id}' is declared`);
        if (got.dtype !== want.dtype || got.shape.join(',') !== want.shape.join(',')) {
          throw new Error(
            `op ${n.op}: output '${def.outputs[p].name}' ('${id}') is declared ${got.dtype}[${got.shape.join(',')}], the op gives ${want.dtype}[${want.shape.join(',')}]`,
          );
        }
      });
    }
  }

  private declare(v: ValueDecl): void {
    if (this.values[v.id]) throw new Error(`graph: value '${v.id}' declared twice`);
    this.values[v.id] = v;
  }
}
