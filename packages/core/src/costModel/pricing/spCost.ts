import type { FamilyTable } from '../../graph/ops/registry.ts';
import { commBytesOf, type CollectiveOp } from '../../collectives/commBytes.ts';
import type { ReduceAlgorithm } from '../../graph/ops/spOps.ts';
import type { PriceFn } from './types.ts';
import { ZERO, bytesOf, copyCost, cost, num, shapeOf } from './types.ts';

// graph/ops/spOps.ts. The collectives are bus-bandwidth models (collectives/commBytes.ts,
// nccl-tests' accounting): all-reduce sends 2(n-1)/n of the buffer per rank, reduce-scatter
// and all-gather (n-1)/n each; the model divides by the link bandwidth and adds a latency
// floor. A rank's part of a graph lists one input and one output per collective.
function collective(op: CollectiveOp): PriceFn {
  return (n, ctx) => {
    const inB = bytesOf(ctx, n.inputs[0]);
    const outB = bytesOf(ctx, n.outputs[0]);
    const algorithm = op === 'allGather' ? null : (n.attrs.algorithm as ReduceAlgorithm);
    return cost({ busBytes: commBytesOf(op, algorithm, inB, outB, ctx.tp), actBytes: inB + outB });
  };
}

export const SP_COSTS: FamilyTable<'spOps', PriceFn> = {
  /** the rank's C rows are contiguous in a row-major tensor: a view, unless its slice runs past T (then the C rows are copied into a zero-padded buffer) */
  shard: (n, ctx) => {
    const [rows] = shapeOf(ctx, n.inputs[0]);
    return (num(n, 'rank') + 1) * num(n, 'chunk') <= rows ? { ...ZERO } : copyCost(n, ctx);
  },
  /** writes the padded buffer (the real rows copied, the padding zeroed); nothing when there is no padding */
  pad: (n, ctx) =>
    shapeOf(ctx, n.inputs[0])[0] === shapeOf(ctx, n.outputs[0])[0] ? { ...ZERO } : cost({ actBytes: bytesOf(ctx, n.inputs[0]) + bytesOf(ctx, n.outputs[0]) }),
  /** the first rows of a row-major tensor: a view */
  trim: () => ({ ...ZERO }),
  allReduce: collective('allReduce'),
  reduceScatter: collective('reduceScatter'),
  allGather: collective('allGather'),
};
