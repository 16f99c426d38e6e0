// Why the gate sharded a forward: core's gate (sp/gate.ts) names only the first condition that
// fails; when none does, `hcsp plan` says which held, with their values, in the spec's order.
import { HC_QUANT_ROWS_MAX, SP_MIN_TOKENS_ENV, type SpFloor, type SpPlan } from '@hcsp/core';

function floorText(floor: SpFloor): string {
  switch (floor.source.kind) {
    case 'env':
      return `${SP_MIN_TOKENS_ENV} ${floor.minTokens}`;
    case 'option':
      return `${floor.source.name} ${floor.minTokens}`;
    case 'default':
      return `${floor.minTokens}, the default token floor (${SP_MIN_TOKENS_ENV} is unset)`;
  }
}

/** The gate's conditions that held for a sharded plan (null for a plan that is not sharded). */
export function spOnReason(plan: SpPlan, floor: SpFloor): string | null {
  if (!plan.sp) return null;
  const T = plan.tokens;
  return [
    `tp ${plan.tp} > 1`,
    `T ${T} >= ${floorText(floor)}`,
    `T ${T} > HC_QUANT_ROWS_MAX ${HC_QUANT_ROWS_MAX} (one quantization path)`,
    'not capturing a graph',
    `layers ${plan.spStartLayer}-${plan.layers[1] - 1} follow the stage's last PLE layer`,
  ].join('; ');
}
