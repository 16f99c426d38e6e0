import type { FamilyTable } from '../../graph/ops/registry.ts';
import { gemmShape } from '../../graph/footprint.ts';
import type { PriceFn } from './types.ts';
import { cost, ioBytes, outElems, shapeOf } from './types.ts';

// graph/ops/quantOps.ts
export const QUANT_COSTS: FamilyTable<'quantOps', PriceFn> = {
  /** amax, scale, convert: about 4 per element */
  quantFp8PerToken: (n, ctx) => cost({ vectorFlops: outElems(n, ctx) * 4, ...ioBytes(n, ctx) }),
  /** the gated mean (6 per element of the [rows, nH] inputs) and the quantization of x (4 per element) */
  hcGatedMeanQuant: (n, ctx) => {
    const [rows, width] = shapeOf(ctx, n.inputs[1]);
    return cost({ vectorFlops: rows * width * 6 + outElems(n, ctx) * 4, ...ioBytes(n, ctx) });
  },
  /** the graph quantizes the weight online every forward (ATOM does it at load): priced as the graph has it */
  fp8QuantWeightPerChannel: (n, ctx) => cost({ vectorFlops: outElems(n, ctx) * 4, ...ioBytes(n, ctx) }),
  /** 2 M N K at the fp8 matrix rate */
  fp8LinearPtpc: (n, ctx) => {
    const { T: m, K: k, O: o } = gemmShape(ctx.values, n);
    const flops = 2 * m * o * k;
    return cost({ fp8Flops: flops, vectorFlops: m * o * 2, ...ioBytes(n, ctx), gemms: [{ rows: [m], n: o, flops, fp8: true }] });
  },
};
