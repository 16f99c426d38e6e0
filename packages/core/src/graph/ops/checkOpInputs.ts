import { type OpDef, validateAttrs } from './opDef.ts';
import type { ValueInfo } from './shapeRules.ts';

/**
 * The one check of an op's inputs, from its declaration: every required port present, each
 * present one of a declared dtype, the attributes valid, and the output rule satisfied (the
 * rule throws naming the port and the expected shape). The graph builder applies it to every
 * rank of a node it adds; kernel tables apply it when a kernel is called outside a graph
 * (checkedKernel), so kernels assert only what a declaration cannot say (data-dependent
 * facts: ids in range, a row's padding). A collective's inputs are one rank's, checked with
 * `tp` given to its rule. Returns the outputs' shapes and dtypes.
 */
export function checkOpInputs(def: OpDef, inputs: readonly (ValueInfo | null)[], attrs: Readonly<Record<string, unknown>>, tp?: number): (ValueInfo | null)[] {
  if (inputs.length !== def.inputs.length) {
    throw new Error(`op ${def.name}: ${inputs.length} inputs, expected ${def.inputs.length} (${def.inputs.map((p) => p.name).join(', ')})`);
  }
  def.inputs.forEach((port, i) => {
    const v = inputs[i];
    if (!v) {
      if (!port.optional) throw new Error(`op ${def.name}: input '${port.name}' is required`);
      return;
    }
    if (!port.dtypes.includes(v.dtype)) throw new Error(`op ${def.name}: input '${port.name}' is ${v.dtype}, expected ${port.dtypes.join('|')}`);
  });
  validateAttrs(def, attrs);
  if (!def.collective) return def.shape(inputs, attrs);
  if (tp === undefined) throw new Error(`op ${def.name}: a collective's check needs tp`);
  return def.shape(inputs, { ...attrs, tp });
}

/** a given output: its value's id where it has one (a graph's), for the message */
type GivenOutput = (ValueInfo & { readonly id?: string }) | null;

const text = (v: ValueInfo): string => `${v.dtype}[${v.shape.join(',')}]`;

/**
 * Outputs given for an op (a graph's declared values, a planner's buffers) against what its
 * output rule gave (`rule`, from checkOpInputs): every required port given, none the rule does
 * not produce, each of the rule's dtype and, with `shapes`, its shape (a stacked collective's
 * buffers are checked for dtype only).
 */
export function checkOpOutputs(def: OpDef, rule: readonly (ValueInfo | null)[], outputs: readonly GivenOutput[], shapes = true): void {
  def.outputs.forEach((port, p) => {
    const got = outputs[p] ?? null;
    const want = rule[p] ?? null;
    const named = got?.id === undefined ? `output '${port.name}' is` : `output '${port.name}' ('${got.id}') is declared`;
    if (!got) {
      if (!port.optional) throw new Error(`op ${def.name}: output '${port.name}' is required`);
      return;
    }
    if (!want) throw new Error(`op ${def.name}: ${named} ${text(got)}, but the op does not produce it for these inputs`);
    if (got.dtype !== want.dtype || (shapes && got.shape.join(',') !== want.shape.join(','))) {
      throw new Error(`op ${def.name}: ${named} ${text(got)}, the op gives ${text(want)}`);
    }
  });
}
