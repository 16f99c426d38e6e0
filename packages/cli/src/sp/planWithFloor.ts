// Core's planForward takes the token floor as a bare number and its reason assumes the
// variable set it; the CLI knows better (an option, the default with the variable unset),
// and re-asks the gate for the reason in those words. The decision itself is core's.
import { planForward, spGate, spStartLayerOf, type PlanInput, type SpFloorSource, type SpPlan } from '@hcsp/core';

/** `--sp off` is the user's decision, whatever the gate would say. */
export const SP_OFF_REASON = '--sp off: sharding turned off on the command line';

export function planWithFloor(input: PlanInput, floorSource: SpFloorSource): SpPlan {
  const plan = planForward(input);
  if (plan.sp) return plan;
  const { reason } = spGate({
    tp: input.tp,
    tokens: input.tokens,
    minTokens: input.minTokens,
    capturing: input.capturing,
    spStartLayer: spStartLayerOf(input.config, plan.layers),
    endLayer: plan.layers[1],
    force: input.force,
    floorSource,
  });
  return { ...plan, reason };
}
