import type { GraphNode, ValueDecl, ValueId } from './graph.ts';
import { checkOpInputs, checkOpOutputs } from './ops/checkOpInputs.ts';
import { getOpDef } from './ops/registry.ts';

/**
 * A node of a graph of `tp` ranks against its op's declaration: a collective spans every rank
 * (rank null) and has one port list per rank (`lists`; a rank's own part of the graph keeps
 * its one: rankGraph), any other op one; every value it names is
 * declared; each rank's inputs pass checkOpInputs and its outputs are what the rule gives
 * (checkOpOutputs). The graph builder calls it for each node it adds, and GraphSession for
 * every node of a graph it runs (a graph read from JSON or rewritten after it was built).
 * Errors name the op and the port; callers say where the node is.
 */
export function checkNode(
  values: Readonly<Record<ValueId, ValueDecl>>,
  n: Pick<GraphNode, 'op' | 'rank' | 'inputs' | 'outputs' | 'attrs'>,
  tp: number,
  lists = tp,
): void {
  const def = getOpDef(n.op);
  const perRank = def.collective ? lists : 1;
  if (Boolean(def.collective) !== (n.rank === null)) throw new Error(`op ${n.op} ${def.collective ? 'is a collective (rank must be null)' : 'needs a rank'}`);
  if (n.inputs.length !== def.inputs.length * perRank || n.outputs.length !== def.outputs.length * perRank) {
    throw new Error(
      `op ${n.op} has ${n.inputs.length} inputs / ${n.outputs.length} outputs, expected ${def.inputs.length * perRank} / ${def.outputs.length * perRank}`,
    );
  }
  const declared = (id: ValueId | null, what: string): ValueDecl | null => {
    if (id === null) return null;
    const v = values[id];
    if (!v) throw new Error(`op ${n.op}: ${what} value '${id}' is not declared`);
    return v;
  };
  for (let r = 0; r < perRank; r++) {
    const ins = n.inputs.slice(r * def.inputs.length, (r + 1) * def.inputs.length).map((id) => declared(id, 'input'));
    const outs = n.outputs.slice(r * def.outputs.length, (r + 1) * def.outputs.length).map((id) => declared(id, 'output'));
    checkOpOutputs(def, checkOpInputs(def, ins, n.attrs, tp), outs);
  }
}
