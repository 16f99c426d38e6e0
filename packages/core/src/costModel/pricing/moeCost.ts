import type { GraphNode } from '../../graph/graph.ts';
import type { FamilyTable } from '../../graph/ops/registry.ts';
import type { PriceFn, PricingContext } from './types.ts';
import { bytesOf, cost, ioBytes, num, outElems, portBytes, shapeOf } from './types.ts';

// graph/ops/moeOps.ts
export const MOE_COSTS: FamilyTable<'moeOps', PriceFn> = {
  /** softmax over E (6 per logit) and top-k (about log2 k compares per logit) */
  moeRoute: (n, ctx) => {
    const [rows, e] = shapeOf(ctx, n.inputs[0]);
    return cost({ vectorFlops: rows * e * (6 + Math.log2(num(n, 'topK'))), ...ioBytes(n, ctx) });
  },
  /**
   * The routed experts of this rank (fused MoE). Assumption: tokens spread evenly over the
   * experts (balanced routing), so the rank's [firstExpert, +numLocal) experts receive
   * pairs = T * topK * numLocal / E (token, expert) pairs; each pair costs gate_up (2 H 2I)
   * and down (2 I H) on the matrix units, silu * up (5 I) and the weighted sum (3 H) on the
   * vector units. Only the routed experts' weights are read: min(numLocal, pairs) experts
   * (all of them once each expert gets a token). x is read once, the f32 sum written once.
   */
  moeExperts: (n, ctx) => {
    const x = routedExperts(n, ctx, 1, false);
    return cost({
      matrixFlops: x.gemmFlops,
      vectorFlops: x.pairs * (5 * x.i + 3 * x.h),
      actBytes: x.actBytes,
      weightBytes: x.weightBytes,
      gemms: x.gemms,
    });
  },
  /**
   * moeExperts on FP8 weights: the same pairs and weight-touch assumption; both GEMMs on the
   * FP8 matrix units, plus the epilogue scales (4 per pair output), the SwiGLU and the
   * per-pair quantization of h (amax and scale, 3 I) on the vector units; weights read as
   * their FP8 bytes and per-row scales.
   */
  moeExpertsFp8Ptpc: (n, ctx) => {
    const x = routedExperts(n, ctx, 2, true);
    return cost({
      fp8Flops: x.gemmFlops,
      vectorFlops: x.pairs * (5 * x.i + 3 * x.i + 4 * (2 * x.i + x.h) + 3 * x.h),
      actBytes: x.actBytes,
      weightBytes: x.weightBytes,
      gemms: x.gemms,
    });
  },
  moeSwiGlu: (n, ctx) => cost({ vectorFlops: outElems(n, ctx) * 6, ...ioBytes(n, ctx) }),
  moeCombine: (n, ctx) => cost({ vectorFlops: outElems(n, ctx) * 3, ...ioBytes(n, ctx) }),
};

/**
 * The terms moeExperts and moeExpertsFp8Ptpc share (moeExperts' assumption): the pairs of a
 * balanced routing (the routing ids on input port idsPort), the weight bytes of the experts
 * they touch, the activations read and written, and the two grouped GEMMs as production's fused
 * MoE runs them (one launch per projection over the local experts, each expert pairs / local rows).
 */
function routedExperts(n: GraphNode, ctx: PricingContext, idsPort: number, fp8: boolean) {
  const [rows, h] = shapeOf(ctx, n.inputs[0]);
  const k = shapeOf(ctx, n.inputs[idsPort])[1];
  const local = num(n, 'numLocal');
  const i = num(n, 'intermediate');
  const e = ctx.config.moe.numExperts;
  const pairs = (rows * k * local) / e;
  const touched = Math.min(local, pairs);
  const perExpert = portBytes(n, ctx, 'weight') / local;
  const groups = pairs >= local ? new Array<number>(local).fill(pairs / local) : [pairs];
  return {
    pairs,
    h,
    i,
    gemmFlops: pairs * (2 * h * 2 * i + 2 * i * h),
    actBytes: portBytes(n, ctx, 'activation') + bytesOf(ctx, n.outputs[0]),
    weightBytes: touched * perExpert,
    gemms: [
      { rows: groups, n: 2 * i, flops: pairs * 2 * h * 2 * i, fp8 },
      { rows: groups, n: h, flops: pairs * 2 * i * h, fp8 },
    ],
  };
}
