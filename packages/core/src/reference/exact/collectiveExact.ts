// Float64 kernels of the SP ops (graph/ops/spOps.ts), after reference/kernels/collectiveKernels.ts:
// the summing collectives are the exact sum of the ranks' partials in double, added in rank
// order 0..tp-1 whatever `algorithm`, `channels` and `chunkElems` say (those only choose the
// order of the reference's bf16/fp32 additions; in double the order moves a sum by a few units
// of 2^-53 of the sum of |terms|, far below anything a bf16 or fp32 backend can show).
// The layouts are OpDef.collective's: allReduce replicates the sum (all-reduce), reduceScatter
// gives rank r its rows [r*C, (r+1)*C) of it (reduce-scatter), allGather concatenates the
// shards in rank order (all-gather). shard, pad and trim are exact copies (zero rows for padding).
import { checkReduceAlgorithm } from '../../collectives/reduceOrder.ts';
import { numel, shapeStr } from '../../tensor/tensor.ts';
import { allocExact } from './basicExact.ts';
import type { ExactCollectiveKernel, ExactKernel, ExactKernelTable, ExactTensor } from './exactTensor.ts';

function intAttr(attrs: Record<string, unknown>, name: string, op: string): number {
  const v = attrs[name];
  if (typeof v !== 'number' || !Number.isInteger(v)) throw new Error(`${op}: attr ${name} must be an integer, got ${JSON.stringify(v)}`);
  return v;
}

/** Port 0 of every rank, all of one shape and dtype. */
function portX(inputs: ExactTensor[][], op: string): ExactTensor[] {
  const xs = inputs.map((ports, r) => {
    const x = ports[0];
    if (!x) throw new Error(`${op}: rank ${r} has no input x`);
    return x;
  });
  if (xs.length === 0) throw new Error(`${op}: no ranks`);
  for (const [r, x] of xs.entries()) {
    if (x.dtype !== xs[0].dtype || shapeStr(x.shape) !== shapeStr(xs[0].shape)) {
      throw new Error(`${op}: rank ${r} has ${x.dtype}${shapeStr(x.shape)}, rank 0 ${xs[0].dtype}${shapeStr(xs[0].shape)}`);
    }
  }
  return xs;
}

/** sum_r x_r in double, rank order. */
function rankSum(xs: ExactTensor[], op: string): Float64Array {
  if (!(xs[0].data instanceof Float64Array)) throw new Error(`${op}: ${xs[0].dtype} values cannot be summed`);
  const sum = new Float64Array(xs[0].data.length);
  for (const x of xs) {
    const d = x.data as Float64Array;
    for (let i = 0; i < sum.length; i++) sum[i] += d[i];
  }
  return sum;
}

const rowLength = (t: ExactTensor): number => numel(t.shape.slice(1));

const allReduceExact: ExactCollectiveKernel = (inputs, attrs) => {
  checkReduceAlgorithm(attrs.algorithm, 'allReduce');
  const xs = portX(inputs, 'allReduce');
  const sum = rankSum(xs, 'allReduce');
  return xs.map((x, r) => [{ dtype: 'bf16', shape: [...x.shape], data: r === 0 ? sum : sum.slice() }]);
};

const reduceScatterExact: ExactCollectiveKernel = (inputs, attrs) => {
  checkReduceAlgorithm(attrs.algorithm, 'reduceScatter');
  const xs = portX(inputs, 'reduceScatter');
  const tp = xs.length;
  const rows = xs[0].shape[0];
  if (rows % tp !== 0) throw new Error(`reduceScatter: ${rows} rows do not split into tp ${tp} equal blocks`);
  const c = rows / tp;
  const len = c * rowLength(xs[0]);
  const sum = rankSum(xs, 'reduceScatter');
  return xs.map((x, r) => [{ dtype: 'bf16', shape: [c, ...x.shape.slice(1)], data: sum.slice(r * len, (r + 1) * len) }]);
};

const allGatherExact: ExactCollectiveKernel = (inputs) => {
  const xs = portX(inputs, 'allGather');
  const { dtype, shape } = xs[0];
  const n = xs[0].data.length;
  const gathered = allocExact(dtype, n * xs.length);
  xs.forEach((x, r) => {
    gathered.set(x.data as never, r * n);
  });
  return xs.map((_, r) => [{ dtype, shape: [shape[0] * xs.length, ...shape.slice(1)], data: r === 0 ? gathered : gathered.slice() }]);
};

function oneInput(inputs: (ExactTensor | null)[], op: string): ExactTensor {
  const x = inputs[0];
  if (!x) throw new Error(`${op}: input x is missing`);
  if (x.shape.length === 0) throw new Error(`${op}: x needs a leading (row) dimension, got shape []`);
  return x;
}

const shardExact: ExactKernel = (inputs, attrs) => {
  const x = oneInput(inputs, 'shard');
  const rank = intAttr(attrs, 'rank', 'shard');
  const tp = intAttr(attrs, 'tp', 'shard');
  const chunk = intAttr(attrs, 'chunk', 'shard');
  if (!(rank >= 0 && rank < tp)) throw new Error(`shard: rank ${rank} is not in [0, ${tp})`);
  const rows = x.shape[0];
  if (chunk < 1 || chunk * tp < rows) throw new Error(`shard: chunk ${chunk} * tp ${tp} rows cannot hold the ${rows} rows of ${shapeStr(x.shape)}`);
  const len = rowLength(x);
  const data = allocExact(x.dtype, chunk * len);
  const first = Math.min(rank * chunk, rows);
  const last = Math.min((rank + 1) * chunk, rows);
  data.set(x.data.subarray(first * len, last * len) as never, 0);
  return [{ dtype: x.dtype, shape: [chunk, ...x.shape.slice(1)], data }];
};

const padExact: ExactKernel = (inputs, attrs) => {
  const x = oneInput(inputs, 'pad');
  const rows = intAttr(attrs, 'rows', 'pad');
  if (rows < x.shape[0]) throw new Error(`pad: rows ${rows} is fewer than the ${x.shape[0]} rows of ${shapeStr(x.shape)}`);
  const data = allocExact(x.dtype, rows * rowLength(x));
  data.set(x.data as never, 0);
  return [{ dtype: x.dtype, shape: [rows, ...x.shape.slice(1)], data }];
};

const trimExact: ExactKernel = (inputs, attrs) => {
  const x = oneInput(inputs, 'trim');
  const rows = intAttr(attrs, 'rows', 'trim');
  if (!(rows >= 0 && rows <= x.shape[0])) throw new Error(`trim: rows ${rows} is outside [0, ${x.shape[0]}] for ${shapeStr(x.shape)}`);
  return [{ dtype: x.dtype, shape: [rows, ...x.shape.slice(1)], data: x.data.slice(0, rows * rowLength(x)) }];
};

export const collectiveExact: ExactKernelTable = {
  collective: { allReduce: allReduceExact, reduceScatter: reduceScatterExact, allGather: allGatherExact },
  perRank: { shard: shardExact, pad: padExact, trim: trimExact },
};
