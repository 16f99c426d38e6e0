import { checkOpInputs, checkOpOutputs, getOpDef, type OpName } from '@hcsp/core';
import type { KernelPlanner } from './kernelProgram.ts';

type Checked = Parameters<typeof checkOpInputs>[1];

/**
 * `planner` behind op `op`'s declaration, for a planner called outside a graph (kernel tests):
 * core's checkOpInputs on the inputs and attributes, then checkOpOutputs on the outputs, as
 * a graph's nodes are checked (checkNode). The WebGPU device plans graph nodes only, which
 * GraphSession has checked, so it calls planners directly; a planner asserts only
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
    checkOpOutputs(def, rule, outputs as Checked, !def.collective);
    return planner(inputs, outputs, attrs);
  };
}
