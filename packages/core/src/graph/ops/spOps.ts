import { defineOp } from './opDef.ts';

// Sequence-parallel data movement (sequence-parallel.md) and the collectives
// (numerics.md). Collectives take one input per rank and give one output per rank.
export const shard = defineOp({
  name: 'shard',
  doc: "Rank's C rows [rank*C, (rank+1)*C) of a replicated [T, ...] tensor; rows at or past T are zero padding. Only the slice is allocated. Exact.",
  inputs: [{ name: 'x', dtypes: ['bf16', 'f32'] }],
  outputs: [{ name: 'y', dtypes: ['bf16', 'f32'] }],
  attrs: { rank: 'int', tp: 'int', chunk: 'int' },
});

export const pad = defineOp({
  name: 'pad',
  doc: 'Append zero rows to reach `rows` rows. Exact.',
  inputs: [{ name: 'x', dtypes: ['bf16', 'f32'] }],
  outputs: [{ name: 'y', dtypes: ['bf16', 'f32'] }],
  attrs: { rows: 'int' },
});

export const trim = defineOp({
  name: 'trim',
  doc: 'Keep the first `rows` rows (drop padding). Exact.',
  inputs: [{ name: 'x', dtypes: ['bf16', 'f32'] }],
  outputs: [{ name: 'y', dtypes: ['bf16', 'f32'] }],
  attrs: { rows: 'int' },
});

/** Reduction algorithm of a summing collective (numerics.md "How collectives add"). */
export type ReduceAlgorithm = 'ring' | 'oneshot' | 'ordered';
export const REDUCE_ALGORITHMS: readonly ReduceAlgorithm[] = ['ring', 'oneshot', 'ordered'];

export const allReduce = defineOp({
  name: 'allReduce',
  doc: 'Every rank gets the bf16 sum of all ranks\' tensors, added in the order of `algorithm` (ring: RCCL chunk ownership with `channels` and `chunkElems`; oneshot: fp32 in rank order, one rounding; ordered: bf16 in rank order).',
  inputs: [{ name: 'x', dtypes: ['bf16'] }],
  outputs: [{ name: 'y', dtypes: ['bf16'] }],
  attrs: { algorithm: 'string', channels: 'int', chunkElems: 'int' },
  collective: true,
});

export const reduceScatter = defineOp({
  name: 'reduceScatter',
  doc: 'Rank r gets rows [r*C, (r+1)*C) of the sum over ranks of [C*tp, ...] tensors, added in the order of `algorithm`.',
  inputs: [{ name: 'x', dtypes: ['bf16'] }],
  outputs: [{ name: 'y', dtypes: ['bf16'] }],
  attrs: { algorithm: 'string' },
  collective: true,
});

export const allGather = defineOp({
  name: 'allGather',
  doc: 'Every rank gets the concatenation, in rank order, of all ranks\' [C, ...] shards. Exact.',
  inputs: [{ name: 'x', dtypes: ['bf16', 'f32'] }],
  outputs: [{ name: 'y', dtypes: ['bf16', 'f32'] }],
  attrs: {},
  collective: true,
});

export const SP_OPS = [shard, pad, trim, allReduce, reduceScatter, allGather] as const;
