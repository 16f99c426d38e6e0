import type { FamilyTable } from '../../graph/ops/registry.ts';
import { gemmShape } from '../../graph/footprint.ts';
import type { PriceFn } from './types.ts';
import { bytesOf, cost, copyCost, ioBytes, outElems } from './types.ts';

// graph/ops/basicOps.ts
export const BASIC_COSTS: FamilyTable<'basicOps', PriceFn> = {
  /** 2 M N K on the matrix units; x and y once, the weight once */
  linear: (n, ctx) => {
    const { T: m, K: k, O: o } = gemmShape(ctx.values, n);
    const flops = 2 * m * o * k;
    return cost({ matrixFlops: flops, ...ioBytes(n, ctx), gemms: [{ rows: [m], n: o, flops, fp8: false }] });
  },
  add: (n, ctx) => cost({ vectorFlops: outElems(n, ctx), ...ioBytes(n, ctx) }),
  sliceCols: copyCost,
  /** a gather: the ids, the T rows of the table they name (not the table), the output */
  embed: (n, ctx) => {
    const out = bytesOf(ctx, n.outputs[0]);
    return cost({ actBytes: bytesOf(ctx, n.inputs[0]) + out, weightBytes: out });
  },
};
