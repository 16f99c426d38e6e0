import { checkOpInputs, getOpDef, type OpName } from '@hcsp/core';
import type { KernelPlanner, TensorInfo } from './kernelProgram.ts';

type Checked = Parameters<typeof checkOpInputs>[1];

const text = (t: { shape: readonly number[]; dtype: string }): string => `${t.dtype}[${t.shape.join(',')}]`;

/**
 * `planner` behind op `op`'s declaration, for a planner called outside a graph (kernel tests):
 * core's checkOpInputs on the inputs and attributes, then each output against what the op's
 * rule gives, as the graph builder checks every node. The WebGPU device plans graph nodes
 * only, which the builder has checked, so it calls planners directly; a planner asserts only
 * what a declaration cannot say (WebGPU limits, dims a shader supports, values not implemented).
 * A collective's planner sees the device's stack: input [tp, ...one rank's] and attrs with
 * `tp`; one rank's input is checked, and the outputs' dtypes (their stacked shapes are the
 * planner's to check).
 */
export function checkedPlanner(op: OpName, planner: KernelPlanner): KernelPlanner {
  const def = getOpDef(op);
  return (inputs, outputs, attrs) => {
    let rule: ReturnType<typeof checkOpInputs>;
    if (def.collective) {
      const { tp, ...rankAttrs } = attrs;
      const rankInputs = inputs.map((t) => (t ? { shape: t.shape.slice(1), dtype: t.dtype } : null));
      rule = checkOpInputs(def, rankInputs as Checked, rankAttrs, tp as number);
    } else {
      rule = checkOpInputs(def, inputs as Checked, attrs);
    }
    def.outputs.forEach((port, p) => {
      const got: TensorInfo | null = outputs[p] ?? null;
      const want = rule[p] ?? null;
      if (!got) {
        if (want && !port.optional) throw new Error(`op ${op}: output '${port.name}' is required`);
        return;
      }
      if (!want) throw new Error(`op ${op}: output '${port.name}' is not produced for these inputs, but ${text(got)} is given`);
      if (got.dtype !== want.dtype || (!def.collective && got.shape.join(',') !== want.shape.join(','))) {
        throw new Error(`op ${op}: output '${port.name}' is ${text(got)}, the op gives ${text(want)}`);
      }
    });
    return planner(inputs, outputs, attrs);
  };
}
