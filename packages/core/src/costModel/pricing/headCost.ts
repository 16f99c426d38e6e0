import type { FamilyTable } from '../../graph/ops/registry.ts';
import type { PriceFn } from './types.ts';
import { ZERO, copyCost, cost, ioBytes, outElems, shapeOf } from './types.ts';

// graph/ops/headOps.ts
export const HEAD_COSTS: FamilyTable<'headOps', PriceFn> = {
  /** contiguous rows of a row-major tensor: a view */
  sliceRows: () => ({ ...ZERO }),
  /** a view: moves nothing, launches nothing */
  reshape: () => ({ ...ZERO }),
  rowBlocksToCols: copyCost,
  argmax: (n, ctx) => cost({ vectorFlops: shapeOf(ctx, n.inputs[0]).reduce((a, b) => a * b, 1), ...ioBytes(n, ctx) }),
  mtpDraftIds: (n, ctx) => cost({ vectorFlops: outElems(n, ctx), ...ioBytes(n, ctx) }),
};
