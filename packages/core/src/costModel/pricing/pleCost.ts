import type { FamilyTable } from '../../graph/ops/registry.ts';
import type { PriceFn } from './types.ts';
import { bytesOf, cost, ioBytes, num, outElems, shapeOf } from './types.ts';

// graph/ops/pleOps.ts
export const PLE_COSTS: FamilyTable<'pleOps', PriceFn> = {
  /** 64-bit hashing: about 8 integer ops per (token, head), counted as vector ops */
  pleNgramIds: (n, ctx) => cost({ vectorFlops: outElems(n, ctx) * 8, ...ioBytes(n, ctx) }),
  /** a row gather: the ids, ONLY the gathered table rows (T * heads rows, not the 320M-row table), the output */
  pleNgramEmbed: (n, ctx) => {
    const out = bytesOf(ctx, n.outputs[0]);
    return cost({ actBytes: bytesOf(ctx, n.inputs[0]) + out, weightBytes: out });
  },
  /** a rank's vocab slice: the ids, its hits among the gathered rows (at most all of them: counted as all), the output */
  pleNgramEmbedShard: (n, ctx) => {
    const out = bytesOf(ctx, n.outputs[0]);
    return cost({ actBytes: bytesOf(ctx, n.inputs[0]) + out, weightBytes: out });
  },
  pleRms1pNorm: (n, ctx) => cost({ vectorFlops: outElems(n, ctx) * 4, ...ioBytes(n, ctx) }),
  pleGate: (n, ctx) => {
    const [rows, width] = shapeOf(ctx, n.inputs[0]);
    return cost({ vectorFlops: rows * width * 2 + rows * num(n, 'streams') * 12, ...ioBytes(n, ctx) });
  },
  pleGatedValue: (n, ctx) => cost({ vectorFlops: outElems(n, ctx), ...ioBytes(n, ctx) }),
  pleConvSilu: (n, ctx) => {
    const k = shapeOf(ctx, n.inputs[2])[2];
    return cost({ vectorFlops: outElems(n, ctx) * (2 * k + 6), ...ioBytes(n, ctx) });
  },
};
