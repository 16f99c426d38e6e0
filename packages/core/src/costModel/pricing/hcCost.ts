import type { FamilyTable } from '../../graph/ops/registry.ts';
import type { PriceFn } from './types.ts';
import { bytesOf, cost, ioBytes, num, portBytes, shapeOf } from './types.ts';

// graph/ops/hcOps.ts. Vector FLOPs count the arithmetic of the op's formula per element
// (a sigmoid or rsqrt as 4); the bytes are the fewest a fused kernel moves.
export const HC_COSTS: FamilyTable<'hcOps', PriceFn> = {
  hcExpand: (n, ctx) => cost({ actBytes: bytesOf(ctx, n.inputs[0]) + bytesOf(ctx, n.outputs[0]) }),
  /**
   * combine (when pending: X + y * 2 sigmoid(raw / n), 2 per element + 6 per stream) and the
   * grouped norm (sum of squares 2, scale 2 per element). Without a pending combine the
   * streams are unchanged: the kernel reads X and writes only `normed`.
   */
  hcCombineNorm: (n, ctx) => {
    const [rows, width] = shapeOf(ctx, n.inputs[0]);
    const pending = n.inputs[1] !== null;
    const streams = num(n, 'streams');
    const x = bytesOf(ctx, n.inputs[0]);
    const act = x + bytesOf(ctx, n.inputs[1]) + bytesOf(ctx, n.inputs[2]) + bytesOf(ctx, n.outputs[1]) + (pending ? bytesOf(ctx, n.outputs[0]) : 0);
    return cost({
      vectorFlops: rows * width * (pending ? 6 : 4) + (pending ? rows * streams * 6 : 0),
      actBytes: act,
      weightBytes: portBytes(n, ctx, 'weight'),
    });
  },
  /** gate = silu(d / n) over r columns (6 per element); raw is a copy of n columns */
  hcScaledSilu: (n, ctx) => {
    const [rows] = shapeOf(ctx, n.inputs[0]);
    return cost({ vectorFlops: rows * num(n, 'lowRank') * 6, ...ioBytes(n, ctx) });
  },
  /** sum over streams of sigmoid(up_s) * normed_s, then / n: 6 per element of the [rows, nH] inputs */
  hcGatedMean: (n, ctx) => {
    const [rows, width] = shapeOf(ctx, n.inputs[1]);
    return cost({ vectorFlops: rows * width * 6, ...ioBytes(n, ctx) });
  },
  /** X + y * 2 sigmoid(raw / n): 2 per element + 6 per stream */
  hcCombine: (n, ctx) => {
    const [rows, width] = shapeOf(ctx, n.inputs[0]);
    return cost({ vectorFlops: rows * width * 2 + rows * num(n, 'streams') * 6, ...ioBytes(n, ctx) });
  },
};
