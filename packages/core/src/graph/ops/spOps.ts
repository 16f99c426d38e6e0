import { COUNT, INDEX } from './attrSpecs.ts';
import { ANY_DTYPE, bf16, defineOp, oneOf, port, ROW_DTYPES } from './opDef.ts';
import { info, num, type ShapeRule, type ValueInfo, withRows } from './shapeRules.ts';

// Sequence-parallel data movement (sequence-parallel.md) and the collectives
// (numerics.md). Collectives take one input per rank and give one output per rank.

/** Input 'x' of a row-moving op: present, with a leading (row) axis. */
function rowsInput(r: ShapeRule, ins: readonly (ValueInfo | null)[]): ValueInfo {
  const x = r.port(ins, 0, 'x');
  if (x.shape.length === 0) r.fail("input 'x' needs a leading (row) axis, got []");
  return x;
}

export const shard = defineOp({
  name: 'shard',
  doc: "Rank's C rows [rank*C, (rank+1)*C) of a replicated [T, ...] tensor; rows at or past T are zero padding. Only the slice is allocated. Exact.",
  inputs: [port('x', ROW_DTYPES)],
  outputs: [port('y', ROW_DTYPES)],
  attrs: { rank: INDEX, tp: COUNT, chunk: COUNT },
  opClass: 'data',
  costFamily: 'other',
  shape: (ins, a, r) => {
    const x = rowsInput(r, ins);
    if (num(a, 'rank') >= num(a, 'tp')) r.fail(`rank ${num(a, 'rank')} is not below tp ${num(a, 'tp')}`);
    if (num(a, 'chunk') * num(a, 'tp') < x.shape[0]) r.fail(`input 'x' has ${x.shape[0]} rows, more than chunk ${num(a, 'chunk')} * tp ${num(a, 'tp')}`);
    return [withRows(x, num(a, 'chunk'))];
  },
});

export const pad = defineOp({
  name: 'pad',
  doc: 'Append zero rows to reach `rows` rows. Exact.',
  inputs: [port('x', ROW_DTYPES)],
  outputs: [port('y', ROW_DTYPES)],
  attrs: { rows: INDEX },
  opClass: 'data',
  costFamily: 'other',
  shape: (ins, a, r) => {
    const x = rowsInput(r, ins);
    if (num(a, 'rows') < x.shape[0]) r.fail(`cannot pad ${x.shape[0]} rows to ${num(a, 'rows')}`);
    return [withRows(x, num(a, 'rows'))];
  },
});

export const trim = defineOp({
  name: 'trim',
  doc: 'Keep the first `rows` rows (drop padding). Exact.',
  inputs: [port('x', ANY_DTYPE)],
  outputs: [port('y', ANY_DTYPE)],
  attrs: { rows: INDEX },
  opClass: 'data',
  costFamily: 'other',
  shape: (ins, a, r) => {
    const x = rowsInput(r, ins);
    if (num(a, 'rows') > x.shape[0]) r.fail(`cannot trim ${x.shape[0]} rows to ${num(a, 'rows')}`);
    return [withRows(x, num(a, 'rows'))];
  },
});

/** Reduction algorithm of a summing collective (numerics.md "How collectives add"). */
export type ReduceAlgorithm = 'ring' | 'oneshot' | 'ordered';
export const REDUCE_ALGORITHMS: readonly ReduceAlgorithm[] = ['ring', 'oneshot', 'ordered'];

export const allReduce = defineOp({
  name: 'allReduce',
  doc: "Every rank gets the bf16 sum of all ranks' tensors, added in the order of `algorithm` (ring: RCCL chunk ownership with `channels` and `chunkElems`; oneshot: fp32 in rank order, one rounding; ordered: bf16 in rank order).",
  inputs: [bf16('x')],
  outputs: [bf16('y')],
  attrs: { algorithm: oneOf(REDUCE_ALGORITHMS), channels: COUNT, chunkElems: COUNT },
  opClass: 'reduction',
  costFamily: 'collective',
  collective: 'replicate',
  shape: (ins, _, r) => [info(r.port(ins, 0, 'x').shape, 'bf16')],
});

export const reduceScatter = defineOp({
  name: 'reduceScatter',
  doc: 'Rank r gets rows [r*C, (r+1)*C) of the sum over ranks of [C*tp, ...] tensors, added in the order of `algorithm`.',
  inputs: [bf16('x')],
  outputs: [bf16('y')],
  attrs: { algorithm: oneOf(REDUCE_ALGORITHMS) },
  opClass: 'reduction',
  costFamily: 'collective',
  collective: 'scatterRows',
  shape: (ins, a, r) => {
    const x = r.port(ins, 0, 'x');
    const tp = num(a, 'tp');
    if (x.shape[0] % tp !== 0) r.fail(`${x.shape[0]} rows do not split into tp ${tp} equal blocks (pad first)`);
    return [withRows(x, x.shape[0] / tp, 'bf16')];
  },
});

export const allGather = defineOp({
  name: 'allGather',
  doc: "Every rank gets the concatenation, in rank order, of all ranks' [C, ...] shards. Exact.",
  inputs: [port('x', ANY_DTYPE)],
  outputs: [port('y', ANY_DTYPE)],
  attrs: {},
  opClass: 'data',
  costFamily: 'collective',
  collective: 'gatherRows',
  shape: (ins, a, r) => {
    const x = r.port(ins, 0, 'x');
    return [withRows(x, x.shape[0] * num(a, 'tp'))];
  },
});
