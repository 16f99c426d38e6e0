import { allocData, numel, shapeStr, type Tensor, type TensorData } from '../tensor/tensor.ts';
import { checkRankInputs } from './rankInputs.ts';

// Sequence-parallel row movement (sequence-parallel.md "Shard, gather, reduce-scatter"):
// all-gather concatenates the ranks' C-row shards in rank order; shard takes one rank's C
// rows of a replicated tensor; pad and trim add or drop zero rows. All exact (copies only).

function rowLength(t: Tensor): number {
  return numel(t.shape.slice(1));
}

function checkRowCount(value: number, name: string, op: string): void {
  if (!Number.isInteger(value) || value < 0) throw new Error(`${op}: ${name} must be a non-negative integer, got ${value}`);
}

/** Every rank gets the concatenation, in rank order, of all ranks' [C, ...] shards: [C*tp, ...]. */
export function allGather(inputs: readonly Tensor[]): Tensor[] {
  checkRankInputs(inputs, 'allGather', ['bf16', 'f32', 'i32']);
  const { dtype, shape } = inputs[0];
  const shardElems = numel(shape);
  const outShape = [shape[0] * inputs.length, ...shape.slice(1)];
  const gathered = allocData(dtype, shardElems * inputs.length);
  inputs.forEach((t, r) => {
    gathered.set(t.data, r * shardElems);
  });
  return inputs.map((_, r) => ({
    dtype,
    shape: [...outShape],
    data: r === 0 ? gathered : (gathered.slice() as TensorData),
  }));
}

/**
 * Rank `rank`'s rows [rank*chunk, (rank+1)*chunk) of a replicated [T, ...] tensor; rows at
 * or past T are zero padding. Allocates exactly chunk rows, never a padded copy of x.
 */
export function shardTensorRows(x: Tensor, rank: number, tp: number, chunk: number): Tensor {
  if (!Number.isInteger(tp) || tp < 1) throw new Error(`shard: tp must be a positive integer, got ${tp}`);
  if (!Number.isInteger(rank) || rank < 0 || rank >= tp) throw new Error(`shard: rank ${rank} is not in [0, ${tp})`);
  if (!Number.isInteger(chunk) || chunk < 1) throw new Error(`shard: chunk must be a positive integer, got ${chunk}`);
  if (x.shape.length === 0) throw new Error('shard: x needs a leading (row) dimension, got shape []');
  const rows = x.shape[0];
  if (chunk * tp < rows) {
    throw new Error(`shard: chunk ${chunk} * tp ${tp} = ${chunk * tp} rows cannot hold the ${rows} rows of ${shapeStr(x.shape)}`);
  }
  const rowLen = rowLength(x);
  const data = allocData(x.dtype, chunk * rowLen);
  const first = Math.min(rank * chunk, rows);
  const last = Math.min((rank + 1) * chunk, rows);
  data.set(x.data.subarray(first * rowLen, last * rowLen), 0);
  return { dtype: x.dtype, shape: [chunk, ...x.shape.slice(1)], data };
}

/** x with zero rows appended up to `rows` rows. */
export function padRows(x: Tensor, rows: number): Tensor {
  checkRowCount(rows, 'rows', 'pad');
  if (x.shape.length === 0) throw new Error('pad: x needs a leading (row) dimension, got shape []');
  if (rows < x.shape[0]) throw new Error(`pad: rows ${rows} is fewer than the ${x.shape[0]} rows of ${shapeStr(x.shape)}`);
  const data = allocData(x.dtype, rows * rowLength(x));
  data.set(x.data, 0);
  return { dtype: x.dtype, shape: [rows, ...x.shape.slice(1)], data };
}

/** The first `rows` rows of x (a copy, so the padded buffer is not kept alive). */
export function trimRows(x: Tensor, rows: number): Tensor {
  checkRowCount(rows, 'rows', 'trim');
  if (x.shape.length === 0) throw new Error('trim: x needs a leading (row) dimension, got shape []');
  if (rows > x.shape[0]) throw new Error(`trim: rows ${rows} is more than the ${x.shape[0]} rows of ${shapeStr(x.shape)}`);
  const data = x.data.slice(0, rows * rowLength(x)) as TensorData;
  return { dtype: x.dtype, shape: [rows, ...x.shape.slice(1)], data };
}
