import type { GraphNode } from '../../graph/graph.ts';
import { allOpDefs, type FamilyTable, type OpFamily } from '../../graph/ops/registry.ts';
import { ATTENTION_COSTS } from './attentionCost.ts';
import { BASIC_COSTS } from './basicCost.ts';
import { GDN_COSTS } from './gdnCost.ts';
import { HC_COSTS } from './hcCost.ts';
import { HEAD_COSTS } from './headCost.ts';
import { MOE_COSTS } from './moeCost.ts';
import { PLE_COSTS } from './pleCost.ts';
import { QUANT_COSTS } from './quantCost.ts';
import { SP_COSTS } from './spCost.ts';
import type { OpCost, PriceFn, PricingContext } from './types.ts';

export * from './types.ts';
export { qsaKept, qsaSums } from './attentionCost.ts';

// One pricing table per op family, keyed by the family's declared ops (FamilyTable): a
// declared op without a price, or a price for an op the family does not declare, is a type
// error (and the coverage test asks for all).
export const PRICING_FAMILIES: { readonly [F in OpFamily]: FamilyTable<F, PriceFn> } = {
  basicOps: BASIC_COSTS,
  hcOps: HC_COSTS,
  attentionOps: ATTENTION_COSTS,
  gdnOps: GDN_COSTS,
  moeOps: MOE_COSTS,
  pleOps: PLE_COSTS,
  quantOps: QUANT_COSTS,
  headOps: HEAD_COSTS,
  spOps: SP_COSTS,
};

const BY_OP = new Map<string, PriceFn>();
for (const table of Object.values(PRICING_FAMILIES)) for (const [op, fn] of Object.entries<PriceFn>(table)) BY_OP.set(op, fn);

/** Declared ops the cost model cannot price (empty when complete). */
export function unpricedOps(): string[] {
  return allOpDefs()
    .map((d) => d.name)
    .filter((name) => !BY_OP.has(name));
}

/** The cost of one node to the rank whose part of the graph `ctx.values` is. */
export function priceNode(node: GraphNode, ctx: PricingContext): OpCost {
  const fn = BY_OP.get(node.op);
  if (!fn) throw new Error(`cost model: no pricing for op '${node.op}' (node ${node.id}, ${node.scope})`);
  return fn(node, ctx);
}
