import type { Tensor } from '../tensor/tensor.ts';
import type { ReduceAlgorithm } from '../graph/ops/spOps.ts';
import { checkRankInputs } from './rankInputs.ts';
import { reduceInto } from './reduceOrder.ts';
import { ringAllReduce, RING_DEFAULT_CHANNELS, RING_DEFAULT_CHUNK_ELEMS } from './ringAllReduce.ts';

// All-reduce of bf16 tensors: every rank gets the sum in `algorithm`'s order. 'ring'
// uses NCCL chunk ownership (ringAllReduce.ts); 'oneshot' and 'ordered' sum every element
// in rank order, so they need no chunking.

export interface AllReduceOptions {
  algorithm: ReduceAlgorithm;
  /** ring only; default RING_DEFAULT_CHANNELS */
  channels?: number;
  /** ring only; default RING_DEFAULT_CHUNK_ELEMS */
  chunkElems?: number;
}

/** The sum over ranks, one (separately allocated, equal) tensor per rank. */
export function allReduce(inputs: readonly Tensor[], options: AllReduceOptions): Tensor[] {
  checkRankInputs(inputs, 'allReduce', ['bf16']);
  const partials = inputs.map((t) => t.data as Uint16Array);
  const n = partials[0].length;
  let sum: Uint16Array;
  if (options.algorithm === 'ring') {
    sum = ringAllReduce(partials, {
      channels: options.channels ?? RING_DEFAULT_CHANNELS,
      chunkElems: options.chunkElems ?? RING_DEFAULT_CHUNK_ELEMS,
    });
  } else {
    sum = new Uint16Array(n);
    reduceInto(options.algorithm, 0, partials, 0, n, sum, 0);
  }
  const shape = inputs[0].shape;
  return inputs.map((_, r) => ({ dtype: 'bf16', shape: [...shape], data: r === 0 ? sum : sum.slice() }));
}
