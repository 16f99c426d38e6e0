// The per-rank value and node helpers every sub-layer graph builder uses: value ids
// `r<rank>/<scope>/<name>`, node scopes `<scope>.<name>`, and the common bf16 linear.
import type { ValueId } from '../graph/graph.ts';
import type { GraphBuilder } from '../graph/graphBuilder.ts';
import type { OpName } from '../graph/ops/registry.ts';
import type { DType } from '../tensor/tensor.ts';
import type { SubLayerContext } from './subLayerContext.ts';

export interface SubLayerNodes {
  /** A value of rank ctx.rank named `name` within the sub-layer's scope. */
  value(name: string, shape: number[], dtype?: DType): ValueId;
  /** A node of rank ctx.rank and layer ctx.layer, scoped `<scope>.<name>`. */
  node(op: OpName, name: string, inputs: ValueId[], outputs: ValueId[], attrs?: Record<string, unknown>): void;
  /** y = linear(input, weight): a bf16 [T, outF] value and its node, both called `name`. */
  linear(name: string, input: ValueId, weight: ValueId, outF: number): ValueId;
}

export function subLayerNodes(b: GraphBuilder, ctx: SubLayerContext): SubLayerNodes {
  const { layer, rank, tokens: T, scope } = ctx;
  const value = (name: string, shape: number[], dtype: DType = 'bf16') => b.value(`r${rank}/${scope}/${name}`, shape, dtype, rank);
  const node = (op: OpName, name: string, inputs: ValueId[], outputs: ValueId[], attrs: Record<string, unknown> = {}) => {
    b.node({ op, rank, inputs, outputs, attrs, scope: `${scope}.${name}`, layer });
  };
  const linear = (name: string, input: ValueId, weight: ValueId, outF: number) => {
    const y = value(name, [T, outF]);
    node('linear', name, [input, weight], [y]);
    return y;
  };
  return { value, node, linear };
}
