import type { FamilyTable } from '../../graph/ops/registry.ts';
import type { PriceFn } from './types.ts';
import { cost, ioBytes, num, shapeOf } from './types.ts';

// graph/ops/gdnOps.ts
export const GDN_COSTS: FamilyTable<'gdnOps', PriceFn> = {
  /** causal depthwise conv (2 per tap) + silu (4) per element */
  gdnConvSilu: (n, ctx) => {
    const [rows, c] = shapeOf(ctx, n.inputs[0]);
    return cost({ vectorFlops: rows * c * (2 * num(n, 'kernel') + 4), ...ioBytes(n, ctx) });
  },
  gdnGates: (n, ctx) => {
    const [rows, heads] = shapeOf(ctx, n.inputs[0]);
    return cost({ vectorFlops: rows * heads * 16, ...ioBytes(n, ctx) });
  },
  /**
   * the gated delta rule per token and value head: decay (dk dv), u = S^T k (2 dk dv), the
   * rank-1 update (2 dk dv), o = S^T q (2 dk dv) = 7 dk dv FLOPs, counted on the matrix units
   * (production runs the chunked form, fla's chunk_gated_delta_rule, as matrix products);
   * l2norm of q and k about 3 per element on the vector units. The state stays on chip.
   */
  gdnRecurrence: (n, ctx) => {
    const [rows] = shapeOf(ctx, n.inputs[0]);
    const dk = num(n, 'keyDim');
    const dv = num(n, 'valueDim');
    const vh = num(n, 'valueHeads');
    return cost({ matrixFlops: rows * vh * 7 * dk * dv, vectorFlops: rows * num(n, 'keyHeads') * dk * 2 * 3, ...ioBytes(n, ctx) });
  },
  /** per value head RMS norm (4), weight, sigmoid(z) gate (5) per element */
  gdnGatedNorm: (n, ctx) => {
    const [rows, c] = shapeOf(ctx, n.inputs[0]);
    return cost({ vectorFlops: rows * c * 10, ...ioBytes(n, ctx) });
  },
};
