import { sameShape, shapeStr, type DType, type Tensor } from '../tensor/tensor.ts';

// A collective takes one tensor per rank; they must agree in shape and dtype, as NCCL
// requires the same count and datatype on every rank.

/** Throws unless there is at least one rank and every rank's tensor has rank 0's shape and a dtype in `dtypes`. */
export function checkRankInputs(inputs: readonly Tensor[], op: string, dtypes: readonly DType[]): void {
  if (inputs.length === 0) throw new Error(`${op}: no ranks (tp = 0)`);
  const first = inputs[0];
  inputs.forEach((t, r) => {
    if (!dtypes.includes(t.dtype)) {
      throw new Error(`${op}: rank ${r} has dtype ${t.dtype}; expected one of ${dtypes.join(', ')}`);
    }
    if (t.dtype !== first.dtype) throw new Error(`${op}: rank ${r} has dtype ${t.dtype}, rank 0 has ${first.dtype}`);
    if (!sameShape(t.shape, first.shape)) {
      throw new Error(`${op}: rank ${r} has shape ${shapeStr(t.shape)}, rank 0 has ${shapeStr(first.shape)}`);
    }
  });
  if (first.shape.length === 0) throw new Error(`${op}: tensors need a leading (row) dimension, got shape []`);
}
