import { numel, shapeStr, type Tensor } from '../tensor/tensor.ts';
import type { ReduceAlgorithm } from '../graph/ops/spOps.ts';
import { checkRankInputs } from './rankInputs.ts';
import { reduceInto } from './reduceOrder.ts';

// Reduce-scatter of [C*tp, ...] bf16 tensors: rank r gets rows [r*C, (r+1)*C) of the sum.
// Ring: the block of rank r is owned by ring position r, so it is summed starting at rank
// r+1 and ending at r (numerics.md); oneshot and ordered use their rank-order sums.

/** Rank r's shard of the bf16 sum over ranks, for r in 0..tp-1 (tp = inputs.length). */
export function reduceScatter(inputs: readonly Tensor[], algorithm: ReduceAlgorithm): Tensor[] {
  checkRankInputs(inputs, 'reduceScatter', ['bf16']);
  const tp = inputs.length;
  const shape = inputs[0].shape;
  const rows = shape[0];
  if (rows % tp !== 0) {
    throw new Error(`reduceScatter: ${rows} rows of shape ${shapeStr(shape)} are not divisible by tp ${tp}`);
  }
  const chunk = rows / tp;
  const outShape = [chunk, ...shape.slice(1)];
  const shardElems = numel(outShape);
  const partials = inputs.map((t) => t.data as Uint16Array);
  return inputs.map((_, r) => {
    const out = new Uint16Array(shardElems);
    reduceInto(algorithm, r, partials, r * shardElems, (r + 1) * shardElems, out, 0);
    return { dtype: 'bf16', shape: outShape, data: out };
  });
}
